"""What the mesh measures and in which rounds.

``expand_pairs(site)`` turns the site file's ``mesh.pairs`` requests into directed paths with
their expected rates; ``mesh_schedule(paths)`` packs them into rounds. Every round is a
matching: no host takes part in two tests of the same round, and the two directions of a host
pair are always in the same round (one ``--bidir`` test, or the reverse right after the
forward test in the same slot).

How many rounds, and at what cost: ``advisor.mesh.edge_colouring``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Iterable, Sequence

from advisor.util.errors import SiteFileError
from advisor.util.gc_paused import gc_paused
from advisor.mesh.edge_colouring import (  # noqa: F401  (circle_rounds ... re-exported for callers)
    Edge,
    circle_rounds,
    edge_rounds,
    latin_rounds,
    schedule_edges,
    schedule_method,
)
from advisor.site.host_patterns import host_pattern
from advisor.site.model import Host, MeshPair, Site


@dataclass(frozen=True, slots=True)
class PathRequest:
    """One directed path to measure: ``src`` sends, ``dst`` receives. (Slots: a 2,000-host mesh
    holds 4 million of them.)"""

    src: str
    dst: str
    #: bits/s the path should reach, or None (judged relative to the other paths)
    expected_bps: int | None = None
    #: where the expected rate came from: "pair", "link_rate" or None
    expected_source: str | None = None


def _select(site: Site, selector: str, exclude: Sequence[str], where: str) -> list[Host]:
    hosts = site.hosts_in(selector)
    if not hosts:
        groups = ", ".join(sorted(site.groups)) or "none"
        raise SiteFileError(
            site.source or site.name,
            f"mesh pair {where}: {selector!r} is no group, role or host of the site (groups: {groups})",
            field="mesh.pairs",
        )
    return [h for h in hosts if not any(host_pattern(p).matches(h) for p in exclude)]


def expected_rate(src: Host, dst: Host, pair: MeshPair | None = None) -> tuple[int | None, str | None]:
    """The rate a path should reach: the pair's ``expected_rate``, else the slower end's link rate."""
    if pair is not None and pair.expected_rate:
        return pair.expected_rate, "pair"
    rates = [r for r in (src.link_rate, dst.link_rate) if r]
    if rates:
        return min(rates), "link_rate"
    return None, None


def expand_pairs(site: Site, nic_speeds: dict[str, int] | None = None) -> list[PathRequest]:
    """The directed paths the site's mesh section asks for, in request order, each once.

    ``nic_speeds`` (host -> bits/s, e.g. from the network probe's link speed) is used when a host
    has no ``link_rate`` in the site file. A directed path requested twice keeps the first
    request's expected rate.
    """
    if site.mesh is None:
        return []
    with gc_paused(freeze=True):  # millions of small objects at Tier-1 size, none in a cycle
        return _expand(site, nic_speeds or {})


def _expand(site: Site, nic_speeds: dict[str, int]) -> list[PathRequest]:
    assert site.mesh is not None
    out: dict[tuple[str, str], PathRequest] = {}
    for i, pair in enumerate(site.mesh.pairs):
        where = f"#{i + 1}"
        a_hosts = _select(site, pair.a, pair.exclude, where)
        both = pair.direction == "both"
        if pair.b is None:
            # full mesh inside one group: each unordered pair once, both directions unless forward
            host_pairs: Iterable[tuple[Host, Host]] = itertools.combinations(a_hosts, 2)
        else:
            host_pairs = itertools.product(a_hosts, _select(site, pair.b, pair.exclude, where))
        for ha, hb in host_pairs:
            src, dst = ha.name, hb.name
            forward = (src, dst)
            backward = (dst, src)
            new_forward = forward not in out
            new_backward = both and backward not in out
            if src == dst or not (new_forward or new_backward):
                continue
            # the expected rate does not depend on the direction: computed once per host pair
            rate, source = expected_rate(ha, hb, pair)
            if rate is None:
                speeds = [s for s in (nic_speeds.get(src), nic_speeds.get(dst)) if s]
                if speeds:
                    rate, source = min(speeds), "nic_speed"
            if new_forward:
                out[forward] = PathRequest(src, dst, rate, source)
            if new_backward:
                out[backward] = PathRequest(dst, src, rate, source)
    return list(out.values())


def mesh_schedule(paths: Iterable[PathRequest | tuple[str, str]]) -> list[list[tuple[str, str]]]:
    """Directed paths packed into rounds.

    Each round is a list of ``(src, dst)``; no host appears in two host pairs of a round, both
    requested directions of a host pair are in the same round (forward first: the direction in
    which the pair was first requested), and every requested directed path appears exactly once.
    """
    return mesh_plan(paths)[0]


def mesh_plan(paths: Iterable[PathRequest | tuple[str, str]]) -> tuple[list[list[tuple[str, str]]], list[str]]:
    """``mesh_schedule``'s rounds and the construction each connected part of the request graph
    used (``advisor.mesh.edge_colouring``), computed once."""
    with gc_paused(freeze=True):
        by_edge: dict[Edge, list[tuple[str, str]]] = {}  # host pair -> its directions, first request first
        first: dict[Edge, int] = {}  # the request index of a host pair's first direction
        for i, p in enumerate(paths):
            key = (p.src, p.dst) if isinstance(p, PathRequest) else (p[0], p[1])
            if key[0] == key[1]:
                raise ValueError(f"a path needs two distinct hosts, got {key[0]} -> {key[1]}")
            e = frozenset(key)
            found = by_edge.get(e)
            if found is None:
                by_edge[e] = [key]
                first[e] = i
            elif key not in found:  # at most two directions
                found.append(key)
        edge_rounds_, methods = schedule_edges(by_edge)
        rounds = []
        for rnd in edge_rounds_:
            rnd.sort(key=first.__getitem__)
            rounds.append([d for e in rnd for d in by_edge[e]])
        return rounds, methods
