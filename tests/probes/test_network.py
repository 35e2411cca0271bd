"""``network.sysctl`` and ``network.nic`` against namespace captures, and their scripts for real.

Fixtures come from tests/fixtures/network/capture.py (a network namespace with a veth pair and a
private sysctl configuration tree of a GPFS storage server).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from probes import get_probe
from probes.network import (
    BASE_SYSCTLS,
    TRACKED_SYSCTLS,
    NetworkNicProbe,
    NetworkSysctlProbe,
    normalize_sysctl_key,
    order_sysctl_files,
    parse_sysctl_conf,
    sysctl_proc_path,
)
from probes.probe import ProbeContext, ProbeParseError

from tests.support.netns import run_in_namespace
from tests.support.paths import FIXTURES
from tests.support.sysctl_sandbox import sandboxed_script, sysctl_sandbox

SYSCTL_CAPTURE = (FIXTURES / "network" / "sysctl-netns-gpfs-server.txt").read_text()
NIC_CAPTURE = (FIXTURES / "network" / "nic-netns-veth.txt").read_text()
IP_O_CAPTURE = (FIXTURES / "network" / "ip-o-addr-netns-veth.txt").read_text()
CTX = ProbeContext(host="gpfs01")


def test_registered_under_their_names():
    assert isinstance(get_probe("network.sysctl"), NetworkSysctlProbe)
    assert isinstance(get_probe("network.nic"), NetworkNicProbe)


# --- network.sysctl: the captured storage server ----------------------------------------------


@pytest.fixture(scope="module")
def sysctl_facts():
    return NetworkSysctlProbe().parse(SYSCTL_CAPTURE)


def test_runtime_values_and_absent_keys(sysctl_facts):
    s = sysctl_facts.sysctls
    assert set(TRACKED_SYSCTLS) <= set(s)
    assert s["net.ipv4.tcp_sack"].runtime == "0" and s["net.ipv4.tcp_sack"].runtime_ints == [0]
    assert s["net.ipv4.tcp_sack"].line == "net.ipv4.tcp_sack = 0"
    assert s["net.ipv4.tcp_rmem"].runtime == "4096 131072 6291456"
    assert s["net.ipv4.tcp_rmem"].runtime_ints == [4096, 131072, 6291456]
    assert s["net.ipv4.tcp_congestion_control"].runtime_ints is None
    # inside a network namespace these two do not exist: absent, not an error
    for key in ("net.core.netdev_max_backlog", "net.core.default_qdisc"):
        assert s[key].absent and s[key].runtime is None and s[key].line is None
    assert not s["net.ipv4.tcp_sack"].absent


def test_later_file_wins_and_earlier_lines_are_conflicts(sysctl_facts):
    sack = sysctl_facts.sysctls["net.ipv4.tcp_sack"]
    assert (sack.persisted, sack.persisted_file, sack.persisted_lineno) == ("1", "/etc/sysctl.d/99-zz-tuning.conf", 7)
    assert sack.persisted_line == "net.ipv4.tcp_sack = 1"
    assert [(c.file, c.lineno, c.value) for c in sack.conflicts] == [
        ("/etc/sysctl.d/60-gpfs.conf", 3, "0"),
        # masked by /etc/sysctl.d/70-storage-vendor.conf, but still a line the remediation must know
        ("/usr/lib/sysctl.d/70-storage-vendor.conf", 1, "0"),
    ]
    assert [c.masked for c in sack.conflicts] == [False, True]


def test_sysctl_conf_is_applied_last(sysctl_facts):
    ts = sysctl_facts.sysctls["net.ipv4.tcp_timestamps"]
    assert (ts.persisted, ts.persisted_file, ts.persisted_lineno) == ("1", "/etc/sysctl.conf", 4)
    assert [(c.file, c.line) for c in ts.conflicts] == [("/etc/sysctl.d/60-gpfs.conf", "net.ipv4.tcp_timestamps=0")]
    rmem = sysctl_facts.sysctls["net.ipv4.tcp_rmem"]
    assert rmem.persisted == "4096 87380 33554432" and rmem.persisted_ints == [4096, 87380, 33554432]
    # the tab-separated line in 60-gpfs.conf is normalised for comparison, quoted as written
    assert rmem.conflicts[0].value == "4096 87380 16777216"
    assert rmem.conflicts[0].line == "net.ipv4.tcp_rmem =  4096\t87380\t16777216"


def test_same_basename_in_etc_masks_the_vendor_file(sysctl_facts):
    rmem_max = sysctl_facts.sysctls["net.core.rmem_max"]
    assert (rmem_max.persisted, rmem_max.persisted_file) == ("16777216", "/etc/sysctl.d/70-storage-vendor.conf")
    assert "/usr/lib/sysctl.d/70-storage-vendor.conf" in sysctl_facts.files_masked
    assert "/usr/lib/sysctl.d/50-coredump.conf" in sysctl_facts.files_masked  # by a /dev/null link


def test_slash_keys_ignore_failure_prefix_and_other_net_keys(sysctl_facts):
    s = sysctl_facts.sysctls
    assert s["net.core.wmem_max"].persisted_line == "net/core/wmem_max = 16777216"
    backlog = s["net.core.netdev_max_backlog"]
    assert backlog.absent and backlog.persisted == "250000" and backlog.persisted_line.startswith("-net.core")
    # a net.* key the site sets that is not in the tracked list is reported too, with its runtime
    rp = s["net.ipv4.conf.default.rp_filter"]
    assert rp.persisted == "2" and rp.runtime == "0"
    assert not any(k.startswith("kernel.") for k in s)


def test_files_read_in_application_order(sysctl_facts):
    assert sysctl_facts.files_read == [
        "/usr/lib/sysctl.d/50-default.conf",
        "/etc/sysctl.d/60-gpfs.conf",
        "/etc/sysctl.d/70-storage-vendor.conf",
        "/run/sysctl.d/80-runtime.conf",
        "/etc/sysctl.d/99-sysctl.conf",
        "/etc/sysctl.d/99-zz-tuning.conf",
        "/etc/sysctl.conf",
    ]


def test_symlinked_sysctl_conf_lines_are_reported_once():
    # /etc/sysctl.d/99-sysctl.conf -> ../sysctl.conf: the file is applied twice (procps), so a
    # superseded line in it is seen twice; it is one line to comment out
    text = SYSCTL_CAPTURE.replace("this line has no assignment", "net.ipv4.tcp_timestamps = 0")
    ts = NetworkSysctlProbe().parse(text).sysctls["net.ipv4.tcp_timestamps"]
    assert (ts.persisted, ts.persisted_file, ts.persisted_lineno) == ("0", "/etc/sysctl.conf", 5)
    assert [(c.file, c.lineno, c.value, c.masked) for c in ts.conflicts] == [("/etc/sysctl.conf", 4, "1", False)]


def test_no_config_files_means_nothing_persisted():
    runtime = SYSCTL_CAPTURE[SYSCTL_CAPTURE.index("@@section runtime"):]
    facts = NetworkSysctlProbe().parse(runtime)
    assert facts.files_read == [] and all(v.persisted is None for v in facts.sysctls.values())


# --- network.sysctl: the configuration grammar and precedence ---------------------------------


def test_config_line_grammar():
    text = (
        "# comment\n"
        "; also a comment\n"
        "\n"
        "net.ipv4.tcp_sack=0\n"
        "  net.ipv4.tcp_timestamps   =   1  \n"
        "-net.core.netdev_max_backlog = 250000\n"
        "net/ipv4/conf/eth0.100/rp_filter = 1\n"
        "net.ipv4.tcp_rmem = 4096\t87380   6291456\n"
        "net.ipv4.conf.*.rp_filter = 2\n"
        "no assignment here\n"
        "kernel.domainname = example.com # not a comment\n"
    )
    lines = parse_sysctl_conf("/etc/sysctl.d/x.conf", text)
    assert [(cl.lineno, cl.key, cl.value) for cl in lines] == [
        (4, "net.ipv4.tcp_sack", "0"),
        (5, "net.ipv4.tcp_timestamps", "1"),
        (6, "net.core.netdev_max_backlog", "250000"),
        (7, "net.ipv4.conf.eth0/100.rp_filter", "1"),
        (8, "net.ipv4.tcp_rmem", "4096 87380 6291456"),
        (11, "kernel.domainname", "example.com # not a comment"),
    ]


def test_key_normalisation_and_proc_path():
    assert normalize_sysctl_key("net/core/rmem_max") == "net.core.rmem_max"
    assert normalize_sysctl_key("net.ipv4.conf.eth0/100.rp_filter") == "net.ipv4.conf.eth0/100.rp_filter"
    assert sysctl_proc_path("net.ipv4.conf.eth0/100.rp_filter") == "/proc/sys/net/ipv4/conf/eth0.100/rp_filter"
    assert sysctl_proc_path("net/ipv4/tcp_sack") == "/proc/sys/net/ipv4/tcp_sack"


def test_file_order_masks_by_basename_and_sorts_across_directories():
    applied, masked = order_sysctl_files(
        [
            "/usr/lib/sysctl.d/10-vendor.conf",
            "/etc/sysctl.d/10-vendor.conf",
            "/run/sysctl.d/10-vendor.conf",
            "/usr/lib/sysctl.d/50-default.conf",
            "/etc/sysctl.d/20-site.conf",
            "/lib/sysctl.d/99-late.conf",
            "/usr/local/lib/sysctl.d/30-local.conf",
            "/etc/sysctl.d/README",
            "/etc/sysctl.conf",
        ]
    )
    assert applied == [
        "/etc/sysctl.d/10-vendor.conf",
        "/etc/sysctl.d/20-site.conf",
        "/usr/local/lib/sysctl.d/30-local.conf",
        "/usr/lib/sysctl.d/50-default.conf",
        "/lib/sysctl.d/99-late.conf",
        "/etc/sysctl.conf",
    ]
    assert masked == ["/run/sysctl.d/10-vendor.conf", "/usr/lib/sysctl.d/10-vendor.conf"]


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "no 'runtime' section"),
        (SYSCTL_CAPTURE[: SYSCTL_CAPTURE.index("@@section runtime")], "no 'runtime' section"),
        # the script lists the keys it was asked to read: a runtime section cut before one is truncated
        (SYSCTL_CAPTURE[: SYSCTL_CAPTURE.index("net.ipv4.tcp_rmem\t")].replace(
            "@@section runtime", "@@section requested\nnet.ipv4.tcp_sack\nnet.ipv4.tcp_rmem\n@@section runtime"),
         "lacks net.ipv4.tcp_rmem"),
        (SYSCTL_CAPTURE.replace("@@section runtime", "@@section requested\nnet ipv4\n@@section runtime"),
         "requested line 1 is not a sysctl key"),
        (SYSCTL_CAPTURE.replace("net.ipv4.tcp_sack\t0", "net.ipv4.tcp_sack 0"), "runtime line"),
        (SYSCTL_CAPTURE.replace("@@section file /etc/sysctl.conf", "@@section bogus"), "unknown section"),
        ("sysctl: permission denied\n" + SYSCTL_CAPTURE, "text before its first section"),
    ],
)
def test_malformed_sysctl_output_is_a_parse_error(text, message):
    with pytest.raises(ProbeParseError, match=message):
        NetworkSysctlProbe().parse(text)


def test_an_older_output_without_a_key_parses_and_lacks_only_that_key():
    """Outputs collected before a rule asked for a key (no 'requested' section, a runtime section
    from an older key list) parse: the key is not in the facts (its rules say "not collected")."""
    older = "\n".join(line for line in SYSCTL_CAPTURE.splitlines() if not line.startswith("net.ipv4.tcp_rmem\t"))
    facts = NetworkSysctlProbe().parse(older)
    assert "net.ipv4.tcp_rmem" not in facts.sysctls or facts.sysctls["net.ipv4.tcp_rmem"].runtime is None
    assert facts.sysctls["net.ipv4.tcp_sack"].runtime == "0"
    assert "net.ipv4.tcp_slow_start_after_idle" not in facts.sysctls


def test_the_script_reads_the_requested_keys_any_subsystem():
    """The base set, then the keys the loaded rules ask for (vm.* and kernel.* too), each once; a
    name that cannot be a sysctl key never reaches the shell."""
    ctx = ProbeContext(host="h", requested={"network.sysctl": [
        "net.ipv4.tcp_slow_start_after_idle", "vm.swappiness", "kernel.pid_max", "net.ipv4.tcp_sack", "x; rm -rf /"]})
    out = subprocess.run(["sh", "-c", NetworkSysctlProbe().script(ctx)], capture_output=True, text=True, timeout=30,
                         check=True)
    assert "rm -rf" not in NetworkSysctlProbe().script(ctx)
    facts = NetworkSysctlProbe().parse(out.stdout)
    keys = list(facts.sysctls)
    assert keys[:len(BASE_SYSCTLS)] == list(BASE_SYSCTLS)
    assert keys[len(BASE_SYSCTLS):len(BASE_SYSCTLS) + 3] == [
        "net.ipv4.tcp_slow_start_after_idle", "vm.swappiness", "kernel.pid_max"]
    for key in ("net.ipv4.tcp_slow_start_after_idle", "vm.swappiness", "kernel.pid_max"):
        assert facts.sysctls[key].runtime == " ".join(Path(sysctl_proc_path(key)).read_text().split())


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_sysctl_arbitrary_text_raises_only_parse_errors(text):
    try:
        NetworkSysctlProbe().parse(text)
    except ProbeParseError:
        pass


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(SYSCTL_CAPTURE.splitlines() + ["@@section runtime", "@@section file /etc/sysctl.conf", "x\ty"]), max_size=80))
def test_sysctl_shuffled_capture_lines_raise_only_parse_errors(lines):
    try:
        NetworkSysctlProbe().parse("\n".join(lines))
    except ProbeParseError:
        pass


def test_sysctl_script_runs_here_and_parses():
    # the root namespace, read-only: the real config files and /proc/sys
    out = subprocess.run(["sh", "-c", NetworkSysctlProbe().script(CTX)], capture_output=True, text=True, timeout=30, check=True)
    facts = NetworkSysctlProbe().parse(out.stdout)
    for key in TRACKED_SYSCTLS:
        path = Path(sysctl_proc_path(key))
        if path.exists():
            assert facts.sysctls[key].runtime == " ".join(path.read_text().split())
        else:
            assert facts.sysctls[key].absent


def test_sysctl_script_in_a_namespace_with_its_own_config(netns):
    run_in_namespace(netns, "sysctl -q -w net.ipv4.tcp_sack=0").check_returncode()
    tree = {
        "/usr/lib/sysctl.d/60-vendor.conf": "net.ipv4.tcp_sack = 0\n",
        "/etc/sysctl.d/60-vendor.conf": "net.ipv4.tcp_sack = 1\nnet.ipv4.tcp_wmem=4096  65536 33554432\n",
        "/etc/sysctl.conf": "-net.core.netdev_max_backlog = 30000\n",
    }
    with sysctl_sandbox(tree) as root:
        out = run_in_namespace(netns, sandboxed_script(root, NetworkSysctlProbe().script(CTX)))
    assert out.returncode == 0, out.stderr
    facts = NetworkSysctlProbe().parse(out.stdout)
    sack = facts.sysctls["net.ipv4.tcp_sack"]
    assert (sack.runtime, sack.persisted, sack.persisted_file) == ("0", "1", "/etc/sysctl.d/60-vendor.conf")
    assert [(c.file, c.masked) for c in sack.conflicts] == [("/usr/lib/sysctl.d/60-vendor.conf", True)]
    assert facts.files_masked == ["/usr/lib/sysctl.d/60-vendor.conf"]
    assert facts.sysctls["net.ipv4.tcp_wmem"].persisted_ints == [4096, 65536, 33554432]
    assert facts.sysctls["net.core.netdev_max_backlog"].absent
    assert facts.sysctls["net.core.netdev_max_backlog"].persisted_file == "/etc/sysctl.conf"
    # a network namespace cannot change the init-namespace-only keys: read without writing them
    assert facts.sysctls["net.core.wmem_max"].writable is False
    assert facts.sysctls["net.ipv4.tcp_sack"].writable is True


# --- network.nic -----------------------------------------------------------------------------


def test_nic_capture():
    facts = NetworkNicProbe().parse(NIC_CAPTURE)
    assert set(facts.interfaces) == {"lo", "stor0", "stor1"}
    lo, stor0 = facts.interfaces["lo"], facts.interfaces["stor0"]
    assert lo.is_loopback and lo.speed_mbps is None and lo.driver is None and lo.mtu == 65536
    assert lo.addresses == ["127.0.0.1/8", "::1/128"]
    assert not stor0.is_loopback
    assert (stor0.speed_mbps, stor0.mtu, stor0.txqueuelen, stor0.operstate, stor0.driver) == (10000, 9000, 1000, "up", "veth")
    assert stor0.addresses[:2] == ["198.18.0.5/24", "fd00:198:18::5/64"]
    assert stor0.addresses[2].startswith("fe80::")
    assert len(stor0.mac.split(":")) == 6


def test_nic_falls_back_to_ip_oneline_output():
    sysfs = NIC_CAPTURE[: NIC_CAPTURE.index("@@section ip-j-addr")]
    facts = NetworkNicProbe().parse(sysfs + "@@section ip-o-addr\n" + IP_O_CAPTURE)
    assert facts == NetworkNicProbe().parse(NIC_CAPTURE)


def test_nic_speed_minus_one_and_unreadable_are_unknown():
    text = NIC_CAPTURE.replace("stor0\tspeed\t10000", "stor0\tspeed\t-1").replace("stor1\tspeed\t10000", "stor1\tspeed\t")
    facts = NetworkNicProbe().parse(text)
    assert facts.interfaces["stor0"].speed_mbps is None and facts.interfaces["stor1"].speed_mbps is None


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "no 'sysfs' section"),
        (NIC_CAPTURE[: NIC_CAPTURE.index("@@section ip-j-addr")], "no 'ip-j-addr' or 'ip-o-addr'"),
        (NIC_CAPTURE[: NIC_CAPTURE.index("stor0\tdriver")], "incomplete"),
        (NIC_CAPTURE[: NIC_CAPTURE.index('"addr_info"')], "not JSON"),
        (NIC_CAPTURE.replace("stor0\tmtu\t9000", "stor0 mtu 9000"), "sysfs line"),
        (NIC_CAPTURE[: NIC_CAPTURE.index("@@section ip-j-addr")] + "@@section ip-o-addr\nDevice \"x\" does not exist.\n", "ip -o addr line 1"),
    ],
)
def test_malformed_nic_output_is_a_parse_error(text, message):
    with pytest.raises(ProbeParseError, match=message):
        NetworkNicProbe().parse(text)


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_nic_arbitrary_text_raises_only_parse_errors(text):
    try:
        NetworkNicProbe().parse(text)
    except ProbeParseError:
        pass


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.sampled_from(NIC_CAPTURE.splitlines() + ["@@section ip-j-addr", "[]", "{}", '[{"ifname": 1}]', "@@section ip-o-addr"]), max_size=40)
)
def test_nic_shuffled_capture_lines_raise_only_parse_errors(lines):
    try:
        NetworkNicProbe().parse("\n".join(lines))
    except ProbeParseError:
        pass


def test_nic_script_in_a_namespace_with_a_veth_pair(netns):
    for cmd in (
        "ip link add st0 type veth peer name st1",
        "ip link set st0 mtu 9000",
        "ip addr add 198.18.0.7/24 dev st0",
        "ip link set st0 up",
    ):
        run_in_namespace(netns, cmd).check_returncode()
    out = run_in_namespace(netns, NetworkNicProbe().script(CTX))
    assert out.returncode == 0, out.stderr
    facts = NetworkNicProbe().parse(out.stdout)
    st0 = facts.interfaces["st0"]
    assert st0.mtu == 9000 and st0.driver == "veth" and "198.18.0.7/24" in st0.addresses
    assert facts.interfaces["st1"].operstate == "down"
    assert facts.interfaces["lo"].is_loopback


# --- which keys the host can change ---------------------------------------------------------

#: the probe's own script run in a fresh ``ip netns`` on a 6.18 kernel (this project's CI box):
#: net.core.rmem_max/wmem_max are mode 0444 there, the per-namespace tcp_* keys 0644
MODES_CAPTURE = (FIXTURES / "network" / "sysctl-netns-modes.txt").read_text()


def test_read_only_entries_of_a_namespace_are_not_writable():
    facts = NetworkSysctlProbe().parse(MODES_CAPTURE)
    wmem = facts.sysctls["net.core.wmem_max"]
    assert wmem.writable is False and "mode 444" in wmem.read_only_reason
    assert facts.sysctls["net.core.rmem_max"].writable is False
    assert facts.sysctls["net.ipv4.tcp_sack"].writable is True and facts.sysctls["net.ipv4.tcp_sack"].read_only_reason is None
    assert facts.sysctls["net.core.default_qdisc"].absent and facts.sysctls["net.core.default_qdisc"].writable is None


def test_read_only_proc_sys_mount_makes_every_key_read_only():
    container = MODES_CAPTURE.replace("/proc rw,relatime", "/proc rw,relatime\n/proc/sys ro,nosuid,nodev,noexec,relatime")
    facts = NetworkSysctlProbe().parse(container)
    sack = facts.sysctls["net.ipv4.tcp_sack"]
    assert sack.writable is False and "mounted read-only" in sack.read_only_reason


def test_captures_without_modes_leave_writability_unknown():
    facts = NetworkSysctlProbe().parse(SYSCTL_CAPTURE)
    assert {s.writable for s in facts.sysctls.values()} == {None}


def test_a_mode_that_is_not_one_is_a_parse_error():
    bad = MODES_CAPTURE.replace("net.ipv4.tcp_sack\t1\t644", "net.ipv4.tcp_sack\t1\trw-r--r--")
    with pytest.raises(ProbeParseError, match="is not a file mode"):
        NetworkSysctlProbe().parse(bad)


def test_a_key_bound_read_only_is_not_writable_and_the_others_are():
    """One key's /proc/sys file bound read-only onto itself (a site or container policy; the lab's
    read_only_sysctls): that key only."""
    one = MODES_CAPTURE.replace("/proc rw,relatime", "/proc rw,relatime\n/proc/sys/net/ipv4/tcp_sack ro,relatime")
    facts = NetworkSysctlProbe().parse(one)
    sack = facts.sysctls["net.ipv4.tcp_sack"]
    assert sack.writable is False and "/proc/sys/net/ipv4/tcp_sack is bound read-only" in sack.read_only_reason
    assert facts.sysctls["net.ipv4.tcp_timestamps"].writable is True


def test_a_read_write_mount_under_a_read_only_proc_sys_wins():
    """LXC's layout: /proc/sys read-only, /proc/sys/net bound read-write over it."""
    lxc = MODES_CAPTURE.replace("/proc rw,relatime", "/proc rw,relatime\n/proc/sys ro,relatime\n/proc/sys/net rw,relatime")
    facts = NetworkSysctlProbe().parse(lxc)
    assert facts.sysctls["net.ipv4.tcp_sack"].writable is True


@pytest.mark.root  # a private mount namespace
def test_the_probe_script_sees_a_read_only_bound_key(tmp_path):
    """The probe's own script run (as root) in a private mount namespace where tcp_sack is bound
    read-only: the real mountinfo of that namespace reaches the parser."""
    if os.geteuid() != 0:
        pytest.skip("needs root (mount namespace); CI runs as root")
    from probes.probe import ProbeContext

    script = NetworkSysctlProbe().script(ProbeContext(host="h", roles=[]))
    k = "/proc/sys/net/ipv4/tcp_sack"
    wrapper = f"mount -n --bind {k} {k} && mount -n -o remount,bind,ro {k} && exec sh -c \"$1\""
    cp = subprocess.run(["unshare", "--mount", "--propagation", "private", "--", "sh", "-c", wrapper, "sh", script],
                        capture_output=True, text=True, timeout=60)
    assert cp.returncode == 0, cp.stderr
    facts = NetworkSysctlProbe().parse(cp.stdout)
    assert facts.sysctls["net.ipv4.tcp_sack"].writable is False
    assert facts.sysctls["net.ipv4.tcp_timestamps"].writable is True


def test_sysctl_script_runtime_values_with_few_processes(tmp_path):
    """The runtime section, run on this machine, holds each key's /proc/sys value (tabs and
    newlines as spaces) and mode; the key's path and a value's blanks are worked out by the shell
    (no tr for a key written with dots), and one stat gives every mode (a process per key and step
    made the loop the costliest part of a host's batch: 76 -> 46 ms of CPU here, then 48 -> 29
    processes)."""
    import os
    import shutil
    import subprocess

    from probes.probe import ProbeContext

    log = tmp_path / "calls.log"
    shims = tmp_path / "shims"
    shims.mkdir()
    for tool in ("tr", "cat", "stat"):
        (shims / tool).write_text(f"#!/bin/sh\necho {tool} >>'{log}'\nexec '{shutil.which(tool)}' \"$@\"\n")
        (shims / tool).chmod(0o755)
    script = NetworkSysctlProbe().script(ProbeContext(host="localhost", is_local=True, sample_seconds=0.2))
    env = {"PATH": f"{shims}:{os.environ.get('PATH', '/usr/bin:/bin')}", "LC_ALL": "C"}
    run = subprocess.run(["/bin/sh", "-c", script], capture_output=True, text=True, timeout=30, env=env)
    assert run.returncode == 0, run.stderr
    runtime = run.stdout.split("@@section runtime\n", 1)[1].split("@@section procsys", 1)[0].splitlines()
    assert runtime
    tabbed = 0
    for line in runtime:
        key, value, *mode = line.split("\t")
        path = "/proc/sys/" + key.translate(str.maketrans("./", "/."))
        if value == "@@absent":
            assert not os.path.exists(path), key
            continue
        raw = open(path).read().rstrip("\n")
        tabbed += "\t" in raw or "\n" in raw
        assert value == raw.replace("\t", " ").replace("\n", " "), key
        assert mode == [format(os.stat(path).st_mode & 0o7777, "o")], key
    calls = log.read_text().split()
    assert tabbed and calls.count("tr") == 0  # no key here is written with a slash
    assert calls.count("stat") == 1


def test_boot_values_file_gives_the_host_its_own_defaults(tmp_path):
    """A lab host's namespace values recorded at creation (``sysctl_boot_values_file``, as
    `lab reboot` restores them) are its boot values where no file sets a key; the sysctl adapter
    prefers them to the kernel documentation's default."""
    from advisor.adapters.sysctl import ADAPTER

    boot = tmp_path / "sysctl-defaults.json"
    boot.write_text('{"net.ipv4.tcp_sack": "1", "net.ipv4.tcp_wmem": "4096\\t16384\\t4194304", "net.not.tracked": "7"}\n')
    ctx = CTX.model_copy(update={"vars": {"sysctl_boot_values_file": str(boot)}})
    out = subprocess.run(["sh", "-c", NetworkSysctlProbe().script(ctx)], capture_output=True, text=True, timeout=30, check=True)
    facts = NetworkSysctlProbe().parse(out.stdout)
    assert facts.boot_defaults == {"net.ipv4.tcp_sack": "1", "net.ipv4.tcp_wmem": "4096 16384 4194304"}
    data = {"network.sysctl": facts.model_dump(mode="json")}
    assert ADAPTER.default_value(data, "net.ipv4.tcp_wmem") == ("4096 16384 4194304", "the host's recorded boot values")
    # no file, no recorded value: the kernel documentation's default, where it is a fixed value
    assert ADAPTER.default_value({}, "net.ipv4.tcp_sack")[0] == "1"
    assert ADAPTER.default_value({}, "net.ipv4.tcp_wmem") is None  # its maximum depends on the RAM
    with pytest.raises(ProbeParseError, match="boot values"):
        NetworkSysctlProbe().parse(out.stdout.replace('"net.ipv4.tcp_sack": "1"', '"net.ipv4.tcp_sack": '))


def test_nic_script_reads_sysfs_with_the_shells_own_read(tmp_path):
    """network.nic on this machine: every interface's attributes, read with no process per value
    (a cat per attribute made it the second costliest probe of a host's batch: 34 -> 10 processes)."""
    import os
    import shutil
    import subprocess

    from probes.probe import ProbeContext

    log = tmp_path / "calls.log"
    shims = tmp_path / "shims"
    shims.mkdir()
    (shims / "cat").write_text(f"#!/bin/sh\necho cat >>'{log}'\nexec '{shutil.which('cat')}' \"$@\"\n")
    (shims / "cat").chmod(0o755)
    script = NetworkNicProbe().script(ProbeContext(host="localhost", is_local=True, sample_seconds=0.2))
    env = {"PATH": f"{shims}:{os.environ.get('PATH', '/usr/bin:/bin')}", "LC_ALL": "C"}
    run = subprocess.run(["/bin/sh", "-c", script], capture_output=True, text=True, timeout=30, env=env)
    assert run.returncode == 0, run.stderr
    facts = NetworkNicProbe().parse(run.stdout)
    assert set(facts.interfaces) == set(os.listdir("/sys/class/net"))
    lo = facts.interfaces["lo"]
    assert lo.is_loopback and lo.mtu == int(open("/sys/class/net/lo/mtu").read())
    assert not log.exists()  # no cat
