"""Disk analytic rules: a device whose await is far above its peers on the same host
(Caltech: a failing disk with soft I/O errors slowed a whole cache)."""

from __future__ import annotations

import statistics
from collections.abc import Iterator

from advisor.model.findings import Finding, FindingStatus
from advisor.rules.context import RuleContext, analytic_rule

DISKSTATS = "block.diskstats"


def busy_devices(diskstats: dict, min_iops: float) -> dict[str, dict]:
    """Whole physical devices (no partition, no loop, zram, ram, dm or md device) with an await and at
    least ``min_iops`` requests per second over the sample."""
    return {
        name: d for name, d in (diskstats.get("devices") or {}).items()
        if not d.get("partition") and not d.get("virtual") and d.get("await_ms") is not None
        and (d.get("r_s", 0) or 0) + (d.get("w_s", 0) or 0) >= min_iops
    }


def await_limits(busy: dict[str, dict], factor: float, floor_ms: float) -> dict[str, tuple[float, float]]:
    """Per busy device: (limit, peers' median await): ``max(factor x median of the others, floor)``.
    Empty with fewer than 3 busy devices (no peers to compare with)."""
    if len(busy) < 3:
        return {}
    out = {}
    for name in busy:
        median = statistics.median(p["await_ms"] for n, p in busy.items() if n != name)
        out[name] = (max(factor * median, floor_ms), median)
    return out


def outlier_settings(ctx: RuleContext) -> tuple[float, float, float]:
    return (float(ctx.vars.get("disk_await_outlier_factor", 3.0)), float(ctx.vars.get("disk_await_min_ms", 20.0)),
            float(ctx.vars.get("disk_await_min_iops", 1.0)))


@analytic_rule("DISK-AWAIT-OUTLIER")
def await_outlier(ctx: RuleContext) -> Iterator[Finding]:
    factor, floor_ms, min_iops = outlier_settings(ctx)
    for host in ctx.hosts():
        facts = ctx.facts(host, DISKSTATS)
        if facts is None:
            yield from ctx.missing(host, DISKSTATS)
            continue
        busy = busy_devices(facts, min_iops)
        if len(busy) < 3:
            yield ctx.finding(host.name, FindingStatus.not_applicable,
                              message=f"{len(busy)} busy whole devices over the sample; need 3 to compare peers")
            continue
        for name, (limit, median) in sorted(await_limits(busy, factor, floor_ms).items()):
            d = busy[name]
            ok = d["await_ms"] <= limit
            yield ctx.finding(
                host.name, FindingStatus.passed if ok else FindingStatus.fail,
                observed=round(d["await_ms"], 2), expected=f"<= {limit:.1f} ms ({factor:g} x peers' median {median:.1f} ms)",
                subject=name,
                evidence=[f"{host.name}: {name} await {d['await_ms']:.2f} ms, r/s {d.get('r_s', 0):.1f}, w/s {d.get('w_s', 0):.1f}, %util {d.get('util_pct', 0):.1f}"]
                + [f"{host.name}: {n} await {p['await_ms']:.2f} ms" for n, p in sorted(busy.items()) if n != name],
            )
