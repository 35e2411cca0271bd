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
     "retest": None | {"concurrent_bps", "concurrent_ratio", "round", "mode", "error"}}

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

PATH_KEYS = (
    "src", "dst", "status", "error", "measured_bps", "sent_bps", "expected_bps", "expected_source",
    "ratio", "ratio_basis", "retransmits", "sent_bytes", "rtt_us", "min_rtt_us", "max_rtt_us", "idle_rtt_us",
    "snd_buf", "rcv_buf", "max_snd_cwnd", "max_snd_wnd", "mss", "congestion", "duration_s",
    "round", "mode", "attempts", "streams", "retest",
)

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
) -> dict[str, Any]:
    rec: dict[str, Any] = {k: None for k in PATH_KEYS}
    rec.update(
        src=src, dst=dst, expected_bps=expected_bps, expected_source=expected_source,
        round=round_no, mode=mode, attempts=attempts,
        duration_s=round(duration_s, 3) if duration_s is not None else None,
    )
    if error is not None or direction is None or result is None:
        rec.update(status="failed", error=error or (result.error if result else "no result"))
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
        max_snd_cwnd=direction.max_snd_cwnd,
        max_snd_wnd=direction.max_snd_wnd,
        congestion=direction.congestion,
        snd_buf=result.snd_buf,
        rcv_buf=result.rcv_buf,
        mss=result.mss,
        streams=result.streams,
    )
    return rec


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
