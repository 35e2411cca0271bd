"""Network analytic rules: buffer sizing against fasterdata and the bandwidth-delay product,
MTU probing with jumbo frames, txqueuelen at 10G, and runtime vs persisted sysctls."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from advisor.model.link_rate import host_link_rate, physical_nics, site_link_rates
from advisor.model.findings import Finding, FindingStatus
from advisor.rules.context import RuleContext, analytic_rule
from advisor.util.units import format_bps

SYSCTL = "network.sysctl"
NIC = "network.nic"

#: ESnet fasterdata host tuning, by NIC speed: (min speed bps, core rmem/wmem_max, tcp_rmem/wmem max)
FASTERDATA = [
    (40 * 10**9, 536870912, 268435456),
    (10 * 10**9, 268435456, 134217728),
    (0, 67108864, 33554432),
]


def fasterdata_for(rate_bps: int) -> tuple[int, int]:
    for floor, core, tcp in FASTERDATA:
        if rate_bps >= floor:
            return core, tcp
    return FASTERDATA[-1][1], FASTERDATA[-1][2]


def _sysctl(facts: dict, key: str) -> dict[str, Any] | None:
    entry = (facts.get("sysctls") or {}).get(key)
    if not entry or entry.get("absent") or entry.get("runtime") is None:
        return None
    return entry


def _max_field(entry: dict) -> int | None:
    ints = entry.get("runtime_ints") or []
    return ints[-1] if ints else None


def _sysctl_evidence(host: str, key: str, entry: dict) -> list[str]:
    lines = [f"{host}: {key} = {entry.get('runtime')}"]
    if entry.get("persisted_file"):
        lines.append(f"{host}: {entry['persisted_file']}:{entry.get('persisted_lineno')}: {entry.get('persisted_line')}")
    return lines


def _mesh_rtts_by_sender(mesh: dict | None) -> dict[str, tuple[float, int | None]]:
    """Largest measured RTT (µs) per sending host, with that path's expected rate."""
    out: dict[str, tuple[float, int | None]] = {}
    for p in (mesh or {}).get("paths", []):
        rtt = p.get("rtt_us")
        if p.get("status") != "ok" or not rtt:
            continue
        if rtt > out.get(p["src"], (0, None))[0]:
            out[p["src"]] = (rtt, p.get("expected_bps"))
    return out


#: why a rule sized by the link rate was not judged
LINK_RATE_UNKNOWN = ("link rate unknown: no physical NIC reports its speed (virtual interfaces do not count) and "
                     "the site file gives the host no link_rate")


@analytic_rule("NET-TCP-BUFFER-MAX")
def tcp_buffer_max(ctx: RuleContext) -> Iterator[Finding]:
    """tcp_rmem/tcp_wmem maxima against fasterdata for the link rate and against the BDP."""
    rates = site_link_rates(ctx.site)
    rtts = _mesh_rtts_by_sender(ctx.factset.mesh)
    for host in ctx.hosts():
        facts = ctx.facts(host, SYSCTL)
        if facts is None:
            yield from ctx.unusable(host, SYSCTL)
            continue
        link = host_link_rate(host, rates, ctx.facts(host, NIC))
        if link is None:
            yield ctx.finding(host.name, FindingStatus.not_applicable, message=LINK_RATE_UNKNOWN)
            continue
        rate = link.bps
        _, tcp_needed = fasterdata_for(rate)
        source = f"fasterdata for {format_bps(rate)}, from {link.source}"
        if host.name in rtts:
            rtt_us, path_rate = rtts[host.name]
            bdp = int((path_rate or rate) * (rtt_us / 1e6) / 8)
            if bdp > tcp_needed:
                tcp_needed, source = bdp, f"bandwidth-delay product {format_bps(path_rate or rate)} x {rtt_us / 1000:.1f} ms"
        for key in ("net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"):
            entry = _sysctl(facts, key)
            if entry is None or _max_field(entry) is None:
                continue
            have = _max_field(entry)
            ok = have >= tcp_needed
            ints = list(entry.get("runtime_ints") or [])
            new = " ".join(str(x) for x in ints[:-1] + [tcp_needed]) if len(ints) == 3 else str(tcp_needed)
            yield ctx.finding(
                host.name,
                FindingStatus.passed if ok else FindingStatus.fail,
                observed=have,
                expected=f">= {tcp_needed} ({source})",
                subject=key,
                evidence=_sysctl_evidence(host.name, key, entry),
                values={"target": new},
            )


@analytic_rule("NET-CORE-BUFFER-MAX")
def core_buffer_max(ctx: RuleContext) -> Iterator[Finding]:
    """net.core.rmem_max/wmem_max against fasterdata (caps sockets that set their own buffers)."""
    rates = site_link_rates(ctx.site)
    for host in ctx.hosts():
        facts = ctx.facts(host, SYSCTL)
        if facts is None:
            yield from ctx.unusable(host, SYSCTL)
            continue
        link = host_link_rate(host, rates, ctx.facts(host, NIC))
        if link is None:
            yield ctx.finding(host.name, FindingStatus.not_applicable, message=LINK_RATE_UNKNOWN)
            continue
        rate = link.bps
        core_needed, _ = fasterdata_for(rate)
        for key in ("net.core.rmem_max", "net.core.wmem_max"):
            entry = _sysctl(facts, key)
            if entry is None or _max_field(entry) is None:
                continue
            have = _max_field(entry)
            yield ctx.finding(
                host.name,
                FindingStatus.passed if have >= core_needed else FindingStatus.fail,
                observed=have,
                expected=f">= {core_needed} (fasterdata for {format_bps(rate)}, from {link.source})",
                subject=key,
                evidence=_sysctl_evidence(host.name, key, entry),
                values={"target": str(core_needed)},
            )


@analytic_rule("NET-MTU-PROBING")
def mtu_probing(ctx: RuleContext) -> Iterator[Finding]:
    """tcp_mtu_probing=1 where jumbo frames are in use (a black-holed PMTU stalls transfers)."""
    for host in ctx.hosts():
        facts, nic = ctx.facts(host, SYSCTL), ctx.facts(host, NIC)
        if facts is None or nic is None:
            yield from ctx.unusable(host, SYSCTL if facts is None else NIC)
            continue
        jumbo = sorted(
            f"{name} mtu {i.get('mtu')}"
            for name, i in (nic.get("interfaces") or {}).items()
            if not i.get("is_loopback") and (i.get("mtu") or 0) > 1500
        )
        entry = _sysctl(facts, "net.ipv4.tcp_mtu_probing")
        if not jumbo or entry is None:
            yield ctx.finding(host.name, FindingStatus.not_applicable, message="no jumbo frames")
            continue
        value = entry.get("runtime")
        ok = str(value).strip() in ("1", "2")
        yield ctx.finding(
            host.name, FindingStatus.passed if ok else FindingStatus.fail,
            observed=value, expected="1 (with jumbo frames)",
            evidence=[f"{host.name}: {j}" for j in jumbo] + _sysctl_evidence(host.name, "net.ipv4.tcp_mtu_probing", entry),
        )


@analytic_rule("NET-TXQUEUELEN")
def txqueuelen(ctx: RuleContext) -> Iterator[Finding]:
    """txqueuelen >= the profile's minimum on interfaces of 10 Gb/s and more."""
    minimum = int(ctx.vars.get("txqueuelen_min_10g", 10000))
    rates = site_link_rates(ctx.site)
    for host in ctx.hosts():
        nic = ctx.facts(host, NIC)
        if nic is None:
            yield from ctx.unusable(host, NIC)
            continue
        site_rate = rates.get(host.name)
        checked = False
        for name, i in sorted(physical_nics(nic).items()):  # a veth's or a bridge's queue is not the link's
            if str(i.get("operstate", "")).lower() != "up":
                continue
            speed = site_rate or (i.get("speed_mbps") or 0) * 10**6
            if speed < 10 * 10**9 or i.get("txqueuelen") is None:
                continue
            checked = True
            ok = i["txqueuelen"] >= minimum
            yield ctx.finding(
                host.name, FindingStatus.passed if ok else FindingStatus.fail,
                observed=i["txqueuelen"], expected=f">= {minimum}", subject=name,
                evidence=[f"{host.name}: {name} speed {format_bps(speed)} txqueuelen {i['txqueuelen']}"],
                values={"minimum": minimum},
            )
        if not checked:
            yield ctx.finding(host.name, FindingStatus.not_applicable, message="no interface of 10 Gb/s or more")


def _norm(v: Any) -> str:
    return " ".join(str(v).split())


@analytic_rule("NET-SYSCTL-NOT-PERSISTED")
def runtime_vs_persisted(ctx: RuleContext) -> Iterator[Finding]:
    """A runtime value that differs from what the sysctl files will set at boot, and files that
    contradict each other (a later file silently undoes an earlier one)."""
    for host in ctx.hosts():
        facts = ctx.facts(host, SYSCTL)
        if facts is None:
            yield from ctx.unusable(host, SYSCTL)
            continue
        any_checked = False
        for key, entry in sorted((facts.get("sysctls") or {}).items()):
            if entry.get("absent") or entry.get("runtime") is None or entry.get("persisted") is None:
                continue
            any_checked = True
            runtime, persisted = _norm(entry["runtime"]), _norm(entry["persisted"])
            conflicts = entry.get("conflicts") or []
            evidence = _sysctl_evidence(host.name, key, entry) + [
                f"{host.name}: {c.get('file')}:{c.get('lineno')}: {c.get('line')}" for c in conflicts
            ]
            if runtime != persisted:
                yield ctx.finding(
                    host.name, FindingStatus.fail, subject=key,
                    observed={"runtime": runtime, "persisted": persisted, "file": entry.get("persisted_file")},
                    expected="runtime == persisted", evidence=evidence,
                    values={"runtime": runtime},
                    message=f"at the next boot {entry.get('persisted_file')} sets {key} back to {persisted}",
                )
        if not any_checked:
            yield ctx.finding(host.name, FindingStatus.passed, message="no persisted network sysctl differs from runtime")
