"""What holds each measured path, and what it would carry after a set of fixes.

A path's state is read once from its measurement (a path record, advisor/paths/record.py: a mesh
test or production flows) and its two ends' facts (advisor/paths/host_view.py): link rate, RTT under load, MSS, the loss it saw, SACK and window scaling at both ends, the
windows its buffers allow and the packet-rate limits on its way. :func:`predict` applies a set
of :class:`Fix` es and returns the rate the models (advisor/mesh/throughput_models.py) give, with the
model that binds. Pure: plain dicts in, numbers out.

A window or buffer limit is calibrated on the measurement when the path was held by it (the
kernel said so: ``limited_by``, else the rate sits near window / RTT): the share of the buffer
the path really used is then known, and a larger buffer scales it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from advisor.mesh import throughput_models as m
from advisor.paths.host_view import HostFacts, HostView, host_view, receive_window, rule_meets, send_window
from advisor.paths.record import PathRecord

#: measurements that say nothing about the network
INCONCLUSIVE = ("cpu", "contended")
#: the largest window without the window scale option (RFC 7323 section 2)
UNSCALED_WINDOW = 65535
#: a path at this share of its expected rate is at its link (its queue is its own)
AT_LINK = 0.9
#: retransmitted / sent segments below which the loss models are not applied
MIN_MODEL_LOSS = 1e-5
#: a measurement below this share of its tightest modelled limit is one no model explains: what a
#: fix is predicted to buy there is at most the models' rate (inputs "at_most", "fit", "basis")
FIT_LOW = 0.75


@dataclass(frozen=True)
class Fix:
    """One thing a cause changes, as the path model sees it.

    kind: ``sack`` / ``wscale`` (turned on at ``host``), ``rmem`` / ``wmem`` (maximum raised to
    ``value`` bytes at ``host``), ``firewall`` (``host``'s acting rules removed), ``loss``
    (packets ``host`` sends are no longer lost: a by-hand repair), ``nic_speed`` (``host``'s NIC
    negotiated at its speed again: a by-hand repair)."""

    kind: str
    host: str
    value: float | None = None


@dataclass
class PathState:
    src: str
    dst: str
    subject: str
    measured_bps: float
    expected_bps: float | None
    link_bps: float | None
    rtt_s: float | None
    mss: int
    #: retransmitted / sent segments during the test
    loss: float
    sack: dict[str, bool]
    wscale: dict[str, bool]
    rmem_max: int | None
    wmem_max: int | None
    #: (host, packets/s, "data" | "ack") packet-rate limits met on the way
    policers: list[tuple[str, float, str]]
    #: hosts with rules that drop or reject (no rate): a cut rather than a cap
    dropping: list[str]
    limited_by: str | None
    #: the RTT the flow saw under load (the test's mean: queues others keep included), seconds
    rtt_loaded_s: float | None = None
    #: the congestion control the test ran (per socket; None: not known, the kernel's default)
    congestion: str | None = None
    #: the RTT the loss model uses: the idle or the loaded one (see _calibrate_loss_rtt)
    loss_rtt_s: float | None = None
    #: the window that held the path (bytes, measured), when it was window-bound, and which one
    window_used: float | None = None
    window_kind: str | None = None
    #: the tightest modelled limit as measured (cached by predict)
    tight_now: float | None = None
    #: what measured it: "mesh" (a test) or "flows" (production traffic)
    source: str = "mesh"
    inputs: dict[str, Any] = field(default_factory=dict)
    #: "src"/"dst" -> {interface, rises: {counter: n}}: the NIC counters of each end that rose during the
    #: test (advisor.mesh.results ``nic_errors``); an end whose counters were not read is absent
    nic_errors: dict[str, dict] = field(default_factory=dict)
    #: host -> its NIC's negotiated speed (bits/s), for the ends whose NIC runs below the expected rate: the
    #: link the path has until a repair by hand (Fix ``nic_speed``) brings the NIC to its speed
    nic_cap: dict[str, float] = field(default_factory=dict)

    @property
    def ratio(self) -> float | None:
        return self.measured_bps / self.expected_bps if self.expected_bps else None

    @property
    def data_policed(self) -> bool:
        """Does a packet-rate limit stand in the way of the data? Its drops are then the path's
        retransmissions. A limit on the ACKs only (what the receiver sends back) drops no data: the
        segments retransmitted are lost elsewhere."""
        return any(direction == "data" for _host, _pps, direction in self.policers)


def path_state(p: PathRecord | dict, facts: dict[str, HostFacts], addresses: dict[str, str] | None = None,
               views: dict[str, HostView] | None = None) -> PathState | None:
    """None for a path without a measurement (failed, or no rate). ``p``: a path record (a mesh
    path's dict is read as one); ``views``: a cache of host views."""
    rec = PathRecord.from_mesh(p) if isinstance(p, dict) else p
    if not rec.ok or not rec.measured_bps:
        return None
    src, dst = rec.src, rec.dst
    views = {} if views is None else views
    vs = views.get(src) or views.setdefault(src, host_view(facts.get(src)))
    vd = views.get(dst) or views.setdefault(dst, host_view(facts.get(dst)))
    mss = rec.segment_bytes
    # the path's own round trip: a flow held by loss or by a window keeps no queue of its own, so the
    # models use this RTT (else the mean, when the measurement gave no minimum)
    rtt_us = rec.idle_rtt_us or rec.loaded_rtt_us
    policers: list[tuple[str, float, str]] = []
    dropping: list[str] = []
    addr = addresses or {}
    for host, view, direction, peer in ((dst, vd, "data", src), (src, vs, "ack", dst)):
        for r in view.rules:
            if not rule_meets(r, addr.get(peer), addr.get(host)):
                continue
            pps = m.rule_packet_rate(r.get("text"))
            if pps:
                policers.append((host, pps, direction))
            elif str(r.get("verdict") or "").lower() in ("drop", "reject") and not r.get("limit"):
                dropping.append(host)
    st = PathState(
        src=src, dst=dst, subject=rec.subject, measured_bps=float(rec.measured_bps),
        expected_bps=rec.expected_bps, link_bps=m.link_goodput_bps(rec.expected_bps, mss),
        rtt_s=float(rtt_us) / 1e6 if rtt_us else None, mss=mss, loss=rec.loss_share or 0.0,
        sack={src: vs.sack, dst: vd.sack}, wscale={src: vs.wscale, dst: vd.wscale},
        rmem_max=vd.rmem_max, wmem_max=vs.wmem_max,
        policers=policers, dropping=sorted(set(dropping)), limited_by=rec.limited_by,
        congestion=rec.congestion, source=rec.source,
    )
    st.nic_errors = {end: e for end, e in rec.nic_errors.items() if isinstance(e, dict)}
    speeds = rec.nic_speed_bps
    st.nic_cap = {h: float(speeds[end]) for end, h in (("src", src), ("dst", dst))
                  if isinstance(speeds.get(end), (int, float)) and st.expected_bps and 0 < speeds[end] < st.expected_bps}
    loaded = rec.loaded_rtt_us
    st.rtt_loaded_s = max(st.rtt_s or 0.0, loaded / 1e6) if loaded else st.rtt_s
    st.inputs = {"rtt_ms": round(st.rtt_s * 1000, 3) if st.rtt_s else None, "mss": mss,
                 "loss": round(st.loss, 5), "link_bps": st.expected_bps, "congestion": st.congestion}
    _calibrate_window(st, rec.streams)
    _calibrate_loss_rtt(st, rec.shared_way)
    return st


def _loss_now(st: PathState) -> float:
    """The loss share the loss model reads: none where a packet-rate limit on the data's way drops
    (the policer's cap applies, not Mathis)."""
    return 0.0 if st.data_policed else st.loss


def _calibrate_loss_rtt(st: PathState, shared_way: bool) -> None:
    """The RTT the loss model uses: the one the flow saw under load where other traffic kept a queue
    on its way, else the idle one.

    A flow held by loss keeps no queue of its own, but it may sit behind one another flow keeps:
    the reverse direction's data ahead of its ACKs (a test in both directions at once, a busy
    production link), other flows on a shared port. Every round trip is then longer, and the loss
    costs it in proportion (the lab: 0.3% loss on a 200 Mbit/s LAN path with the reverse direction
    busy runs at 5 ms and ~45 Mbit/s, SACK or not; at the idle 0.07 ms the models say the link).
    That queue stays when a setting changes, so predictions use the same RTT. At its link, the queue
    is the flow's own: the idle RTT. Alone on a LAN (idle RTT < 1 ms), the RTT under load is the
    flow's own doing too (its recovery without SACK, the hosts' work per packet: 0.1-0.8 ms where
    0.05 is idle), which says nothing of what the loss leaves it once the fault is fixed: the idle
    RTT (and a lossy LAN flow is a range, see throughput_models.lossy_lan_bound). Beyond a LAN the
    flow's own share of its RTT is small and the RTT under load fits the lab best."""
    if not st.rtt_loaded_s or (st.ratio is not None and st.ratio >= AT_LINK):
        st.loss_rtt_s = st.rtt_s
    elif st.rtt_s and st.rtt_s < m.LAN_RTT_S and not shared_way:
        st.loss_rtt_s = st.rtt_s
    else:
        st.loss_rtt_s = st.rtt_loaded_s


def _calibrate_window(st: PathState, streams: int) -> None:
    """The window the path ran at, when a window held it (the kernel's word, else rate ~ window/RTT)."""
    if not st.rtt_s:
        return
    used = st.measured_bps * st.rtt_s / 8 / max(1, streams)
    if not all(st.wscale.values()) and used <= UNSCALED_WINDOW * 1.2:
        return  # an end without window scaling: the 64 KiB window held it, not a buffer (see _limits)
    if st.limited_by in ("receiver_window", "sender_buffer"):
        st.window_used, st.window_kind = used, st.limited_by
        return
    if st.limited_by not in (None, "unknown"):
        return
    near = [(abs(1 - used / cap), kind) for cap, kind in ((_rwnd(st), "receiver_window"), (_sndbuf(st), "sender_buffer"))
            if cap and 0.6 <= used / cap <= 1.2]
    if near:
        st.window_used, st.window_kind = used, min(near)[1]


def _rwnd(st: PathState, rmem: float | None = None) -> float | None:
    return receive_window(rmem if rmem is not None else st.rmem_max)


def _sndbuf(st: PathState, wmem: float | None = None) -> float | None:
    # a path held by its send buffer calibrates the share from its own measurement (_calibrate_window)
    return send_window(wmem if wmem is not None else st.wmem_max)


@dataclass
class Prediction:
    bps: float
    model: str
    inputs: dict[str, Any]


def _limits(st: PathState, by_kind: dict[str, dict[str, Fix]]) -> list[tuple[float, str, dict]]:
    """Every modelled limit of the path with the fixes in ``by_kind`` applied."""
    rtt_ms = st.inputs.get("rtt_ms")
    limits: list[tuple[float, str, dict]] = []
    if st.link_bps:
        caps = [bps for h, bps in st.nic_cap.items() if h not in by_kind.get("nic_speed", {})]
        link = min([st.link_bps] + [m.link_goodput_bps(c, st.mss) or c for c in caps])
        limits.append((link, "link", {"expected_bps": st.expected_bps, "mss": st.mss,
                                      **({"nic_speed_bps": min(caps)} if caps else {})}))
    if st.rtt_s:
        if any(not on and h not in by_kind.get("wscale", {}) for h, on in st.wscale.items()):
            limits.append((m.window_bps(UNSCALED_WINDOW, st.rtt_s), "window/rtt",
                           {"window_bytes": UNSCALED_WINDOW, "rtt_ms": rtt_ms}))
        for kind, host, size_now, cap_fn, label, bound_class in (
                ("rmem", st.dst, st.rmem_max, _rwnd, "receive_window_bytes", "receiver_window"),
                ("wmem", st.src, st.wmem_max, _sndbuf, "send_buffer_bytes", "sender_buffer")):
            if not size_now:
                continue
            fix = by_kind.get(kind, {}).get(host)
            size = fix.value if fix and fix.value and fix.value > size_now else size_now
            calibrated = st.window_used and st.window_kind == bound_class
            win = st.window_used * size / size_now if calibrated else cap_fn(st, size)
            limits.append((m.window_bps(win, st.rtt_s), "window/rtt", {label: int(win), "rtt_ms": rtt_ms}))
    fw_fixed = set(by_kind.get("firewall", {}))
    live_policers = [(h, pps, d) for h, pps, d in st.policers if h not in fw_fixed]
    for host, pps, direction in live_policers:
        per = pps * (2 if direction == "ack" else 1)  # one ACK for two segments
        limits.append((m.policer_bps(per, st.mss), "policer", {"packets_per_s": pps, "on": host, "counts": direction}))
    # loss on a path whose data cross a packet-rate limit is the limit's doing: it caps, Mathis does not apply
    loss = _loss_now(st)
    if st.src in by_kind.get("loss", {}) or st.dst in by_kind.get("loss_recv", {}):
        loss = 0.0
    rtt_loss = st.loss_rtt_s or st.rtt_s
    if loss >= MIN_MODEL_LOSS and rtt_loss:
        sack = all(on or h in by_kind.get("sack", {}) for h, on in st.sack.items())
        bounds: list[m.Bound] = []
        b = m.loss_bound(st.mss, rtt_loss, loss, sack=sack, congestion=st.congestion)
        if b is None and not sack:
            b = m.bbr_nosack_bound(st.measured_bps, loss, st.congestion)
        if b is not None:
            bounds.append(b)
        if sack and (b is None or b.bps >= (st.link_bps or 0)):
            lan = m.lossy_lan_bound(st.link_bps, st.mss, st.rtt_s, loss, st.congestion)
            if lan is not None:
                bounds.append(lan)
        # the mesh saw this loss hold the path, SACK as it was, where the models give more: the
        # measurement is the loss's limit until the loss or SACK changes
        held = st.limited_by == "loss" and sack == all(st.sack.values())
        if held and bounds and all(x.bps > st.measured_bps for x in bounds):
            bounds = [m.loss_as_measured(st.measured_bps, loss, rtt_loss, st.congestion, sack)]
        limits += [(x.bps, x.model, x.inputs) for x in bounds]
    return limits


class FixIndex(dict):
    """Fixes by kind, then host: built once per set of fixes, read once per path."""

    def __init__(self, fixes=()):
        super().__init__()
        for f in fixes:
            self.setdefault(f.kind, {})[f.host] = f


def local_index(idx: FixIndex, hosts: tuple[str, str] | None, without: set[Fix] | frozenset = frozenset(),
                also: set[Fix] | frozenset = frozenset()) -> FixIndex:
    """The fixes of ``idx`` at the two ends of a path (``hosts``; None: at every host), less
    ``without``, plus those of ``also`` there (they win over ``idx``'s of the same kind and host):
    what predict reads of them."""
    out = FixIndex()
    for kind, by_host in idx.items():
        for h in by_host if hosts is None else hosts:
            f = by_host.get(h)
            if f is not None and f not in without:
                out.setdefault(kind, {})[h] = f
    for f in also:
        if hosts is None or f.host in hosts:
            out.setdefault(f.kind, {})[f.host] = f
    return out


def fixes_at(idx: FixIndex, hosts: tuple[str, str]) -> list[Fix]:
    """The fixes of ``idx`` on ``hosts``."""
    return [by_host[h] for by_host in idx.values() for h in hosts if h in by_host]


def index_fixes(fixes) -> FixIndex:
    return fixes if isinstance(fixes, FixIndex) else FixIndex(fixes)


def _ends(by_host: dict[str, Fix], st: PathState) -> list[Fix]:
    return [f for f in (by_host.get(st.src), by_host.get(st.dst)) if f is not None]


def predict(st: PathState, fixes: "frozenset[Fix] | set[Fix] | FixIndex" = frozenset()) -> Prediction:
    """The rate the models give with ``fixes`` applied and everything else as measured.

    The fixes lift a path only when they raise its tightest modelled limit; otherwise the
    prediction is the measurement itself (model ``measured``): a limit nothing changes keeps its
    measured effect, whatever the models make of it."""
    idx = index_fixes(fixes)
    if not any(f.host in (st.src, st.dst) for kind in idx.values() for f in _ends(kind, st)):
        return Prediction(st.measured_bps, "measured", {})
    if st.tight_now is None:
        now = _limits(st, {})
        st.tight_now = min(x[0] for x in now) if now else 0.0
    after = _limits(st, idx)
    if not st.tight_now or not after:
        return Prediction(st.measured_bps, "measured", {})
    tight_now = st.tight_now
    v, model, inputs = min(after, key=lambda x: x[0])
    if v <= tight_now * 1.05 or v <= st.measured_bps:
        return Prediction(st.measured_bps, "measured", {})
    fit = st.measured_bps / tight_now
    if fit < FIT_LOW:
        # the models say the path should already carry more than it does: something no model here
        # describes may hold it too, and stay. The rate is what the models give, as at most
        inputs = {**inputs, "at_most": max(round(v), inputs.get("at_most") or 0), "fit": round(fit, 2),
                  "basis": f"the models give {tight_now / 1e6:.0f} Mb/s as measured; it ran at {fit:.2f} of that"}
    return Prediction(v, model, inputs)


def binding_limit(st: PathState) -> Prediction | None:
    """The tightest modelled limit with nothing changed (evidence: what the models say holds it)."""
    now = _limits(st, {})
    if not now:
        return None
    v, model, inputs = min(now, key=lambda x: x[0])
    return Prediction(v, model, inputs)
