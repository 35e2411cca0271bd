"""The planner: the changes of a scan's failed findings -> the changes a plan makes, and the
per-host role variables that make them.

One loop over changes. Each change names its adapter (advisor.adapters), the one module that
knows the change's Ansible role, its variables and whether the host can make it. The planner
knows no role: it drops what changes nothing, resolves two targets for one key, keeps out what
cannot or must not be changed (with the reason), and asks the adapters for the variables.
Pure data work: the report and the site in, a Plan out.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import msgspec

from advisor.adapters import Adapter, adapters
from advisor.apply.declared_changes import DeclaredChanges, declared_changes
from advisor.rules.finding_changes import change_with_scope
from advisor.model.findings import SEVERITY_ORDER, BootValue, Change, Finding, FindingStatus, Severity
from advisor.apply.plan_input import PlanBootValue, PlanScan
from advisor.apply.plan_model import Plan, PlanError, PlannedChange
from advisor.apply.plan_outcome import predicted_outcome
from advisor.report.diagnosed import ensure_diagnosis
from advisor.report.model import ScanReport
from advisor.site.model import Host, Site
from advisor.collect.probe_selection import skipped_in, skipped_probes

__all__ = ["Plan", "PlanError", "PlannedChange", "build_plan", "check_report_matches"]

Slot = tuple[str, str, str]  # (host, adapter, key)


def check_report_matches(report: ScanReport | PlanScan, site: Site, source: str) -> None:
    if report.site != site.name:
        raise PlanError(f"{source}: the scan is of site {report.site!r}, not {site.name!r}; scan this site first")


def host_settings(host: Host) -> dict[str, Any]:
    """What an adapter may read about a host from the site file."""
    return {**host.vars, "inventory_name": host.name}


def build_plan(report: ScanReport | PlanScan, site: Site, source: str = "scan", min_severity: str = "low",
               today: dt.date | None = None, declared: DeclaredChanges | None = None) -> Plan:
    """The plan for the report's FAILED findings at or above ``min_severity``. ``report``: a
    ScanReport, or the PlanScan of advisor.apply.plan_input (the same attributes, read from a file).
    ``declared``: the changes the rules declare (default: the site's rule packs and profiles)."""
    check_report_matches(report, site, source)
    if min_severity not in SEVERITY_ORDER:
        raise PlanError(f"--min-severity {min_severity!r}: one of {', '.join(SEVERITY_ORDER)}")
    report = ensure_diagnosis(report)
    set_aside = {(s.change.host, s.change.adapter, s.change.key): s for s in report.set_aside}
    # symptoms a cause explains are the causes' business (PLAN.md "Causes"), not a by-hand line each;
    # the measured states a by-hand cause repairs (a failing disk: SMART, its I/O errors, its await)
    # stay one each
    def key(e) -> tuple:
        return e.rule_id, e.subject, tuple(e.hosts)

    covered = {key(e) for c in report.causes for e in c.explains
               if c.kind == "change" or key(e) not in {key(f) for f in c.findings}}
    registry = adapters()
    declared = declared or declared_changes(report, site)  # each change as its rule declares it, never as the file says
    plan = Plan(site=site.name, scan_started_at=report.started_at, min_severity=min_severity)
    left_out = skipped_probes(report)
    if left_out:
        not_checked = skipped_in(report.findings)
        plan.notices.append(f"not checked: the scan left out probes {', '.join(left_out)} (--probes/--skip-probes); "
                            "the rules reading them are neither planned nor known to pass"
                            + (f": {', '.join(not_checked)}" if not_checked else ""))
    site_hosts = {h.name: h for h in site.hosts}
    facts = {h.name: h.facts for h in report.hosts}
    refused = _refused_hosts(report, site)
    wanted: dict[Slot, list[tuple[Change, Finding]]] = {}
    blocked: dict[Slot, str] = {}
    floor = Severity(min_severity).rank
    for f in report.findings:
        if f.status == FindingStatus.waived or (f.status == FindingStatus.fail and _waived_now(f, site, today)):
            for c in f.changes:
                blocked.setdefault((c.host, c.adapter, c.key), f"proposed by {f.rule_id}, which the site waives"
                                   + (f" ({f.message})" if f.message else ""))
            continue
        if f.status != FindingStatus.fail:
            continue
        if f.severity.rank < floor:
            plan.below_min_severity.append({"rule": f.rule_id, "hosts": f.hosts, "severity": f.severity.value,
                                            "subject": f.subject})
            continue
        if not f.changes:
            if (f.rule_id, f.subject, tuple(f.hosts)) not in covered:
                plan.manual.append({"rule": f.rule_id, "hosts": f.hosts, "severity": f.severity.value,
                                    "subject": f.subject, "text": f.remediation.text})
            continue
        for c in f.changes:
            c = _as_declared(plan, declared, f, c, registry.get(c.adapter), facts.get(c.host) or {})
            if c is not None:
                wanted.setdefault((c.host, c.adapter, c.key), []).append((c, f))

    planned: dict[str, dict[str, list[PlannedChange]]] = {}
    for slot, asks in wanted.items():
        host, adapter_name, key = slot
        rules = list(dict.fromkeys(f.rule_id for _, f in asks))
        if host in refused:
            continue
        adapter = registry.get(adapter_name)
        if adapter is None:
            _cannot(plan, None, asks[0][0], rules, f"no adapter {adapter_name!r} is registered (known: {', '.join(registry)})")
            continue
        change = _resolve(plan, adapter, asks, facts.get(host) or {})
        if change is None:
            plan.notices.append(f"{host}: {adapter.label(key)} is already {asks[0][0].target} at runtime and in "
                                f"its persisted configuration ({', '.join(rules)}): nothing to change")
            continue
        why = _why_not(adapter, change, site, site_hosts[host], facts.get(host) or {}, blocked.get(slot), today)
        if why:
            _cannot(plan, adapter, change, rules, why)
            continue
        if slot in set_aside:  # only an analysis of symptoms asked for it, and no cause holds it
            plan.set_aside.append({"host": host, "adapter": adapter_name, "key": key, "target": change.target,
                                   "rules": rules, "reason": set_aside[slot].reason})
            continue
        pc = PlannedChange(change=change, role=adapter.role, setting=adapter.label(key), rule_ids=rules)
        planned.setdefault(host, {}).setdefault(adapter.name, []).append(pc)
        plan.changes.append(pc)

    for host, by_adapter in planned.items():
        for name, pcs in by_adapter.items():
            adapter = registry[name]
            changes = [p.change for p in pcs]
            plan.host_vars.setdefault(host, {})[adapter.role] = adapter.role_vars(
                changes, facts.get(host) or {}, host_settings(site_hosts[host]))
            notice = adapter.notice(host, changes, host_settings(site_hosts[host]))
            if notice:
                plan.notices.append(f"{host}: {notice}")
    for adapter in registry.values():
        members = {h: v[adapter.role] for h, v in plan.host_vars.items() if adapter.role in v}
        if members:
            plan.notices.extend(adapter.finish(members, facts) or [])
            for h, v in members.items():  # a host finish added runs the role for the others
                if h not in plan.host_vars and (h in refused or h not in site_hosts):
                    why = refused.get(h) or "not a host of the site"
                    plan.notices.append(f"{h}: {adapter.role} would run there for the other hosts, but {why}: "
                                        "not planned")
                    continue
                plan.host_vars.setdefault(h, {}).setdefault(adapter.role, v)
    plan.refused = [{"host": h, "reason": r} for h, r in sorted(refused.items())]
    plan.causes, plan.prediction = predicted_outcome(report, plan.changes)
    plan.changes.sort(key=lambda c: (c.change.host, plan.role_order.index(c.role) if c.role in plan.role_order else 99,
                                     c.change.key))
    return plan


def _as_declared(plan: Plan, declared: DeclaredChanges, f: Any, c: Any, adapter: Adapter | None,
                 host_facts: dict | None = None) -> Any:
    """The change as its rule declares it (its target derived where the rule fixes one, and decided on the
    host's facts where the rule leaves it to them: a NIC ring's ``max``), or None (listed under "cannot
    apply", naming what the rule does not declare)."""
    target, why = declared.check(f, c, adapter)
    if why:
        _cannot(plan, adapter, c, [f.rule_id], why)
        return None
    if adapter is not None:
        target = adapter.host_target(host_facts or {}, c.key, target)
        if target is None:
            _cannot(plan, adapter, c, [f.rule_id], f"the scan's facts of {c.host} do not say what "
                                                   f"{adapter.label(c.key)} can be")
            return None
    asked = adapter.normalize_target(c.key, c.target) if adapter else c.target
    if target == asked or (adapter is not None and adapter.same(target, asked)):
        return c
    plan.notices.append(f"{c.host}: {adapter.label(c.key) if adapter else c.key}: the scan's change asks {c.target}, "
                        f"{f.rule_id} declares {target}: planned {target}")
    return c.model_copy(update={"target": target}) if isinstance(c, Change) else msgspec.structs.replace(c, target=target)


def _refused_hosts(report: ScanReport | PlanScan, site: Site) -> dict[str, str]:
    site_names = {h.name for h in site.hosts}
    named = {h for f in report.findings if f.status == FindingStatus.fail for h in f.hosts + [c.host for c in f.changes]}
    out: dict[str, str] = {}
    for h in sorted(named - site_names):
        out[h] = f"not in site {site.name} (the scan names it, the site file does not)"
    for h in report.hosts:
        if not h.reachable and h.name in site_names:
            out[h.name] = (f"unreachable at scan time ({'; '.join(h.errors) or 'no connection'}); "
                           "fix the connection and scan again")
    return out


def _waived_now(f: Finding, site: Site, today: dt.date | None) -> bool:
    """A failed finding whose every host the site file waives today (waivers added after the scan)."""
    hosts = site.by_name()
    return bool(f.hosts) and all(any(w.matches(f.rule_id, hosts.get(h, h)) and not w.expired(today) for w in site.waivers)
                                 for h in f.hosts)


def _resolve(plan: Plan, adapter: Adapter, asks: list[tuple[Change, Finding]], facts: dict) -> Change | None:
    """One target for a slot several rules ask for: the adapter's larger safe value, else the most
    severe rule's. Returns the change with its scope recomputed from the runtime and boot values
    (None: nothing to change). A change without a boot value (a scan made before boot values, or
    a rule that did not ask its adapter) gets it from the host's facts here."""
    first = asks[0][0]
    boot = first.boot if first.boot is not None else adapter.boot(facts, first.key, first.persisted)
    if isinstance(boot, PlanBootValue):  # read by the typed scan decoder (advisor/apply/plan_input.py)
        boot = BootValue.model_validate(boot, from_attributes=True)
    targets = [(adapter.normalize_target(c.key, c.target), f) for c, f in asks]
    distinct = []
    for t, f in targets:
        if not any(adapter.same(t, d) for d, _ in distinct):
            distinct.append((t, f))
    target = distinct[0][0]
    if len(distinct) > 1:
        chosen, how = target, "the larger safe value"
        for t, _ in distinct[1:]:
            r = adapter.resolve(first.key, chosen, t)
            if r is None:
                chosen, how = max(distinct, key=lambda x: x[1].severity.rank)[0], "the most severe rule's"
                break
            chosen = r
        asked = "; ".join(f"{f.rule_id} asks {t}" for t, f in distinct)
        plan.notices.append(f"{first.host}: {adapter.label(first.key)}: {asked}; planned {chosen} ({how})")
        target = chosen
    return change_with_scope(adapter, first.host, first.key, first.runtime, first.persisted, target, boot)


def _why_not(adapter: Adapter, change: Change, site: Site, host: Host, facts: dict, waived_by_rule: str | None,
             today: dt.date | None) -> str | None:
    """Why the change must not reach Ansible, or None."""
    if waived_by_rule:
        return waived_by_rule
    for w in site.waivers:
        if w.settings and not w.expired(today) and w.covers_setting(adapter.name, change.key, host):
            return f"the site waives this setting: {w.justification}"
    for im in site.immutable:
        if im.covers(adapter.name, change.key, host):
            return f"immutable on this site: {im.reason}"
    return adapter.cannot_change(facts, change, host_settings(host))


def _cannot(plan: Plan, adapter: Adapter | None, change: Change, rules: list[str], reason: str) -> None:
    plan.cannot_apply.append({"host": change.host, "adapter": change.adapter, "key": change.key,
                              "setting": adapter.label(change.key) if adapter else change.key, "target": change.target,
                              "runtime": change.runtime, "persisted": change.persisted, "rules": rules,
                              "reason": reason})
