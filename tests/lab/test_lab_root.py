"""A small lab, for real: namespaces, sshd over real OpenSSH, faults only where injected, emulators,
site file, and nothing left behind by `down` (also after a killed `up`). Needs root (CI is root)."""

from __future__ import annotations

import ipaddress
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from advisor.lab.records import LAB_POOL, host_ns, switch_ns
from tests.support.lab import REPO, SMALL_SCENARIO, lab_cli, lab_traces, no_traces, require_root, root_snapshot, ssh


@pytest.fixture(scope="module")
def small_lab(lab_registry: Path, tmp_path_factory: pytest.TempPathFactory):
    require_root()
    before = root_snapshot()
    scen = tmp_path_factory.mktemp("scen") / "small.yml"
    scen.write_text(SMALL_SCENARIO)
    name = "t-small"
    try:
        t0 = time.monotonic()
        cp = lab_cli(["up", "--scenario", str(scen), "--name", name, "--json"])
        info = json.loads(cp.stdout)
        info["up_seconds"] = time.monotonic() - t0
        info["before"] = before
        info["dir"] = Path(info["state_dir"])
        yield info
    finally:
        lab_cli(["down", "--name", name], check=False)


def addr(lab: dict, host: str) -> str:
    return lab["hosts"][host]["address"]


def test_ssh_hostnames(small_lab: dict) -> None:
    for h in ("st1", "wn1", "wn2"):
        assert ssh(small_lab["dir"], addr(small_lab, h), "hostname").stdout.strip() == h


def test_wrong_host_key_is_refused(small_lab: dict, tmp_path: Path) -> None:
    d = small_lab["dir"]
    lines = (d / "known_hosts").read_text().splitlines()
    # give st1's address wn1's key: the real client must refuse
    keys = {l.split()[0]: " ".join(l.split()[1:]) for l in lines}
    bad = tmp_path / "kh"
    bad.write_text(f"{addr(small_lab, 'st1')} {keys[addr(small_lab, 'wn1')]}\n")
    cp = subprocess.run(["ssh", "-F", "/dev/null", "-i", str(d / "client_key"), "-o", f"UserKnownHostsFile={bad}",
                         "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", f"root@{addr(small_lab, 'st1')}",
                         "true"], capture_output=True, text=True, timeout=30)
    assert cp.returncode != 0 and "HOST IDENTIFICATION HAS CHANGED" in cp.stderr


def test_sysctl_fault_only_where_injected(small_lab: dict) -> None:
    d = small_lab["dir"]
    got = {h: ssh(d, addr(small_lab, h), "sysctl -n net.ipv4.tcp_sack net.ipv4.tcp_timestamps").stdout.split()
           for h in ("st1", "wn1", "wn2")}
    assert got["st1"] == ["0", "0"]
    assert got["wn1"] == ["1", "1"] and got["wn2"] == ["1", "1"]
    assert Path("/proc/sys/net/ipv4/tcp_sack").read_text().strip() == small_lab["before"]["sysctls"]["net/ipv4/tcp_sack"]


def test_private_sysctl_d(small_lab: dict) -> None:
    d = small_lab["dir"]
    st1 = ssh(d, addr(small_lab, "st1"), "ls /etc/sysctl.d; cat /etc/sysctl.d/60-gpfs-tuning.conf").stdout
    assert "60-gpfs-tuning.conf" in st1 and "# old GPFS tuning guide" in st1 and "net.ipv4.tcp_sack = 0" in st1
    wn1 = ssh(d, addr(small_lab, "wn1"), "ls /etc/sysctl.d").stdout.split()
    assert "60-gpfs-tuning.conf" not in wn1
    # writes inside a host stay inside it (what Ansible's sysctl module does: temp file + rename)
    ssh(d, addr(small_lab, "wn1"), "echo 'net.ipv4.tcp_sack = 1' > /etc/sysctl.d/.tmp && mv /etc/sysctl.d/.tmp /etc/sysctl.d/70-x.conf")
    assert "70-x.conf" not in os.listdir("/etc/sysctl.d")
    assert "70-x.conf" not in ssh(d, addr(small_lab, "st1"), "ls /etc/sysctl.d").stdout
    assert {p.name for p in Path("/etc/sysctl.d").iterdir()} == set(small_lab["before"]["etc_sysctl_d"])


def test_gpfs_emulator(small_lab: dict) -> None:
    d = small_lab["dir"]
    a = addr(small_lab, "st1")
    out = ssh(d, a, "/usr/lpp/mmfs/bin/mmlsconfig").stdout.splitlines()
    assert out[0] == "Configuration data for cluster gpfs.small.lab:" and set(out[1]) == {"-"}
    assert "pagepool 512M" in out and "[common]" in out and out[-1] == "/dev/fs1"
    assert "File systems in cluster gpfs.small.lab:" in out
    head = ssh(d, a, "head -2 /usr/lpp/mmfs/bin/mmlsconfig").stdout.splitlines()
    assert head[0] == f"#!{sys.executable}" and "storadvise lab emulator — not IBM software" in head[1]
    r = ssh(d, a, "/usr/lpp/mmfs/bin/mmchconfig pagepool=1G -i")
    assert "mmchconfig: Command successfully completed" in r.stdout
    # the cluster config is shared: wn1 sees the change, active values changed on both nodes (-i)
    w = addr(small_lab, "wn1")
    assert ssh(d, w, "/usr/lpp/mmfs/bin/mmlsconfig pagepool").stdout == "pagepool 1G\n"
    assert "mmdiag:config:0:1:::pagepool:1073741824:" in ssh(d, w, "/usr/lpp/mmfs/bin/mmdiag --config -Y").stdout
    # not a GPFS node: no emulator there
    assert ssh(d, addr(small_lab, "wn2"), "test -e /usr/lpp/mmfs/bin/mmlsconfig", check=False).returncode != 0
    log = [json.loads(l) for l in (d / "emu" / "invocations.jsonl").read_text().splitlines()]
    assert {"host": "st1", "argv": ["mmchconfig", "pagepool=1G", "-i"]}.items() <= {k: log[-3][k] for k in ("host", "argv")}.items() or any(
        e["host"] == "st1" and e["argv"] == ["mmchconfig", "pagepool=1G", "-i"] for e in log)
    assert not Path("/usr/lpp").exists()


def test_san_emulator(small_lab: dict) -> None:
    d = small_lab["dir"]
    a = addr(small_lab, "st1")
    out = ssh(d, a, "/opt/SMgr/client/SMcli ctl-a ctl-b -c 'show allLogicalDrives;'").stdout
    assert "Logical Drive name: d1" in out and "Dynamic cache read prefetch: Disabled" in out
    assert out.rstrip().endswith("SMcli completed successfully.")
    ssh(d, a, "/opt/SMgr/client/SMcli ctl-a ctl-b -c 'set logicalDrive [\"d1\"] cacheReadPrefetch=TRUE;'")
    out = ssh(d, a, "/opt/SMgr/client/SMcli ctl-a -c 'show logicalDrive [\"d1\"];'").stdout
    assert "Dynamic cache read prefetch: Enabled" in out
    assert ssh(d, a, "/opt/SMgr/client/SMcli ctl-a -c 'bogus;'", check=False).returncode != 0
    assert ssh(d, addr(small_lab, "wn1"), "test -e /opt/SMgr/client/SMcli", check=False).returncode != 0
    assert not Path("/opt/SMgr").exists()


def test_firewall_only_where_injected(small_lab: dict) -> None:
    d = small_lab["dir"]
    assert "table inet site_fw" in ssh(d, addr(small_lab, "st1"), "nft list ruleset").stdout
    for h in ("wn1", "wn2"):
        assert "site_fw" not in ssh(d, addr(small_lab, h), "nft list ruleset").stdout
    assert "site_fw" not in subprocess.run(["nft", "list", "ruleset"], capture_output=True, text=True).stdout
    # the rule acts: wn2 cannot reach st1's iperf3 port, wn1 can
    ns = lambda h: host_ns("t-small", h)  # noqa: E731
    probe = "import socket,sys; s=socket.socket(); s.settimeout(1.5); s.connect((sys.argv[1], 5201)); print('ok')"
    ok = subprocess.run(["ip", "netns", "exec", ns("wn1"), sys.executable, "-c", probe, addr(small_lab, "st1")],
                        capture_output=True, text=True)
    blocked = subprocess.run(["ip", "netns", "exec", ns("wn2"), sys.executable, "-c", probe, addr(small_lab, "st1")],
                             capture_output=True, text=True)
    assert ok.stdout.strip() == "ok" and blocked.returncode != 0


def test_loss_rule_in_the_switch(small_lab: dict) -> None:
    out = subprocess.run(["ip", "netns", "exec", switch_ns("t-small", "edge"), "nft", "list", "ruleset"],
                         capture_output=True, text=True).stdout
    assert "numgen random mod 1000000 < 5000" in out and addr(small_lab, "st1") in out
    core = subprocess.run(["ip", "netns", "exec", switch_ns("t-small", "core"), "nft", "list", "ruleset"],
                          capture_output=True, text=True).stdout
    assert "numgen" not in core


def test_site_file_and_inventory(small_lab: dict) -> None:
    from advisor.site.file import load_site

    site = load_site("t-small")
    assert site.name == "t-small" and site.storage_kind == "gpfs"
    st1 = site.host("st1")
    assert st1.address == addr(small_lab, "st1") and st1.port == 22 and st1.user == "root"
    assert st1.key and st1.key.stat().st_mode & 0o777 == 0o600
    assert st1.setting("san_controllers") == ["ctl-a", "ctl-b"] and st1.link_rate == 10**9
    assert site.storage_network.prefixes == [small_lab["subnet"]]
    assert site.mesh and site.mesh.congestion == "cubic"
    inv = (small_lab["dir"] / "inventory.ini").read_text()
    assert f"st1 ansible_host={addr(small_lab, 'st1')}" in inv and "StrictHostKeyChecking=yes" in inv
    assert "[worker]\nwn1\nwn2" in inv
    assert not (Path.home() / ".ssh" / "storadvise").exists()


def test_controller_route_is_the_lab_prefix_only(small_lab: dict) -> None:
    """The controller reaches this lab through its own interface and for its own /24 only; every lab route
    stays inside the lab pool (other labs, up at the same time, have interfaces of their own)."""
    routes = subprocess.run(["ip", "-4", "route", "show", "table", "all"], capture_output=True, text=True).stdout
    net = ipaddress.ip_network(small_lab["subnet"])
    (iface,) = small_lab["root_ifaces"]
    mine = [r for r in routes.splitlines() if f" dev {iface} " in f"{r} "]
    assert mine, routes
    for r in mine:
        dest = r.split()[1] if r.split()[0] in ("local", "broadcast") else r.split()[0]
        assert ipaddress.ip_network(dest, strict=False).subnet_of(net), (r, net)
    assert any(r.startswith(f"{net} dev {iface}") for r in mine)
    for r in routes.splitlines():
        if " dev salab" in r:
            dest = r.split()[1] if r.split()[0] in ("local", "broadcast") else r.split()[0]
            assert ipaddress.ip_network(dest, strict=False).subnet_of(LAB_POOL), r
    got = subprocess.run(["ip", "route", "get", addr(small_lab, "st1")], capture_output=True, text=True).stdout
    assert f"dev {iface}" in got


def test_status_reports_healthy(small_lab: dict) -> None:
    labs = json.loads(lab_cli(["status", "--json"]).stdout)
    lab = next(x for x in labs if x["name"] == "t-small")
    assert lab["healthy"] and all(h["sshd_alive"] and h["iperf3_alive"] for h in lab["hosts"])


def test_up_again_reuses(small_lab: dict) -> None:
    cp = lab_cli(["up", "--scenario", str(Path(small_lab["state_dir"])), "--name", "t-small"], check=False)
    assert cp.returncode != 0  # a directory is no scenario: one-line error, lab untouched
    labs = json.loads(lab_cli(["status", "--json"]).stdout)
    assert next(x for x in labs if x["name"] == "t-small")["healthy"]


def test_zz_down_leaves_nothing_and_root_unchanged(small_lab: dict) -> None:
    pids = [int(l.split()[0]) for l in (small_lab["dir"] / "pids").read_text().splitlines()]
    lab_cli(["down", "--name", "t-small"])
    t = lab_traces("t-small")
    assert no_traces(t), t
    assert not any(Path(f"/proc/{p}").exists() and "sshd" in Path(f"/proc/{p}/cmdline").read_text(errors="replace")
                   and "t-small" in Path(f"/proc/{p}/cmdline").read_text(errors="replace") for p in pids)
    after = root_snapshot()
    before = small_lab["before"]
    for k in before:
        assert after[k] == before[k], k


# -- down after a killed up ----------------------------------------------------------------------


@pytest.mark.parametrize("kill_when", ["record", "processes"])
def test_down_after_killed_up(lab_registry: Path, tmp_path: Path, kill_when: str) -> None:
    require_root()
    before = root_snapshot()
    scen = tmp_path / "k.yml"
    scen.write_text(SMALL_SCENARIO.replace("wn[1:2]", "wn[1:3]"))
    name = f"t-kill-{kill_when}"
    d = lab_registry / name
    proc = subprocess.Popen([sys.executable, "-c", "from advisor.lab.cli import app; app()", "up", "--scenario",
                             str(scen), "--name", name], cwd=str(REPO),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if kill_when == "record" and (d / "record.json").exists():
                break
            if kill_when == "processes" and (d / "pids").exists() and len((d / "pids").read_text().splitlines()) >= 2:
                break
            if proc.poll() is not None:
                break
            time.sleep(0.005)
        assert proc.poll() is None, "up finished before it could be killed"
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        rec = json.loads((d / "record.json").read_text())
        pids = [int(l.split()[0]) for l in (d / "pids").read_text().splitlines()] if (d / "pids").exists() else []
        time.sleep(0.2)
    finally:
        lab_cli(["down", "--name", name], check=False)
    t = lab_traces(name)
    assert no_traces(t), t
    existing = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert not any(ns in existing for ns in rec["namespaces"])
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert not any(f" {i}:" in links or f" {i}@" in links for i in rec["root_ifaces"])
    for p in pids:
        assert not Path(f"/proc/{p}").exists() or Path(f"/proc/{p}/stat").read_text().split(") ")[1][0] == "Z"
    after = root_snapshot()
    for k in before:
        assert after[k] == before[k], k
