"""Firewall rules that act on storage traffic: role ``firewall``, variable ``firewall_remove_rules``
[{backend, family, table, chain, text, handle}]. A change's key names one rule of the ``firewall``
probe's facts (``rule_key``); its target is ``absent``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from advisor.adapters.base import Adapter, HostProbeFacts
from advisor.findings import Change

PROBE = "firewall"
RULE_FIELDS = ("backend", "family", "table", "chain", "text", "handle")


def rule_key(rule: Mapping[str, Any]) -> str:
    """``<backend> [<family>] <table> <chain>: <rule text>`` — one rule, as the scan saw it."""
    where = " ".join(str(rule.get(k)) for k in ("backend", "family", "table", "chain") if rule.get(k))
    return f"{where}: {rule.get('text')}"


def _find(facts: HostProbeFacts, key: str) -> dict[str, Any] | None:
    for r in (facts.get(PROBE) or {}).get("rules") or []:
        if rule_key(r) == key:
            return r
    return None


class FirewallAdapter(Adapter):
    touches_network = True
    name = "firewall"
    role = "firewall"

    probes = (PROBE,)

    def current(self, facts: HostProbeFacts, key: str) -> tuple[Any, Any]:
        if PROBE not in facts:
            return None, None
        return ("present" if _find(facts, key) else "absent"), None

    def cannot_change(self, facts: HostProbeFacts, change: Change, host_vars: Mapping[str, Any]) -> str | None:
        if _find(facts, change.key) is None:
            return "the rule is not in the ruleset the scan read (nothing to remove)"
        return None

    def resolve(self, key: str, a: Any, b: Any) -> Any | None:
        return "absent" if "absent" in (a, b) else None

    def role_vars(self, changes: list[Change], facts: HostProbeFacts, host_vars: Mapping[str, Any]) -> dict[str, Any]:
        rules = []
        for c in changes:
            r = _find(facts, c.key)
            if r is not None:
                rules.append({k: r.get(k) for k in RULE_FIELDS if r.get(k) is not None})
        return {"firewall_remove_rules": rules}


ADAPTER = FirewallAdapter()
