"""Benchmark of `storadvise cache simulate` on one core, against libCacheSim measured in the same run.

  .venv/bin/python bench/bench_cache.py                    # 10 M requests over 1 M files
  .venv/bin/python bench/bench_cache.py --requests 20000000 --files 2000000 --keep /tmp/trace.csv

It writes a CSV transfer log (timestamp,file,size,server: CMS-like paths, ~1000 files per directory, Zipf(0.8) popularity,
sizes 0.5-4 GB), pins itself to one CPU, compiles the kernels on a small log first (compile time
reported apart), then times, each from the CSV file:

  * LRU at one capacity (parse + simulate)                  -> requests/s   (target >= 1.5 M/s)
  * the whole LRU curve in one pass (parse + stack distances) -> ratio to the LRU run (target <= 3)
  * libCacheSim's LRU over the same CSV (its C reader)       -> requests/s and our ratio to it
  * the state's memory: bytes per distinct file, and a small log replayed 1 and 3 times (3x the
    requests, the same files): the same bytes -- bounded by distinct files, not requests.

Times are CPU seconds of this process (libCacheSim runs in it too), best of two alternating rounds:
on a shared machine wall time would mostly measure the neighbours. Prints one JSON object and a
summary; exit 0 when the targets hold.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from advisor.cache.curve import StackCurve  # noqa: E402
from advisor.cache.csv_log import CsvColumns, read_csv_log  # noqa: E402
from advisor.cache.policies import CacheState  # noqa: E402
from advisor.cache.simulate import CURVE_GRID  # noqa: E402
from advisor.cache.trace import InputIssues, Trace  # noqa: E402


def write_trace(path: Path, n: int, n_files: int, seed: int = 11) -> None:
    rng = np.random.default_rng(seed)
    p = np.arange(1, n_files + 1, dtype=np.float64) ** -0.8
    p /= p.sum()
    cdf = np.cumsum(p)
    sizes = rng.integers(500_000_000, 4_000_000_000, n_files)
    dirs = np.array(["/store/mc/Run3Summer23/TTto2L2Nu/AODSIM/v1", "/store/mc/Run3Summer23/TTto2L2Nu/MINIAODSIM/v1",
                     "/store/mc/Run3Summer23/TTto2L2Nu/NANOAODSIM/v1", "/store/data/Run2024C/Muon0/RAW/v1",
                     "/store/user/someone/analysis"])
    perm = rng.permutation(n_files)
    t0 = 1_700_000_000.0
    with open(path, "w") as f:
        f.write("timestamp,file,size,server\n")
        step = 500_000
        for a in range(0, n, step):
            m = min(step, n - a)
            ids = perm[np.minimum(np.searchsorted(cdf, rng.random(m)), n_files - 1)]
            ts = t0 + (a + np.arange(m)) * 0.05
            f.write("".join(f"{ts[i]:.2f},{dirs[ids[i] % 5]}/{ids[i] // 5000:05d}/f{ids[i]}.root,"
                            f"{sizes[ids[i]]},fs{ids[i] % 24}\n" for i in range(m)))


def _clock() -> float:
    """CPU seconds of this process: on a shared 2-core box, wall time measures the neighbours."""
    return time.process_time()


def ours_lru(path: str, cap: int, passes: int = 1) -> tuple[float, int, CacheState, Trace]:
    t = _clock()
    tr = Trace()
    st = CacheState("lru", cap, len(tr.types.names))
    n = 0
    for _ in range(passes):
        for b in read_csv_log(path, tr, CsvColumns(), InputIssues(path)):
            st.reserve(tr.n_keys, 1)
            st.run(b.time, b.key, np.zeros(len(b), np.int64), b.size, b.nbytes, b.ftype)
            n += len(b)
    return _clock() - t, n, st, tr


def ours_curve(path: str, caps: np.ndarray) -> tuple[float, StackCurve]:
    t = _clock()
    tr = Trace()
    c = StackCurve(caps, len(tr.types.names))
    for b in read_csv_log(path, tr, CsvColumns(), InputIssues(path)):
        c.reserve(tr.n_keys)
        c.run(b.key, b.size, b.nbytes, b.ftype)
    return _clock() - t, c


def libcachesim_lru(path: str, cap: int) -> tuple[float, float] | None:
    try:
        import libcachesim as lcs
    except ImportError:
        return None
    t = _clock()
    p = lcs.ReaderInitParam(has_header=True, has_header_set=True, delimiter=",", obj_id_is_num=False,
                            obj_id_is_num_set=True)
    p.time_field, p.obj_id_field, p.obj_size_field = 1, 2, 3
    miss, _ = lcs.LRU(cap).process_trace(lcs.TraceReader(path, lcs.TraceType.CSV_TRACE, p))
    return _clock() - t, 1 - miss


def state_bytes(st: CacheState) -> int:
    return sum(v.nbytes for v in vars(st).values() if isinstance(v, np.ndarray))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=10_000_000)
    ap.add_argument("--files", type=int, default=1_000_000)
    ap.add_argument("--capacity", type=float, default=100e12, help="bytes (default 100 TB)")
    ap.add_argument("--keep", type=Path, help="write/reuse the trace here")
    ap.add_argument("--rounds", type=int, default=2, help="alternating rounds; each run's best CPU time is kept")
    a = ap.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    tmp = tempfile.TemporaryDirectory(prefix="bench-cache-")
    path = a.keep or Path(tmp.name) / "trace.csv"
    if not path.exists():
        t = time.perf_counter()
        write_trace(path, a.requests, a.files)
        print(f"wrote {path} ({path.stat().st_size / 1e6:.0f} MB) in {time.perf_counter() - t:.1f}s", file=sys.stderr)
    small = Path(tmp.name) / "warm.csv"
    write_trace(small, 20_000, 2_000)
    t = time.perf_counter()
    ours_lru(str(small), int(a.capacity))
    ours_curve(str(small), CURVE_GRID)
    compile_s = time.perf_counter() - t
    cap = int(a.capacity)
    # alternate the three runs, --rounds times, and keep each one's best (least disturbed) time
    best: dict[str, float] = {}
    peer = None
    for _ in range(a.rounds):
        lru_s, n, st, tr = ours_lru(str(path), cap)
        best["lru"] = min(best.get("lru", lru_s), lru_s)
        curve_s, curve = ours_curve(str(path), np.unique(np.append(CURVE_GRID, cap)))
        best["curve"] = min(best.get("curve", curve_s), curve_s)
        got = libcachesim_lru(str(path), cap)
        if got:
            peer = (min(peer[0], got[0]), got[1]) if peer else got
    lru_s, curve_s = best["lru"], best["curve"]
    c = st.counts.sum(axis=0)
    j = int(np.searchsorted(curve.caps, cap))
    curve_hit = float(curve.hits().sum(axis=0)[j, 0] / curve.total.sum(axis=0)[0])
    _, _, st1, _ = ours_lru(str(small), cap, passes=1)
    _, n3, st3, tr3 = ours_lru(str(small), cap, passes=3)
    res = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores (pinned to 1), Python {platform.python_version()}",
        "clock": "CPU seconds of the process (time.process_time), best of --rounds alternating rounds",
        "loadavg_1min": os.getloadavg()[0],
        "requests": n, "distinct_files": tr.n_keys, "capacity_bytes": cap, "compile_s": round(compile_s, 2),
        "lru": {"seconds": round(lru_s, 3), "requests_per_s": round(n / lru_s), "hit_efficiency": round(c[1] / c[0], 6)},
        "curve": {"seconds": round(curve_s, 3), "capacities": len(curve.caps), "ratio_to_lru": round(curve_s / lru_s, 3),
                  "hit_efficiency_at_capacity": round(curve_hit, 6)},
        "memory": {"state_bytes": state_bytes(st), "curve_tree_slots": len(curve.tree),
                   "small_log_state_bytes_1_pass": state_bytes(st1), "small_log_state_bytes_3_passes": state_bytes(st3),
                   "small_log_requests_3_passes": n3, "small_log_distinct_files": tr3.n_keys,
                   "bytes_per_distinct_file": round(state_bytes(st) / max(tr.n_keys, 1), 1)},
    }
    if peer:
        res["libcachesim_lru"] = {"seconds": round(peer[0], 3), "requests_per_s": round(n / peer[0]),
                                  "hit_efficiency": round(peer[1], 6), "our_speed_ratio": round(peer[0] / lru_s, 3)}
    ok = n / lru_s >= 1.5e6 and curve_s / lru_s <= 3.0
    res["targets_met"] = ok
    print(json.dumps(res, indent=1))
    print(f"LRU {n / lru_s / 1e6:.2f} M req/s (target >= 1.5); curve in one pass {curve_s / lru_s:.2f}x one LRU run "
          f"(target <= 3)" + (f"; libCacheSim LRU {n / peer[0] / 1e6:.2f} M req/s, ours {peer[0] / lru_s:.2f}x its speed"
                              if peer else "; libCacheSim not installed"), file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
