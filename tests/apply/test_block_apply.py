"""block_tuning run by real ansible-playbook (local connection) against a sysfs-shaped tree in the
test's temp dir: a real block device's queue cannot be changed on a CI machine, and the role's
sysfs root and udev rule path are role variables for exactly this. Apply, read back, persist,
second run changes nothing, --check --diff changes nothing, rollback restores; no devices planned
changes nothing at all."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.ansible import ANSIBLE_PLAYBOOK

REPO = Path(__file__).resolve().parents[2]
pytestmark = [
    pytest.mark.skipif(not ANSIBLE_PLAYBOOK, reason="ansible-playbook not installed"),
    pytest.mark.usefixtures("ansible_playbook"),
]

PLAY = """---
- name: Block queue
  hosts: localhost
  connection: local
  gather_facts: false
  roles:
    - role: block_tuning
      vars:
        block_tuning_state: "{{ state | default('present') }}"
"""


def world(tmp: Path, devices: dict) -> dict:
    sysfs = tmp / "sys" / "block"
    for dev, (ra, sched) in {"sdb": ("128", "[none] mq-deadline kyber"), "sdc": ("4096", "none [mq-deadline]")}.items():
        q = sysfs / dev / "queue"
        q.mkdir(parents=True)
        (q / "read_ahead_kb").write_text(ra + "\n")
        (q / "scheduler").write_text(sched + "\n")
        (q / "nr_requests").write_text("64\n")
    (sysfs / "sdb" / "device").mkdir()  # sdb is a SCSI disk with NCQ off; sdc has no device queue (like NVMe)
    (sysfs / "sdb" / "device" / "queue_depth").write_text("1\n")
    (tmp / "rules.d").mkdir()
    (tmp / "play.yml").write_text(PLAY)
    (tmp / "vars.json").write_text(json.dumps({
        "block_tuning_devices": devices, "block_tuning_sysfs_block": str(sysfs),
        "block_tuning_udev_rules_file": str(tmp / "rules.d" / "60-storadvise-block.rules"),
        "block_tuning_backup_file": str(tmp / "backup" / "block_tuning.json"),
    }))
    (tmp / "backup").mkdir()
    return {"sysfs": sysfs, "rules": tmp / "rules.d" / "60-storadvise-block.rules", "tmp": tmp}


def play(w: dict, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "ANSIBLE_ROLES_PATH": str(REPO / "playbooks" / "roles"),
           "ANSIBLE_MODULE_UTILS": str(REPO / "playbooks" / "module_utils"), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_PYTHON_INTERPRETER": sys.executable,
           "ANSIBLE_LOCALHOST_WARNING": "false", "ANSIBLE_INVENTORY_UNPARSED_WARNING": "false"}
    cp = subprocess.run([ANSIBLE_PLAYBOOK, "-i", "localhost,", "play.yml", "-e", "@vars.json", *args],
                        cwd=w["tmp"], capture_output=True, text=True, timeout=300, env=env)
    assert cp.returncode == 0, cp.stdout[-3000:] + cp.stderr[-2000:]
    return cp


def changed(cp: subprocess.CompletedProcess) -> int:
    recap = cp.stdout.split("PLAY RECAP", 1)[1]
    return int(recap.split("changed=", 1)[1].split()[0])


def q(w: dict, dev: str, key: str) -> str:
    return (w["sysfs"] / dev / "queue" / key).read_text().strip()


def test_apply_idempotent_check_and_rollback(tmp_path: Path) -> None:
    w = world(tmp_path, {"sdb": {"read_ahead_kb": 8192, "scheduler": "mq-deadline"}})
    chk = play(w, "--check", "--diff")
    assert changed(chk) == 1 and "read_ahead_kb = 8192" in chk.stdout
    assert q(w, "sdb", "read_ahead_kb") == "128" and not w["rules"].exists()  # --check wrote nothing
    assert changed(play(w)) == 1
    assert q(w, "sdb", "read_ahead_kb") == "8192" and q(w, "sdb", "scheduler") == "mq-deadline"
    assert q(w, "sdc", "read_ahead_kb") == "4096"  # not planned: untouched
    rule = w["rules"].read_text()
    assert 'KERNEL=="sdb", ATTR{queue/scheduler}="mq-deadline", ATTR{queue/read_ahead_kb}="8192"' in rule
    assert changed(play(w)) == 0 and changed(play(w, "--check", "--diff")) == 0
    backup = json.loads((tmp_path / "backup" / "block_tuning.json").read_text())
    assert backup["devices"]["sdb"] == {"read_ahead_kb": "128", "scheduler": "none"}
    assert changed(play(w, "-e", "state=rollback")) == 1
    assert q(w, "sdb", "read_ahead_kb") == "128" and q(w, "sdb", "scheduler") == "none"
    assert not w["rules"].exists()  # there was no rule file before
    again = play(w, "-e", "state=rollback")
    assert changed(again) == 0 and "no backup" in again.stdout


def test_request_queue_and_device_queue_depth(tmp_path: Path) -> None:
    w = world(tmp_path, {"sdb": {"nr_requests": 256, "queue_depth": 31, "scheduler": "mq-deadline"}})
    assert changed(play(w)) == 1
    assert q(w, "sdb", "nr_requests") == "256" and q(w, "sdb", "scheduler") == "mq-deadline"
    assert (w["sysfs"] / "sdb" / "device" / "queue_depth").read_text().strip() == "31"
    assert q(w, "sdc", "nr_requests") == "64"  # not planned: untouched
    # udev applies the attributes in order: the scheduler first (selecting one resets nr_requests)
    assert ('KERNEL=="sdb", ATTR{queue/scheduler}="mq-deadline", ATTR{device/queue_depth}="31", '
            'ATTR{queue/nr_requests}="256"') in w["rules"].read_text()
    assert changed(play(w)) == 0
    backup = json.loads((tmp_path / "backup" / "block_tuning.json").read_text())
    assert backup["devices"]["sdb"] == {"nr_requests": "64", "queue_depth": "1", "scheduler": "none"}
    assert changed(play(w, "-e", "state=rollback")) == 1
    assert q(w, "sdb", "nr_requests") == "64" and q(w, "sdb", "scheduler") == "none"
    assert (w["sysfs"] / "sdb" / "device" / "queue_depth").read_text().strip() == "1"


def test_device_without_a_queue_depth_fails_alone(tmp_path: Path) -> None:
    """sdc has no device/queue_depth (like NVMe): that setting fails for itself, sdb's nr_requests is still
    set and persisted, and the summary play names the failure."""
    w = world(tmp_path, {"sdc": {"queue_depth": 31}, "sdb": {"nr_requests": 128}})
    (tmp_path / "inv.yml").write_text(json.dumps({"all": {"children": {"storadvise_block_tuning": {
        "hosts": {"st01": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}}}}))
    (tmp_path / "play.yml").write_text(PLAY.replace("hosts: localhost", "hosts: storadvise_block_tuning")
                                       + "- name: Summary\n  hosts: localhost\n  gather_facts: false\n"
                                         "  roles:\n    - role: apply_summary\n      vars: {apply_summary_roles: [block_tuning]}\n")
    env = {**os.environ, "ANSIBLE_ROLES_PATH": str(REPO / "playbooks" / "roles"),
           "ANSIBLE_MODULE_UTILS": str(REPO / "playbooks" / "module_utils"), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_PYTHON_INTERPRETER": sys.executable}
    cp = subprocess.run([ANSIBLE_PLAYBOOK, "-i", "inv.yml", "play.yml", "-e", "@vars.json"], cwd=tmp_path,
                        capture_output=True, text=True, timeout=300, env=env)
    assert cp.returncode == 2, cp.stdout[-3000:]
    assert "FAILED block_tuning sdc queue_depth: the kernel has no queue_depth for this device" in cp.stdout
    assert q(w, "sdb", "nr_requests") == "128"
    rule = w["rules"].read_text()
    assert 'KERNEL=="sdb", ATTR{queue/nr_requests}="128"' in rule and "sdc" not in rule


def test_nothing_planned_changes_nothing(tmp_path: Path) -> None:
    w = world(tmp_path, {})
    assert changed(play(w, "--check", "--diff")) == 0
    assert changed(play(w)) == 0
    assert not w["rules"].exists() and not any((tmp_path / "backup").iterdir())


def test_unknown_device_fails_alone_and_the_summary_names_it(tmp_path: Path) -> None:
    """An unknown device is refused for itself; the other device is still tuned; the apply's summary
    play names the failure and the run exits non-zero."""
    w = world(tmp_path, {"sdz": {"read_ahead_kb": 8192}, "sdb": {"read_ahead_kb": 8192}})
    (tmp_path / "inv.yml").write_text(json.dumps({"all": {"children": {"storadvise_block_tuning": {
        "hosts": {"st01": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}}}}))
    (tmp_path / "play.yml").write_text(PLAY.replace("hosts: localhost", "hosts: storadvise_block_tuning")
                                       + "- name: Summary\n  hosts: localhost\n  gather_facts: false\n"
                                         "  roles:\n    - role: apply_summary\n      vars: {apply_summary_roles: [block_tuning]}\n")
    env = {**os.environ, "ANSIBLE_ROLES_PATH": str(REPO / "playbooks" / "roles"),
           "ANSIBLE_MODULE_UTILS": str(REPO / "playbooks" / "module_utils"), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_PYTHON_INTERPRETER": sys.executable}
    cp = subprocess.run([ANSIBLE_PLAYBOOK, "-i", "inv.yml", "play.yml", "-e", "@vars.json"], cwd=tmp_path,
                        capture_output=True, text=True, timeout=300, env=env)
    assert cp.returncode == 2, cp.stdout[-3000:]
    assert "FAILED block_tuning sdz: no such block device" in cp.stdout
    assert q(w, "sdb", "read_ahead_kb") == "8192"
    summary = json.loads((tmp_path / "apply-summary.json").read_text())
    assert summary["failed_hosts"] == ["st01"]
    assert [c["setting"] for c in summary["hosts"]["st01"]["changed"]] == ["sdb read_ahead_kb"]


def test_an_unreachable_host_does_not_stop_the_others(tmp_path: Path) -> None:
    """A host that cannot be reached (ssh to a closed port) is named in the summary; the reachable host
    is tuned; the run exits non-zero."""
    w = world(tmp_path, {"sdb": {"read_ahead_kb": 4096}})
    (tmp_path / "inv.yml").write_text(json.dumps({"all": {"children": {"storadvise_block_tuning": {"hosts": {
        "st01": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable},
        "st02": {"ansible_host": "127.0.0.1", "ansible_port": 9, "ansible_user": "nobody",
                 "ansible_ssh_common_args": "-o ConnectTimeout=3 -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null"},
    }}}}}))
    play = PLAY.replace("hosts: localhost", "hosts: storadvise_block_tuning").replace("  connection: local\n", "")
    (tmp_path / "play.yml").write_text(play + "- name: Summary\n  hosts: localhost\n  connection: local\n  gather_facts: false\n"
                                              "  roles:\n    - role: apply_summary\n      vars: {apply_summary_roles: [block_tuning]}\n")
    env = {**os.environ, "ANSIBLE_ROLES_PATH": str(REPO / "playbooks" / "roles"),
           "ANSIBLE_MODULE_UTILS": str(REPO / "playbooks" / "module_utils"), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_PYTHON_INTERPRETER": sys.executable, "ANSIBLE_HOST_KEY_CHECKING": "False"}
    cp = subprocess.run([ANSIBLE_PLAYBOOK, "-i", "inv.yml", "play.yml", "-e", "@vars.json"], cwd=tmp_path,
                        capture_output=True, text=True, timeout=300, env=env)
    assert cp.returncode != 0, cp.stdout[-3000:]
    assert q(w, "sdb", "read_ahead_kb") == "4096"
    summary = json.loads((tmp_path / "apply-summary.json").read_text())
    assert summary["failed_hosts"] == ["st02"]
    assert summary["hosts"]["st02"]["failed"][0]["why"].startswith("unreachable: "), summary["hosts"]["st02"]
    assert [c["setting"] for c in summary["hosts"]["st01"]["changed"]] == ["sdb read_ahead_kb"]
    assert "FAILED block_tuning (whole role): unreachable: " in cp.stdout
