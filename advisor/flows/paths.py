"""The site's production flows as paths: every host's ``network.flows`` connections joined by their
addresses into one record per (sender, receiver), the report's ``flows`` (docs/report-schema.md).

* Each connection counts for the direction it moved data in over the window (MIN_DATA_BYTES or
  more; a connection that moved data both ways counts for both). The sender's side holds the
  sender's kernel view (chronographs, retransmits, RTT, options); where the receiver was scanned
  too, the same connection seen from it gives its Recv-Q (did the reader read?).
* Peer addresses are mapped to site hosts: a host's own address, its NICs' addresses
  (``network.nic``) and the local addresses of its flows. A peer that is no site host is
  ``(outside)``: a host's outside peers are grouped into one path each way. Loopback connections
  stay on their host and are left out.
* ``measured_bps`` is the rate while the path had data to send: its bytes over the busiest of its
  connections' busy time (tcpi_busy_time, which holds the window- and buffer-limited time), the
  window when the sender was not sampled. ``expected_bps``: the slower end's link rate (the site
  file's, else its fastest physical NIC).

Then each path is classified (advisor/flows/limits.py). Pure: facts in, plain data out.
"""

from __future__ import annotations

import functools
import ipaddress
import statistics
from collections import Counter
from typing import Any

from advisor.model.facts import FactSet
from advisor.flows.limits import RECVQ_FULL_BYTES, classify_flow
from advisor.model.link_rate import host_link_rate_bps
from advisor.paths import host_view as hv
from advisor.paths.record import OUTSIDE

PROBE = "network.flows"
#: a connection counts for a direction when it moved this much that way over the window
MIN_DATA_BYTES = 64 * 1024
#: the keys of a flow path, in order (the issue's first, then what the path model reads)
FLOW_PATH_KEYS = (
    "src", "dst", "connections", "bytes", "measured_bps", "rtt_ms", "min_rtt_ms", "retrans_ratio",
    "limited_by", "evidence",
    "expected_bps", "ratio", "window_s", "busy_s", "segments", "retransmits", "rwnd_limited_frac",
    "sndbuf_limited_frac", "app_limited_share", "reader_recv_q", "reader_full_share", "mss", "congestion", "sack",
    "wscale", "snd_wnd", "sender_window_cap", "reader_window_cap", "sender_nic_bps", "sender_link_bps", "seen_by", "peers", "mesh",
)

Endpoint = tuple[str, int | None]


@functools.lru_cache(maxsize=1 << 16)
def _loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def address_owners(factset: FactSet, flows: dict[str, dict]) -> dict[str, str]:
    """address -> the one site host that holds it (addresses two hosts claim are left out, but a
    host's own ``address``, from the site file, always maps to it: scanned or not)."""
    claims: dict[str, set[str]] = {}
    for name, hf in factset.hosts.items():
        found = set()
        for iface in (hf.facts("network.nic") or {}).get("interfaces", {}).values():
            if iface.get("is_loopback"):
                continue
            found.update(str(a).split("/", 1)[0] for a in iface.get("addresses") or [])
        found.update(c.get("local") for c in (flows.get(name) or {}).get("connections") or [])
        for a in found:
            if a and not _loopback(a):
                claims.setdefault(a, set()).add(name)
    owners = {a: next(iter(hs)) for a, hs in claims.items() if len(hs) == 1}
    declared = {**((factset.context or {}).get("addresses") or {}),
                **{name: hf.address for name, hf in factset.hosts.items() if hf.address}}
    owners.update({a: name for name, a in declared.items() if a})
    return owners


def _nic_bps(facts: dict, way: str) -> float | None:
    """The busiest interface's bits/s one way over the window (loopback left out)."""
    window = facts.get("window_s") or 0
    rates = [v.get(way) or 0 for name, v in (facts.get("interfaces") or {}).items() if name != "lo"]
    return round(max(rates) * 8 / window) if rates and window else None


def flow_paths(factset: FactSet) -> dict[str, Any] | None:
    """``{"window_s", "hosts", "paths": [...]}`` (None: no host sampled its flows)."""
    flows = {name: f for name, hf in factset.hosts.items() if (f := hf.facts(PROBE)) is not None}
    if not flows:
        return None
    owners = address_owners(factset, flows)
    site_rates = (factset.context or {}).get("link_rates") or {}
    links = {name: host_link_rate_bps(hf, site_rates, hf.facts("network.nic")) for name, hf in factset.hosts.items()}
    rmem = {name: hv.sysctl_max({hv.SYSCTL: hf.facts(hv.SYSCTL)}, "net.ipv4.tcp_rmem") for name, hf in factset.hosts.items()}
    wmem = {name: hv.sysctl_max({hv.SYSCTL: hf.facts(hv.SYSCTL)}, "net.ipv4.tcp_wmem") for name, hf in factset.hosts.items()}
    own: dict[tuple[Endpoint, Endpoint], tuple[str, dict]] = {}
    for host, f in flows.items():
        for c in f.get("connections") or []:
            if _loopback(c.get("local") or "") or _loopback(c.get("peer") or ""):
                continue
            own[((c["local"], c.get("local_port")), (c["peer"], c.get("peer_port")))] = (host, c)
    grouped: dict[tuple[str, str], list] = {}
    peers: dict[tuple[str, str], set[str]] = {}
    for (local, peer), (host, c) in own.items():
        if (c.get("bytes_sent") or 0) >= MIN_DATA_BYTES:
            other = own.get((peer, local))
            dst = other[0] if other else owners.get(peer[0], OUTSIDE)
            if dst != host:
                grouped.setdefault((host, dst), []).append((host, c, other[1] if other else None))
                peers.setdefault((host, dst), set()).add(peer[0])
        if (c.get("bytes_received") or 0) >= MIN_DATA_BYTES and (peer, local) not in own:
            src = owners.get(peer[0], OUTSIDE)  # the sender's side was not sampled
            if src != host:
                grouped.setdefault((src, host), []).append((host, None, c))
                peers.setdefault((src, host), set()).add(peer[0])
    paths = [_path(src, dst, conns, flows, links, (hv.send_window(wmem.get(src)), hv.receive_window(rmem.get(dst))),
                   len(peers[(src, dst)]))
             for (src, dst), conns in sorted(grouped.items())]
    windows = [f.get("window_s") for f in flows.values() if f.get("window_s")]
    return {"window_s": round(statistics.median(windows), 3) if windows else None, "hosts": len(flows), "paths": paths}


def _most(values: list) -> Any:
    vals = [v for v in values if v is not None]
    return Counter(vals).most_common(1)[0][0] if vals else None


def _path(src: str, dst: str, conns: list[tuple[str, dict | None, dict | None]], flows: dict[str, dict],
          links: dict[str, int | None], caps: tuple[float | None, float | None], n_peers: int) -> dict[str, Any]:
    """One path's record; ``caps``: the windows the sender's tcp_wmem and the receiver's tcp_rmem
    maxima allow (None: not read)."""
    sent = [s for _h, s, _r in conns if s is not None]
    host = conns[0][0]
    window = (flows.get(src if sent else host) or {}).get("window_s")
    nbytes = sum(s["bytes_sent"] for s in sent) + sum(r["bytes_received"] for _h, s, r in conns if s is None and r)
    busy_ms = max((s.get("busy_ms") or 0 for s in sent), default=0)
    span = min(window or busy_ms / 1000, busy_ms / 1000) if busy_ms else window
    measured = round(nbytes * 8 / span) if span else None
    by_bytes = sum(s["bytes_sent"] for s in sent) or 1
    rtts = [(s["rtt_ms"], s["bytes_sent"]) for s in sent if s.get("rtt_ms")]
    if not rtts:
        rtts = [(r["rtt_ms"], r["bytes_received"]) for _h, s, r in conns if r and r.get("rtt_ms")]
    weight = sum(w for _, w in rtts) or 1
    mins = [s.get("min_rtt_ms") for s in sent] + [r.get("min_rtt_ms") for _h, _s, r in conns if r]
    segments = sum(s.get("segs_out") or 0 for s in sent) if sent else None
    retrans = sum(s.get("retrans") or 0 for s in sent) if sent else None
    busy_all = sum(s.get("busy_ms") or 0 for s in sent)
    # the readers: the connections seen from the receiver too, by the bytes each carried
    readers = [(s["bytes_sent"] if s else r["bytes_received"], r) for _h, s, r in conns if r is not None]
    read_bytes = sum(b for b, _ in readers) or 1
    full = sum(b for b, r in readers if (r.get("recv_q_max") or 0) >= RECVQ_FULL_BYTES)
    rate_src, rate_dst = links.get(src), links.get(dst)
    expected = min((x for x in (rate_src, rate_dst) if x), default=None)
    src_facts = flows.get(src) or {}
    p: dict[str, Any] = dict.fromkeys(FLOW_PATH_KEYS)
    p.update(
        src=src, dst=dst, connections=len(conns), bytes=nbytes, measured_bps=measured,
        rtt_ms=round(sum(v * w for v, w in rtts) / weight, 3) if rtts else None,
        min_rtt_ms=min((v for v in mins if v), default=None),
        retrans_ratio=round(retrans / segments, 6) if segments else None,
        expected_bps=expected, ratio=round(measured / expected, 4) if measured and expected else None,
        window_s=window, busy_s=round(busy_ms / 1000, 3) if sent else None, segments=segments, retransmits=retrans,
        rwnd_limited_frac=round(sum(s.get("rwnd_limited_ms") or 0 for s in sent) / busy_all, 4) if busy_all else None,
        sndbuf_limited_frac=round(sum(s.get("sndbuf_limited_ms") or 0 for s in sent) / busy_all, 4) if busy_all else None,
        app_limited_share=round(sum(s["bytes_sent"] for s in sent if s.get("app_limited")) / by_bytes, 4) if sent else None,
        reader_recv_q=max(r.get("recv_q_max") or 0 for _b, r in readers) if readers else None,
        reader_full_share=round(full / read_bytes, 4) if readers else None,
        mss=_most([s.get("mss") for s in sent]), congestion=_most([s.get("congestion") for s in sent]),
        sack=all(s.get("sack") for s in sent) if sent else None, wscale=_most([tuple(s["wscale"]) for s in sent
                                                                                if s.get("wscale")]),
        snd_wnd=max((s.get("snd_wnd") or 0 for s in sent), default=0) or None,
        sender_window_cap=round(caps[0]) if caps[0] else None, reader_window_cap=round(caps[1]) if caps[1] else None,
        sender_nic_bps=_nic_bps(src_facts, "tx_bytes") if sent else None, sender_link_bps=rate_src if sent else None,
        seen_by="both" if sent and readers and all(s is not None and r is not None for _h, s, r in conns)
        else ("sender" if sent else "receiver"),
        peers=n_peers if OUTSIDE in (src, dst) else None,
    )
    if p["wscale"] is not None:
        p["wscale"] = list(p["wscale"])
    p["limited_by"], p["evidence"] = classify_flow(p)
    return p
