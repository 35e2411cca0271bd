"""The whole loop on the ifca lab, as the README demo runs it: scan -> plan -> ansible-playbook ->
verify. Asserts every high fault of the scenario is fixed, a second apply changes nothing, and
storage->worker and gpfs01->gpfs02 throughput recover. Needs root (CI is root)."""

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
        # every high fault the scenario injected (tcp_sack=0, the gpfs02 firewall) is fixed; the
        # throughput rules are judged on the paths below
        assert not [f for f in result["findings"] if f["outcome"] != "fixed" and f["severity"] in ("high", "critical")
                    and not f["rule_id"].startswith("MESH-")]
        # storage->worker paths with the tcp_sack fault removed: every path at least doubles and the
        # median is back near the link rate. (>= 0.9 on every single path is not reliable on 2 shared
        # cores: after the fix single paths measured 0.73-0.96 of 1 Gb/s; see issue 6's closing note.)
        worker_paths = [p for p in result["paths"] if p["src"].startswith("gpfs") and p["dst"].startswith("wn")]
        assert len(worker_paths) == 8
        for p in worker_paths:
            assert p["ratio_after_before"] is not None and p["ratio_after_before"] >= 2.0, p
        ratios = sorted(p["after_of_expected"] for p in worker_paths)
        assert (ratios[3] + ratios[4]) / 2 >= 0.8, ratios  # before the fix: 0.07-0.26
        # the firewall cut between the GPFS servers is gone
        cut = next(p for p in result["paths"] if (p["src"], p["dst"]) == ("gpfs01", "gpfs02"))
        assert cut["ratio_after_before"] >= 1.8 and cut["after_of_expected"] >= 0.85, cut
    finally:
        run(BIN / "storadvise", "lab", "down", "--name", name, check=False)
