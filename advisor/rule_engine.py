"""The rule engine: facts in, findings out.

Check rules (YAML, advisor.rule_specs) compare one fact per host (or per item of a fact
mapping) with an expected value; analytic rules are Python functions registered with
``@analytic_rule(id)`` that reason across facts or hosts. Rules never run commands.
"""

from __future__ import annotations

import datetime as dt
import importlib
import pkgutil
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from advisor.check_rules import evaluate_check
from advisor.comparisons import compare  # noqa: F401  (re-exported for rule authors and tests)
from advisor.errors import RuleDefinitionError
from advisor.change_templates import render_text
from advisor.profile_vars import interpolate
from advisor.facts import FactSet, HostFacts, ProbeStatus
from advisor.finding_changes import finding_changes
from advisor.finding_groups import evidence_host, group_findings
from advisor.gc_paused import gc_paused
from advisor.findings import Finding, FindingStatus, Remediation, Severity
from advisor.host_failures import collapse_host_failures
from advisor.rule_specs import (
    ResolvedProfile,
    RuleCatalog,
    RuleSpec,
    load_catalog,
    resolve_profiles,
)
from advisor.site import Host, Site, Waiver
from advisor.trusted_models import trusted

AnalyticFunction = Callable[["RuleContext"], Iterable[Finding]]
_ANALYTIC: dict[str, AnalyticFunction] = {}
_LOADED = False


def analytic_rule(rule_id: str) -> Callable[[AnalyticFunction], AnalyticFunction]:
    """Register a Python rule under ``rule_id`` (its metadata lives in a YAML pack)."""

    def register(fn: AnalyticFunction) -> AnalyticFunction:
        if rule_id in _ANALYTIC and _ANALYTIC[rule_id] is not fn:
            raise RuleDefinitionError(f"analytic rule {rule_id} registered twice")
        _ANALYTIC[rule_id] = fn
        return fn

    return register


def analytic_functions() -> dict[str, AnalyticFunction]:
    global _LOADED
    if not _LOADED:
        import advisor.analytic_rules as pkg

        for info in pkgutil.iter_modules(pkg.__path__):
            importlib.import_module(f"{pkg.__name__}.{info.name}")
        _LOADED = True
    return _ANALYTIC


# --------------------------------------------------------------------------- context


class RuleContext:
    """What a rule (check or analytic) sees: its metadata, variables, the facts and the site."""

    def __init__(self, rule: RuleSpec, variables: dict[str, Any], severity: Severity,
                 factset: FactSet, site: Site | None,
                 hosts_by_roles: dict[frozenset[str], list[HostFacts]] | None = None,
                 adapters_by_name: dict[str, Any] | None = None):
        self.rule = rule
        self.vars = variables
        self.severity = severity
        self.factset = factset
        self.site = site
        self._rationale = " ".join(rule.rationale.split())
        self._by_roles = hosts_by_roles if hosts_by_roles is not None else {}
        # adapters by name, shared by the rules of an evaluation (the registry itself is cached,
        # advisor.adapters.adapters, but each call copies it); the rule's role once per rule
        self._adapters = adapters_by_name if adapters_by_name is not None else {}
        self._role: str | None = None
        self._role_known = False

    def hosts(self) -> list[HostFacts]:
        """Hosts whose roles match the rule (every host when the rule names no role); the list
        is computed once per set of roles for all the rules of an evaluation."""
        key = frozenset(self.rule.roles)
        found = self._by_roles.get(key)
        if found is None:
            found = [h for h in self.factset.hosts.values() if not key or not key.isdisjoint(h.roles)]
            self._by_roles[key] = found
        return found

    def _remediation_role(self) -> str | None:
        if not self._role_known:
            self._role, self._role_known = self.rule.remediation.role, True
        return self._role

    def facts(self, host: HostFacts | str, probe: str) -> dict[str, Any] | None:
        h = self._host(host)
        return h.facts(probe) if h else None

    def raw(self, host: HostFacts | str, probe: str) -> str:
        h = self._host(host)
        r = h.probes.get(probe) if h else None
        return r.raw if r else ""

    def _host(self, host: HostFacts | str) -> HostFacts | None:
        return host if isinstance(host, HostFacts) else self.factset.hosts.get(host)

    def unusable(self, host: HostFacts | str, probe: str) -> Iterator[Finding]:
        """An error finding when the host or the probe failed; nothing when it does not apply."""
        h = self._host(host)
        if h is None:
            return
        if not h.reachable:
            yield self.finding(h.name, FindingStatus.error, message="; ".join(h.errors) or "host unreachable")
            return
        r = h.probes.get(probe)
        if r is not None and r.status == ProbeStatus.error:
            yield self.finding(h.name, FindingStatus.error, message=f"probe {probe} failed: {r.message}")

    def missing(self, host: HostFacts | str, probe: str) -> Iterator[Finding]:
        """For a host without usable facts from ``probe``: an error finding when the host or the
        probe failed, a not_applicable finding otherwise."""
        errors = list(self.unusable(host, probe))
        if errors:
            yield from errors
            return
        h = self._host(host)
        if h is not None:
            r = h.probes.get(probe)
            why = r.message if r is not None and r.message else f"probe {probe} does not apply to this host"
            yield self.finding(h.name, FindingStatus.not_applicable, message=why)

    def finding(self, hosts: str | list[str], status: FindingStatus, *, observed: Any = None,
                expected: Any = None, evidence: Iterable[str] = (), subject: str | None = None,
                values: dict[str, Any] | None = None, message: str | None = None,
                severity: Severity | None = None, remediation_text: str | None = None,
                plannable: bool = True) -> Finding:
        """A finding of this rule. A failed one carries the changes its rule pack's
        ``remediation.changes`` templates give with these fields and the rule's ``values``
        (advisor.change_templates); a template that needs a value the rule did not give yields
        no change (the remediation text says what to do by hand). ``plannable=False`` gives a failed
        finding no changes at all: a fix the rule judges unsafe here is said, never planned."""
        rem = self.rule.remediation
        host_list = [hosts] if isinstance(hosts, str) else [str(h) for h in hosts]
        status = FindingStatus(status)
        fields = {"subject": subject, "observed": observed, "expected": expected, **(values or {})}
        changes = []
        if status == FindingStatus.fail and rem.changes and plannable:
            changes = finding_changes(self.rule, self.factset, host_list, fields, self.vars, self._adapters)
        # built without re-validation (a rule over 10,000 hosts builds as many): the types are
        # made right here
        remediation = trusted(Remediation, {
            "text": render_text(_interpolate(remediation_text if remediation_text is not None else rem.text,
                                             self.vars), fields),
            "role": self._remediation_role(),
        })
        return trusted(Finding, {
            "rule_id": self.rule.id,
            "title": self.rule.title,
            "hosts": host_list,
            "status": status,
            "severity": Severity(severity) if severity else self.severity,
            "observed": observed,
            "expected": expected,
            "evidence": [str(e) for e in evidence],
            "rationale": self._rationale,
            "references": list(self.rule.references),
            "remediation": remediation,
            "changes": changes,
            "subject": None if subject is None else str(subject),
            "message": None if message is None else str(message),
            "operator": self.rule.operator if self.rule.kind == "check" else "analytic",
        })


_interpolate = interpolate


# --------------------------------------------------------------------------- grouping and waivers


def apply_waivers(findings: list[Finding], waivers: list[Waiver], today: dt.date | None = None,
                  hosts: dict[str, Host] | None = None) -> list[Finding]:
    """A failed finding on hosts covered by a valid waiver becomes ``waived``; an expired waiver
    leaves it failed and says so. ``hosts`` (the site's, by name) let a waiver's host pattern name
    groups and roles; without them it matches names and globs."""
    by_name = hosts or {}
    out: list[Finding] = []
    for f in findings:
        if f.status != FindingStatus.fail or not waivers:
            out.append(f)
            continue
        waived: dict[str, Waiver] = {}
        expired: dict[str, Waiver] = {}
        for h in f.hosts:
            for w in waivers:
                if w.matches(f.rule_id, by_name.get(h, h)):
                    (expired if w.expired(today) else waived)[h] = w
                    if not w.expired(today):
                        break
        rest = [h for h in f.hosts if h not in waived]
        if rest:
            g = f.model_copy()  # hosts, changes and evidence are new lists below; the rest is read-only
            g.hosts = rest
            g.changes = [c for c in f.changes if c.host not in waived]
            g.evidence = [e for e in f.evidence if evidence_host(e) not in waived]
            exp = [h for h in rest if h in expired]
            if exp:
                w = expired[exp[0]]
                g.message = f"waiver expired on {w.expires} ({w.justification})"
            out.append(g)
        by_waiver: dict[int, list[str]] = {}
        for h, w in waived.items():
            by_waiver.setdefault(id(w), []).append(h)
        for hosts in by_waiver.values():
            w = waived[hosts[0]]
            g = f.model_copy()  # hosts, changes and evidence are new lists below; the rest is read-only
            g.hosts = hosts
            chosen = set(hosts)
            g.changes = [c for c in f.changes if c.host in chosen]
            g.status = FindingStatus.waived
            g.evidence = [e for e in f.evidence if evidence_host(e) in chosen]
            by = f", approved by {w.approved_by}" if w.approved_by else ""
            until = f", until {w.expires}" if w.expires else ""
            g.message = f"waived: {w.justification}{by}{until}"
            out.append(g)
    return out


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
    findings.sort(key=finding_sort_key)
    return Evaluation(findings, resolved)


def finding_sort_key(f: Finding) -> tuple:
    """Worst first: failures by severity, then errors, waived, passes."""
    status_rank = {"fail": 0, "error": 1, "waived": 2, "pass": 3, "not_applicable": 4}[f.status.value]
    return (status_rank, -f.severity.rank, f.rule_id, f.subject or "", ",".join(f.hosts))
