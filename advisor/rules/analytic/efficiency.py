"""Active CPU-efficiency rules (metadata in rules/efficiency.yml) over ``FactSet.efficiency``."""

from __future__ import annotations

from collections.abc import Iterator

from advisor.model.findings import Finding, FindingStatus
from advisor.rules.context import RuleContext, analytic_rule


@analytic_rule("EFF-ACTIVE-LOW")
def efficiency_active_low(ctx: RuleContext) -> Iterator[Finding]:
    eff = ctx.factset.efficiency
    if not eff:
        return
    floor = float(ctx.vars.get("efficiency_active_min", 0.7))
    for host, r in sorted((eff.get("hosts") or {}).items()):
        r = r or {}
        value = r.get("efficiency")
        if value is None:
            yield ctx.finding(host, FindingStatus.error, message=f"the active test did not run here: {r.get('error') or 'no result'}")
            continue
        source = r.get("source")
        evidence = [f"{host}: test job efficiency {value:.2f} (cpu {_seconds(r.get('cpu_seconds'))} / wall "
                    f"{_seconds(r.get('wall_seconds'))}"
                    + (f", reading from {source}" if source else "") + ")"]
        yield ctx.finding(
            host, FindingStatus.passed if value >= floor else FindingStatus.fail,
            observed=round(float(value), 3), expected=f">= {floor:g}", evidence=evidence,
            message=None if value >= floor else "the test job waits for its data",
        )


def _seconds(v) -> str:
    """``1.95 s``: a duration to what it means (a job's CPU and wall time are read to 10 ms)."""
    return f"{v:.2f} s" if isinstance(v, (int, float)) and not isinstance(v, bool) else "? s"
