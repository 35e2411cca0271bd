"""The mesh result dict (``FactSet.mesh``) and the judgement of a path against its expected rate.

Shape (plain JSON data)::

    {
      "rounds": 6,                       # rounds run
      "schedule": [[["gpfs01","wn01"], ["wn01","gpfs01"], ...], ...],
      "paths": [ {path}, ... ],          # one per requested directed path
      "wall_seconds": 41.2,
      "parameters": {"duration": 5, "omit": 1, "streams": 1, "congestion": null, "bidir": true},
      "hosts": {"gpfs01": {"iperf3": "3.12", "error": null}, ...},
    }

A path::

    {"src", "dst", "status": "ok"|"failed", "error": str|None,
     "measured_bps" (receiver side sum_received), "sent_bps", "expected_bps", "expected_source",
     "ratio" (measured / reference), "ratio_basis": "expected"|"median"|None,
     "retransmits", "sent_bytes", "rtt_us" (mean of the streams' mean_rtt), "min_rtt_us",
     "max_rtt_us", "idle_rtt_us" (min of pings just before the test; None: not measured), "snd_buf", "rcv_buf", "max_snd_cwnd", "max_snd_wnd", "mss", "congestion",
     "duration_s", "round", "mode": "bidir"|"single", "attempts", "streams",
     "retest": None | {"concurrent_bps", "concurrent_ratio", "round", "mode", "error", "limited_by"},
     "tcp_info": None | {tcp_info},      # the SENDER's kernel TCP_INFO of the test connection
     "cpu_sender_pct", "cpu_receiver_pct",   # iperf3 end.cpu_utilization_percent of each end (None: not reported)
     "host_cpu_busy": None | {"src": frac|None, "dst": frac|None},  # the machine's busy share, all cores, during the test
     "cpu_wait_frac": None | {"src": frac|None, "dst": frac|None},  # iperf3's run-queue wait / the test's time
     "cpu_pressure_frac": None | {"src": frac|None, "dst": frac|None},  # the host's PSI cpu "some" / the test's time
     "nic_other_bytes": None | {"src": int|None, "dst": int|None},  # bytes each end's NIC moved beyond the test's own
     "nic_bps": None | {"src": bps|None, "dst": bps|None},  # the sender's NIC transmitted, the receiver's received,
                                                             # bits/s over the test (all traffic: is a link full?)
     "nic_errors": None | {"src": {"interface", "rises": {counter: n}} | None, "dst": ...},  # the error and drop
                                                             # counters of each end's NIC that rose during the test
     "path_mtu": None | {"mtu", "interface", "carried": bool|None},  # one ping of the sender's MTU, don't-fragment,
                                                             # just before the test (small pings arrived): carried?
     "nic_speed_bps": None | {"src": bps|None, "dst": bps|None},  # each end's physical NIC speed (network.nic)
     "test_bytes": int|None,             # payload the whole test moved, both directions (sender's ss, else iperf3)
     "limited_by": "link"|"receiver_window"|"sender_buffer"|"loss"|"policer"|"cpu"|"contended"|"unknown"|None,
     "limited_evidence": str|None}        # one line: why (advisor.mesh.limits)

``tcp_info`` (advisor.mesh.tcp_info, read with ``ss -tin`` on the sender every 0.25 s during the
test; the counters are cumulative, so the last sample before the connection closed is kept)::

    {"busy_s", "rwnd_limited_s", "sndbuf_limited_s",       # seconds (tcpi_busy_time, _rwnd_limited, _sndbuf_limited)
     "rwnd_limited_frac", "sndbuf_limited_frac",           # fractions 0-1 of busy time (None: busy 0)
     "cwnd" (segments, the largest sampled), "cwnd_last", "rtt_us" (smoothed), "min_rtt_us",
     "retrans" (retransmitted segments, tcpi_total_retrans), "delivery_rate_bps", "delivery_rate_cv"
     (steadiness of the sampled delivery rate), "sack", "timestamps" (negotiated, bool),
     "wscale" ([snd, rcv] or None: not negotiated), "mss", "congestion", "connections", "samples",
     "source": "ss"}

``nic_other_bytes``: the bytes (both ways) the interface carrying the test moved between just
before and just after the test, minus the test's own: the payload the test put on the wire (the
larger of the two ends' socket counts, ss bytes_sent + bytes_received, the omitted seconds
included: the sender's holds its retransmissions; else iperf3's ``test_bytes``) plus a header
each way per segment; None for an end whose counters could not be read (a
loopback interface, no /sys).

``retest`` (mesh ``retest_below``): the path was below that fraction of its expected rate in its
round and was measured again alone after the rounds; the record then holds the alone measurement
and ``retest`` what the round measured (or, when the alone test failed, the round's measurement
is kept and ``retest.error`` says why).

A failed path has ``measured_bps`` None, never 0.
"""

from __future__ import annotations

import statistics
from typing import Any

from advisor.mesh.iperf import Direction, IperfResult
from advisor.mesh.sampling import EndSample
from advisor.mesh.tcp_info import SsFormatError, connection_bytes, summarise_samples
from probes.nic_counters import counter_rises

PATH_KEYS = (
    "src", "dst", "status", "error", "measured_bps", "sent_bps", "expected_bps", "expected_source",
    "ratio", "ratio_basis", "retransmits", "sent_bytes", "rtt_us", "min_rtt_us", "max_rtt_us", "idle_rtt_us",
    "snd_buf", "rcv_buf", "max_snd_cwnd", "max_snd_wnd", "mss", "congestion", "duration_s",
    "round", "mode", "attempts", "streams", "retest",
    "tcp_info", "cpu_sender_pct", "cpu_receiver_pct", "host_cpu_busy", "cpu_wait_frac", "cpu_pressure_frac",
    "nic_other_bytes", "nic_bps", "limited_by", "limited_evidence", "test_bytes", "nic_errors", "path_mtu",
    "nic_speed_bps",
)

#: TCP/IP header bytes per segment (IPv4 20 + TCP 20 + timestamps 12 + Ethernet 14)
HEADER_BYTES = 66

#: grid colour thresholds on the ratio to expected
GREEN_RATIO = 0.9
YELLOW_RATIO = 0.5


def path_record(
    src: str,
    dst: str,
    *,
    expected_bps: int | None,
    expected_source: str | None,
    round_no: int,
    mode: str,
    attempts: int,
    duration_s: float | None,
    result: IperfResult | None = None,
    direction: Direction | None = None,
    error: str | None = None,
    sender_sample: EndSample | None = None,
    receiver_sample: EndSample | None = None,
    cpu_sender_pct: float | None = None,
    cpu_receiver_pct: float | None = None,
    test_bytes: int | None = None,
) -> dict[str, Any]:
    """One path's record. ``sender_sample`` / ``receiver_sample``: what each end sampled during the
    test (the sender's ss samples give ``tcp_info``); ``test_bytes``: the payload the whole test
    moved (both directions of a --bidir test), to tell the NICs' other traffic apart."""
    rec: dict[str, Any] = {k: None for k in PATH_KEYS}
    rec.update(
        src=src, dst=dst, expected_bps=expected_bps, expected_source=expected_source,
        round=round_no, mode=mode, attempts=attempts,
        duration_s=round(duration_s, 3) if duration_s is not None else None,
    )
    if error is not None or direction is None or result is None:
        rec.update(status="failed", error=error or (result.error if result else "no result"),
                   path_mtu=result.path_mtu if result else None, idle_rtt_us=result.idle_rtt_us if result else None)
        return rec
    rec.update(
        status="ok",
        measured_bps=direction.received_bps,
        sent_bps=direction.sent_bps,
        sent_bytes=direction.sent_bytes,
        retransmits=direction.retransmits,
        rtt_us=direction.rtt_us,
        min_rtt_us=direction.min_rtt_us,
        max_rtt_us=direction.max_rtt_us,
        idle_rtt_us=result.idle_rtt_us,
        path_mtu=result.path_mtu,
        max_snd_cwnd=direction.max_snd_cwnd,
        max_snd_wnd=direction.max_snd_wnd,
        congestion=direction.congestion,
        snd_buf=result.snd_buf,
        rcv_buf=result.rcv_buf,
        mss=result.mss,
        streams=result.streams,
        cpu_sender_pct=cpu_sender_pct,
        cpu_receiver_pct=cpu_receiver_pct,
    )
    if not direction.received_bps:
        # the connection opened and then carried nothing (a path-MTU black hole stalls it so): a failed test,
        # never a measured 0 b/s
        rec.update(status="failed", measured_bps=None,
                   error="the receiver got no data: the test's connection opened, then nothing arrived")
    rec["tcp_info"] = _tcp_info(sender_sample)
    if sender_sample is not None or receiver_sample is not None:
        rec["host_cpu_busy"] = {"src": sender_sample.cpu_busy_frac if sender_sample else None,
                                "dst": receiver_sample.cpu_busy_frac if receiver_sample else None}
        rec["cpu_wait_frac"] = {"src": _wait_frac(sender_sample, duration_s),
                                "dst": _wait_frac(receiver_sample, duration_s)}
        rec["cpu_pressure_frac"] = {"src": _pressure_frac(sender_sample, duration_s),
                                    "dst": _pressure_frac(receiver_sample, duration_s)}
        mss = result.mss or (rec["tcp_info"] or {}).get("mss") or 1448
        own = {"src": _own_bytes(sender_sample, test_bytes), "dst": _own_bytes(receiver_sample, test_bytes)}
        # both NICs carried what the test put on the wire: the sender's count (bytes_sent holds its
        # retransmissions), not only the receiver's (bytes_received: what it kept). A policer or a
        # firewall on the receiver drops packets its NIC has counted already: they are the test's
        # own traffic, never other traffic (a path through a policer read as "contended" before)
        wire = max((n for n in own.values() if n), default=None)
        rec["nic_other_bytes"] = {end: other_bytes(s, wire, mss)
                                  for end, s in (("src", sender_sample), ("dst", receiver_sample))}
        rec["test_bytes"] = own["src"] or own["dst"]
        rec["nic_bps"] = {"src": _nic_rate(sender_sample, "tx", duration_s),
                          "dst": _nic_rate(receiver_sample, "rx", duration_s)}
        rec["nic_errors"] = {"src": _nic_errors(sender_sample), "dst": _nic_errors(receiver_sample)}
    else:
        rec["test_bytes"] = test_bytes
    return rec


def _wait_frac(sample: EndSample | None, duration_s: float | None) -> float | None:
    """The share of the test iperf3 spent ready to run with no CPU to run on."""
    if sample is None or sample.iperf3_wait_s is None or not duration_s:
        return None
    return round(min(1.0, sample.iperf3_wait_s / duration_s), 4)


def _pressure_frac(sample: EndSample | None, duration_s: float | None) -> float | None:
    """The share of the test during which some task of the end's host waited for a CPU (PSI)."""
    if sample is None or sample.cpu_pressure_s is None or not duration_s:
        return None
    return round(min(1.0, sample.cpu_pressure_s / duration_s), 4)


def _nic_errors(sample: EndSample | None) -> dict[str, Any] | None:
    """The end's NIC and the error and drop counters (probes/nic_counters.py) that rose during the test;
    None when they were not read (no interface, an older script)."""
    if sample is None or not sample.interface or not sample.counters_before or not sample.counters_after:
        return None
    rises = counter_rises(sample.counters_before, sample.counters_after, None)
    return {"interface": sample.interface, "rises": {k: r.delta for k, r in sorted(rises.items()) if r.delta > 0}}


def _nic_rate(sample: EndSample | None, way: str, duration_s: float | None) -> float | None:
    """What the end's NIC moved one way (``tx``/``rx``) over the test, in bits/s: every byte, the
    test's and other traffic's alike (a link is full whoever filled it)."""
    if sample is None or not duration_s:
        return None
    before, after = getattr(sample, f"{way}_before"), getattr(sample, f"{way}_after")
    if before is None or after is None:
        return None
    return round(max(0, after - before) * 8 / duration_s)


def _tcp_info(sample: EndSample | None) -> dict[str, Any] | None:
    if sample is None or not sample.ss_text:
        return None
    try:
        return summarise_samples(sample.ss_text, "the sender's ss samples")
    except SsFormatError:
        return None  # not ss output (an ss we do not know): the path is judged without it


def _own_bytes(sample: EndSample | None, test_bytes: int | None) -> int | None:
    """The test's payload as this end's sockets counted it (else iperf3's figure)."""
    if sample is not None and sample.ss_text:
        try:
            n = connection_bytes(sample.ss_text, "ss samples")
        except SsFormatError:
            n = None
        if n:
            return n
    return test_bytes


def other_bytes(sample: EndSample | None, test_bytes: int | None, mss: int) -> int | None:
    """What the end's NIC moved beyond the test: its byte counters' delta minus the test's payload
    with its headers (one header each way per segment: an ACK for every segment at worst)."""
    if sample is None or sample.nic_bytes is None or test_bytes is None:
        return None
    wire = test_bytes * (1.0 + 2.0 * HEADER_BYTES / max(536, int(mss)))
    return max(0, int(sample.nic_bytes - wire))


def judge_paths(paths: list[dict[str, Any]]) -> None:
    """Fill ``ratio`` / ``ratio_basis``: against the expected rate, else against the median of
    the measured paths that have no expected rate (relative judgement)."""
    relative = [p["measured_bps"] for p in paths if p.get("status") == "ok" and not p.get("expected_bps")
                and p.get("measured_bps")]
    median = statistics.median(relative) if relative else None
    for p in paths:
        if p.get("status") != "ok" or p.get("measured_bps") is None:
            p["ratio"], p["ratio_basis"] = None, None
        elif p.get("expected_bps"):
            p["ratio"], p["ratio_basis"] = p["measured_bps"] / p["expected_bps"], "expected"
        elif median:
            p["ratio"], p["ratio_basis"] = p["measured_bps"] / median, "median"
        else:
            p["ratio"], p["ratio_basis"] = None, None


def path_ratio(path: dict[str, Any]) -> float | None:
    """measured / expected (or / the median when no expected rate is known)."""
    if path.get("status") != "ok" or not path.get("measured_bps"):
        return None
    if path.get("ratio") is not None:
        return float(path["ratio"])
    if path.get("expected_bps"):
        return path["measured_bps"] / path["expected_bps"]
    return None


def failed_paths(mesh: dict[str, Any] | None) -> list[dict[str, Any]]:
    return [p for p in (mesh or {}).get("paths", []) if p.get("status") != "ok"]


def summary(mesh: dict[str, Any]) -> dict[str, int]:
    paths = mesh.get("paths", [])
    out = {"paths": len(paths), "ok": 0, "failed": 0, "green": 0, "yellow": 0, "red": 0, "unjudged": 0}
    for p in paths:
        if p.get("status") != "ok":
            out["failed"] += 1
            continue
        out["ok"] += 1
        r = path_ratio(p)
        if r is None:
            out["unjudged"] += 1
        elif r >= GREEN_RATIO:
            out["green"] += 1
        elif r >= YELLOW_RATIO:
            out["yellow"] += 1
        else:
            out["red"] += 1
    return out
