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


class PersistedRuleset(BaseModel):
    """A ruleset file the host loads at boot, as read: an iptables-save file (``iptables-restore``
    input, family ``ip``/``ip6``) or the nft script (``nft -f`` input, backend ``nft``)."""

    backend: str = "iptables"
    family: str
    path: str
    text: str


class PersistedRule(BaseModel):
    """One rule of a persisted file, in the form the kernel will hold it (``text``, as
    ``iptables-save`` prints it) and where it comes from (the file's own line)."""

    backend: str = "iptables"
    family: str
    table: str
    chain: str
    text: str
    path: str
    #: 1-based line of the file and that line as written
    lineno: int
    line: str


class FirewallFacts(BaseModel):
    backends: list[str] = Field(default_factory=list)
    chains: list[FirewallChain] = Field(default_factory=list)
    rules: list[FirewallRule] = Field(default_factory=list)
    rule_count: int = 0
    #: nft tables left out because they are the iptables-nft tables already read from iptables-save
    skipped_nft_tables: list[str] = Field(default_factory=list)
    #: the iptables-save files and the nft script loaded at boot that the host has (read by the probe)
    persisted_files: list[PersistedRuleset] = Field(default_factory=list)
    #: their rules canonicalised on the controller (advisor.adapters.firewall_canonical); empty until then
    persisted_rules: list[PersistedRule] = Field(default_factory=list)
    #: how ``persisted_rules`` were canonicalised: ``scratch-netns`` (loaded with iptables-restore
    #: into a scratch user+network namespace, read back with iptables-save) or ``python`` (the
    #: documented normaliser, playbooks/module_utils/storadvise_canonical.py); None: not yet
    persisted_canonicaliser: str | None = None
    #: why the scratch namespace could not be used (when the normaliser was)
    persisted_canonicaliser_note: str | None = None


def normalize_network(text: str) -> str | None:
    """``198.18.0.5`` -> ``198.18.0.5/32``, ``198.18.0.7/24`` -> ``198.18.0.0/24``; None if not an address."""
    try:
        return str(ipaddress.ip_network(text.strip(), strict=False))
    except ValueError:
        return None
