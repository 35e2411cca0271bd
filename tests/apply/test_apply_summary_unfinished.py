"""apply-summary.json names a host whose roles never finished and the plan's changes they left
(playbooks/roles/apply_summary). Real ansible-playbook on localhost running the shipped module with
results as the summary role collects them: wn01 finished, wn02 gave no result (it went down mid-play)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from advisor.util.resources import playbooks_dir

pytestmark = pytest.mark.usefixtures("ansible_playbook")

BIN = Path(sys.executable).parent

RESULTS = [
    {"host": "wn01", "role": "network_tuning", "error": None,
     "result": {"changed_settings": [{"setting": "net.ipv4.tcp_sack", "old": "0", "new": "1"}], "failed_settings": []}},
    {"host": "wn02", "role": "network_tuning", "result": None, "error": None},
    {"host": "wn02", "role": "firewall", "error": None,
     "result": {"changed_settings": [{"setting": "iptables filter INPUT: -j DROP", "old": "present", "new": "removed"}],
                "failed_settings": []}},
]
CHANGES = [
    {"host": "wn01", "role": "network_tuning", "setting": "net.ipv4.tcp_sack", "new": 1},
    {"host": "wn02", "role": "network_tuning", "setting": "net.ipv4.tcp_sack", "new": 1},
    {"host": "wn02", "role": "network_tuning", "setting": "net.ipv4.tcp_rmem", "new": "4096 87380 33554432"},
    {"host": "wn02", "role": "firewall", "setting": "iptables filter INPUT: -j DROP", "new": "removed"},
]


def _summary(tmp_path: Path, run: str) -> tuple[subprocess.CompletedProcess, dict]:
    (tmp_path / "plan.json").write_text(json.dumps({"changes": CHANGES}))
    play = [{"hosts": "localhost", "gather_facts": False, "tasks": [{
        "storadvise_apply_summary": {"results": RESULTS, "run": run, "summary_file": str(tmp_path / "s.json"),
                                     "plan_file": str(tmp_path / "plan.json")}, "register": "r"},
        {"ansible.builtin.debug": {"var": "r.lines"}}]}]
    (tmp_path / "p.yml").write_text(yaml.safe_dump(play))
    cp = subprocess.run([shutil.which("ansible-playbook", path=str(BIN)) or "ansible-playbook", "-i", "localhost,",
                         "-c", "local", "-e", f"ansible_python_interpreter={sys.executable}", "-M", str(playbooks_dir() / "roles" / "apply_summary" / "library"), "p.yml"],
                        cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert cp.returncode == 0, cp.stdout[-2000:] + cp.stderr[-2000:]
    return cp, json.loads((tmp_path / "s.json").read_text())


def test_a_host_down_mid_play_is_named_with_its_unfinished_changes(tmp_path: Path) -> None:
    cp, s = _summary(tmp_path, "apply")
    assert s["unfinished_hosts"] == ["wn02"]
    assert s["failed_hosts"] == ["wn02"]
    assert s["hosts"]["wn02"]["unfinished"] == [
        {"role": "network_tuning", "setting": "net.ipv4.tcp_sack", "new": 1},
        {"role": "network_tuning", "setting": "net.ipv4.tcp_rmem", "new": "4096 87380 33554432"}]
    # the role that finished on wn02 is not unfinished; wn01 finished everything
    assert "unfinished" not in s["hosts"]["wn01"]
    assert "UNFINISHED network_tuning net.ipv4.tcp_rmem -> 4096 87380 33554432" in cp.stdout


def test_a_rollback_lists_no_planned_change_as_unfinished(tmp_path: Path) -> None:
    _cp, s = _summary(tmp_path, "rollback")
    assert s["unfinished_hosts"] == [] and s["failed_hosts"] == ["wn02"]
