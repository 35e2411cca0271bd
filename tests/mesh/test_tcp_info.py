"""The ss -ti parser on real outputs from other people's machines (tests/fixtures/ss/SOURCES.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.mesh.tcp_info import SAMPLE_MARK, summarise_samples
from probes.ss_sockets import SsFormatError, parse_rate, parse_ss

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "ss"


def load(name: str) -> str:
    return (FIX / name).read_text()


def test_witestlab_reno_sender_and_control_flow():
    socks = parse_ss(load("witestlab-reno-P1.txt"))
    assert [(s.local, s.peer) for s in socks] == [("10.10.1.100:49112", "10.10.2.100:5201"),
                                                  ("10.10.1.100:49110", "10.10.2.100:5201")]
    data, ctl = socks
    assert data.congestion == "reno" and ctl.congestion == "cubic"
    assert data.sack and data.timestamps and data.wscale == [7, 7] and data.mss == 1448
    assert data.cwnd == 66 and data.rtt_ms == 833.978 and data.min_rtt_ms == 0.483
    assert data.busy_ms == 4972 and data.rwnd_limited_ms == 96 and data.sndbuf_limited_ms == 0
    assert data.retrans_total == 76 and data.delivery_rate_bps == pytest.approx(942.8e3)
    assert data.bytes_sent is None and data.moved_bytes == 589374  # no bytes_sent on that kernel: bytes_acked
    assert ctl.moved_bytes == 144


def test_tcpip_essentials_extras_on_the_socket_line():
    socks = parse_ss(load("tcpip-essentials-eipn.txt"))
    assert len(socks) == 2
    s = socks[0]
    assert s.local == "10.10.1.2:55058" and s.peer == "10.10.2.2:5201"
    assert s.busy_ms == 1580 and s.rwnd_limited_ms == 676 and s.cwnd == 142


def test_plantegg_sndbuf_limited_without_bytes_sent():
    socks = parse_ss(load("plantegg-mysql-sndbuf.txt"))
    assert len(socks) == 3
    s = socks[1]
    assert s.local == "172.16.210.17:3306" and s.congestion == "cubic" and not s.sack and not s.timestamps
    assert s.busy_ms == 1176476 and s.sndbuf_limited_ms == 159867 and s.rwnd_limited_ms == 1717
    assert s.retrans_total == 214 and s.wscale == [7, 7]


def test_bbr_ecn_block_and_gbps():
    (s,) = parse_ss(load("bbr-ecn-10g.txt"))
    assert s.congestion == "bbr" and s.sack and s.timestamps and s.mss == 4148 and s.cwnd == 1636
    assert s.delivery_rate_bps == pytest.approx(2.48e9) and s.bytes_sent == 3570314353
    assert (s.busy_ms, s.rwnd_limited_ms, s.sndbuf_limited_ms) == (13228, 1324, 892)


def test_lab_numeric_rates_and_summary_skips_the_control_connection():
    text = load("lab-loopback-bbr-numeric.txt")
    socks = parse_ss(text)
    assert socks[1].delivery_rate_bps == 1141315904.0 and socks[1].retrans_total == 52
    ti = summarise_samples(f"{SAMPLE_MARK}\n{text}")
    assert ti["connections"] == 1 and ti["samples"] == 1 and ti["source"] == "ss"
    assert ti["busy_s"] == 1.176 and ti["rwnd_limited_s"] == 0.036
    assert ti["rwnd_limited_frac"] == pytest.approx(0.036 / 1.176, abs=1e-4) and ti["sndbuf_limited_frac"] == 0.0
    assert ti["cwnd"] == 40 and ti["retrans"] == 52 and ti["mss"] == 65483 and ti["wscale"] == [10, 10]
    assert ti["sack"] is False and ti["timestamps"] is False and ti["rtt_us"] == 1000.0 and ti["min_rtt_us"] == 3.0


def test_summary_keeps_the_last_sample_and_the_largest_cwnd():
    first = load("witestlab-reno-P1.txt").replace("cwnd:66", "cwnd:90").replace("busy:4972ms", "busy:1000ms")
    ti = summarise_samples(f"{SAMPLE_MARK}\n{first}{SAMPLE_MARK}\n{load('witestlab-reno-P1.txt')}")
    assert ti["samples"] == 2 and ti["connections"] == 1
    assert ti["cwnd"] == 90 and ti["cwnd_last"] == 66  # largest seen; the last one
    assert ti["busy_s"] == 4.972 and ti["retrans"] == 76  # cumulative: the last sample's
    assert ti["rwnd_limited_frac"] == pytest.approx(96 / 4972, abs=1e-4)


def test_no_socket_is_none_and_rates():
    assert summarise_samples(f"{SAMPLE_MARK}\n{SAMPLE_MARK}\n") is None
    assert summarise_samples("") is None
    assert parse_rate("1.2Mbps") == 1.2e6 and parse_rate("916.7Kbps") == 916.7e3 and parse_rate("3bps") == 3.0


@pytest.mark.parametrize("text, what", [
    ("ss: command not found\n", "not an ss socket line"),
    ("\t cubic wscale:7,7 cwnd:10\n", "TCP info before any socket line"),
    ("ESTAB 0 0 10.0.0.1:5 10.0.0.2:6\n\t cubic cwnd:ten\n", "cwnd:'ten' is not a whole number"),
    ("ESTAB 0 0 10.0.0.1:5 10.0.0.2:6\n\t cubic rwnd_limited:12(3%)\n", "rwnd_limited:'12(3%)' is not 'Nms(P%)'"),
    ("ESTAB 0 0 10.0.0.1:5 10.0.0.2:6\n\t cubic delivery_rate fast\n", "'fast' is not a rate"),
    ("ESTAB 0 0 10.0.0.1:5 10.0.0.2:6\n\t cubic wscale:7\n", "wscale:'7' is not SND,RCV"),
])
def test_malformed_input_is_refused_with_the_line(text, what):
    with pytest.raises(SsFormatError) as e:
        parse_ss(text, "sample.txt")
    assert what in str(e.value) and "sample.txt line" in str(e.value)


def test_text_before_the_first_sample_mark_is_refused():
    with pytest.raises(SsFormatError, match="before the first @@t"):
        summarise_samples("garbage\n@@t\n")
