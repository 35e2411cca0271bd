"""The CI slice of bench/bench_fuzz_inputs.py: rule packs, site files with vars and defaults, and saved
scans read by report, verify and plan, fuzzed; no case hangs (10 s each, the run 120 s), none ends in
an internal error, and the run stays under a memory limit (a child process under RLIMIT_AS)."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
#: address space the whole run may use (it needs ~0.3 GB; an alias bomb expanded would need 8 GB)
MEMORY_LIMIT = 3 << 30
CASES = 30


def _limited() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def test_fuzz_inputs_slice():
    cp = subprocess.run([sys.executable, str(REPO / "bench" / "bench_fuzz_inputs.py"), "--cases", str(CASES),
                         "--seed", "36", "--case-seconds", "10"], capture_output=True, text=True, cwd=REPO,
                        timeout=120, preexec_fn=_limited)
    assert cp.returncode == 0, cp.stdout[-4000:] + cp.stderr[-4000:]
    lines = [ln for ln in cp.stdout.splitlines() if " cases (" in ln]
    assert len(lines) == 3 and all(f"{CASES} cases" in ln and " 0 failed" in ln for ln in lines), cp.stdout
    # each target both reads some of its cases whole and refuses others
    assert all(" 0 read" not in ln and f"{CASES} refused" not in ln for ln in lines), cp.stdout
