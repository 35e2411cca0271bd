"""One typed record per directed path, whichever measured it: a mesh test (advisor/mesh/results.py)
or the site's production flows (advisor/flows/paths.py). It is the one owner of what is derived from
a measurement, so the mesh's symptom analysis (advisor/mesh/symptoms.py), the classifiers of what
held a path (advisor/mesh/limits.py, advisor/flows/limits.py) and the cause stage's path model
(advisor/diagnosis/paths.py) read the same quantities:

* the idle RTT: the smallest round trip the path showed (the pings just before a mesh test,
  iperf3's and the kernel's minimum; the kernel's ``minrtt`` for a flow): the path without a queue;
* the loaded RTT: the one the flow saw while it ran (iperf3's mean over the test, else the kernel's
  smoothed RTT), queues included;
* the queue: loaded minus idle RTT;
* the loss share: segments retransmitted / data segments sent over the measurement (the kernel
  counts both for a flow; a mesh path counts iperf3's retransmits over its sent bytes / MSS); 0
  below MIN_RETRANSMITS (one or two events are no rate);
* whether other traffic shared the path's way while it was measured (``shared_way``): a test
  both ways at once, or an end's NIC carrying OTHER_TRAFFIC of the path's bytes beyond them (the
  mesh counts both ends' ``nic_other_bytes``; a flow path its sender's NIC over the window);
* the sender's kernel view (``tcp_info``: the chronographs' shares of busy time, the rate's
  steadiness, the options) in the mesh's shape for both sources.

The JSON records themselves stay as they are stored (the mesh's keys never change: older reports
load); ``data`` keeps the record as read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: a segment when the measurement names no MSS
DEFAULT_MSS = 1448
#: the end of a flow path that is no site host (its peers grouped: advisor/flows/paths.py); no site
#: host can have this name (host names are letters, digits, '.', '_' and '-')
OUTSIDE = "(outside)"
#: fewer retransmitted segments than this are below what a measurement resolves: no loss share (a
#: production flow's window of a few seconds, a slow test; a lossy path retransmits hundreds)
MIN_RETRANSMITS = 3
#: other traffic on an end's NIC, as a share of the path's own bytes, that keeps a queue on its way
OTHER_TRAFFIC = 0.1


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _pos(v: Any) -> float | None:
    n = _num(v)
    return n if n is not None and n > 0 else None


@dataclass
class PathRecord:
    src: str
    dst: str
    #: "mesh" (a test) or "flows" (production traffic)
    source: str
    ok: bool
    measured_bps: float | None = None
    expected_bps: float | None = None
    ratio: float | None = None
    ratio_basis: str | None = None
    #: payload the sender sent over the measurement, and its data segments (None: not counted)
    sent_bytes: float | None = None
    segments: float | None = None
    retransmits: float | None = None
    #: mean RTT while it ran, the smallest seen by the measurement, pings just before it (us)
    rtt_us: float | None = None
    min_rtt_us: float | None = None
    ping_rtt_us: float | None = None
    mss: int | None = None
    congestion: str | None = None
    #: parallel connections (iperf3 streams, a flow path's connections): a window is per connection
    streams: int = 1
    #: the largest window the receiver advertised (bytes)
    max_snd_wnd: float | None = None
    #: the sender's kernel TCP_INFO summary (advisor.mesh.tcp_info's shape); {} when not read
    tcp_info: dict[str, Any] = field(default_factory=dict)
    #: each end's NIC error and drop counters that rose during a mesh test, and each end's NIC speed
    #: ({"src": ..., "dst": ...}; advisor/mesh/results.py); {} for a flow path
    nic_errors: dict[str, Any] = field(default_factory=dict)
    nic_speed_bps: dict[str, Any] = field(default_factory=dict)
    limited_by: str | None = None
    evidence: str | None = None
    error: str | None = None
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def subject(self) -> str:
        return f"{self.src}->{self.dst}"

    @property
    def segment_bytes(self) -> int:
        return int(self.mss or self.tcp_info.get("mss") or DEFAULT_MSS)

    @property
    def idle_rtt_us(self) -> float | None:
        """The path's own round trip: the smallest it showed (pings, iperf3's and the kernel's minimum)."""
        mins = [v for v in (self.ping_rtt_us, self.min_rtt_us, _pos(self.tcp_info.get("min_rtt_us"))) if v]
        return min(mins) if mins else None

    @property
    def loaded_rtt_us(self) -> float | None:
        """The RTT the flow saw while it ran: the measurement's mean, else the kernel's smoothed RTT."""
        return self.rtt_us or _pos(self.tcp_info.get("rtt_us"))

    @property
    def queue_us(self) -> float | None:
        """Loaded minus idle RTT: time spent in queues while the flow ran (None: either unknown)."""
        loaded, idle = self.loaded_rtt_us, self.idle_rtt_us
        if loaded is None or idle is None:
            return None
        return max(0.0, loaded - idle)

    @property
    def loss_share(self) -> float | None:
        """Retransmitted / data segments sent over the measurement (None: not counted)."""
        retr = self.retransmits if self.retransmits is not None else _num(self.tcp_info.get("retrans"))
        segs = self.segments
        if segs is None and self.sent_bytes:
            segs = self.sent_bytes / self.segment_bytes
        if retr is None or not segs:
            return None
        return retr / max(1.0, segs) if retr >= MIN_RETRANSMITS else 0.0

    @property
    def shared_way(self) -> bool:
        """Did other traffic share the path's way while it was measured: the reverse direction's data
        (a test both ways at once), or other traffic on an end's NIC (OTHER_TRAFFIC of the path's own)?"""
        d = self.data
        if d.get("mode") == "bidir":
            return True
        own = _pos(d.get("test_bytes")) or self.sent_bytes
        if not own:
            return False
        if self.source == "flows":
            nic, window = _pos(d.get("sender_nic_bps")), _pos(d.get("window_s"))
            other = [nic * window / 8 - own] if nic and window else []
        else:
            other = list((d.get("nic_other_bytes") or {}).values())
        return any((v or 0) >= OTHER_TRAFFIC * own for v in other)

    @classmethod
    def from_mesh(cls, p: dict[str, Any]) -> "PathRecord":
        """A mesh path record (advisor/mesh/results.py PATH_KEYS, any version)."""
        ok = p.get("status") == "ok"
        return cls(
            src=str(p.get("src")), dst=str(p.get("dst")), source="mesh", ok=ok,
            measured_bps=_pos(p.get("measured_bps")), expected_bps=_pos(p.get("expected_bps")),
            ratio=_num(p.get("ratio")), ratio_basis=p.get("ratio_basis"),
            sent_bytes=_pos(p.get("sent_bytes")), retransmits=_num(p.get("retransmits")),
            rtt_us=_pos(p.get("rtt_us")), min_rtt_us=_pos(p.get("min_rtt_us")), ping_rtt_us=_pos(p.get("idle_rtt_us")),
            mss=int(p["mss"]) if _pos(p.get("mss")) else None,
            congestion=p.get("congestion") or (p.get("tcp_info") or {}).get("congestion") or None,
            streams=int(p.get("streams") or 1) if _pos(p.get("streams")) else 1,
            max_snd_wnd=_pos(p.get("max_snd_wnd")), tcp_info=dict(p.get("tcp_info") or {}),
            nic_errors=dict(p.get("nic_errors") or {}), nic_speed_bps=dict(p.get("nic_speed_bps") or {}),
            limited_by=p.get("limited_by"), evidence=p.get("limited_evidence"), error=p.get("error"), data=p,
        )

    @classmethod
    def from_flow(cls, p: dict[str, Any]) -> "PathRecord":
        """A production-flow path (advisor/flows/paths.py FLOW_PATH_KEYS)."""
        ms = _pos(p.get("rtt_ms"))
        min_ms = _pos(p.get("min_rtt_ms"))
        busy = _num(p.get("busy_s"))
        info = {
            "busy_s": busy,
            "rwnd_limited_frac": _num(p.get("rwnd_limited_frac")),
            "sndbuf_limited_frac": _num(p.get("sndbuf_limited_frac")),
            "sack": p.get("sack"), "wscale": p.get("wscale"), "mss": p.get("mss"), "congestion": p.get("congestion"),
            "connections": p.get("connections"), "samples": 2, "source": "flows",
        }
        return cls(
            src=str(p.get("src")), dst=str(p.get("dst")), source="flows", ok=bool(_pos(p.get("measured_bps"))),
            measured_bps=_pos(p.get("measured_bps")), expected_bps=_pos(p.get("expected_bps")),
            ratio=_num(p.get("ratio")), ratio_basis="expected" if p.get("expected_bps") else None,
            sent_bytes=_pos(p.get("bytes")), segments=_pos(p.get("segments")), retransmits=_num(p.get("retransmits")),
            rtt_us=ms * 1000 if ms else None, min_rtt_us=min_ms * 1000 if min_ms else None,
            mss=int(p["mss"]) if _pos(p.get("mss")) else None, congestion=p.get("congestion") or None,
            streams=int(p.get("connections") or 1) if _pos(p.get("connections")) else 1,
            max_snd_wnd=_pos(p.get("snd_wnd")),
            tcp_info={k: v for k, v in info.items() if v is not None}, limited_by=p.get("limited_by"),
            evidence=p.get("evidence"), data=p,
        )
