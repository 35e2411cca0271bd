"""dCache billing text files (``billing-YYYY.MM.DD``): pool ``transfer`` lines are the reads.

Default formats (dCache's billing.properties): ``$date$ [$cellType$:$cellName$:$type$]
[$pnfsid$,$filesize$] [$path$] <storage class> $transferred$ $connectionTime$ $created$
{$protocol$} [$initiator$] {$rc$:"$message$"}`` for the pool mover; the door's ``request`` line
carries the path for a pnfsid. ``$date$`` is ``MM.dd HH:mm:ss`` with no year: the year comes
from the file name (or ``year=``). A pool line whose path is ``Unknown`` waits (up to
``JOIN_WINDOW`` lines) for the door line of its pnfsid; the file key is the pnfsid either way.
Uploads (``created`` true), pool-to-pool copies (initiator ``pool:...``) and failed transfers
(rc != 0) are counted and skipped; ``##`` header lines and other record types are not requests.
The server is the pool.
"""

from __future__ import annotations

import calendar
import os
import re
from collections import OrderedDict
from typing import Iterator

from advisor.cache.trace import BatchBuilder, CacheInputError, InputIssues, RequestBatch, Trace, drain

JOIN_WINDOW = 10000
_HEAD = re.compile(r"^(\d\d)\.(\d\d) (\d\d):(\d\d):(\d\d) \[([^:\]]+):([^\]]+):([\w-]+)\] (.*)$")
_MOVER = re.compile(r'^\[([0-9A-Fa-f]+),(-?\d+)\] \[(.*?)\] (\S+) (-?\d+) (-?\d+) (true|false) \{(.*?)\} '
                    r'\[(.*?)\] \{(-?\d+):"(.*)"\}\s*$')
_DOOR = re.compile(r'^\[.*?\] \[([0-9A-Fa-f]+),(-?\d+)\] \[(.*?)\] ')
_NAME_YEAR = re.compile(r"billing(?:-error)?-(\d{4})\.\d\d\.\d\d")


def year_from_name(path: str) -> int | None:
    m = _NAME_YEAR.search(os.path.basename(path))
    return int(m.group(1)) if m else None


def read_dcache_billing(path: str, trace: Trace, issues: InputIssues, year: int | None = None) -> Iterator[RequestBatch]:
    y = year_from_name(path) or year
    if y is None:
        raise CacheInputError(path, "no year in the file name (billing-YYYY.MM.DD): give --year")
    try:
        fh = open(path, encoding="utf-8", errors="replace")
    except FileNotFoundError:
        raise CacheInputError(path, "no such file") from None
    except OSError as e:
        raise CacheInputError(path, e.strerror or "cannot be read") from None
    out = BatchBuilder(trace)
    paths: dict[str, str] = {}
    pending: OrderedDict[int, tuple] = OrderedDict()  # line -> (time, pnfsid, size, nbytes, pool)
    times: dict[tuple, float] = {}
    waiting: dict[str, list[int]] = {}

    def emit(t: float, pnfsid: str, size: int, nbytes: int, pool: str, p: str | None) -> None:
        issues.records += 1
        out.add(t, pnfsid, size, nbytes, pool, path=p or pnfsid)

    def lines() -> Iterator[None]:
        with fh:
            for n, raw in enumerate(fh, 1):
                s = raw.rstrip("\r\n")
                if not s.strip() or s.startswith("#"):
                    continue
                m = _HEAD.match(s)
                if not m:
                    issues.bad(n, "not a billing record (MM.dd HH:mm:ss [cellType:cellName:type] ...)")
                    continue
                mo, d, hh, mi, ss, ctype, cname, rtype, rest = m.groups()
                if ctype == "door" and rtype == "request":
                    dm = _DOOR.match(rest)
                    if dm and dm.group(3) not in ("", "Unknown"):
                        pnfs = dm.group(1)
                        paths[pnfs] = dm.group(3)
                        for ln in waiting.pop(pnfs, ()):
                            if ln in pending:
                                emit(*pending.pop(ln), dm.group(3))
                                yield None
                    continue
                if ctype != "pool" or rtype != "transfer":
                    issues.skip(f"{ctype} {rtype} record")
                    continue
                pm = _MOVER.match(rest)
                if not pm:
                    issues.bad(n, "pool transfer line not in the mover-info format")
                    continue
                pnfs, fsize, p, _sc, moved, _conn, created, _proto, initiator, rc, _msg = pm.groups()
                if created == "true":
                    issues.skip("write (upload)")
                    continue
                if initiator.startswith("pool:"):
                    issues.skip("pool-to-pool copy")
                    continue
                if rc != "0":
                    issues.skip("failed transfer (rc != 0)")
                    continue
                key = (mo, d, hh, mi, ss)
                t = times.get(key)
                if t is None:
                    try:
                        t = float(calendar.timegm((y, int(mo), int(d), int(hh), int(mi), int(ss), 0, 0, 0)))
                    except (ValueError, OverflowError):
                        issues.bad(n, "bad date")
                        continue
                    if len(times) > 100000:
                        times.clear()
                    times[key] = t
                pool = cname.split("@", 1)[0]
                size, nbytes = int(fsize), int(moved)
                if size < 0 or nbytes < 0:
                    issues.bad(n, "negative size or bytes transferred")
                    continue
                known = p if p not in ("", "Unknown") else paths.get(pnfs)
                if known is not None:
                    paths[pnfs] = known
                    emit(t, pnfs, size, nbytes, pool, known)
                    yield None
                else:
                    pending[n] = (t, pnfs, size, nbytes, pool)
                    waiting.setdefault(pnfs, []).append(n)
                    while pending and next(iter(pending)) < n - JOIN_WINDOW:
                        old = pending.popitem(last=False)[1]
                        waiting.pop(old[1], None)
                        emit(*old, None)
                        yield None
        for v in pending.values():
            emit(*v, None)
            yield None

    yield from drain(out, lines())
