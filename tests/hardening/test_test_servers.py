"""The servers a scan starts on hosts listen only on the address the test uses, and stop.

Run for real on this machine: the mesh's iperf3 server and the active efficiency test's data
server are started with their start scripts bound to 127.0.0.2 (a loopback address other than the
default), the listening socket is read from the kernel (psutil), then the stop scripts end them.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from advisor.efficiency import active
from advisor.mesh import iperf

ADDR = "127.0.0.2"


def _sh(script: str) -> subprocess.CompletedProcess:
    return subprocess.run(["sh", "-c", script], capture_output=True, text=True, timeout=60)


def _tree(pid: int) -> list[psutil.Process]:
    p = psutil.Process(pid)
    return [p, *p.children(recursive=True)]


def _listening(pid: int) -> set[tuple[str, int]]:
    """Listening TCP sockets of the process and its children (iperf3 runs under ``timeout``)."""
    return {(c.laddr.ip, c.laddr.port) for p in _tree(pid) for c in p.net_connections(kind="tcp")
            if c.status == psutil.CONN_LISTEN}


def _gone(pid: int, within: float = 10.0) -> bool:
    end = time.monotonic() + within
    while time.monotonic() < end:
        if not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
            return True
        time.sleep(0.1)
    return False


@pytest.mark.skipif(shutil.which("iperf3") is None, reason="needs iperf3")
def test_mesh_iperf3_server_binds_to_the_test_address_and_stops():
    port = 47311
    cp = _sh(iperf.server_start_script(port, 30, bind=ADDR))
    start = iperf.parse_server_start(cp.stdout)
    assert start.ready, cp.stdout + cp.stderr
    tree = [p.pid for p in _tree(start.pid)]
    try:
        assert _listening(start.pid) == {(ADDR, port)}
    finally:
        _sh(iperf.server_stop_script(start.pid, start.workdir or "/nonexistent"))
    assert all(_gone(p) for p in tree)


def test_efficiency_data_server_binds_to_the_source_address_and_stops():
    token = "sa-eff-test0bind"
    cp = _sh(active.server_start_script(token, 30, bind=ADDR, python="python3"))
    kv = dict(line.split(" ", 1) for line in cp.stdout.splitlines() if " " in line)
    assert cp.returncode == 0 and "pid" in kv, cp.stdout + cp.stderr
    pid = int(kv["pid"])
    tree = [p.pid for p in _tree(pid)]
    try:
        assert _listening(pid) == {(ADDR, int(kv["port"]))}
    finally:
        _sh(active.server_stop_script(pid, token, kv.get("dir", "")))
    assert all(_gone(p) for p in tree)


@pytest.mark.skipif(shutil.which("iperf3") is None or "rsa-public-key-path" not in subprocess.run(
    ["iperf3", "--help"], capture_output=True, text=True).stdout + subprocess.run(
    ["iperf3", "--help"], capture_output=True, text=True).stderr, reason="needs iperf3 with authentication")
def test_mesh_iperf3_server_admits_only_our_client(tmp_path):
    from advisor.mesh.iperf_auth import IperfAuth

    auth = IperfAuth.new()
    port = 47313
    cp = _sh(iperf.server_start_script(port, 30, bind=ADDR, auth=auth))
    start = iperf.parse_server_start(cp.stdout)
    assert start.ready, cp.stdout + cp.stderr
    tree = [p.pid for p in _tree(start.pid)]
    try:
        stranger = _sh(iperf.client_command(ADDR, port, 1, 0, 1))
        assert iperf.parse_client_json(stranger.stdout, stranger.returncode, stranger.stderr).error == \
            "test authorization failed"
        wrong = IperfAuth("storadvise", "not-the-password", auth.private_pem, auth.public_pem)
        bad = _sh(iperf.client_command(ADDR, port, 1, 0, 1, auth=wrong))
        assert iperf.parse_client_json(bad.stdout, bad.returncode, bad.stderr).error == "test authorization failed"
        ours = _sh(f"TMPDIR={tmp_path}\nexport TMPDIR\n" + iperf.client_command(ADDR, port, 1, 0, 1, auth=auth))
        res = iperf.parse_client_json(ours.stdout, ours.returncode, ours.stderr)
        assert res.ok, res.error
        assert not list(tmp_path.iterdir())  # the client's key dir is removed
    finally:
        _sh(iperf.server_stop_script(start.pid, start.workdir or "/nonexistent"))
    assert all(_gone(p) for p in tree)
    assert not Path(start.workdir).exists()
