"""One sysctl key <-> /proc/sys path mapping (playbooks/module_utils/storadvise_sysctl_keys.py), used by
the probe and by the Ansible module: a key of an interface whose name holds a dot
(``net.ipv4.conf.v0/100.rp_filter``, the interface ``v0.100``) names the same file in both. The
module is run for real by ``ansible`` inside a network namespace of this test's own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from probes.network import NetworkSysctlProbe
from probes.probe import ProbeContext
from probes.sysctl_conf import normalize_sysctl_key, parse_sysctl_conf, sysctl_proc_path

REPO = Path(__file__).resolve().parents[2]
ANSIBLE = Path(sys.executable).parent / "ansible"
KEY = "net.ipv4.conf.v0/100.rp_filter"
PATH = "/proc/sys/net/ipv4/conf/v0.100/rp_filter"


def test_the_probe_uses_the_shared_mapping():
    import storadvise_sysctl_keys  # loaded from playbooks/module_utils by probes.sysctl_conf

    assert Path(storadvise_sysctl_keys.__file__).resolve() == (
        REPO / "playbooks" / "module_utils" / "storadvise_sysctl_keys.py").resolve()
    assert sysctl_proc_path is storadvise_sysctl_keys.sysctl_proc_path
    assert sysctl_proc_path(KEY) == PATH == sysctl_proc_path("net/ipv4/conf/v0.100/rp_filter")
    assert normalize_sysctl_key("net/ipv4/conf/v0.100/rp_filter") == KEY
    assert (REPO / "playbooks" / "plugins" / "module_utils" / "storadvise_sysctl_keys.py").resolve() == (
        REPO / "playbooks" / "module_utils" / "storadvise_sysctl_keys.py").resolve()


@pytest.fixture
def netns():
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces); CI runs as root")
    name = f"sa-h26keys-{os.getpid()}"
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        subprocess.run(["ip", "netns", "exec", name, "ip", "link", "add", "v0.100", "type", "veth", "peer", "name", "v1"],
                       check=True)
        yield name
    finally:
        subprocess.run(["ip", "netns", "delete", name], check=False)


@pytest.mark.skipif(not ANSIBLE.exists(), reason="ansible-core not installed")
def test_module_and_probe_agree_on_a_dotted_interface_key(netns, tmp_path):
    def in_ns(*argv: str, **kw) -> subprocess.CompletedProcess:
        return subprocess.run(["ip", "netns", "exec", netns, *argv], capture_output=True, text=True, timeout=120, **kw)

    assert in_ns("cat", PATH).stdout.strip() != "2"
    conf = tmp_path / "sysctl.d"
    conf.mkdir()
    args = json.dumps({"sysctls": {KEY: "2"}, "sysctl_file": str(conf / "90-storadvise.conf"), "conf_paths": [str(conf)],
                       "editable_prefixes": [str(tmp_path)], "backup_file": str(tmp_path / "backup.json"),
                       "state": "present"})
    env = {"PATH": f"{ANSIBLE.parent}:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": str(tmp_path),
           "ANSIBLE_HOME": str(tmp_path / "ansible-home"), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_LIBRARY": str(REPO / "playbooks" / "plugins" / "modules"),
           "ANSIBLE_MODULE_UTILS": str(REPO / "playbooks" / "module_utils")}
    cp = in_ns(str(ANSIBLE), "localhost", "-c", "local", "-e", f"ansible_python_interpreter={sys.executable}",
               "-m", "storadvise_sysctl", "-a", args, env=env)
    assert cp.returncode == 0, cp.stdout[-2000:] + cp.stderr[-2000:]
    assert in_ns("cat", PATH).stdout.strip() == "2"  # the module wrote the interface's own file
    assert f"{KEY} = 2" in (conf / "90-storadvise.conf").read_text()
    # the probe, asked for the key, reads that same file; its config grammar reads the module's line as the key
    ctx = ProbeContext(host="h", requested={"network.sysctl": [KEY]})
    out = in_ns("sh", "-c", NetworkSysctlProbe().script(ctx))
    assert out.returncode == 0, out.stderr
    assert NetworkSysctlProbe().parse(out.stdout).sysctls[KEY].runtime == "2"
    written = conf / "90-storadvise.conf"
    assert [(c.key, c.value) for c in parse_sysctl_conf(str(written), written.read_text())] == [(KEY, "2")]
