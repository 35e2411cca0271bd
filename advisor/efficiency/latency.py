"""Latency what-if: how much CPU efficiency a job loses reading from a source RTT ms away.

Model (documented in docs/efficiency.md). A job that makes ``R`` synchronous remote reads per
second of wall time stalls ``RTT + t0`` on each (``t0``: the per-read cost of remote access
beyond the round trip: server and WAN processing, redirection). Its wall time grows by the
factor ``1 + D`` with ``D = R x (RTT + t0)``, so the relative efficiency loss is
``D / (1 + D)``.

Calibration on PIC/CIEMAT's MiniAOD job (Perez Dengra, Flix Molina, Sikora, 'XCache for CMS
in PIC Tier-1 and CIEMAT Tier-2' (CMS Collaboration)): -2% at ~9 ms and -15% at ~150 ms.
Two anchors fix the two unknowns of the reference job: ``D(9 ms) = 0.02/0.98`` and
``D(150 ms) = 0.15/0.85`` give ``R_ref = 1.107`` reads/s and ``t0 = 9.44 ms``. Another job is
placed relative to it by its own ``R``: from an FJR (remote reads of XrdSiteStatistics, or of
WMCore's read layer, per second of TotalJobTime), from ``--ops-per-second``, or from MB read
per CPU-second divided by the MB per read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from advisor.model.findings import Finding, FindingStatus, Remediation, Severity

ANCHORS = ((9.0, 0.02), (150.0, 0.15))  # (RTT ms, relative efficiency loss), PIC/CIEMAT
PIC_CIEMAT_REFERENCE = ("Perez Dengra, Flix Molina, Sikora, 'XCache for CMS in PIC Tier-1 and CIEMAT Tier-2' (CMS"
                        " Collaboration): CPU efficiency -2% at ~9 ms (regional cache), -15% at ~150 ms (FNAL)")


def _calibrate() -> tuple[float, float]:
    (r1, l1), (r2, l2) = ANCHORS
    d1, d2 = l1 / (1 - l1), l2 / (1 - l2)
    rate = (d2 - d1) / ((r2 - r1) / 1000.0)
    t0 = d1 / rate - r1 / 1000.0
    return rate, t0


REF_OPS_PER_SECOND, T0_SECONDS = _calibrate()
#: MB per synchronous read in the WMCore sample FJR (remote read+readv MB / operations)
DEFAULT_MB_PER_READ = 0.3369


@dataclass
class IOProfile:
    ops_per_second: float
    origin: str
    detail: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"ops_per_second": round(self.ops_per_second, 6), "origin": self.origin, **self.detail}


def reference_profile() -> IOProfile:
    return IOProfile(REF_OPS_PER_SECOND, "reference", {"note": "PIC/CIEMAT MiniAOD job, calibrated on the two anchors"})


def profile_from_fjr(report: Any, source: str) -> IOProfile:
    wall = report.wall_seconds
    if not wall or wall <= 0:
        raise ValueError("the report has no TotalJobTime")
    prof = report.profile
    if prof.sites:
        ops, where = prof.remote_read_ops, "XrdSiteStatistics read+readv operations"
    elif prof.read_method:
        ops, where = prof.read_ops, f"Timing-{prof.read_method}-read(v) operations"
    else:
        raise ValueError("the report has no storage statistics with read operations")
    return IOProfile(ops / wall, "fjr", {"file": source, "read_ops": ops, "wall_seconds": wall, "ops_from": where,
                                         "read_total_mb": prof.read_total_mb})


def profile_from_mb(mb_per_cpu_second: float, mb_per_read: float, cpu_per_wall: float) -> IOProfile:
    ops = mb_per_cpu_second * cpu_per_wall / mb_per_read
    return IOProfile(ops, "mb_per_cpu_second", {"mb_per_cpu_second": mb_per_cpu_second,
                                                "mb_per_read": mb_per_read, "cpu_per_wall": cpu_per_wall})


def loss(rtt_ms: float, ops_per_second: float = REF_OPS_PER_SECOND) -> float:
    """Relative CPU-efficiency loss at ``rtt_ms`` for a job of ``ops_per_second`` reads/s."""
    d = ops_per_second * (max(rtt_ms, 0.0) / 1000.0 + T0_SECONDS)
    return d / (1 + d)


def estimate(rtts: list[tuple[str | None, float]], profile: IOProfile, threshold: float = 0.05,
             efficiency: float | None = None) -> dict[str, Any]:
    rows = []
    for label, rtt in rtts:
        lo = loss(rtt, profile.ops_per_second)
        row = {"path": label, "rtt_ms": rtt, "loss": round(lo, 4), "efficiency_factor": round(1 - lo, 4),
               "recommend_cache": lo >= threshold}
        if efficiency is not None:
            row["efficiency"] = round(efficiency * (1 - lo), 4)
        rows.append(row)
    return {
        "model": {"formula": "loss = D/(1+D), D = ops_per_second * (RTT + t0)",
                  "t0_ms": round(T0_SECONDS * 1000, 3), "reference_ops_per_second": round(REF_OPS_PER_SECOND, 4),
                  "anchors": [{"rtt_ms": r, "loss": l} for r, l in ANCHORS]},
        "profile": profile.to_dict(),
        "threshold": threshold,
        "estimates": rows,
    }


def cache_finding(result: dict[str, Any]) -> Finding:
    rows = result["estimates"]
    over = [r for r in rows if r["recommend_cache"]]
    evidence = [f"{(r['path'] or 'source'):>16}: RTT {r['rtt_ms']:g} ms -> efficiency loss {r['loss']:.1%}" for r in rows]
    base = dict(rule_id="EFF-LATENCY-CACHE", title="Remote reads lose CPU efficiency to latency",
                references=[PIC_CIEMAT_REFERENCE],
                evidence=evidence, expected={"loss_below": result["threshold"]},
                observed={"max_loss": max((r["loss"] for r in rows), default=None)})
    if not over:
        return Finding(**base, status=FindingStatus.passed, severity=Severity.info)
    worst = max(r["loss"] for r in over)
    return Finding(
        **base, status=FindingStatus.fail, severity=Severity.high if worst >= 0.15 else Severity.medium,
        hosts=[r["path"] for r in over if r["path"]],
        rationale="PIC/CIEMAT: the same MiniAOD job lost ~2% reading from a cache 9 ms away and ~15% from FNAL at ~150 ms.",
        remediation=Remediation(text="Put an XRootD cache (XCache) close to the workers for the data read over these paths.",
                                role="xcache"),
    )
