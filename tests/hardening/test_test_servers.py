"""The servers a scan starts on hosts listen only on the address the test uses, and stop.

Run for real on this machine: the mesh's iperf3 server and the active efficiency test's data
server are started with their start scripts bound to 127.0.0.2 (a loopback address other than the
default), the listening socket is read from the kernel (psutil), then the stop scripts end them.
"""

from __future__ import annotations

import re
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


def _stranger_bytes(port: int) -> int:
    """Bytes a client that does not know the run's secret gets for a 4 KiB request (the data
    server's protocol: an 8-byte length, then the data)."""
    import socket
    import struct

    got = 0
    with socket.create_connection((ADDR, port), timeout=3) as s:
        s.sendall(struct.pack("!Q", 4096))
        s.settimeout(3)
        try:
            while got < 4096:
                b = s.recv(4096 - got)
                if not b:
                    break
                got += len(b)
        except OSError:
            pass
    return got


def test_efficiency_data_server_answers_only_the_runs_secret():
    """A stranger on the network gets no byte from the data server (started as a scan starts it);
    the job given the run's secret reads its data."""
    token = "sa-eff-test0auth"
    cp = _sh(active.server_start_script(token, 30, bind=ADDR, python="python3"))
    kv = dict(line.split(" ", 1) for line in cp.stdout.splitlines() if " " in line)
    assert cp.returncode == 0 and "pid" in kv, cp.stdout + cp.stderr
    pid = int(kv["pid"])
    try:
        assert _stranger_bytes(int(kv["port"])) == 0
    finally:
        _sh(active.server_stop_script(pid, token, kv.get("dir", "")))
    assert _gone(pid)
    secret = active.new_auth_secret()
    cp = _sh(active.server_start_script(token, 30, bind=ADDR, python="python3", auth=secret))
    kv = dict(line.split(" ", 1) for line in cp.stdout.splitlines() if " " in line)
    pid = int(kv["pid"])
    try:
        assert oct(Path(kv["dir"], "auth").stat().st_mode & 0o777) == "0o600"
        assert secret not in Path(f"/proc/{pid}/cmdline").read_text()
        assert _stranger_bytes(int(kv["port"])) == 0
        args = ["job", "--source", f"tcp:{ADDR}:{kv['port']}", "--mb", "2", "--cpu-per-mb", "0.001",
                "--calibrate-seconds", "0.05"]
        wrong = active.parse_job_output(_sh(active.job_script(args, auth=active.new_auth_secret())).stdout)
        # the server closes the connection unanswered: the job fails (closed, broken pipe or reset)
        assert not wrong["ok"] and re.search(r"closed the connection|Broken pipe|reset", wrong["error"]), wrong
        ours = active.parse_job_output(_sh(active.job_script(args, auth=secret)).stdout)
        assert ours["ok"] and ours["clients"][0]["bytes"] == 2 << 20, ours
    finally:
        _sh(active.server_stop_script(pid, token, kv.get("dir", "")))
    assert _gone(pid) and not Path(kv["dir"]).exists()


#: the interrupted run's source address: a loopback address of its own (data servers of other runs
#: on this machine are told apart by it)
INT_ADDR = "127.0.0.23"


def _eff_servers() -> list[psutil.Process]:
    out = []
    for p in psutil.process_iter(["cmdline"]):
        cmd = " ".join(p.info.get("cmdline") or [])
        if "/storadvise." in cmd and "/job.py serve " in cmd and f"--bind {INT_ADDR}" in cmd:
            out.append(p)
    return out


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_efficiency_data_server_stopped_when_the_controller_is_interrupted(tmp_path, sig):
    """`storadvise efficiency test` interrupted (Ctrl-C, or SIGTERM from a batch system or systemd)
    while its data server runs: the server is stopped and its directory removed before the program
    exits, not left listening for its 1,800 s lifetime."""
    import os
    import signal
    import sys

    import yaml

    from tests.support.sshd import running_sshd, sshd_available

    if not sshd_available():
        pytest.skip("needs /usr/sbin/sshd")
    with running_sshd() as s:
        hosts = [{"name": n, "address": s.address, "port": s.port, "user": s.user, "key": str(s.client_key_path),
                  "known_hosts": str(s.known_hosts_path), "roles": [r]} for n, r in (("st", "storage"), ("wn", "worker"))]
        site = tmp_path / "site.yml"
        # a job long enough to be interrupted: 512 MiB at 0.05 s of CPU per MiB
        site.write_text(yaml.safe_dump({"name": "effint", "hosts": hosts, "extensions": {"efficiency": {
            "mb": 512, "address": INT_ADDR, "calibrate_seconds": 0.05, "cpu_factor": 40}}}))
        others = {p.pid for p in _eff_servers()}
        proc = subprocess.Popen([sys.executable, "-m", "advisor.cli.root", "efficiency", "test", "--site", str(site),
                                 "--source", "st"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            end = time.monotonic() + 60
            servers: list[psutil.Process] = []
            while not servers and time.monotonic() < end and proc.poll() is None:
                servers = [p for p in _eff_servers() if p.pid not in others]
                time.sleep(0.2)
            assert servers, proc.communicate(timeout=30)
            time.sleep(1.0)  # the job is reading
            proc.send_signal(getattr(signal, sig))
            _out, errs = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait(10)
        dirs = {Path(a).parent for p in servers for a in p.info["cmdline"] if "/storadvise." in a and a.endswith("/job.py")}
        try:
            left = [p.pid for p in servers if _gone(p.pid, within=5.0) is False]
            assert not left, f"data server still running after {sig}: {left}; {errs[-500:]}"
            assert "Traceback" not in errs
            assert proc.returncode in (130, 143), (proc.returncode, errs[-500:])
            assert dirs and not [d for d in dirs if d.exists()], dirs
        finally:  # a server the program left: stopped by its pid, its directory removed
            for p in servers:
                try:
                    p.kill()
                except psutil.NoSuchProcess:
                    pass
            for d in dirs:
                if d.name.startswith("storadvise."):
                    shutil.rmtree(d, ignore_errors=True)
