"""The rule engine: facts in, findings out.

Check rules (YAML, advisor.rules.specs) compare one fact per host (or per item of a fact
mapping) with an expected value; analytic rules are Python functions registered with
``@analytic_rule(id)`` that reason across facts or hosts. Rules never run commands.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import advisor.rules.analytic  # noqa: F401  (its modules register the shipped analytic rules)
from advisor.util.errors import RuleDefinitionError
from advisor.model.facts import FactSet, HostFacts
from advisor.model.findings import Finding, FindingStatus
from advisor.util.gc_paused import gc_paused
from advisor.rules.host_failures import collapse_host_failures
from advisor.rules.checks import evaluate_check
from advisor.rules.context import RuleContext, analytic_functions
from advisor.rules.finding_groups import group_findings
from advisor.rules.specs import ResolvedProfile, RuleCatalog, RuleSpec, failure_line, load_catalog, resolve_profiles
from advisor.rules.waivers import apply_waivers
from advisor.site.model import Site


# --------------------------------------------------------------------------- entry point


class Evaluation:
    """The outcome of running the selected rules over a fact set."""

    def __init__(self, findings: list[Finding], profile: ResolvedProfile):
        self.findings = findings
        self.profile = profile


def evaluate(factset: FactSet, site: Site | None = None, profiles: list[str] | None = None,
             catalog: RuleCatalog | None = None, today: dt.date | None = None,
             rule_filter: Callable[[RuleSpec], bool] | None = None) -> Evaluation:
    """Every selected rule over the fact set, grouped, host failures collapsed, waivers applied.

    The cyclic garbage collector is paused meanwhile: rules allocate a finding per host and rule
    (400,000 over 10,000 hosts), none in a reference cycle, and the collector's passes over that
    growing heap made the cost grow faster than the hosts."""
    with gc_paused():
        return _evaluate(factset, site, profiles, catalog, today, rule_filter)


def _evaluate(factset: FactSet, site: Site | None, profiles: list[str] | None, catalog: RuleCatalog | None,
              today: dt.date | None, rule_filter: Callable[[RuleSpec], bool] | None) -> Evaluation:
    catalog = catalog or load_catalog(site_dirs=site.rules_dirs if site else None,
                                      storage_systems=site.storage_systems if site else None)
    names = profiles or (site.profiles if site else None) or ["generic"]
    resolved = resolve_profiles(names, catalog, overrides=site.vars if site else None)
    functions = analytic_functions()
    findings: list[Finding] = []
    hosts_by_roles: dict[frozenset[str], list[HostFacts]] = {}  # shared by the rules of this evaluation
    adapters_by_name: dict[str, Any] = {}  # likewise
    for rid in resolved.rule_ids:
        rule = catalog.rules[rid]
        if rule_filter and not rule_filter(rule):
            continue
        severity = resolved.severity.get(rid, rule.severity)
        ctx = RuleContext(rule, resolved.vars, severity, factset, site, hosts_by_roles, adapters_by_name)
        if rule.kind == "python":
            fn = functions.get(rule.function or "")
            if fn is None:
                raise RuleDefinitionError(f"{rule.pack}: rule {rid} names unregistered function {rule.function!r}")
            produced = group_findings(list(fn(ctx)))
        else:
            produced = evaluate_check(ctx)  # grouped as evaluated
        findings.extend(produced)
    findings = collapse_host_failures(findings, factset)
    findings = apply_waivers(findings, site.waivers if site else [], today, site.by_name() if site else None)
    for f in findings:  # the failure's words, once its hosts are final (grouped, waivers split off)
        if f.status in (FindingStatus.fail, FindingStatus.waived) and f.rule_id in catalog.rules:
            f.failure = failure_line(catalog.rules[f.rule_id], f)
    findings.sort(key=finding_sort_key)
    return Evaluation(findings, resolved)


def finding_sort_key(f: Finding) -> tuple:
    """Worst first: failures by severity, then errors, waived, passes."""
    status_rank = {"fail": 0, "error": 1, "waived": 2, "pass": 3, "not_applicable": 4}[f.status.value]
    return (status_rank, -f.severity.rank, f.rule_id, f.subject or "", ",".join(f.hosts))
