"""XCache g-stream ``file_close`` JSON records (XrdPfc ``Cache::ReleaseFile``), one per line.

``{"event":"file_close","lfn":..,"size":..,"blk_size":..,"n_blks":..,"n_blks_done":..,
"access_cnt":..,"attach_t":..,"detach_t":..,"remotes":[..],"b_hit":..,"b_miss":..,"b_bypass":..,...}``:
one access of ``lfn`` at ``attach_t`` reading ``b_hit + b_miss + b_bypass`` bytes of a
``size``-byte file from the first of ``remotes``. Other events are counted and skipped.
"""

from __future__ import annotations

from typing import Iterator

from advisor.cache.json_records import iter_json_records
from advisor.cache.trace import BatchBuilder, InputIssues, RequestBatch, Trace, drain
from advisor.cache.wlcg_json import _num, epoch_seconds


def read_gstream(path: str, trace: Trace, issues: InputIssues) -> Iterator[RequestBatch]:
    out = BatchBuilder(trace)

    def lines() -> Iterator[None]:
        for line, rec in iter_json_records(path, issues):
            if rec.get("event") != "file_close":
                issues.skip(f"event {rec.get('event')!r}")
                continue
            name, size, t = rec.get("lfn"), _num(rec.get("size")), _num(rec.get("attach_t"))
            parts = [_num(rec.get(k)) for k in ("b_hit", "b_miss", "b_bypass")]
            if not isinstance(name, str) or not name:
                issues.bad(line, "no lfn")
                continue
            if size is None or size < 0 or t is None or any(p is None or p < 0 for p in parts):
                issues.bad(line, "size, attach_t, b_hit, b_miss and b_bypass must be numbers")
                continue
            remotes = rec.get("remotes")
            server = remotes[0] if isinstance(remotes, list) and remotes else ""
            issues.records += 1
            out.add(epoch_seconds(t), name, int(size), int(sum(parts)), str(server))
            yield None

    yield from drain(out, lines())
