"""network.flows: the two-sample arithmetic, the port filter, the real script on real sockets.

Real outputs from other people's machines: tests/fixtures/real/network.flows (test_real_corpus.py).
"""

from __future__ import annotations

import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from probes.flows import DEFAULT_FLOW_PORTS, FlowsProbe, parse_port_spec, ss_filter
from probes.probe import ProbeContext, ProbeParseError

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "network.flows"
PROBE = FlowsProbe()
NETDEV = ("Inter-|   Receive                                                |  Transmit\n"
          " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n")


def _dev(rx: int, tx: int) -> str:
    return NETDEV + f"  eth0: {rx} 10 0 0 0 0 0 0 {tx} 10 0 0 0 0 0 0\n    lo: 5 1 0 0 0 0 0 0 5 1 0 0 0 0 0 0\n"


def _sock(local: str, peer: str, info: str, recv_q: int = 0, send_q: int = 0) -> str:
    return f"{recv_q} {send_q} {local} {peer} ino:1 sk:1 cgroup:/ <->\n\t ts sack cubic wscale:7,7 {info}\n"


def _output(ss1: str, ss2: str, ports: str = "1094 20000-25000", dev1: str = _dev(1000, 2000),
            dev2: str = _dev(6000, 627_002_000), up: tuple[float, float] = (100.0, 105.0)) -> str:
    return (f"@@section ports\n{ports}\n@@section uptime1\n{up[0]} 1.0\n@@section netdev1\n{dev1}@@section ss1\n{ss1}"
            f"@@section uptime2\n{up[1]} 1.0\n@@section netdev2\n{dev2}@@section ss2\n{ss2}@@section end\n")


SENDER1 = _sock("10.0.0.1:1094", "10.0.0.9:41000",
                "rtt:20.1/1 mss:1448 cwnd:30 bytes_acked:1000000 data_segs_out:700 busy:1000ms sndbuf_limited:600ms(60.0%) "
                "retrans:0/10 minrtt:20.0", send_q=200000)
SENDER2 = _sock("10.0.0.1:1094", "10.0.0.9:41000",
                "rtt:20.5/1 mss:1448 cwnd:32 bytes_acked:6000000 bytes_retrans:14480 data_segs_out:4200 "
                "delivery_rate 8.0Mbps busy:6000ms sndbuf_limited:4600ms(76.7%) lost:1 retrans:0/20 minrtt:19.9 "
                "snd_wnd:3000000", send_q=250000)


def test_deltas_over_the_window_of_a_connection_seen_twice():
    f = PROBE.parse(_output(SENDER1, SENDER2))
    assert f.window_s == 5.0 and f.ports == ["1094", "20000-25000"] and f.idle == 0 and f.closed == 0
    (c,) = f.connections
    assert (c.local, c.local_port, c.peer, c.peer_port) == ("10.0.0.1", 1094, "10.0.0.9", 41000)
    assert not c.opened and c.bytes_sent == 5_000_000 and c.segs_out == 3500 and c.retrans == 10
    assert c.busy_ms == 5000 and c.sndbuf_limited_ms == 4000 and c.rwnd_limited_ms == 0
    assert c.bytes_retrans == 14480 and c.lost == 1 and c.send_q == 250000 and c.snd_wnd == 3000000
    assert c.rtt_ms == 20.5 and c.min_rtt_ms == 19.9 and c.cwnd == 32 and c.delivery_rate_bps == 8e6
    assert c.sack and c.timestamps and c.congestion == "cubic" and c.wscale == [7, 7]
    assert f.interfaces["eth0"].tx_bytes == 627_000_000 and f.interfaces["eth0"].rx_bytes == 5000
    assert f.interfaces["lo"].tx_bytes == 0


def test_opened_closed_idle_and_reused_connections():
    closed = _sock("10.0.0.1:1191", "10.0.0.7:50000", "bytes_acked:10 busy:1ms")
    idle1 = _sock("10.0.0.1:1191", "10.0.0.8:50001", "bytes_acked:500 bytes_received:700 busy:3ms")
    opened = _sock("10.0.0.1:22222", "10.0.0.6:1094", "bytes_acked:100 bytes_received:9000000 busy:2ms app_limited",
                   recv_q=4_000_000)
    reused1 = _sock("10.0.0.1:1094", "10.0.0.5:40000", "bytes_acked:900000000 data_segs_out:600000 busy:9000ms")
    reused2 = _sock("10.0.0.1:1094", "10.0.0.5:40000", "bytes_acked:3000 data_segs_out:3 busy:4ms")
    f = PROBE.parse(_output(closed + idle1 + reused1, idle1 + opened + reused2, ports="1094 1191"))
    assert f.closed == 1 and f.idle == 1
    by_peer = {c.peer: c for c in f.connections}
    assert set(by_peer) == {"10.0.0.6", "10.0.0.5"}
    o = by_peer["10.0.0.6"]
    assert o.opened and o.bytes_received == 9_000_000 and o.recv_q == o.recv_q_max == 4_000_000 and o.app_limited
    r = by_peer["10.0.0.5"]  # counters went backwards: a new connection on the same address pair
    assert r.opened and r.bytes_sent == 3000 and r.busy_ms == 4


def test_recv_q_max_of_the_samples_and_app_limited_in_both():
    a = _sock("10.0.0.2:33000", "10.0.0.1:1094", "bytes_received:1000 app_limited", recv_q=3_000_000)
    b = _sock("10.0.0.2:33000", "10.0.0.1:1094", "bytes_received:900000", recv_q=10)
    (c,) = PROBE.parse(_output(a, b)).connections
    assert c.recv_q == 10 and c.recv_q_max == 3_000_000 and not c.app_limited and c.bytes_received == 899_000


def test_only_the_named_ports_are_kept_whatever_ss_printed():
    ssh = _sock("10.0.0.1:22", "10.0.0.9:50000", "bytes_acked:99999 busy:1ms")
    mover = _sock("[::ffff:10.0.0.1]:21000", "[2001:db8::9]:40000", "bytes_acked:5000 busy:1ms")
    f = PROBE.parse(_output("", ssh + mover))
    (c,) = f.connections
    assert (c.local, c.local_port, c.peer) == ("10.0.0.1", 21000, "2001:db8::9")


@pytest.mark.parametrize("text,message", [
    ("", "no ports, uptime1"),
    (_output("", "").replace("@@section end\n", ""), "no end section"),
    (_output("", "", ports="http"), "not a port"),
    (_output("", "", ports="70000"), "ports are 1-65535"),
    (_output("", "", up=(105.0, 100.0)), "sample window"),
    (_output("", "", dev2="eth0 no counters\n"), "not a /proc/net/dev line"),
    (_output("", "tcp 0 0 10.0.0.1:1094 10.0.0.2:5000 ESTABLISHED\n"), "has no TCP information line"),
    (_output("", "\tts sack cubic\n"), "TCP info before any socket line"),
    (_output("", _sock("10.0.0.1:1094", "10.0.0.2:1", "busy:12s")), "busy"),
])
def test_refuses_what_is_not_its_layout(text, message):
    with pytest.raises(ProbeParseError) as err:
        PROBE.parse(text)
    assert message in str(err.value) and "\n" not in str(err.value)


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_parse_raises_only_probe_parse_error(text):
    try:
        PROBE.parse(text)
    except ProbeParseError:
        pass


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="0123456789 :.\t\nabcdefgkmsu_/()%[]-", max_size=300))
def test_listing_fuzz_raises_only_probe_parse_error(listing):
    try:
        PROBE.parse(_output(listing, listing))
    except ProbeParseError:
        pass


def test_port_specs_and_the_filter():
    assert parse_port_spec("1094") == (1094, 1094) and parse_port_spec("20000-25000") == (20000, 25000)
    for bad in ("0", "25000-20000", "1-2-3", "x", "65536"):
        with pytest.raises(ValueError):
            parse_port_spec(bad)
    assert ss_filter(["1094", "20000-25000"]) == (
        "( sport = :1094 or dport = :1094 or ( sport >= :20000 and sport <= :25000 ) "
        "or ( dport >= :20000 and dport <= :25000 ) )")
    assert set(DEFAULT_FLOW_PORTS) == {"1094", "1095", "1191", "443", "2880", "8443", "8000", "2811", "20000-25000"}


def test_the_script_samples_real_connections_on_loopback():
    """The probe's own script, run by sh, over a real connection on a storage port (loopback only)."""
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    port = srv.getsockname()[1]
    srv.listen()
    cli = socket.create_connection(("127.0.0.1", port))
    acc, _ = srv.accept()
    stop = time.monotonic() + 2.5
    moved = [0]

    def pump() -> None:
        while time.monotonic() < stop:
            acc.sendall(b"x" * 65536)
            moved[0] += len(cli.recv(1 << 20))

    t = threading.Thread(target=pump)
    t.start()
    try:
        time.sleep(0.3)
        ctx = ProbeContext(host="here", sample_seconds=1.0, flow_ports=[str(port)])
        cp = subprocess.run(["sh", "-c", PROBE.script(ctx)], capture_output=True, text=True, timeout=30)
    finally:
        t.join()
        for s in (cli, acc, srv):
            s.close()
    f = PROBE.parse(cp.stdout)
    assert 0.9 <= f.window_s <= 2.0 and f.ports == [str(port)] and "lo" in f.interfaces
    server_side = [c for c in f.connections if c.local_port == port]
    client_side = [c for c in f.connections if c.peer_port == port]
    assert len(server_side) == 1 and len(client_side) == 1
    # both ends of the one connection saw the window's bytes: the sender acked, the receiver received
    assert server_side[0].bytes_sent > 1_000_000 and client_side[0].bytes_received > 1_000_000
    # the options the connection negotiated (loopback: SACK and timestamps, the kernel's defaults):
    # ss prints them with -e or -o only (the mesh's plain -tin read "sack off" on every path)
    assert all(c.sack and c.timestamps for c in server_side + client_side), server_side + client_side
    assert server_side[0].busy_ms > 0 and client_side[0].bytes_sent < 10_000
    # lo carried what the connection sent over the window: each sample reads /proc/net/dev, then ss, so
    # the counters are a few milliseconds apart (CI: 5,572,520,976 against 5,580,718,080 bytes)
    assert f.interfaces["lo"].tx_bytes >= 0.98 * server_side[0].bytes_sent
