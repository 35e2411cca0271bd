"""The loop on the lustre lab scenario (advisor/lab/scenarios/lustre.yml: two workers whose Lustre client,
emulated by the lab's lctl emulator, runs at Lustre's defaults): scan finds the lustre rule pack's
faults with the lctl lines as evidence -> plan writes lustre_tuning variables -> real ansible-playbook
apply-tuning.yml -> verify says they are fixed; a second apply changes nothing; rollback.yml restores
the values. The plan persists the values on the MGS (mgs01: lctl set_param -P): a rebooted client
mounts with them; after rollback.yml the MGS's params log no longer holds them, and a reboot gives back
the before state. Real namespace hosts and sshd; needs root (CI is root)."""

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

SCENARIO = REPO / "advisor" / "lab" / "scenarios" / "lustre.yml"
BIN = Path(sys.executable).parent
LUSTRE_FAILS = {"LUSTRE-OSC-RPCS-IN-FLIGHT", "LUSTRE-OSC-MAX-DIRTY", "LUSTRE-MDC-RPCS-IN-FLIGHT", "LUSTRE-READ-AHEAD"}


def test_lustre_loop(lab_registry: Path, tmp_path: Path) -> None:
    require_root()
    name = f"t-lus{os.getpid() % 10000}"
    try:
        lab_cli(["up", "--scenario", str(SCENARIO), "--name", name, "--json"])
        cp = storadvise("scan", "--site", name, "--json", "--no-history")
        assert cp.returncode in (0, 2), cp.stderr[-2000:]
        scan_file = tmp_path / "scan.json"
        scan_file.write_text(cp.stdout)
        scan = json.loads(cp.stdout)
        failed = [f for f in scan["findings"] if f["rule_id"].startswith("LUSTRE-") and f["status"] == "fail"]
        assert {f["rule_id"] for f in failed} == LUSTRE_FAILS, failed
        rpcs = [f for f in failed if f["rule_id"] == "LUSTRE-OSC-RPCS-IN-FLIGHT"]
        # one OSC per OST per client mount (each mount has its own instance in the device name)
        assert sorted(h for f in rpcs for h in f["hosts"]) == ["wn01"] * 4 + ["wn02"] * 4
        assert all(f["observed"] == "8" and f["observed_value"] == 8 and f["subject"].startswith("atlas-OST000") for f in rpcs)
        assert any(".max_rpcs_in_flight=8" in json.dumps(f.get("evidence")) for f in rpcs)
        ok = [f for f in scan["findings"] if f["rule_id"] == "LUSTRE-OSC-CHECKSUMS"]
        assert ok and all(f["status"] == "pass" for f in ok)

        plan = tmp_path / "plan"
        cp = storadvise("plan", "--site", name, "--scan", str(scan_file), "--out", str(plan), "--json")
        assert cp.returncode == 0, cp.stderr[-2000:]
        hv = plan_vars_text(plan, "wn02")
        assert "lustre_params" in hv and ".max_read_ahead_mb': !unsafe '256'" in hv
        # the persisted home of a client's value is the MGS: one pattern per OST for every client
        mv = plan_vars_text(plan, "mgs01")
        assert "lustre_permanent" in mv and "osc.atlas-OST0000-osc-*.max_rpcs_in_flight': !unsafe '16'" in mv, mv
        assert "mgs01: lctl set_param -P" in (plan / "PLAN.md").read_text()

        ap = run_playbook(plan, "apply-tuning.yml")
        assert "Set Lustre client parameters with lctl set_param" in ap.stdout
        again = run_playbook(plan, "apply-tuning.yml")
        assert "changed=0" in again.stdout.split("PLAY RECAP", 1)[1], again.stdout[-2000:]

        cp = storadvise("verify", "--site", name, "--before", str(scan_file), "--json", "--no-history")
        result = json.loads(cp.stdout)
        lus = [f for f in result["findings"] if f["rule_id"] in LUSTRE_FAILS]
        assert lus and all(f["outcome"] == "fixed" for f in lus), lus

        run_playbook(plan, "rollback.yml")
        cp = storadvise("scan", "--site", name, "--json", "--no-history")
        back = json.loads(cp.stdout)
        assert {f["rule_id"] for f in back["findings"]
                if f["rule_id"].startswith("LUSTRE-") and f["status"] == "fail"} == LUSTRE_FAILS

        # the values persist on the MGS: a rebooted client mounts with them, and the scan reads them
        # as the persisted values (no finding returns)
        run_playbook(plan, "apply-tuning.yml")
        lab_cli(["reboot", "wn01", "--name", name])
        cp = storadvise("scan", "--site", name, "--json", "--no-history")
        after = json.loads(cp.stdout)
        assert not [f for f in after["findings"] if f["rule_id"].startswith("LUSTRE-") and f["status"] == "fail"]
        mgs = next(h for h in after["hosts"] if h["name"] == "mgs01")
        leaves = {leaf["name"]: leaf["value"] for leaf in mgs["facts"]["lustre.params"]}
        assert leaves["/mgs"] == "true" and "osc.atlas-OST0000-osc-*.max_rpcs_in_flight" in str(leaves["/permanent"])
        # rollback removes the MGS's records too: after a reboot the clients are back at the before values
        run_playbook(plan, "rollback.yml")
        lab_cli(["reboot", "wn01", "--name", name])
        cp = storadvise("scan", "--site", name, "--json", "--no-history")
        back = json.loads(cp.stdout)
        by_rule = {}
        for f in back["findings"]:
            if f["rule_id"].startswith("LUSTRE-") and f["status"] == "fail":
                by_rule.setdefault(f["rule_id"], set()).update(f["hosts"])
        assert set(by_rule) == LUSTRE_FAILS and by_rule["LUSTRE-OSC-RPCS-IN-FLIGHT"] == {"wn01", "wn02"}, by_rule
        mgs = next(h for h in back["hosts"] if h["name"] == "mgs01")
        assert {leaf["name"]: leaf["value"] for leaf in mgs["facts"]["lustre.params"]}["/permanent"] == "[]"
    finally:
        lab_cli(["down", "--name", name], check=False)
        assert no_traces(lab_traces(name))
