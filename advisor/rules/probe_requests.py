"""What the loaded rules ask the probes to read (pyinfra's ``keys=``): no key list kept by hand.

A probe with ``keyed_facts`` (``network.sysctl``: ``sysctls``) reads, besides its own base set, every
key that a loaded rule names:

* a fact path of the rule's probe whose first segment is that mapping: ``fact``, ``for_each``,
  ``where.path`` and ``evidence`` (``sysctls."net.ipv4.tcp_slow_start_after_idle".runtime``);
* the literal ``key`` of a remediation change whose adapter reads that probe (``{adapter: sysctl,
  key: net.ipv4.tcp_sack}``); a templated key (``"{subject}"``) names no key by itself.

Every loaded rule counts, whatever the profiles select: a capture collected under one profile
replays under another. A key an older capture did not collect is "not collected" for the rules
that need it (advisor.rules.checks), never a parse error.
"""

from __future__ import annotations

from advisor.rules.fact_paths import split_path
from advisor.rules.specs import RuleCatalog, RuleSpec

#: a change key or path segment holding one of these is a template, not a key
_TEMPLATE_CHARS = set("{}$")


def _keyed_facts() -> dict[str, str]:
    """probe name -> the facts mapping whose keys rules choose."""
    from probes import all_probes

    return {name: p.keyed_facts for name, p in all_probes().items() if p.keyed_facts}


def _path_key(path: str, mapping: str) -> str | None:
    try:
        parts = split_path(path)
    except ValueError:
        return None  # rules lint reports the path
    if len(parts) < 2 or parts[0] != mapping or _TEMPLATE_CHARS & set(parts[1]):
        return None
    return parts[1]


def _rule_paths(rule: RuleSpec) -> list[str]:
    paths = [p for p in (rule.fact, rule.for_each) if p]
    paths.extend(c.path for c in rule.conditions)
    return paths + list(rule.evidence)


def requested_keys(catalog: RuleCatalog) -> dict[str, list[str]]:
    """probe name -> the keys the catalog's rules name, each once, in rule order."""
    from advisor.adapters import adapters

    keyed = _keyed_facts()
    if not keyed:
        return {}
    registry = adapters()
    out: dict[str, dict[str, None]] = {}
    for rule in catalog.rules.values():
        mapping = keyed.get(rule.probe or "")
        if mapping:
            for path in _rule_paths(rule):
                key = _path_key(path, mapping)
                if key:
                    out.setdefault(rule.probe or "", {})[key] = None
        for change in rule.remediation.changes:
            adapter = registry.get(change.adapter)
            if adapter is None or _TEMPLATE_CHARS & set(change.key):
                continue
            for probe in adapter.probes or ():
                if probe in keyed:
                    out.setdefault(probe, {})[change.key] = None
    return {probe: list(keys) for probe, keys in out.items()}
