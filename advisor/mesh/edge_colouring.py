"""Host pairs packed into rounds: proper edge colourings of the request graph.

Every round is a matching (no host in two pairs of it). Round counts, with Δ the largest number
of hosts one host is paired with (a lower bound):

* a complete graph on N hosts (a full mesh): N-1 rounds for even N, N for odd N (circle
  method; optimal);
* a complete bipartite graph A×B: max(|A|, |B|) rounds (Latin square; optimal);
* any other bipartite graph: Δ rounds (Kőnig's alternating-path colouring; optimal);
* a graph in which some host is paired with every other (a worker mesh plus storage <-> worker
  paths, say) on an even number N of hosts: the circle method's rounds with the pairs not
  requested left out, N-1 = Δ rounds (optimal), at the cost of N²/2 pair look-ups; on an odd
  N, or when Δ is one short, the same gives at most Δ+1 rounds, and is used when a colouring
  below does not reach Δ or the graph has over 200,000 pairs;
* anything else (mixed requests with odd cycles): Δ rounds when one of a bounded number of
  first-fit colourings (by decreasing degree, then seeded shuffles) reaches Δ, else at most
  Δ+1 rounds (Misra-Gries edge colouring): never more than one round above the optimum.

Disconnected parts of the request graph are coloured separately and run side by side.

Cost: building the graph and its parts is linear in the pairs; the constructions are linear in
the pairs (circle, Latin) or N²/2 look-ups (circle with gaps); a first-fit colouring is linear in
the pairs (the colours of a host are the bits of an integer); Kőnig and Misra-Gries cost up to
pairs × N and run only where nothing cheaper applies. A mixed 2,000-worker mesh (4 million
paths): ``mesh plan`` in ~15 s (docs/performance.md).
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterable, Sequence

Edge = frozenset  # of two host names
#: above this many pairs, a part that the circle method colours within Δ+1 rounds is not
#: coloured greedily in the hope of Δ (sorting and colouring a million pairs takes seconds)
_GREEDY_EDGES = 200_000


def _graph(edges: Iterable[Edge]) -> dict[str, set[str]]:
    adj: dict[str, set[str]] = defaultdict(set)
    for e in edges:
        u, v = e
        adj[u].add(v)
        adj[v].add(u)
    return adj


def _components(adj: dict[str, set[str]]) -> list[list[str]]:
    """The connected parts, each as its sorted host names, ordered by their first name."""
    seen: set[str] = set()
    comps = []
    for start in sorted(adj):
        if start in seen:
            continue
        comp, stack = [start], [start]
        seen.add(start)
        while stack:
            for w in adj[stack.pop()]:
                if w not in seen:
                    seen.add(w)
                    comp.append(w)
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
    """First-fit colouring of the edges in the given order. The colours used at a host are the
    bits of an integer: the lowest colour free at both ends is one bit operation, not a scan of
    up to Δ colours."""
    used: dict[str, int] = defaultdict(int)
    colour: dict[Edge, int] = {}
    for e in order:
        u, v = e
        taken = used[u] | used[v]
        bit = ~taken & (taken + 1)  # the lowest zero bit
        colour[e] = bit.bit_length() - 1
        used[u] |= bit
        used[v] |= bit
    return colour


def _rounds_from_colouring(colour: dict[Edge, int]) -> list[list[Edge]]:
    n = max(colour.values()) + 1 if colour else 0
    rounds: list[list[Edge]] = [[] for _ in range(n)]
    for e, c in colour.items():
        rounds[c].append(e)
    return [sorted(r, key=sorted) for r in rounds if r]


def circle_subset_rounds(nodes: Sequence[str], adj: dict[str, set[str]]) -> list[list[Edge]]:
    """The circle method's rounds on ``nodes`` keeping only the pairs in ``adj``: a proper
    colouring of any graph on those nodes with at most N-1 (even N) or N (odd N) rounds."""
    out = []
    for rnd in circle_rounds(nodes):
        kept = []
        for e in rnd:
            u, v = e
            if v in adj[u]:
                kept.append(e)
        if kept:
            out.append(kept)
    return out


def _component_rounds(nodes: list[str], edges: list[Edge], adj: dict[str, set[str]]) -> tuple[list[list[Edge]], str]:
    n = len(nodes)
    if len(edges) == n * (n - 1) // 2:
        return circle_rounds(nodes), "circle"
    parts = _bipartition(nodes, adj)
    if parts is not None:
        a, b = parts
        if len(edges) == len(a) * len(b):
            return latin_rounds(a, b), "latin"
        return _rounds_from_colouring(_colour_bipartite(sorted(edges, key=sorted), adj)), "konig"
    delta = max(len(adj[v]) for v in nodes)
    circle_bound = n - 1 if n % 2 == 0 else n
    if circle_bound <= delta:
        # some host meets every other (N even): the circle's rounds are optimal
        return circle_subset_rounds(nodes, adj), "circle-subset"
    if circle_bound <= delta + 1 and len(edges) > _GREEDY_EDGES:
        # within one round of the optimum at N²/2 look-ups; the colourings would cost more
        return circle_subset_rounds(nodes, adj), "circle-subset"
    edges = sorted(edges, key=sorted)
    # greedy colourings from a few orders (deterministic); one that reaches Δ is optimal
    rng = random.Random(len(edges) * 7919 + len(nodes))
    order = sorted(edges, key=lambda e: (-sum(len(adj[x]) for x in e), sorted(e)))
    attempts = max(1, min(64, 2_000_000 // len(edges)))
    best: dict[Edge, int] | None = None
    for _ in range(attempts):
        greedy = _colour_greedy(order, adj)
        if best is None or max(greedy.values()) < max(best.values()):
            best = greedy
        if max(best.values()) + 1 <= delta:
            return _rounds_from_colouring(best), "greedy"
        order = list(edges)
        rng.shuffle(order)
    if max(best.values()) + 1 <= delta + 1:
        return _rounds_from_colouring(best), "greedy"
    if circle_bound <= delta + 1:
        return circle_subset_rounds(nodes, adj), "circle-subset"
    return _rounds_from_colouring(_colour_misra_gries(edges, adj)), "misra-gries"


def schedule_edges(edges: Iterable[Edge]) -> tuple[list[list[Edge]], list[str]]:
    """Undirected host pairs packed into rounds (matchings), and which construction each
    connected part of the request graph used."""
    if not isinstance(edges, (set, frozenset, dict)):  # a dict's keys, like a set, are each once
        edges = set(edges)
    for e in edges:
        if len(e) != 2:
            raise ValueError(f"a path needs two distinct hosts, got {sorted(e)}")
    adj = _graph(edges)
    comps = _components(adj)
    if len(comps) == 1:
        comp_edges = [list(edges)]
    else:
        part_of = {v: i for i, comp in enumerate(comps) for v in comp}
        comp_edges = [[] for _ in comps]
        for e in edges:
            comp_edges[part_of[next(iter(e))]].append(e)
    merged: list[list[Edge]] = []
    methods = []
    for comp, ce in zip(comps, comp_edges):
        rounds, method = _component_rounds(comp, ce, adj)
        methods.append(method)
        for i, r in enumerate(rounds):
            if i == len(merged):
                merged.append([])
            merged[i].extend(r)
    return merged, methods


def edge_rounds(edges: Iterable[Edge]) -> list[list[Edge]]:
    """Undirected host pairs packed into rounds (matchings); see the module docstring."""
    return schedule_edges(edges)[0]


def schedule_method(edges: Iterable[Edge]) -> list[str]:
    """Which construction each connected part of the request graph used (for ``mesh plan``)."""
    return schedule_edges(edges)[1]
