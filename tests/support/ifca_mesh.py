"""The IFCA site's mesh as measured and its hosts' facts, for the mesh diagnosis tests: two GPFS servers with
tcp_sack=0 whose sends to the four workers are slow, the reverse at line rate."""

from __future__ import annotations

from advisor.mesh.results import judge_paths

G = 10**9
GPFS = ["gpfs01", "gpfs02"]
WN = ["wn01", "wn02", "wn03", "wn04"]


def path(src, dst, mbps=None, *, expected=G, retr=0, rtt=300.0, error=None, mss=1448, seconds=5, wnd=None):
    if error or mbps is None:
        return {"src": src, "dst": dst, "status": "failed", "error": error or "x", "measured_bps": None,
                "expected_bps": expected}
    bps = mbps * 1e6
    return {"src": src, "dst": dst, "status": "ok", "error": None, "measured_bps": bps, "sent_bps": bps,
            "expected_bps": expected, "retransmits": retr, "sent_bytes": int(bps * seconds / 8), "mss": mss,
            "rtt_us": rtt, "min_rtt_us": rtt * 0.8, "max_rtt_us": rtt * 2, "max_snd_wnd": wnd, "streams": 1}


def ifca_paths(slow_mbps=(310, 280, 450, 390)):
    ps = []
    for g in GPFS:
        for w, m in zip(WN, slow_mbps):
            ps.append(path(g, w, m, retr=900))        # storage -> worker: degraded
            ps.append(path(w, g, 941, retr=3))         # worker -> storage: fine
        ps.append(path("se01", g, 940))
        ps.append(path(g, "se01", 938, retr=2))        # the same sender, another path: fine
    for a in WN:
        for b in WN:
            if a != b:
                ps.append(path(a, b, 944))
    ps.append(path("gpfs01", "gpfs02", error="unable to connect to server: Connection timed out"))
    ps.append(path("gpfs02", "gpfs01", error="unable to connect to server: Connection timed out"))
    judge_paths(ps)
    return ps


def sysctl_facts(sack="1", ts="1", wmem=(4096, 16384, 4194304), rmem=(4096, 131072, 6291456), qdisc="fq_codel"):
    def entry(v):
        ints = [int(x) for x in str(v).split()] if all(x.isdigit() for x in str(v).split()) else None
        return {"runtime": str(v), "runtime_ints": ints, "line": f"k = {v}"}
    return {"sysctls": {
        "net.ipv4.tcp_sack": entry(sack),
        "net.ipv4.tcp_timestamps": entry(ts),
        "net.ipv4.tcp_wmem": entry(" ".join(map(str, wmem))),
        "net.ipv4.tcp_rmem": entry(" ".join(map(str, rmem))),
        "net.core.default_qdisc": entry(qdisc),
    }}


def firewall_facts(rules=()):
    return {"rules": list(rules), "chains": []}


DROP_RULE = {"backend": "nft", "family": "inet", "table": "filter", "chain": "input", "verdict": "drop",
             "limit": False, "addresses": ["10.0.0.1/32"], "interfaces": [],
             "text": "ip saddr 10.0.0.1 tcp dport 5301-5400 drop"}


def ifca_facts():
    facts = {h: {"network.sysctl": sysctl_facts(), "firewall": firewall_facts()} for h in WN + ["se01"]}
    facts["gpfs01"] = {"network.sysctl": sysctl_facts(sack="0"), "firewall": firewall_facts()}
    facts["gpfs02"] = {"network.sysctl": sysctl_facts(sack="0"), "firewall": firewall_facts([DROP_RULE])}
    return facts
