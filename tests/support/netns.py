"""Throw-away network namespaces for tests, removed also when the test fails: one namespace (the ``netns``
fixture, or ``network_namespace``) and a small site of namespaces on a bridge (the ``netns_site`` fixture).
Taking either fixture marks a test ``netns`` and ``root``; ``netns_site`` also ``quiet``, since its tests measure
throughput (tests/support/tiers.py).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import signal
import subprocess
import uuid
from collections.abc import Iterator

import pytest

from tests.support.subprocess_transport import SubprocessTransport

_counter = itertools.count()


def have_root() -> bool:
    return os.geteuid() == 0


@contextlib.contextmanager
def network_namespace(prefix: str = "sa-probe") -> Iterator[str]:
    """A fresh network namespace (lo up); deleted on exit."""
    name = f"{prefix}-{os.getpid()}-{next(_counter)}"
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        subprocess.run(["ip", "netns", "exec", name, "ip", "link", "set", "lo", "up"], check=True)
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name], check=False)


def run_in_namespace(ns: str, script: str, timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["ip", "netns", "exec", ns, "sh", "-c", script], capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture
def netns() -> Iterator[str]:
    if not have_root():
        pytest.fail("this test needs root (network namespaces); CI runs as root")
    with network_namespace() as name:
        yield name


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


@pytest.fixture(scope="session")
def netns_site() -> type[NetnsSite]:
    """``NetnsSite``, once this machine can make namespaces (root, ip, tc): ``with netns_site(3) as site:``."""
    if not netns_available():
        pytest.skip("needs root and network namespaces")
    return NetnsSite




def _run(*cmd: str) -> None:
    subprocess.run(cmd, check=True, capture_output=True, timeout=30)


@pytest.fixture
def netns_pair():
    """Two namespaces joined by a veth pair: server 198.18.210.1 (sa-effs-PID), client .2."""
    if not (os.geteuid() == 0 and shutil.which("ip") and shutil.which("tc")):
        pytest.skip("needs root, ip and tc")
    tag = f"{os.getpid() % 100000}"
    a, b = f"sa-effs-{tag}", f"sa-effc-{tag}"
    va, vb = f"vefs{tag}", f"vefc{tag}"
    try:
        _run("ip", "netns", "add", a)
        _run("ip", "netns", "add", b)
        _run("ip", "link", "add", va, "type", "veth", "peer", "name", vb)
        _run("ip", "link", "set", va, "netns", a)
        _run("ip", "link", "set", vb, "netns", b)
        for ns, dev, addr in ((a, va, "198.18.210.1/24"), (b, vb, "198.18.210.2/24")):
            _run("ip", "-n", ns, "addr", "add", addr, "dev", dev)
            _run("ip", "-n", ns, "link", "set", dev, "up")
            _run("ip", "-n", ns, "link", "set", "lo", "up")
        yield {"server_ns": a, "client_ns": b, "server_dev": va}
    finally:
        for ns in (a, b):  # deleting a namespace removes its end of the veth (and the pair)
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=30)
        left = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        assert a not in left and b not in left
