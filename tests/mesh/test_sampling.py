"""The ends' sampling section: split from the client's output, parsed (pure), and run for real on loopback."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from advisor.mesh import iperf
from advisor.mesh.sampling import SECTION_MARK, parse_section, split_section

SECTION = f"""{SECTION_MARK}
nic eth0 1000 2000 61000 5000
cpu0 cpu  6034 0 4006 47796 502 0 764 84 0 0
cpu1 cpu  6434 0 4106 47846 502 0 864 84 0 0
sched 4242 timeout 1000 2000 3
sched 4243 iperf3 100000000 40000000 50
sched 4243 iperf3 300000000 90000000 120
noss
@@t
ESTAB 0 0 10.0.0.1:40000 10.0.0.2:5301
\t cubic wscale:7,7 mss:1448 cwnd:10 bytes_sent:200000 busy:10ms
"""


def test_split_and_parse_a_section():
    out, section = split_section('{"start": {}}\n' + SECTION)
    assert out == '{"start": {}}' and section.startswith("nic eth0")
    s = parse_section(section)
    assert s.interface == "eth0" and s.nic_bytes == 60000 + 3000
    # 400 + 100 + 100 jiffies busy of 650 (idle 50)
    assert s.cpu_busy_frac == pytest.approx(600 / 650)
    assert s.iperf3_run_s == 0.3 and s.iperf3_wait_s == 0.09  # the last line of the iperf3 pid; timeout left out
    assert s.ss_missing and s.ss_text.startswith("@@t\nESTAB")
    assert split_section("no section here") == ("no section here", None) and parse_section(None) is None


def test_loopback_interface_is_not_a_nic():
    s = parse_section("nic - \ncpu0 cpu 1 2 3 4 5\ncpu1 cpu 1 2 3 4 5\n")
    assert s.interface is None and s.nic_bytes is None and s.cpu_busy_frac is None  # no time passed


@pytest.mark.quiet  # its leftover check reads every process on the machine
@pytest.mark.skipif(shutil.which("iperf3") is None or shutil.which("ss") is None, reason="needs iperf3 and ss")
def test_real_client_and_server_sampling_on_loopback_leaves_nothing_running():
    port = 5891
    st = subprocess.run(["sh", "-c", iperf.server_start_script(port, 30, bind="127.0.0.1", sample=True)],
                        capture_output=True, text=True, timeout=30)
    start = iperf.parse_server_start(st.stdout)
    assert start.ready, st.stdout
    try:
        cl = subprocess.run(["sh", "-c", iperf.client_command("127.0.0.1", port, 1, 0, 1, bidir=True, idle_rtt=True,
                                                              sample=True)],
                            capture_output=True, text=True, timeout=60)
    finally:
        stop = subprocess.run(["sh", "-c", iperf.server_stop_script(start.pid, start.workdir)],
                              capture_output=True, text=True, timeout=30)
    res = iperf.parse_client_json(cl.stdout, cl.returncode, cl.stderr)
    assert res.ok and cl.returncode == 0, (res.error, cl.stderr)
    assert res.cpu_host_pct is not None and res.cpu_remote_pct is not None
    server = iperf.parse_server_stop(stop.stdout)
    for end in (res.client_sample, server):
        assert end is not None and end.interface is None  # lo: not a NIC
        assert end.ss_text.startswith("@@t") and end.iperf3_run_s and end.iperf3_wait_s is not None
        assert end.cpu_busy_frac is not None
    # nothing of the test outlives the scripts: no sampler loop, no iperf3 on the port
    left = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if ("/storadvise." in cmd or f"-p {port}" in cmd) and "pytest" not in cmd:
            left.append((pid, cmd[:120]))
    assert left == []
