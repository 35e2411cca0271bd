"""The firewall facts model, shared by the iptables-save and nft JSON readers."""

from __future__ import annotations

import ipaddress

from pydantic import BaseModel, Field

#: iptables targets that are verdicts (other targets -- LOG, MARK, MASQUERADE ... -- are not)
IPT_VERDICTS = {"ACCEPT": "accept", "DROP": "drop", "REJECT": "reject", "RETURN": "return", "QUEUE": "queue", "NFQUEUE": "queue"}
#: iptables matches that limit a rate, a volume or a connection count
IPT_LIMIT_MATCHES = {"limit", "hashlimit", "quota", "connlimit", "quota2", "rateest"}


class FirewallChain(BaseModel):
    backend: str
    family: str
    table: str
    chain: str
    #: netfilter hook of a base chain (``input``, ``forward``, ...); None for a user chain
    hook: str | None = None
    #: ``ACCEPT`` / ``DROP`` for a base chain; None for a user chain
    policy: str | None = None
    rule_count: int = 0


class FirewallRule(BaseModel):
    backend: str
    family: str
    table: str
    chain: str
    #: accept, drop, reject, queue, return, ``jump X``, ``goto X``; None when the rule has none
    verdict: str | None = None
    #: a rate limit, quota, connection limit or meter is part of the match
    limit: bool = False
    #: source/destination networks the rule matches, as ``addr/prefixlen``
    addresses: list[str] = Field(default_factory=list)
    #: interfaces it matches (input or output)
    interfaces: list[str] = Field(default_factory=list)
    #: networks a negated match leaves out (iptables ``! -d 127.0.0.0/8``, nft ``ip daddr != 127.0.0.0/8``):
    #: the rule matches every address *except* these
    excluded_addresses: list[str] = Field(default_factory=list)
    #: interfaces a negated match leaves out (``! -o docker0``, ``iifname != "docker0"``)
    excluded_interfaces: list[str] = Field(default_factory=list)
    #: the rule as iptables-save prints it, or rendered from the nft JSON
    text: str


class FirewallFacts(BaseModel):
    backends: list[str] = Field(default_factory=list)
    chains: list[FirewallChain] = Field(default_factory=list)
    rules: list[FirewallRule] = Field(default_factory=list)
    rule_count: int = 0
    #: nft tables left out because they are the iptables-nft tables already read from iptables-save
    skipped_nft_tables: list[str] = Field(default_factory=list)


def normalize_network(text: str) -> str | None:
    """``198.18.0.5`` -> ``198.18.0.5/32``, ``198.18.0.7/24`` -> ``198.18.0.0/24``; None if not an address."""
    try:
        return str(ipaddress.ip_network(text.strip(), strict=False))
    except ValueError:
        return None
