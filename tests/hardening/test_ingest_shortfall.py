"""`efficiency ingest` exits non-zero when nothing parsed or too large a share of rows failed;
the results are still printed in full first."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.support.cli import storadvise

HEADER = "JobID|State|AllocCPUS|Elapsed|TotalCPU|ExitCode|NodeList\n"


def GOOD(n: int) -> str:
    return "".join(f"{1000 + i}|COMPLETED|8|01:00:00|06:00:00|0:0|wn01\n" for i in range(n))

BAD = "garbage|row\n"


def _ingest(path: Path, *extra: str) -> subprocess.CompletedProcess:
    return storadvise("efficiency", "ingest", "--json", *extra, path, timeout=60)


def test_no_record_parsed_is_exit_1(tmp_path):
    f = tmp_path / "sacct.txt"
    f.write_text(HEADER + BAD * 5)
    cp = _ingest(f)
    assert cp.returncode == 1 and "Traceback" not in cp.stderr
    assert cp.stderr.strip() == f"storadvise: error: {f}: no job record parsed (5 unparseable row(s))"
    assert json.loads(cp.stdout)["summary"]["errors"] == 5  # printed before the verdict: nothing lost


def test_error_share_is_configurable(tmp_path):
    f = tmp_path / "sacct.txt"
    f.write_text(HEADER + GOOD(3) + BAD * 7)
    cp = _ingest(f)
    assert cp.returncode == 1 and "7 of 10 rows unparseable (70.0%), more than --max-error-share 0.5" in cp.stderr
    assert json.loads(cp.stdout)["summary"]["records"] == 3
    assert _ingest(f, "--max-error-share", "0.8").returncode == 0
    f.write_text(HEADER + GOOD(9) + BAD)
    assert _ingest(f).returncode == 0
    assert _ingest(f, "--max-error-share", "0.05").returncode == 1
