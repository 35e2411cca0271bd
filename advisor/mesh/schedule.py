"""What the mesh measures and in which rounds.

``expand_pairs(site)`` turns the site file's ``mesh.pairs`` requests into directed paths with
their expected rates; ``mesh_schedule(paths)`` packs them into rounds. Every round is a
matching: no host takes part in two tests of the same round, and the two directions of a host
pair are always in the same round (one ``--bidir`` test, or the reverse right after the
forward test in the same slot).

Round counts (Δ = the largest number of hosts any one host is tested with, a lower bound):

* a complete graph on N hosts (a full mesh): N-1 rounds for even N, N for odd N (circle
  method; optimal);
* a complete bipartite graph A×B: max(|A|, |B|) rounds (Latin square; optimal);
* any other bipartite graph: Δ rounds (Kőnig's alternating-path colouring; optimal);
* anything else (mixed requests with odd cycles): Δ rounds when one of a bounded number of
  first-fit colourings (by decreasing degree, then seeded shuffles) reaches Δ, else at most
  Δ+1 rounds (Misra-Gries edge colouring): never more than one round above the optimum.

Disconnected parts of the request graph are coloured separately and run side by side.
"""

from __future__ import annotations

import fnmatch
import random
from collections import defaultdict
from dataclasses import dataclass
from typing import Iterable, Sequence

from advisor.errors import SiteFileError
from advisor.site import Host, MeshPair, Site

Edge = frozenset  # of two host names


@dataclass(frozen=True)
class PathRequest:
    """One directed path to measure: ``src`` sends, ``dst`` receives."""

    src: str
    dst: str
    #: bits/s the path should reach, or None (judged relative to the other paths)
    expected_bps: int | None = None
    #: where the expected rate came from: "pair", "link_rate" or None
    expected_source: str | None = None


def _excluded(name: str, patterns: Sequence[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def _select(site: Site, selector: str, exclude: Sequence[str], where: str) -> list[Host]:
    hosts = site.hosts_in(selector)
    if not hosts:
        groups = ", ".join(sorted(site.groups)) or "none"
        raise SiteFileError(
            site.source or site.name,
            f"mesh pair {where}: {selector!r} is no group, role or host of the site (groups: {groups})",
            field="mesh.pairs",
        )
    return [h for h in hosts if not _excluded(h.name, exclude)]


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
    nic_speeds = nic_speeds or {}
    out: dict[tuple[str, str], PathRequest] = {}
    for i, pair in enumerate(site.mesh.pairs):
        where = f"#{i + 1}"
        a_hosts = _select(site, pair.a, pair.exclude, where)
        if pair.b is None:
            b_hosts = a_hosts
        else:
            b_hosts = _select(site, pair.b, pair.exclude, where)
        directed: list[tuple[Host, Host]] = []
        if pair.b is None:
            # full mesh inside one group: each unordered pair once, both directions unless forward
            for x, ha in enumerate(a_hosts):
                for hb in a_hosts[x + 1:]:
                    directed.append((ha, hb))
                    if pair.direction == "both":
                        directed.append((hb, ha))
        else:
            for ha in a_hosts:
                for hb in b_hosts:
                    if ha.name == hb.name:
                        continue
                    directed.append((ha, hb))
                    if pair.direction == "both":
                        directed.append((hb, ha))
        for src, dst in directed:
            key = (src.name, dst.name)
            if key in out:
                continue
            rate, source = expected_rate(src, dst, pair)
            if rate is None:
                speeds = [s for s in (nic_speeds.get(src.name), nic_speeds.get(dst.name)) if s]
                if speeds:
                    rate, source = min(speeds), "nic_speed"
            out[key] = PathRequest(src.name, dst.name, rate, source)
    return list(out.values())


# ----------------------------------------------------------------------------- colouring


def _graph(edges: Iterable[Edge]) -> dict[str, set[str]]:
    adj: dict[str, set[str]] = defaultdict(set)
    for e in edges:
        u, v = tuple(e)
        adj[u].add(v)
        adj[v].add(u)
    return adj


def _components(adj: dict[str, set[str]]) -> list[list[str]]:
    seen: set[str] = set()
    comps = []
    for start in sorted(adj):
        if start in seen:
            continue
        comp, stack = [], [start]
        seen.add(start)
        while stack:
            v = stack.pop()
            comp.append(v)
            for w in sorted(adj[v]):
                if w not in seen:
                    seen.add(w)
                    stack.append(w)
        comps.append(sorted(comp))
    return comps


def _bipartition(nodes: list[str], adj: dict[str, set[str]]) -> tuple[list[str], list[str]] | None:
    side: dict[str, int] = {}
    for s in nodes:
        if s in side:
            continue
        side[s] = 0
        stack = [s]
        while stack:
            v = stack.pop()
            for w in adj[v]:
                if w not in side:
                    side[w] = 1 - side[v]
                    stack.append(w)
                elif side[w] == side[v]:
                    return None
    a = [n for n in nodes if side[n] == 0]
    b = [n for n in nodes if side[n] == 1]
    return a, b


def circle_rounds(nodes: Sequence[str]) -> list[list[Edge]]:
    """Round-robin (circle method) rounds of the complete graph on ``nodes``."""
    players: list[str | None] = list(nodes)
    if len(players) < 2:
        return []
    if len(players) % 2:
        players.append(None)  # a bye: the host paired with it sits the round out
    n = len(players)
    rounds = []
    for _ in range(n - 1):
        rnd = []
        for i in range(n // 2):
            x, y = players[i], players[n - 1 - i]
            if x is not None and y is not None:
                rnd.append(frozenset((x, y)))
        rounds.append(rnd)
        players = [players[0], players[-1]] + players[1:-1]
    return rounds


def latin_rounds(a: Sequence[str], b: Sequence[str]) -> list[list[Edge]]:
    """max(|A|, |B|) rounds covering A×B: round r pairs a_i with b_(i+r mod m)."""
    if len(a) > len(b):
        a, b = b, a
    m = len(b)
    return [[frozenset((a[i], b[(i + r) % m])) for i in range(len(a))] for r in range(m)]


def _colour_bipartite(edges: list[Edge], adj: dict[str, set[str]]) -> dict[Edge, int]:
    """Kőnig: a proper edge colouring of a bipartite graph with Δ colours."""
    delta = max(len(n) for n in adj.values())
    at: dict[str, dict[int, str]] = defaultdict(dict)  # vertex -> colour -> neighbour
    colour: dict[Edge, int] = {}

    def free(v: str) -> int:
        return next(c for c in range(delta) if c not in at[v])

    for e in edges:
        u, v = sorted(e)
        a = free(u)
        if a in at[v]:
            b = free(v)
            # flip the a/b alternating path from v; in a bipartite graph it never reaches u
            path, x, c = [], v, a
            while c in at[x]:
                y = at[x][c]
                path.append((x, y, c))
                x, c = y, (b if c == a else a)
            for x, y, c in path:
                del at[x][c]
                del at[y][c]
            for x, y, c in path:
                nc = b if c == a else a
                at[x][nc] = y
                at[y][nc] = x
                colour[frozenset((x, y))] = nc
        at[u][a] = v
        at[v][a] = u
        colour[e] = a
    return colour


def _colour_misra_gries(edges: list[Edge], adj: dict[str, set[str]]) -> dict[Edge, int]:
    """Misra & Gries: a proper edge colouring with at most Δ+1 colours."""
    ncol = max(len(n) for n in adj.values()) + 1
    at: dict[str, dict[int, str]] = defaultdict(dict)
    colour: dict[Edge, int] = {}

    def free_on(v: str, c: int) -> bool:
        return c not in at[v]

    def some_free(v: str) -> int:
        return next(c for c in range(ncol) if c not in at[v])

    def set_colour(x: str, y: str, c: int) -> None:
        at[x][c] = y
        at[y][c] = x
        colour[frozenset((x, y))] = c

    def uncolour(x: str, y: str) -> None:
        c = colour.pop(frozenset((x, y)))
        del at[x][c]
        del at[y][c]

    for e in edges:
        u, v = sorted(e)
        # a maximal fan of u starting at v
        fan = [v]
        in_fan = {v}
        while True:
            last = fan[-1]
            nxt = None
            for c, w in sorted(at[u].items()):
                if w not in in_fan and free_on(last, c):
                    nxt = w
                    break
            if nxt is None:
                break
            fan.append(nxt)
            in_fan.add(nxt)
        c = some_free(u)
        d = some_free(fan[-1])
        if c != d:
            # invert the cd-path starting at u
            path, x, cur = [], u, d
            while cur in at[x]:
                y = at[x][cur]
                path.append((x, y, cur))
                x, cur = y, (c if cur == d else d)
            for x, y, cur in path:
                del at[x][cur]
                del at[y][cur]
                colour.pop(frozenset((x, y)))
            for x, y, cur in path:
                set_colour(x, y, c if cur == d else d)
        # the first w in the fan with d free on it; the prefix up to w is still a fan
        k = 0
        while True:
            w = fan[k]
            if free_on(w, d):
                break
            if k + 1 >= len(fan) or not free_on(w, colour[frozenset((u, fan[k + 1]))]):
                raise AssertionError("Misra-Gries invariant broken")  # pragma: no cover
            k += 1
        # rotate the fan prefix fan[0..k]
        for i in range(k):
            nc = colour[frozenset((u, fan[i + 1]))]
            uncolour(u, fan[i + 1])
            set_colour(u, fan[i], nc)
        set_colour(u, fan[k], d)
    return colour


def _colour_greedy(order: list[Edge], adj: dict[str, set[str]]) -> dict[Edge, int]:
    """First-fit colouring of the edges in the given order."""
    at: dict[str, set[int]] = defaultdict(set)
    colour: dict[Edge, int] = {}
    for e in order:
        u, v = tuple(e)
        c = 0
        while c in at[u] or c in at[v]:
            c += 1
        colour[e] = c
        at[u].add(c)
        at[v].add(c)
    return colour


def _rounds_from_colouring(colour: dict[Edge, int]) -> list[list[Edge]]:
    n = max(colour.values()) + 1 if colour else 0
    rounds: list[list[Edge]] = [[] for _ in range(n)]
    for e, c in colour.items():
        rounds[c].append(e)
    return [sorted(r, key=sorted) for r in rounds if r]


def _component_rounds(nodes: list[str], edges: list[Edge], adj: dict[str, set[str]]) -> tuple[list[list[Edge]], str]:
    n = len(nodes)
    if len(edges) == n * (n - 1) // 2:
        return circle_rounds(nodes), "circle"
    parts = _bipartition(nodes, adj)
    if parts is not None:
        a, b = parts
        if len(edges) == len(a) * len(b):
            return latin_rounds(a, b), "latin"
        return _rounds_from_colouring(_colour_bipartite(edges, adj)), "konig"
    delta = max(len(adj[v]) for v in nodes)
    # greedy colourings from a few orders (deterministic); one that reaches Δ is optimal
    rng = random.Random(len(edges) * 7919 + len(nodes))
    order = sorted(edges, key=lambda e: (-sum(len(adj[x]) for x in e), sorted(e)))
    attempts = max(1, min(64, 400_000 // max(1, len(edges) * delta)))
    for _ in range(attempts):
        greedy = _colour_greedy(order, adj)
        if max(greedy.values()) + 1 <= delta:
            return _rounds_from_colouring(greedy), "greedy"
        order = list(edges)
        rng.shuffle(order)
    return _rounds_from_colouring(_colour_misra_gries(edges, adj)), "misra-gries"


def edge_rounds(edges: Iterable[Edge]) -> list[list[Edge]]:
    """Undirected host pairs packed into rounds (matchings); see the module docstring."""
    edges = sorted({frozenset(e) for e in edges}, key=sorted)
    for e in edges:
        if len(e) != 2:
            raise ValueError(f"a path needs two distinct hosts, got {sorted(e)}")
    adj = _graph(edges)
    by_node = {}
    for comp in _components(adj):
        for v in comp:
            by_node[v] = tuple(comp)
    comp_edges: dict[tuple[str, ...], list[Edge]] = defaultdict(list)
    for e in edges:
        comp_edges[by_node[next(iter(e))]].append(e)
    merged: list[list[Edge]] = []
    for comp, ce in sorted(comp_edges.items()):
        rounds, _method = _component_rounds(list(comp), ce, adj)
        for i, r in enumerate(rounds):
            if i == len(merged):
                merged.append([])
            merged[i].extend(r)
    return merged


def schedule_method(edges: Iterable[Edge]) -> list[str]:
    """Which construction each connected part of the request graph used (for ``mesh plan``)."""
    edges = sorted({frozenset(e) for e in edges}, key=sorted)
    adj = _graph(edges)
    out = []
    for comp in _components(adj):
        ce = [e for e in edges if next(iter(e)) in comp]
        out.append(_component_rounds(comp, ce, adj)[1])
    return out


def mesh_schedule(paths: Iterable[PathRequest | tuple[str, str]]) -> list[list[tuple[str, str]]]:
    """Directed paths packed into rounds.

    Each round is a list of ``(src, dst)``; no host appears in two host pairs of a round, both
    requested directions of a host pair are in the same round (forward first: the direction in
    which the pair was first requested), and every requested directed path appears exactly once.
    """
    order: dict[tuple[str, str], int] = {}
    for i, p in enumerate(paths):
        key = (p.src, p.dst) if isinstance(p, PathRequest) else (p[0], p[1])
        if key[0] == key[1]:
            raise ValueError(f"a path needs two distinct hosts, got {key[0]} -> {key[1]}")
        order.setdefault(key, i)
    by_edge: dict[Edge, list[tuple[str, str]]] = defaultdict(list)
    for key in sorted(order, key=order.get):
        by_edge[frozenset(key)].append(key)
    rounds = []
    for rnd in edge_rounds(by_edge):
        slots = sorted(rnd, key=lambda e: order[by_edge[e][0]])
        rounds.append([d for e in slots for d in by_edge[e]])
    return rounds
