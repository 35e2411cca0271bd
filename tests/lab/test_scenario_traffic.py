"""A scenario's ``traffic:`` section (advisor/lab/scenario_traffic.py) and the lab's production
traffic processes (advisor/lab/traffic.py) on loopback: no root, no lab."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from advisor.util.errors import SiteFileError
from advisor.lab.scenario import load_scenario
from advisor.lab.scenario_traffic import parse_bytes_rate, traffic_readers, traffic_servers
from advisor.lab.traffic import Reader

from tests.support.cli import REPO

HOSTS = """
name: t
hosts:
  - {name: s1, roles: [storage], groups: [servers]}
  - {name: s2, roles: [storage], groups: [servers]}
  - {name: w1, roles: [worker]}
  - {name: w2, roles: [worker], groups: [slow]}
"""


def scenario(tmp_path: Path, traffic: str):
    p = tmp_path / "sc.yml"
    p.write_text(HOSTS + "traffic:\n" + traffic)
    return load_scenario(str(p))


def test_the_shipped_flows_scenario_has_readers_servers_and_one_slow_reader():
    sc = load_scenario("flows")
    assert not any(h.iperf3 for h in sc.hosts) and sc.site.mesh is None
    assert traffic_servers(sc) == {("stor01", 1094): "cubic", ("stor02", 1094): "cubic", ("stor01", 1191): "cubic"}
    readers = {(h, t.port): (servers, t.rate) for h, servers, t in traffic_readers(sc)}
    assert readers[("wn03", 1094)] == (["stor01", "stor02"], 2_000_000)
    assert readers[("wn01", 1094)] == (["stor01", "stor02"], None)
    assert readers[("stor02", 1191)] == (["stor01"], None)


def test_a_host_never_reads_from_itself_and_rates_are_bytes(tmp_path):
    sc = scenario(tmp_path, "  - {from: [storage, worker], to: servers, port: 1191, rate: 16mbit}\n")
    readers = {h: servers for h, servers, _t in traffic_readers(sc)}
    assert readers == {"s1": ["s2"], "s2": ["s1"], "w1": ["s1", "s2"], "w2": ["s1", "s2"]}
    assert sc.traffic[0].rate == 2_000_000
    assert parse_bytes_rate("500KB/s") == 500_000 and parse_bytes_rate(1234) == 1234


@pytest.mark.parametrize("entry, message", [
    ("{from: nobody, to: servers}", "selector 'nobody' matches no host"),
    ("{from: worker, to: servers, rate: fast}", "not a rate: 'fast'"),
    ("{from: worker, to: servers, rate: 0}", "rate must be positive"),
    ("{from: worker, to: servers, cc: 'cubic; rm'}", "is not a congestion control name"),
    ("{from: worker, to: servers, port: 70000}", "port"),
    ("{from: worker, to: servers, colour: red}", "colour"),
])
def test_bad_entries_are_one_line_errors_naming_the_field(tmp_path, entry, message):
    with pytest.raises(SiteFileError) as exc:
        scenario(tmp_path, f"  - {entry}\n")
    assert message in str(exc.value) and "traffic" in str(exc.value) and "\n" not in str(exc.value).strip()


def test_one_server_per_host_and_port(tmp_path):
    with pytest.raises(SiteFileError, match="one server per host and port"):
        scenario(tmp_path, "  - {from: w1, to: servers, cc: cubic}\n  - {from: w2, to: s1, cc: reno}\n")


def test_serve_and_a_rate_limited_reader_on_loopback():
    """The real server process, and a reader at 2 MB/s: it reads no faster, so what it has not read
    waits in its socket (the Recv-Q the flows probe sees as a reader that does not read)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    srv = subprocess.Popen([sys.executable, "-m", "advisor.lab.traffic", "serve", "--bind", "127.0.0.1",
                            "--port", str(port), "--cc", "cubic"], cwd=REPO)
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the server never listened"
                time.sleep(0.1)
        reader = Reader(["127.0.0.1"], port, chunk=2_000_000, rate=2_000_000, reconnect=20.0)
        t0 = time.monotonic()
        reader.read_from("127.0.0.1")
        took = time.monotonic() - t0
        # the server's side of the connection runs the named congestion control (the machine's default
        # is another: bbr here)
        ss = subprocess.run(["ss", "-tinH", "state", "established", f"sport = :{port}"], capture_output=True,
                            text=True, check=True).stdout
        assert " cubic " in ss, ss
        assert 0.9 <= took <= 3.0, took
        fast = Reader(["127.0.0.1"], port, chunk=8_000_000, rate=None, reconnect=20.0)
        t0 = time.monotonic()
        fast.read_from("127.0.0.1")
        assert time.monotonic() - t0 < 2.0
        for r in (reader, fast):
            for sock, _ in r.conns.values():
                sock.close()
    finally:
        srv.terminate()
        srv.wait(timeout=10)
