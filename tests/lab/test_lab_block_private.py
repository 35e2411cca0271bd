"""A lab host without emulated disks sees a private, empty /sys/block: a scan on it finds none of the
machine's block devices, and the block_tuning role run on it by real ansible-playbook (over the
host's sshd, as a plan's apply would) cannot reach the machine's real queue files: the setting
fails for itself on the host, the machine's value stays, no udev rule is written.

Needs root (CI is root). About 10 s on this 2-core machine.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.lab import lab_cli, require_root

pytestmark = pytest.mark.usefixtures("ansible_playbook")

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
PLAYBOOK = shutil.which("ansible-playbook", path=str(BIN))

SCENARIO = """
name: blockpriv
description: one storage host, no emulated disks
hosts:
  - name: st1
    roles: [storage]
"""

PLAY = """---
- name: Block queue on the lab host
  hosts: storadvise_block_tuning
  gather_facts: false
  roles:
    - role: block_tuning
- name: Summary
  hosts: localhost
  gather_facts: false
  roles:
    - role: apply_summary
      vars: {apply_summary_roles: [block_tuning]}
"""


def _real_device() -> tuple[str, Path] | None:
    """A block device of the machine with a read_ahead_kb queue file (loop devices first)."""
    devs = sorted(Path("/sys/block").iterdir(), key=lambda p: (not p.name.startswith("loop"), p.name))
    for d in devs:
        f = d / "queue" / "read_ahead_kb"
        if f.exists():
            return d.name, f
    return None


def test_lab_host_block_view_is_private_and_the_role_cannot_touch_real_devices(lab_registry: Path,  # noqa: F811
                                                                                tmp_path: Path) -> None:
    require_root()
    assert PLAYBOOK, "ansible-playbook not installed"
    real = _real_device()
    if real is None:
        pytest.skip("this machine has no block device with a queue")
    dev, ra_file = real
    ra_before = ra_file.read_text()
    rules_before = set(os.listdir("/etc/udev/rules.d")) if os.path.isdir("/etc/udev/rules.d") else set()
    scen = tmp_path / "blockpriv.yml"
    scen.write_text(SCENARIO)
    name = "t-blockpriv"
    try:
        info = json.loads(lab_cli(["up", "--scenario", str(scen), "--name", name, "--json"]).stdout)
        from advisor.lab.records import LabRecord

        rec = LabRecord.load(name)
        sshd = {host: pid for pid, what, host in rec.pids() if what == "sshd"}["st1"]
        view = subprocess.run(["nsenter", "-t", str(sshd), "-m", "--", "ls", "-A", "/sys/block"],
                              capture_output=True, text=True, timeout=30)
        assert view.returncode == 0 and view.stdout.split() == [], view.stdout
        # the scan sees no block device on the host
        scan = tmp_path / "scan.json"
        subprocess.run([BIN / "storadvise", "scan", "--site", name, "--sample-seconds", "0.2", "-o", scan, "--json"],
                       capture_output=True, text=True, timeout=600)
        findings = json.loads(scan.read_text())["findings"]
        assert f'"{dev}"' not in json.dumps([f for f in findings if f["rule_id"].startswith("BLOCK-")])
        # a host without block devices (like a container) is not a probe error (smart, block queue, disk I/O)
        assert not [f for f in findings if f["status"] == "error"], [f for f in findings if f["status"] == "error"]
        # the role, given the machine's device, fails that setting on the host and changes nothing real
        target = 8192 if ra_before.strip() != "8192" else 4096
        (tmp_path / "play.yml").write_text(PLAY)
        # the host's vars from the lab's site file, as a plan copies them, and the machine's device
        import yaml

        site = yaml.safe_load(Path(rec.site_file).read_text())
        host_vars = next(h for h in site["hosts"] if h["name"] == "st1")["vars"]
        assert not host_vars["block_tuning_udev_rules_file"].startswith("/etc/")
        (tmp_path / "vars.json").write_text(json.dumps({
            **host_vars, "block_tuning_devices": {dev: {"read_ahead_kb": target}},
            "storadvise_backup_dir": str(tmp_path / "backup"), "storadvise_plan_dir": str(tmp_path)}))
        env = {**os.environ, "ANSIBLE_ROLES_PATH": str(REPO / "playbooks" / "roles"),
               "ANSIBLE_MODULE_UTILS": str(REPO / "playbooks" / "module_utils"), "ANSIBLE_NOCOLOR": "1",
               "ANSIBLE_HOST_KEY_CHECKING": "True", "ANSIBLE_LOCALHOST_WARNING": "false"}
        d = Path(info["state_dir"])
        (tmp_path / "inv.json").write_text(json.dumps({"all": {"children": {"storadvise_block_tuning": {"hosts": {"st1": {
            "ansible_host": info["hosts"]["st1"]["address"], "ansible_user": "root",
            "ansible_ssh_private_key_file": str(d / "client_key"),
            "ansible_ssh_common_args": f"-o UserKnownHostsFile={d / 'known_hosts'} -o StrictHostKeyChecking=yes "
                                       "-o IdentitiesOnly=yes"}}}}}}))
        cp = subprocess.run([PLAYBOOK, "-i", "inv.json", "play.yml", "-e", "@vars.json"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=300, env=env)
        assert "unreachable=0" in cp.stdout.split("PLAY RECAP", 1)[-1], cp.stdout[-3000:]
        assert cp.returncode != 0 and f"no such block device (/sys/block/{dev})" in cp.stdout, cp.stdout[-3000:]
        assert "directory does not exist" not in cp.stdout, cp.stdout[-3000:]
        assert ra_file.read_text() == ra_before
        after = set(os.listdir("/etc/udev/rules.d")) if os.path.isdir("/etc/udev/rules.d") else set()
        assert after == rules_before
    finally:
        lab_cli(["down", "--name", name], check=False)
        assert ra_file.read_text() == ra_before
