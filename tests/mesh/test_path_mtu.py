"""The mesh's path-MTU ping (advisor/mesh/iperf.py ``path_mtu_script``) on real namespaces: two hosts at MTU
9000 on a bridge whose ports carry 1500 lose the 9000-byte don't-fragment ping while small pings arrive (a
black hole); with the ports at 9000 it arrives; a host at 1500 sends none. And the client's prefix lines
are read before iperf3's JSON."""

from __future__ import annotations

import contextlib
import subprocess

import pytest

from advisor.mesh import iperf
from tests.support.netns import network_namespace


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


@contextlib.contextmanager
def two_hosts(host_mtu: int, port_mtu: int):
    """Hosts a (10.99.0.1) and b (10.99.0.2), each a veth into a bridge namespace."""
    with network_namespace("sa-pmtu-sw") as sw, network_namespace("sa-pmtu-a") as a, network_namespace("sa-pmtu-b") as b:
        ip("-n", sw, "link", "add", "br0", "type", "bridge")
        for ns, port, addr in ((a, "pa", "10.99.0.1/24"), (b, "pb", "10.99.0.2/24")):
            ip("link", "add", "eth0", "netns", ns, "type", "veth", "peer", "name", port, "netns", sw)
            ip("-n", sw, "link", "set", port, "mtu", str(port_mtu), "master", "br0", "up")
            ip("-n", ns, "link", "set", "eth0", "mtu", str(host_mtu), "up")
            ip("-n", ns, "addr", "add", addr, "dev", "eth0")
        ip("-n", sw, "link", "set", "br0", "up")
        yield a


def run_prefix(ns: str) -> tuple[float | None, dict | None]:
    script = iperf.idle_rtt_script("10.99.0.2") + iperf.path_mtu_script("10.99.0.2") + "echo '{}'"
    out = subprocess.run(["ip", "netns", "exec", ns, "sh", "-c", script], capture_output=True, text=True, timeout=30).stdout
    idle, mtu, rest = iperf.split_prefix(out)
    assert rest.strip() == "{}", out
    return idle, mtu


@pytest.mark.netns
def test_a_jumbo_path_through_1500_ports_is_a_black_hole_and_through_9000_ports_carries():
    with two_hosts(9000, 1500) as a:
        idle, mtu = run_prefix(a)
        assert idle is not None and mtu == {"mtu": 9000, "interface": "eth0", "carried": False}
    with two_hosts(9000, 9000) as a:
        assert run_prefix(a)[1] == {"mtu": 9000, "interface": "eth0", "carried": True}
    with two_hosts(1500, 1500) as a:
        idle, mtu = run_prefix(a)
        assert idle is not None and mtu is None  # a standard frame: nothing to probe


def test_prefix_lines_are_read_in_any_order_and_bad_ones_left_alone():
    idle, mtu, rest = iperf.split_prefix("@@path_mtu 9000 ens1f0 lost\n@@idle_rtt_ms 0.120\n{\"end\": {}}")
    assert idle == 120.0 and mtu == {"mtu": 9000, "interface": "ens1f0", "carried": False} and rest == '{"end": {}}'
    assert iperf.split_prefix("@@path_mtu x eth0 maybe\n{}")[1] is None
    res = iperf.parse_client_json("@@idle_rtt_ms 2.150\n@@path_mtu 9000 eth0 lost\n" + '{"error": "unable to receive results"}')
    assert res.path_mtu == {"mtu": 9000, "interface": "eth0", "carried": False} and res.error
