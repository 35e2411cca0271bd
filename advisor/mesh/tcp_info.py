"""The kernel's TCP_INFO for a mesh test connection, from the sender's ``ss -tin`` samples (pure:
text in, data out). The listing itself is read by probes/ss_sockets.py (what ss prints, and the
facts it relies on); every counter is cumulative over the connection's life, so of a series of
samples the last one before the connection closes holds the test's totals.

The mesh's sampler prints ``@@t`` before each sample (``ss`` run once); ``summarise_samples``
turns such a series into the path's ``tcp_info`` record (advisor.mesh.results).
"""

from __future__ import annotations

import statistics
from typing import Any

from probes.ss_sockets import SsFormatError, SsSocket, parse_ss

#: the line the sampler prints before each ``ss`` run
SAMPLE_MARK = "@@t"

#: a data connection moved at least this many bytes (iperf3's control connection moves a few hundred)
DATA_SOCKET_BYTES = 64 * 1024


def _samples(text: str, origin: str) -> list[list[SsSocket]]:
    chunks: list[list[str]] = []
    for line in (text or "").splitlines():
        if line.strip() == SAMPLE_MARK:
            chunks.append([])
        elif chunks:
            chunks[-1].append(line)
        elif line.strip():
            raise SsFormatError(f"{origin}: text before the first {SAMPLE_MARK} sample mark: {line.strip()[:80]!r}")
    return [parse_ss("\n".join(c), f"{origin} sample {k}") for k, c in enumerate(chunks, start=1)]


def _last_per_socket(series: list[list[SsSocket]]) -> dict[tuple[str, str], SsSocket]:
    last: dict[tuple[str, str], SsSocket] = {}
    for sample in series:
        for s in sample:
            last[(s.local, s.peer)] = s
    return last


def connection_bytes(text: str, origin: str = "ss samples") -> int | None:
    """Payload bytes the sampled sockets moved both ways (sent + received, last sample of each):
    the test's own bytes as this end's kernel counted them, omitted seconds included."""
    last = _last_per_socket(_samples(text, origin))
    if not last:
        return None
    return sum(s.moved_bytes + (s.bytes_received or 0) for s in last.values())


def summarise_samples(text: str, origin: str = "ss samples") -> dict[str, Any] | None:
    """The path's ``tcp_info`` from a series of samples of the SENDER's sockets of one test.

    The data connections are the sockets that sent at least DATA_SOCKET_BYTES (iperf3's control
    connection sends a few hundred bytes; in a --bidir test the receiving socket sends only ACKs);
    when none did, the one that sent most. Of each, the last sample holds the totals; ``cwnd`` is
    the largest seen in any sample (summed over the data connections), ``cwnd_last`` the last. Several data
    connections (``-P``): times, retransmits and rates are summed, the RTT averaged.
    None: no sample held a socket.
    """
    series = _samples(text, origin)
    last = _last_per_socket(series)
    if not last:
        return None
    data = {k for k, s in last.items() if s.moved_bytes >= DATA_SOCKET_BYTES}
    if not data:
        data = {max(last, key=lambda k: last[k].moved_bytes)}
    ends = [last[k] for k in sorted(data)]
    # the path's window: the data connections' cwnds added up in each sample, the largest sample
    cwnd_max = max((sum(s.cwnd or 0 for s in sample if (s.local, s.peer) in data) for sample in series), default=0) or None
    rates = []
    for sample in series:
        r = [s.delivery_rate_bps for s in sample if (s.local, s.peer) in data and s.delivery_rate_bps]
        if r:
            rates.append(sum(r))
    busy = sum(s.busy_ms or 0 for s in ends) / 1000.0
    rwnd = sum(s.rwnd_limited_ms for s in ends) / 1000.0
    sndbuf = sum(s.sndbuf_limited_ms for s in ends) / 1000.0
    rtts = [s.rtt_ms for s in ends if s.rtt_ms is not None]
    min_rtts = [s.min_rtt_ms for s in ends if s.min_rtt_ms is not None]
    deliv = [s.delivery_rate_bps for s in ends if s.delivery_rate_bps is not None]
    first = ends[0]
    # the rate's steadiness: coefficient of variation of the per-sample delivery rate (the first
    # sample, taken while the connection starts, left out)
    steady = rates[1:] if len(rates) > 2 else rates
    cv = (statistics.pstdev(steady) / statistics.mean(steady)) if len(steady) >= 2 and statistics.mean(steady) else None
    return {
        "busy_s": round(busy, 3),
        "rwnd_limited_s": round(rwnd, 3),
        "sndbuf_limited_s": round(sndbuf, 3),
        "rwnd_limited_frac": round(rwnd / busy, 4) if busy else None,
        "sndbuf_limited_frac": round(sndbuf / busy, 4) if busy else None,
        "cwnd": cwnd_max,
        "cwnd_last": sum(s.cwnd or 0 for s in ends) or None,
        "rtt_us": round(statistics.mean(rtts) * 1000.0, 1) if rtts else None,
        "min_rtt_us": round(min(min_rtts) * 1000.0, 1) if min_rtts else None,
        "retrans": sum(s.retrans_total for s in ends),
        "delivery_rate_bps": sum(deliv) if deliv else None,
        "delivery_rate_cv": round(cv, 4) if cv is not None else None,
        "sack": all(s.sack for s in ends),
        "timestamps": all(s.timestamps for s in ends),
        "wscale": first.wscale,
        "mss": first.mss,
        "congestion": first.congestion,
        "connections": len(ends),
        "samples": sum(1 for sample in series if any((s.local, s.peer) in data for s in sample)),
        "source": "ss",
    }
