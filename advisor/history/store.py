"""The scan history: SQLite in WAL mode, one transaction per scan.

Where: ``--history PATH``, else ``$STORADVISE_HISTORY``, else ``$XDG_DATA_HOME/storadvise/history.db``
(``~/.local/share/storadvise/history.db`` when XDG_DATA_HOME is unset).

A scan is written in one ``BEGIN IMMEDIATE`` transaction: the whole report (zlib-compressed JSON), one row per
finding x host, one per mesh path and one per efficiency host. Concurrent writers wait for each
other (busy timeout); a writer killed mid-transaction leaves nothing behind (SQLite rolls the
uncommitted WAL frames back), so a reader sees whole scans or none.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
import zlib
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from advisor.util.errors import StoradviseError
from advisor.report.model import ScanReport, report_from_data
from advisor.report.saved_json import load_json

ENV = "STORADVISE_HISTORY"
SCHEMA_VERSION = 1
BUSY_TIMEOUT_S = 60.0

_SCHEMA = """
CREATE TABLE IF NOT EXISTS scans (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    site TEXT NOT NULL, started_at TEXT NOT NULL, finished_at TEXT NOT NULL, duration_s REAL NOT NULL,
    profiles TEXT NOT NULL, tool_version TEXT NOT NULL, hosts INTEGER NOT NULL, unreachable INTEGER NOT NULL,
    failed INTEGER NOT NULL, worst_failed_severity TEXT, incomplete INTEGER NOT NULL,
    findings INTEGER NOT NULL, paths INTEGER NOT NULL, report TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS scans_site ON scans(site, id);
CREATE TABLE IF NOT EXISTS findings (
    scan_id INTEGER NOT NULL REFERENCES scans(id) ON DELETE CASCADE, rule_id TEXT NOT NULL, host TEXT NOT NULL,
    subject TEXT NOT NULL, status TEXT NOT NULL, severity TEXT NOT NULL, observed TEXT);
CREATE INDEX IF NOT EXISTS findings_scan ON findings(scan_id);
CREATE TABLE IF NOT EXISTS paths (
    scan_id INTEGER NOT NULL REFERENCES scans(id) ON DELETE CASCADE, src TEXT NOT NULL, dst TEXT NOT NULL,
    status TEXT, measured_bps REAL, expected_bps REAL, ratio REAL);
CREATE INDEX IF NOT EXISTS paths_scan ON paths(scan_id);
CREATE TABLE IF NOT EXISTS efficiency (
    scan_id INTEGER NOT NULL REFERENCES scans(id) ON DELETE CASCADE, host TEXT NOT NULL, efficiency REAL);
CREATE INDEX IF NOT EXISTS efficiency_scan ON efficiency(scan_id);
"""


def history_path(explicit: str | Path | None = None) -> Path:
    """``--history PATH``, else ``$STORADVISE_HISTORY``, else ``$XDG_DATA_HOME/storadvise/history.db``."""
    if explicit:
        return Path(explicit).expanduser()
    if os.environ.get(ENV):
        return Path(os.environ[ENV]).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "storadvise" / "history.db"



def compressed_report(report: ScanReport, written: Path | None = None) -> bytearray:
    """The report's JSON, zlib-compressed as it is written a host at a time
    (advisor.report.json_stream): a 10,000-host report is never one string in memory, and the
    hosts' repeated facts compress to little. Level 1: a 10,000-host report (449 MiB of JSON)
    compresses in 1.9 s to 49 MiB, level 6 took 8.1 s for 39 MiB (docs/performance.md).
    ``written``: a file the same report was just written to by that writer (the command's
    ``--output``): its bytes are compressed instead of serialising the report again (10,000
    hosts: 1.4 s less)."""
    from advisor.report.json_stream import write_report_json

    packer = zlib.compressobj(1)
    # one growing buffer, handed to SQLite as it is: joining chunks held the compressed report
    # twice (20,000 hosts: ~100 MiB more at the peak)
    out = bytearray()
    # a regular file with the report in it, checked before it is opened: a FIFO or /dev/stdout
    # given as --output would block the read
    if written is not None and Path(written).is_file() and Path(written).stat().st_size > 0:
        try:
            with open(written, "rb") as fh:
                for chunk in iter(lambda: fh.read(1 << 20), b""):
                    out.extend(packer.compress(chunk))
            out.extend(packer.flush())
            return out
        except OSError:  # gone or unreadable meanwhile: serialise the report itself
            packer, out = zlib.compressobj(1), bytearray()

    class _Sink:
        def write(self, text: str) -> None:
            out.extend(packer.compress(text.encode("utf-8")))

    write_report_json(report, _Sink())  # type: ignore[arg-type]
    out.extend(packer.flush())
    return out


def _retry_while_busy(step: Callable[[], None], budget_s: float = BUSY_TIMEOUT_S) -> None:
    """Run ``step`` again while SQLite answers "locked" or "busy" without waiting, up to ``budget_s``.
    Turning a new file into WAL needs its exclusive lock: two processes that both hold the shared
    lock of the same fresh file cannot both upgrade, and SQLite fails one of them at once instead of
    calling the busy handler (it would deadlock). Whoever gets through first finishes the set-up;
    the other finds the file in WAL mode when it tries again."""
    deadline = time.monotonic() + budget_s
    pause = 0.005
    while True:
        try:
            step()
            return
        except sqlite3.OperationalError as exc:
            text = str(exc)
            if ("locked" not in text and "busy" not in text) or time.monotonic() >= deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.25)


class HistoryStore:
    def __init__(self, path: str | Path, create: bool = True):
        self.path = Path(path)
        if not create and not self.path.exists():
            raise StoradviseError(f"{self.path}: no scan history here (scans are stored by 'storadvise scan')")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # created for the owner only (its scans hold host names, addresses and values); SQLite
            # gives the -wal and -shm files the database's mode
            os.close(os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600))
            self.db = sqlite3.connect(str(self.path), timeout=BUSY_TIMEOUT_S, isolation_level=None)
            _retry_while_busy(self._set_up)
        except sqlite3.DatabaseError as exc:
            raise StoradviseError(f"{self.path}: not a storadvise history database: {exc}") from None
        except OSError as exc:
            raise StoradviseError(f"{self.path}: cannot open the scan history: {exc.strerror or exc}") from None

    def _set_up(self) -> None:
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute("PRAGMA foreign_keys=ON")
        version = self.db.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise StoradviseError(f"{self.path}: history schema {version} is newer than this storadvise ({SCHEMA_VERSION})")
        if version < SCHEMA_VERSION:
            with self._write():
                for statement in filter(str.strip, _SCHEMA.split(";")):
                    self.db.execute(statement)
                self.db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> "HistoryStore":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            self.close()
        except sqlite3.Error:
            pass
        if isinstance(exc, sqlite3.DatabaseError):  # a damaged file: one line, never a traceback
            raise StoradviseError(f"{self.path}: the scan history is unusable: {exc} "
                                  f"(damaged? 'sqlite3 {self.path} .recover' may save its scans)") from None

    @contextmanager
    def _write(self) -> Iterator[None]:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    # ------------------------------------------------------------------ write

    def record(self, report: ScanReport, progress: Callable[[int], None] | None = None,
               written: Path | None = None) -> int:
        """Store one scan (one transaction); returns its id. ``progress(rows)`` is called every 1000 rows;
        ``written``: a JSON file of this very report (see ``compressed_report``)."""
        s = report.summary
        paths = (report.mesh or {}).get("paths") or []
        rows = 0
        # the report is compressed in a thread while the rows go in: zlib and SQLite both work
        # without holding the interpreter (a 10,000-host scan: 1.7 s of compression, 1 s of rows)
        with ThreadPoolExecutor(max_workers=1) as pool, self._guard():
            packing = pool.submit(compressed_report, report, written)
            with self._write():
                cur = self.db.execute(
                    "INSERT INTO scans (site, started_at, finished_at, duration_s, profiles, tool_version, hosts,"
                    " unreachable, failed, worst_failed_severity, incomplete, findings, paths, report)"
                    " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,zeroblob(0))",
                    (report.site, report.started_at, report.finished_at, report.duration_s, json.dumps(report.profiles),
                     report.tool_version, s.hosts, s.unreachable, sum(s.failed_by_severity.values()),
                     s.worst_failed_severity, int(s.incomplete), 0, len(paths)))
                scan_id = cur.lastrowid
                # one statement for all rows, each finding's observed value encoded once for its hosts
                # (a 10,000-host scan: 400,000 rows from 30,000 findings)
                def finding_rows() -> Iterator[tuple]:
                    nonlocal rows
                    for f in report.findings:
                        head = (scan_id, f.rule_id)
                        tail = (f.subject or "", f.status.value, f.severity.value, json.dumps(f.observed, default=str))
                        for host in f.hosts or [""]:
                            yield head + (host,) + tail
                            rows += 1
                            if progress and rows % 1000 == 0:
                                progress(rows)

                self.db.executemany("INSERT INTO findings VALUES (?,?,?,?,?,?,?)", finding_rows())
                for p in paths:
                    self.db.execute("INSERT INTO paths VALUES (?,?,?,?,?,?,?)",
                                    (scan_id, str(p.get("src")), str(p.get("dst")), p.get("status"),
                                     p.get("measured_bps"), p.get("expected_bps"), _ratio(p)))
                for host, rec in ((report.efficiency or {}).get("hosts") or {}).items():
                    if isinstance(rec, dict):
                        eff = rec.get("efficiency")
                        self.db.execute("INSERT INTO efficiency VALUES (?,?,?)",
                                        (scan_id, host, eff if isinstance(eff, (int, float)) else None))
                # the report goes in through incremental blob I/O: a bound parameter is copied by
                # SQLite into a record of the whole blob first (a 10,000-host report: 2 x 49 MiB)
                packed = packing.result()
                self.db.execute("UPDATE scans SET report=zeroblob(?) WHERE id=?", (len(packed), scan_id))
                with self.db.blobopen("scans", "report", scan_id) as blob:
                    view = memoryview(packed)
                    for at in range(0, len(view), 1 << 20):
                        blob.write(view[at:at + (1 << 20)])
                    view.release()
                del packed
                # the row count last: a scan whose count matches its rows was written whole
                self.db.execute("UPDATE scans SET findings=? WHERE id=?", (rows, scan_id))
        return int(scan_id)

    @contextmanager
    def _guard(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as exc:
            raise StoradviseError(f"{self.path}: cannot store the scan: {exc}") from None

    def prune(self, *, keep: int | None = None, older_than: str | None = None, site: str | None = None) -> int:
        """Delete scans beyond the ``keep`` newest per site and/or started before ``older_than``; returns how many."""
        where, args = self._prune_filter(keep, older_than, site)
        with self._write():
            n = self.db.execute("DELETE FROM scans WHERE " + where, args).rowcount
        self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return n

    def prunable(self, *, keep: int | None = None, older_than: str | None = None,
                 site: str | None = None) -> list[dict[str, Any]]:
        """The scans :meth:`prune` with the same arguments would delete (id, site, started_at), oldest first."""
        where, args = self._prune_filter(keep, older_than, site)
        cur = self.db.execute("SELECT id, site, started_at FROM scans WHERE " + where + " ORDER BY id", args)
        return [{"id": i, "site": s, "started_at": t} for i, s, t in cur.fetchall()]

    @staticmethod
    def _prune_filter(keep: int | None, older_than: str | None, site: str | None) -> tuple[str, list[Any]]:
        where: list[str] = []
        args: list[Any] = []
        if site:
            where.append("site = ?")
            args.append(site)
        if older_than:
            where.append("julianday(started_at) < julianday(?)")
            args.append(older_than)
        if keep is not None:
            where.append("id NOT IN (SELECT id FROM (SELECT id, ROW_NUMBER() OVER (PARTITION BY site ORDER BY id DESC)"
                         " AS n FROM scans) WHERE n <= ?)")
            args.append(keep)
        if not where:
            raise StoradviseError("history prune needs --keep N or --older-than DATE")
        return " AND ".join(where), args

    # ------------------------------------------------------------------ read

    def scans(self, site: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
        q = ("SELECT id, site, started_at, duration_s, hosts, unreachable, failed, worst_failed_severity, incomplete,"
             " findings, paths FROM scans" + (" WHERE site = ?" if site else "") + " ORDER BY id DESC LIMIT ?")
        cur = self.db.execute(q, ((site,) if site else ()) + (limit,))
        cols = [d[0] for d in cur.description]
        return [{**dict(zip(cols, r)), "incomplete": bool(r[cols.index("incomplete")])} for r in cur.fetchall()]

    def report(self, scan_id: int) -> ScanReport:
        row = self.db.execute("SELECT report FROM scans WHERE id = ?", (scan_id,)).fetchone()
        if row is None:
            raise StoradviseError(f"{self.path}: no scan {scan_id} in the history ('storadvise history list')")
        data = row[0]
        try:  # zlib-compressed JSON (bytes); scans stored before that: the JSON text
            text = zlib.decompress(data) if isinstance(data, bytes) else data
        except zlib.error as exc:
            raise StoradviseError(f"{self.path}: scan {scan_id}: stored report unreadable: {exc}") from None
        try:
            text = text.decode() if isinstance(text, bytes) else text
        except UnicodeDecodeError as exc:
            raise StoradviseError(f"{self.path}: scan {scan_id}: stored report is not JSON: {exc}") from None
        where = f"{self.path}: scan {scan_id}"
        return report_from_data(where, load_json(text, where))

    def last(self, site: str, before_id: int | None = None) -> ScanReport | None:
        """The newest stored scan of ``site`` (older than ``before_id`` when given)."""
        q = "SELECT id FROM scans WHERE site = ?" + (" AND id < ?" if before_id else "") + " ORDER BY id DESC LIMIT 1"
        row = self.db.execute(q, (site, before_id) if before_id else (site,)).fetchone()
        return None if row is None else self.report(row[0])

    def path_trend(self, site: str, src: str | None = None, dst: str | None = None) -> list[dict[str, Any]]:
        q = ("SELECT s.id, s.started_at, p.src, p.dst, p.status, p.measured_bps, p.expected_bps, p.ratio FROM paths p"
             " JOIN scans s ON s.id = p.scan_id WHERE s.site = ?")
        args: list[Any] = [site]
        for col, v in (("p.src", src), ("p.dst", dst)):
            if v:
                q += f" AND {col} = ?"
                args.append(v)
        cur = self.db.execute(q + " ORDER BY p.src, p.dst, s.id", args)
        cols = ["scan", "started_at", "src", "dst", "status", "measured_bps", "expected_bps", "ratio"]
        return [dict(zip(cols, r)) for r in cur.fetchall()]

    def efficiency_trend(self, site: str, host: str | None = None) -> list[dict[str, Any]]:
        q = ("SELECT s.id, s.started_at, e.host, e.efficiency FROM efficiency e JOIN scans s ON s.id = e.scan_id"
             " WHERE s.site = ?" + (" AND e.host = ?" if host else "") + " ORDER BY e.host, s.id")
        cur = self.db.execute(q, (site, host) if host else (site,))
        return [dict(zip(["scan", "started_at", "host", "efficiency"], r)) for r in cur.fetchall()]

    def check(self) -> list[str]:
        """Problems found: SQLite's integrity check, and scans whose rows do not match their counts."""
        problems = [r[0] for r in self.db.execute("PRAGMA integrity_check").fetchall() if r[0] != "ok"]
        for sid, want, got, pwant, pgot in self.db.execute(
                "SELECT s.id, s.findings, (SELECT COUNT(*) FROM findings f WHERE f.scan_id = s.id), s.paths,"
                " (SELECT COUNT(*) FROM paths p WHERE p.scan_id = s.id) FROM scans s").fetchall():
            if want != got or pwant != pgot:
                problems.append(f"scan {sid}: {got}/{want} finding rows, {pgot}/{pwant} path rows")
        return problems


def _ratio(p: dict[str, Any]) -> float | None:
    from advisor.mesh.results import path_ratio

    return path_ratio(p)


def store_scan(report: ScanReport, history: str | Path | None, no_history: bool, fail_on_new: str | None,
               warn: Callable[[str], None], written: Path | None = None) -> list[dict[str, Any]] | None:
    """What a command that scans does with its report: store it (unless ``no_history``); with
    ``fail_on_new`` (a severity) return the failures at or above it absent from the site's last stored
    scan. A history that cannot be written is a warning, unless the exit code depends on it.
    ``written``: the JSON file the command just wrote this report to, if any."""
    if no_history:
        return None
    from advisor.report.scan_compare import new_failures

    try:
        with HistoryStore(history_path(history)) as store:
            new = new_failures(store.last(report.site), report, fail_on_new) if fail_on_new else None
            store.record(report, written=written)
    except StoradviseError as exc:
        if fail_on_new:
            raise
        warn(f"storadvise: warning: scan not stored in the history: {exc}")
        return None
    return new
