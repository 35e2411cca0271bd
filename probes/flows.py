"""Production flows (``network.flows``): what the kernel knows about the host's live storage
connections, sampled twice over the scan's sample window (``--sample-seconds``).

The script prints the storage ports it filters on, then two samples, each of /proc/uptime (the
clock: CLOCK_BOOTTIME, immune to NTP steps), /proc/net/dev (every interface's byte counters) and
``ss -tinHe state established`` filtered to the connections whose local or remote port is a storage
port (netlink ``inet_diag`` underneath: the kernel does the filtering). An iproute2 without ``-H``
(before 4.13) prints its header line, which the parser skips.

Per connection the parser keeps (probes/ss_sockets.py reads the listing):

* the deltas between the two samples of the cumulative counters: bytes acknowledged by the peer
  (``bytes_acked``, else ``bytes_sent``), bytes received, data segments out, retransmitted segments
  (``retrans:N/TOTAL``), retransmitted bytes, and the chronographs (``busy``, ``rwnd_limited``,
  ``sndbuf_limited``, in ms). A connection seen only in the second sample opened during the window:
  its counters count from zero. A counter that went backwards is a new connection on the same
  address pair: counted from zero too;
* from the second sample: rtt and minrtt, cwnd, mss, delivery rate, the options (``sack``, ``ts``,
  ``wscale``), the congestion control, ``lost`` (segments marked lost now: not a total), the peer's
  advertised window (``snd_wnd``, iproute2 >= 5.x), Recv-Q and Send-Q;
* ``recv_q_max``: the larger Recv-Q of the samples (a reader that keeps up leaves next to nothing
  unread at any instant; one that does not read leaves its buffer full while the sender has data),
  and ``app_limited`` when every sample says the sender had nothing to send.

Connections that moved no byte in the window are counted (``idle``), not listed; those of the first
sample only closed during it (``closed``). ``interfaces``: each interface's bytes sent and received
over the window, all traffic (is a link full?). The parser keeps only the connections whose ports
are among the ``ports`` the output names, whatever ss printed, and refuses output that is not this
layout (a section missing, a listing that is not ``ss -ti``).
"""

from __future__ import annotations

import re
import shlex

from pydantic import BaseModel, Field

from probes.diskio import parse_uptime
from probes.probe import NOT_APPLICABLE_MARKER, SampledProbe, ProbeContext, ProbeParseError, section, split_sections
from probes.ss_sockets import SsFormatError, SsSocket, parse_ss, split_endpoint

#: the storage ports a site that names none is sampled on: XRootD, GPFS, HTTP/WebDAV, GridFTP and
#: dCache movers (each storage kind adds its own: advisor/storage_kinds.py)
DEFAULT_FLOW_PORTS = ("1094", "1095", "1191", "443", "2880", "8443", "8000", "2811", "20000-25000")
SECTIONS = ("ports", "uptime1", "netdev1", "ss1", "uptime2", "netdev2", "ss2", "end")
_PORT_RE = re.compile(r"^([0-9]{1,5})(?:-([0-9]{1,5}))?$")
#: the most connections one host's listing may hold (a bigger one is refused, not cut)
MAX_CONNECTIONS = 200_000


class FlowConnection(BaseModel):
    """One established connection on a storage port, over the window (counters are deltas)."""

    local: str
    local_port: int | None = None
    peer: str
    peer_port: int | None = None
    #: not in the first sample: opened during the window (its counters count from zero)
    opened: bool = False
    bytes_sent: int = 0
    bytes_received: int = 0
    segs_out: int = 0
    retrans: int = 0
    bytes_retrans: int = 0
    busy_ms: int = 0
    rwnd_limited_ms: int = 0
    sndbuf_limited_ms: int = 0
    app_limited: bool = False
    recv_q: int = 0
    recv_q_max: int = 0
    send_q: int = 0
    lost: int | None = None
    rtt_ms: float | None = None
    min_rtt_ms: float | None = None
    cwnd: int | None = None
    mss: int | None = None
    delivery_rate_bps: float | None = None
    snd_wnd: int | None = None
    congestion: str | None = None
    sack: bool = False
    timestamps: bool = False
    wscale: list[int] | None = None


class InterfaceBytes(BaseModel):
    tx_bytes: int
    rx_bytes: int


class FlowFacts(BaseModel):
    #: seconds between the two samples (/proc/uptime)
    window_s: float
    #: the storage ports filtered on: ``1094``, ``20000-25000``
    ports: list[str] = Field(default_factory=list)
    connections: list[FlowConnection] = Field(default_factory=list)
    #: connections on storage ports that moved no byte in the window
    idle: int = 0
    #: connections of the first sample gone by the second (closed during the window)
    closed: int = 0
    #: per interface, bytes over the window (every byte, whoever's)
    interfaces: dict[str, InterfaceBytes] = Field(default_factory=dict)


def parse_port_spec(spec: str) -> tuple[int, int]:
    """``1094`` -> (1094, 1094); ``20000-25000`` -> (20000, 25000); ValueError otherwise."""
    m = _PORT_RE.match(str(spec).strip())
    if not m:
        raise ValueError(f"{spec!r} is not a port or a range like 20000-25000")
    lo = int(m.group(1))
    hi = int(m.group(2)) if m.group(2) else lo
    if not 1 <= lo <= hi <= 65535:
        raise ValueError(f"{spec!r}: ports are 1-65535, low-high")
    return lo, hi


def ss_filter(ports: list[str]) -> str:
    """The ss filter expression for connections with a local or remote port among ``ports``."""
    terms = []
    for spec in ports:
        lo, hi = parse_port_spec(spec)
        for side in ("sport", "dport"):
            terms.append(f"{side} = :{lo}" if lo == hi else f"( {side} >= :{lo} and {side} <= :{hi} )")
    return "( " + " or ".join(terms) + " )"


def parse_net_dev(text: str, label: str) -> dict[str, tuple[int, int]]:
    """/proc/net/dev -> {interface: (rx_bytes, tx_bytes)} (the two header lines skipped)."""
    out: dict[str, tuple[int, int]] = {}
    for line in text.splitlines():
        if "|" in line or not line.strip():
            continue
        name, sep, rest = line.partition(":")
        cols = rest.split()
        if not sep or len(cols) < 16 or not all(c.isascii() and c.isdigit() and len(c) <= 24 for c in cols[:16]):
            raise ProbeParseError(f"network.flows {label}: not a /proc/net/dev line: {line.strip()[:80]!r}")
        out[name.strip()[:64]] = (int(cols[0]), int(cols[8]))
    return out


def _ports(text: str) -> list[tuple[str, tuple[int, int]]]:
    out = []
    for spec in text.split():
        try:
            out.append((spec, parse_port_spec(spec)))
        except ValueError as exc:
            raise ProbeParseError(f"network.flows ports: {exc}") from None
    if not out:
        raise ProbeParseError("network.flows: no storage port named in the ports section")
    return out


def _in(port: int | None, ranges: list[tuple[int, int]]) -> bool:
    return port is not None and any(lo <= port <= hi for lo, hi in ranges)


def _listing(text: str, label: str) -> list[SsSocket]:
    try:
        socks = parse_ss(text, f"network.flows {label}")
    except SsFormatError as exc:
        raise ProbeParseError(str(exc)) from None
    bare = next((s for s in socks if not s.has_info), None)
    if bare is not None:
        raise ProbeParseError(f"network.flows {label}: not ss -ti output: the socket {bare.local} {bare.peer} has no "
                              "TCP information line")
    if len(socks) > MAX_CONNECTIONS:
        raise ProbeParseError(f"network.flows {label}: {len(socks)} connections (at most {MAX_CONNECTIONS})")
    return socks


def _delta(new: int | None, old: int | None) -> int:
    return max(0, (new or 0) - (old or 0))


def connection_over_window(first: SsSocket | None, second: SsSocket) -> FlowConnection:
    """One connection's counters over the window (``first`` None: it opened during the window)."""
    local, lport = split_endpoint(second.local)
    peer, pport = split_endpoint(second.peer)
    sent2 = second.bytes_acked if second.bytes_acked is not None else second.bytes_sent
    sent1 = None if first is None else (first.bytes_acked if first.bytes_acked is not None else first.bytes_sent)
    if first is not None and ((sent2 or 0) < (sent1 or 0) or (second.bytes_received or 0) < (first.bytes_received or 0)):
        first = None  # counters went backwards: a new connection on the same address pair
        sent1 = None
    f = first
    return FlowConnection(
        local=local, local_port=lport, peer=peer, peer_port=pport, opened=f is None,
        bytes_sent=_delta(sent2, sent1),
        bytes_received=_delta(second.bytes_received, f.bytes_received if f else None),
        segs_out=_delta(second.data_segs_out, f.data_segs_out if f else None),
        retrans=_delta(second.retrans_total, f.retrans_total if f else None),
        bytes_retrans=_delta(second.bytes_retrans, f.bytes_retrans if f else None),
        busy_ms=_delta(second.busy_ms, f.busy_ms if f else None),
        rwnd_limited_ms=_delta(second.rwnd_limited_ms, f.rwnd_limited_ms if f else None),
        sndbuf_limited_ms=_delta(second.sndbuf_limited_ms, f.sndbuf_limited_ms if f else None),
        app_limited=second.app_limited and (f is None or f.app_limited),
        recv_q=second.recv_q, recv_q_max=max(second.recv_q, f.recv_q) if f else second.recv_q,
        send_q=second.send_q, lost=second.lost, rtt_ms=second.rtt_ms, min_rtt_ms=second.min_rtt_ms,
        cwnd=second.cwnd, mss=second.mss, delivery_rate_bps=second.delivery_rate_bps, snd_wnd=second.snd_wnd,
        congestion=second.congestion, sack=second.sack, timestamps=second.timestamps, wscale=second.wscale,
    )


def flows_over_window(first: list[SsSocket], second: list[SsSocket], ranges: list[tuple[int, int]]) -> tuple[
        list[FlowConnection], int, int]:
    """(connections that moved data, idle count, closed count) of the storage-port sockets."""

    def storage(s: SsSocket) -> bool:
        return _in(split_endpoint(s.local)[1], ranges) or _in(split_endpoint(s.peer)[1], ranges)

    before = {(s.local, s.peer): s for s in first if storage(s)}
    conns, idle, seen = [], 0, set()
    for s in second:
        if not storage(s):
            continue
        key = (s.local, s.peer)
        seen.add(key)
        c = connection_over_window(before.get(key), s)
        if c.bytes_sent or c.bytes_received:
            conns.append(c)
        else:
            idle += 1
    return conns, idle, sum(1 for k in before if k not in seen)


class FlowsProbe(SampledProbe):
    name = "network.flows"
    title = "Production flows on storage ports: what held each connection over the sample window (ss -tinHe)"
    facts_model = FlowFacts

    def script(self, ctx: ProbeContext) -> str:
        ports = list(ctx.flow_ports) or list(DEFAULT_FLOW_PORTS)
        seconds = f"{self.sample_seconds(ctx):.3f}".rstrip("0").rstrip(".")
        whole = str(int(-(-self.sample_seconds(ctx) // 1)))  # POSIX sleep only takes integers
        filt = shlex.quote(ss_filter(ports))

        def sample(n: int) -> str:
            return (section(f"uptime{n}") + "cat /proc/uptime\n"
                    + section(f"netdev{n}") + "cat /proc/net/dev\n"
                    + section(f"ss{n}")
                    + f"ss -tinHe state established {filt} 2>/dev/null || ss -tine state established {filt}\n")

        return (
            "if ! command -v ss >/dev/null 2>&1; then\n"
            f'  echo "{NOT_APPLICABLE_MARKER} ss (iproute2) not found"; exit 0\n'
            "fi\n"
            "if [ ! -r /proc/uptime ] || [ ! -r /proc/net/dev ]; then\n"
            f'  echo "{NOT_APPLICABLE_MARKER} /proc/uptime or /proc/net/dev not readable"; exit 0\n'
            "fi\n"
            + section("ports") + f"echo {shlex.quote(' '.join(ports))}\n"
            + sample(1)
            + f"sleep {seconds} 2>/dev/null || sleep {whole}\n"
            + sample(2)
            + section("end")
        )

    def parse(self, text: str) -> FlowFacts:
        sections = split_sections(text)
        missing = [s for s in SECTIONS if s not in sections]
        if missing:
            raise ProbeParseError(f"network.flows output truncated or not this probe's: no {', '.join(missing)} section")
        ports = _ports(sections["ports"])
        window = round(parse_uptime(sections["uptime2"], "network.flows uptime2")
                       - parse_uptime(sections["uptime1"], "network.flows uptime1"), 6)
        if not window > 0:
            raise ProbeParseError(f"network.flows: sample window is {window} s, expected > 0")
        dev1 = parse_net_dev(sections["netdev1"], "netdev1")
        dev2 = parse_net_dev(sections["netdev2"], "netdev2")
        conns, idle, closed = flows_over_window(_listing(sections["ss1"], "ss1"), _listing(sections["ss2"], "ss2"),
                                                [r for _, r in ports])
        interfaces = {name: InterfaceBytes(rx_bytes=_delta(rx, dev1[name][0]), tx_bytes=_delta(tx, dev1[name][1]))
                      for name, (rx, tx) in dev2.items() if name in dev1}
        return FlowFacts(window_s=window, ports=[s for s, _ in ports], connections=conns, idle=idle, closed=closed,
                         interfaces=interfaces)
