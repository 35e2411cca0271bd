"""At COLUMNS=80 (a pipe, a log) the tables of plan, history diff and history list never split a value a
user copies: every setting name, number, rule id, host and timestamp they show is whole on one line
(issue 37, item 6). The scans are the shipped rules over parsed facts of four hosts, saved and stored as
scan does; plan, history diff and history list run as commands."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from advisor.history.store import store_scan
from tests.support.small_report import saved_small_report

REPO = Path(__file__).resolve().parents[2]


def cli(*args, columns: str = "80") -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "advisor.cli.root", *map(str, args)], capture_output=True, text=True,
                          cwd=REPO, timeout=300, env={**os.environ, "COLUMNS": columns})


def whole(value, text: str) -> bool:
    return any(str(value) in line for line in text.splitlines())


def test_plan_never_splits_a_value_at_80_columns(tmp_path):
    _report_, scan, site = saved_small_report(tmp_path)
    for columns in ("80", "200"):
        out = tmp_path / f"plan{columns}"
        r = cli("plan", "--site", site, "--scan", scan, "--out-dir", out, "--min-severity", "info", columns=columns)
        assert r.returncode in (0, 3), r.stderr
        changes = json.loads((out / "plan.json").read_text())["changes"]
        assert len(changes) >= 3
        for c in changes:
            for value in (c["setting"], c["runtime"], c["target"], *c["rules"]):
                assert whole(value, r.stdout), (columns, value, r.stdout)
        assert "…" not in r.stdout


def test_history_diff_and_list_never_split_rule_ids_or_timestamps(tmp_path):
    report, _scan, _site = saved_small_report(tmp_path)
    hist = tmp_path / "h.db"
    store_scan(report, hist, False, None, warn=print)
    later = report.model_copy(update={"started_at": "2026-01-02T00:00:00+00:00", "scan_id": "later"})
    store_scan(later, hist, False, None, warn=print)
    r = cli("history", "list", "--history", hist)
    assert r.returncode == 0, r.stderr
    for started in ("2026-01-01T00:00:00+00:00", "2026-01-02T00:00:00+00:00"):
        assert whole(started, r.stdout), r.stdout
    ids = json.loads(cli("history", "list", "--history", hist, "--json").stdout)
    a, b = sorted(s["id"] for s in ids)
    r = cli("history", "diff", a, b, "--history", hist, "--fail-on", "critical")
    assert r.returncode == 0, r.stderr
    failed = {f.rule_id for f in report.findings if f.status.value == "fail"}
    assert failed and all(whole(rid, r.stdout) for rid in failed), r.stdout
    assert "…" not in r.stdout
