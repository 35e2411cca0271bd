"""Test support for the mesh: a subprocess transport (optionally inside a network namespace)
and a throw-away namespace mini-site (bridge + veths, tbf-shaped) torn down even on failure."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
import uuid

import pytest

from advisor.transport.base import Command, CommandResult, Transport


class SubprocessTransport(Transport):
    """Runs scripts with ``sh -c`` on this machine, or inside ``ip netns exec NS``.

    Real processes, real iperf3: the stand-in for LocalTransport until it lands. A timeout
    kills the script's whole process group.
    """

    is_local = True

    def __init__(self, netns: str | None = None):
        self.netns = netns
        self.calls = 0

    def run_batch(self, commands: list[Command]) -> list[CommandResult]:
        out = []
        for c in commands:
            self.calls += 1
            argv = ["sh", "-c", c.script]
            if self.netns:
                argv = ["ip", "netns", "exec", self.netns] + argv
            t0 = time.monotonic()
            p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 start_new_session=True)
            try:
                so, se = p.communicate(timeout=c.timeout)
                out.append(CommandResult(key=c.key, rc=p.returncode, stdout=so, stderr=se,
                                         duration_s=time.monotonic() - t0))
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                so, se = p.communicate()
                out.append(CommandResult(key=c.key, rc=None, stdout=so, stderr=se,
                                         duration_s=time.monotonic() - t0, timed_out=True))
        return out


def _sh(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), capture_output=True, text=True, check=check)


def netns_available() -> bool:
    if os.geteuid() != 0 or not shutil.which("ip") or not shutil.which("tc"):
        return False
    name = f"sa-probe-{uuid.uuid4().hex[:6]}"
    r = _sh("ip", "netns", "add", name, check=False)
    if r.returncode != 0:
        return False
    _sh("ip", "netns", "del", name, check=False)
    return True


class NetnsSite:
    """N hosts as namespaces on a bridge (in its own switch namespace), 198.18.200.0/24.

    ``rate``: tbf rate on each host's egress (e.g. "1gbit"); None = unshaped.
    """

    def __init__(self, n: int, rate: str | None = "1gbit", prefix: str | None = None):
        tag = prefix or uuid.uuid4().hex[:5]
        self.tag = tag
        self.switch = f"sa{tag}-sw"
        self.hosts = [f"sa{tag}-h{i}" for i in range(1, n + 1)]
        self.addresses = {h: f"198.18.200.{10 + i}" for i, h in enumerate(self.hosts, start=1)}
        self.rate = rate
        self.created: list[str] = []

    def up(self) -> "NetnsSite":
        _sh("ip", "netns", "add", self.switch)
        self.created.append(self.switch)
        ex = ["ip", "netns", "exec", self.switch]
        _sh(*ex, "ip", "link", "add", "br0", "type", "bridge")
        _sh(*ex, "ip", "link", "set", "br0", "up")
        _sh(*ex, "ip", "link", "set", "lo", "up")
        for i, h in enumerate(self.hosts, start=1):
            _sh("ip", "netns", "add", h)
            self.created.append(h)
            # create the veth pair directly between the host and switch namespaces
            _sh("ip", "link", "add", "eth0", "netns", h, "type", "veth", "peer", "name", f"p{i}", "netns", self.switch)
            hx = ["ip", "netns", "exec", h]
            _sh(*hx, "ip", "link", "set", "lo", "up")
            _sh(*hx, "ip", "addr", "add", f"{self.addresses[h]}/24", "dev", "eth0")
            _sh(*hx, "ip", "link", "set", "eth0", "up")
            _sh(*ex, "ip", "link", "set", f"p{i}", "master", "br0")
            _sh(*ex, "ip", "link", "set", f"p{i}", "up")
            if self.rate:
                _sh(*hx, "tc", "qdisc", "replace", "dev", "eth0", "root", "tbf", "rate", self.rate,
                    "burst", "128kb", "latency", "10ms")
        return self

    def down(self) -> None:
        for ns in reversed(self.created):
            # end what runs in the namespace (only processes inside our own namespaces)
            r = _sh("ip", "netns", "pids", ns, check=False)
            for pid in r.stdout.split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
            _sh("ip", "netns", "del", ns, check=False)
        self.created.clear()

    def transports(self) -> dict[str, SubprocessTransport]:
        return {h: SubprocessTransport(h) for h in self.hosts}

    def __enter__(self) -> "NetnsSite":
        try:
            return self.up()
        except BaseException:
            self.down()
            raise

    def __exit__(self, *exc: object) -> None:
        self.down()


@pytest.fixture
def loopback_transport() -> SubprocessTransport:
    return SubprocessTransport()


needs_netns = pytest.mark.skipif(not netns_available(), reason="needs root and network namespaces")
