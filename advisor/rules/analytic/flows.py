"""Production-flow rules: each flow path judged on what held it (metadata in rules/flows.yml)."""

from __future__ import annotations

from collections.abc import Iterator

from advisor.model.findings import Finding, FindingStatus
from advisor.flows.limits import NETWORK_CLASSES
from advisor.paths.record import OUTSIDE
from advisor.rules.context import RuleContext, analytic_rule
from advisor.util.units import format_bps


def describe_flow(p: dict) -> str:
    """One evidence line for a flow path."""
    bits = [f"{p['src']}->{p['dst']}: {p.get('connections')} connection(s), {format_bps(p.get('measured_bps'))} while busy"]
    if p.get("expected_bps"):
        bits.append(f"of {format_bps(p['expected_bps'])} expected")
    if p.get("rtt_ms") is not None:
        bits.append(f"rtt {p['rtt_ms']:.2f} ms (min {p.get('min_rtt_ms') or 0:.2f})")
    if p.get("retrans_ratio") is not None:
        bits.append(f"{p['retrans_ratio']:.2%} retransmitted")
    if p.get("evidence"):
        bits.append(f"{p.get('limited_by')}: {p['evidence']}")
    return ", ".join(bits)


@analytic_rule("FLOW-PATH-HELD")
def flow_path_held(ctx: RuleContext) -> Iterator[Finding]:
    flows = ctx.factset.flows
    if not flows:
        return
    for p in flows.get("paths") or []:
        if not p.get("measured_bps") or not p.get("limited_by"):
            continue
        hosts = [h for h in (p["src"], p["dst"]) if h != OUTSIDE]
        held = p["limited_by"] in NETWORK_CLASSES
        mesh = p.get("mesh") or {}
        evidence = [describe_flow(p)] + ([mesh["note"]] if mesh.get("note") else [])
        yield ctx.finding(
            hosts, FindingStatus.fail if held else FindingStatus.passed,
            observed=f"{p['limited_by']} ({format_bps(p['measured_bps'])} while busy)",
            expected="held by the link or the application, never by the network or a host's TCP settings",
            evidence=evidence, subject=f"{p['src']}->{p['dst']}", message=f"{p['limited_by']}: {p.get('evidence')}",
        )
