"""Benchmark of `storadvise cache simulate` on a small log, the way a site administrator first runs it:
3 capacities x 3 policies (lru, lfu, arc) over 400 reads, one command, against the old way measured in
the same run.

  .venv/bin/python bench/bench_cache_small.py [--reads 400] [--repeat 3]

Each figure is the command as a whole process (Python start, imports, the replay, the output), CPU
seconds of the process (wall time beside it), median of ``--repeat`` runs:

  * new: the default engine (advisor/cache/jit.py: a log this small is replayed interpreted);
  * old, first run: the kernels compiled by numba with an empty numba cache (a fresh install, a
    read-only one, another CPU), which is what every first ``cache simulate`` cost;
  * old, cached: the kernels compiled and loaded from numba's cache (a second run on the same machine).

The two engines must print the same result (the configurations compared field by field). Prints one
JSON object and a summary; exit 0 when new is at least 5x faster than the old first run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.measure import measure  # noqa: E402

STORADVISE = str(Path(sys.executable).parent / "storadvise")
TARGET = 5.0


def write_log(path: Path, reads: int, files: int, seed: int = 7) -> None:
    """A CSV transfer log: Zipf(0.9) popularity over ``files`` files of 1-20 MB, on 3 servers."""
    rng = np.random.default_rng(seed)
    p = np.arange(1, files + 1, dtype=np.float64) ** -0.9
    ids = rng.permutation(files)[rng.choice(files, size=reads, p=p / p.sum())]
    sizes = rng.integers(1_000_000, 20_000_001, size=files)
    t = np.cumsum(rng.exponential(1.0, reads))
    kinds = ("AODSIM", "MINIAODSIM", "NANOAODSIM", "RAW")
    with open(path, "w") as f:
        f.write("timestamp,file,size,server\n")
        for i in range(reads):
            k = int(ids[i])
            f.write(f"{t[i]:.3f},/store/mc/Run3/{kinds[k % 4]}/v1/f{k}.root,{sizes[k]},fs{k % 3}\n")


def run(log: Path, engine: str | None, cache_dir: str | None) -> dict:
    env = dict(os.environ)
    env.pop("STORADVISE_CACHE_ENGINE", None)
    if engine:
        env["STORADVISE_CACHE_ENGINE"] = engine
    if cache_dir:
        env["NUMBA_CACHE_DIR"] = cache_dir
    m = measure([STORADVISE, "cache", "simulate", str(log), "--capacity", "20M,100M,1G", "--policy", "lru,lfu,arc",
                 "--json"], env=env, ok=(0,))
    m["result"] = json.loads(m.pop("stdout"))["configurations"]
    return m


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reads", type=int, default=400)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="storadvise-bench-cache-small-") as tmp:
        log = Path(tmp) / "transfers.csv"
        write_log(log, args.reads, max(args.reads // 4, 10))
        rows: dict[str, list[dict]] = {"new": [], "old_first_run": [], "old_cached": []}
        warm = Path(tmp) / "numba-warm"
        run(log, "compiled", str(warm))  # fills the cache the "old, cached" runs read
        for i in range(args.repeat):  # alternating, so that the machine's load falls on all three
            rows["new"].append(run(log, None, None))
            rows["old_first_run"].append(run(log, "compiled", str(Path(tmp) / f"numba-cold-{i}")))
            rows["old_cached"].append(run(log, "compiled", str(warm)))
    same = all(r["result"] == rows["old_cached"][0]["result"] for rs in rows.values() for r in rs)
    med = {k: {"cpu_s": statistics.median(r["cpu_s"] for r in rs), "wall_s": statistics.median(r["wall_s"] for r in rs)}
           for k, rs in rows.items()}
    ratio_first = med["old_first_run"]["cpu_s"] / med["new"]["cpu_s"]
    ratio_cached = med["old_cached"]["cpu_s"] / med["new"]["cpu_s"]
    out = {"reads": args.reads, "configurations": 9, "repeat": args.repeat, "median": med,
           "ratio_old_first_run_to_new": round(ratio_first, 2), "ratio_old_cached_to_new": round(ratio_cached, 2),
           "same_result": same, "target": TARGET}
    print(json.dumps(out, indent=2))
    for k, v in med.items():
        print(f"{k:>14}: {v['cpu_s']:.2f} s CPU ({v['wall_s']:.2f} s wall)")
    print(f"new vs old first run: {ratio_first:.1f}x faster (target >= {TARGET:g}x); vs old cached: "
          f"{ratio_cached:.1f}x; same result: {same}")
    sys.exit(0 if same and ratio_first >= TARGET else 1)


if __name__ == "__main__":
    main()
