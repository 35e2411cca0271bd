"""A 9-host site of a shape no lab scenario has, for the diagnosis tests: three storage servers, two racks of
workers. st01 has SACK off and loses 0.3% of what it sends; rack B (wn11-wn13) sits 20 ms away with a 256 KiB
receive buffer; st03 is behind a packet-rate firewall. st02 is clean.

Paths are measured values a real 1 Gb/s network gives for these faults (the lab's figures: docs/diagnosis.md),
not the models' own output."""

from __future__ import annotations

from advisor.model.findings import Change, Finding, FindingStatus, Severity
from advisor.report.model import HostReport, ScanReport, ScanSummary

RACK_A = ["wn01", "wn02", "wn03"]
RACK_B = ["wn11", "wn12", "wn13"]
SERVERS = ["st01", "st02", "st03"]
ADDR = {h: f"198.18.0.{i + 10}" for i, h in enumerate(SERVERS + RACK_A + RACK_B)}
G = 1e9

TAGS = {"MESH-PATH-SLOW": {"symptom"}, "MESH-TEST-FAILED": {"symptom"}, "EFF-ACTIVE-LOW": {"symptom", "efficiency"},
        "MESH-LOSS": {"derived"}, "MESH-ASYMMETRY": {"derived"}, "MESH-BUFFER-LIMITED": {"derived"},
        "DISK-FAILING": {"state"}}


def sysctls(**kv) -> dict:
    base = {"net.ipv4.tcp_sack": "1", "net.ipv4.tcp_window_scaling": "1",
            "net.ipv4.tcp_rmem": "4096 131072 6291456", "net.ipv4.tcp_wmem": "4096 16384 4194304"}
    base.update({k.replace("__", "."): v for k, v in kv.items()})
    return {"network.sysctl": {"sysctls": {k: {"runtime": v} for k, v in base.items()}}, "firewall": {"rules": []}}


def site_facts() -> dict:
    facts = {h: sysctls() for h in SERVERS + RACK_A}
    facts["st01"] = sysctls(net__ipv4__tcp_sack="0")
    for h in RACK_B:
        facts[h] = sysctls(net__ipv4__tcp_rmem="4096 87380 262144")
    facts["st03"]["firewall"] = {"rules": [{
        "chain": "INPUT", "verdict": "drop", "limit": True, "addresses": [], "excluded_addresses": [],
        "text": "-A INPUT -p tcp -m hashlimit --hashlimit-above 20000/sec --hashlimit-mode srcip "
                "--hashlimit-name st -j DROP"}]}
    return facts


def path(src, dst, bps, rtt_ms, retrans=0, **extra) -> dict:
    sent = bps * 5 / 8
    return {"src": src, "dst": dst, "status": "ok", "measured_bps": bps, "expected_bps": G, "ratio": bps / G,
            "retransmits": retrans, "sent_bytes": int(sent), "rtt_us": rtt_ms * 1000, "idle_rtt_us": rtt_ms * 800,
            "mss": 1448, "streams": 1, **extra}


def rtt(a, b) -> float:
    return 20.0 if (a in RACK_B) != (b in RACK_B) else 0.2


def mesh() -> dict:
    paths = []
    for s in SERVERS:
        for w in RACK_A + RACK_B:
            for a, b in ((s, w), (w, s)):
                r = rtt(a, b)
                bps, retr = 945e6, 0
                if b in RACK_B:
                    bps = 48e6  # 128 KiB advertised at 20 ms
                if a == "st01":  # 0.3% loss, no SACK: timeouts
                    bps = min(bps, 70e6 if r < 1 else 9e6)
                    retr = int(bps * 5 / 8 / 1448 * 0.004)
                if b == "st03":  # hashlimit 20000 packets/s on what st03 receives
                    bps, retr = min(bps, 228e6), max(retr, 3000)
                if a == "st03" and b in RACK_A:  # its ACKs meet the same limit
                    bps, retr = 440e6, 900
                paths.append(path(a, b, bps, r, retr))
    return {"paths": paths}


def finding(rule, hosts, subject=None, changes=(), severity="high") -> Finding:
    return Finding(rule_id=rule, hosts=hosts, subject=subject, status=FindingStatus.fail, severity=Severity(severity),
                   changes=[Change(host=h, adapter=a, key=k, runtime=r, target=t) for h, a, k, r, t in changes])


def findings(m: dict) -> list[Finding]:
    out = []
    for p in m["paths"]:
        if p["ratio"] < 0.8:
            out.append(finding("MESH-PATH-SLOW", [p["src"], p["dst"]], f"{p['src']}->{p['dst']}"))
    fw = site_facts()["st03"]["firewall"]["rules"][0]["text"]
    out += [
        finding("NET-TCP-SACK", ["st01"], changes=[("st01", "sysctl", "net.ipv4.tcp_sack", "0", "1")]),
        finding("FW-STORAGE-NETWORK", ["st03"], "storage network", [("st03", "firewall", "iptables ip filter INPUT: " + fw,
                                                                     "present", "absent")]),
        # the rule pack's buffer finding raises rack B's receive buffers
        finding("MESH-BUFFER-LIMITED", RACK_B, "rack B", [(h, "sysctl", "net.ipv4.tcp_rmem", "4096 87380 262144",
                                                          "4096 87380 33554432") for h in RACK_B], "medium"),
        # a wrong blame of the old asymmetry analysis: st02 is clean, its slow paths are rack B's
        finding("MESH-ASYMMETRY", ["st02"], "st02 as sender", [("st02", "sysctl", "net.ipv4.tcp_wmem",
                                                                 "4096 16384 4194304", "4096 16384 33554432")]),
        finding("GPFS-PAGEPOOL-CLIENT", RACK_A, changes=[(h, "gpfs", "pagepool", "512M", "1G") for h in RACK_A],
                severity="medium"),
    ]
    return out


def report(m: dict, facts: dict, diag=None) -> ScanReport:
    hosts = [HostReport(name=h, reachable=True, address=ADDR[h], facts=f) for h, f in facts.items()]
    summary = ScanSummary(hosts=len(hosts), unreachable=0, probe_errors=0, by_status={}, failed_by_severity={},
                          worst_failed_severity=None, incomplete=False)
    r = ScanReport(tool_version="t", site="s", profiles=["generic"], started_at="a", finished_at="b", duration_s=1,
                   hosts=hosts, findings=findings(m) if diag else [], summary=summary, mesh=m)
    return r.with_diagnosis(diag) if diag else r
