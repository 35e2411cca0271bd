"""iperf3 on a host: the scripts the runner sends and the parser of ``iperf3 -J`` output.

Pure: this module builds POSIX sh text and parses text; it runs nothing.

Facts it relies on (iperf3 3.x, checked against 3.12 on the lab machine, see
tests/fixtures/iperf3/README.md):

* ``iperf3 -J`` reports every failure as a top-level ``"error"`` key; iperf3 <= 3.13 exits 0
  with ``-J`` even on "the server is busy" or "Connection refused". The key decides, never
  the exit code.
* ``iperf3 -s -1`` serves exactly one test and exits; ``--forceflush`` makes its "Server
  listening on PORT" line (or "unable to start listener ... Address already in use") appear
  in its log at once, which is how the start script knows the port is ready or taken.
* ``--bidir`` needs iperf3 >= 3.7 on both ends; ``--connect-timeout`` needs >= 3.8.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from advisor.util import host_tmp
from advisor.util.host_tmp import MKTEMP
from advisor.mesh import sampling
from advisor.mesh.iperf_auth import IperfAuth
from probes.json_text import MAX_JSON_DEPTH, json_depth

#: first line of ``iperf3 --version``: "iperf 3.12 (cJSON 1.7.15)"
_VERSION_RE = re.compile(r"\biperf\s+(\d+)\.(\d+)(?:\.(\d+))?")

BIDIR_MIN = (3, 7)
CONNECT_TIMEOUT_MIN = (3, 8)

#: how long the start script waits for the server to listen, seconds
SERVER_READY_WAIT = 5.0

# marker lines the scripts print (the runner parses them)
_READY = "STORADVISE-IPERF3-READY"
_INUSE = "STORADVISE-IPERF3-INUSE"
_NOSTART = "STORADVISE-IPERF3-NOSTART"
_MISSING = "STORADVISE-IPERF3-MISSING"


def parse_version(text: str) -> tuple[int, int, int] | None:
    """``iperf 3.12 (cJSON 1.7.15)`` -> (3, 12, 0); None when not an iperf3 version line."""
    m = _VERSION_RE.search(text or "")
    if not m:
        return None
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


VERSION_SCRIPT = "command -v iperf3 >/dev/null 2>&1 || { echo %s; exit 127; }; iperf3 --version 2>&1 | head -n 1" % _MISSING


def version_missing(stdout: str) -> bool:
    return _MISSING in (stdout or "")


# ----------------------------------------------------------------------------- server


def server_start_script(port: int, lifetime_s: float, bind: str | None = None, auth: IperfAuth | None = None,
                        sample: bool = False) -> str:
    """Start a one-shot server on ``port`` in the background and wait until it listens.

    ``bind``: the address the test's client connects to; the server listens there only (``-B``),
    not on every address of the host. ``auth``: only a client with these credentials may test.

    Prints ``READY <pid> <dir>`` when listening, ``INUSE`` when the port is taken,
    ``NOSTART <log>`` for any other failure. ``timeout`` (coreutils), when present, bounds the
    server's life even if the controller dies before stopping it. ``sample``: the server end
    samples its kernel while it serves (advisor.mesh.sampling; reported by the stop script).
    """
    life = max(1, int(lifetime_s + 0.999))
    bind_opt = f" -B {shlex.quote(bind)}" if bind else ""
    auth_files = auth.server_files("$d") if auth else ""
    auth_opt = auth.server_options("$d") if auth else ""
    wait_steps = int(SERVER_READY_WAIT / 0.05)
    sampler = sampling.server_start_fragment(bind, port) if sample else ""
    return f"""\
command -v iperf3 >/dev/null 2>&1 || {{ echo {_MISSING}; exit 127; }}
d=$({MKTEMP}) || exit 1
{auth_files}if command -v timeout >/dev/null 2>&1; then lim="timeout {life}"; else lim=""; fi
nohup $lim iperf3 -s -1 -p {int(port)}{bind_opt}{auth_opt} --forceflush >"$d/log" 2>&1 </dev/null &
pid=$!
{sampler}i=0
while [ $i -lt {wait_steps} ]; do
  if grep -q 'Server listening' "$d/log" 2>/dev/null; then echo "{_READY} $pid $d"; exit 0; fi
  if grep -qi 'address already in use' "$d/log" 2>/dev/null; then echo {_INUSE}; rm -rf "$d"; exit 0; fi
  if ! kill -0 $pid 2>/dev/null; then echo "{_NOSTART} $(tr '\\n' ' ' <"$d/log")"; rm -rf "$d"; exit 0; fi
  sleep 0.05; i=$((i+1))
done
kill $pid 2>/dev/null
echo "{_NOSTART} not listening after {SERVER_READY_WAIT:g}s: $(tr '\\n' ' ' <"$d/log")"
rm -rf "$d"
"""


@dataclass
class ServerStart:
    ready: bool
    pid: int | None = None
    workdir: str | None = None
    in_use: bool = False
    missing: bool = False
    message: str = ""


def parse_server_start(stdout: str) -> ServerStart:
    for line in (stdout or "").splitlines():
        line = line.strip()
        if line.startswith(_READY):
            parts = line.split()
            if len(parts) >= 3 and parts[1].isdigit():
                return ServerStart(True, pid=int(parts[1]), workdir=parts[2])
        if line.startswith(_INUSE):
            return ServerStart(False, in_use=True, message="address in use")
        if line.startswith(_MISSING):
            return ServerStart(False, missing=True, message="iperf3 is not installed")
        if line.startswith(_NOSTART):
            msg = line[len(_NOSTART):].strip()
            msg = re.sub(r"\s*iperf3: exiting\s*$", "", msg)
            return ServerStart(False, message=f"iperf3 server did not start: {msg or 'no output'}")
    return ServerStart(False, message=f"iperf3 server did not start: {(stdout or '').strip()[:200] or 'no output'}")


def server_stop_script(pid: int, workdir: str) -> str:
    """Stop the one-shot server (if it still runs) by the pid captured at start, and clean up.

    The pid is only signalled while it is still the server we started (its command line
    names iperf3 and the port directory exists), so a recycled pid is never hit. A server started
    with ``sample`` prints its sampling section first (``parse_server_stop``).
    """
    d = shlex.quote(workdir)
    return sampling.server_report_fragment(workdir) + f"""\
p={int(pid)}
if [ -d {d} ] && kill -0 $p 2>/dev/null && tr '\\0' ' ' </proc/$p/cmdline 2>/dev/null | grep -Eq 'iperf3|timeout'; then
  kill $p 2>/dev/null
  i=0; while kill -0 $p 2>/dev/null && [ $i -lt 20 ]; do sleep 0.05; i=$((i+1)); done
  kill -9 $p 2>/dev/null
  echo stopped
fi
""" + host_tmp.remove(workdir) + sampling.SERVER_SAMPLER_WAIT


# ----------------------------------------------------------------------------- client


#: the line the client command prints before iperf3's JSON: the idle RTT measured just before
IDLE_RTT_MARK = "@@idle_rtt_ms"


def idle_rtt_script(address: str) -> str:
    """Three pings before the transfer: their minimum is the path's idle RTT (no queue of ours yet).

    iputils prints ``rtt min/avg/max/mdev = a/b/c/d ms``, busybox ``round-trip min/avg/max = a/b/c ms``;
    without ping, or when ICMP is filtered, nothing is printed and the diagnosis falls back to the
    test's minimum RTT."""
    a = shlex.quote(address)
    return (f"sa_rtt=$(command -v ping >/dev/null 2>&1 && ping -n -q -c 3 -i 0.2 -w 2 {a} 2>/dev/null"
            f" | sed -n 's|^.*min/avg/max[^=]*= *\\([0-9.]*\\)/.*$|{IDLE_RTT_MARK} \\1|p'); "
            '[ -n "$sa_rtt" ] && echo "$sa_rtt"; ')


#: the line the client command prints before iperf3's JSON when the sender's MTU is a jumbo one
PATH_MTU_MARK = "@@path_mtu"


def path_mtu_script(address: str) -> str:
    """One ping of the sender's full MTU to the receiver with don't-fragment set, after the idle-RTT pings
    (run only where those arrived): a hop that carries less drops it silently, a path-MTU black hole.
    Only for jumbo MTUs (1500 < MTU <= 9216: a standard frame is carried by every Ethernet hop) and never
    on loopback; prints ``@@path_mtu MTU IF carried|lost``, nothing where ping has no ``-M do``."""
    a = shlex.quote(address)
    return (f"if [ -n \"$sa_rtt\" ]; then sif=$(ip -o route get {a} 2>/dev/null | sed -n 's/.* dev \\([^ ]*\\).*/\\1/p' | head -n 1); "
            "m=; [ -n \"$sif\" ] && [ \"$sif\" != lo ] && read -r m 2>/dev/null </sys/class/net/$sif/mtu; "
            f"case {a} in *:*) h=48 ;; *) h=28 ;; esac; "
            "if [ -n \"$m\" ] && [ \"$m\" -gt 1500 ] 2>/dev/null && [ \"$m\" -le 9216 ]; then "
            f"o=$(ping -n -q -c 2 -i 0.2 -W 1 -w 2 -M do -s $((m - h)) {a} 2>&1); "
            # a ping without -M (busybox) says so: unknown, never "lost"
            "if [ $? -eq 0 ]; then r=carried; elif printf '%s' \"$o\" | grep -qi -e option -e usage; then r=; "
            f"elif ping -n -q -c 1 -W 1 {a} >/dev/null 2>&1; then r=lost; else r=; fi; "
            f"[ -n \"$r\" ] && echo \"{PATH_MTU_MARK} $m $sif $r\"; fi; fi; ")


def split_idle_rtt(text: str) -> tuple[float | None, str]:
    """(idle RTT in us or None, the rest of the output) from the client command's stdout."""
    idle, _mtu, rest = split_prefix(text)
    return idle, rest


def split_prefix(text: str) -> tuple[float | None, dict[str, Any] | None, str]:
    """(idle RTT in us or None, the path-MTU ping's result or None, the rest of the output): the lines
    the client command prints before iperf3's JSON."""
    idle: float | None = None
    mtu: dict[str, Any] | None = None
    rest = text or ""
    while True:
        first, sep, after = rest.lstrip().partition("\n")
        if first.startswith(IDLE_RTT_MARK):
            try:
                ms = float(first[len(IDLE_RTT_MARK):].strip())
                idle = ms * 1000.0 if 0 < ms < 60_000 else None
            except ValueError:
                idle = None
        elif first.startswith(PATH_MTU_MARK):
            parts = first.split()
            if len(parts) == 4 and parts[1].isdigit() and parts[3] in ("carried", "lost") and len(parts[2]) <= 15:
                mtu = {"mtu": int(parts[1]), "interface": parts[2], "carried": parts[3] == "carried"}
        else:
            return idle, mtu, rest
        rest = after


def client_command(
    address: str,
    port: int,
    duration: float,
    omit: float,
    streams: int,
    congestion: str | None = None,
    bidir: bool = False,
    connect_timeout_ms: int | None = None,
    hard_limit_s: float | None = None,
    idle_rtt: bool = False,
    auth: IperfAuth | None = None,
    sample: bool = False,
) -> str:
    """The sender's command line (``-J``, JSON on stdout).

    iperf3 reads ``-t`` and ``-O`` with atoi(): whole seconds only, so they are rounded here
    (``-t`` at least 1) rather than silently truncated by iperf3. ``idle_rtt``: ping the receiver
    first (``idle_rtt_script``; one line before the JSON, read by ``parse_client_json``). ``sample``:
    the sender's kernel is sampled during the test (advisor.mesh.sampling; a section after the JSON).
    """
    prefix = idle_rtt_script(address) + path_mtu_script(address) if idle_rtt else ""
    args = [
        "iperf3", "-c", address, "-p", str(int(port)),
        "-t", str(whole_seconds(duration, 1)), "-O", str(whole_seconds(omit, 0)), "-P", str(int(streams)), "-J",
    ]
    if congestion:
        args += ["-C", congestion]
    if bidir:
        args.append("--bidir")
    if connect_timeout_ms:
        args += ["--connect-timeout", str(int(connect_timeout_ms))]
    cmd = " ".join(shlex.quote(a) for a in args)
    env = ""
    if auth:
        cmd += auth.client_options()
        env = auth.client_env()
    line = prefix + env + cmd
    if hard_limit_s:
        life = max(1, int(hard_limit_s + 0.999))
        line = (
            prefix + f"if command -v timeout >/dev/null 2>&1; then {env}timeout -k 2 {life} {cmd}; "
            f"else {env}{cmd}; fi"
        )
    if sample:
        line = prefix + sampling.wrap_client(line[len(prefix):], address, port)
    return auth.client_script(line) if auth else line


def whole_seconds(x: float, minimum: int) -> int:
    """What iperf3 will run for ``-t``/``-O`` x: rounded half up, at least ``minimum``."""
    return max(minimum, int(float(x) + 0.5))


# ----------------------------------------------------------------------------- results


@dataclass
class Direction:
    """One direction of a test, as iperf3 reported it."""

    sent_bps: float | None = None
    received_bps: float | None = None
    sent_bytes: int | None = None
    retransmits: int | None = None
    rtt_us: float | None = None
    min_rtt_us: float | None = None
    max_rtt_us: float | None = None
    max_snd_cwnd: int | None = None
    max_snd_wnd: int | None = None
    congestion: str | None = None
    seconds: float | None = None


@dataclass
class IperfResult:
    """A parsed ``iperf3 -c ... -J`` run. ``error`` set = the test failed."""

    error: str | None = None
    forward: Direction | None = None
    #: the server -> client direction of a ``--bidir`` test
    reverse: Direction | None = None
    version: str | None = None
    snd_buf: int | None = None
    rcv_buf: int | None = None
    sock_bufsize: int | None = None
    mss: int | None = None
    streams: int | None = None
    #: the minimum of the pings sent just before the test (None: not measured)
    idle_rtt_us: float | None = None
    #: the full-MTU don't-fragment ping before the test: {mtu, interface, carried} (None: not sent)
    path_mtu: dict[str, Any] | None = None
    #: iperf3's end.cpu_utilization_percent: host_total (this client) and remote_total (the server)
    cpu_host_pct: float | None = None
    cpu_remote_pct: float | None = None
    #: what the client end sampled during the test (None: not sampled)
    client_sample: sampling.EndSample | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def _direction(end: dict, sum_sent_key: str, sum_recv_key: str, streams: list[dict], congestion: str | None) -> Direction:
    sent = end.get(sum_sent_key) or {}
    recv = end.get(sum_recv_key) or {}
    senders = [s.get("sender") or {} for s in streams]
    mean_rtts = [float(s["mean_rtt"]) for s in senders if isinstance(s.get("mean_rtt"), (int, float))]
    min_rtts = [float(s["min_rtt"]) for s in senders if isinstance(s.get("min_rtt"), (int, float))]
    max_rtts = [float(s["max_rtt"]) for s in senders if isinstance(s.get("max_rtt"), (int, float))]
    cwnds = [int(s["max_snd_cwnd"]) for s in senders if isinstance(s.get("max_snd_cwnd"), (int, float))]
    wnds = [int(s["max_snd_wnd"]) for s in senders if isinstance(s.get("max_snd_wnd"), (int, float))]
    retr = sent.get("retransmits")
    return Direction(
        sent_bps=_float(sent.get("bits_per_second")),
        received_bps=_float(recv.get("bits_per_second")),
        sent_bytes=_int(sent.get("bytes")),
        retransmits=_int(retr),
        rtt_us=_mean(mean_rtts),
        min_rtt_us=min(min_rtts) if min_rtts else None,
        max_rtt_us=max(max_rtts) if max_rtts else None,
        max_snd_cwnd=max(cwnds) if cwnds else None,
        max_snd_wnd=max(wnds) if wnds else None,
        congestion=congestion,
        seconds=_float(recv.get("seconds") or sent.get("seconds")),
    )


def _float(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _int(v: Any) -> int | None:
    return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def parse_client_json(text: str, rc: int | None = 0, stderr: str = "") -> IperfResult:
    """Parse the client's ``-J`` output.

    A top-level ``error`` is a failure whatever ``rc`` says; so is output that is not JSON, a
    non-zero exit without JSON, or JSON without the end sums (never reported as 0 Mb/s).
    """
    idle_rtt_us, path_mtu, text = split_prefix(text or "")
    text, section = sampling.split_section(text)
    res = _parse_client_json(text, rc, stderr)
    res.idle_rtt_us = idle_rtt_us
    res.path_mtu = path_mtu
    res.client_sample = sampling.parse_section(section)
    return res


def parse_server_stop(stdout: str) -> sampling.EndSample | None:
    """The server end's sampling section from the stop script's output (None: not sampled)."""
    _, section = sampling.split_section(stdout or "")
    return sampling.parse_section(section)


def _parse_client_json(text: str, rc: int | None, stderr: str) -> IperfResult:
    text = (text or "").strip()
    if not text:
        why = (stderr or "").strip().splitlines()
        return IperfResult(error=f"no output from iperf3 (exit {rc}){': ' + why[-1] if why else ''}")
    if json_depth(text) > MAX_JSON_DEPTH:
        return IperfResult(error=f"iperf3 output is JSON nested deeper than {MAX_JSON_DEPTH}")
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        # iperf3 prints its JSON last; anything before it (a shell's noise) is ignored
        start = text.find("{")
        try:
            doc = json.loads(text[start:]) if start >= 0 else None
        except json.JSONDecodeError:
            doc = None
        if not isinstance(doc, dict):
            first = text.splitlines()[0][:200]
            return IperfResult(error=f"iperf3 output is not JSON (exit {rc}): {first}")
    if not isinstance(doc, dict):
        return IperfResult(error="iperf3 output is not a JSON object")
    start_sec = doc.get("start") or {}
    version = start_sec.get("version")
    if doc.get("error"):
        return IperfResult(error=str(doc["error"]).strip(), version=version)
    end = doc.get("end") or {}
    if not end.get("sum_received") and not end.get("sum_sent"):
        return IperfResult(error=f"iperf3 reported no end-of-test sums (exit {rc})", version=version)
    streams = end.get("streams") or []
    fwd_streams = [s for s in streams if (s.get("sender") or {}).get("sender", True) is True]
    rev_streams = [s for s in streams if (s.get("sender") or {}).get("sender") is False]
    forward = _direction(end, "sum_sent", "sum_received", fwd_streams, end.get("sender_tcp_congestion"))
    reverse = None
    if "sum_received_bidir_reverse" in end or "sum_sent_bidir_reverse" in end:
        reverse = _direction(
            end, "sum_sent_bidir_reverse", "sum_received_bidir_reverse", rev_streams,
            end.get("receiver_tcp_congestion"),
        )
    test_start = start_sec.get("test_start") or {}
    cpu = end.get("cpu_utilization_percent") or {}
    res = IperfResult(
        cpu_host_pct=_float(cpu.get("host_total")),
        cpu_remote_pct=_float(cpu.get("remote_total")),
        forward=forward,
        reverse=reverse,
        version=version,
        snd_buf=_int(start_sec.get("sndbuf_actual")),
        rcv_buf=_int(start_sec.get("rcvbuf_actual")),
        sock_bufsize=_int(start_sec.get("sock_bufsize")),
        mss=_int(start_sec.get("tcp_mss_default") or start_sec.get("tcp_mss")),
        streams=_int(test_start.get("num_streams")),
    )
    if forward.received_bps is None:
        res.error = "iperf3 reported no received rate"
    return res


#: errors worth another attempt after a pause: nobody was listening yet, or someone else's
#: client took our one-shot server
_RETRYABLE = re.compile(r"server is busy|connection refused|unable to receive control message|control socket has closed", re.I)


def retryable(error: str | None) -> bool:
    return bool(error and _RETRYABLE.search(error))


def connect_failure(error: str | None) -> bool:
    """The client never got a test going (refused, unreachable, timed out connecting)."""
    return bool(error and re.search(r"unable to connect|connection refused|no route|timed out|timeout", error, re.I))
