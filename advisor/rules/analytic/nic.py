"""NIC rules that compare a host with the site or with other hosts (metadata in rules/nic.yml): the
NICs that carry a host's traffic against the site's link rate, the MTU of the hosts of one storage
network, and each host's MTU against what its measured paths carry."""

from __future__ import annotations

import ipaddress
from collections import Counter
from collections.abc import Iterator

from advisor.model.findings import Finding, FindingStatus
from advisor.model.link_rate import address_mtu, site_link_rates
from advisor.rules.context import RuleContext, analytic_rule
from advisor.util.units import format_bps

PORTS = "nic.ports"
NIC = "network.nic"


def _carriers(ports: dict) -> dict[str, list[tuple[str, dict]]]:
    """The physical NICs that carry the host's site address or storage network (all that are up when
    none is marked), grouped by their bond: {bond or NIC name: [(NIC, facts)]}."""
    ifaces = ports.get("interfaces") or {}
    chosen = [(n, p) for n, p in ifaces.items() if p.get("site") or p.get("storage")]
    if not chosen:
        chosen = [(n, p) for n, p in ifaces.items() if str(p.get("operstate") or "").lower() == "up"]
    groups: dict[str, list[tuple[str, dict]]] = {}
    for n, p in sorted(chosen):
        groups.setdefault(p.get("master") or n, []).append((n, p))
    return groups


@analytic_rule("NIC-SPEED-BELOW-SITE")
def speed_below_site(ctx: RuleContext) -> Iterator[Finding]:
    rates = site_link_rates(ctx.site)
    for host in ctx.hosts():
        ports = ctx.facts(host, PORTS)
        if ports is None:
            yield from ctx.missing(host, PORTS)
            continue
        rate = rates.get(host.name)
        if not rate:
            yield ctx.finding(host.name, FindingStatus.not_applicable, message="the site file gives the host no link_rate")
            continue
        for subject, members in _carriers(ports).items():
            speeds = [p.get("speed_mbps") for _, p in members]
            if any(s is None for s in speeds):
                yield ctx.finding(host.name, FindingStatus.not_applicable, subject=subject,
                                  message=f"{subject}: the NIC reports no speed (link down, or a virtual NIC)")
                continue
            total = sum(speeds) * 10**6
            evidence = [f"{host.name}: {n} {p.get('speed_mbps')} Mb/s" + (f" (fastest mode {p['max_supported_mbps']} Mb/s)"
                        if p.get("max_supported_mbps") else "") for n, p in members]
            yield ctx.finding(host.name, FindingStatus.passed if total >= rate else FindingStatus.fail,
                              observed=format_bps(total), expected=f">= {format_bps(rate)} (the site file's link_rate)",
                              subject=subject, evidence=evidence)


def _network_of(address: str) -> str | None:
    try:
        return str(ipaddress.ip_interface(address).network)
    except ValueError:
        return None


def _storage_interfaces(ctx: RuleContext, host, prefixes: list) -> list[tuple[str, str, int]]:
    """(network, interface, MTU) of the host's interfaces on the storage network: those with an address
    in the site's storage prefixes, else the one holding the address the site reaches it at."""
    nic = ctx.facts(host, NIC) or {}
    out = []
    for name, i in (nic.get("interfaces") or {}).items():
        if i.get("is_loopback") or not isinstance(i.get("mtu"), int):
            continue
        for a in i.get("addresses") or []:
            try:
                ip = ipaddress.ip_interface(a).ip
            except ValueError:
                continue
            if prefixes:
                net = next((str(n) for n in prefixes if ip.version == n.version and ip in n), None)
            else:
                net = _network_of(a) if str(ip) == host.address else None
            if net:
                out.append((net, name, i["mtu"]))
                break
    return out


@analytic_rule("NIC-MTU-MISMATCH")
def mtu_mismatch(ctx: RuleContext) -> Iterator[Finding]:
    site_net = getattr(ctx.site, "storage_network", None)
    prefixes = [ipaddress.ip_network(p, strict=False) for p in (site_net.prefixes if site_net else [])]
    known_mtu = site_net.mtu if site_net else None
    by_net: dict[str, list[tuple[str, str, int]]] = {}
    for host in ctx.hosts():
        for net, iface, mtu in _storage_interfaces(ctx, host, prefixes):
            by_net.setdefault(net, []).append((host.name, iface, mtu))
    for net, members in sorted(by_net.items()):
        if len({h for h, _, _ in members}) < 2:
            continue
        counts = Counter(m for _, _, m in members)
        target = max(counts, key=lambda m: (counts[m], m))
        others = sorted(h for h, _, m in members if m == target)
        ok_line = f"{len(others)} host(s) at MTU {target}: {', '.join(others[:6])}{' ...' if len(others) > 6 else ''}"
        yield ctx.finding(others, FindingStatus.passed, observed=target, expected=target, subject=net)
        for host, iface, mtu in members:
            if mtu == target:
                continue
            raise_it = target > mtu
            known = not raise_it or (known_mtu is not None and known_mtu >= target)
            why = None if known else (f"raising {iface} of {host} to {target} needs every switch port on its way to carry "
                                      f"{target}: the site file's storage_network.mtu does not say so (set it by hand)")
            yield ctx.finding(host, FindingStatus.fail, observed=mtu, expected=target, subject=net,
                              evidence=[f"{host}: {iface} mtu {mtu}", ok_line],
                              values={"interface": iface, "target": target}, plannable=known, message=why)


@analytic_rule("NIC-MTU-ABOVE-PATH")
def mtu_above_path(ctx: RuleContext) -> Iterator[Finding]:
    mesh = ctx.factset.mesh
    if not mesh:
        return
    for p in mesh.get("paths") or []:
        pm = p.get("path_mtu") or {}
        if not pm or pm.get("carried") is None:
            continue
        dst = ctx.factset.hosts.get(p["dst"])
        theirs = address_mtu(ctx.facts(dst, NIC), dst.address) if dst is not None else None
        if theirs is not None and theirs < (pm.get("mtu") or 0):
            continue  # a receiver with a smaller MTU: TCP's MSS keeps to it (NIC-MTU-MISMATCH judges the MTUs)
        subject = f"{p['src']}->{p['dst']}"
        if pm["carried"]:
            yield ctx.finding(p["src"], FindingStatus.passed, observed=pm.get("mtu"), subject=subject)
            continue
        yield ctx.finding(p["src"], FindingStatus.fail, observed=pm.get("mtu"), subject=subject,
                          expected=f"a path that carries {pm.get('mtu')}-byte frames",
                          evidence=[f"{subject}: a {pm.get('mtu')}-byte ping from {p['src']} {pm.get('interface') or ''} "
                                    "with don't-fragment set did not arrive; small pings did (a hop carries less: "
                                    "a path-MTU black hole)"])
