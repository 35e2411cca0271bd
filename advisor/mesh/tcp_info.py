"""The kernel's TCP_INFO for a test connection, read from ``ss -tin`` output (pure: text in, data out).

``ss -i`` prints, for each socket, a line with the addresses and an indented line of
``struct tcp_info`` fields (iproute2 misc/ss.c, ``tcp_show_info``/``tcp_stats_print``):

    ESTAB 0 3407872 10.0.0.1:48650 10.0.0.2:5301
    <TAB> ts sack cubic wscale:7,7 rto:204 rtt:1.2/0.79 mss:1448 cwnd:40 ... bytes_sent:1941040727
          ... delivery_rate 941.2Mbps ... busy:1176ms rwnd_limited:36ms(3.1%) sndbuf_limited:2ms(0.2%)
          ... retrans:0/52 ... minrtt:0.5

Facts this module relies on (ss.c and the kernel's tcp_info, include/uapi/linux/tcp.h):

* ``ts`` / ``sack`` / ``ecn`` are printed when the option was negotiated (tcpi_options);
  ``wscale:SND,RCV`` only when window scaling was negotiated;
* ``rtt:SRTT/RTTVAR`` and ``minrtt:`` are milliseconds; ``cwnd:`` is in segments of ``mss:``;
* ``busy:``, ``rwnd_limited:``, ``sndbuf_limited:`` are the tcpi_busy_time, tcpi_rwnd_limited and
  tcpi_sndbuf_limited chronographs in ms (kernel >= 4.10; the limited ones are printed only
  when non-zero), the percentage being of busy time;
* ``retrans:NOW/TOTAL``: segments currently retransmitted / tcpi_total_retrans;
* rates (``send``, ``pacing_rate``, ``delivery_rate``) are ``sprint_bw``: raw ``%.0f`` bits/s with
  ``-n``, else one decimal and a K/M/G/T prefix, each followed by ``bps``;
* every counter is cumulative over the connection's life, so of a series of samples the last one
  before the connection closes holds the test's totals.

The mesh's sampler prints ``@@t`` before each sample (``ss`` run once); ``summarise_samples``
turns such a series into the path's ``tcp_info`` record (advisor.mesh.results).
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field
from typing import Any

#: the line the sampler prints before each ``ss`` run
SAMPLE_MARK = "@@t"

#: a data connection moved at least this many bytes (iperf3's control connection moves a few hundred)
DATA_SOCKET_BYTES = 64 * 1024

_RATE_RE = re.compile(r"([0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)([KMGT]?)bps")
_PREFIX = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
_LIMITED_RE = re.compile(r"([0-9]+)ms(?:\(([0-9.]+)%\))?")
#: bare words ss prints for negotiated options / states (everything else bare before wscale is the congestion control)
_FLAGS = {"ts", "sack", "ecn", "ecnseen", "fastopen", "app_limited", "bigack", "tcp-ulp-tls", "tcp-ulp-mptcp"}
_HEADER_WORDS = ("State", "Netid", "Recv-Q")
#: fields whose value precedes a rate: ``send 9.5Mbps``
_RATE_KEYS = {"send", "pacing_rate", "delivery_rate"}


class SsFormatError(ValueError):
    """Text that is not ``ss -ti`` output; the message names the line and what is wrong."""


@dataclass
class SsSocket:
    """One socket of an ``ss -ti`` listing (None: the field was not printed)."""

    local: str
    peer: str
    congestion: str | None = None
    sack: bool = False
    timestamps: bool = False
    wscale: list[int] | None = None
    mss: int | None = None
    cwnd: int | None = None
    rtt_ms: float | None = None
    min_rtt_ms: float | None = None
    bytes_sent: int | None = None
    bytes_acked: int | None = None
    bytes_received: int | None = None
    data_segs_out: int | None = None
    busy_ms: int | None = None
    rwnd_limited_ms: int = 0
    sndbuf_limited_ms: int = 0
    retrans_total: int = 0
    delivery_rate_bps: float | None = None
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def moved_bytes(self) -> int:
        """Bytes this socket sent (bytes_sent, else bytes_acked (older kernels), else data segments x mss)."""
        if self.bytes_sent is not None or self.bytes_acked is not None:
            return max(self.bytes_sent or 0, self.bytes_acked or 0)
        return (self.data_segs_out or 0) * (self.mss or 0)


def parse_rate(text: str, where: str = "rate") -> float:
    """``941.2Mbps`` / ``1141315904bps`` / ``2.48Gbps`` -> bits per second."""
    m = _RATE_RE.fullmatch(text.strip())
    if not m:
        raise SsFormatError(f"{where}: {text!r} is not a rate like 941.2Mbps")
    return float(m.group(1)) * _PREFIX[m.group(2)]


def _int(value: str, key: str, where: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise SsFormatError(f"{where}: {key}:{value!r} is not a whole number") from None


def _float(value: str, key: str, where: str) -> float:
    try:
        return float(value)
    except ValueError:
        raise SsFormatError(f"{where}: {key}:{value!r} is not a number") from None


def _addresses(line: str, where: str) -> tuple[str, str]:
    """(local, peer) of a socket line: the two tokens after the Recv-Q and Send-Q counts."""
    tok = line.split()
    for i in range(len(tok) - 3):
        if tok[i].isdigit() and tok[i + 1].isdigit() and ":" in tok[i + 2] and ":" in tok[i + 3]:
            return tok[i + 2], tok[i + 3]
    raise SsFormatError(f"{where}: not an ss socket line (no 'Recv-Q Send-Q local:port peer:port'): {line.strip()[:80]!r}")


def _info(sock: SsSocket, line: str, where: str) -> None:
    tok = line.split()
    i = 0
    while i < len(tok):
        t = tok[i]
        i += 1
        if t in _RATE_KEYS:
            if i >= len(tok):
                raise SsFormatError(f"{where}: {t} without a rate")
            if t == "delivery_rate":
                sock.delivery_rate_bps = parse_rate(tok[i], f"{where}: delivery_rate")
            else:
                sock.extra[t] = tok[i]
            i += 1
            continue
        key, sep, value = t.partition(":")
        if not sep:
            if t == "sack":
                sock.sack = True
            elif t == "ts":
                sock.timestamps = True
            elif t not in _FLAGS and sock.congestion is None and re.fullmatch(r"[a-z][a-z0-9_]*", t):
                sock.congestion = t
            continue
        if key == "wscale":
            parts = value.split(",")
            if len(parts) != 2:
                raise SsFormatError(f"{where}: wscale:{value!r} is not SND,RCV")
            sock.wscale = [_int(parts[0], key, where), _int(parts[1], key, where)]
        elif key == "rtt":
            sock.rtt_ms = _float(value.partition("/")[0], key, where)
        elif key == "minrtt":
            sock.min_rtt_ms = _float(value, key, where)
        elif key in ("mss", "cwnd", "bytes_sent", "bytes_acked", "bytes_received", "data_segs_out"):
            setattr(sock, key, _int(value, key, where))
        elif key == "busy":
            if not value.endswith("ms"):
                raise SsFormatError(f"{where}: busy:{value!r} is not milliseconds")
            sock.busy_ms = _int(value[:-2], key, where)
        elif key in ("rwnd_limited", "sndbuf_limited"):
            m = _LIMITED_RE.fullmatch(value)
            if not m:
                raise SsFormatError(f"{where}: {key}:{value!r} is not 'Nms(P%)'")
            setattr(sock, f"{key}_ms", int(m.group(1)))
        elif key == "retrans":
            now, _, total = value.partition("/")
            sock.retrans_total = _int(total or now, key, where)


def parse_ss(text: str, origin: str = "ss output") -> list[SsSocket]:
    """The sockets of one ``ss -ti`` listing (with or without header, -e/-p/-o/-m extras)."""
    out: list[SsSocket] = []
    current: SsSocket | None = None
    for n, raw in enumerate((text or "").splitlines(), start=1):
        if not raw.strip():
            continue
        where = f"{origin} line {n}"
        if raw[0] in " \t":
            if current is None:
                raise SsFormatError(f"{where}: TCP info before any socket line: {raw.strip()[:80]!r}")
            _info(current, raw, where)
            continue
        if raw.split()[0] in _HEADER_WORDS:
            continue
        local, peer = _addresses(raw, where)
        current = SsSocket(local=local, peer=peer)
        out.append(current)
    return out


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
