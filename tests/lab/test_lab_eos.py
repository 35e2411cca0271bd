"""The loop on the eos lab scenario (advisor/lab/scenarios/eos.yml: an MGM whose console, the lab's eos
emulator, lists a read-only and an unbooted file system, with the space balancer off and 40 balancer
transfers per FST): scan finds all four with the console's lines as evidence -> plan sends nothing to Ansible
and lists each under "Not automated" with its exact eos command -> those commands, run on the MGM over ssh,
fix them -> verify says so. Real namespace hosts and sshd; needs root (CI is root)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.support.cli import storadvise
from tests.support.lab import REPO, lab_cli, lab_traces, no_traces, require_root, ssh

SCENARIO = REPO / "advisor" / "lab" / "scenarios" / "eos.yml"
COMMANDS = {  # rule -> (subject, the exact command its remediation names)
    "EOS-FS-CONFIGSTATUS": ("2", "eos fs config 2 configstatus=rw"),
    "EOS-FS-ONLINE": ("5", "eos fs boot 5"),
    "EOS-SPACE-BALANCER": (None, "eos space config default space.balancer=on"),
    "EOS-SPACE-BALANCER-NTX": (None, "eos space config default space.balancer.node.ntx=10"),
}


def test_eos_manual_loop(lab_registry: Path, tmp_path: Path) -> None:
    require_root()
    name = f"t-eos{os.getpid() % 10000}"
    try:
        up = json.loads(lab_cli(["up", "--scenario", str(SCENARIO), "--name", name, "--json"]).stdout)
        lab_dir = Path(os.environ["STORADVISE_LAB_DIR"]) / name
        cp = storadvise("scan", "--site", name, "--json", "--no-history")
        assert cp.returncode == 2, cp.stderr[-2000:]  # EOS-FS-ONLINE is high
        scan_file = tmp_path / "scan.json"
        scan_file.write_text(cp.stdout)
        failed = [f for f in json.loads(cp.stdout)["findings"] if f["rule_id"].startswith("EOS-") and f["status"] == "fail"]
        assert {(f["rule_id"], f["subject"], tuple(f["hosts"])) for f in failed} == {
            (r, s, ("st01",)) for r, (s, _) in COMMANDS.items()}, failed
        by_rule = {f["rule_id"]: f for f in failed}
        assert by_rule["EOS-FS-CONFIGSTATUS"]["observed"] == "ro"
        assert any("opserror" in e and " 5 " in e for e in by_rule["EOS-FS-ONLINE"]["evidence"])
        assert by_rule["EOS-SPACE-BALANCER-NTX"]["evidence"] == ["st01: balancer.node.ntx                := 40"]

        plan = tmp_path / "plan"
        cp = storadvise("plan", "--site", name, "--scan", str(scan_file), "--out", str(plan), "--json")
        assert cp.returncode == 0, cp.stderr[-2000:]
        planned = json.loads(cp.stdout)
        assert not [c for c in planned["changes"] if any(r.startswith("EOS-") for r in c.get("rules", []))]
        manual = {m["rule"]: m["text"] for m in planned["manual"] if m["rule"].startswith("EOS-")}
        assert set(manual) == set(COMMANDS)
        mgm = up["hosts"]["st01"]["address"]
        for rule, (_, command) in COMMANDS.items():
            assert command in manual[rule], (rule, manual[rule])
            # the exact command, run by hand on the MGM
            ssh(lab_dir, mgm, "/opt/eos/bin/" + command)

        cp = storadvise("verify", "--site", name, "--before", str(scan_file), "--json", "--no-history")
        outcome = {(f["rule_id"], f.get("subject")): f["outcome"] for f in json.loads(cp.stdout)["findings"]
                   if f["rule_id"] in COMMANDS}
        assert outcome == {(r, s): "fixed" for r, (s, _) in COMMANDS.items()}, outcome
    finally:
        lab_cli(["down", "--name", name], check=False)
        assert no_traces(lab_traces(name))
