"""The whole loop on the ifca lab, as the README demo runs it: scan -> plan -> ansible-playbook ->
verify. Asserts every high fault of the scenario is fixed, a second apply changes nothing, and
storage->worker throughput at least doubles and clears the mesh rule's ratio. Needs root (CI is root)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest


pytestmark = [pytest.mark.root, pytest.mark.slow]

BIN = Path(sys.executable).parent


def run(*argv, cwd=None, check=True):
    cp = subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True, timeout=1800)
    if check and cp.returncode not in (0, 2, 3):
        raise AssertionError(cp.stdout[-3000:] + cp.stderr[-3000:])
    return cp


def test_ifca_loop(tmp_path):
    name = f"apply{os.getpid()}"
    run(BIN / "storadvise", "lab", "up", "--scenario", "ifca", "--name", name)
    try:
        scan = tmp_path / "scan.json"
        run(BIN / "storadvise", "scan", "--site", name, "-o", scan, "--json")
        run(BIN / "storadvise", "plan", "--site", name, "--scan", scan, "--out", tmp_path / "plan")
        ap = run(shutil.which("ansible-playbook", path=str(BIN)), "apply-tuning.yml", cwd=tmp_path / "plan", check=False)
        assert ap.returncode == 0, ap.stdout[-3000:]
        again = run(shutil.which("ansible-playbook", path=str(BIN)), "apply-tuning.yml", cwd=tmp_path / "plan")
        assert "changed=0" in again.stdout.split("PLAY RECAP", 1)[1]
        cp = run(BIN / "storadvise", "verify", "--site", name, "--before", scan, "--json", check=False)
        result = json.loads(cp.stdout)
        assert not [f for f in result["findings"] if f["outcome"] != "fixed" and f["severity"] in ("high", "critical")]
        # storage->worker paths: the tcp_sack fault removed, every path at least doubles and clears
        # the profile's mesh_min_ratio (0.8). (>= 0.9 on every path is not reliable on 2 shared cores:
        # 4 lossy paths measured 0.84-0.96 after the fix; see the closing note of issue 6.)
        worker_paths = [p for p in result["paths"] if p["src"].startswith("gpfs") and p["dst"].startswith("wn")]
        assert len(worker_paths) == 8
        for p in worker_paths:
            assert p["after_of_expected"] is not None and p["after_of_expected"] >= 0.8, p
            assert p["ratio_after_before"] is not None and p["ratio_after_before"] >= 2.0, p
    finally:
        run(BIN / "storadvise", "lab", "down", "--name", name, check=False)
