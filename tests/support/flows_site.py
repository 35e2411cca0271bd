"""A site's production flows as its hosts' ``network.flows`` facts would hold them, for the flows tests: the
connections of storage servers (port 1094) to workers, each seen from both ends, with the counters a real
1 Gb/s network gives for each fault (the lab's figures: docs/diagnosis.md), and the hosts' sysctl and
firewall facts (tests/support/diagnosis_site.py's shapes).

* st01 -> wn01: st01's tcp_wmem max is 256 KiB and the path is 10 ms long: sndbuf_limited;
* st02 -> wn02: wn02's tcp_rmem max is 256 KiB: rwnd_limited with wn02's Recv-Q empty;
* st02 -> wn03: wn03's reader reads slowly (Recv-Q full): rwnd_limited, the application's;
* st01 -> wn04: wn04's switch port drops 1% of what reaches it: retransmissions;
* st02 -> st01: st01's packet-rate firewall drops st02's replication traffic;
* st02 -> wn01: clean, at its link; st01 -> outside clients: a sender with nothing to send.
"""

from __future__ import annotations

from advisor.model.facts import FactSet, HostFacts, ProbeResult, ProbeStatus
from tests.support.diagnosis_site import sysctls

ADDR = {"st01": "198.18.1.1", "st02": "198.18.1.2", "wn01": "198.18.2.1", "wn02": "198.18.2.2",
        "wn03": "198.18.2.3", "wn04": "198.18.2.4"}
WINDOW = 5.0
G = 10**9


def conn(local: str, lport: int, peer: str, pport: int, **kw) -> dict:
    c = {"local": local, "local_port": lport, "peer": peer, "peer_port": pport, "opened": False, "bytes_sent": 0,
         "bytes_received": 0, "segs_out": 0, "retrans": 0, "bytes_retrans": 0, "busy_ms": 0, "rwnd_limited_ms": 0,
         "sndbuf_limited_ms": 0, "app_limited": False, "recv_q": 0, "recv_q_max": 0, "send_q": 0, "lost": None,
         "rtt_ms": 0.2, "min_rtt_ms": 0.1, "cwnd": 10, "mss": 1448, "delivery_rate_bps": None, "snd_wnd": None,
         "congestion": "cubic", "sack": True, "timestamps": True, "wscale": [7, 7]}
    c.update(kw)
    return c


def flow(sender: str, receiver: str, port: int, bps: float, *, busy_ms: float = 5000, rtt_ms: float = 0.2,
         min_rtt_ms: float = 0.1, retrans_share: float = 0.0, rwnd_ms: int = 0, sndbuf_ms: int = 0,
         recv_q: int = 0, app_limited: bool = False, sport: int = 1094, snd_wnd: int | None = None) -> tuple[dict, dict]:
    """One connection's two sides: (the sender's, the receiver's)."""
    nbytes = int(bps * busy_ms / 1000 / 8)
    segs = nbytes // 1448
    s = conn(ADDR[sender], sport, ADDR[receiver], port, bytes_sent=nbytes, segs_out=segs,
             retrans=int(segs * retrans_share), busy_ms=int(busy_ms), rwnd_limited_ms=rwnd_ms,
             sndbuf_limited_ms=sndbuf_ms, app_limited=app_limited, rtt_ms=rtt_ms, min_rtt_ms=min_rtt_ms,
             snd_wnd=snd_wnd)
    r = conn(ADDR[receiver], port, ADDR[sender], sport, bytes_received=nbytes, recv_q=recv_q, recv_q_max=recv_q,
             rtt_ms=rtt_ms, min_rtt_ms=min_rtt_ms)
    return s, r


def flows_facts(conns: list[dict], tx_bytes: int = 0) -> dict:
    return {"window_s": WINDOW, "ports": ["1094", "1191"], "connections": conns, "idle": 3, "closed": 0,
            "interfaces": {"eth0": {"tx_bytes": tx_bytes, "rx_bytes": 0}, "lo": {"tx_bytes": 10**9, "rx_bytes": 10**9}}}


def site_connections() -> dict[str, list[dict]]:
    """host -> its connections over the window."""
    out: dict[str, list[dict]] = {h: [] for h in ADDR}

    def add(pair: tuple[dict, dict], sender: str, receiver: str) -> None:
        out[sender].append(pair[0])
        out[receiver].append(pair[1])

    add(flow("st01", "wn01", 41001, 160e6, rtt_ms=10.2, min_rtt_ms=10.0, sndbuf_ms=3800), "st01", "wn01")
    add(flow("st02", "wn02", 41002, 90e6, rtt_ms=10.1, min_rtt_ms=10.0, rwnd_ms=4200, snd_wnd=90_000), "st02", "wn02")
    add(flow("st02", "wn03", 41003, 16e6, rwnd_ms=4700, recv_q=3_000_000), "st02", "wn03")
    # wn03 read st01's data earlier in the window (nothing unread at either sample), at its own pace:
    # a 300 KB window under the 3 MiB its tcp_rmem allows
    add(flow("st01", "wn03", 41007, 20e6, rtt_ms=10.2, min_rtt_ms=10.0, rwnd_ms=2500, busy_ms=3000, snd_wnd=300_000),
        "st01", "wn03")
    add(flow("st01", "wn04", 41004, 45e6, rtt_ms=10.3, min_rtt_ms=10.0, retrans_share=0.01), "st01", "wn04")
    add(flow("st02", "st01", 41005, 110e6, retrans_share=0.004, sport=1191, rtt_ms=0.25), "st02", "st01")
    add(flow("st02", "wn01", 41006, 940e6, busy_ms=1200), "st02", "wn01")
    # outside clients reading from st01 at their own pace: only st01 sees them
    for i in range(3):
        out["st01"].append(conn(ADDR["st01"], 1094, f"203.0.113.{i + 1}", 50000 + i, bytes_sent=4_000_000,
                                segs_out=2800, busy_ms=300, app_limited=True, rtt_ms=30.0, min_rtt_ms=29.0))
    return out


def host_facts() -> dict[str, dict]:
    """host -> its probes' facts (network.sysctl, firewall) as the diagnosis reads them."""
    facts = {h: sysctls() for h in ADDR}
    facts["st01"] = sysctls(net__ipv4__tcp_wmem="4096 16384 262144")
    facts["wn02"] = sysctls(net__ipv4__tcp_rmem="4096 87380 262144")
    facts["st01"]["firewall"] = {"rules": [{
        "chain": "INPUT", "verdict": "drop", "limit": True, "addresses": [f"{ADDR['st02']}/32"],
        "excluded_addresses": [],
        "text": f"-A INPUT -s {ADDR['st02']}/32 -p tcp -m hashlimit --hashlimit-above 10000/sec --hashlimit-mode srcip "
                "--hashlimit-name st -j DROP"}]}
    return facts


def factset(tx: dict[str, int] | None = None, link_rates: dict[str, int] | None = None) -> FactSet:
    fs = FactSet(site="flows", context={"link_rates": link_rates or {h: G for h in ADDR}, "addresses": dict(ADDR)})
    facts = host_facts()
    for h, conns in site_connections().items():
        hf = HostFacts(name=h, address=ADDR[h])
        probes = {"network.flows": flows_facts(conns, (tx or {}).get(h, 0)), **facts[h]}
        for name, f in probes.items():
            hf.probes[name] = ProbeResult(probe=name, status=ProbeStatus.ok, facts=f)
        fs.hosts[h] = hf
    return fs
