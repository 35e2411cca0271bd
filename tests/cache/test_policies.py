"""Policies against libCacheSim (the research simulator) on the same trace, and the XCache purge
model on a workload whose answer is worked out by hand."""

from __future__ import annotations

import os

import numpy as np
import pytest

from advisor.cache.policies import POLICIES, CacheState
from advisor.cache.simulate import SimulateOptions, simulate


def _libcachesim():
    try:
        import libcachesim
    except ImportError:
        if os.environ.get("CI"):
            pytest.fail("libcachesim is a test dependency on x86_64 CPython 3.11: CI must install it")
        pytest.skip("libcachesim does not install here (wheels for x86_64 CPython 3.11 only)")
    return libcachesim


def _lcs_run(lcs, path, policy, cap):
    p = lcs.ReaderInitParam(has_header=True, has_header_set=True, delimiter=",", obj_id_is_num=False,
                            obj_id_is_num_set=True)
    p.time_field, p.obj_id_field, p.obj_size_field = 1, 2, 3
    reader = lcs.TraceReader(str(path), lcs.TraceType.CSV_TRACE, p)
    cls = {"lru": lcs.LRU, "lfu": lcs.LFU, "arc": lcs.ARC}[policy]
    miss, byte_miss = cls(cap).process_trace(reader)
    return 1 - miss, 1 - byte_miss


def test_against_libcachesim(trace_csv):
    lcs = _libcachesim()
    path = trace_csv(60_000, 6_000, alpha=0.8)
    caps = [300_000_000, 3_000_000_000, 30_000_000_000]
    res = simulate([(str(path), "csv")], SimulateOptions(capacities=caps, policies=["lru", "lfu", "arc"]))
    worst = {}
    for row in res["configurations"]:
        hit, byte_hit = _lcs_run(lcs, path, row["policy"], row["capacity_bytes"])
        d = max(abs(row["hit_efficiency"] - hit), abs(row["transfer_efficiency"] - byte_hit))
        worst[row["policy"]] = max(worst.get(row["policy"], 0.0), d)
        if row["policy"] == "lru":  # identical hits and byte hits
            assert row["hits"] == round(hit * row["accesses"])
            assert row["bytes_from_cache"] == round(byte_hit * row["bytes_read"])
        assert 0.05 < row["hit_efficiency"] < 0.99  # a trace where capacity matters
    assert worst["lru"] < 1e-6
    assert worst["lfu"] <= 0.005 and worst["arc"] <= 0.005, worst


def _run(policy, reqs, cap, **kw):
    t = np.array([r[0] for r in reqs], dtype=np.float64)
    key = np.array([r[1] for r in reqs], dtype=np.int64)
    size = np.array([r[2] for r in reqs], dtype=np.int64)
    st = CacheState(policy, cap, 1, **kw)
    st.reserve(int(key.max()) + 1, 1)
    zeros = np.zeros(len(key), np.int64)
    st.run(t, key, zeros, size, size, zeros)
    return st


def test_xcache_purge_known_answer():
    # 100-byte disk, 10-byte files, watermarks 0.5/0.9, purge every 100 s of log time (first at t=100)
    reqs = [(float(i), i, 10) for i in range(10)]   # t=0..9: f0..f9 fill the disk (100 B)
    reqs += [(10.0, 10, 10)]                         # disk full: f10 served, not written
    reqs += [(100.0, 1, 10)]                         # purge 1 first: candidates f0..f4 (50 B), all read
    #                                                  since the start -> protected, nothing removed; hit
    reqs += [(150.0, 11, 10)]                        # still full: not written
    reqs += [(200.0, 0, 10)]                         # purge 2: candidates f0,f2,f3,f4,f5 (f1 was read at
    #                                                  t=100, it is newer) none read since purge 1: removed
    reqs += [(201.0, 2, 10), (202.0, 6, 10), (203.0, 1, 10)]
    st = _run("xcache", reqs, 100, high=0.9, low=0.5, purge_interval=100)
    acc, hits, b, bh = st.counts[0].tolist()
    assert (acc, hits) == (17, 3) and bh == 30 and b == 170
    x = st.extra()
    assert (x["purges"], x["files_purged"], x["bytes_purged"]) == (2, 5, 50)
    assert x["not_written_disk_full"] == 2 and x["protected_skipped"] == 5
    assert st.used[0] == 70


@pytest.mark.parametrize("policy", POLICIES)
def test_file_larger_than_cache_is_not_admitted(policy):
    reqs = [(0.0, 0, 50), (1.0, 1, 150), (2.0, 1, 150), (3.0, 0, 50)]
    st = _run(policy, reqs, 100)
    assert st.counts[0, :2].tolist() == [4, 1]  # only the second read of file 0 hits


def test_per_server_areas_are_independent_caches(trace_csv, tmp_path):
    path = trace_csv(20_000, 3_000, servers=3)
    cap = [200_000_000]
    per = simulate([(str(path), "csv")], SimulateOptions(capacities=cap, policies=["lru", "arc"], areas="per-server"))
    lines = path.read_text().splitlines()
    hits = {"lru": 0, "arc": 0}
    for s in range(3):
        sub = tmp_path / f"s{s}.csv"
        sub.write_text("\n".join([lines[0]] + [ln for ln in lines[1:] if ln.endswith(f",fs{s}")]) + "\n")
        one = simulate([(str(sub), "csv")], SimulateOptions(capacities=cap, policies=["lru", "arc"]))
        for row in one["configurations"]:
            hits[row["policy"]] += row["hits"]
    assert {r["policy"]: r["hits"] for r in per["configurations"]} == hits
    assert per["configurations"][0]["n_areas"] == 3
