"""Every "next step" line the tool prints is a command that runs as printed (issue 37, item 4): scan's
plan line, plan's verify line and collect's scan --from line are taken from the output and run, as they
are, by a shell; plan and verify take the local host without --site, as scan does. (The review and apply
lines, ansible-playbook on a real host, are run as printed in tests/apply/test_next_steps_loop.py.)"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

from tests.support.cli import next_lines

REPO = Path(__file__).resolve().parents[2]
STORADVISE = Path(sys.executable).parent / "storadvise"


def cli(*args, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(STORADVISE), *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=600,
                          env={**os.environ, "COLUMNS": "80"})


def shell(line: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["/bin/sh", "-c", line], capture_output=True, text=True, cwd=cwd, timeout=600,
                          env={**os.environ, "COLUMNS": "80"})


def test_scan_plan_verify_next_steps_run_as_printed(tmp_path):
    r = cli("scan", "--role", "storage", "--sample-seconds", "0.2", "--no-history", "-o", "before.json", cwd=tmp_path)
    assert r.returncode in (0, 2), r.stderr
    steps = next_lines(r.stdout)
    plan_line = next(v for k, v in steps.items() if "fix" in k)
    assert "plan" in shlex.split(plan_line) and "--site" not in plan_line, plan_line
    plan = shell(plan_line, tmp_path)
    assert plan.returncode == 0, (plan_line, plan.stderr)
    plan_dir = tmp_path / shlex.split(plan_line)[-1]
    assert (plan_dir / "PLAN.md").is_file() and json.loads((plan_dir / "plan.json").read_text())["changes"]
    steps = next_lines(plan.stdout)
    assert set(steps) == {"review what would change", "apply", "after applying, measure the outcome"}, plan.stdout
    review = shlex.split(steps["review what would change"])
    assert review[:2] == ["cd", str(plan_dir.name)] and review[-3:] == ["apply-tuning.yml", "--check", "--diff"]
    assert Path(review[3]).name == "ansible-playbook" and (review[3] == "ansible-playbook" or Path(review[3]).exists())
    verify = shell(steps["after applying, measure the outcome"], tmp_path)
    assert verify.returncode in (0, 2), (steps["after applying, measure the outcome"], verify.stderr)
    assert "still failing" in verify.stdout


def test_plan_of_a_local_scan_needs_no_site(tmp_path):
    r = cli("scan", "--sample-seconds", "0.2", "--no-history", "-o", "scan.json", cwd=tmp_path)
    assert r.returncode in (0, 2), r.stderr
    p = cli("plan", "--scan", "scan.json", "--out-dir", "fix", "--min-severity", "info", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert json.loads((tmp_path / "fix" / "plan.json").read_text())["site"] == "local"
    v = cli("verify", "--before", "scan.json", "--no-history", "--sample-seconds", "0.2", cwd=tmp_path)
    assert v.returncode in (0, 2), v.stderr
    # a scan of another site says which --site to give
    data = json.loads((tmp_path / "scan.json").read_text())
    data["site"] = "t2-example"
    (tmp_path / "other.json").write_text(json.dumps(data))
    p = cli("plan", "--scan", "other.json", "--out-dir", "fix2", cwd=tmp_path)
    assert p.returncode == 1 and "give --site t2-example" in p.stderr and p.stderr.count("\n") == 1, p.stderr


def test_collect_next_step_runs_as_printed(tmp_path):
    site = tmp_path / "here.yml"
    site.write_text("name: here\ntransport: local\nhosts:\n  - {name: box, address: localhost, roles: [worker]}\n")
    r = cli("collect", "--site", site, "--out-dir", "cap", "--sample-seconds", "0.2", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    line = next_lines(r.stdout)["analyse them here or on any machine with storadvise"]
    s = shell(line + " --no-history", tmp_path)
    assert s.returncode in (0, 2) and "storadvise scan of site here" in s.stdout, (line, s.stderr)
