"""Real iperf3 runs through the runner: on loopback (LocalTransport) and between network
namespaces this test creates (bridge + tbf-shaped veths, 198.18.200.0/24), removed even on failure."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from advisor.model.facts import FactSet, HostFacts, ProbeResult, ProbeStatus
from advisor.mesh import symptoms as dg
from advisor.mesh.runner import MeshProgress, run_mesh
from advisor.site.model import Site
from advisor.transport.local import LocalTransport
from tests.support.netns import NetnsSite
from tests.support.subprocess_transport import SubprocessTransport

pytestmark = pytest.mark.skipif(shutil.which("iperf3") is None, reason="iperf3 not installed")


def _our_servers(port_lo: int, port_hi: int) -> list[str]:
    """iperf3 servers still running on our ports (a leak if any)."""
    left = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
        except OSError:
            continue
        args = [c.decode() for c in cmd if c]
        if args and "iperf3" in os.path.basename(args[0]) and "-s" in args and "-p" in args:
            port = int(args[args.index("-p") + 1])
            if port_lo <= port <= port_hi:
                left.append(" ".join(args))
    return left


def loopback_site(n=3, port_base=5801, **mesh) -> Site:
    return Site.model_validate({
        "name": "lo", "transport": "local",
        "hosts": [{"name": f"h{i}", "address": "127.0.0.1", "groups": ["g"], "link_rate": "1gbit"}
                  for i in range(1, n + 1)],
        "mesh": {"pairs": [{"a": "g"}], "duration": 1, "omit": 0, "port_base": port_base, **mesh},
    })


def test_loopback_full_mesh_with_local_transport():
    site = loopback_site(3)
    events: list[MeshProgress] = []
    res = run_mesh(site, lambda h: LocalTransport(), progress=events.append)
    assert res["rounds"] == 3
    assert len(res["paths"]) == 6
    for p in res["paths"]:
        assert p["status"] == "ok", p["error"]
        # a test the loaded machine could not feed (cpu) is measured again alone, and says so
        assert p["mode"] == "bidir" or (p["mode"] == "alone" and p["retest"]["limited_by"] in ("cpu", "contended")), p
        assert p["measured_bps"] > 1e8  # loopback: far above 100 Mb/s
        # the sender's kernel was read during the test (ss), both ends' CPU reported; lo is not a NIC
        assert p["tcp_info"]["source"] == "ss" and p["tcp_info"]["samples"] >= 1 and p["tcp_info"]["busy_s"] > 0, p
        # the options the connection negotiated (loopback: SACK and timestamps, as the sysctls say);
        # ss prints them only with -o, and a listing without it read as "sack off" on every path
        assert p["tcp_info"]["sack"] is True and p["tcp_info"]["timestamps"] is True, p["tcp_info"]
        assert p["cpu_sender_pct"] is not None and p["cpu_receiver_pct"] is not None
        assert set(p["cpu_wait_frac"]) == {"src", "dst"} and p["nic_other_bytes"] == {"src": None, "dst": None}
        assert p["limited_by"] in ("link", "cpu") and p["limited_evidence"], p
        assert p["rtt_us"] is not None and p["retransmits"] is not None
        assert p["expected_bps"] == 10**9 and p["ratio"] == p["measured_bps"] / 1e9
        assert p["congestion"]
    assert res["hosts"]["h1"]["iperf3"].startswith("3.")
    assert [e.event for e in events].count("round-done") == 3
    json.dumps(res)  # plain data
    assert _our_servers(5801, 5830) == []


def test_loopback_without_bidir_runs_both_directions_in_the_slot():
    site = loopback_site(2, port_base=5831)
    res = run_mesh(site, {"h1": LocalTransport(), "h2": LocalTransport()}, bidir=False)
    assert res["rounds"] == 1 and {p["mode"] for p in res["paths"]} == {"single"}
    assert [(p["src"], p["dst"]) for p in res["paths"]] == [("h1", "h2"), ("h2", "h1")]
    assert all(p["status"] == "ok" for p in res["paths"])


def test_missing_iperf3_is_a_failed_test_not_zero():
    class NoIperf(SubprocessTransport):
        def run_batch(self, commands):
            for c in commands:
                c.script = "PATH=/nonexistent\n" + c.script
            return super().run_batch(commands)

    site = loopback_site(2, port_base=5841)
    res = run_mesh(site, {"h1": SubprocessTransport(), "h2": NoIperf()})
    assert {p["status"] for p in res["paths"]} == {"failed"}
    assert all(p["measured_bps"] is None for p in res["paths"])
    assert "iperf3 is not installed" in res["paths"][0]["error"]
    assert res["hosts"]["h2"]["error"]


def test_port_in_use_moves_to_another_port():
    # something else listens on the first port of the round: the runner must pick another
    blocker = subprocess.Popen(["iperf3", "-s", "-p", "5851"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        import time
        time.sleep(0.3)
        site = loopback_site(2, port_base=5851)
        res = run_mesh(site, lambda h: LocalTransport())
        assert all(p["status"] == "ok" for p in res["paths"]), res["paths"]
    finally:
        blocker.kill()
        blocker.wait()
    assert _our_servers(5852, 5870) == []


def test_refused_is_retried_then_reported(monkeypatch):
    """A server that never listens on the port the client is sent to: refused, retried, failed."""
    from advisor.mesh import runner as runner_mod

    site = loopback_site(2, port_base=5871)
    real = runner_mod.iperf.client_command
    monkeypatch.setattr(runner_mod.iperf, "client_command",
                        lambda addr, port, *a, **k: real(addr, port + 1000, *a, **k))
    res = run_mesh(site, lambda h: LocalTransport(), attempts=2, backoff_s=0.1)
    for p in res["paths"]:
        assert p["status"] == "failed" and "Connection refused" in p["error"]
        assert p["measured_bps"] is None
    assert _our_servers(5871, 5890) == []


# ----------------------------------------------------------------------------- namespaces


def _netns_site(ns: NetnsSite, rates: dict[str, str], **mesh) -> Site:
    return Site.model_validate({
        "name": "nslab",
        "hosts": [{"name": h, "address": ns.addresses[h], "groups": ["all"], "link_rate": "400mbit"}
                  for h in ns.hosts],
        "mesh": {"pairs": [{"a": "all"}], "duration": 2, "omit": 0.5, "port_base": 5301,
                 "congestion": "cubic", **mesh},
    })


def test_namespace_mesh_finds_slow_sender_and_firewall_cut(netns_site):
    """4 hosts: h1's egress shaped to 100 Mbit/s (its sends are slow, its receives fine), h4 rejects
    iperf3 from h3 with an nft rule (the h3<->h4 tests fail), all else 400 Mbit/s."""
    with netns_site(4, rate="400mbit") as ns:
        h1, h2, h3, h4 = ns.hosts
        subprocess.run(["ip", "netns", "exec", h1, "tc", "qdisc", "replace", "dev", "eth0", "root", "tbf",
                        "rate", "100mbit", "burst", "64kb", "latency", "10ms"], check=True)
        nft = (f"add table inet sa; add chain inet sa input {{ type filter hook input priority 0; }}; "
               f"add rule inet sa input ip saddr {ns.addresses[h3]} tcp dport 5301-5400 reject with tcp reset; "
               f"add chain inet sa output {{ type filter hook output priority 0; }}; "
               f"add rule inet sa output ip daddr {ns.addresses[h3]} tcp dport 5301-5400 reject with tcp reset")
        subprocess.run(["ip", "netns", "exec", h4, "nft", nft], check=True)
        site = _netns_site(ns, {})
        res = run_mesh(site, ns.transports(), attempts=2, backoff_s=0.2)
        assert res["rounds"] == 3
        by = {(p["src"], p["dst"]): p for p in res["paths"]}
        # the cut pair: both directions failed, with iperf3's error, never 0 Mb/s
        for k in ((h3, h4), (h4, h3)):
            assert by[k]["status"] == "failed" and by[k]["measured_bps"] is None, by[k]
            assert "refused" in by[k]["error"].lower() or "unable" in by[k]["error"].lower()
        # h1 sends at ~100 Mbit/s, everything else near 400
        for d in (h2, h3, h4):
            assert 60e6 < by[(h1, d)]["measured_bps"] < 110e6, by[(h1, d)]
            assert by[(d, h1)]["measured_bps"] > 330e6, by[(d, h1)]
        assert by[(h2, h3)]["measured_bps"] > 330e6
        # the diagnosis blames h1 as a sender, and MESH-TEST-FAILED-style hint names h4's firewall
        asym = dg.find_asymmetries(res["paths"], {}, 0.8)
        assert [(a.host, a.side) for a in asym] == [(h1, "sender")]
        fw = {"rules": [{"verdict": "reject", "limit": False, "addresses": [ns.addresses[h3] + "/32"],
                         "interfaces": [], "text": "ip saddr ... reject"}], "chains": []}
        hint, _, _ = dg.failure_hint(by[(h3, h4)], {h4: {"firewall": fw}})
        assert hint and h4 in hint
        # every server was stopped
        for h in ns.hosts:
            pids = subprocess.run(["ip", "netns", "pids", h], capture_output=True, text=True).stdout.split()
            assert pids == [], f"processes left in {h}: {pids}"


def _factset_from(res: dict, site: Site, facts: dict[str, dict]) -> FactSet:
    fs = FactSet(site=site.name, mesh=res)
    for h in site.hosts:
        probes = {k: ProbeResult(probe=k, status=ProbeStatus.ok, facts=v) for k, v in facts.get(h.name, {}).items()}
        fs.hosts[h.name] = HostFacts(name=h.name, groups=h.groups, probes=probes)
    return fs


def test_namespace_mesh_rules_through_engine(netns_site):
    """The rule engine over a real namespace mesh: slow sender with tcp_sack=0 named as the cause."""
    from advisor.rules.engine import evaluate
    from tests.support.ifca_mesh import sysctl_facts

    with netns_site(3, rate="300mbit") as ns:
        h1, h2, h3 = ns.hosts
        subprocess.run(["ip", "netns", "exec", h1, "tc", "qdisc", "replace", "dev", "eth0", "root", "tbf",
                        "rate", "80mbit", "burst", "64kb", "latency", "10ms"], check=True)
        site = Site.model_validate({
            "name": "nslab2",
            "hosts": [{"name": h, "address": ns.addresses[h], "groups": ["all"], "link_rate": "300mbit"}
                      for h in ns.hosts],
            "mesh": {"pairs": [{"a": "all"}], "duration": 1.5, "omit": 0.5, "port_base": 5401},
        })
        res = run_mesh(site, ns.transports())
    facts = {h: {"network.sysctl": sysctl_facts()} for h in (h2, h3)}
    facts[h1] = {"network.sysctl": sysctl_facts(sack="0")}
    ev = evaluate(_factset_from(res, site, facts), site,
                  rule_filter=lambda r: r.id.startswith("MESH-"))
    fails = [f for f in ev.findings if f.status.value == "fail"]
    slow = sorted(f.subject for f in fails if f.rule_id == "MESH-PATH-SLOW")
    assert slow == [f"{h1}->{h2}", f"{h1}->{h3}"]
    (asym,) = [f for f in fails if f.rule_id == "MESH-ASYMMETRY"]
    assert asym.hosts == [h1] and "tcp_sack=0" in asym.message
    assert [(c.host, c.adapter, c.key, c.target) for c in asym.changes] == [(h1, "sysctl", "net.ipv4.tcp_sack", "1")]
    assert not [f for f in fails if f.rule_id == "MESH-TEST-FAILED"]


def test_slow_paths_are_measured_again_alone(netns_site):
    """retest_below: h1's sends (egress shaped to 100 Mbit/s of 400) are measured again one at a
    time after the rounds and stay slow (a real path fault, not contention); the record keeps what
    the round measured; paths at their rate are not retested."""
    with netns_site(3, rate="400mbit") as ns:
        h1, h2, h3 = ns.hosts
        subprocess.run(["ip", "netns", "exec", h1, "tc", "qdisc", "replace", "dev", "eth0", "root", "tbf",
                        "rate", "100mbit", "burst", "64kb", "latency", "10ms"], check=True)
        site = _netns_site(ns, {}, retest_below=0.8, bidir=False)
        events: list[MeshProgress] = []
        res = run_mesh(site, ns.transports(), progress=events.append)
        by = {(p["src"], p["dst"]): p for p in res["paths"]}
        assert res["retested"] == 2 and res["parameters"]["retest_below"] == 0.8
        for d in (h2, h3):
            p = by[(h1, d)]
            assert p["mode"] == "alone" and p["status"] == "ok", p
            assert 60e6 < p["measured_bps"] < 110e6 and 60e6 < p["retest"]["concurrent_bps"] < 110e6, p
            assert p["retest"]["round"] == p["round"] and p["retest"]["error"] is None
            assert p["ratio"] == p["measured_bps"] / p["expected_bps"]
            assert "measured alone" in dg.describe_path(p)
        for k, p in by.items():
            if k[0] != h1:
                assert p["retest"] is None and p["mode"] == "single" and p["ratio"] > 0.8, p
        starts = [e for e in events if e.event == "retest-start"]
        assert len(starts) == 1 and starts[0].tests_in_round == 2 and starts[0].round == res["rounds"] + 1
        for h in ns.hosts:
            assert subprocess.run(["ip", "netns", "pids", h], capture_output=True, text=True).stdout.split() == []
