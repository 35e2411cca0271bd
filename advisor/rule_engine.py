"""The rule engine: facts in, findings out.

Check rules (YAML, advisor.rule_specs) compare one fact per host (or per item of a fact
mapping) with an expected value; analytic rules are Python functions registered with
``@analytic_rule(id)`` that reason across facts or hosts. Rules never run commands.
"""

from __future__ import annotations

import datetime as dt
import importlib
import json
import math
import pkgutil
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from advisor.errors import RuleDefinitionError
from advisor.fact_paths import MISSING, get_path
from advisor.facts import FactSet, HostFacts, ProbeStatus
from advisor.change_templates import render_text
from advisor.finding_changes import finding_changes
from advisor.findings import Finding, FindingStatus, Remediation, Severity
from advisor.host_failures import collapse_host_failures
from advisor.rule_specs import (
    Condition,
    ResolvedProfile,
    RuleCatalog,
    RuleSpec,
    load_catalog,
    resolve_profiles,
    substitute_vars,
)
from advisor.site import Site, Waiver

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


# --------------------------------------------------------------------------- comparisons


def _number(v: Any) -> float | None:
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        try:
            f = float(v.strip())
        except ValueError:
            return None
        return f if math.isfinite(f) else None
    return None


def _equal(a: Any, b: Any) -> bool:
    na, nb = _number(a), _number(b)
    if na is not None and nb is not None:  # booleans compare as 0/1
        return na == nb
    if isinstance(a, str) and isinstance(b, str):
        return " ".join(a.split()).lower() == " ".join(b.split()).lower()
    return a == b


def compare(operator: str, observed: Any, expected: Any) -> bool:
    """Evaluate ``observed <operator> expected``; raises ValueError when not comparable."""
    if operator == "present":
        return observed is not MISSING and observed is not None
    if operator == "absent":
        return observed is MISSING or observed is None
    if operator == "eq":
        return _equal(observed, expected)
    if operator == "ne":
        return not _equal(observed, expected)
    if operator in ("lt", "le", "gt", "ge"):
        a, b = _number(observed), _number(expected)
        if a is None or b is None:
            raise ValueError(f"cannot compare {observed!r} {operator} {expected!r} as numbers")
        return {"lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b}[operator]
    if operator in ("in", "not_in"):
        if not isinstance(expected, (list, tuple, set)):
            raise ValueError(f"'{operator}' needs a list, got {expected!r}")
        found = any(_equal(observed, e) for e in expected)
        return found if operator == "in" else not found
    if operator == "regex":
        return re.search(str(expected), str(observed)) is not None
    if operator == "between":
        if not isinstance(expected, (list, tuple)) or len(expected) != 2:
            raise ValueError(f"'between' needs [low, high], got {expected!r}")
        a, lo, hi = _number(observed), _number(expected[0]), _number(expected[1])
        if a is None or lo is None or hi is None:
            raise ValueError(f"cannot compare {observed!r} between {expected!r} as numbers")
        return lo <= a <= hi
    raise ValueError(f"unknown operator {operator!r}")


# --------------------------------------------------------------------------- context


class RuleContext:
    """What a rule (check or analytic) sees: its metadata, variables, the facts and the site."""

    def __init__(self, rule: RuleSpec, variables: dict[str, Any], severity: Severity,
                 factset: FactSet, site: Site | None):
        self.rule = rule
        self.vars = variables
        self.severity = severity
        self.factset = factset
        self.site = site

    def hosts(self) -> list[HostFacts]:
        """Hosts whose roles match the rule (every host when the rule names no role)."""
        wanted = set(self.rule.roles)
        return [h for h in self.factset.hosts.values() if not wanted or wanted & set(h.roles)]

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
        host_list = [hosts] if isinstance(hosts, str) else list(hosts)
        fields = {"subject": subject, "observed": observed, "expected": expected, **(values or {})}
        changes = []
        if status == FindingStatus.fail and rem.changes and plannable:
            changes = finding_changes(self.rule, self.factset, host_list, fields, self.vars)
        remediation = Remediation(
            text=render_text(_interpolate(remediation_text if remediation_text is not None else rem.text, self.vars),
                             fields),
            role=rem.role,
        )
        return Finding(
            rule_id=self.rule.id,
            title=self.rule.title,
            hosts=host_list,
            status=status,
            severity=severity or self.severity,
            observed=observed,
            expected=expected,
            evidence=list(evidence),
            rationale=" ".join(self.rule.rationale.split()),
            references=list(self.rule.references),
            remediation=remediation,
            changes=changes,
            subject=subject,
            message=message,
        )


_INLINE_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _interpolate(text: str, variables: dict[str, Any]) -> str:
    """``${var}`` inside a sentence becomes the variable's value (unknown names stay as written)."""
    return _INLINE_VAR.sub(lambda m: str(variables.get(m.group(1), m.group(0))), text or "")


# --------------------------------------------------------------------------- check rules


def _evidence_lines(rule: RuleSpec, host: str, item: Any, observed: Any) -> list[str]:
    lines = []
    for path in rule.evidence:
        v = get_path(item, path)
        if v is MISSING or v in (None, "", []):
            continue
        if isinstance(v, list):
            lines.extend(f"{host}: {x if isinstance(x, str) else json.dumps(x)}" for x in v)
        else:
            lines.append(f"{host}: {v}")
    if not lines:
        value = observed if isinstance(observed, str) else json.dumps(observed)
        lines.append(f"{host}: {fact_label(rule.fact or '')} = {value}")
    return lines


def fact_label(path: str) -> str:
    """A readable name for a fact path: the quoted key (a sysctl name) when there is one."""
    from advisor.fact_paths import split_path

    parts = split_path(path)
    dotted = [p for p in parts if "." in p]
    return dotted[-1] if dotted else path


def _condition_holds(cond: Condition | None, item: Any, facts: Any, variables: dict[str, Any]) -> bool:
    if cond is None:
        return True
    value = get_path(item, cond.path)
    if value is MISSING:
        value = get_path(facts, cond.path)
    if value is MISSING and cond.operator not in ("present", "absent"):
        return False
    try:
        return compare(cond.operator, value, substitute_vars(cond.expected, variables))
    except ValueError:
        return False


def evaluate_check(ctx: RuleContext) -> Iterator[Finding]:
    rule = ctx.rule
    assert rule.probe and rule.fact and rule.operator
    expected = substitute_vars(rule.expected, ctx.vars)
    for host in ctx.hosts():
        if not host.reachable:
            yield ctx.finding(host.name, FindingStatus.error, message="; ".join(host.errors) or "host unreachable")
            continue
        result = host.probes.get(rule.probe)
        if result is None or result.status == ProbeStatus.not_applicable:
            why = result.message if result else f"probe {rule.probe} does not apply to this host"
            yield ctx.finding(host.name, FindingStatus.not_applicable, message=why)
            continue
        if result.status == ProbeStatus.error:
            yield ctx.finding(host.name, FindingStatus.error, message=f"probe {rule.probe} failed: {result.message}")
            continue
        facts = result.facts
        if rule.for_each:
            collection = get_path(facts, rule.for_each)
            if collection is MISSING or not collection:
                yield ctx.finding(host.name, FindingStatus.not_applicable, message=f"no {rule.for_each} on this host")
                continue
            items = collection.items() if isinstance(collection, dict) else enumerate(collection)
            for key, item in items:
                if not _condition_holds(rule.where, item, facts, ctx.vars):
                    continue
                yield _check_one(ctx, host.name, item, expected, subject=str(key))
        else:
            if not _condition_holds(rule.where, facts, facts, ctx.vars):
                yield ctx.finding(host.name, FindingStatus.not_applicable, message="condition not met")
                continue
            yield _check_one(ctx, host.name, facts, expected, subject=None)


def _check_one(ctx: RuleContext, host: str, item: Any, expected: Any, subject: str | None) -> Finding:
    rule = ctx.rule
    observed = get_path(item, rule.fact)
    if (observed is MISSING or observed is None) and rule.operator not in ("present", "absent"):
        why = "absent" if observed is MISSING else "not known (null)"
        return ctx.finding(host, FindingStatus.not_applicable, subject=subject, message=f"{rule.fact} is {why}")
    try:
        ok = compare(rule.operator, observed, expected)
    except (ValueError, re.error) as exc:
        return ctx.finding(host, FindingStatus.error, subject=subject, observed=_plain(observed),
                           expected=expected, message=str(exc))
    return ctx.finding(
        host,
        FindingStatus.passed if ok else FindingStatus.fail,
        observed=_plain(observed),
        expected=expected,
        subject=subject,
        evidence=_evidence_lines(rule, host, item, _plain(observed)),
    )


def _plain(v: Any) -> Any:
    return None if v is MISSING else v


# --------------------------------------------------------------------------- grouping and waivers


def _group(findings: list[Finding]) -> list[Finding]:
    """Merge findings of one rule that say the same thing about several hosts."""
    merged: dict[str, Finding] = {}
    order: list[str] = []
    for f in findings:
        key = json.dumps([f.rule_id, f.status.value, f.subject, f.observed, f.expected, f.message,
                          f.severity.value, f.remediation.model_dump(),
                          sorted((c.adapter, c.key, str(c.target)) for c in f.changes)], sort_keys=True, default=str)
        if key in merged:
            m = merged[key]
            m.hosts.extend(h for h in f.hosts if h not in m.hosts)
            m.evidence.extend(e for e in f.evidence if e not in m.evidence)
            m.changes.extend(c for c in f.changes if c not in m.changes)
        else:
            merged[key] = f.model_copy(deep=True)
            order.append(key)
    return [merged[k] for k in order]


def apply_waivers(findings: list[Finding], waivers: list[Waiver], today: dt.date | None = None) -> list[Finding]:
    """A failed finding on hosts covered by a valid waiver becomes ``waived``; an expired waiver
    leaves it failed and says so."""
    out: list[Finding] = []
    for f in findings:
        if f.status != FindingStatus.fail or not waivers:
            out.append(f)
            continue
        waived: dict[str, Waiver] = {}
        expired: dict[str, Waiver] = {}
        for h in f.hosts:
            for w in waivers:
                if w.matches(f.rule_id, h):
                    (expired if w.expired(today) else waived)[h] = w
                    if not w.expired(today):
                        break
        rest = [h for h in f.hosts if h not in waived]
        if rest:
            g = f.model_copy(deep=True)
            g.hosts = rest
            g.changes = [c for c in f.changes if c.host in rest]
            g.evidence = [e for e in f.evidence if not any(e.startswith(f"{h}:") for h in waived)]
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
            g = f.model_copy(deep=True)
            g.hosts = hosts
            g.changes = [c for c in f.changes if c.host in hosts]
            g.status = FindingStatus.waived
            g.evidence = [e for e in f.evidence if any(e.startswith(f"{h}:") for h in hosts)]
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
    catalog = catalog or load_catalog()
    names = profiles or (site.profiles if site else None) or ["generic"]
    resolved = resolve_profiles(names, catalog, overrides=site.vars if site else None)
    functions = analytic_functions()
    findings: list[Finding] = []
    for rid in resolved.rule_ids:
        rule = catalog.rules[rid]
        if rule_filter and not rule_filter(rule):
            continue
        severity = resolved.severity.get(rid, rule.severity)
        ctx = RuleContext(rule, resolved.vars, severity, factset, site)
        if rule.kind == "python":
            fn = functions.get(rule.function or "")
            if fn is None:
                raise RuleDefinitionError(f"{rule.pack}: rule {rid} names unregistered function {rule.function!r}")
            produced = list(fn(ctx))
        else:
            produced = list(evaluate_check(ctx))
        findings.extend(_group(produced))
    findings = collapse_host_failures(findings, factset)
    findings = apply_waivers(findings, site.waivers if site else [], today)
    findings.sort(key=finding_sort_key)
    return Evaluation(findings, resolved)


def finding_sort_key(f: Finding) -> tuple:
    """Worst first: failures by severity, then errors, waived, passes."""
    status_rank = {"fail": 0, "error": 1, "waived": 2, "pass": 3, "not_applicable": 4}[f.status.value]
    return (status_rank, -f.severity.rank, f.rule_id, f.subject or "", ",".join(f.hosts))
