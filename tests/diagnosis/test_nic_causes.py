"""The NIC layer in the diagnosis (advisor/diagnosis/nic_causes.py), on the 9-host site of
tests/support/diagnosis_site.py: st01 loses 0.3% of what it sends.

* the loss cause names st01's NIC when its counters rose during the tests, folds the rising-counter
  finding into itself, and says why it cannot name one when none rose;
* a path-MTU black hole (full-MTU ping lost, small ones arrived) is a cause of its own with its hosts and
  paths, and MTU probing on the sender unblocks its failed test;
* a path held by its link far below the rate the site expects names the NIC negotiated low."""

from __future__ import annotations

import copy

from advisor.diagnosis import DiagnosisInput, diagnose
from advisor.model.findings import FindingStatus
from advisor.mesh.throughput_models import link_goodput_bps
from tests.support.diagnosis_site import ADDR, G, RACK_A, TAGS, finding, findings, mesh, site_facts, sysctls

NIC_TAGS = {**TAGS, "NIC-ERRORS-RISING": {"state", "counters"}, "NIC-RX-DROPS": {"state", "counters"},
            "NIC-SPEED-BELOW-MAX": {"state", "speed"}, "NIC-MTU-ABOVE-PATH": {"derived"}}


def run(m: dict, extra=(), facts=None):
    measured = [p for p in m["paths"] if p.get("status") == "ok"]
    inp = DiagnosisInput(findings=findings({"paths": measured}) + list(extra), mesh=m, efficiency=None,
                         facts=facts or site_facts(), tags=NIC_TAGS, addresses=ADDR)
    return diagnose(inp)


def loss_cause(d):
    (c,) = [c for c in d.causes if c.kind == "by_hand" and "packet loss" in c.title]
    return c


def with_counters(rises: dict | None) -> dict:
    m = mesh()
    for p in m["paths"]:
        p["nic_errors"] = {"src": {"interface": "eno1", "rises": dict(rises) if p["src"] == "st01" and rises else {}},
                           "dst": {"interface": "eno1", "rises": {}}}
    return m


def test_the_loss_cause_names_the_nic_whose_counters_rose_and_takes_its_finding():
    m = with_counters({"tx_carrier_errors": 3112, "tx_errors": 3112, "tx_dropped": 4})
    counters = finding("NIC-ERRORS-RISING", ["st01"], "eno1")
    d = run(m, [counters])
    c = loss_cause(d)
    # summed over st01's six lossy tests
    assert c.title.endswith("st01 eno1 tx_carrier_errors +18,672: cable or optic"), c.title
    assert "replace or reseat the cable or optic of st01 eno1" in c.action
    assert any("st01 eno1 tx_carrier_errors +" in e and "during the tests" in e for e in c.evidence)
    assert ("NIC-ERRORS-RISING", "eno1") in {(f.rule_id, f.subject) for f in c.findings}
    # folded into the loss: no cause of its own, not hygiene
    assert not [x for x in d.causes if x.title.startswith("NIC-ERRORS-RISING")]
    assert "NIC-ERRORS-RISING" not in {f.rule_id for f in d.hygiene}


def test_no_counter_rose_says_the_loss_is_beyond_the_nic():
    d = run(with_counters(None))
    c = loss_cause(d)
    assert "No error or drop counter of st01 eno1 rose during the tests" in c.action, c.action
    assert "beyond the hosts' NICs" in c.action and "rx_" not in c.title


def test_without_the_tests_counters_the_scans_window_stands_in():
    facts = site_facts()
    facts["st01"]["nic.ports"] = {"interfaces": {"eno1": {"counters": {"rx_crc_errors": {"delta": 200, "per_s": 40.0,
                                                                                         "kind": "errors"}}}}}
    c = loss_cause(run(mesh(), facts=facts))
    assert "st01 eno1 rx_crc_errors +200: cable or optic" in c.title and "during the scan's sample window" in c.action


def _hole_mesh() -> dict:
    m = mesh()
    m["paths"].append({"src": "st01", "dst": "st02", "status": "failed", "error": "unable to receive results",
                       "measured_bps": None, "expected_bps": G, "path_mtu": {"mtu": 9000, "interface": "eth0",
                                                                           "carried": False}})
    return m


def test_a_path_mtu_black_hole_is_its_own_cause_with_its_hosts_and_path():
    m = _hole_mesh()
    symptom = finding("MESH-TEST-FAILED", ["st01", "st02"], "st01->st02")
    above = finding("NIC-MTU-ABOVE-PATH", ["st01"], "st01->st02")
    probing = finding("NET-MTU-PROBING", ["st01"], changes=[("st01", "sysctl", "net.ipv4.tcp_mtu_probing", "0", "1")],
                      severity="low")
    d = run(m, [symptom, above, probing])
    (hole,) = [c for c in d.causes if "black hole" in c.title]
    assert hole.title.startswith("path-MTU black hole: 9000-byte frames are lost between st01, st02"), hole.title
    assert hole.hosts == ["st01", "st02"] and "raise the MTU of every switch port" in hole.action
    assert {(f.rule_id, f.subject) for f in hole.explains} >= {("MESH-TEST-FAILED", "st01->st02"),
                                                               ("NIC-MTU-ABOVE-PATH", "st01->st02")}
    (p,) = hole.predicted
    assert (p.subject, p.now, p.after, p.model) == ("st01->st02", None, G, "link")
    (probe,) = [c for c in d.causes if any(ch.key == "net.ipv4.tcp_mtu_probing" for ch in c.changes)]
    assert [(q.subject, q.model) for q in probe.predicted] == [("st01->st02", "unquantified")]


def test_a_link_verdict_below_the_site_rate_names_the_nic_negotiated_low():
    m = mesh()
    for p in m["paths"]:
        if p["src"] == "st02" and p["dst"] == "wn01":
            p.update(measured_bps=95e6, ratio=0.095, limited_by="link", nic_speed_bps={"src": None, "dst": 100_000_000})
    facts = copy.deepcopy(site_facts())
    facts["wn01"]["nic.ports"] = {"interfaces": {"eno1": {"speed_mbps": 100, "max_supported_mbps": 1000,
                                                          "max_advertised_mbps": 1000, "partner_max_mbps": 100,
                                                          "site": True}}}
    slow = finding("MESH-PATH-SLOW", ["st02", "wn01"], "st02->wn01")
    speed = finding("NIC-SPEED-BELOW-MAX", ["wn01"], "eno1", severity="medium")
    d = run(m, [slow, speed], facts=facts)
    (c,) = [c for c in d.causes if "negotiated" in c.title]
    assert c.title == "wn01 eno1 negotiated 100 Mb/s of the 1.00 Gb/s its paths expect (it supports 1.00 Gb/s)"
    assert "the switch port of wn01 eno1 advertises at most 100 Mb/s" in c.action
    (p,) = c.predicted
    # the link once the NIC runs at its speed: the expected rate, headers paid (advisor/mesh/throughput_models.py)
    assert (p.subject, p.now, p.after, p.model) == ("st02->wn01", 95_000_000, round(link_goodput_bps(G, 1448)), "link")
    assert ("NIC-SPEED-BELOW-MAX", "eno1") in {(f.rule_id, f.subject) for f in c.findings}
    assert not [x for x in d.causes if x.title.startswith("NIC-SPEED-BELOW-MAX")]


def test_a_lossy_path_behind_a_nic_negotiated_low_is_explained_by_the_loss_and_capped_by_the_nic():
    """The nic lab scenario measured it so (here on st02, from rack A): st03's port loses ~3.8% of what
    the workers send it, SACK on, and wn01's NIC runs at 100 Mb/s. wn01->st03 carried 29 Mb/s,
    wn02->st03 37 of 1000, both held by the loss. The lossy-LAN range gives most of the link, more than either carried: before, that range
    (and the NIC's 96 Mb/s cap) was the path's tightest limit, the repair lifted nothing past it and
    wn01's path went unexplained. The mesh saw the loss hold it: its measured rate is the loss's
    limit, the repair lifts it to wn01's NIC, and the NIC's own cause frees the rest."""
    m = mesh()
    for p in m["paths"]:
        if p["dst"] == "st02" and p["src"] in RACK_A:
            bps = 29e6 if p["src"] == "wn01" else 37e6
            p.update(measured_bps=bps, ratio=bps / G, limited_by="loss", retransmits=int(bps * 5 / 8 / 1448 * 0.038),
                     sent_bytes=int(bps * 5 / 8), rtt_us=500.0, idle_rtt_us=60.0,
                     nic_speed_bps={"src": 100_000_000 if p["src"] == "wn01" else None, "dst": None})
    facts = copy.deepcopy(site_facts())
    facts["wn01"]["nic.ports"] = {"interfaces": {"eno1": {"speed_mbps": 100, "max_supported_mbps": 1000,
                                                          "max_advertised_mbps": 1000, "partner_max_mbps": 100,
                                                          "site": True}}}
    speed = finding("NIC-SPEED-BELOW-MAX", ["wn01"], "eno1", severity="medium")
    d = run(m, [speed], facts=facts)
    assert not [u for u in d.unexplained if u.subject in {f"{w}->st02" for w in RACK_A}], d.unexplained
    (loss,) = [c for c in d.causes if c.kind == "by_hand" and "packet loss" in c.title and "st02" in c.hosts]
    after = {p.subject: p for p in loss.predicted if p.metric == "throughput"}
    # the repair: wn01's path up to its NIC's 100 Mb/s (headers paid), wn02's to the link
    assert after["wn01->st02"].after == round(link_goodput_bps(100_000_000, 1448)), after["wn01->st02"]
    assert after["wn02->st02"].after > 0.9 * G, after["wn02->st02"]
