"""The scan history: SQLite in WAL mode, written by real concurrent processes, consistent after kill -9,
queried by 'storadvise history', used by 'scan --fail-on-new' and by 'verify' without --before."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

from advisor.history.store import HistoryStore
from advisor.report.model import load_report

from tests.support.cli import storadvise
from tests.support.reports import make_report

REPO = Path(__file__).resolve().parents[2]


WRITER = """
import sys
sys.path.insert(0, {repo!r})
from tests.support.reports import make_report
from advisor.model.findings import Finding, FindingStatus, Severity
from advisor.history.store import HistoryStore
n, rows = int(sys.argv[2]), int(sys.argv[3])
big = [Finding(rule_id="R", hosts=[f"h{{i}}" for i in range(rows)], status=FindingStatus.fail, severity=Severity.low)]
with HistoryStore(sys.argv[1]) as store:
    for i in range(n):
        rep = make_report(site=sys.argv[4], findings=big if rows else None)
        store.record(rep, progress=lambda r: print("rows", r, flush=True))
        print("stored", flush=True)
"""


def _writer(db, n, rows=0, site="demo"):
    return subprocess.Popen([sys.executable, "-c", WRITER.format(repo=str(REPO)), str(db), str(n), str(rows), site],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)


def test_wal_and_whole_scans(tmp_path):
    db = tmp_path / "h.db"
    with HistoryStore(db) as store:
        a = store.record(make_report())
        b = store.record(make_report(started_at="2026-11-24T10:00:00+01:00"))
        assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert [s["id"] for s in store.scans("demo")] == [b, a]
        assert store.last("demo").started_at == "2026-11-24T10:00:00+01:00"
        assert store.last("demo", before_id=b).started_at == "2026-11-23T10:00:00+0100"
        assert store.report(a).findings == make_report().findings
        trend = store.path_trend("demo", "gpfs01", "wn01")
        assert [(t["scan"], t["measured_bps"], t["ratio"]) for t in trend] == [(a, 310e6, 0.31), (b, 310e6, 0.31)]
        assert [(t["host"], t["efficiency"]) for t in store.efficiency_trend("demo", "wn02")] == [("wn02", 0.69)] * 2
        assert store.check() == []


def test_concurrent_writers(tmp_path):
    db = tmp_path / "h.db"
    procs = [_writer(db, 8, site=f"site{i}") for i in range(4)]
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        assert out.count("stored") == 8
    with HistoryStore(db) as store:
        scans = store.scans(limit=100)
        assert len(scans) == 32 and len({s["id"] for s in scans}) == 32
        assert {s["site"] for s in scans} == {f"site{i}" for i in range(4)}
        assert store.check() == []


def test_many_first_openers_of_one_new_file(tmp_path):
    """Twelve connections open the same new file at once, 200 times over. Turning it into WAL needs its
    exclusive lock, and SQLite fails one of two shared-lock holders at once (no busy wait) rather than
    deadlock: before the set-up retried, about 3 in 100 rounds ended in 'database is locked'."""
    failures = []
    for round_ in range(200):
        db = tmp_path / f"h{round_}.db"
        start = threading.Barrier(12)

        def open_once():
            start.wait()
            try:
                HistoryStore(db).close()
            except Exception as exc:  # noqa: BLE001 - every failure is the finding
                failures.append(f"round {round_}: {exc}")

        threads = [threading.Thread(target=open_once) for _ in range(12)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert failures == []


def test_kill_9_mid_transaction_leaves_the_database_consistent(tmp_path):
    db = tmp_path / "h.db"
    with HistoryStore(db) as store:
        store.record(make_report())
    p = _writer(db, 1, rows=2_000_000)
    try:
        # the writer is inside its transaction: rows are being inserted; past 200,000 rows (~8 MB)
        # SQLite's page cache has spilled uncommitted frames into the WAL
        for line in p.stdout:
            assert line.startswith("rows"), (line, p.stderr.read() if p.poll() is not None else "")
            if int(line.split()[1]) >= 200_000:
                break
        os.kill(p.pid, signal.SIGKILL)
    finally:
        p.kill()
        p.wait()
    assert p.returncode == -signal.SIGKILL
    assert Path(str(db) + "-wal").stat().st_size > 0  # uncommitted frames were on disk when it died
    with HistoryStore(db) as store:
        assert store.check() == []
        assert [s["findings"] for s in store.scans()] == [9]  # the killed scan is absent, the first one whole
        assert store.db.execute("SELECT COUNT(*) FROM findings").fetchone()[0] == 9
        store.record(make_report())  # and the database takes new scans
    assert sqlite3.connect(db).execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_history_commands(tmp_path):
    db = tmp_path / "h.db"
    before = make_report()
    fixed = make_report(findings=[f for f in before.findings if f.rule_id != "NET-TCP-SACK"],
                        started_at="2026-11-24T10:00:00+01:00")
    with HistoryStore(db) as store:
        a, b = store.record(before), store.record(fixed)
        store.record(make_report(site="other"))
    r = storadvise("history", "list", "--history", db, "--site", "demo", "--json")
    assert r.returncode == 0, r.stderr
    assert [s["id"] for s in json.loads(r.stdout)] == [b, a]
    r = storadvise("history", "show", str(a), "--history", db, "--json", "--html", tmp_path / "a.html")
    assert json.loads(r.stdout)["findings"][0]["rule_id"] == "NET-TCP-SACK" and (tmp_path / "a.html").is_file()
    r = storadvise("history", "diff", str(a), str(b), "--history", db, "--json")
    d = json.loads(r.stdout)
    assert d["summary"]["fixed"] == 1 and [f["rule_id"] for f in d["findings"] if f["outcome"] == "fixed"] == ["NET-TCP-SACK"]
    r = storadvise("history", "trend", "--site", "demo", "--src", "gpfs01", "--dst", "wn01", "--history", db, "--json")
    assert [t["scan"] for t in json.loads(r.stdout)] == [a, b]
    r = storadvise("history", "diff", str(a), "3", "--history", db)
    assert r.returncode == 1 and "one site" in r.stderr and r.stderr.count("\n") == 1
    r = storadvise("history", "show", "99", "--history", db)
    assert r.returncode == 1 and "no scan 99" in r.stderr and "Traceback" not in r.stderr
    r = storadvise("history", "prune", "--keep", "1", "--history", db, "--json")
    assert json.loads(r.stdout) == {"deleted": 1}
    r = storadvise("history", "list", "--history", db, "--json")
    assert sorted(s["id"] for s in json.loads(r.stdout)) == [b, 3]
    r = storadvise("history", "list", "--history", tmp_path / "none.db")
    assert r.returncode == 1 and "no scan history" in r.stderr
    (tmp_path / "junk.db").write_text("not sqlite at all" * 100)
    r = storadvise("history", "list", "--history", tmp_path / "junk.db")
    assert r.returncode == 1 and "not a storadvise history database" in r.stderr and "Traceback" not in r.stderr


def test_history_prune_dry_run_lists_and_deletes_nothing(tmp_path):
    db = tmp_path / "h.db"
    with HistoryStore(db) as store:
        old = store.record(make_report(started_at="2026-01-01T10:00:00+00:00"))
        store.record(make_report(started_at="2026-11-24T10:00:00+00:00"))
        store.record(make_report(site="other", started_at="2025-06-01T10:00:00+00:00"))
    r = storadvise("history", "prune", "--older-than", "2026-06-01", "--site", "demo", "--dry-run", "--history", db, "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["dry_run"] is True and d["deleted"] == 0 and d["would_delete"] == 1
    assert [(s["id"], s["site"]) for s in d["scans"]] == [(old, "demo")]
    r = storadvise("history", "prune", "--keep", "0", "--dry-run", "--history", db)
    assert r.returncode == 0 and "would delete 3 scan(s)" in r.stdout and f"would delete scan {old} of site demo" in r.stdout
    with HistoryStore(db) as store:
        assert len(store.scans()) == 3  # nothing deleted
    r = storadvise("history", "prune", "--older-than", "2026-06-01", "--site", "demo", "--history", db, "--json")
    assert json.loads(r.stdout) == {"deleted": 1}
    r = storadvise("history", "prune", "--dry-run", "--history", db)
    assert r.returncode == 1 and "--keep N or --older-than" in r.stderr and "Traceback" not in r.stderr


def test_scan_stores_and_fail_on_new(tmp_path):
    site = tmp_path / "here.yml"
    site.write_text("name: here\ntransport: local\nhosts:\n  - {name: box, address: localhost, roles: [worker]}\n")
    cap = tmp_path / "cap"
    assert storadvise("collect", "--site", site, "--out", cap, "--sample-seconds", "0.2").returncode == 0
    db = tmp_path / "h.db"
    r = storadvise("scan", "--from", cap, "--json", "--fail-on", "critical", env={**os.environ, **{"STORADVISE_HISTORY": str(db)}})
    assert r.returncode in (0, 2), r.stderr
    first = json.loads(r.stdout)
    failing = [f for f in first["findings"] if f["status"] == "fail"]
    assert failing, "the local host has at least an info-level failure"
    # nothing new since the stored scan: exit 0 even at --fail-on info
    r = storadvise("scan", "--from", cap, "--fail-on-new", "--fail-on", "info", "--history", db)
    assert r.returncode == 0, r.stdout + r.stderr
    # a stored scan that lacked one failure: that failure is new, exit 2 naming it
    with HistoryStore(db) as store:
        prev = store.last("here")
        gone = failing[0]["rule_id"]
        store.record(prev.model_copy(update={"findings": [f for f in prev.findings if f.rule_id != gone]}))
        assert len(store.scans()) == 3
    r = storadvise("scan", "--from", cap, "--fail-on-new", "--fail-on", "info", "--history", db)
    assert r.returncode == 2 and f"new since the last stored scan: {gone}" in r.stdout
    r = storadvise("scan", "--from", cap, "--fail-on-new", "--no-history")
    assert r.returncode == 1 and "--fail-on-new" in r.stderr
    # verify without --before compares with the site's last stored scan
    r = storadvise("verify", "--site", site, "--from", cap, "--json", "--fail-on", "critical", "--history", db,
            "--html", tmp_path / "v.html")
    assert r.returncode == 0, r.stderr
    v = json.loads(r.stdout)
    assert v["before_source"] == f"{db} scan 4" and v["summary"]["new"] == 0 and v["summary"]["fixed"] == 0
    assert "Before → after" in (tmp_path / "v.html").read_text()
    with HistoryStore(db) as store:
        assert len(store.scans()) == 5  # verify stored its scan
    r = storadvise("verify", "--site", site, "--from", cap, "--history", tmp_path / "empty.db")
    assert r.returncode == 1 and "give --before FILE" in r.stderr


def test_stored_report_is_compressed_and_old_text_rows_still_read(tmp_path):
    """A 10,000-host report is stored compressed as it is streamed (issue 14), and read back whole."""

    rep = make_report(site="big")
    db = tmp_path / "h.db"
    with HistoryStore(db) as store:
        sid = store.record(rep)
        assert store.report(sid) == rep
    raw = sqlite3.connect(db).execute("SELECT report FROM scans WHERE id = ?", (sid,)).fetchone()[0]
    assert isinstance(raw, bytes) and len(raw) < len(rep.model_dump_json(indent=2))
    con = sqlite3.connect(db)  # a row written before compression: the JSON text
    con.execute("UPDATE scans SET report = ? WHERE id = ?", (rep.model_dump_json(), sid))
    con.commit()
    con.close()
    with HistoryStore(db) as store:
        assert store.report(sid) == rep


def test_a_scan_stored_from_the_json_file_it_was_written_to_reads_back_the_same(tmp_path):
    """store_scan(written=--output): the file's bytes are compressed instead of serialising the report
    again; a file that is gone by then falls back to the report itself."""
    from advisor.report.json_stream import write_report_json

    rep = make_report()
    out = tmp_path / "scan.json"
    with open(out, "w") as fh:
        write_report_json(rep, fh)
    with HistoryStore(tmp_path / "h.db") as store:
        a = store.record(rep, written=out)
        b = store.record(rep, written=tmp_path / "gone.json")
        assert store.report(a) == store.report(b) == rep
        assert store.check() == []
