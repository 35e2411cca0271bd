"""nic_tuning and cpu_tuning run by real ansible-playbook (local connection).

nic_tuning acts on a real veth in a network namespace of the test's own (``ethtool -K`` of its GRO, read
back with the real ethtool; a veth has no ring parameters, so a planned ring is a failed setting saying
so), persisting in a udev rules file in the test's temp dir. cpu_tuning acts on a cpufreq-shaped tree in
the temp dir (a CI machine's governor cannot be changed; the role's cpufreq directory and unit directory
are role variables for that) and persists with a systemd unit there, linked as `systemctl enable` would
where systemd does not run. Apply, read back, persist, second run changes nothing, --check --diff
changes nothing, rollback restores."""

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
- name: {role}
  hosts: localhost
  connection: local
  gather_facts: false
  roles:
    - role: {role}
      vars:
        {role}_state: "{{{{ state | default('present') }}}}"
"""


def play(tmp: Path, role: str, variables: dict, *args: str, netns: str | None = None) -> subprocess.CompletedProcess:
    (tmp / "play.yml").write_text(PLAY.format(role=role))
    (tmp / "vars.json").write_text(json.dumps(variables))
    env = {**os.environ, "ANSIBLE_ROLES_PATH": str(REPO / "playbooks" / "roles"),
           "ANSIBLE_MODULE_UTILS": str(REPO / "playbooks" / "module_utils"), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_PYTHON_INTERPRETER": sys.executable,
           "ANSIBLE_LOCALHOST_WARNING": "false", "ANSIBLE_INVENTORY_UNPARSED_WARNING": "false"}
    argv = [ANSIBLE_PLAYBOOK, "-i", "localhost,", "play.yml", "-e", "@vars.json", *args]
    if netns:
        argv = ["ip", "netns", "exec", netns, *argv]
    cp = subprocess.run(argv, cwd=tmp, capture_output=True, text=True, timeout=300, env=env)
    assert cp.returncode == 0, cp.stdout[-3000:] + cp.stderr[-2000:]
    return cp


def changed(cp: subprocess.CompletedProcess) -> int:
    return int(cp.stdout.split("PLAY RECAP", 1)[1].split("changed=", 1)[1].split()[0])


def cpufreq_tree(tmp: Path) -> Path:
    d = tmp / "cpufreq"
    for n in (0, 1):
        p = d / f"policy{n}"
        p.mkdir(parents=True)
        (p / "scaling_governor").write_text("powersave\n")
        (p / "scaling_available_governors").write_text("performance powersave\n")
    return d


def test_cpu_governor_applied_persisted_idempotent_and_rolled_back(tmp_path: Path) -> None:
    cpufreq = cpufreq_tree(tmp_path)
    units = tmp_path / "systemd"
    units.mkdir()
    v = {"cpu_tuning_governor": "performance", "cpu_tuning_cpufreq_dir": str(cpufreq), "cpu_tuning_unit_dir": str(units),
         "cpu_tuning_persist": "systemd", "cpu_tuning_backup_file": str(tmp_path / "backup" / "cpu_tuning.json")}
    chk = play(tmp_path, "cpu_tuning", v, "--check", "--diff")
    assert changed(chk) == 1 and "ExecStart" in chk.stdout
    assert (cpufreq / "policy0" / "scaling_governor").read_text().strip() == "powersave"
    assert not (units / "storadvise-cpu-governor.service").exists()
    assert changed(play(tmp_path, "cpu_tuning", v)) == 1
    for n in (0, 1):
        assert (cpufreq / f"policy{n}" / "scaling_governor").read_text().strip() == "performance"
    unit = (units / "storadvise-cpu-governor.service").read_text()
    assert f"echo performance > \"$g\"" in unit and str(cpufreq) in unit
    link = units / "multi-user.target.wants" / "storadvise-cpu-governor.service"
    assert link.is_symlink() and link.resolve() == (units / "storadvise-cpu-governor.service").resolve()
    # the unit does what it says: run its ExecStart on a reset tree
    (cpufreq / "policy1" / "scaling_governor").write_text("powersave\n")
    execstart = next(l for l in unit.splitlines() if l.startswith("ExecStart="))[len("ExecStart="):]
    subprocess.run(execstart.split(" ", 2)[:2] + [execstart.split(" ", 2)[2].strip("'")], check=True)
    assert (cpufreq / "policy1" / "scaling_governor").read_text().strip() == "performance"
    assert changed(play(tmp_path, "cpu_tuning", v)) == 0
    play(tmp_path, "cpu_tuning", v, "-e", "state=rollback")
    assert (cpufreq / "policy0" / "scaling_governor").read_text().strip() == "powersave"
    assert not (units / "storadvise-cpu-governor.service").exists() and not os.path.lexists(link)


def test_a_governor_no_policy_offers_is_a_failed_setting(tmp_path: Path) -> None:
    cpufreq = cpufreq_tree(tmp_path)
    v = {"cpu_tuning_governor": "ondemand", "cpu_tuning_cpufreq_dir": str(cpufreq), "cpu_tuning_unit_dir": str(tmp_path),
         "cpu_tuning_persist": "systemd", "cpu_tuning_backup_file": str(tmp_path / "b.json")}
    cp = play(tmp_path, "cpu_tuning", v, "-v")
    assert "offers performance powersave, not ondemand" in cp.stdout
    assert (cpufreq / "policy0" / "scaling_governor").read_text().strip() == "powersave"


@pytest.fixture
def veth_ns(netns):
    """The ``netns`` fixture's namespace (tests/support/netns.py: removed after the test) with a veth pair."""
    subprocess.run(["ip", "-n", netns, "link", "add", "v0", "type", "veth", "peer", "name", "v1"], check=True)
    subprocess.run(["ip", "netns", "exec", netns, "ethtool", "-K", "v0", "gro", "off"], check=True)
    return netns


def gro(ns: str) -> str:
    out = subprocess.run(["ip", "netns", "exec", ns, "ethtool", "-k", "v0"], capture_output=True, text=True).stdout
    return next(l.split(":", 1)[1].split()[0] for l in out.splitlines() if l.startswith("generic-receive-offload"))


def test_nic_offload_on_a_real_veth_applied_persisted_idempotent_and_rolled_back(veth_ns, tmp_path: Path) -> None:
    rules = tmp_path / "rules.d" / "81-storadvise-nic.rules"
    rules.parent.mkdir()
    v = {"nic_tuning_interfaces": {"v0": {"gro": "on", "ring_rx": 4096}}, "nic_tuning_persist": "udev",
         "nic_tuning_udev_rules_file": str(rules), "nic_tuning_backup_file": str(tmp_path / "backup" / "nic.json")}
    chk = play(tmp_path, "nic_tuning", v, "--check", "--diff", netns=veth_ns)
    assert changed(chk) == 1 and "v0 gro = on" in chk.stdout
    assert gro(veth_ns) == "off" and not rules.exists()
    cp = play(tmp_path, "nic_tuning", v, "-v", netns=veth_ns)
    assert changed(cp) == 1 and gro(veth_ns) == "on"
    assert "the NIC reports no rx ring (ethtool -g)" in cp.stdout  # a veth has no rings: said, not faked
    text = rules.read_text()
    assert 'ACTION=="add", SUBSYSTEM=="net", NAME=="v0", RUN+="' in text and "-K $name gro on" in text
    assert "-G $name" not in text  # what did not apply is not persisted
    assert changed(play(tmp_path, "nic_tuning", v, netns=veth_ns)) == 0
    play(tmp_path, "nic_tuning", v, "-e", "state=rollback", netns=veth_ns)
    assert gro(veth_ns) == "off" and not rules.exists()
