"""Disk analytic rules: a device whose await is far above its peers on the same host
(Caltech: a failing disk with soft I/O errors slowed a whole cache)."""

from __future__ import annotations

import statistics
from collections.abc import Iterator

from advisor.findings import Finding, FindingStatus
from advisor.rule_engine import RuleContext, analytic_rule

DISKSTATS = "block.diskstats"


@analytic_rule("DISK-AWAIT-OUTLIER")
def await_outlier(ctx: RuleContext) -> Iterator[Finding]:
    factor = float(ctx.vars.get("disk_await_outlier_factor", 3.0))
    floor_ms = float(ctx.vars.get("disk_await_min_ms", 20.0))
    min_iops = float(ctx.vars.get("disk_await_min_iops", 1.0))
    for host in ctx.hosts():
        facts = ctx.facts(host, DISKSTATS)
        if facts is None:
            yield from ctx.missing(host, DISKSTATS)
            continue
        busy = {
            name: d for name, d in (facts.get("devices") or {}).items()
            if not d.get("partition") and d.get("await_ms") is not None
            and (d.get("r_s", 0) or 0) + (d.get("w_s", 0) or 0) >= min_iops
        }
        if len(busy) < 3:
            yield ctx.finding(host.name, FindingStatus.not_applicable,
                              message=f"{len(busy)} busy whole devices over the sample; need 3 to compare peers")
            continue
        for name, d in sorted(busy.items()):
            peers = [p["await_ms"] for n, p in busy.items() if n != name]
            median = statistics.median(peers)
            limit = max(factor * median, floor_ms)
            ok = d["await_ms"] <= limit
            yield ctx.finding(
                host.name, FindingStatus.passed if ok else FindingStatus.fail,
                observed=round(d["await_ms"], 2), expected=f"<= {limit:.1f} ms ({factor:g} x peers' median {median:.1f} ms)",
                subject=name,
                evidence=[f"{host.name}: {name} await {d['await_ms']:.2f} ms, r/s {d.get('r_s', 0):.1f}, w/s {d.get('w_s', 0):.1f}, %util {d.get('util_pct', 0):.1f}"]
                + [f"{host.name}: {n} await {p['await_ms']:.2f} ms" for n, p in sorted(busy.items()) if n != name],
            )
