"""The TCP sockets of an ``ss -ti`` listing (pure: text in, data out), for the mesh's samples of its
test connection (advisor/mesh/tcp_info.py) and for production flows (probes/flows.py).

``ss -i`` prints, for each socket, a line with the queues and addresses and an indented line of
``struct tcp_info`` fields (iproute2 misc/ss.c, ``tcp_show_info``/``tcp_stats_print``):

    ESTAB 0 3407872 10.0.0.1:48650 10.0.0.2:5301 [ino:.. sk:.. cgroup:.. <->]   (-e extras)
    <TAB> ts sack cubic wscale:7,7 rto:204 rtt:1.2/0.79 mss:1448 cwnd:40 ... bytes_sent:1941040727
          ... delivery_rate 941.2Mbps app_limited busy:1176ms rwnd_limited:36ms(3.1%)
          ... sndbuf_limited:2ms(0.2%) ... retrans:0/52 lost:2 ... minrtt:0.5 snd_wnd:65536

Facts relied on (ss.c and the kernel's tcp_info, include/uapi/linux/tcp.h):

* the State column is left out when a single state is asked for (``state established``); the
  queues are Recv-Q (bytes received and not read by the application) and Send-Q (bytes written
  and not yet acknowledged);
* ``ts`` / ``sack`` / ``ecn`` are printed when the option was negotiated (tcpi_options);
  ``wscale:SND,RCV`` only when window scaling was negotiated;
* ``rtt:SRTT/RTTVAR`` and ``minrtt:`` are milliseconds; ``cwnd:`` is in segments of ``mss:``;
* ``busy:``, ``rwnd_limited:``, ``sndbuf_limited:`` are the tcpi_busy_time, tcpi_rwnd_limited and
  tcpi_sndbuf_limited chronographs in ms (kernel >= 4.10; the limited ones are printed only when
  non-zero), the percentage being of busy time, which holds the other two;
* ``app_limited``: the last delivery-rate sample was limited by the application (nothing to send);
* ``retrans:NOW/TOTAL``: segments currently retransmitted / tcpi_total_retrans; ``lost:`` the
  segments currently marked lost (not a total);
* rates (``send``, ``pacing_rate``, ``delivery_rate``) are ``sprint_bw``: raw ``%.0f`` bits/s with
  ``-n``, else one decimal and a K/M/G/T prefix, each followed by ``bps``;
* every counter is cumulative over the connection's life.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from dataclasses import dataclass, field

_RATE_RE = re.compile(r"([0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)([KMGT]?)bps")
_PREFIX = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}
_LIMITED_RE = re.compile(r"([0-9]+)ms(?:\(([0-9.]+)%\))?")
#: bare words ss prints for negotiated options / states (everything else bare before wscale is the congestion control)
_FLAGS = {"ts", "sack", "ecn", "ecnseen", "fastopen", "app_limited", "bigack", "tcp-ulp-tls", "tcp-ulp-mptcp"}
_HEADER_WORDS = ("State", "Netid", "Recv-Q")
#: fields whose value precedes a rate: ``send 9.5Mbps``
_RATE_KEYS = {"send", "pacing_rate", "delivery_rate"}
_INT_KEYS = ("mss", "cwnd", "bytes_sent", "bytes_acked", "bytes_received", "bytes_retrans", "data_segs_out",
             "data_segs_in", "lost", "snd_wnd", "rcv_space")
#: the most digits a counter may have (2**64 has 20)
_MAX_DIGITS = 24


class SsFormatError(ValueError):
    """Text that is not ``ss -ti`` output; the message names the line and what is wrong."""


@dataclass
class SsSocket:
    """One socket of an ``ss -ti`` listing (None: the field was not printed)."""

    local: str
    peer: str
    recv_q: int = 0
    send_q: int = 0
    congestion: str | None = None
    sack: bool = False
    timestamps: bool = False
    app_limited: bool = False
    wscale: list[int] | None = None
    mss: int | None = None
    cwnd: int | None = None
    rtt_ms: float | None = None
    min_rtt_ms: float | None = None
    bytes_sent: int | None = None
    bytes_acked: int | None = None
    bytes_received: int | None = None
    bytes_retrans: int | None = None
    data_segs_out: int | None = None
    data_segs_in: int | None = None
    lost: int | None = None
    snd_wnd: int | None = None
    rcv_space: int | None = None
    busy_ms: int | None = None
    rwnd_limited_ms: int = 0
    sndbuf_limited_ms: int = 0
    retrans_total: int = 0
    delivery_rate_bps: float | None = None
    #: an indented TCP information line followed the socket line (``-i``)
    has_info: bool = False
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
    if not (value.isascii() and value.isdigit()) or len(value) > _MAX_DIGITS:
        raise SsFormatError(f"{where}: {key}:{value[:40]!r} is not a whole number")
    return int(value)


def _float(value: str, key: str, where: str) -> float:
    try:
        v = float(value)
    except ValueError:
        raise SsFormatError(f"{where}: {key}:{value[:40]!r} is not a number") from None
    if not 0 <= v < 1e12:
        raise SsFormatError(f"{where}: {key}:{value[:40]!r} is out of range")
    return v


def _is_queue(tok: str) -> bool:
    return tok.isascii() and tok.isdigit() and len(tok) <= _MAX_DIGITS


def _addresses(line: str, where: str) -> tuple[int, int, str, str]:
    """(Recv-Q, Send-Q, local, peer) of a socket line: the two counts, then two ``address:port``."""
    tok = line.split()
    for i in range(len(tok) - 3):
        if _is_queue(tok[i]) and _is_queue(tok[i + 1]) and ":" in tok[i + 2] and ":" in tok[i + 3]:
            return int(tok[i]), int(tok[i + 1]), tok[i + 2], tok[i + 3]
    raise SsFormatError(f"{where}: not an ss socket line (no 'Recv-Q Send-Q local:port peer:port'): {line.strip()[:80]!r}")


@functools.lru_cache(maxsize=1 << 16)
def _address(host: str) -> str:
    """An address as ``ipaddress`` writes it (IPv4-mapped IPv6 as IPv4); a name or a masked address
    as printed. Cached: a host's listing names the same few addresses on every line."""
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return host  # a name (ss without -n) or a masked address: kept as printed
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return str(ip)


def split_endpoint(text: str) -> tuple[str, int | None]:
    """``10.0.0.1:1094`` / ``[2001:db8::1]:1094`` / ``[::ffff:10.0.0.1]:1094`` / ``host:1094`` ->
    (address, port). An IPv4-mapped IPv6 address is given as IPv4; a zone (``%eth0``) is left out;
    the port is None when it is not a number (``*``, a service name without ``-n``)."""
    host, _, port = text.rpartition(":")
    host = _address(host.strip("[]").split("%", 1)[0])
    return host, (int(port) if port.isascii() and port.isdigit() and len(port) <= 5 else None)


def _info(sock: SsSocket, line: str, where: str) -> None:
    sock.has_info = True
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
                sock.extra[t] = tok[i][:40]
            i += 1
            continue
        key, sep, value = t.partition(":")
        if not sep:
            if t == "sack":
                sock.sack = True
            elif t == "ts":
                sock.timestamps = True
            elif t == "app_limited":
                sock.app_limited = True
            elif t not in _FLAGS and sock.congestion is None and re.fullmatch(r"[a-z][a-z0-9_]{0,30}", t):
                sock.congestion = t
            continue
        if key == "wscale":
            parts = value.split(",")
            if len(parts) != 2:
                raise SsFormatError(f"{where}: wscale:{value[:40]!r} is not SND,RCV")
            sock.wscale = [_int(parts[0], key, where), _int(parts[1], key, where)]
        elif key == "rtt":
            sock.rtt_ms = _float(value.partition("/")[0], key, where)
        elif key == "minrtt":
            sock.min_rtt_ms = _float(value, key, where)
        elif key in _INT_KEYS:
            setattr(sock, key, _int(value, key, where))
        elif key == "busy":
            if not value.endswith("ms"):
                raise SsFormatError(f"{where}: busy:{value[:40]!r} is not milliseconds")
            sock.busy_ms = _int(value[:-2], key, where)
        elif key in ("rwnd_limited", "sndbuf_limited"):
            m = _LIMITED_RE.fullmatch(value)
            if not m or len(m.group(1)) > _MAX_DIGITS:
                raise SsFormatError(f"{where}: {key}:{value[:40]!r} is not 'Nms(P%)'")
            setattr(sock, f"{key}_ms", int(m.group(1)))
        elif key == "retrans":
            now, _, total = value.partition("/")
            sock.retrans_total = _int(total or now, key, where)


def parse_ss(text: str, origin: str = "ss output") -> list[SsSocket]:
    """The sockets of one ``ss -ti`` listing (with or without header, State or Netid columns,
    -e/-p/-o/-m extras)."""
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
        recv_q, send_q, local, peer = _addresses(raw, where)
        current = SsSocket(local=local, peer=peer, recv_q=recv_q, send_q=send_q)
        out.append(current)
    return out
