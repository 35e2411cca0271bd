"""Benchmark: the host CPU the ``network.flows`` probe costs on a host with 1,000 storage connections
(issue: diagnosis from production traffic; target <= 1% of one core over the sample window).

On loopback only: a listener on a free port (named the storage port: the probe's ``flow_ports``)
and --connections clients, both ends in this process; a pump thread keeps every connection
moving a little data (4 KiB each, in turn, every --pump-ms), as a server's many slow jobs do. Both
ends of each connection are on this host, so ss lists 2 sockets per connection: the probe filters,
reads and prints twice the sockets a server with that many connections has.

Then, --repeat times, the probe's own script (``FlowsProbe.script``, as a scan sends it to a
host) runs under ``sh`` with the scan's default sample window (--sample-seconds, 5): its CPU
(user + sys of sh, ss, cat and sleep: bench/measure.py) over its wall time is its share of one
core. Its parse on the controller is timed apart (controller CPU, not the host's). Printed: the
medians and the target.

  .venv/bin/python bench/bench_flows_probe.py [--connections 1000] [--repeat 3] [--sample-seconds 5]
"""

from __future__ import annotations

import argparse
import platform
import resource
import selectors
import socket
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from measure import measure  # noqa: E402

from probes.flows import FlowsProbe  # noqa: E402
from probes.probe import ProbeContext  # noqa: E402

TARGET = 0.01
CHUNK = b"x" * 4096


class Connections:
    """N loopback connections on one listening port, each moving CHUNK in turn."""

    def __init__(self, n: int, pump_s: float) -> None:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if hard != resource.RLIM_INFINITY and hard < 2 * n + 64:
            raise SystemExit(f"open-files limit {hard} is below the {2 * n + 64} this needs")
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 2 * n + 64), hard))
        self.srv = socket.socket()
        self.srv.bind(("127.0.0.1", 0))
        self.srv.listen(n)
        self.port = self.srv.getsockname()[1]
        self.clients, self.servers = [], []
        for _ in range(n):
            self.clients.append(socket.create_connection(("127.0.0.1", self.port)))
            self.servers.append(self.srv.accept()[0])
        self.pump_s = pump_s
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._send, daemon=True), threading.Thread(target=self._read, daemon=True)]
        for t in self.threads:
            t.start()

    def _send(self) -> None:
        while not self.stop.is_set():
            for s in self.servers:
                s.send(CHUNK)
            time.sleep(self.pump_s)

    def _read(self) -> None:
        sel = selectors.DefaultSelector()
        for c in self.clients:
            c.setblocking(False)
            sel.register(c, selectors.EVENT_READ)
        while not self.stop.is_set():
            for key, _ in sel.select(timeout=0.2):
                try:
                    key.fileobj.recv(1 << 16)
                except BlockingIOError:
                    pass

    def close(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join()
        for s in (*self.clients, *self.servers, self.srv):
            s.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--connections", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--sample-seconds", type=float, default=5.0)
    ap.add_argument("--pump-ms", type=float, default=100.0)
    args = ap.parse_args()
    probe = FlowsProbe()
    conns = Connections(args.connections, args.pump_ms / 1000)
    runs, parses = [], []
    try:
        time.sleep(1.0)
        ctx = ProbeContext(host="here", sample_seconds=args.sample_seconds, flow_ports=[str(conns.port)])
        script = probe.script(ctx)
        for _ in range(args.repeat):
            m = measure(["sh", "-c", script], ok=(0,))
            t0 = time.perf_counter()
            facts = probe.parse(m["stdout"])
            parses.append(time.perf_counter() - t0)
            listed = len(facts.connections) + facts.idle
            if listed < 2 * args.connections:
                raise SystemExit(f"the probe saw {listed} sockets, expected {2 * args.connections}")
            runs.append((m["cpu_s"], m["wall_s"], listed))
    finally:
        conns.close()
    cpu = statistics.median(r[0] for r in runs)
    wall = statistics.median(r[1] for r in runs)
    share = cpu / wall
    print(f"machine: {platform.machine()}, {len(__import__('os').sched_getaffinity(0))} CPUs, {platform.platform()}")
    print(f"{args.connections} connections ({runs[0][2]} sockets listed, both ends on this host), "
          f"sample window {args.sample_seconds:g} s, {args.repeat} runs")
    print(f"probe on the host: CPU median {cpu * 1000:.1f} ms over {wall:.2f} s wall = {share:.2%} of one core "
          f"(target <= {TARGET:.0%}: {'met' if share <= TARGET else 'NOT met'}); runs "
          + ", ".join(f"{c * 1000:.0f} ms" for c, _w, _n in runs))
    print(f"parse on the controller: median {statistics.median(parses) * 1000:.0f} ms")
    return 0 if share <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
