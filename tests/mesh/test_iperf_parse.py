"""Parsing real ``iperf3 -J`` outputs (tests/fixtures/iperf3, captured with iperf 3.12)."""

from __future__ import annotations

import re

import json
from pathlib import Path

import pytest

from advisor.mesh import iperf

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "iperf3"


def load(name: str) -> str:
    return (FIX / name).read_text()


def test_normal_single_stream():
    r = iperf.parse_client_json(load("client-normal.json"), rc=0)
    assert r.ok and r.reverse is None
    doc = json.loads(load("client-normal.json"))
    f = r.forward
    assert f.received_bps == doc["end"]["sum_received"]["bits_per_second"]
    assert f.sent_bps == doc["end"]["sum_sent"]["bits_per_second"]
    assert f.retransmits == 15
    assert (f.rtt_us, f.min_rtt_us, f.max_rtt_us) == (45, 45, 45)
    assert f.congestion == "cubic"
    assert (r.snd_buf, r.rcv_buf, r.sock_bufsize) == (16384, 131072, 0)
    assert r.version == "iperf 3.12" and r.streams == 1 and r.mss == doc["start"]["tcp_mss_default"]


def test_four_streams_rtt_is_mean_of_stream_means():
    r = iperf.parse_client_json(load("client-P4.json"))
    assert r.ok and r.streams == 4
    assert r.forward.rtt_us == pytest.approx((28 + 25 + 28 + 26) / 4)
    assert r.forward.min_rtt_us == 25 and r.forward.max_rtt_us == 28
    assert r.forward.retransmits == 6
    assert r.forward.congestion == "bbr"


def test_bidir_has_both_directions():
    r = iperf.parse_client_json(load("client-bidir.json"))
    assert r.ok and r.reverse is not None
    assert r.forward.received_bps == pytest.approx(2772514835.9834)
    assert r.reverse.received_bps == pytest.approx(18388327298.289337)
    assert r.reverse.sent_bps == pytest.approx(18422430241.476234)
    assert r.forward.retransmits == 28 and r.reverse.retransmits == 7
    assert r.forward.rtt_us == 1036 and r.reverse.rtt_us == 9


@pytest.mark.parametrize("name,needle", [
    ("client-refused.json", "Connection refused"),
    ("client-busy.json", "server is busy"),
])
def test_error_key_fails_even_with_exit_zero(name, needle):
    r = iperf.parse_client_json(load(name), rc=0)
    assert not r.ok and needle in r.error
    assert r.forward is None  # never a 0 Mb/s result
    assert iperf.retryable(r.error)


def test_garbage_and_empty_are_failures():
    assert not iperf.parse_client_json("", rc=1, stderr="iperf3: command not found").ok
    assert "command not found" in iperf.parse_client_json("", rc=127, stderr="sh: iperf3: command not found").error
    assert not iperf.parse_client_json("Segmentation fault", rc=139).ok
    assert not iperf.parse_client_json('{"start": {}, "end": {}}').ok
    # noise before the JSON is tolerated
    assert iperf.parse_client_json("motd line\n" + load("client-normal.json")).ok


def test_version_parsing():
    assert iperf.parse_version("iperf 3.12 (cJSON 1.7.15)") == (3, 12, 0)
    assert iperf.parse_version("iperf 3.7.1") == (3, 7, 1)
    assert iperf.parse_version("iperf version 2.1.9") is None or iperf.parse_version("iperf version 2.1.9") < (3,)
    assert iperf.parse_version("sh: iperf3: not found") is None


def test_client_command():
    cmd = iperf.client_command("10.0.0.2", 5301, 5, 1, 4, "cubic", bidir=True, connect_timeout_ms=3000)
    assert cmd.split() == ["iperf3", "-c", "10.0.0.2", "-p", "5301", "-t", "5", "-O", "1", "-P", "4", "-J",
                           "-C", "cubic", "--bidir", "--connect-timeout", "3000"]
    assert "timeout -k 2 20" in iperf.client_command("h", 1, 2, 0.5, 1, hard_limit_s=19.2)


def test_server_start_markers():
    assert iperf.parse_server_start("STORADVISE-IPERF3-READY 1234 /tmp/x\n") == iperf.ServerStart(True, pid=1234, workdir="/tmp/x")
    assert iperf.parse_server_start("STORADVISE-IPERF3-INUSE\n").in_use
    assert iperf.parse_server_start("STORADVISE-IPERF3-MISSING\n").missing
    s = iperf.parse_server_start("STORADVISE-IPERF3-NOSTART iperf3: error - bad thing iperf3: exiting\n")
    assert not s.ready and "bad thing" in s.message


def test_idle_rtt_line_before_the_json():
    import subprocess

    from advisor.mesh import iperf as ip

    out = subprocess.run(["sh", "-c", ip.idle_rtt_script("127.0.0.1")], capture_output=True, text=True).stdout
    idle, rest = ip.split_idle_rtt(out + "{}")
    assert rest == "{}" and idle is not None and 0 < idle < 5_000  # loopback: well under 5 ms
    # busybox's summary line is read as well; no line (no ping, ICMP filtered) leaves the text alone
    line = "round-trip min/avg/max = 0.045/0.052/0.061 ms"
    sed = re.search(r"sed -n ('[^']*')", ip.idle_rtt_script("x")).group(1)
    out = subprocess.run(["sh", "-c", f"echo '{line}' | sed -n {sed}"], capture_output=True, text=True).stdout
    assert ip.split_idle_rtt(out)[0] == 45.0
    assert ip.split_idle_rtt('{"start": {}}') == (None, '{"start": {}}')
    res = ip.parse_client_json("@@idle_rtt_ms 2.150\n" + '{"error": "unable to connect to server"}')
    assert res.idle_rtt_us == 2150.0 and res.error == "unable to connect to server"
