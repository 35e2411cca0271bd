"""Firewall on the storage network of storage servers (IFCA: iptables on the private network
cut GPFS<->GPFS throughput from 4.5 to 2 Gb/s)."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator

from advisor.adapters.firewall import rule_key
from advisor.model.findings import Finding, FindingStatus
from advisor.rules.context import RuleContext, analytic_rule

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
    when it matches no address and no interface at all (it then applies to every packet).

    A negated match (``! -d 127.0.0.0/8``, ``iifname != "docker0"``) matches everything except what it
    names: it touches the storage network unless every storage prefix lies inside the excluded networks
    (or every storage interface is excluded)."""
    addrs = _networks(rule.get("addresses") or [])
    ifaces = rule.get("interfaces") or []
    ex_addrs = _networks(rule.get("excluded_addresses") or [])
    ex_ifaces = rule.get("excluded_interfaces") or []
    if not (addrs or ifaces or ex_addrs or ex_ifaces):
        return True
    # storage prefixes and interfaces the negations leave in reach of the rule
    nets = [n for n in networks if not any(n.version == x.version and n.subnet_of(x) for x in ex_addrs)]
    ifs = [i for i in interfaces if i not in ex_ifaces]
    if addrs and any(a.version == n.version and a.overlaps(n) for a in addrs for n in nets):
        return True
    if ifaces and any(i in ifs for i in ifaces):
        return True
    # only negations on a side: the rule reaches the storage network unless all of it is excluded there
    if ex_addrs and not addrs and (nets or not networks):
        return not ifaces or any(i in ifs for i in ifaces)
    if ex_ifaces and not ifaces and (ifs or not interfaces):
        return not addrs or any(a.version == n.version and a.overlaps(n) for a in addrs for n in nets)
    return False


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
