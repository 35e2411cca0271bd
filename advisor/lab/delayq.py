"""The lab's user-space delay forwarder (NFQUEUE), for kernels without netem.

A lab path with ``delay:`` gets, in the switch namespace that delivers to the receivers, an
iptables rule ``FORWARD -s <senders> -d <receivers> -j NFQUEUE --queue-num Q --queue-bypass``
(bridged frames reach iptables through br_netfilter, whose ``bridge-nf-call-iptables`` is on in
every namespace). One forwarder process per switch namespace binds the queues of that switch over
netlink (nfnetlink_queue, no library needed), notes each packet's arrival, and gives the kernel
its verdict (ACCEPT) when the packet's delay has passed. Only packet metadata is copied to user
space (NFQNL_COPY_META), never payload.

Every queue carries one fixed delay, so its deadlines are in arrival order: a single batch
verdict (NFQNL_MSG_VERDICT_BATCH: every id up to N) releases all packets that are due, and the
kernel re-injects them in order. A packet is never reordered or dropped by the forwarder; a full
kernel queue drops (as netem's ``limit`` does), and ``--queue-bypass`` lets traffic through
undelayed only while no forwarder is bound (before start, after a crash).

Measured on a 2-core VM (1 Gbit/s tbf links, cubic, see docs/lab.md): 10 ms added one way gives
an iperf3 RTT of 10.3 ms at 10 Mbit/s and 10.6 ms at 500 Mbit/s; a single stream through it
still reaches 836-870 Mbit/s (the forwarder uses ~75% of one core at that rate).

Run (inside the switch namespace; the lab does this)::

    python -m advisor.lab.delayq --queue 1:10 --queue 2:150 [--ready FILE]
    python -m advisor.lab.delayq --probe     # can this namespace bind an NFQUEUE? exit 0/1
"""

from __future__ import annotations

import argparse
import collections
import os
import select
import signal
import socket
import struct
import sys
import time

NETLINK_NETFILTER = 12
NFNL_SUBSYS_QUEUE = 3
NFQNL_MSG_PACKET, NFQNL_MSG_VERDICT, NFQNL_MSG_CONFIG, NFQNL_MSG_VERDICT_BATCH = 0, 1, 2, 3
NFQA_PACKET_HDR, NFQA_VERDICT_HDR = 1, 2
NFQA_CFG_CMD, NFQA_CFG_PARAMS, NFQA_CFG_QUEUE_MAXLEN, NFQA_CFG_MASK, NFQA_CFG_FLAGS = 1, 2, 3, 4, 5
NFQNL_CFG_CMD_BIND, NFQNL_CFG_CMD_UNBIND = 1, 2
NFQNL_COPY_META = 1
NLM_F_REQUEST, NLM_F_ACK = 1, 4
NLMSG_ERROR = 2
NF_ACCEPT = 1
SO_RCVBUFFORCE = 33

#: packets a queue may hold (1 Gbit/s of 1500-byte frames for ~1.5 s)
QUEUE_MAXLEN = 131072
RCVBUF = 64 << 20

_NLMSG = struct.Struct("=IHHII")
_NLATTR = struct.Struct("=HH")
_NFGEN = struct.Struct("=BBH")
_VERDICT = struct.Struct(">II")
_ID = struct.Struct(">I")


class DelayQueueError(Exception):
    pass


def _attr(kind: int, payload: bytes) -> bytes:
    n = _NLATTR.size + len(payload)
    return _NLATTR.pack(n, kind) + payload + b"\0" * (-n % 4)


def _message(mtype: int, queue: int, attrs: list[bytes], flags: int = NLM_F_REQUEST, seq: int = 0) -> bytes:
    body = _NFGEN.pack(socket.AF_UNSPEC, 0, socket.htons(queue)) + b"".join(attrs)
    return _NLMSG.pack(_NLMSG.size + len(body), (NFNL_SUBSYS_QUEUE << 8) | mtype, flags, seq, 0) + body


def verdict_batch(queue: int, last_id: int) -> bytes:
    """ACCEPT every packet of ``queue`` with an id up to ``last_id``."""
    return _message(NFQNL_MSG_VERDICT_BATCH, queue, [_attr(NFQA_VERDICT_HDR, _VERDICT.pack(NF_ACCEPT, last_id))])


def packet_id(buf: bytes | bytearray | memoryview, n: int) -> tuple[int, int] | None:
    """(queue, packet id) of one NFQNL_MSG_PACKET message in ``buf[:n]``, else None."""
    if n < _NLMSG.size + _NFGEN.size:
        return None
    length, mtype, _flags, _seq, _pid = _NLMSG.unpack_from(buf, 0)
    if mtype != (NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_PACKET:
        return None
    queue = socket.ntohs(_NFGEN.unpack_from(buf, _NLMSG.size)[2])
    off, end = _NLMSG.size + _NFGEN.size, min(length, n)
    while off + _NLATTR.size <= end:
        alen, akind = _NLATTR.unpack_from(buf, off)
        if alen < _NLATTR.size:
            return None
        if akind & 0x7FFF == NFQA_PACKET_HDR and alen >= _NLATTR.size + 4:
            return queue, _ID.unpack_from(buf, off + _NLATTR.size)[0]
        off += (alen + 3) & ~3
    return None


class Forwarder:
    """Binds NFQUEUE queues (number -> delay in seconds) and releases each packet when due."""

    def __init__(self, delays: dict[int, float]):
        if not delays:
            raise DelayQueueError("no queue to serve")
        self.delays = dict(delays)
        self.sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_NETFILTER)
        try:
            self.sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, RCVBUF)
        except OSError:
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF)
        self.sock.bind((0, 0))
        self._seq = 0
        self.pending: dict[int, collections.deque] = {q: collections.deque() for q in self.delays}
        self.released = 0
        self.overruns = 0
        for q in self.delays:
            self._request(_message(NFQNL_MSG_CONFIG, q, [_attr(NFQA_CFG_CMD, struct.pack("=BBH", NFQNL_CFG_CMD_BIND, 0, 0))],
                                   NLM_F_REQUEST | NLM_F_ACK), f"bind queue {q}")
            self._request(_message(NFQNL_MSG_CONFIG, q, [
                _attr(NFQA_CFG_PARAMS, struct.pack(">IB", 0, NFQNL_COPY_META)),
                _attr(NFQA_CFG_QUEUE_MAXLEN, struct.pack(">I", QUEUE_MAXLEN)),
            ], NLM_F_REQUEST | NLM_F_ACK), f"configure queue {q}")
        self.sock.setblocking(False)

    def _request(self, msg: bytes, what: str) -> None:
        self._seq += 1
        msg = msg[:8] + struct.pack("=I", self._seq) + msg[12:]
        self.sock.send(msg)
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            data = self.sock.recv(65536)
            length, mtype, _f, seq, _p = _NLMSG.unpack_from(data, 0)
            if mtype == NLMSG_ERROR and seq == self._seq:
                err = struct.unpack_from("=i", data, _NLMSG.size)[0]
                if err:
                    raise DelayQueueError(f"{what}: {os.strerror(-err)}")
                return
        raise DelayQueueError(f"{what}: no answer from the kernel")

    def close(self) -> None:
        # release everything still held, then unbind (packets must not stay queued)
        for q, dq in self.pending.items():
            if dq:
                self._send(verdict_batch(q, dq[-1][1]))
                dq.clear()
            try:
                self.sock.setblocking(True)
                self.sock.send(_message(NFQNL_MSG_CONFIG, q, [
                    _attr(NFQA_CFG_CMD, struct.pack("=BBH", NFQNL_CFG_CMD_UNBIND, 0, 0))]))
            except OSError:
                pass
        self.sock.close()

    def _send(self, msg: bytes) -> None:
        while True:
            try:
                self.sock.send(msg)
                return
            except BlockingIOError:
                select.select([], [self.sock], [], 0.01)

    def release_due(self, now: float) -> float | None:
        """Give the verdicts that are due; returns the time until the next one (None: nothing held)."""
        nxt = None
        for q, dq in self.pending.items():
            last = None
            while dq and dq[0][0] <= now:
                last = dq.popleft()[1]
                self.released += 1
            if last is not None:
                self._send(verdict_batch(q, last))
            if dq:
                wait = dq[0][0] - now
                nxt = wait if nxt is None else min(nxt, wait)
        return nxt

    def receive(self, buf: bytearray) -> None:
        mono = time.monotonic
        while True:
            try:
                n = self.sock.recv_into(buf)
            except BlockingIOError:
                return
            except OSError:
                # ENOBUFS: the socket overflowed; the packets stay in the kernel queue and the
                # next batch verdict (every id up to N) releases them
                self.overruns += 1
                continue
            got = packet_id(buf, n)
            if got is not None and got[0] in self.pending:
                self.pending[got[0]].append((mono() + self.delays[got[0]], got[1]))

    def serve(self, stop: list[bool]) -> None:
        buf = bytearray(65536)
        mono = time.monotonic
        while not stop[0]:
            wait = self.release_due(mono())
            timeout = 0.5 if wait is None else max(0.0, wait)
            try:
                ready, _, _ = select.select([self.sock], [], [], timeout)
            except InterruptedError:
                continue
            if ready:
                self.receive(buf)


def _parse_queue(text: str) -> tuple[int, float]:
    try:
        q, ms = text.split(":", 1)
        qn, delay = int(q), float(ms)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not QUEUE:MILLISECONDS: {text!r}") from None
    if not 0 <= qn <= 65535 or not 0 < delay <= 10000:
        raise argparse.ArgumentTypeError(f"queue 0-65535 and a delay of 0-10000 ms: {text!r}")
    return qn, delay / 1000.0


def probe() -> str | None:
    """None when this namespace can bind an NFQUEUE queue, else why not."""
    try:
        f = Forwarder({65000: 0.001})
        f.close()
        return None
    except (OSError, DelayQueueError) as exc:
        return str(exc)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m advisor.lab.delayq", description=__doc__.split("\n\n")[0])
    ap.add_argument("--queue", action="append", type=_parse_queue, default=[], metavar="Q:MS")
    ap.add_argument("--ready", help="file written once every queue is bound")
    ap.add_argument("--probe", action="store_true")
    a = ap.parse_args(argv)
    if a.probe:
        why = probe()
        if why:
            print(f"delayq: cannot bind an NFQUEUE queue: {why}", file=sys.stderr)
            return 1
        return 0
    try:
        fwd = Forwarder(dict(a.queue))
    except (OSError, DelayQueueError) as exc:
        print(f"delayq: {exc}", file=sys.stderr)
        return 1
    stop = [False]

    def _stop(*_: object) -> None:
        stop[0] = True

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    if a.ready:
        tmp = a.ready + ".tmp"
        with open(tmp, "w") as f:
            f.write(f"{os.getpid()}\n")
        os.replace(tmp, a.ready)
    try:
        fwd.serve(stop)
    finally:
        fwd.close()
        # the forwarder's log (<lab>/delayq-<switch>.log) says what it did
        print(f"delayq: released {fwd.released} packets, {fwd.overruns} socket overruns", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
