"""A failed finding's changes: its rule's change templates rendered, each completed by its
adapter with the values the scan saw (runtime, persisted) and the scope of what must change."""

from __future__ import annotations

from typing import Any

from advisor.adapters import Adapter, get_adapter
from advisor.adapters.base import SITE_FACTS
from advisor.rules.change_templates import TemplateError, render_change_groups
from advisor.util.errors import RuleDefinitionError
from advisor.model.facts import FactSet, ProbeStatus
from advisor.rules.finding_groups import change_key
from advisor.model.findings import BootValue, Change, ChangeScope
from advisor.util.trusted_models import trusted


def finding_changes(rule: Any, factset: FactSet, hosts: list[str], fields: dict[str, Any],
                    variables: dict[str, Any], adapters_by_name: dict[str, Adapter | None] | None = None) -> list[Change]:
    """The changes of a failed finding of ``rule`` (a RuleSpec) on ``hosts``. A template that needs
    a value the rule did not give yields no change; an unknown field or adapter is a rule-pack
    error. ``adapters_by_name`` keeps the adapters looked up, for the findings of one evaluation.

    Each rendered change is completed per group of hosts holding the same facts objects of the
    probes its adapter reads (hosts with identical outputs share them, advisor.model.output_store): the
    adapter reads the current values and compares them with the target once per group, and each
    host of the group gets its ``Change``."""
    try:
        rendered = render_change_groups(rule.remediation.changes, hosts, dict(fields, host=None), variables)
    except TemplateError as exc:
        raise RuleDefinitionError(f"{rule.pack}: rule {rule.id}: remediation.changes: {exc}") from None
    out: list[Change] = []
    seen: set[tuple] = set()  # a set, not `in out`: a finding of 10,000 hosts has as many changes
    # the registry is looked up once per adapter name, not per host (nor per finding, when given)
    by_name: dict[str, Adapter | None] = adapters_by_name if adapters_by_name is not None else {}
    all_hosts = factset.hosts
    for r in rendered:
        if r["adapter"] not in by_name:
            by_name[r["adapter"]] = get_adapter(r["adapter"])
        adapter = by_name[r["adapter"]]
        if adapter is None:
            raise RuleDefinitionError(f"{rule.pack}: rule {rule.id}: unknown adapter {r['adapter']!r}")
        if r["target"] is None or r["key"] in ("", "None"):
            continue
        key = r["key"]
        target = adapter.normalize_target(key, r["target"])
        reads = adapter.probes
        # identity of the facts objects the adapter reads -> (runtime, persisted, scope) or None; the
        # objects are held by the fact set meanwhile, so no id is reused
        by_facts: dict[tuple, tuple | None] = {}
        site = {SITE_FACTS: factset.site_facts(adapter.site_probes)} if adapter.site_probes else None
        for host in r["hosts"]:
            hf = all_hosts.get(host)
            facts = _usable_facts(hf, reads)
            if site:  # the same object for every host: the grouping below still holds
                facts.update(site)
            ident = (*facts, *map(id, facts.values()))
            if ident not in by_facts:
                runtime, persisted = adapter.current(facts, key)
                boot = adapter.boot(facts, key, persisted)
                own = adapter.host_target(facts, key, target)
                scope = None if own is None else change_scope(adapter, runtime, persisted, own, boot)
                by_facts[ident] = None if scope is None else (runtime, persisted, scope, boot, own)
            found = by_facts[ident]
            if found is None:
                continue
            runtime, persisted, scope, boot, own = found
            # built without re-validation: every value is of its field's type (host and key are
            # text, scope a ChangeScope; runtime, persisted and target are Any)
            change = trusted(Change, {"host": host, "adapter": adapter.name, "key": key, "runtime": runtime,
                                      "persisted": persisted, "target": own, "scope": scope, "boot": boot})
            ck = change_key(change)
            if ck not in seen:
                seen.add(ck)
                out.append(change)
    return out


def _usable_facts(hf: Any, reads: tuple[str, ...] | None) -> dict[str, Any]:
    """The facts of the host's successful probes, only those in ``reads`` when it is given."""
    if hf is None:
        return {}
    probes = hf.probes
    if reads is None:
        return {p: res.facts for p, res in probes.items() if res.status == ProbeStatus.ok}
    out = {}
    for p in reads:
        res = probes.get(p)
        if res is not None and res.status == ProbeStatus.ok:
            out[p] = res.facts
    return out


def change_scope(adapter: Adapter, runtime: Any, persisted: Any, target: Any,
                 boot: BootValue | None = None) -> ChangeScope | None:
    """What must change for the values seen to reach the target, comparing (by meaning) the runtime
    value and the boot value (``boot``: the persisted value, else the default when no file sets
    it; without it, the persisted value); None when both already equal it. A boot value that is
    the default and already right needs no file: no persisted change is planned for it."""
    at_boot = boot.value if boot is not None else persisted
    runtime_ok = runtime is not None and adapter.same(runtime, target)
    boot_ok = at_boot is not None and adapter.same(at_boot, target)
    if runtime_ok and boot_ok:
        return None
    return ChangeScope.persisted if runtime_ok else ChangeScope.runtime if boot_ok else ChangeScope.both


def change_with_scope(adapter: Adapter, host: str, key: str, runtime: Any, persisted: Any, target: Any,
                      boot: BootValue | None = None) -> Change | None:
    """The change with its scope; None when runtime and boot values already equal the target."""
    scope = change_scope(adapter, runtime, persisted, target, boot)
    if scope is None:
        return None
    return Change(host=host, adapter=adapter.name, key=key, runtime=runtime, persisted=persisted, target=target,
                  scope=scope, boot=boot)
