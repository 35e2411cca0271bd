"""The client-scaling curve: a point from its jobs' outputs, the knee, the protocol comparison.

Pure functions over the job outputs (no I/O). A *point* is C concurrent clients of the test job
spread over N nodes, all reading through one protocol; its figures are per client:

* ``runtime_per_client_s``: mean wall time of the clients;
* ``rate_per_client_bps``: mean over the clients of bytes x 8 / wall (bits per second);
* ``efficiency``: mean over the clients of CPU / wall (the client's own rusage, xrdcp's included).

**The knee.** Points in order of clients; the baseline is the rate per client of the smallest
count. A point is *degraded* when its rate per client is below ``(1 - rate_drop)`` x the baseline
(default ``rate_drop`` 0.25: a drop of more than 25%) or its efficiency below ``min_efficiency``
(default 0.5). The knee is the largest client count before the first degraded point: up to it
the clients still scale; ``first_degraded_clients`` is where they stopped. Status ``found``;
``not-reached`` when no point is degraded (the curve held up to the largest count, the knee is
beyond it); ``degraded-at-start`` when the smallest count is already below the efficiency bound;
``no-data`` with fewer than one measured point.
"""

from __future__ import annotations

from typing import Any, Iterable

RATE_DROP = 0.25
MIN_EFFICIENCY = 0.5
MIB = 1 << 20


def _mean(vals: list[float]) -> float | None:
    return sum(vals) / len(vals) if vals else None


def point_summary(outputs: list[tuple[str, dict[str, Any]]], clients: int, protocol: str,
                  mb_per_client: float) -> dict[str, Any]:
    """One scaling point from the outputs of its jobs, ``[(host, job_output), ...]`` (one per node)."""
    cl = [c for _h, out in outputs for c in out.get("clients", []) if "error" not in c]
    walls = [c["wall_seconds"] for c in cl if c["wall_seconds"] > 0]
    good = [c for c in cl if c["wall_seconds"] > 0]
    cpu = sum(c["cpu_seconds"] for c in cl)
    wall = sum(c["wall_seconds"] for c in cl)
    comp = sum(c["compute_seconds"] for c in cl)
    total_bytes = sum(c["bytes"] for c in cl)
    # the span from the first client's start to the last one's end, over all nodes
    starts = [c["start"] for c in good if "start" in c]
    span = (max(c["start"] + c["wall_seconds"] for c in good if "start" in c) - min(starts)) if starts else \
        max(walls, default=0.0)
    hosts = [h for h, _o in outputs]
    point: dict[str, Any] = {
        "clients": clients,
        "nodes": len(hosts),
        "protocol": protocol,
        "runtime_per_client_s": _mean(walls),
        "rate_per_client_bps": _mean([c["bytes"] * 8 / c["wall_seconds"] for c in good]),
        "efficiency": _mean([c["cpu_seconds"] / c["wall_seconds"] for c in good]),
        "host": hosts[0] if hosts else None,
        "hosts": hosts,
        "clients_per_node": {h: len(o.get("clients", [])) for h, o in outputs},
        "mb_per_client": mb_per_client,
        "cpu_seconds_per_client": (cpu / len(cl)) if cl else None,
        "aggregate_read_mbps": (total_bytes * 8 / 1e6 / span) if span > 0 else None,
        "read_wait_share": (sum(c["read_wait_seconds"] for c in cl) / wall) if wall > 0 else None,
        "cpu_share_computing": (cpu / comp) if comp > 0 else None,
        "cpu_count": sum(o.get("cpu_count") or 0 for _h, o in outputs) or None,
        "load_start": max(((o.get("loadavg_start") or [None])[0] for _h, o in outputs if o.get("loadavg_start")),
                          default=None),
        "load_end": max(((o.get("loadavg_end") or [None])[0] for _h, o in outputs if o.get("loadavg_end")),
                        default=None),
    }
    late = [o["start_late_s"] for _h, o in outputs if "start_late_s" in o]
    if late:
        point["start_late_s"] = max(late)
    tool = [c["client_tool_cpu_seconds"] for c in cl if "client_tool_cpu_seconds" in c]
    if tool:
        point["client_tool_cpu_seconds_per_client"] = sum(tool) / len(tool)
    return point


def find_knee(points: Iterable[dict[str, Any]], rate_drop: float = RATE_DROP,
              min_efficiency: float = MIN_EFFICIENCY) -> dict[str, Any]:
    """The knee of one protocol's points (see the module doc for the definition)."""
    if not 0 < rate_drop < 1:
        raise ValueError(f"rate_drop must be between 0 and 1, got {rate_drop:g}")
    if not 0 <= min_efficiency <= 1:
        raise ValueError(f"min_efficiency must be between 0 and 1, got {min_efficiency:g}")
    pts = sorted((p for p in points if p.get("rate_per_client_bps") is not None and p.get("efficiency") is not None),
                 key=lambda p: p["clients"])
    out: dict[str, Any] = {"clients": None, "first_degraded_clients": None, "reason": None,
                           "rate_drop": rate_drop, "min_efficiency": min_efficiency,
                           "baseline_clients": None, "baseline_rate_per_client_bps": None}
    if not pts:
        return {**out, "status": "no-data"}
    base = pts[0]
    out["baseline_clients"] = base["clients"]
    out["baseline_rate_per_client_bps"] = base["rate_per_client_bps"]
    floor = (1 - rate_drop) * base["rate_per_client_bps"]
    previous = None
    for p in pts:
        reasons = []
        if p["rate_per_client_bps"] < floor:
            reasons.append("rate")
        if p["efficiency"] < min_efficiency:
            reasons.append("efficiency")
        if reasons:
            out.update(first_degraded_clients=p["clients"], reason="+".join(reasons))
            if previous is None:
                return {**out, "status": "degraded-at-start"}
            return {**out, "clients": previous["clients"], "status": "found"}
        previous = p
    return {**out, "status": "not-reached", "held_up_to": pts[-1]["clients"]}


def compare_rows(points: Iterable[dict[str, Any]]) -> tuple[list[str], list[dict[str, Any]]]:
    """The protocols (in order of first appearance) and one row per client count:
    ``{"clients": C, "<protocol>": point or None, ...}``: the comparison table's content."""
    protocols: list[str] = []
    by: dict[int, dict[str, Any]] = {}
    for p in points:
        proto = p.get("protocol") or "?"
        if proto not in protocols:
            protocols.append(proto)
        by.setdefault(p["clients"], {"clients": p["clients"]})[proto] = p
    rows = [{**{pr: None for pr in protocols}, **by[c]} for c in sorted(by)]
    return protocols, rows


def format_rate(bps: float | None) -> str:
    if bps is None:
        return "-"
    for unit, f in (("Gb/s", 1e9), ("Mb/s", 1e6), ("kb/s", 1e3)):
        if bps >= f:
            return f"{bps / f:.3g} {unit}"
    return f"{bps:.3g} b/s"
