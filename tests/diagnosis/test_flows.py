"""Production flows as paths, what held each, and causes from flows with no mesh at all
(tests/support/flows_site.py: a send buffer, a receive window, a slow reader, a lossy port, a packet-rate
firewall, a clean path and outside clients)."""

from __future__ import annotations

import pytest

from advisor.diagnosis import DiagnosisInput, diagnose
from advisor.model.findings import Change, Finding, FindingStatus, Severity
from advisor.flows.compare import compare_with_mesh
from advisor.flows.limits import classify_flow
from advisor.flows.paths import FLOW_PATH_KEYS, flow_paths
from advisor.paths.record import OUTSIDE, PathRecord
from tests.support.flows_site import ADDR, G, factset, host_facts

ISSUE_KEYS = ("src", "dst", "connections", "bytes", "measured_bps", "rtt_ms", "min_rtt_ms", "retrans_ratio",
              "limited_by", "evidence")


def _paths(fs=None) -> dict[tuple[str, str], dict]:
    flows = flow_paths(fs or factset())
    return {(p["src"], p["dst"]): p for p in flows["paths"]}


def test_each_fault_is_named_in_the_mesh_words_and_the_reader_is_the_application():
    paths = _paths()
    got = {k: p["limited_by"] for k, p in paths.items()}
    assert got == {
        ("st01", "wn01"): "sender_buffer", ("st02", "wn02"): "receiver_window", ("st02", "wn03"): "application",
        ("st01", "wn03"): "application",
        ("st01", "wn04"): "loss", ("st02", "st01"): "loss", ("st02", "wn01"): "link", ("st01", OUTSIDE): "application",
    }, {k: (p["limited_by"], p["evidence"]) for k, p in paths.items()}
    assert "wn03's reader kept 2930 KiB unread (Recv-Q): the reader did not read" in paths[("st02", "wn03")]["evidence"]
    assert "Recv-Q 0 KiB at wn02: the window is small, not unread" in paths[("st02", "wn02")]["evidence"]
    assert "wn03 advertised 293 KiB of the 3072 KiB its tcp_rmem allows" in paths[("st01", "wn03")]["evidence"]
    assert "had nothing to send" in paths[("st01", OUTSIDE)]["evidence"]


def test_a_path_holds_the_issue_keys_first_and_what_the_models_read():
    p = _paths()[("st01", "wn01")]
    assert tuple(p)[:len(ISSUE_KEYS)] == ISSUE_KEYS and tuple(p) == FLOW_PATH_KEYS
    assert p["connections"] == 1 and p["bytes"] == 100_000_000 and p["measured_bps"] == 160_000_000
    assert p["rtt_ms"] == 10.2 and p["min_rtt_ms"] == 10.0 and p["retrans_ratio"] == 0.0
    assert p["expected_bps"] == G and p["ratio"] == 0.16 and p["seen_by"] == "both" and p["sndbuf_limited_frac"] == 0.76
    out = _paths()[("st01", OUTSIDE)]
    assert out["connections"] == 3 and out["peers"] == 3 and out["seen_by"] == "sender"
    # the record reads a flow path as the models read a mesh path
    rec = PathRecord.from_flow(_paths()[("st01", "wn04")])
    assert rec.idle_rtt_us == 10_000.0 and rec.loaded_rtt_us == 10_300.0 and rec.loss_share == pytest.approx(0.01, rel=1e-2)


def test_a_sender_whose_nic_carried_its_link_rate_is_link():
    # st01's NIC sent 0.95 of its link over the window (its flows and others together): shared, not slow
    paths = _paths(factset(tx={"st01": int(0.95 * G * 5 / 8)}))
    assert paths[("st01", "wn01")]["limited_by"] == "link"
    assert "st01's NIC sent 950 Mb/s of its 1000 Mb/s" in paths[("st01", "wn01")]["evidence"]
    assert paths[("st02", "wn02")]["limited_by"] == "receiver_window"


def test_a_path_seen_from_its_receiver_only():
    fs = factset()
    del fs.hosts["st02"]  # st02 not scanned (--hosts): wn02 and wn03 still see its connections, by its address
    paths = _paths(fs)
    assert paths[("st02", "wn03")]["seen_by"] == "receiver" and paths[("st02", "wn03")]["limited_by"] == "application"
    assert paths[("st02", "wn02")]["limited_by"] == "unknown"
    assert "only the receiver's side" in paths[("st02", "wn02")]["evidence"]


def test_no_flows_sampled_is_none():
    fs = factset()
    for hf in fs.hosts.values():
        del hf.probes["network.flows"]
    assert flow_paths(fs) is None


def test_classify_without_a_reader_sample_still_names_the_window():
    p = {**_paths()[("st02", "wn02")], "reader_recv_q": None, "reader_full_share": None, "seen_by": "sender"}
    cls, ev = classify_flow(p)
    assert cls == "receiver_window" and "wn02's Recv-Q not sampled" in ev


def _finding(rule, hosts, subject=None, changes=()) -> Finding:
    return Finding(rule_id=rule, hosts=hosts, subject=subject, status=FindingStatus.fail, severity=Severity.high,
                   changes=[Change(host=h, adapter=a, key=k, runtime=r, target=t) for h, a, k, r, t in changes])


TAGS = {"FLOW-PATH-HELD": {"symptom"}, "MESH-PATH-SLOW": {"symptom"}}


def _findings(flows: dict) -> list[Finding]:
    """What the shipped rules say of this site: each held flow path (FLOW-PATH-HELD), the buffers below
    ESnet's (NET-TCP-BUFFER-MAX), the storage server's acting firewall (FW-STORAGE-NETWORK)."""
    out = [_finding("FLOW-PATH-HELD", [h for h in (p["src"], p["dst"]) if h != OUTSIDE], f"{p['src']}->{p['dst']}")
           for p in flows["paths"] if p["limited_by"] in ("sender_buffer", "receiver_window", "loss", "policer")]
    out.append(_finding("NET-TCP-BUFFER-MAX", ["st01"], "net.ipv4.tcp_wmem",
                        [("st01", "sysctl", "net.ipv4.tcp_wmem", "4096 16384 262144", "4096 16384 33554432")]))
    out.append(_finding("NET-TCP-BUFFER-MAX", ["wn02"], "net.ipv4.tcp_rmem",
                        [("wn02", "sysctl", "net.ipv4.tcp_rmem", "4096 87380 262144", "4096 87380 33554432")]))
    out.append(_finding("FW-STORAGE-NETWORK", ["st01"], None,
                        [("st01", "firewall", "filter/INPUT/1", "present", "absent")]))
    return out


def test_causes_from_flows_alone_never_blame_the_slow_reader():
    flows = flow_paths(factset())
    d = diagnose(DiagnosisInput(findings=_findings(flows), mesh=None, efficiency=None, facts=host_facts(), tags=TAGS,
                                addresses=ADDR, flows=flows))
    by_kind = {}
    for c in d.causes:
        keys = {ch.key for ch in c.changes}
        by_kind[("wmem" if "net.ipv4.tcp_wmem" in keys else "rmem" if "net.ipv4.tcp_rmem" in keys
                 else "firewall" if c.changes else "by_hand")] = c
    assert set(by_kind) == {"wmem", "rmem", "firewall", "by_hand"}, [(c.title, c.hosts) for c in d.causes]
    # st01's send buffer holds st01->wn01, and st01->wn04 once its port is repaired (two causes on one path)
    wmem = {p.subject: p for p in by_kind["wmem"].predicted}
    assert by_kind["wmem"].hosts == ["st01"] and set(wmem) == {"st01->wn01", "st01->wn04"}
    assert wmem["st01->wn01"].after > 2 * wmem["st01->wn01"].now and "with_the_other_causes" in wmem["st01->wn04"].inputs
    assert by_kind["rmem"].hosts == ["wn02"] and [p.subject for p in by_kind["rmem"].predicted] == ["st02->wn02"]
    assert [p.subject for p in by_kind["firewall"].predicted] == ["st02->st01"]
    lossy = by_kind["by_hand"]
    assert lossy.kind == "by_hand" and "wn04" in lossy.hosts and not lossy.changes
    assert [p.subject for p in lossy.predicted] == ["st01->wn04"]
    # the slow reader's host is in no cause, and its path is no symptom
    assert not any("wn03" in c.hosts for c in d.causes)
    assert not d.unexplained


def test_where_a_mesh_test_measured_the_path_too_a_disagreement_is_said_for_it():
    flows = flow_paths(factset())
    mesh = {"paths": [
        {"src": "st01", "dst": "wn01", "status": "ok", "measured_bps": 950e6, "expected_bps": G, "limited_by": "link"},
        {"src": "st01", "dst": "wn04", "status": "ok", "measured_bps": 40e6, "expected_bps": G, "limited_by": "policer"},
        {"src": "st02", "dst": "wn02", "status": "ok", "measured_bps": 90e6, "expected_bps": G, "limited_by": "cpu"}]}
    compare_with_mesh(flows, mesh)
    by = {(p["src"], p["dst"]): p["mesh"] for p in flows["paths"]}
    assert by[("st01", "wn01")]["agrees"] is False
    assert by[("st01", "wn01")]["note"].startswith("the mesh test says link, production flows say sender_buffer")
    assert by[("st01", "wn04")]["agrees"] is True  # loss and a policer: two samples cannot tell them apart
    assert by[("st02", "wn02")]["agrees"] is True  # an inconclusive test says nothing of the network
    assert by[("st02", "wn03")] is None


def test_a_buffer_the_chronograph_under_counts_is_named_by_its_window():
    """Seen on the flows lab: stor01's 128 KiB tcp_wmem held its flow at window / RTT all along, and the kernel's
    sndbuf_limited clock (stopped whenever a little buffer frees) counted 18% of the busy time in that window."""
    fs = factset()
    conn = next(c for c in fs.hosts["st01"].probes["network.flows"].facts["connections"] if c["peer_port"] == 41001)
    conn["sndbuf_limited_ms"] = 900
    p = _paths(fs)[("st01", "wn01")]
    assert p["sender_window_cap"] == 183501 and p["sndbuf_limited_frac"] == 0.18
    assert p["limited_by"] == "sender_buffer", p["evidence"]
    assert "the window st01's tcp_wmem maximum allows (179 KiB) / idle rtt 10.0 ms, sndbuf_limited 18%" in p["evidence"]
    conn["sndbuf_limited_ms"] = 200  # the clock never saw it: a rate at window / RTT alone is no proof
    assert _paths(fs)[("st01", "wn01")]["limited_by"] == "unknown"


def test_a_slow_reader_behind_a_small_send_buffer_is_still_the_application():
    """Seen on the flows lab: wn03's reader (2 MB/s) left 283 KiB unread; stor01, whose peer's window was closed,
    filled its small send buffer, and the kernel counted 42% sndbuf_limited beside 37% rwnd_limited."""
    fs = factset()
    conn = next(c for c in fs.hosts["st02"].probes["network.flows"].facts["connections"] if c["peer_port"] == 41003)
    conn["rwnd_limited_ms"], conn["sndbuf_limited_ms"] = 1850, 2100
    p = _paths(fs)[("st02", "wn03")]
    assert p["limited_by"] == "application", p["evidence"]
    assert p["evidence"].startswith("rwnd_limited 37% and sndbuf_limited 42% of busy time while wn03's reader kept")
