"""The loop on the beegfs lab scenario (advisor/lab/scenarios/beegfs.yml: two workers whose
beegfs-client.conf, the lab's, turns the client cache off and allows 4 connections per server): scan
finds both with the file's lines as evidence -> plan writes beegfs_client variables and says the change
waits for the next mount -> real ansible-playbook apply-tuning.yml (no remount) -> verify says both are
fixed; a second apply changes nothing; rollback.yml puts the file back byte for byte; with
beegfs_client_remount_command given, the remount runs once per changed host and never when nothing
changed. Real namespace hosts and sshd; needs root (CI is root)."""

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

SCENARIO = REPO / "advisor" / "lab" / "scenarios" / "beegfs.yml"
BIN = Path(sys.executable).parent
RULES = {"BEEGFS-FILE-CACHE", "BEEGFS-CONN-MAX-INTERNODE"}


def test_beegfs_loop(lab_registry: Path, tmp_path: Path) -> None:
    require_root()
    name = f"t-bgf{os.getpid() % 10000}"
    try:
        lab_cli(["up", "--scenario", str(SCENARIO), "--name", name, "--json"])
        hosts = Path(os.environ["STORADVISE_LAB_DIR"]) / name / "hosts"
        conf = {h: hosts / h / "emu" / "beegfs" / "etc" / "beegfs-client.conf" for h in ("wn01", "wn02")}
        original = conf["wn01"].read_text()
        cp = storadvise("scan", "--site", name, "--json", "--no-history")
        assert cp.returncode in (0, 2), cp.stderr[-2000:]
        scan_file = tmp_path / "scan.json"
        scan_file.write_text(cp.stdout)
        failed = [f for f in json.loads(cp.stdout)["findings"] if f["rule_id"] in RULES and f["status"] == "fail"]
        assert {f["rule_id"]: (f["observed"], sorted(f["hosts"])) for f in failed} == {
            "BEEGFS-FILE-CACHE": ("none", ["wn01", "wn02"]), "BEEGFS-CONN-MAX-INTERNODE": ("4", ["wn01", "wn02"])}
        assert "wn01: tuneFileCacheType             = none" in json.dumps(failed)

        plan = tmp_path / "plan"
        cp = storadvise("plan", "--site", name, "--scan", str(scan_file), "--out", str(plan), "--json")
        assert cp.returncode == 0, cp.stderr[-2000:]
        hv = plan_vars_text(plan, "wn01")
        assert "'tuneFileCacheType': !unsafe 'buffered'" in hv and "'connMaxInternodeNum': !unsafe '12'" in hv
        assert "takes effect at the next BeeGFS client mount" in (plan / "PLAN.md").read_text()

        ap = run_playbook(plan, "apply-tuning.yml")
        assert "Set BeeGFS client settings in beegfs-client.conf" in ap.stdout
        assert "not remounted" in ap.stdout
        text = conf["wn01"].read_text()
        assert "tuneFileCacheType             = buffered" in text and "connMaxInternodeNum           = 12" in text
        assert [a for a, b in zip(original.splitlines(), text.splitlines()) if a != b] == [
            "connMaxInternodeNum           = 4", "tuneFileCacheType             = none"]
        again = run_playbook(plan, "apply-tuning.yml")
        assert "changed=0" in again.stdout.split("PLAY RECAP", 1)[1], again.stdout[-2000:]

        cp = storadvise("verify", "--site", name, "--before", str(scan_file), "--json", "--no-history")
        outcome = {(f["rule_id"], f["host"]): f["outcome"] for f in json.loads(cp.stdout)["findings"]
                   if f["rule_id"] in RULES}
        assert outcome == {(r, h): "fixed" for r in RULES for h in ("wn01", "wn02")}, outcome

        run_playbook(plan, "rollback.yml")
        assert conf["wn01"].read_text() == original and conf["wn02"].read_text() == original

        # opted-in remount: run on each host whose file changed, once; not again when nothing changes
        marks = tmp_path / "remounts"
        marks.mkdir()
        opt = ["-e", f"beegfs_client_remount_command='echo remount >> {marks}/{{{{ inventory_hostname }}}}'"]
        ap = run_playbook(plan, "apply-tuning.yml", *opt)
        assert "not remounted" not in ap.stdout
        run_playbook(plan, "apply-tuning.yml", *opt)
        assert sorted(p.name for p in marks.iterdir()) == ["wn01", "wn02"]
        assert (marks / "wn01").read_text() == "remount\n"
    finally:
        lab_cli(["down", "--name", name], check=False)
        assert no_traces(lab_traces(name))
