"""Cache placement what-if from a scan's measurements (no RTT typed by hand).

From a scan report (``storadvise scan --json``): the mesh's per-path RTTs between the workers
and every other host (a data source: storage, door, cache), and the job's I/O profile -- from an
FJR/accounting option, else from the scan's active efficiency test (MB read per CPU second and
the CPU per wall second it measured), else PIC/CIEMAT's reference job. Per source, the RTT is the
median over its worker paths of the path's minimum RTT (iperf3's ``min_rtt_us``: the round trip
without the queueing the throughput test itself causes; ``rtt_us`` when no minimum was recorded).
The loss per source is :func:`advisor.efficiency.latency.loss`, anchored on PIC/CIEMAT (-2% at
~9 ms, -15% at ~150 ms). A cache pays off for a source whose loss reaches the threshold; where a
cache host exists, the loss reading through it is given too, and the gain is the difference.
"""

from __future__ import annotations

import statistics
from typing import Any

from advisor.efficiency import latency
from advisor.efficiency.latency import IOProfile


class PlacementInputError(ValueError):
    pass


def _rtt_ms(path: dict[str, Any]) -> float | None:
    for k in ("min_rtt_us", "rtt_us"):
        v = path.get(k)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0:
            return v / 1000.0
    return None


def profile_from_active(report: dict[str, Any]) -> IOProfile | None:
    eff = report.get("efficiency") or {}
    hosts = eff.get("hosts") or {}
    mb = cpu = 0.0
    effs = []
    for h in hosts.values():
        if not isinstance(h, dict):
            continue
        n, m, c, e = h.get("clients"), h.get("mb_read"), h.get("cpu_seconds"), h.get("efficiency")
        if all(isinstance(x, (int, float)) for x in (n, m, c)) and n and c:
            mb += m
            cpu += c * n
            if isinstance(e, (int, float)) and e > 0:
                effs.append(e)
    if cpu <= 0 or mb <= 0:
        return None
    cpw = statistics.fmean(effs) if effs else 1.0
    prof = latency.profile_from_mb(mb / cpu, latency.DEFAULT_MB_PER_READ, cpw)
    prof.origin = "active_test"
    return prof


def sources_and_rtts(report: dict[str, Any], sources: list[str] | None = None) -> dict[str, Any]:
    hosts = {h["name"]: h for h in report.get("hosts") or [] if isinstance(h, dict) and "name" in h}
    workers = {n for n, h in hosts.items() if "worker" in (h.get("roles") or [])}
    mesh = report.get("mesh") or {}
    paths = [p for p in mesh.get("paths") or [] if isinstance(p, dict)]
    if not paths:
        raise PlacementInputError("the scan has no mesh paths: run the scan with the mesh (site 'mesh.pairs')")
    if not workers:
        raise PlacementInputError("the scan names no host with the role 'worker'")
    per: dict[str, list[tuple[str, float]]] = {}
    for p in paths:
        src, dst, rtt = p.get("src"), p.get("dst"), _rtt_ms(p)
        if rtt is None or p.get("status") not in (None, "ok"):
            continue
        if src in workers and dst not in workers:
            per.setdefault(dst, []).append((src, rtt))
        elif dst in workers and src not in workers:
            per.setdefault(src, []).append((dst, rtt))
    if sources:
        unknown = [s for s in sources if s not in per]
        if unknown:
            raise PlacementInputError(f"no measured worker path to {', '.join(unknown)} in the mesh "
                                      f"(measured sources: {', '.join(sorted(per)) or 'none'})")
        per = {s: per[s] for s in sources}
    if not per:
        raise PlacementInputError("no measured RTT between a worker and another host in the mesh")
    roles = {n: hosts.get(n, {}).get("roles") or [] for n in per}
    return {"per_source": per, "roles": roles}


def what_if(report: dict[str, Any], profile: IOProfile, threshold: float = 0.05,
            sources: list[str] | None = None, efficiency: float | None = None) -> dict[str, Any]:
    got = sources_and_rtts(report, sources)
    per, roles = got["per_source"], got["roles"]
    caches = {s: statistics.median(r for _, r in per[s]) for s in per if "cache" in roles[s]}
    best_cache = min(caches.items(), key=lambda kv: kv[1]) if caches else None
    rows = []
    for s in sorted(per):
        rtts = [r for _, r in per[s]]
        rtt = statistics.median(rtts)
        lo = latency.loss(rtt, profile.ops_per_second)
        row: dict[str, Any] = {
            "source": s, "roles": roles[s], "rtt_ms": round(rtt, 3), "rtt_min_ms": round(min(rtts), 3),
            "rtt_max_ms": round(max(rtts), 3), "worker_paths": len(rtts), "loss": round(lo, 4),
            "efficiency_factor": round(1 - lo, 4),
        }
        if efficiency is not None:
            row["efficiency"] = round(efficiency * (1 - lo), 4)
        is_cache = s in caches
        row["recommend_cache"] = (not is_cache) and lo >= threshold
        if best_cache and not is_cache:
            cl = latency.loss(best_cache[1], profile.ops_per_second)
            row["via_cache"] = {"cache": best_cache[0], "rtt_ms": round(best_cache[1], 3), "loss": round(cl, 4),
                                "gain": round(lo - cl, 4)}
            row["recommend_cache"] = row["recommend_cache"] and lo - cl >= threshold / 2
        rows.append(row)
    return {
        "model": {"formula": "loss = D/(1+D), D = ops_per_second * (RTT + t0)",
                  "t0_ms": round(latency.T0_SECONDS * 1000, 3),
                  "anchors": [{"rtt_ms": r, "loss": lo} for r, lo in latency.ANCHORS],
                  "rtt": "median over worker paths of iperf3's min_rtt_us (rtt_us when absent)"},
        "profile": profile.to_dict(),
        "threshold": threshold,
        "sources": rows,
        "recommend_cache_for": [r["source"] for r in rows if r["recommend_cache"]],
    }
