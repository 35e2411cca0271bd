"""What held each production-flow path over the sample window: the mesh's words (``link``,
``receiver_window``, ``sender_buffer``, ``loss``, ``unknown``; advisor/mesh/limits.py, whose
thresholds and loss tests this shares) and ``application``: a sender that had nothing to send or a
reader that did not read. An application-limited flow is never a network cause.

Reading the sender's side of each connection (M-Lab NDT reads the same TCP_INFO chronographs),
with the receiver's Recv-Q where the receiver was scanned too, in this order:

1. ``link``: the sender's NIC carried NIC_FULL of its link rate over the window, all traffic
   together: the link is shared, not slow;
2. ``application``: the windows held the sender WINDOW_FRAC of the busy time (rwnd_limited, and
   sndbuf_limited: a sender whose peer's window is closed fills its buffer) while the reader left
   RECVQ_FULL_BYTES unread (Recv-Q, in a sample) on most of the path's bytes; or rwnd_limited
   WINDOW_FRAC of it while the window
   the receiver advertised (``snd_wnd`` at the sender) stayed below WINDOW_UNUSED of what its
   tcp_rmem maximum allows: receive autotuning sizes the window to the reader's pace, so a small
   window under an ample maximum is the reader's, not the buffer's;
3. ``receiver_window`` / ``sender_buffer``: rwnd_limited / sndbuf_limited WINDOW_FRAC of the busy
   time (the larger names it); Recv-Q near zero at the reader says the window was small, not read.
   Or the rate while busy is the window the sender's tcp_wmem (the receiver's tcp_rmem) maximum
   allows over the idle RTT (within WINDOW_MATCH) and the chronograph saw that limit WINDOW_SEEN of
   the busy time: the kernel stops the sndbuf_limited clock whenever a little space frees, so it
   under-counts a buffer that holds the flow all along (the mesh reads the advertised window so);
4. ``loss``: retransmits as the mesh's loss test counts them (advisor.mesh.limits.lossy). Two
   samples cannot tell a policer's steady rate: a packet-rate limit shows as loss here, and the
   cause stage finds the rule that drops on the way (advisor/diagnosis/paths.py);
5. ``link``: the rate while busy reached LINK_RATIO of the expected rate;
6. ``application``: the sender had nothing to send (``app_limited`` in both samples on most bytes);
7. ``link`` / ``unknown`` behind a queue, as the mesh says; else ``unknown``.

A path seen from its receiver only (the sender outside the site or not scanned) is
``application`` when its reader kept Recv-Q full, else ``unknown``.
"""

from __future__ import annotations

from typing import Any

from advisor.mesh import limits as ml
from advisor.paths.record import PathRecord

#: Recv-Q a reader that does not read leaves in a sample (one that keeps up leaves next to nothing: a
#: GRO-merged burst is 64 KiB at most)
RECVQ_FULL_BYTES = 128 * 1024
#: a receiver that advertised at most this share of the window its tcp_rmem maximum allows was not
#: held by its buffer: the kernel grows the window as fast as the application reads (autotuning)
WINDOW_UNUSED = 0.25
#: share of a path's bytes on connections whose reader kept Recv-Q full / whose sender was app-limited
MOST = 0.5

#: the classes that name the network or a host's settings (a symptom); the others do not
NETWORK_CLASSES = ("receiver_window", "sender_buffer", "loss", "policer")
CLASSES = (*ml.CLASSES, "application")


def shared_link(p: dict[str, Any]) -> bool:
    """The flow path's sender's NIC carried NIC_FULL of its link over the window: what the path got was
    its share of a full link, not what it would carry."""
    nic, link = p.get("sender_nic_bps"), p.get("sender_link_bps")
    return bool(nic and link and nic >= ml.NIC_FULL * link)


def says_nothing_of_the_network(p: dict[str, Any]) -> bool:
    """A flow path whose rate the application set (``application``) or a shared link did: it tells
    neither what the path would carry nor that anything on it holds it (verify compares no such rate)."""
    return p.get("limited_by") == "application" or (p.get("limited_by") == "link" and shared_link(p))


def _rate_txt(r: PathRecord) -> str:
    return f", rate while busy {r.ratio:.2f} of link" if r.ratio is not None else ""


def classify_flow(p: dict[str, Any]) -> tuple[str, str]:
    """(limited_by, evidence) of one flow path (advisor/flows/paths.py)."""
    r = PathRecord.from_flow(p)
    cls, why = _classify(r, p)
    if r.congestion:
        why = f"{why}; {r.congestion}"
    return cls, why


def _classify(r: PathRecord, p: dict[str, Any]) -> tuple[str, str]:
    rate = _rate_txt(r)
    reader_full = p.get("reader_full_share")
    recvq = p.get("reader_recv_q")
    if p.get("seen_by") == "receiver":
        if reader_full is not None and reader_full >= MOST:
            return "application", f"{r.dst}'s reader kept {recvq / 1024:.0f} KiB unread (Recv-Q): the reader did not read"
        return "unknown", "only the receiver's side was sampled (the sender is outside the site or was not scanned)"
    nic, link = p.get("sender_nic_bps"), p.get("sender_link_bps")
    if shared_link(p):
        return "link", (f"{r.src}'s NIC sent {nic / 1e6:.0f} Mb/s of its {link / 1e6:.0f} Mb/s over the window: "
                        "the link is full (shared), not slow")
    ti = r.tcp_info
    rw, sb = ti.get("rwnd_limited_frac") or 0.0, ti.get("sndbuf_limited_frac") or 0.0
    if rw + sb >= ml.WINDOW_FRAC and reader_full is not None and reader_full >= MOST:
        # the reader's window closed; the sender's buffer then fills with what it cannot send, and the
        # kernel counts that time as sndbuf_limited too: both are the reader's
        held = " and ".join(f"{n} {v:.0%}" for n, v in (("rwnd_limited", rw), ("sndbuf_limited", sb)) if v)
        return "application", (f"{held} of busy time while {r.dst}'s reader kept {recvq / 1024:.0f} KiB unread "
                               f"(Recv-Q): the reader did not read{rate}")
    if rw >= ml.WINDOW_FRAC and rw >= sb:
        cap, wnd = p.get("reader_window_cap"), p.get("snd_wnd")
        if cap and wnd and wnd <= WINDOW_UNUSED * cap:
            return "application", (f"rwnd_limited {rw:.0%} of busy time while {r.dst} advertised {wnd / 1024:.0f} KiB of "
                                   f"the {cap / 1024:.0f} KiB its tcp_rmem allows: its reader set the pace (the kernel "
                                   f"sizes the window to what the application reads){rate}")
        seen = (f", Recv-Q {recvq / 1024:.0f} KiB at {r.dst}: the window is small, not unread" if recvq is not None
                else f" ({r.dst}'s Recv-Q not sampled)")
        return "receiver_window", f"rwnd_limited {rw:.0%} of busy time{seen}{rate}"
    if sb >= ml.WINDOW_FRAC:
        return "sender_buffer", f"sndbuf_limited {sb:.0%} of busy time{rate}"
    found = _window_match(r, p, rw, sb, rate)
    if found:
        return found
    loss = r.loss_share
    if ml.lossy(r, loss):
        return ml.lossy_class(r, loss, rate)
    if r.ratio is not None and r.ratio >= ml.LINK_RATIO:
        return "link", f"rate while busy {r.ratio:.2f} of link"
    app = p.get("app_limited_share")
    if app is not None and app >= MOST:
        busy = p.get("busy_s")
        during = f", busy {busy:.1f} s of the {p.get('window_s'):.1f} s window" if busy is not None and p.get("window_s") else ""
        return "application", f"{r.src} had nothing to send (app_limited in both samples){during}{rate}"
    if ml.queued(r):
        q, idle = r.queue_us, r.idle_rtt_us
        if r.ratio is None or r.ratio >= ml.LINK_QUEUED_RATIO:
            return "link", f"rtt {q / 1000:.1f} ms above idle ({idle / 1000:.1f} ms): a bottleneck queue{rate}"
        return "unknown", f"rtt {q / 1000:.1f} ms above idle ({idle / 1000:.1f} ms): a queue on the way{rate}"
    return "unknown", f"no window, loss or queue limit seen{rate}"


def _window_match(r: PathRecord, p: dict[str, Any], rw: float, sb: float, rate: str) -> tuple[str, str] | None:
    """The rate while busy matches a buffer's window over the idle RTT, and the kernel saw that limit."""
    rtt, bps = r.idle_rtt_us, r.measured_bps
    if not rtt or not bps:
        return None
    per = bps / max(1, r.streams)
    reader_full = (p.get("reader_full_share") or 0) >= MOST
    for cap, cls, seen, clock, whose in (
            (p.get("sender_window_cap"), "sender_buffer", sb, "sndbuf_limited", f"{r.src}'s tcp_wmem"),
            (None if reader_full else p.get("reader_window_cap"), "receiver_window", rw, "rwnd_limited",
             f"{r.dst}'s tcp_rmem")):
        if not cap or seen < ml.WINDOW_SEEN:
            continue
        limit = cap * 8 / (rtt / 1e6)
        if limit / ml.WINDOW_MATCH <= per <= limit * ml.WINDOW_MATCH:
            return cls, (f"rate while busy = the window {whose} maximum allows ({cap / 1024:.0f} KiB) / idle rtt "
                         f"{rtt / 1000:.1f} ms, {clock} {seen:.0%} of busy time{rate}")
    return None
