"""Throughput-mesh rules: thin wrappers over advisor.mesh.symptoms (metadata in rules/mesh.yml)."""

from __future__ import annotations

from collections.abc import Iterator

from advisor.model.findings import Change, Finding, FindingStatus
from advisor.mesh import symptoms as dg
from advisor.mesh.results import judge_paths
from advisor.rules.context import RuleContext, analytic_rule
from advisor.util.units import format_bps


def _paths(ctx: RuleContext) -> list[dict] | None:
    mesh = ctx.factset.mesh
    if not mesh:
        return None
    paths = [dict(p) for p in mesh.get("paths") or []]
    if any("ratio" not in p for p in paths):
        judge_paths(paths)
    return paths


def _facts(ctx: RuleContext, paths: list[dict]) -> dg.HostFactsMap:
    names = sorted({n for p in paths for n in (p["src"], p["dst"])})
    return {n: {dg.SYSCTL: ctx.facts(n, dg.SYSCTL), dg.FIREWALL: ctx.facts(n, dg.FIREWALL)} for n in names}


def _groups(ctx: RuleContext) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for h in ctx.factset.hosts.values():
        for g in h.groups:
            out.setdefault(g, []).append(h.name)
    if not out and ctx.site is not None:
        out = ctx.site.groups
    return out


def _ratio(ctx: RuleContext) -> float:
    return float(ctx.vars.get("mesh_min_ratio", 0.8))


def _values(changes: list[Change]) -> dict:
    """The diagnosis' changes as the values rules/mesh.yml's change templates read: ``sysctls``
    [{key, target}] and ``firewall_rules`` [rule keys] (the rule pack states the remediation)."""
    return {
        "sysctls": [{"key": c.key, "target": str(c.target)} for c in changes if c.adapter == "sysctl"],
        "firewall_rules": [c.key for c in changes if c.adapter == "firewall"],
    }


def _subject(p: dict) -> str:
    return f"{p['src']}->{p['dst']}"


@analytic_rule("MESH-PATH-SLOW")
def mesh_path_slow(ctx: RuleContext) -> Iterator[Finding]:
    paths = _paths(ctx)
    if paths is None:
        return
    min_ratio = _ratio(ctx)
    facts = _facts(ctx, paths)
    for p in paths:
        if p.get("status") != "ok" or p.get("ratio") is None:
            continue  # failed tests: MESH-TEST-FAILED; unjudged: nothing to compare with
        basis = "expected" if p.get("ratio_basis") == "expected" else "the median path"
        ref = format_bps(p["expected_bps"]) if p.get("expected_bps") else "the median path"
        slow = dg.is_slow(p, min_ratio)
        evidence = [dg.describe_path(p)]
        message = f"{p['ratio']:.2f} of {basis}"
        if slow:
            # a firewall on either end that acts on packets (IFCA: a rate limit on gpfs02)
            for h in (p["dst"], p["src"]):
                rules = dg.acting_firewall_rules(facts, h) or []
                if rules:
                    message += f"; {h} has {len(rules)} firewall rule(s) that drop, reject or rate-limit"
                    evidence += [f"{h}: {r.get('text')}" for r in rules[:3]]
        yield ctx.finding(
            [p["src"], p["dst"]],
            FindingStatus.fail if slow else FindingStatus.passed,
            observed=format_bps(p["measured_bps"]),
            expected=f">= {min_ratio:g} x {ref}",
            evidence=evidence,
            subject=_subject(p),
            message=message,
        )


@analytic_rule("MESH-ASYMMETRY")
def mesh_asymmetry(ctx: RuleContext) -> Iterator[Finding]:
    paths = _paths(ctx)
    if paths is None:
        return
    found = dg.find_asymmetries(paths, _facts(ctx, paths), _ratio(ctx), _groups(ctx))
    for a in found:
        evidence = [dg.describe_path(p) for p in a.slow]
        evidence += ["reverse " + dg.describe_path(p) for p in a.reverse_fine[:4]]
        evidence += ["other " + dg.describe_path(p) for p in a.other_fine[:4]]
        for c in a.differences:
            evidence += c.evidence
        changes = dg.merged_changes(a.differences)
        text = None
        if a.differences:
            text = "Likely cause: " + "; ".join(c.text for c in a.differences) + ". Apply what the good hosts have."
        yield ctx.finding(
            a.host, FindingStatus.fail,
            observed=a.summary(),
            expected=f"paths of {a.host} as {a.side} as fast as those of the good {a.side}s ({', '.join(a.good_hosts[:6])})",
            evidence=evidence,
            subject=f"{a.host} as {a.side}" + (f" (group {a.group})" if a.group else ""),
            values=_values(changes),
            remediation_text=text,
            message=("likely cause: " + ", ".join(c.text for c in a.differences)) if a.differences else
                    "no fact difference found; check NIC and switch ports on these paths",
        )


@analytic_rule("MESH-LOSS")
def mesh_loss(ctx: RuleContext) -> Iterator[Finding]:
    paths = _paths(ctx)
    if paths is None:
        return
    share = float(ctx.vars.get("mesh_loss_min_retransmit_share", 0.0005))
    count = int(ctx.vars.get("mesh_loss_min_retransmits", 10))
    for p, s in dg.loss_paths(paths, _ratio(ctx), share, count):
        yield ctx.finding(
            [p["src"], p["dst"]], FindingStatus.fail,
            observed=f"{p['retransmits']} retransmits ({s:.2%} of segments) at {format_bps(p['measured_bps'])}",
            expected=f"< {share:.2%} retransmitted",
            evidence=[dg.describe_path(p)],
            subject=_subject(p),
            message="packet loss on this path",
        )


@analytic_rule("MESH-BUFFER-LIMITED")
def mesh_buffer_limited(ctx: RuleContext) -> Iterator[Finding]:
    paths = _paths(ctx)
    if paths is None:
        return
    low = float(ctx.vars.get("mesh_buffer_band_low", 0.4))
    high = float(ctx.vars.get("mesh_buffer_band_high", 1.15))
    for b in dg.buffer_limited(paths, _facts(ctx, paths), _ratio(ctx), low, high):
        p = b.path
        queue = (f"; queueing delay {b.queueing_delay_us / 1000:.1f} ms on top (not part of the BDP)"
                 if b.queueing_delay_us else "")
        observed = (f"{format_bps(p['measured_bps'])} ~ window/idle RTT = {b.window_bytes} B / "
                    f"{b.rtt_us / 1000:.1f} ms = {format_bps(b.limit_bps)} ({b.window_source}){queue}")
        if b.sysctl == dg.WINDOW_SCALING:
            yield ctx.finding(
                [b.host], FindingStatus.fail, observed=observed,
                expected=f"{b.sysctl} = 1 on both ends (RFC 7323: the option is used only when both SYNs carry it)",
                evidence=[dg.describe_path(p)],
                subject=f"{_subject(p)} {b.sysctl}",
                values=_buffer_values(b),
                remediation_text=f"Set {b.sysctl} = 1 on {b.host} and persist it; the other end's buffers are not the cause.",
                message=f"window-limited: {b.host} has tcp_window_scaling=0 (64 KiB windows)",
            )
            continue
        yield ctx.finding(
            [b.host], FindingStatus.fail, observed=observed,
            expected=f"{b.sysctl} max >= {b.recommended_bytes} (BDP {b.bdp_bytes} B = rate x idle RTT / 8)",
            evidence=[dg.describe_path(p)],
            subject=f"{_subject(p)} {b.sysctl}",
            values=_buffer_values(b),
            remediation_text=f"Raise the maximum of {b.sysctl} on {b.host} to {b.recommended_bytes} and persist it.",
            message=f"buffer-limited: raise {b.sysctl} on {b.host}",
        )


def _buffer_values(b: dg.BufferLimit) -> dict:
    targets = {c.key: c.target for c in b.changes if c.adapter == "sysctl"}
    core = next((k for k in targets if k != b.sysctl), None)
    return {"sysctl": b.sysctl, "target": targets.get(b.sysctl), "core_sysctl": core,
            "core_target": targets.get(core) if core else None}


def _firewall_host(changes: list[Change]) -> str | None:
    """The end of a failed path whose firewall rules the hint names."""
    return next((c.host for c in changes if c.adapter == "firewall"), None)


@analytic_rule("MESH-TEST-FAILED")
def mesh_test_failed(ctx: RuleContext) -> Iterator[Finding]:
    paths = _paths(ctx)
    if paths is None:
        return
    facts = _facts(ctx, paths)
    for p in paths:
        if p.get("status") == "ok":
            continue
        hint, evidence, changes = dg.failure_hint(p, facts)
        yield ctx.finding(
            [p["src"], p["dst"]], FindingStatus.fail,
            observed=f"test failed: {p.get('error')}",
            expected="a completed iperf3 test",
            evidence=[dg.describe_path(p)] + evidence,
            subject=_subject(p),
            values={"firewall_host": _firewall_host(changes), **_values(changes)},
            message=hint or str(p.get("error")),
        )
