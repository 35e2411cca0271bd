"""A lab SAN with write-cache mirroring off, scanned with the generic profile (which expects the write
cache on): the finding says what is at risk and `storadvise plan` writes no write-cache change.
Real namespace host, sshd and the SMcli emulator; needs root (CI is root)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.cli import storadvise
from tests.support.lab import lab_cli, lab_traces, no_traces, require_root

SCENARIO = """
name: trsan
description: a SAN whose write cache is off and not mirrored
hosts:
  - {name: stor01, roles: [storage, san-controller], groups: [srv]}
san:
  host: stor01
  array_name: DS4700_NOMIRROR
  controllers: [ctl-a, ctl-b]
  logical_drives: ["data[01:02]"]
  settings:
    read_cache: true
    prefetch: true
    write_cache: false
    write_cache_mirroring: false
    write_cache_without_batteries: false
    flush_after: 10
    modification_priority: low
    raid_level: 5
    capacity: "2,000.000 GB"
site:
  profiles: [generic]
"""


def test_mirroring_off_gets_no_write_cache_change(lab_registry: Path, tmp_path: Path) -> None:
    require_root()
    scen = tmp_path / "trsan.yml"
    scen.write_text(SCENARIO)
    name = "t-trsan"
    try:
        lab_cli(["up", "--scenario", str(scen), "--name", name, "--json"])
        scan_file = tmp_path / "scan.json"
        cp = storadvise("scan", "--site", name, "--json")
        assert cp.returncode in (0, 1, 2), cp.stderr[-2000:]
        scan_file.write_text(cp.stdout)
        scan = json.loads(cp.stdout)
        wc = [f for f in scan["findings"] if f["rule_id"] == "SAN-WRITE-CACHE"]
        assert sorted(f["subject"] for f in wc) == ["data01", "data02"], wc
        for f in wc:
            assert f["status"] == "fail" and f["observed"] == "false" and f["observed_type"] == "boolean"
            assert "acknowledged writes" in f["message"] and "controller fails" in f["message"], f
            assert f["changes"] == [], f
        out = tmp_path / "plan"
        cp = storadvise("plan", "--site", name, "--scan", str(scan_file), "--out", str(out), "--json")
        assert cp.returncode == 0, cp.stderr[-2000:]
        # the variables the plan hands to the roles (the roles' own defaults document every keyword)
        written = "\n".join(p.read_text() for d in ("host_vars", "group_vars") for p in (out / d).rglob("*") if p.is_file())
        assert "writeCacheEnabled" not in written
        assert "readCacheEnabled" not in written  # nothing else was wrong with the drives either
    finally:
        lab_cli(["down", "--name", name], check=False)
        assert no_traces(lab_traces(name))
