"""Caltech's failing disk in the lab (advisor/lab/scenarios/failing-disk.yml): emulated disks on two
storage servers (smartctl, dmesg, /sys/block and /proc/diskstats of advisor/lab/emulators/disks.py),
sdc of st01 failing. A real scan over SSH must name the disk and what the host serves from it, keep the
healthy disks and host passing, and plan nothing for it (no remediation can swap a disk). Real namespace
hosts and sshd; needs root (CI is root)."""

from __future__ import annotations

import json
import os

from tests.support.cli import storadvise
from tests.support.lab import REPO, lab_cli, lab_traces, no_traces, require_root

SCENARIO = REPO / "advisor" / "lab" / "scenarios" / "failing-disk.yml"


def test_scan_names_the_failing_disk_and_its_service(lab_registry, tmp_path) -> None:
    require_root()
    name = f"t-dsk{os.getpid() % 10000}"
    try:
        lab_cli(["up", "--scenario", str(SCENARIO), "--name", name, "--json"])
        cp = storadvise("scan", "--site", name, "--json", "--no-history")
        assert cp.returncode == 2, cp.stderr[-2000:]
        scan = json.loads(cp.stdout)
        by_rule: dict[str, list[dict]] = {}
        for f in scan["findings"]:
            by_rule.setdefault(f["rule_id"], []).append(f)
        failing = [f for f in by_rule["DISK-FAILING"] if f["status"] == "fail"]
        assert [(f["hosts"], f["subject"]) for f in failing] == [(["st01"], "sdc")], by_rule["DISK-FAILING"]
        f = failing[0]
        assert f["message"] == "sdc on st01 is failing (mounted at /srv/data/sdc; storage host)", f["message"]
        ev = "\n".join(f["evidence"])
        for want in ("SMART overall health FAILED", "reallocated sectors 1832", "pending sectors 24",
                     "kernel I/O errors", "I/O error, dev sdc, sector", "await"):
            assert want in ev, (want, ev)
        # the healthy disks of both servers pass; the worker has no emulated disks (only the machine's)
        passed = {(h, f["subject"]) for f in by_rule["DISK-FAILING"] if f["status"] == "pass" for h in f["hosts"]}
        assert passed == {("st01", d) for d in ("sda", "sdb", "sdd")} | {("st02", d) for d in ("sda", "sdb", "sdc", "sdd")}
        outlier = [f for f in by_rule["DISK-AWAIT-OUTLIER"] if f["status"] == "fail"]
        assert [(f["hosts"], f.get("subject")) for f in outlier] == [(["st01"], "sdc")], by_rule["DISK-AWAIT-OUTLIER"]
        io = {h: f["status"] for f in by_rule["DISK-IO-ERRORS"] for h in f["hosts"]}
        assert io["st01"] == "fail" and io["st02"] == "pass", io
        # the emulated queue tunables are read like the real ones (no unrelated block finding)
        assert not [f for f in scan["findings"] if f["rule_id"].startswith("BLOCK-") and f["status"] == "fail"]
        # nothing to plan: a disk is replaced by hand
        scan_file = tmp_path / "scan.json"
        scan_file.write_text(cp.stdout)
        cp = storadvise("plan", "--site", name, "--scan", str(scan_file), "--out", str(tmp_path / "plan"), "--json")
        assert cp.returncode in (0, 2), cp.stderr[-2000:]
        assert "DISK-FAILING" not in json.dumps(json.loads(cp.stdout).get("changes", []))
    finally:
        lab_cli(["down", "--name", name], check=False)
    assert no_traces(lab_traces(name)), lab_traces(name)
