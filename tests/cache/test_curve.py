"""The one-pass LRU curve equals per-capacity LRU runs; SHARDS sampling's error is measured."""

from __future__ import annotations

import numpy as np

from advisor.cache.curve import StackCurve
from advisor.cache.simulate import CURVE_GRID, SimulateOptions, knee, simulate


def test_curve_equals_lru_runs_at_every_capacity(trace_csv):
    path = trace_csv(40_000, 8_000, alpha=0.8)
    caps = [30_000_000, 300_000_000, 3_000_000_000, 30_000_000_000]
    res = simulate([(str(path), "csv")], SimulateOptions(capacities=caps, policies=["lru"], curve=True))
    cv = res["curve"]
    assert cv["exact_from_bytes"] <= min(caps)
    for row, at in zip(res["configurations"], cv["at_capacities"]):
        assert at["capacity_bytes"] == row["capacity_bytes"]
        assert abs(at["hit_efficiency"] - row["hit_efficiency"]) < 1e-6
        assert abs(at["transfer_efficiency"] - row["transfer_efficiency"]) < 1e-6
    he = np.array(cv["hit_efficiency"])
    assert (np.diff(he) >= -1e-12).all() and he[-1] > he[0]  # monotone in capacity
    assert min(caps) < cv["knee"]["capacity_bytes"] < max(cv["capacities_bytes"])
    assert set(cv["by_type"]) == {"AOD", "MiniAOD", "NanoAOD", "RAW"}


def test_tree_compaction_and_growth_keep_distances():
    # 20 000 distinct keys through a 4096-slot tree: compactions and doublings on the way
    rng = np.random.default_rng(3)
    key = rng.integers(0, 20_000, 200_000).astype(np.int64)
    size = (key % 97 + 1).astype(np.int64)
    caps = np.array([500.0, 5_000.0, 50_000.0, 500_000.0])
    c = StackCurve(caps, 1)
    c.reserve(20_000)
    for a in range(0, len(key), 30_000):
        sl = slice(a, a + 30_000)
        c.run(key[sl], size[sl], size[sl], np.zeros(len(key[sl]), np.int64))
    assert len(c.tree) >= 16384
    # reference: explicit LRU stack distances in bytes, by brute force on a prefix
    n = 6_000
    last: dict[int, int] = {}
    ref = np.zeros(len(caps) + 1, np.int64)
    c2 = StackCurve(caps, 1)
    c2.reserve(20_000)
    c2.run(key[:n], size[:n], size[:n], np.zeros(n, np.int64))
    order: list[int] = []
    for i in range(n):
        k = int(key[i])
        if k in last:
            idx = order.index(k)
            # order holds distinct keys by last access: sizes of k and everything after it
            d = sum(int(k2 % 97 + 1) for k2 in order[idx:])
            ref[np.searchsorted(caps, d)] += 1
            order.pop(idx)
        else:
            ref[-1] += 1
        order.append(k)
        last[k] = i
    assert c2.counts[0, :, 0].tolist() == ref.tolist()


def test_sampled_curve_error_against_exact(trace_csv):
    path = trace_csv(150_000, 30_000, alpha=0.7, min_size=100_000, max_size=2_000_000)
    caps = [1_000_000_000, 10_000_000_000]
    exact = simulate([(str(path), "csv")], SimulateOptions(capacities=caps, curve=True))["curve"]
    samp = simulate([(str(path), "csv")], SimulateOptions(capacities=caps, curve=True, sample=0.1))["curve"]
    assert samp["sample_rate"] == 0.1 and samp["exact_from_bytes"] is None
    n = min(len(exact["capacities_bytes"]), len(samp["capacities_bytes"]))
    e = np.array(exact["hit_efficiency"][:n])
    s = np.array(samp["hit_efficiency"][:n])
    caps_grid = np.array(exact["capacities_bytes"][:n])
    big = caps_grid >= 10 * 2_000_000 / 0.1  # capacity of the sampled cache >= 10 files
    err = np.abs(e - s)[big]
    print(f"SHARDS R=0.1: max |error| {err.max():.4f}, mean {err.mean():.4f} over {big.sum()} capacities")
    assert err.max() < 0.03


def test_knee_of_a_saturating_curve():
    caps = CURVE_GRID[:40]
    eff = np.minimum(1.0, np.log10(caps / caps[0]) / 2.5)
    k = knee(caps, eff)
    assert abs(np.log10(caps[k] / caps[0]) - 2.5) < 0.2
