"""Firewall rules that act on storage traffic: role ``firewall``, variable ``firewall_remove_rules``
[{backend, family, table, chain, text, handle}]. A change's key names one rule of the ``firewall``
probe's facts (``rule_key``); its target is ``absent``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from advisor.adapters.base import Adapter, HostProbeFacts
from advisor.model.findings import BootSource, BootValue, Change
from advisor.adapters.firewall_canonical import SCRATCH, same_rule

PROBE = "firewall"
RULE_FIELDS = ("backend", "family", "table", "chain", "text", "handle")


def rule_key(rule: Mapping[str, Any]) -> str:
    """``<backend> [<family>] <table> <chain>: <rule text>`` — one rule, as the scan saw it."""
    where = " ".join(str(rule.get(k)) for k in ("backend", "family", "table", "chain") if rule.get(k))
    return f"{where}: {rule.get('text')}"


def persisted_source(facts: HostProbeFacts, rule: Mapping[str, Any]) -> dict[str, Any] | None:
    """The persisted rule (its file and line) that gives ``rule`` at boot, compared by meaning."""
    for p in (facts.get(PROBE) or {}).get("persisted_rules") or []:
        if same_rule(p, rule):
            return p
    return None


def _find(facts: HostProbeFacts, key: str) -> dict[str, Any] | None:
    for r in (facts.get(PROBE) or {}).get("rules") or []:
        if rule_key(r) == key:
            return r
    return None


class FirewallAdapter(Adapter):
    touches_network = True
    name = "firewall"
    role = "firewall"
    play_title = "Remove the firewall rules the plan names (never a whole ruleset)"

    probes = (PROBE,)

    def current(self, facts: HostProbeFacts, key: str) -> tuple[Any, Any]:
        """Runtime: ``present``/``absent``. Persisted: the file line that loads the rule at boot
        (``path:line: text``), matched by meaning (advisor.adapters.firewall_canonical); None: not found
        in the files the probe read (another loader may still hold it)."""
        if PROBE not in facts:
            return None, None
        rule = _find(facts, key)
        if rule is None:
            return "absent", None
        source = persisted_source(facts, rule)
        return "present", None if source is None else f"{source['path']}:{source['lineno']}: {source['line']}"

    def boot(self, facts: HostProbeFacts, key: str, persisted: Any) -> BootValue | None:
        if persisted is None:
            return None
        fw = facts.get(PROBE) or {}
        how = ("loaded into a scratch network namespace and read back" if fw.get("persisted_canonicaliser") == SCRATCH
               else "matched by the pure-Python normaliser" + (f" ({fw['persisted_canonicaliser_note']})"
                                                                if fw.get("persisted_canonicaliser_note") else ""))
        return BootValue(value="present", source=BootSource.file, origin=f"{persisted} ({how})")

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
                entry = {k: r.get(k) for k in RULE_FIELDS if r.get(k) is not None}
                source = persisted_source(facts, r)
                if source is not None:
                    # the file line the role takes out, whatever its spelling (matched by meaning here)
                    entry["persisted"] = [{"path": source["path"], "line": source["line"]}]
                rules.append(entry)
        return {"firewall_remove_rules": rules}


ADAPTER = FirewallAdapter()
