"""Repeatability of the fault scan (issue 25, case 10): the 16-host lab of tests/lab/test_lab_faults.py (tests/support/lab_faults.py)
(a host down, sshd killed mid-scan, a changed host key, 100% loss, a probe that never returns,
a host frozen mid-scan, ...) brought up, faulted, scanned and brought down ``--runs`` times.

Every run must name every fault once per host, and the host with the changed key must be
refused every time ("host key CHANGED"), never reported as scanned. Printed per run: seconds,
exit status, and what each faulty host was reported as; at the end the runs that failed. Exit
status 1 when any run did. Needs root (network namespaces); one lab at a time.

  sudo .venv/bin/python bench/bench_fault_repeat.py --runs 20
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: host -> the words its one error finding must hold
CAUSES = {"h01": "connection refused", "h03": "host key changed", "h04": "timed out"}
#: hosts that are reachable at first and must each carry at least one error finding
PARTIAL = ("h02", "h05", "h06")


def _errors_by_host(report: dict) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for f in report.get("findings") or []:
        if f.get("status") == "error":
            for h in f.get("hosts") or []:
                out.setdefault(h, []).append(f.get("message") or "")
    return out


def check_run(result: dict) -> list[str]:
    """What is wrong with one run's result (empty: every fault named, the changed key refused)."""
    report = result.get("report")
    if report is None:
        return [f"no report (exit {result['cp'].returncode}): {result['cp'].stderr[-300:]}"]
    problems = []
    if result["cp"].returncode != 3:
        problems.append(f"exit {result['cp'].returncode}, not 3")
    errors = _errors_by_host(report)
    for host, words in CAUSES.items():
        msgs = errors.get(host, [])
        if len(msgs) != 1 or words not in msgs[0].lower():
            problems.append(f"{host}: {msgs or 'no error: reported as scanned'}")
    for host in PARTIAL:
        if not errors.get(host):
            problems.append(f"{host}: no error")
    h03 = next((h for h in report.get("hosts") or [] if h.get("name") == "h03"), {})
    if h03.get("reachable") or any(v == "ok" for v in (h03.get("probes") or {}).values()):
        problems.append("h03: its changed key was accepted (probes ran)")
    return problems


def one_run(i: int, work: Path) -> tuple[float, list[str]]:
    from tests.support import lab_faults as faults
    from tests.support.lab import lab_cli
    from advisor.lab.records import LabRecord

    tmp = work / f"run{i:02d}"
    tmp.mkdir()
    scen = tmp / "faults.yml"
    scen.write_text(faults.SCENARIO)
    lab = {"tmp": tmp, "stopped": []}
    t0 = time.monotonic()
    try:
        lab_cli(["up", "--scenario", str(scen), "--name", faults.NAME, "--json"], timeout=600)
        lab["rec"] = LabRecord.load(faults.NAME)
        result = faults.inject_and_scan(lab)
        return time.monotonic() - t0, check_run(result)
    finally:
        faults.signal_pids(lab["stopped"], signal.SIGCONT)
        lab_cli(["down", "--name", faults.NAME], check=False)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("bench_fault_repeat: needs root (network namespaces)", file=sys.stderr)
        return 1
    registry = Path("/run/storadvise-bench-labs") / str(os.getpid())
    os.environ["STORADVISE_LAB_DIR"] = str(registry)
    failed = 0
    try:
        with tempfile.TemporaryDirectory(prefix="sa-fault-repeat-") as work:
            for i in range(1, args.runs + 1):
                took, problems = one_run(i, Path(work))
                failed += bool(problems)
                print(f"run {i:2d}: {took:6.1f} s  " + ("ok: every fault named, h03 refused" if not problems
                                                         else "FAILED: " + "; ".join(problems)), flush=True)
    finally:
        subprocess.run([sys.executable, "-c", "from advisor.lab.cli import app; app()", "down", "--all"],
                       cwd=str(ROOT), capture_output=True, check=False)
        subprocess.run(["rm", "-rf", str(registry)], check=False)
    print(f"{args.runs - failed} of {args.runs} runs clean")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
