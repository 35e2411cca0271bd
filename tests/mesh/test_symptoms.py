"""The mesh's symptom analysis over IFCA-shaped path sets and facts dicts in the network.sysctl / firewall shapes."""

from __future__ import annotations

import pytest

from advisor.model.findings import Change
from advisor.mesh import symptoms as dg
from advisor.mesh.results import judge_paths, summary
from advisor.paths.record import PathRecord
from tests.support.ifca_mesh import DROP_RULE, GPFS, WN, ifca_facts, ifca_paths, path, sysctl_facts

def test_slow_paths_are_exactly_storage_to_worker():
    ps = ifca_paths()
    slow = {(p["src"], p["dst"]) for p in dg.slow_paths(ps, 0.8)}
    assert slow == {(g, w) for g in GPFS for w in WN}
    s = summary({"paths": ps})
    assert s["failed"] == 2 and s["red"] == 8 and s["green"] == len(ps) - 10


def test_asymmetry_blames_the_storage_senders_and_names_tcp_sack():
    ps = ifca_paths()
    found = dg.find_asymmetries(ps, ifca_facts(), 0.8, groups={"gpfs": GPFS, "wn": WN})
    assert [(a.host, a.side) for a in found] == [("gpfs01", "sender"), ("gpfs02", "sender")]
    for a in found:
        assert sorted(a.peers) == WN
        assert len(a.reverse_fine) == 4 and not a.reverse_slow
        assert [p["dst"] for p in a.other_fine] == ["se01"]
        assert a.group == "gpfs"
        assert "gpfs01" not in a.good_hosts and "wn01" in a.good_hosts and "se01" in a.good_hosts
        assert a.differences[0].key == "net.ipv4.tcp_sack"
        # a target only: the adapter reads the values the host has
        assert a.differences[0].changes == [Change(host=a.host, adapter="sysctl", key="net.ipv4.tcp_sack", target="1")]
        assert f"tcp_sack=0 on {a.host}" in a.summary()
    # gpfs02 also carries a dropping firewall rule the good senders lack: named after sack
    assert [c.key for c in found[1].differences] == ["net.ipv4.tcp_sack", "firewall"]
    merged = dg.merged_changes(found[1].differences)
    assert [(c.adapter, c.target) for c in merged] == [("sysctl", "1"), ("firewall", "absent")]
    assert all(c.host == "gpfs02" for c in merged)
    assert merged[1].key.endswith(": " + DROP_RULE["text"])  # the firewall adapter's name of the scanned rule


def test_no_asymmetry_when_reverse_is_slow_too():
    ps = [path("a", "b", 300), path("b", "a", 310), path("a", "c", 300), path("c", "a", 290), path("b", "c", 940),
          path("c", "b", 940)]
    judge_paths(ps)
    assert dg.find_asymmetries(ps, {}, 0.8) == []


def test_receiver_side_asymmetry_and_small_rmem():
    # everything into "r" is slow, r's sending is fine: a receiver-side cause
    ps = []
    for s in ("a", "b", "c"):
        ps += [path(s, "r", 200), path("r", s, 940)]
    ps += [path("a", "b", 940), path("b", "a", 940)]
    judge_paths(ps)
    facts = {h: {"network.sysctl": sysctl_facts()} for h in "abc"}
    facts["r"] = {"network.sysctl": sysctl_facts(rmem=(4096, 65536, 262144))}
    found = dg.find_asymmetries(ps, facts, 0.8)
    assert [(a.host, a.side) for a in found] == [("r", "receiver")]
    assert found[0].differences[0].key == "net.ipv4.tcp_rmem"
    assert [(c.host, c.adapter, c.key, c.target) for c in found[0].differences[0].changes] == [
        ("r", "sysctl", "net.ipv4.tcp_rmem", "4096 65536 6291456")]


def test_other_qdisc_and_timestamps_named():
    ps = []
    for d in ("b", "c"):
        ps += [path("x", d, 300), path(d, "x", 940)]
    ps += [path("b", "c", 940), path("c", "b", 940)]
    judge_paths(ps)
    facts = {h: {"network.sysctl": sysctl_facts()} for h in "bc"}
    facts["x"] = {"network.sysctl": sysctl_facts(ts="0", qdisc="pfifo_fast")}
    (a,) = dg.find_asymmetries(ps, facts, 0.8)
    assert [c.key for c in a.differences] == ["net.ipv4.tcp_timestamps", "net.core.default_qdisc"]


def test_no_facts_still_reports_the_asymmetry_without_a_cause():
    ps = ifca_paths()
    found = dg.find_asymmetries(ps, {}, 0.8)
    assert [a.host for a in found] == GPFS and all(not a.differences for a in found)
    assert "no difference in the collected facts" in found[0].summary()


def test_loss_paths():
    ps = ifca_paths()
    lossy = dg.loss_paths(ps, 0.8, min_share=0.0005, min_count=10)
    assert {(p["src"], p["dst"]) for p, _ in lossy} == {(g, w) for g in GPFS for w in WN}
    # 900 retransmits of 310 Mb/s x 5 s / 1448 B segments
    share = dict(((p["src"], p["dst"]), s) for p, s in lossy)[("gpfs01", "wn01")]
    assert share == pytest.approx(900 / (310e6 * 5 / 8 / 1448), rel=1e-3)
    # a slow path without retransmits is not loss
    quiet = [path("a", "b", 300, retr=0)]
    judge_paths(quiet)
    assert dg.loss_paths(quiet, 0.8, 0.0005, 10) == []


def test_buffer_limited_names_the_sysctl_and_bdp():
    # 50 ms RTT, 4 MiB wmem max on the sender: window/RTT = 671 Mb/s; measured 480 (LAB-TRIAL)
    p = path("a", "b", 480, rtt=50_000.0)
    p["min_rtt_us"] = 50_000.0
    ps = [p]
    judge_paths(ps)
    facts = {"a": {"network.sysctl": sysctl_facts(wmem=(4096, 16384, 4194304))},
             "b": {"network.sysctl": sysctl_facts(rmem=(4096, 131072, 33554432))}}
    (bl,) = dg.buffer_limited(ps, facts, 0.8)
    assert bl.host == "a" and bl.sysctl == "net.ipv4.tcp_wmem" and bl.window_bytes == 4194304
    assert bl.bdp_bytes == int(1e9 * 0.05 / 8)  # 6.25 MB
    assert bl.recommended_bytes >= 2 * bl.bdp_bytes and bl.recommended_bytes >= 33554432
    targets = {c.key: c.target for c in bl.changes}
    assert targets["net.ipv4.tcp_wmem"].startswith("4096 16384 ") and "net.core.wmem_max" in targets
    assert all(c.host == "a" and c.adapter == "sysctl" for c in bl.changes)


def test_buffer_not_limited_when_far_from_window():
    p = path("a", "b", 300, rtt=300.0)  # LAN rtt: window/RTT is ~100 Gb/s, so not the window
    judge_paths([p])
    facts = {"a": {"network.sysctl": sysctl_facts()}, "b": {"network.sysctl": sysctl_facts()}}
    assert dg.buffer_limited([p], facts, 0.8) == []


def test_failure_hint_points_at_firewall():
    ps = ifca_paths()
    failed = [p for p in ps if p["status"] != "ok"]
    text, evidence, changes = dg.failure_hint(failed[0], ifca_facts())
    assert "gpfs02" in text and DROP_RULE["text"] in evidence[0]
    assert [(c.host, c.adapter, c.target) for c in changes] == [("gpfs02", "firewall", "absent")]
    assert " input: " in changes[0].key and changes[0].key.endswith(DROP_RULE["text"])
    assert dg.failure_hint(failed[0], {})[0] is None


def test_relative_judgement_without_expected_rates():
    ps = [path("a", "b", 900, expected=None), path("b", "a", 910, expected=None), path("a", "c", 200, expected=None),
          path("c", "a", 905, expected=None)]
    judge_paths(ps)
    assert all(p["ratio_basis"] == "median" for p in ps)
    assert [(p["src"], p["dst"]) for p in dg.slow_paths(ps, 0.8)] == [("a", "c")]


def _with_window_scaling(facts: dict, value: str) -> dict:
    facts["sysctls"]["net.ipv4.tcp_window_scaling"] = {"runtime": value, "runtime_ints": [int(value)], "line": f"k = {value}"}
    return facts


def test_window_scaling_off_on_a_worker_names_the_worker_both_ways():
    # the case: 64 KiB windows over 20 ms (~26 Mb/s) in both directions; the storage server's
    # tcp_rmem (4096 87380 33554432) is not the cause and must not be "raised" to the same value
    ps = [path("stor01", "wn01", 25, rtt=20_500.0, wnd=65535), path("wn01", "stor01", 25, rtt=20_500.0, wnd=65535),
          path("stor01", "wn02", 940, rtt=20_500.0)]
    for p in ps:
        p["min_rtt_us"] = 20_100.0
    judge_paths(ps)
    facts = {"stor01": {"network.sysctl": _with_window_scaling(sysctl_facts(rmem=(4096, 87380, 33554432),
                                                                             wmem=(4096, 16384, 33554432)), "1")},
             "wn01": {"network.sysctl": _with_window_scaling(sysctl_facts(), "0")},
             "wn02": {"network.sysctl": _with_window_scaling(sysctl_facts(), "1")}}
    found = dg.buffer_limited(ps, facts, 0.8)
    assert [(b.path["src"], b.path["dst"], b.host, b.sysctl) for b in found] == [
        ("stor01", "wn01", "wn01", "net.ipv4.tcp_window_scaling"),
        ("wn01", "stor01", "wn01", "net.ipv4.tcp_window_scaling")]
    assert all([(c.host, c.adapter, c.key, c.target) for c in b.changes] == [
        ("wn01", "sysctl", "net.ipv4.tcp_window_scaling", "1")] for b in found)


def test_a_buffer_already_at_the_recommended_size_is_not_blamed():
    # the receiver advertised 64 KiB (another cause) but its tcp_rmem max is already ESnet's maximum
    p = path("wn01", "stor01", 25, rtt=20_000.0, wnd=65535)
    p["min_rtt_us"] = 20_000.0
    judge_paths([p])
    facts = {"wn01": {"network.sysctl": sysctl_facts(wmem=(4096, 16384, 33554432))},
             "stor01": {"network.sysctl": sysctl_facts(rmem=(4096, 87380, 33554432))}}
    assert dg.buffer_limited([p], facts, 0.8) == []


def test_deep_queue_is_not_a_buffer_limit_and_is_reported_apart():
    # a 100 Mb/s shaper with a deep queue on a 1 Gb/s-expected path: 2 ms idle RTT, 41 ms during the
    # transfer; the receiver advertised what the queue held (~500 KB): window / mean RTT = the rate,
    # but window / idle RTT is 2 Gb/s: the window is not the limit, the shaper is
    p = path("stor01", "wn01", 98, rtt=41_000.0, wnd=512_000)
    p["min_rtt_us"] = 2_000.0
    judge_paths([p])
    facts = {"stor01": {"network.sysctl": sysctl_facts()}, "wn01": {"network.sysctl": sysctl_facts()}}
    assert dg.buffer_limited([p], facts, 0.8) == []
    assert PathRecord.from_mesh(p).queue_us == 39_000.0
    assert "idle rtt 2.00 ms, queueing delay 39.00 ms" in dg.describe_path(p)


def test_pinged_idle_rtt_beats_iperf3_minimum():
    # as measured in the lab: iperf3's minimum RTT (sampled from the smoothed RTT) already holds the
    # queue (36 ms); the pings before the test saw the idle 2 ms
    p = path("stor01", "wn03", 95, rtt=41_000.0, wnd=512_000)
    p["min_rtt_us"], p["idle_rtt_us"] = 36_000.0, 2_050.0
    judge_paths([p])
    facts = {"stor01": {"network.sysctl": sysctl_facts()}, "wn03": {"network.sysctl": sysctl_facts()}}
    assert dg.buffer_limited([p], facts, 0.8) == []
    assert PathRecord.from_mesh(p).queue_us == 41_000.0 - 2_050.0
