"""The loop on the xrootd lab scenario (advisor/lab/scenarios/xrootd.yml: a real xrootd data server, Debian's
xrootd-server, with a small thread cap and open-files limit, and an XCache in front of it): scan finds the
XRootD server faults with the configuration line and /proc/PID/limits as evidence -> plan writes
xrootd_tuning variables (and leaves the open-files limit to the admin) -> real ansible-playbook
apply-tuning.yml edits the origin's configuration and restarts it -> verify says the thread cap is fixed;
a second apply changes nothing; rollback.yml restores the file. Real namespace hosts, sshd and xrootd;
needs root (CI is root)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.support.ansible import run_playbook
from tests.support.cli import storadvise
from tests.support.lab import REPO, lab_cli, lab_traces, no_traces, require_root
from tests.support.plan_files import plan_vars_text

pytestmark = pytest.mark.usefixtures("ansible_playbook")

SCENARIO = REPO / "advisor" / "lab" / "scenarios" / "xrootd.yml"
BIN = Path(sys.executable).parent


def _xrootd(scan: dict, host: str = "xrd01") -> dict[str, dict]:
    return {f["rule_id"]: f for f in scan["findings"] if f["rule_id"].startswith("XROOTD-") and host in f["hosts"]}


def test_xrootd_server_loop(lab_registry: Path, tmp_path: Path) -> None:
    require_root()
    name = f"t-xrd{os.getpid() % 10000}"
    try:
        up = json.loads(lab_cli(["up", "--scenario", str(SCENARIO), "--name", name, "--json"], timeout=600).stdout)
        cfg = Path(up["state_dir"]) / "hosts" / "xrd01" / "xrootd" / "origin.cfg"
        pidfile = cfg.parent / "adm" / "instance.pid"
        pid0 = pidfile.read_text().strip()
        cp = storadvise("scan", "--site", name, "--json", "--no-history")
        assert cp.returncode in (0, 2), cp.stderr[-2000:]
        scan_file = tmp_path / "scan.json"
        scan_file.write_text(cp.stdout)
        found = _xrootd(json.loads(cp.stdout))
        maxt = found["XROOTD-SCHED-MAXT"]
        assert maxt["status"] == "fail" and maxt["subject"] == "origin" and maxt["observed_value"] == 64
        assert "xrd.sched mint 4 maxt 64 avlt 8 idle 60" in json.dumps(maxt["evidence"])
        nofile = found["XROOTD-OPEN-FILES-LIMIT"]
        assert nofile["status"] == "fail" and nofile["subject"] == "xrootd:origin" and nofile["observed_value"] == 1024
        assert "Max open files" in json.dumps(nofile["evidence"]) and f"/proc/{pid0}/limits" in json.dumps(nofile["evidence"])
        assert found["XROOTD-EXPORT-SET"]["status"] == "pass" and found["XROOTD-OPEN-FILES-USE"]["status"] == "pass"

        plan = tmp_path / "plan"
        cp = storadvise("plan", "--site", name, "--scan", str(scan_file), "--out", str(plan), "--json")
        assert cp.returncode == 0, cp.stderr[-2000:]
        hv = plan_vars_text(plan, "xrd01")
        assert "xrootd_instances" in hv and "mint 4 maxt 2048 avlt 8 idle 60" in hv and "restart.sh" in hv
        md = (plan / "PLAN.md").read_text()
        assert "xrootd origin: xrd.sched maxt" in md and "XROOTD-OPEN-FILES-LIMIT on xrd01" in md

        run_playbook(plan, "apply-tuning.yml")
        assert "xrd.sched mint 4 maxt 2048 avlt 8 idle 60" in cfg.read_text()
        assert pidfile.read_text().strip() != pid0          # restarted: the instance runs the new file
        again = run_playbook(plan, "apply-tuning.yml")
        assert "changed=0" in again.stdout.split("PLAY RECAP", 1)[1], again.stdout[-2000:]

        cp = storadvise("verify", "--site", name, "--before", str(scan_file), "--json", "--no-history")
        outcome = {f["rule_id"]: f["outcome"] for f in json.loads(cp.stdout)["findings"] if f["host"] == "xrd01"}
        assert outcome["XROOTD-SCHED-MAXT"] == "fixed", outcome
        assert outcome["XROOTD-OPEN-FILES-LIMIT"] != "fixed"   # by hand: the plan did not touch it

        run_playbook(plan, "rollback.yml")
        assert "xrd.sched mint 4 maxt 64 avlt 8 idle 60" in cfg.read_text()
        cp = storadvise("scan", "--site", name, "--json", "--no-history")
        assert _xrootd(json.loads(cp.stdout))["XROOTD-SCHED-MAXT"]["status"] == "fail"
    finally:
        lab_cli(["down", "--name", name], check=False)
        assert no_traces(lab_traces(name))
