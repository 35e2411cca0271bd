"""Block queue remediation end to end on the lab's emulated disks (advisor/lab/emulators/disks.py):
disks that boot with nr_requests 64 and NCQ off (queue_depth 1) fail BLOCK-NR-REQUESTS and
BLOCK-QUEUE-DEPTH; the plan writes block_tuning variables; real ansible-playbook sets the emulated
/sys/block files and writes the udev rule in the host's own directory (never the machine's /etc);
verify says fixed; a second apply changes nothing; rollback.yml restores. Real namespace hosts and
sshd; needs root (CI is root)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
import yaml

from tests.support.ansible import run_playbook
from tests.support.cli import storadvise
from tests.support.lab import REPO, lab_cli, lab_traces, no_traces, require_root
from tests.support.plan_files import plan_vars_text

pytestmark = pytest.mark.usefixtures("ansible_playbook")

BIN = Path(sys.executable).parent
RULES = {"BLOCK-NR-REQUESTS", "BLOCK-QUEUE-DEPTH"}
REAL_UDEV = Path("/etc/udev/rules.d/60-storadvise-block.rules")

SCENARIO = yaml.safe_load((REPO / "bench" / "scenarios" / "block-queue.yml").read_text())


def _failing(scan: dict) -> set[tuple[str, str, str]]:
    return {(f["rule_id"], h, f.get("subject")) for f in scan["findings"]
            if f["rule_id"] in RULES and f["status"] == "fail" for h in f["hosts"]}


def test_nr_requests_and_queue_depth_fixed_on_emulated_disks(lab_registry: Path, tmp_path: Path) -> None:
    require_root()
    had_real_rule = REAL_UDEV.exists()
    name = f"t-blq{os.getpid() % 10000}"
    scenario = tmp_path / "blockq.yml"
    scenario.write_text(yaml.safe_dump(SCENARIO))
    try:
        up = json.loads(lab_cli(["up", "--scenario", str(scenario), "--name", name, "--json"]).stdout)
        state = Path(up.get("state_dir") or (lab_registry / name))
        cp = storadvise("scan", "--site", name, "--json", "--no-history")
        assert cp.returncode in (0, 2), cp.stderr[-2000:]
        before = tmp_path / "before.json"
        before.write_text(cp.stdout)
        want = {(r, "st01", d) for r in RULES for d in ("sda", "sdb", "sdc")}
        assert _failing(json.loads(cp.stdout)) == want

        plan = tmp_path / "plan"
        cp = storadvise("plan", "--site", name, "--scan", str(before), "--out", str(plan), "--json")
        assert cp.returncode == 0, cp.stderr[-2000:]
        hv = plan_vars_text(plan, "st01")
        assert "block_tuning_devices" in hv and "nr_requests" in hv and "queue_depth" in hv, hv
        run_playbook(plan, "apply-tuning.yml")
        sysfs = state / "hosts" / "st01" / "emu" / "disks" / "sys-block"
        assert (sysfs / "sdb" / "queue" / "nr_requests").read_text().strip() == "128"
        assert (sysfs / "sdb" / "device" / "queue_depth").read_text().strip() == "31"
        udev = (state / "hosts" / "st01" / "etc" / "udev" / "rules.d" / "60-storadvise-block.rules").read_text()
        assert 'KERNEL=="sdb"' in udev and "nr_requests" in udev and "queue_depth" in udev, udev
        assert REAL_UDEV.exists() == had_real_rule  # the machine's /etc is never written
        again = run_playbook(plan, "apply-tuning.yml")
        assert "changed=0" in again.stdout.split("PLAY RECAP", 1)[1], again.stdout[-2000:]

        cp = storadvise("verify", "--site", name, "--before", str(before), "--json", "--no-history")
        result = json.loads(cp.stdout)
        outcomes = {(f["rule_id"], f["host"], f["subject"]): f["outcome"] for f in result["findings"] if f["rule_id"] in RULES}
        assert outcomes == {k: "fixed" for k in want}, outcomes

        run_playbook(plan, "rollback.yml")
        cp = storadvise("scan", "--site", name, "--json", "--no-history")
        assert _failing(json.loads(cp.stdout)) == want
        assert (sysfs / "sdb" / "queue" / "nr_requests").read_text().strip() == "64"
    finally:
        lab_cli(["down", "--name", name], check=False)
    assert no_traces(lab_traces(name)), lab_traces(name)
