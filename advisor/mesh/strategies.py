"""Which of the requested mesh paths a run measures, for sites too large for a full mesh.

A full mesh of 2,000 hosts is 4 million directed paths. Each strategy keeps a subset that still
supports the diagnosis (a slow host shows up as slow towards every partner it is tested with):

* ``full``: every requested path (the default);
* ``bipartite``: only paths between a storage host and a worker (the traffic a grid site
  depends on), both directions as requested;
* ``sample``: each worker keeps ``k`` of its requested partners, drawn from a fixed seeded
  permutation of them and rotating with the run number: run r takes the r-th slice of ``k``, so
  after ceil(partners / k) runs every path has been measured once, and the history of runs
  fills the whole matrix;
* ``representative``: one host per rack or switch (the host variable named by ``group_by``,
  e.g. ``rack: r12`` in the site file; hosts without it stand for themselves), rotating with
  the run number, and only paths between representatives.

All strategies keep each kept path's expected rate, and filter the requests of
``advisor.mesh.schedule.expand_pairs``, so exclusions and directions of the site file hold.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections import defaultdict
from collections.abc import Sequence

from advisor.util.errors import UsageError
from advisor.mesh.schedule import PathRequest
from advisor.site.model import Site

STRATEGIES = ("full", "bipartite", "sample", "representative")


def _seed(*parts: str) -> int:
    return int.from_bytes(hashlib.sha256("\0".join(parts).encode()).digest()[:8], "big")


def _rotating_slice(items: Sequence[str], k: int, run: int, seed: int) -> list[str]:
    """The ``run``-th slice of ``k`` of a fixed shuffle of ``items`` (cyclic)."""
    if not items:
        return []
    order = sorted(items)
    random.Random(seed).shuffle(order)
    k = min(k, len(order))
    start = (run * k) % len(order)
    return [order[(start + i) % len(order)] for i in range(k)]


def runs_to_cover(site: Site, requests: list[PathRequest], strategy: str, k: int, group_by: str) -> int:
    """How many runs (run numbers 0, 1, ...) it takes for the rotation to have measured every
    path the strategy can reach."""
    if strategy == "sample":
        partners = _partners(site, requests)
        return max((math.ceil(len(p) / k) for p in partners.values() if p), default=1)
    if strategy == "representative":
        groups = _rack_groups(site, group_by)
        return max((len(members) for members in groups.values()), default=1)
    return 1


def _workers(site: Site) -> set[str]:
    return {h.name for h in site.hosts if h.has_role("worker")}


def _partners(site: Site, requests: list[PathRequest]) -> dict[str, list[str]]:
    """Worker -> the hosts it is requested with (either direction)."""
    workers = _workers(site)
    out: dict[str, set[str]] = defaultdict(set)
    for r in requests:
        if r.src in workers:
            out[r.src].add(r.dst)
        if r.dst in workers:
            out[r.dst].add(r.src)
    return {w: sorted(p) for w, p in out.items()}


def _rack_groups(site: Site, group_by: str) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = defaultdict(list)
    for h in site.hosts:
        value = h.vars.get(group_by)
        key = f"{group_by}={value}" if value not in (None, "") else f"host={h.name}"
        groups[key].append(h.name)
    return {k: sorted(v) for k, v in groups.items()}


def select_paths(site: Site, requests: list[PathRequest], strategy: str = "full", *, k: int = 2, run: int = 0,
                 group_by: str = "rack") -> list[PathRequest]:
    """The requests the strategy measures in run number ``run`` (request order kept)."""
    if strategy not in STRATEGIES:
        raise UsageError(f"unknown mesh strategy {strategy!r} (one of {', '.join(STRATEGIES)})")
    if k < 1:
        raise UsageError(f"--partners must be at least 1, got {k}")
    if run < 0:
        raise UsageError(f"--run must be 0 or more, got {run}")
    if strategy == "full":
        return list(requests)
    if strategy == "bipartite":
        storage = {h.name for h in site.hosts if h.has_role("storage")}
        workers = _workers(site)
        if not storage or not workers:
            raise UsageError("strategy 'bipartite' needs hosts with role storage and hosts with role worker")
        return [r for r in requests if (r.src in storage and r.dst in workers) or (r.src in workers and r.dst in storage)]
    if strategy == "sample":
        partners = _partners(site, requests)
        if not partners:
            raise UsageError("strategy 'sample' draws partners per worker: the mesh requests no path of a worker")
        chosen = {w: set(_rotating_slice(p, k, run, _seed(site.name, w))) for w, p in partners.items()}
        return [r for r in requests if r.dst in chosen.get(r.src, ()) or r.src in chosen.get(r.dst, ())]
    groups = _rack_groups(site, group_by)
    reps = {_rotating_slice(members, 1, run, _seed(site.name, key))[0] for key, members in groups.items()}
    return [r for r in requests if r.src in reps and r.dst in reps]


def estimated_wall_seconds(rounds: list[list[tuple[str, str]]], test_seconds: float, parallel: int | None,
                           per_round_overhead: float = 0.5) -> float:
    """Rounds run one after the other; a round of m tests with at most ``parallel`` at once takes
    ceil(m / parallel) test times, plus a start-up overhead per round (SSH, server start)."""
    total = 0.0
    for rnd in rounds:
        slots = math.ceil(len(rnd) / parallel) if parallel else 1
        total += slots * test_seconds + per_round_overhead
    return total
