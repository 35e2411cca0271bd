"""The throughput models a prediction names (docs/diagnosis.md). Pure arithmetic, no I/O.

Every function returns bits per second (goodput, what iperf3 reports on the receiver) or None
when an input is missing. The models, and the public sources they come from:

``link``            the expected rate times the TCP goodput share of a frame: MSS / (MSS + 66) (20 B IP,
                    32 B TCP with timestamps, 14 B Ethernet); 1448 B segments on a 1 Gb/s link -> 956 Mb/s.
``window/rtt``      one window per round trip (ESnet fasterdata, BDP). A receive window is only part of
                    ``tcp_rmem``'s maximum: ``tcp_adv_win_scale`` (ip-sysctl.rst: 1 by default, half of
                    the buffer is window) or, on kernels >= 6.6, a measured scaling ratio; the share the
                    path really had is read from the measurement when the path is window-bound.
``mathis``          Mathis, Semke, Mahdavi, Ott, CCR 27(3) 1997: MSS/RTT x C/sqrt(p), C = 1.22, for a
                    sender that recovers several losses per window (SACK, RFC 2018).
``mathis+timeouts`` the same with retransmission timeouts (Padhye, Firoiu, Towsley, Kurose, SIGCOMM 1998):
                    without SACK a sender repairs one loss per round trip, and losses that cluster in a
                    window end in a timeout of at least the kernel's 200 ms minimum RTO.
``policer``         packets/s x MSS x 8: a packet-rate limit (iptables hashlimit/limit, nft limit) caps
                    what crosses it; ACKs count too.
"""

from __future__ import annotations

import math
import re

#: Mathis et al.'s constant for periodic loss and an ACK per segment (0.87-1.31 by ACK strategy)
MATHIS_C = 1.22
#: Linux's minimum retransmission timeout (include/net/tcp.h TCP_RTO_MIN = HZ/5)
RTO_MIN_S = 0.2
#: IP + TCP (with timestamps) + Ethernet header bytes per segment
FRAME_OVERHEAD = 66
DEFAULT_MSS = 1448


def link_goodput_bps(expected_bps: float | None, mss: int | None = None) -> float | None:
    """What a TCP flow carries on a link of ``expected_bps`` once headers are paid."""
    if not expected_bps:
        return None
    m = mss or DEFAULT_MSS
    return float(expected_bps) * m / (m + FRAME_OVERHEAD)


def window_bps(window_bytes: float | None, rtt_s: float | None) -> float | None:
    if not window_bytes or not rtt_s or rtt_s <= 0:
        return None
    return float(window_bytes) * 8.0 / rtt_s


def advertised_share(adv_win_scale: int | None) -> float:
    """The share of the receive buffer advertised as window (ip-sysctl.rst, tcp_adv_win_scale)."""
    s = 1 if adv_win_scale is None else int(adv_win_scale)
    if s > 0:
        return 1.0 - 2.0 ** (-s)
    return 2.0 ** s


def mathis_bps(mss: int | None, rtt_s: float | None, p: float | None, sack: bool = True) -> float | None:
    """Loss-bound throughput; ``sack`` False adds the timeouts of a sender without SACK."""
    if not rtt_s or rtt_s <= 0 or not p or p <= 0:
        return None
    m = float(mss or DEFAULT_MSS) * 8.0
    if sack:
        return m / rtt_s * MATHIS_C / math.sqrt(p)
    b = 1.0  # segments per ACK: Linux quick-acks during recovery
    t0 = max(RTO_MIN_S, 2 * rtt_s)
    per_segment = rtt_s * math.sqrt(2 * b * p / 3) + t0 * min(1.0, 3 * math.sqrt(3 * b * p / 8)) * p * (1 + 32 * p * p)
    return m / per_segment


def policer_bps(packets_per_s: float | None, mss: int | None) -> float | None:
    if not packets_per_s:
        return None
    return float(packets_per_s) * float(mss or DEFAULT_MSS) * 8.0


_UNITS = {"s": 1.0, "sec": 1.0, "second": 1.0, "m": 1 / 60, "min": 1 / 60, "minute": 1 / 60,
          "h": 1 / 3600, "hour": 1 / 3600, "d": 1 / 86400, "day": 1 / 86400}
_IPT_RATE = re.compile(r"--(?:hashlimit-above|hashlimit-upto|hashlimit|limit)\s+(\d+)/(\w+)")
_NFT_RATE = re.compile(r"limit rate (?:over )?(\d+)/(\w+)")


def rule_packet_rate(text: str | None) -> float | None:
    """Packets per second of a packet-rate limit in an iptables or nft rule's text (None: none, or a
    byte-rate limit, whose units say bytes: ``kb/s``, ``mbytes/second``)."""
    if not text:
        return None
    for rx in (_IPT_RATE, _NFT_RATE):
        m = rx.search(text)
        if m:
            unit = m.group(2).lower()
            if unit in _UNITS:
                return int(m.group(1)) * _UNITS[unit]
    return None
