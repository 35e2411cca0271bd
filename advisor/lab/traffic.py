"""The lab's production traffic (a scenario's ``traffic:``): servers that serve bulk reads on a storage
port, and readers that read from each server in turn, as jobs do. No iperf3: what the scan sees of
it is only what the kernel knows of live connections (probes/flows.py).

* ``serve``: listens on the host's address and port; each request on a connection is a line
  ``GET <bytes>``, answered with that many bytes. ``--cc`` sets the congestion control of every
  connection it accepts (TCP_CONGESTION, per socket: a lab namespace inherits the machine's default,
  and most sites run cubic).
* ``read``: keeps one connection to each server and, in turn, asks each for ``--chunk`` bytes and
  reads them; a connection is replaced after ``--reconnect`` seconds (as the next job opens its own:
  a setting changed since applies to it). ``--rate`` (bytes/s) reads at that pace: an I/O-light job,
  or a reader that does not keep up (its Recv-Q stays full: the application, never the network).

Both run until killed (SIGTERM); a lost connection is opened again after a second. Run inside a
host's network namespace by the lab (advisor/lab/control.py), one process per entry and host::

    python -m advisor.lab.traffic serve --bind 10.0.0.2 --port 1094 --cc cubic
    python -m advisor.lab.traffic read --server 10.0.0.2 --server 10.0.0.3 --port 1094 [--rate 2000000]
"""

from __future__ import annotations

import argparse
import signal
import socket
import sys
import threading
import time

BLOCK = bytes(1 << 20)
MAX_REQUEST = 1 << 40


def set_congestion(sock: socket.socket, cc: str | None) -> None:
    if cc:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())


def _serve_one(conn: socket.socket) -> None:
    with conn:
        f = conn.makefile("rb")
        while True:
            line = f.readline(64)
            if not line:
                return
            words = line.split()
            if len(words) != 2 or words[0] != b"GET" or not words[1].isdigit() or int(words[1]) > MAX_REQUEST:
                return
            left = int(words[1])
            while left > 0:
                n = min(left, len(BLOCK))
                conn.sendall(memoryview(BLOCK)[:n])
                left -= n


def serve(bind: str, port: int, cc: str | None) -> None:
    srv = socket.socket(socket.AF_INET6 if ":" in bind else socket.AF_INET)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((bind, port))
    srv.listen(128)
    while True:
        conn, _ = srv.accept()
        try:
            set_congestion(conn, cc)
        except OSError:
            conn.close()
            raise
        threading.Thread(target=_serve_one_quietly, args=(conn,), daemon=True).start()


def _serve_one_quietly(conn: socket.socket) -> None:
    try:
        _serve_one(conn)
    except OSError:
        pass  # the reader went away: its next connection is served afresh


class Reader:
    """One reader's connections, one per server, replaced after ``reconnect`` seconds."""

    def __init__(self, servers: list[str], port: int, chunk: int, rate: float | None, reconnect: float) -> None:
        self.servers, self.port, self.chunk, self.rate, self.reconnect = servers, port, chunk, rate, reconnect
        self.conns: dict[str, tuple[socket.socket, float]] = {}
        self.buf = bytearray(1 << 20)

    def _conn(self, server: str) -> socket.socket:
        held = self.conns.get(server)
        if held is not None and time.monotonic() - held[1] < self.reconnect:
            return held[0]
        if held is not None:
            held[0].close()
        sock = socket.create_connection((server, self.port), timeout=30)
        self.conns[server] = (sock, time.monotonic())
        return sock

    def _drop(self, server: str) -> None:
        held = self.conns.pop(server, None)
        if held is not None:
            held[0].close()

    def read_from(self, server: str) -> None:
        sock = self._conn(server)
        sock.sendall(b"GET %d\n" % self.chunk)
        left, start = self.chunk, time.monotonic()
        view = memoryview(self.buf)
        piece = len(self.buf) if not self.rate else max(4096, min(len(self.buf), int(self.rate / 20)))
        while left > 0:
            n = sock.recv_into(view[:min(piece, left)])
            if n == 0:
                raise ConnectionError("server closed the connection")
            left -= n
            if self.rate:  # read no faster than the rate: the rest waits in the socket (Recv-Q)
                ahead = (self.chunk - left) / self.rate - (time.monotonic() - start)
                if ahead > 0:
                    time.sleep(ahead)

    def run(self) -> None:
        while True:
            for server in self.servers:
                try:
                    self.read_from(server)
                except OSError:
                    self._drop(server)
                    time.sleep(1.0)


def _positive(text: str) -> float:
    v = float(text)
    if not v > 0:
        raise argparse.ArgumentTypeError(f"{text!r}: a positive number")
    return v


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m advisor.lab.traffic", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="role", required=True)
    s = sub.add_parser("serve")
    s.add_argument("--bind", required=True)
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--cc")
    r = sub.add_parser("read")
    r.add_argument("--server", action="append", required=True)
    r.add_argument("--port", type=int, required=True)
    r.add_argument("--chunk", type=int, default=8 << 20)
    r.add_argument("--rate", type=_positive)
    r.add_argument("--reconnect", type=_positive, default=20.0)
    args = ap.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        if args.role == "serve":
            serve(args.bind, args.port, args.cc)
        else:
            Reader(args.server, args.port, args.chunk, args.rate, args.reconnect).run()
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":  # pragma: no cover - run by the lab as a process
    sys.exit(main())
