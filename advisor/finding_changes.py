"""A failed finding's changes: its rule's change templates rendered, each completed by its
adapter with the values the scan saw (runtime, persisted) and the scope of what must change."""

from __future__ import annotations

from typing import Any

from advisor.adapters import Adapter, get_adapter
from advisor.change_templates import TemplateError, render_changes
from advisor.errors import RuleDefinitionError
from advisor.facts import FactSet, ProbeStatus
from advisor.finding_groups import change_key
from advisor.findings import Change, ChangeScope


def finding_changes(rule: Any, factset: FactSet, hosts: list[str], fields: dict[str, Any],
                    variables: dict[str, Any]) -> list[Change]:
    """The changes of a failed finding of ``rule`` (a RuleSpec) on ``hosts``. A template that needs
    a value the rule did not give yields no change; an unknown field or adapter is a rule-pack
    error."""
    try:
        rendered = render_changes(rule.remediation.changes, hosts, dict(fields, host=None), variables)
    except TemplateError as exc:
        raise RuleDefinitionError(f"{rule.pack}: rule {rule.id}: remediation.changes: {exc}") from None
    out: list[Change] = []
    seen: set[tuple] = set()  # a set, not `in out`: a finding of 10,000 hosts has as many changes
    by_name: dict[str, Adapter | None] = {}  # the registry is looked up once per adapter, not per host
    for r in rendered:
        if r["adapter"] not in by_name:
            by_name[r["adapter"]] = get_adapter(r["adapter"])
        adapter = by_name[r["adapter"]]
        if adapter is None:
            raise RuleDefinitionError(f"{rule.pack}: rule {rule.id}: unknown adapter {r['adapter']!r}")
        if r["target"] is None or r["key"] in ("", "None"):
            continue
        hf = factset.hosts.get(r["host"])
        facts = {p: res.facts for p, res in hf.probes.items() if res.status == ProbeStatus.ok} if hf else {}
        target = adapter.normalize_target(r["key"], r["target"])
        runtime, persisted = adapter.current(facts, r["key"])
        change = change_with_scope(adapter, r["host"], r["key"], runtime, persisted, target)
        if change is not None:
            key = change_key(change)
            if key not in seen:
                seen.add(key)
                out.append(change)
    return out


def change_with_scope(adapter: Adapter, host: str, key: str, runtime: Any, persisted: Any, target: Any) -> Change | None:
    """The change with its scope; None when runtime and persisted values already equal the target."""
    runtime_ok = runtime is not None and adapter.same(runtime, target)
    persisted_ok = persisted is not None and adapter.same(persisted, target)
    if runtime_ok and persisted_ok:
        return None
    scope = ChangeScope.persisted if runtime_ok else ChangeScope.runtime if persisted_ok else ChangeScope.both
    return Change(host=host, adapter=adapter.name, key=key, runtime=runtime, persisted=persisted, target=target,
                  scope=scope)
