"""Replay transfer logs through cache configurations: each policy at each capacity, shared or one
area per server, and (``curve``) the whole LRU curve in the same single pass over the logs.

Per configuration: hit efficiency (hits / accesses) and transfer efficiency (bytes read from the
cache / bytes read), overall and by file type. Capacities are per cache area (one area per file
server with ``areas='per-server'``, as in the Tokyo Tier-2 study).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

import numpy as np
from advisor.cache import jit
from advisor.cache.jit import njit

from advisor.cache.csv_log import CsvColumns
from advisor.cache.curve import StackCurve
from advisor.cache.inputs import read_log
from advisor.cache.keytable import KeyTable, lookup_or_insert
from advisor.cache.policies import CacheState
from advisor.cache.trace import InputIssues, Trace

AREAS = ("shared", "per-server")
#: the curve's capacity grid: 8 points per decade from 1 MiB to 1 PiB (plus the asked capacities)
CURVE_GRID = np.unique(np.round(2.0 ** 20 * 10 ** (np.arange(0, 9 * 8 + 1) / 8.0)))


@dataclass
class SimulateOptions:
    capacities: list[int]
    policies: list[str] = field(default_factory=lambda: ["lru"])
    areas: str = "shared"
    curve: bool = False
    sample: float = 1.0
    high: float = 0.95
    low: float = 0.90
    purge_interval: float = 300.0


@njit(cache=True)
def _area_keys(key, server, slots, count):
    out = np.empty(len(key), dtype=np.int64)
    for i in range(len(key)):
        h = (key[i] * 0x9E3779B1 + server[i] * 0x85EBCA77 + 1) | 1
        out[i] = lookup_or_insert(slots, count, h)[0]
    return out


def _eff(counts: np.ndarray) -> dict[str, Any]:
    acc, hits, b, bh = (int(x) for x in counts)
    return {"accesses": acc, "hits": hits, "bytes_read": b, "bytes_from_cache": bh,
            "hit_efficiency": round(hits / acc, 6) if acc else None,
            "transfer_efficiency": round(bh / b, 6) if b else None}


def knee(caps: np.ndarray, eff: np.ndarray) -> int | None:
    """Kneedle on efficiency vs log10(capacity): the point farthest above the chord."""
    ok = np.isfinite(eff)
    if ok.sum() < 3:
        return None
    idx = np.flatnonzero(ok)
    x = np.log10(caps[idx])
    y = eff[idx]
    if y.max() - y.min() <= 1e-9:
        return int(idx[0])
    xn = (x - x[0]) / (x[-1] - x[0])
    yn = (y - y.min()) / (y.max() - y.min())
    return int(idx[int(np.argmax(yn - xn))])


def simulate(logs: Iterable[tuple[str, str]], opts: SimulateOptions, trace: Trace | None = None,
             csv_columns: CsvColumns | None = None, year: int | None = None) -> dict[str, Any]:
    trace = trace or Trace()
    ntypes = len(trace.types.names)
    per_server = opts.areas == "per-server"
    states = [CacheState(p, c, ntypes, high=opts.high, low=opts.low, purge_interval=opts.purge_interval)
              for p in opts.policies for c in opts.capacities]
    caps = np.unique(np.concatenate([CURVE_GRID, np.asarray(opts.capacities, dtype=np.float64)]))
    curves: dict[int, StackCurve] = {}
    area_keys = KeyTable()
    issues_all: list[InputIssues] = []
    t_first = t_last = None
    for path, fmt in logs:
        issues = InputIssues(path)
        issues_all.append(issues)
        for b in read_log(path, fmt, trace, issues, csv_columns or CsvColumns(), year):
            if per_server:
                area_keys.reserve(len(b))
                key = _area_keys(b.key, b.server, area_keys.slots, area_keys.count)
                area, n_keys, n_areas = b.server, len(area_keys), len(trace.server_names) or 1
            else:
                key, area, n_keys, n_areas = b.key, np.zeros(len(b), np.int64), trace.n_keys, 1
            t_first = float(b.time[0]) if t_first is None else t_first
            t_last = float(b.time[-1])
            for st in states:
                st.reserve(n_keys, n_areas)
                st.run(b.time, key, area, b.size, b.nbytes, b.ftype)
            if opts.curve:
                groups = [(0, slice(None))] if not per_server else [
                    (int(a), area == a) for a in np.unique(area)]
                for a, sel in groups:
                    c = curves.get(a)
                    if c is None:
                        c = curves[a] = StackCurve(caps, ntypes, opts.sample)
                    c.reserve(n_keys)
                    c.run(key[sel], b.size[sel], b.nbytes[sel], b.ftype[sel])
    names = trace.types.names
    configs = []
    for st in states:
        tot = st.counts.sum(axis=0)
        row = {"policy": st.policy, "capacity_bytes": st.capacity, "areas": opts.areas,
               "n_areas": st.n_areas, **_eff(tot),
               "by_type": {names[i]: _eff(st.counts[i]) for i in range(ntypes) if st.counts[i, 0]}}
        if st.policy == "xcache":
            row["xcache"] = st.extra()
        configs.append(row)
    n_req = sum(i.records for i in issues_all)
    result: dict[str, Any] = {
        "inputs": [i.to_dict() for i in issues_all],
        "requests": n_req,
        "distinct_files": trace.n_keys,
        "servers": len(trace.server_names),
        "time_span_s": (t_last - t_first) if t_first is not None else 0.0,
        "areas": opts.areas,
        "file_types": names,
        "configurations": configs,
        # compiled by numba, or (a small input) interpreted: advisor/cache/jit.py; the same results
        "engine": jit.engine(),
    }
    if opts.curve:
        result["curve"] = _curve_result(caps, curves, names, opts)
    return result


def _curve_result(caps: np.ndarray, curves: dict[int, StackCurve], names: list[str], opts: SimulateOptions) -> dict:
    ntypes = len(names)
    hits = np.zeros((ntypes, len(caps), 2))
    total = np.zeros((ntypes, 2))
    max_size = 0
    for c in curves.values():
        hits += c.hits()
        total += c.total
        max_size = max(max_size, c.max_size)
    h, t = hits.sum(axis=0), total.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        hit_eff = h[:, 0] / t[0] if t[0] else np.full(len(caps), np.nan)
        tr_eff = h[:, 1] / t[1] if t[1] else np.full(len(caps), np.nan)
    # stop the grid where the curve is flat (every re-access already hits)
    last = len(caps) - 1
    if np.isfinite(tr_eff).any():
        top = np.nanmax(tr_eff)
        reach = np.flatnonzero(tr_eff >= top - 1e-12)
        last = min(len(caps) - 1, int(reach[0]) + 1) if len(reach) else last
    sl = slice(0, last + 1)
    k = knee(caps[sl], tr_eff[sl])
    by_type = {}
    for i, n in enumerate(names):
        if total[i, 0]:
            by_type[n] = {"hit_efficiency": [round(float(x), 6) for x in hits[i, sl, 0] / total[i, 0]],
                          "transfer_efficiency": [round(float(x), 6) for x in hits[i, sl, 1] / max(total[i, 1], 1)]}
    out = {
        "policy": "lru", "areas": opts.areas, "one_pass": True, "sample_rate": opts.sample,
        "exact_from_bytes": int(max_size) if opts.sample >= 1.0 else None,
        "capacities_bytes": [int(c) for c in caps[sl]],
        "hit_efficiency": [round(float(x), 6) for x in hit_eff[sl]],
        "transfer_efficiency": [round(float(x), 6) for x in tr_eff[sl]],
        "by_type": by_type,
        "at_capacities": [{"capacity_bytes": int(c), "hit_efficiency": round(float(hit_eff[j]), 6),
                           "transfer_efficiency": round(float(tr_eff[j]), 6)}
                          for c in opts.capacities for j in [int(np.searchsorted(caps, c))]],
    }
    if k is not None:
        out["knee"] = {"capacity_bytes": int(caps[k]), "hit_efficiency": round(float(hit_eff[k]), 6),
                       "transfer_efficiency": round(float(tr_eff[k]), 6),
                       "method": "Kneedle on transfer efficiency vs log10(capacity)"}
    return out
