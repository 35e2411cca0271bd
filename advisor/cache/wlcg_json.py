"""WLCG GenericFileMonitoring JSON (the xrootd-monitoring-collector's WLCG records) and the
collector's own decoded records: one file access per record.

Fields read (either naming): file name ``file_lfn`` | ``filename`` | ``lfn``; size ``file_size`` |
``filesize``; bytes read ``read_bytes`` | ``read_bytes_at_close`` | ``read`` + ``readv``; bytes
written ``write_bytes`` | ``write``; time ``start_time`` | ``end_time`` (epoch seconds in the
WLCG records, milliseconds in the collector's: values above 1e11 are taken as ms); server
``server_host`` | ``server_hostname``. A record that wrote and read nothing, or whose
``operation`` is a write, is counted and skipped.
"""

from __future__ import annotations

import math
from typing import Any, Iterator

from advisor.cache.csv_fields import MAX_BYTE_COUNT
from advisor.cache.json_records import iter_json_records
from advisor.cache.trace import BatchBuilder, InputIssues, RequestBatch, Trace, drain


def _first(rec: dict, *names: str) -> Any:
    for n in names:
        v = rec.get(n)
        if v is not None:
            return v
    return None


def _num(v: Any) -> float | None:
    """A finite number (JSON number or numeric string); None for anything else (1e999, NaN, an object)."""
    if isinstance(v, bool) or v is None or isinstance(v, (dict, list)):
        return None
    try:
        f = float(v) if isinstance(v, (int, float)) else float(str(v))
    except (ValueError, OverflowError):
        return None
    return f if math.isfinite(f) else None


def _byte_count(v: Any) -> float | None:
    """A byte count from a record: finite, 0 to MAX_BYTE_COUNT; None otherwise."""
    f = _num(v)
    return f if f is not None and 0 <= f <= MAX_BYTE_COUNT else None


def epoch_seconds(v: float) -> float:
    return v / 1000.0 if v > 1e11 else v


def read_wlcg_json(path: str, trace: Trace, issues: InputIssues) -> Iterator[RequestBatch]:
    out = BatchBuilder(trace)

    def lines() -> Iterator[None]:
        for line, rec in iter_json_records(path, issues):
            name = _first(rec, "file_lfn", "filename", "lfn")
            size = _byte_count(_first(rec, "file_size", "filesize"))
            if not isinstance(name, str) or not name:
                issues.bad(line, "no file name (file_lfn / filename)")
                continue
            if size is None:
                issues.bad(line, "no file size (file_size / filesize: a byte count, 0 to 2^63-1)")
                continue
            rb = _byte_count(_first(rec, "read_bytes", "read_bytes_at_close"))
            if rb is None:
                r, rv = _byte_count(rec.get("read")), _byte_count(rec.get("readv"))
                rb = None if r is None and rv is None else min((r or 0) + (rv or 0), MAX_BYTE_COUNT)
            wb = _num(_first(rec, "write_bytes", "write")) or 0
            op = str(rec.get("operation", "")).lower()
            if op.startswith("write") or (not rb and wb > 0):
                issues.skip("write")
                continue
            t = _num(_first(rec, "start_time", "end_time"))
            if t is None:
                issues.bad(line, "no time (start_time / end_time)")
                continue
            server = _first(rec, "server_host", "server_hostname")
            issues.records += 1
            out.add(epoch_seconds(t), name, int(size), int(rb if rb is not None else size),
                    str(server) if server is not None else "")
            yield None

    yield from drain(out, lines())
