"""What a path's ends hold that acts on it, read from their probes' facts once: the TCP sysctls a
path model reads (SACK, window scaling, the buffers' maxima and the windows they allow) and the firewall rules that act on
packets (drop, reject, queue, rate limit). The mesh's symptom analysis and the cause stage's path
model read them here.

Facts are plain data as the probes dump them: ``{"network.sysctl": {...} | None, "firewall": {...} | None}``.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any

HostFacts = dict[str, dict[str, Any] | None]  # probe name -> facts (plain data) of one host

SYSCTL = "network.sysctl"
#: the share of tcp_wmem's maximum a sender keeps in flight: the send buffer holds the data in flight
#: and its socket-buffer overhead (measured on a 1 Gb/s path at 50 ms, a 4 MiB maximum carried ~480
#: Mb/s, a window of 0.7 of the buffer: docs/diagnosis.md)
SNDBUF_SHARE = 0.7
#: the share of tcp_rmem's maximum a receiver advertises (tcp_adv_win_scale's default 1: half; kernels
#: >= 6.6 measure a scaling ratio instead, often more)
RCVBUF_SHARE = 0.5
FIREWALL = "firewall"
#: firewall verdicts that act on packets
ACTING_VERDICTS = {"drop", "reject", "queue"}


def _entry(facts: HostFacts | None, key: str) -> dict:
    s = (facts or {}).get(SYSCTL) or {}
    return (s.get("sysctls") or {}).get(key) or {}


def sysctl(facts: HostFacts | None, key: str) -> str | None:
    """The runtime value, blanks normalised (None: not read)."""
    v = _entry(facts, key).get("runtime")
    return None if v is None else " ".join(str(v).split())


def sysctl_ints(facts: HostFacts | None, key: str) -> list[int] | None:
    ints = _entry(facts, key).get("runtime_ints")
    return list(ints) if ints else None


def sysctl_max(facts: HostFacts | None, key: str) -> int | None:
    """The last field of a ``min default max`` sysctl (tcp_wmem / tcp_rmem), or a plain int."""
    ints = sysctl_ints(facts, key)
    if ints:
        return int(ints[-1])
    v = sysctl(facts, key)
    try:
        return int(v.split()[-1]) if v else None
    except (ValueError, IndexError):
        return None


def send_window(wmem_max: float | None) -> float | None:
    """The window a send buffer of ``wmem_max`` bytes keeps in flight."""
    return wmem_max * SNDBUF_SHARE if wmem_max else None


def receive_window(rmem_max: float | None) -> float | None:
    """The window a receive buffer of ``rmem_max`` bytes advertises."""
    return rmem_max * RCVBUF_SHARE if rmem_max else None


def acting_rules(facts: HostFacts | None) -> list[dict] | None:
    """Rules that drop, reject, queue or rate-limit; None when the host has no firewall facts."""
    fw = (facts or {}).get(FIREWALL)
    if fw is None:
        return None
    return [r for r in fw.get("rules") or []
            if str(r.get("verdict") or "").lower() in ACTING_VERDICTS or r.get("limit")]


def _in(address: str | None, nets: list) -> bool:
    if not address:
        return False
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    for n in nets or []:
        try:
            if ip in ipaddress.ip_network(str(n), strict=False):
                return True
        except ValueError:
            continue
    return False


def rule_meets(rule: dict, peer: str | None, own: str | None) -> bool:
    """Does an incoming-side rule act on packets from ``peer`` (to its host, ``own``)? A rule that
    names addresses acts on those only; an output or postrouting rule never on what arrives."""
    chain = str(rule.get("chain") or "").lower()
    if "output" in chain or "postrouting" in chain:
        return False
    if _in(peer, rule.get("excluded_addresses")) or _in(own, rule.get("excluded_addresses")):
        return False
    nets = rule.get("addresses") or []
    return not nets or _in(peer, nets) or _in(own, nets)


@dataclass
class HostView:
    """What the path model reads of one host's facts, read once per host."""

    sack: bool
    wscale: bool
    rmem_max: int | None
    wmem_max: int | None
    rules: list[dict]


def host_view(facts: HostFacts | None) -> HostView:
    return HostView(sack=sysctl(facts, "net.ipv4.tcp_sack") != "0",
                    wscale=sysctl(facts, "net.ipv4.tcp_window_scaling") != "0",
                    rmem_max=sysctl_max(facts, "net.ipv4.tcp_rmem"), wmem_max=sysctl_max(facts, "net.ipv4.tcp_wmem"),
                    rules=acting_rules(facts) or [])
