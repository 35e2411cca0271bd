"""Which reader a log needs (``--format``, or detected from its first bytes), and the stream of
request batches over several logs in order."""

from __future__ import annotations

import re
from typing import Iterator

from advisor.cache.csv_log import CsvColumns, read_csv_log
from advisor.cache.dcache_billing import read_dcache_billing
from advisor.cache.gstream import read_gstream
from advisor.cache.trace import CacheInputError, InputIssues, RequestBatch, Trace
from advisor.cache.wlcg_json import read_wlcg_json

FORMATS = ("auto", "csv", "dcache-billing", "wlcg-json", "xcache-gstream")
_BILLING = re.compile(r"^(## \S+-message |\d\d\.\d\d \d\d:\d\d:\d\d \[)", re.M)


def detect_format(path: str) -> str:
    try:
        with open(path, "rb") as f:
            head = f.read(65536).decode("utf-8", "replace")
    except FileNotFoundError:
        raise CacheInputError(path, "no such file") from None
    except IsADirectoryError:
        raise CacheInputError(path, "is a directory, not a log") from None
    except OSError as e:
        raise CacheInputError(path, e.strerror or "cannot be read") from None
    body = head.lstrip(" \t\r\n[")
    if not body:
        raise CacheInputError(path, "empty file")
    if body.startswith("{"):
        return "xcache-gstream" if '"event"' in body.split("}", 1)[0] else "wlcg-json"
    if _BILLING.search(head):
        return "dcache-billing"
    first = head.splitlines()[0]
    if "," in first or ";" in first or "\t" in first:
        return "csv"
    raise CacheInputError(path, "not a recognised transfer log (CSV with a header, dCache billing, "
                                "WLCG JSON or XCache g-stream JSON): give --format", line=1)


def read_log(path: str, fmt: str, trace: Trace, issues: InputIssues, csv_columns: CsvColumns,
             year: int | None = None) -> Iterator[RequestBatch]:
    if fmt == "auto":
        fmt = detect_format(path)
    if fmt == "csv":
        return read_csv_log(path, trace, csv_columns, issues)
    if fmt == "dcache-billing":
        return read_dcache_billing(path, trace, issues, year)
    if fmt == "wlcg-json":
        return read_wlcg_json(path, trace, issues)
    if fmt == "xcache-gstream":
        return read_gstream(path, trace, issues)
    raise CacheInputError(path, f"unknown format {fmt!r} (use one of {', '.join(FORMATS)})")
