"""Scheduler properties: every requested directed path exactly once, rounds are matchings, both
directions of a pair share a round, and the round counts the module promises."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings, strategies as st

from advisor.util.errors import SiteFileError
from advisor.mesh.schedule import (
    PathRequest,
    circle_rounds,
    edge_rounds,
    expand_pairs,
    latin_rounds,
    mesh_schedule,
    schedule_method,
)
from advisor.site.model import Site


def check_rounds(requested: list[tuple[str, str]], rounds: list[list[tuple[str, str]]]) -> None:
    flat = [d for r in rounds for d in r]
    assert sorted(flat) == sorted(set(requested)), "every requested directed path exactly once"
    for r in rounds:
        pairs = {frozenset(d) for d in r}
        hosts = [h for e in pairs for h in e]
        assert len(hosts) == len(set(hosts)), f"a host is in two tests of round {r}"
    where = {}
    for i, r in enumerate(rounds):
        for d in r:
            where.setdefault(frozenset(d), set()).add(i)
    assert all(len(v) == 1 for v in where.values()), "both directions of a pair in the same round"


def names(n: int, prefix: str = "h") -> list[str]:
    return [f"{prefix}{i:02d}" for i in range(n)]


@given(st.integers(min_value=2, max_value=24))
def test_full_mesh_round_count(n):
    hosts = names(n)
    req = [(a, b) for a, b in itertools.permutations(hosts, 2)]
    rounds = mesh_schedule(req)
    check_rounds(req, rounds)
    assert len(rounds) == (n - 1 if n % 2 == 0 else n)


@given(st.integers(min_value=1, max_value=12), st.integers(min_value=1, max_value=12), st.booleans())
def test_bipartite_round_count(na, nb, both):
    a, b = names(na, "a"), names(nb, "b")
    req = [(x, y) for x in a for y in b] + ([(y, x) for x in a for y in b] if both else [])
    rounds = mesh_schedule(req)
    check_rounds(req, rounds)
    assert len(rounds) == max(na, nb)


def _degree_bound(req):
    deg = {}
    for e in {frozenset(d) for d in req}:
        for h in e:
            deg[h] = deg.get(h, 0) + 1
    return max(deg.values())


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 11), st.integers(0, 11)).filter(lambda t: t[0] != t[1]),
                min_size=1, max_size=60))
def test_arbitrary_requests_within_delta_plus_one(edges):
    req = [(f"h{a}", f"h{b}") for a, b in edges]
    rounds = mesh_schedule(req)
    check_rounds(req, rounds)
    delta = _degree_bound(req)
    assert delta <= len(rounds) <= delta + 1


@settings(max_examples=150, deadline=None)
@given(st.integers(2, 9), st.integers(1, 6), st.integers(1, 4))
def test_mixed_group_requests(nw, ns, nd):
    """IFCA-like mixes: worker mesh + worker x storage + door x storage + storage mesh."""
    w, s, d = names(nw, "wn"), names(ns, "gpfs"), names(nd, "se")
    und = list(itertools.combinations(w, 2)) + list(itertools.combinations(s, 2))
    und += [(x, y) for x in w for y in s] + [(x, y) for x in d for y in s]
    req = und + [(b, a) for a, b in und]
    rounds = mesh_schedule(req)
    check_rounds(req, rounds)
    delta = _degree_bound(req)
    assert delta <= len(rounds) <= delta + 1


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 7), st.integers(8, 15)), min_size=1, max_size=40))
def test_bipartite_subgraphs_are_optimal(edges):
    req = [(f"h{a}", f"h{b}") for a, b in edges]
    rounds = mesh_schedule(req)
    check_rounds(req, rounds)
    assert len(rounds) == _degree_bound(req)  # Kőnig: Δ colours


def test_disconnected_groups_run_side_by_side():
    a, b = names(4, "a"), names(6, "b")
    req = list(itertools.permutations(a, 2)) + list(itertools.permutations(b, 2))
    rounds = mesh_schedule(req)
    check_rounds(req, rounds)
    assert len(rounds) == 5  # max(3, 5)


def test_constructions():
    assert len(circle_rounds(names(16))) == 15
    assert len(circle_rounds(names(5))) == 5
    assert len(latin_rounds(names(3, "a"), names(7, "b"))) == 7
    assert schedule_method([frozenset(e) for e in itertools.combinations(names(6), 2)]) == ["circle"]
    assert schedule_method([frozenset((x, y)) for x in names(2, "a") for y in names(3, "b")]) == ["latin"]


def test_forward_first_and_order():
    rounds = mesh_schedule([PathRequest("gpfs01", "wn01"), PathRequest("wn01", "gpfs01")])
    assert rounds == [[("gpfs01", "wn01"), ("wn01", "gpfs01")]]


def test_self_path_rejected():
    with pytest.raises(ValueError):
        mesh_schedule([("a", "a")])


def ifca_site(**mesh) -> Site:
    hosts = [
        {"name": "gpfs01", "roles": ["storage"], "groups": ["gpfs"], "link_rate": "1gbit"},
        {"name": "gpfs02", "roles": ["storage"], "groups": ["gpfs"], "link_rate": "1gbit"},
        {"name": "se01", "roles": ["door"], "groups": ["doors"], "link_rate": "10gbit"},
    ] + [{"name": f"wn0{i}", "roles": ["worker"], "groups": ["wn"], "link_rate": "1gbit"} for i in range(1, 5)]
    pairs = mesh.pop("pairs", [
        {"a": "gpfs"}, {"a": "doors", "b": "gpfs"}, {"a": "wn"}, {"a": "wn", "b": "gpfs"},
    ])
    return Site.model_validate({"name": "ifca", "hosts": hosts, "mesh": {"pairs": pairs, **mesh}})


def test_expand_ifca_pairs():
    site = ifca_site()
    req = expand_pairs(site)
    keys = [(r.src, r.dst) for r in req]
    assert len(keys) == len(set(keys)) == 2 * (1 + 2 + 6 + 8)
    assert ("gpfs01", "wn03") in keys and ("wn03", "gpfs01") in keys
    # the slower end's link rate: se01 has 10G, gpfs 1G
    r = next(r for r in req if (r.src, r.dst) == ("se01", "gpfs01"))
    assert r.expected_bps == 10**9 and r.expected_source == "link_rate"
    check_rounds(keys, mesh_schedule(req))
    assert len(mesh_schedule(req)) == 6  # Δ: gpfs0x meets 1 + 1 + 4 hosts


def test_expand_forward_exclude_and_expected():
    site = ifca_site(pairs=[{"a": "storage", "b": "worker", "direction": "forward", "exclude": ["wn04"],
                             "expected_rate": "900mbit"}])
    req = expand_pairs(site)
    assert {(r.src, r.dst) for r in req} == {(g, w) for g in ("gpfs01", "gpfs02") for w in ("wn01", "wn02", "wn03")}
    assert all(r.expected_bps == 900_000_000 and r.expected_source == "pair" for r in req)


def test_expand_unknown_rate_uses_nic_speed_or_none():
    site = Site.model_validate({"name": "x", "hosts": [{"name": "a", "groups": ["g"]}, {"name": "b", "groups": ["g"]}],
                                "mesh": {"pairs": [{"a": "g"}]}})
    assert all(r.expected_bps is None for r in expand_pairs(site))
    req = expand_pairs(site, nic_speeds={"a": 10**10, "b": 10**9})
    assert all(r.expected_bps == 10**9 and r.expected_source == "nic_speed" for r in req)


def test_expand_unknown_group_is_a_site_error():
    site = ifca_site(pairs=[{"a": "nosuch"}])
    with pytest.raises(SiteFileError, match="nosuch"):
        expand_pairs(site)


def test_large_mesh_is_fast():
    import time
    hosts = names(200)
    t = time.monotonic()
    rounds = edge_rounds(frozenset(e) for e in itertools.combinations(hosts, 2))
    assert len(rounds) == 199 and time.monotonic() - t < 5


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9)).filter(lambda t: t[0] != t[1]),
                min_size=1, max_size=45))
def test_misra_gries_alone_is_proper_with_delta_plus_one(edges):
    from advisor.mesh.edge_colouring import _colour_misra_gries, _graph

    es = sorted({frozenset((f"h{a}", f"h{b}")) for a, b in edges}, key=sorted)
    adj = _graph(es)
    colour = _colour_misra_gries(es, adj)
    assert set(colour) == set(es)
    delta = max(len(v) for v in adj.values())
    assert max(colour.values()) <= delta  # colours 0..Δ
    for v in adj:
        used = [c for e, c in colour.items() if v in e]
        assert len(used) == len(set(used))


def test_dense_mixed_mesh_costs_n_squared_look_ups(monkeypatch):
    """A worker mesh plus storage <-> worker paths (no storage mesh): neither complete nor
    bipartite. Some host meets every other, so the circle method's rounds, with the pairs not
    requested left out, are optimal; they cost one look-up per pair of hosts (N²/2), never the
    colourings' pairs × Δ (a 2,000-worker mesh took over 10 minutes that way)."""
    from advisor.mesh import edge_colouring

    def forbidden(*_a, **_k):
        raise AssertionError("a colouring ran on a graph the circle method covers")

    for name in ("_colour_greedy", "_colour_misra_gries", "_colour_bipartite"):
        monkeypatch.setattr(edge_colouring, name, forbidden)
    examined = []
    real_circle = edge_colouring.circle_rounds

    def counting_circle(nodes):
        rounds = real_circle(nodes)
        examined.append(sum(len(r) for r in rounds))
        return rounds

    monkeypatch.setattr(edge_colouring, "circle_rounds", counting_circle)
    w, s = names(300, "wn"), names(10, "se")  # N = 310 hosts
    und = list(itertools.combinations(w, 2)) + [(x, y) for x in s for y in w]
    req = und + [(b, a) for a, b in und]
    rounds = mesh_schedule(req)
    check_rounds(req, rounds)
    assert len(rounds) == _degree_bound(req) == 309  # a worker meets every other host: optimal
    assert examined == [310 * 309 // 2]  # one look-up per pair of hosts, once
    assert schedule_method(frozenset(e) for e in und) == ["circle-subset"]
