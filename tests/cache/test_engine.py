"""cache simulate on a small log (issue 37, item 14): interpreted instead of compiled first (seconds of
numba compiling for 400 reads; bench/bench_cache_small.py measures it), with the same results as the
compiled kernels for every policy, the LRU curve, per-server areas and ISO times; sizes printed as
computed, in binary units named as such (GiB, never GB)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def simulate(log: Path, *args: str, engine: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "STORADVISE_CACHE_ENGINE"}
    if engine:
        env["STORADVISE_CACHE_ENGINE"] = engine
    return subprocess.run([sys.executable, "-m", "advisor.cli.root", "cache", "simulate", str(log), *args],
                          capture_output=True, text=True, cwd=REPO, timeout=600, env=env)


@pytest.mark.parametrize("areas", ["shared", "per-server"])
def test_the_interpreted_engine_gives_the_compiled_results(trace_csv, areas):
    log = trace_csv(400, 100)
    args = ("--capacity", "20M,100M,1G", "--policy", "lru,lfu,arc,xcache", "--curve", "--areas", areas, "--json")
    small = simulate(log, *args)
    compiled = simulate(log, *args, engine="compiled")
    assert small.returncode == compiled.returncode == 0, small.stderr + compiled.stderr
    a, b = json.loads(small.stdout), json.loads(compiled.stdout)
    assert a.pop("engine") == "interpreted" and b.pop("engine") == "compiled"
    assert a == b


def test_iso_times_ops_and_bad_lines_read_the_same(tmp_path):
    log = tmp_path / "iso.csv"
    log.write_text("timestamp,file,size,server,op\n"
                   "2026-01-01T00:00:00Z,/store/a.root,1000000,fs1,read\n"
                   "2026-01-01 00:00:01.5,/store/b.root,2000000,fs2,READ\n"
                   "2026-01-01T00:00:02,/store/a.root,1000000,fs1,write\n"
                   "1767225603,/store/a.root,1000000,fs1,r\n"
                   "not-a-time,/store/c.root,5,fs1,read\n"
                   "1767225605,/store/c.root,-5,fs1,read\n")
    args = ("--capacity", "1M,10M", "--policy", "lru,arc", "--csv-op", "op", "--json")
    a, b = (json.loads(simulate(log, *args, engine=e).stdout) for e in ("interpreted", "compiled"))
    a.pop("engine"), b.pop("engine")
    assert a == b and a["requests"] == 3 and a["inputs"][0]["bad_lines"] == 2, a["inputs"]
    assert sum(a["inputs"][0]["skipped"].values()) == 1


def test_sizes_print_in_binary_units_as_computed(trace_csv):
    r = simulate(trace_csv(400, 100), "--capacity", "100M,1G", "--curve")
    assert r.returncode == 0, r.stderr
    assert "100 MiB" in r.stdout and "1 GiB" in r.stdout and "recommended capacity (knee): " in r.stdout
    knee = r.stdout.split("recommended capacity (knee): ", 1)[1].split(" per area", 1)[0]
    assert knee.endswith(("KiB", "MiB", "GiB", "TiB")), knee
    assert not any(u in r.stdout for u in ("GB ", "MB ", "GB\n", "MB\n")), r.stdout
