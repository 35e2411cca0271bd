"""What limited a measured path: one class per path, from what the kernel and iperf3 said during the test.

Pure: ``classify_path(path) -> (limited_by, evidence)`` over a mesh path record (advisor.mesh.results),
also over paths of older scans that have no ``tcp_info`` (then retransmits, RTT and windows decide,
or ``unknown``). The RTTs, the queue and the loss share are the path record's
(advisor/paths/record.py); production flows are classified in the same words by
advisor/flows/limits.py, which shares the thresholds and the loss tests here.

Anchors: M-Lab NDT reads the same TCP_INFO chronographs (BusyTime, RWndLimited, SndBufLimited) to
say whether a transfer was limited by the receiver's window, the sender's buffer or the network;
ESnet fasterdata: a window smaller than the bandwidth-delay product caps a path at window / RTT,
packet loss caps it far below the link (Mathis et al.), and a test whose host ran out of CPU says
nothing about the network. The order of the checks:

1. ``link``: the path reached LINK_RATIO of its expected rate (or of the median path);
2. ``cpu``: an end's iperf3 used CPU_PCT of a core, or waited for a CPU (ready to run, none
   free: /proc/PID/schedstat) CPU_WAIT_SEVERE of the test: inconclusive, never blamed on the
   network;
3. ``contended``: an end's NIC moved CONTENDED_FRAC of the test's bytes in other traffic:
   inconclusive;
4. ``receiver_window`` / ``sender_buffer``: rwnd_limited / sndbuf_limited took WINDOW_FRAC of
   the busy time (the larger one names the class), or (paths without tcp_info, or below that
   fraction) the rate is the receiver's advertised window / RTT. A window limit while the
   receiver's iperf3 waited CPU_WAIT of the test for a CPU is ``cpu``: a receiver that is not
   scheduled does not read, and its window closes (measured: 41-85% rwnd_limited on a clean
   10 Gbit/s lab path whose receiver waited 38%, 20% in another run; 83% on a 64 KiB window whose
   receiver waited 5%). When the receiver's largest advertised window would carry the expected
   rate at the idle RTT, its buffer did not stop the sender: CPU_WAIT_AMPLE is enough. A rate at
   window / RTT counts only at the RTT without a queue (behind a bottleneck queue any open window
   is in flight);
5. ``policer``: retransmits, no queueing delay and a steady delivery rate (a policer drops at a
   fixed rate without queueing; Flach et al., SIGCOMM 2016);
   ``loss``: retransmits of QUEUE_LOSS of the segments or more, or of LOSS_RATE without a
   queue, rate below the link, not window-limited; or of LOSS_RATE behind a queue when the loss
   model (advisor/mesh/throughput_models.py) at the RTT the flow saw under load gives the measured
   rate: a queue another flow keeps (the reverse direction's data ahead of the ACKs) lengthens
   every round trip, and the loss holds the flow at that RTT;
6. ``cpu``: no window limit and no loss explain the rate and an end's iperf3 waited for a CPU
   CPU_WAIT of the test, or an end's host had a task waiting for a CPU CPU_PRESSURE of it (PSI:
   the kernel's network work waits too) (a starved end delays its ACKs and reads: on a loaded
   machine the RTT rises by milliseconds as it would behind a queue, so this comes before 7);
7. ``link``: the RTT during the test rose well above the idle RTT (a bottleneck queue) with few
   retransmits, and the path reached LINK_QUEUED_RATIO of its expected rate or an end's NIC moved
   NIC_FULL of it (the link is full, shared: not a fault), or NIC_FULL of its own negotiated speed
   where that is below the expected rate (a NIC negotiated low: the diagnosis names it). Far below the expected rate with
   neither NIC full, a queue says a hop on the way is slower than the path should be: ``unknown``,
   never ``link``;
8. ``unknown``: nothing above is supported.

A loaded machine delays every wake-up of iperf3 a little: the slow paths of a busy shared lab
wait 5-12% of the test, a path starved by busy loops on every core 20-50% (measured:
tests/lab/test_lab_diagnosis.py). Only a severe wait outranks what TCP_INFO shows; a moderate
one explains a rate nothing else does.
"""

from __future__ import annotations

from typing import Any

from advisor.mesh import throughput_models as tm
from advisor.paths.record import PathRecord

LINK_RATIO = 0.9
#: a queued path at this share of its expected rate is held by the queue's link; below it, only when
#: an end's NIC was full (NIC_FULL of the expected rate): otherwise a hop on the way is slower
LINK_QUEUED_RATIO = 0.8
NIC_FULL = 0.9
#: a measured rate up to this factor above the loss model's is explained by the loss
LOSS_FIT = 1.33
CPU_PCT = 90.0
#: iperf3 waited on a run queue (ready, no CPU free) this share of the test: CPU contention took
#: the rate, whoever caused it (the machine's busy share alone says nothing on a shared host)
CPU_WAIT = 0.2
CPU_WAIT_SEVERE = 0.5
#: a window limit on a receiver whose advertised window was ample (it would carry the expected rate
#: at the idle RTT) closed because the receiver did not read: a receiver wait this long explains it
CPU_WAIT_AMPLE = 0.1
#: the host's CPU pressure (PSI "some": a task ready to run, no CPU free) this share of the test: the
#: kernel's own network work (softirq) may have waited too, which iperf3's schedstat does not show
CPU_PRESSURE = 0.3
CONTENDED_FRAC = 0.2
WINDOW_FRAC = 0.3
#: retransmitted segments per segment sent above which a slow path is losing packets
LOSS_RATE = 1e-4
#: queueing delay (RTT during the test minus idle RTT) that shows a bottleneck queue: at least
#: QUEUE_MIN_US and QUEUE_FRAC of the idle RTT
QUEUE_MIN_US = 1000.0
QUEUE_FRAC = 0.25
#: a queued path losing more than this share of its segments is lossy, not just queued (a
#: drop-tail bottleneck drops little: the lab's 100 Mbit/s link behind a 40 ms queue retransmits
#: 0.2%; 0.5% random loss with SACK off retransmits 0.8-1.8%)
QUEUE_LOSS = 0.005
#: coefficient of variation of the sampled delivery rate below which the rate is steady
STEADY_CV = 0.1
#: a window within this factor of rate x RTT explains the rate (paths without tcp_info, or with
#: rwnd_limited at least WINDOW_SEEN of the busy time)
WINDOW_MATCH = 1.25
WINDOW_SEEN = 0.1

CLASSES = ("link", "receiver_window", "sender_buffer", "loss", "policer", "cpu", "contended", "unknown")
#: classes that say the measurement is not about the network: re-measured alone before concluding
INCONCLUSIVE = ("cpu", "contended")


def _ratio(r: PathRecord) -> float | None:
    if r.ratio is not None:
        return r.ratio
    if r.expected_bps and r.measured_bps:
        return r.measured_bps / r.expected_bps
    return None


def _rate(r: PathRecord, ratio: float | None) -> str:
    if ratio is None:
        return ""
    return f", rate {ratio:.2f} of {'link' if r.ratio_basis != 'median' else 'the median path'}"


def queued(r: PathRecord) -> bool:
    """The RTT while the flow ran rose QUEUE_MIN_US and QUEUE_FRAC above the idle RTT: a queue."""
    queue, idle = r.queue_us, r.idle_rtt_us
    return queue is not None and queue >= max(QUEUE_MIN_US, QUEUE_FRAC * (idle or 0.0))


def _cpu(r: PathRecord, wait_limit: float, pressure_limit: float | None = None) -> str | None:
    p = r.data
    for who, key in (("sender", "cpu_sender_pct"), ("receiver", "cpu_receiver_pct")):
        v = p.get(key)
        if v is not None and v >= CPU_PCT:
            return f"{who}'s iperf3 used {v:.0f}% of a core"
    wait = p.get("cpu_wait_frac") or {}
    busy = p.get("host_cpu_busy") or {}
    for end in sorted(("src", "dst"), key=lambda e: -(wait.get(e) or 0.0)):
        v = wait.get(end)
        if v is not None and v >= wait_limit:
            b = busy.get(end)
            on = f" (its CPUs {b:.0%} busy)" if b is not None else ""
            return f"{p.get(end)}'s iperf3 waited for a CPU {v:.0%} of the test{on}"
    if pressure_limit is not None:
        pressure = p.get("cpu_pressure_frac") or {}
        for end in sorted(("src", "dst"), key=lambda e: -(pressure.get(e) or 0.0)):
            v = pressure.get(end)
            if v is not None and v >= pressure_limit:
                return (f"{p.get(end)}'s host had a task waiting for a CPU {v:.0%} of the test (PSI: the "
                        "kernel's network work included)")
    return None


def _contended(r: PathRecord) -> str | None:
    p = r.data
    other = p.get("nic_other_bytes") or {}
    test = p.get("test_bytes") or (p.get("sent_bytes") or 0)
    if not test:
        return None
    for end in ("src", "dst"):
        v = other.get(end)
        if v is not None and v >= CONTENDED_FRAC * test:
            return f"{p.get(end)}'s NIC carried {v / 1e6:.1f} MB of other traffic ({v / test:.0%} of the test's)"
    return None


def classify_path(path: dict[str, Any]) -> tuple[str | None, str | None]:
    """(limited_by, evidence) of one mesh path record; (None, None) for a failed path. The evidence
    ends with the congestion control the test ran, where known (what loss costs depends on it)."""
    r = PathRecord.from_mesh(path)
    cls, why = _classify(r)
    if why and r.congestion:
        why = f"{why}; {r.congestion}"
    return cls, why


def _classify(r: PathRecord) -> tuple[str | None, str | None]:
    p = r.data
    if not r.ok or r.measured_bps is None:
        return None, None
    ratio = _ratio(r)
    ti = r.tcp_info
    if ratio is not None and ratio >= LINK_RATIO:
        return "link", f"rate {ratio:.2f} of {'link' if r.ratio_basis != 'median' else 'the median path'}"
    why = _cpu(r, CPU_WAIT_SEVERE)
    if why:
        return "cpu", f"{why}: inconclusive{_rate(r, ratio)}"
    why = _contended(r)
    if why:
        return "contended", f"{why}: inconclusive{_rate(r, ratio)}"
    rate_txt = _rate(r, ratio)
    rw, sb = ti.get("rwnd_limited_frac") or 0.0, ti.get("sndbuf_limited_frac") or 0.0
    if max(rw, sb) >= WINDOW_FRAC:
        if rw >= sb:
            starved = (p.get("cpu_wait_frac") or {}).get("dst")
            if starved is not None and starved >= (CPU_WAIT_AMPLE if _window_ample(r) else CPU_WAIT):
                # a receiver that gets no CPU does not read: its buffer fills and the window closes
                return "cpu", (f"rwnd_limited {rw:.0%} of busy time while {r.dst}'s iperf3 waited for a "
                               f"CPU {starved:.0%} of the test (a receiver not read fills its window): "
                               f"inconclusive{rate_txt}")
            return "receiver_window", f"rwnd_limited {rw:.0%} of busy time{rate_txt}"
        return "sender_buffer", f"sndbuf_limited {sb:.0%} of busy time{rate_txt}"
    why = _window_match(r)
    # with TCP_INFO, the receiver's window must also have stopped the sender now and then: a rate
    # at window / RTT is otherwise a coincidence (in flight = rate x RTT behind any bottleneck)
    if why and rw >= sb and (not ti or rw >= WINDOW_SEEN):
        seen = f", rwnd_limited {rw:.0%} of busy time" if ti else ""
        return "receiver_window", f"{why}{seen}{rate_txt}"
    idle = r.idle_rtt_us
    queue = r.queue_us
    loss = r.loss_share
    if lossy(r, loss, starved=bool(_cpu(r, CPU_WAIT))):
        starved = _cpu(r, CPU_WAIT, CPU_PRESSURE)
        if starved and _loss_frees_at_idle(r, loss):
            # the loss holds the path only at the RTT the busy hosts gave it: at the idle RTT the same
            # loss would leave it its link (a SACK LAN path on two loaded cores runs at 0.6)
            return "cpu", (f"{starved}; retransmits {loss:.2%} would leave the link at the idle RTT: "
                           f"inconclusive{rate_txt}")
        return lossy_class(r, loss, rate_txt)
    why = _cpu(r, CPU_WAIT, CPU_PRESSURE)
    if why:
        return "cpu", f"{why}, no window limit or loss seen: inconclusive{rate_txt}"
    if queued(r):
        retr = f", retransmits {loss:.2%}" if loss is not None and loss >= LOSS_RATE else ", few retransmits"
        full = _nic_full(r)
        if ratio is None or ratio >= LINK_QUEUED_RATIO or full:
            return "link", (f"rtt {queue / 1000:.1f} ms above idle ({idle / 1000:.1f} ms): a bottleneck queue"
                            f"{retr}{', ' + full if full else ''}{rate_txt}")
        # far below the expected rate with neither end's NIC full: a hop on the way is slower than
        # the path should be (or busy with traffic the ends do not see); not a link that is merely full
        return "unknown", (f"rtt {queue / 1000:.1f} ms above idle ({idle / 1000:.1f} ms): a queue on the way, "
                           f"neither end's NIC full{retr}{rate_txt}")
    return "unknown", f"no window, loss, queue or CPU limit seen{rate_txt}"


def lossy(r: PathRecord, loss: float | None, starved: bool = False) -> bool:
    """The path lost enough to be held by it: QUEUE_LOSS of its segments, or LOSS_RATE without a
    queue (and an end not ``starved`` of CPU), or LOSS_RATE behind a queue when the loss model at
    the RTT the flow saw gives the measured rate (a queue someone else keeps, the reverse direction's
    data ahead of this flow's ACKs or other flows on a shared port, lengthens every round trip, and
    at that RTT the loss holds the rate)."""
    if loss is None:
        return False
    if loss >= QUEUE_LOSS:
        return True
    if loss < LOSS_RATE:
        return False
    return (not queued(r) and not starved) or (queued(r) and _loss_explains(r, loss))


def _nic_full(r: PathRecord) -> str | None:
    """An end's NIC moved NIC_FULL of the path's expected rate during the test (its own traffic and
    others' together): the link is full, shared rather than slow. Or NIC_FULL of its own speed where it
    negotiated less than the path expects (``nic_speed_bps``): the NIC's link is what is full, a NIC
    negotiated low (the diagnosis names it)."""
    rates, want = r.data.get("nic_bps") or {}, r.expected_bps
    if not want:
        return None
    speeds = r.nic_speed_bps
    for end, way in (("src", "sent"), ("dst", "received")):
        v = rates.get(end)
        if v is not None and v >= NIC_FULL * want:
            return f"{r.data.get(end)}'s NIC {way} {v / 1e6:.0f} Mb/s in all"
        own = speeds.get(end)
        if own and own < want and ((v is not None and v >= NIC_FULL * own)
                                   or (r.measured_bps or 0) >= LINK_RATIO * own):
            return (f"{r.data.get(end)}'s NIC, negotiated at {own / 1e6:.0f} Mb/s of the path's {want / 1e6:.0f}, "
                    f"carried the path at {(r.measured_bps or 0) / 1e6:.0f} Mb/s")
    return None


def _sack(r: PathRecord) -> bool:
    return r.tcp_info.get("sack") is not False


def _loss_frees_at_idle(r: PathRecord, loss: float) -> bool:
    """At the idle RTT the loss model gives the path at least LINK_RATIO of its expected rate."""
    idle, want = r.idle_rtt_us, r.expected_bps
    if not idle or not want:
        return False
    bound = tm.loss_bound(r.segment_bytes, idle / 1e6, loss, sack=_sack(r), congestion=r.congestion)
    return bound is None or bound.bps >= LINK_RATIO * want


def _loss_explains(r: PathRecord, loss: float) -> bool:
    """The loss model at the RTT the flow saw under load gives at most the measured rate (within
    LOSS_FIT): the loss holds the path, whoever keeps the queue."""
    rtt = r.loaded_rtt_us
    if not rtt or not r.measured_bps:
        return False
    bound = tm.loss_bound(r.segment_bytes, rtt / 1e6, loss, sack=_sack(r), congestion=r.congestion)
    return bound is not None and r.measured_bps <= bound.bps * LOSS_FIT


def lossy_class(r: PathRecord, loss: float, rate_txt: str) -> tuple[str, str]:
    """``policer`` when the rate was steady without a queue (a policer drops at a fixed rate without
    queueing), else ``loss``; with the evidence."""
    ti = r.tcp_info
    queue = r.queue_us
    cv = ti.get("delivery_rate_cv")
    q = f"queueing {queue / 1000:.1f} ms" if queue is not None else "no RTT to tell queueing"
    if cv is not None and cv <= STEADY_CV and (ti.get("samples") or 0) >= 4 and queue is not None and not queued(r):
        return "policer", f"retransmits {loss:.2%} of segments, {q}, steady rate (cv {cv:.2f}){rate_txt}"
    cw = ""
    if ti.get("cwnd") and ti.get("cwnd_last"):
        cw = f", cwnd {ti['cwnd_last']} of max {ti['cwnd']}"
    sack = "" if not ti else (", sack on" if ti.get("sack") else ", sack off")
    return "loss", f"retransmits {loss:.2%} of segments, {q}{cw}{sack}{rate_txt}"


def _window_ample(r: PathRecord) -> bool:
    """The receiver's largest advertised window carries the expected rate at the idle RTT: its buffer
    is not what stopped the sender, a window that closed did (the receiver did not read)."""
    wnd, want, idle = r.max_snd_wnd, r.expected_bps, r.idle_rtt_us
    return bool(wnd and want and idle) and wnd * 8 / (idle / 1e6) >= want


def _window_match(r: PathRecord) -> str | None:
    """The rate matches the receiver's largest advertised window / RTT.

    The RTT is the one without a queue: a window that limits keeps less than the path's
    bandwidth-delay product in flight, so no queue builds. Behind a bottleneck queue the RTT
    during the test grows until rate x RTT is whatever window is open (a tautology, not a limit).
    """
    wnd, rtt, bps = r.max_snd_wnd, r.rtt_us, r.measured_bps
    if not (wnd and rtt and bps):
        return None
    if queued(r):
        rtt = r.idle_rtt_us
    cap = wnd * 8 / (rtt / 1e6)
    if cap / WINDOW_MATCH <= bps <= cap * WINDOW_MATCH:
        return f"rate = receiver window {wnd / 1024:.0f} KiB / rtt {rtt / 1000:.1f} ms"
    return None
