"""Firewall on the storage network of storage servers (IFCA: iptables on the private network
cut GPFS<->GPFS throughput from 4.5 to 2 Gb/s)."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator

from advisor.adapters.firewall import rule_key
from advisor.findings import Finding, FindingStatus
from advisor.rule_engine import RuleContext, analytic_rule

FIREWALL = "firewall"
NIC = "network.nic"
#: verdicts that act on packets (an accept or a jump to a chain is not acting by itself)
ACTING = {"drop", "reject", "queue"}


def _networks(prefixes: list[str]) -> list[ipaddress._BaseNetwork]:
    out = []
    for p in prefixes:
        try:
            out.append(ipaddress.ip_network(p, strict=False))
        except ValueError:
            continue
    return out


def storage_networks(ctx: RuleContext, nic: dict | None) -> tuple[list, list[str], str]:
    """The storage network: the site file's, else the networks of the host's own addresses."""
    if ctx.site and (ctx.site.storage_network.prefixes or ctx.site.storage_network.interfaces):
        sn = ctx.site.storage_network
        return _networks(sn.prefixes), list(sn.interfaces), "site file storage_network"
    prefixes = []
    for name, i in ((nic or {}).get("interfaces") or {}).items():
        if i.get("is_loopback"):
            continue
        for a in i.get("addresses") or []:
            if ":" in a and a.lower().startswith("fe80"):
                continue
            prefixes.append(a)
    return _networks(prefixes), [], "networks of the host's addresses"


def rule_touches(rule: dict, networks: list, interfaces: list[str]) -> bool:
    """A rule touches the storage network when it matches one of its prefixes or interfaces, or
    when it matches no address and no interface at all (it then applies to every packet)."""
    addrs = _networks(rule.get("addresses") or [])
    ifaces = rule.get("interfaces") or []
    if not addrs and not ifaces:
        return True
    if any(a.version == n.version and a.overlaps(n) for a in addrs for n in networks):
        return True
    return any(i in interfaces for i in ifaces)


def acting(rule: dict) -> bool:
    verdict = str(rule.get("verdict") or "").lower()
    return verdict in ACTING or bool(rule.get("limit"))


@analytic_rule("FW-STORAGE-NETWORK")
def firewall_on_storage_network(ctx: RuleContext) -> Iterator[Finding]:
    for host in ctx.hosts():
        fw = ctx.facts(host, FIREWALL)
        if fw is None:
            yield from ctx.missing(host, FIREWALL)
            continue
        networks, interfaces, source = storage_networks(ctx, ctx.facts(host, NIC))
        hits = [r for r in fw.get("rules") or [] if acting(r) and rule_touches(r, networks, interfaces)]
        drop_policies = [
            c for c in fw.get("chains") or []
            if str(c.get("policy") or "").upper() == "DROP" and (c.get("hook") or c.get("chain", "")).lower() in ("input", "forward", "output")
        ]
        if not hits:
            yield ctx.finding(host.name, FindingStatus.passed, observed=0, expected=0,
                              message=f"no dropping or limiting rule on the storage network ({source})")
            continue
        evidence = [f"{host.name}: [{r.get('backend')} {r.get('family')} {r.get('table')} {r.get('chain')}] {r.get('text')}" for r in hits]
        evidence += [f"{host.name}: chain {c.get('table')}/{c.get('chain')} policy {c.get('policy')}" for c in drop_policies]
        yield ctx.finding(
            host.name, FindingStatus.fail,
            observed=len(hits), expected=0,
            evidence=evidence,
            subject="storage network",
            values={"rules": [rule_key(r) for r in hits]},
            message=f"{len(hits)} rule(s) drop, reject, queue or rate-limit traffic on the storage network ({source})",
        )
