"""A plan carries only what it uses (issue 37, item 7): the roles its changes need (and apply_summary),
the module_utils those roles import, plays only for them; the inventory declares every group the
playbooks name, so ansible-playbook --syntax-check is silent. Real ansible-playbook."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from advisor.apply.project_files import module_utils_of
from advisor.util.resources import playbooks_dir
from tests.support.small_report import saved_small_report
from tests.support.ansible import ANSIBLE_PLAYBOOK
from tests.support.ns_host import STORADVISE

pytestmark = [pytest.mark.skipif(STORADVISE is None, reason="storadvise is not installed in this venv"),
              pytest.mark.usefixtures("ansible_playbook")]


def test_a_sysctl_plan_carries_network_tuning_only_and_checks_silently(tmp_path):
    _report, scan, site = saved_small_report(tmp_path)
    plan = tmp_path / "plan"
    r = subprocess.run([STORADVISE, "plan", "--site", str(site), "--scan", str(scan), "--out-dir", str(plan),
                        "--min-severity", "info", "--json"], capture_output=True, text=True, timeout=300)
    assert r.returncode in (0, 3), r.stderr  # 3: wn03 was unreachable at scan time, left out
    changes = json.loads(r.stdout)["changes"]
    assert changes and {c["role"] for c in changes} == {"network_tuning"}
    assert sorted(p.name for p in (plan / "roles").iterdir()) == ["apply_summary", "network_tuning"]
    roles = [plan / "roles" / "apply_summary", plan / "roles" / "network_tuning"]
    carried = sorted(p.stem for p in (plan / "module_utils").glob("*.py"))
    assert carried == module_utils_of(roles, playbooks_dir() / "module_utils") and "storadvise_state" in carried
    imported = {m for d in roles for p in d.rglob("*.py") for m in re.findall(r"module_utils\.(storadvise_\w+)",
                                                                               p.read_text())}
    assert imported <= set(carried)
    assert sum(1 for p in plan.rglob("*") if p.is_file()) < 30
    inventory = yaml.safe_load(re.sub(r"!unsafe ", "", (plan / "inventory.yml").read_text()))
    groups = set(inventory["all"]["children"])
    for book in ("apply-tuning.yml", "rollback.yml"):
        plays = yaml.safe_load((plan / book).read_text())
        named = {p["hosts"] for p in plays if "hosts" in p} - {"localhost"}
        assert named and named <= groups, (book, named - groups)
        cp = subprocess.run([ANSIBLE_PLAYBOOK, "--syntax-check", book], capture_output=True, text=True, cwd=plan,
                            timeout=300)
        assert cp.returncode == 0 and "WARNING" not in cp.stdout + cp.stderr, cp.stdout + cp.stderr
