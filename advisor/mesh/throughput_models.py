"""The throughput models a prediction names (docs/diagnosis.md). Pure arithmetic, no I/O.

Every function returns bits per second (goodput, what iperf3 reports on the receiver) or None
when an input is missing. The models, and the public sources they come from:

``link``            the expected rate times the TCP goodput share of a frame: MSS / (MSS + 66) (20 B IP,
                    32 B TCP with timestamps, 14 B Ethernet); 1448 B segments on a 1 Gb/s link -> 956 Mb/s.
``window/rtt``      one window per round trip (ESnet fasterdata, BDP). A receive window is only part of
                    ``tcp_rmem``'s maximum: ``tcp_adv_win_scale`` (ip-sysctl.rst: 1 by default, half of
                    the buffer is window) or, on kernels >= 6.6, a measured scaling ratio; the share the
                    path really had is read from the measurement when the path is window-bound.
``mathis``          Mathis, Semke, Mahdavi, Ott, CCR 27(3) 1997: MSS/RTT x C/sqrt(p), for a loss-based
                    congestion control (cubic, reno) that recovers several losses per window (SACK, RFC
                    2018); C = 1.1 as the lab measured it (the paper: 0.87-1.31 by ACK strategy), RTT
                    the one the flow saw under load.
``mathis+timeouts`` the same with retransmission timeouts (Padhye, Firoiu, Towsley, Kurose, SIGCOMM 1998):
                    without SACK a sender repairs one loss per round trip, and losses that cluster in a
                    window end in a timeout of at least the kernel's 200 ms minimum RTO (the timeout term
                    weighted as the lab measured it).
``bbr-nosack``      bbr paces to its bandwidth estimate and loses nothing to random loss with SACK; without
                    SACK it does, in no modelled way: the measured rate stands for it.
``policer``         packets/s x MSS x 8: a packet-rate limit (iptables hashlimit/limit, nft limit) caps
                    what crosses it; ACKs count too.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

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


@dataclass(frozen=True)
class Bound:
    """A modelled limit: the rate, the model's name and what it was computed from."""

    bps: float
    model: str
    inputs: dict[str, Any] = field(default_factory=dict)


#: loss-based congestion controls (AIMD on every loss episode): the loss models hold for them
LOSS_BASED = ("cubic", "reno", "htcp", "highspeed", "scalable", "bic", "illinois", "westwood", "dctcp")
#: Mathis's C for cubic and reno as the lab measured it: measured rate x loaded RTT x sqrt(p) / MSS
#: (bench/bench_tcp_models.py, docs/diagnosis.md: median 1.09 over 21 lossy SACK paths at 200 Mbit/s)
MATHIS_C_FIT = 1.1
#: the timeout term of Padhye et al. as the lab measured it without SACK (fitted over 58 paths of
#: RTT >= 1 ms, 49 within 0.75-1.33): Linux's recovery (NewReno, early retransmit) times out less
#: often than Padhye's Q = 3 sqrt(3bp/8) says. On a LAN (< 1 ms) no weight fits: see docs/diagnosis.md
TIMEOUT_WEIGHT = 0.2


def loss_bound(mss: int | None, rtt_s: float | None, p: float | None, sack: bool = True,
               congestion: str | None = None) -> Bound | None:
    """What a loss share ``p`` leaves of one flow at ``rtt_s`` (the RTT it sees: idle when it fills
    its link, else the one it saw under load), by its congestion control (None: the kernel's
    default, cubic on EL9 and Debian); None where the loss holds nothing a model can say.

    * cubic, reno and other loss-based controls: Mathis with C = MATHIS_C_FIT with SACK; without,
      Padhye's formula, its round-trip term Mathis's and its timeout term at TIMEOUT_WEIGHT
      (``mathis+timeouts``);
    * bbr with SACK: no loss bound (it paces to its bandwidth estimate: the lab measured the link
      at 1% loss and 20 ms);
    * bbr without SACK: loss costs it (0.2-0.85 of the link at 0.3-1% in the lab) in a way no
      model here describes: ``bbr-nosack`` takes ``observed_bps``, the rate measured as it is, so
      turning SACK on lifts it to the other limits.
    """
    if not rtt_s or rtt_s <= 0 or not p or p <= 0:
        return None
    cc = (congestion or "cubic").lower()
    m = int(mss or DEFAULT_MSS)
    inputs = {"loss": round(p, 5), "rtt_ms": round(rtt_s * 1000, 3), "mss": m, "sack": sack, "congestion": cc}
    if cc == "bbr" or cc.startswith("bbr"):
        return None
    bits = m * 8.0
    if sack:
        return Bound(bits / rtt_s * MATHIS_C_FIT / math.sqrt(p), "mathis", inputs)
    t0 = max(RTO_MIN_S, 2 * rtt_s)
    # the round-trip term is Mathis's with the same C: without SACK a flow never beats one with it
    per_segment = (rtt_s * math.sqrt(p) / MATHIS_C_FIT
                   + TIMEOUT_WEIGHT * t0 * min(1.0, 3 * math.sqrt(3 * p / 8)) * p * (1 + 32 * p * p))
    return Bound(bits / per_segment, "mathis+timeouts", inputs)


#: an idle RTT below this is a LAN: there a loss-based flow's rate is set by how long the hosts take
#: per window, not by the path (see lossy_lan_bound)
LAN_RTT_S = 0.001


def lossy_lan_bound(link_bps: float | None, mss: int | None, idle_rtt_s: float | None, p: float | None,
                    congestion: str | None = None) -> Bound | None:
    """What a loss-based flow with SACK keeps of its link on a LAN when the loss models give it the
    link: no model describes that region (docs/diagnosis.md), so this is a range with a point.

    The flow's average window W = C / sqrt(p) segments takes X = W x MSS x 8 / link to send; while the
    sawtooth's low points wait a round trip of host processing, the link idles. The lab measured 1
    Gbit/s LAN paths with SACK and 0.1-1% loss at 0.55-1.0 of their link (0.67-0.98 on ifca after
    SACK was back, on shared cores), 200 Mbit/s ones at 0.97-0.98. The low end is X / (X + RTT idle),
    the high end the link, the rate their geometric middle (``lossy-link``, with ``at_most`` and
    ``low``). None beyond a LAN, without loss, or for bbr (no loss bound)."""
    if not link_bps or not idle_rtt_s or idle_rtt_s >= LAN_RTT_S or not p or p <= 0:
        return None
    cc = (congestion or "cubic").lower()
    if cc.startswith("bbr"):
        return None
    m = int(mss or DEFAULT_MSS)
    window_s = MATHIS_C_FIT / math.sqrt(p) * m * 8 / link_bps
    low = link_bps * window_s / (window_s + idle_rtt_s)
    return Bound(math.sqrt(low * link_bps), "lossy-link",
                 {"low": round(low), "at_most": round(link_bps), "loss": round(p, 5),
                  "rtt_ms": round(idle_rtt_s * 1000, 3), "congestion": cc,
                  "basis": "a lossy flow on a LAN keeps this share of its link in the lab (docs/diagnosis.md)"})


def bbr_nosack_bound(observed_bps: float, p: float, congestion: str | None) -> Bound | None:
    """bbr without SACK at a loss share ``p``: the measured rate is the limit (see loss_bound)."""
    if not (congestion or "").lower().startswith("bbr") or not p or not observed_bps:
        return None
    return Bound(float(observed_bps), "bbr-nosack", {"loss": round(p, 5), "congestion": congestion})


def loss_as_measured(observed_bps: float, p: float, rtt_s: float | None, congestion: str | None,
                     sack: bool) -> Bound | None:
    """A flow the mesh saw held by loss, where the loss models give more than it carried: the
    measured rate is the loss's limit while the loss and SACK stay as they were. The models fall
    short where recovery costs round trips the idle RTT does not show and timeouts of 200 ms or
    more: without SACK on a LAN (the lab: 0.3% loss at 0.01 ms, cubic, 0.04-0.16 of a 1 Gbit/s link
    where Padhye gives the link), and at a few percent of loss with SACK (3%: 0.03-0.05 of the link
    where the lossy-link range gives most of it). docs/diagnosis.md, the characterisation."""
    if not p or not observed_bps:
        return None
    return Bound(float(observed_bps), "loss-as-measured",
                 {"loss": round(p, 5), "rtt_ms": round(rtt_s * 1000, 3) if rtt_s else None, "sack": sack,
                  "congestion": congestion,
                  "basis": "the mesh saw the loss hold it below what the models give: held at the rate measured"})


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
