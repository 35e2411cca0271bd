"""path_record's nic_other_bytes: what each end's NIC carried beyond the test. A policer on the
receiver drops packets after its NIC counted them: those (and the sender's retransmissions of them)
are the test's own traffic, never "other traffic" (a path through a packet-rate limit was read as
contended, so inconclusive, and the diagnosis never saw the policer)."""

from advisor.mesh.iperf import Direction, IperfResult
from advisor.mesh.limits import classify_path
from advisor.mesh.results import path_record
from advisor.mesh.sampling import EndSample

MB = 1_000_000


def ss(bytes_sent: int, bytes_received: int) -> str:
    return ("@@t\nESTAB 0 0 10.0.0.1:40000 10.0.0.2:5301\n"
            f"\t cubic wscale:7,7 mss:1448 cwnd:10 bytes_sent:{bytes_sent} bytes_received:{bytes_received} busy:10ms\n")


def record(sent: int, kept: int, rx_at_receiver: int, other_at_receiver: int = 0) -> dict:
    sender = EndSample(tx_before=0, rx_before=0, tx_after=int(sent * 1.03), rx_after=int(sent * 0.02),
                       ss_text=ss(sent, 0))
    receiver = EndSample(tx_before=0, rx_before=0, tx_after=int(kept * 0.02),
                         rx_after=int(rx_at_receiver * 1.03) + other_at_receiver, ss_text=ss(0, kept))
    d = Direction(sent_bps=kept * 8 / 5, received_bps=kept * 8 / 5, sent_bytes=sent, retransmits=sent // 1448 // 3)
    return path_record("wn01", "st01", expected_bps=1_000_000_000, expected_source="link", round_no=1, mode="alone",
                       attempts=1, duration_s=5.0, result=IperfResult(forward=d, mss=1448), direction=d,
                       sender_sample=sender, receiver_sample=receiver, test_bytes=kept)


def test_packets_a_policer_dropped_at_the_receiver_are_the_tests_own():
    # the sender put 8 MB on the wire (a third of it retransmissions); the receiver kept 5 MB and its
    # NIC counted all 8 MB before its firewall dropped 3 MB
    p = record(sent=8 * MB, kept=5 * MB, rx_at_receiver=8 * MB)
    assert p["nic_other_bytes"]["dst"] < 0.1 * p["test_bytes"], p["nic_other_bytes"]
    assert classify_path({**p, "ratio": 0.01, "ratio_basis": "expected"})[0] != "contended"


def test_other_traffic_on_the_receivers_nic_still_counts():
    p = record(sent=8 * MB, kept=5 * MB, rx_at_receiver=8 * MB, other_at_receiver=40 * MB)
    assert p["nic_other_bytes"]["dst"] >= 39 * MB, p["nic_other_bytes"]
    assert classify_path({**p, "ratio": 0.01, "ratio_basis": "expected"})[0] == "contended"
