"""What a rule sees (``RuleContext``), and the registry of analytic rules: Python functions
registered with ``@analytic_rule(id)``, whose metadata lives in a YAML pack (``kind: python``).

The analytic rules (advisor.rules.analytic) import this module; the engine (advisor.rules.engine)
imports both. Nothing here imports the engine.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from advisor.util.errors import RuleDefinitionError
from advisor.model.facts import FactSet, HostFacts, ProbeStatus
from advisor.model.findings import Finding, FindingStatus, Remediation, Severity
from advisor.rules.change_templates import render_text
from advisor.rules.finding_changes import finding_changes
from advisor.rules.profile_vars import interpolate
from advisor.rules.specs import RuleSpec
from advisor.site.model import Site
from advisor.util.trusted_models import trusted

AnalyticFunction = Callable[["RuleContext"], Iterable[Finding]]
_ANALYTIC: dict[str, AnalyticFunction] = {}


def analytic_rule(rule_id: str) -> Callable[[AnalyticFunction], AnalyticFunction]:
    """Register a Python rule under ``rule_id`` (its metadata lives in a YAML pack)."""

    def register(fn: AnalyticFunction) -> AnalyticFunction:
        if rule_id in _ANALYTIC and _ANALYTIC[rule_id] is not fn:
            raise RuleDefinitionError(f"analytic rule {rule_id} registered twice")
        _ANALYTIC[rule_id] = fn
        return fn

    return register


def analytic_functions() -> dict[str, AnalyticFunction]:
    """Every registered analytic rule: the shipped ones (advisor.rules.analytic, whose modules
    register theirs when that package is imported, as the engine does) and any registered since."""
    return dict(_ANALYTIC)



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
        (advisor.rules.change_templates); a template that needs a value the rule did not give yields
        no change (the remediation text says what to do by hand). ``plannable=False`` gives a failed
        finding no changes at all: a fix the rule judges unsafe here is said, never planned."""
        rem = self.rule.remediation
        host_list = [hosts] if isinstance(hosts, str) else [str(h) for h in hosts]
        status = FindingStatus(status)
        # {hosts}: the finding's hosts, comma-separated, for a command that names them (mmchconfig -N)
        fields = {"subject": subject, "observed": observed, "expected": expected, "hosts": ",".join(host_list),
                  **(values or {})}
        changes = []
        if status == FindingStatus.fail and rem.changes and plannable:
            changes = finding_changes(self.rule, self.factset, host_list, fields, self.vars, self._adapters)
        # built without re-validation (a rule over 10,000 hosts builds as many): the types are
        # made right here
        remediation = trusted(Remediation, {
            "text": render_text(interpolate(remediation_text if remediation_text is not None else rem.text,
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
            "unit": self.rule.unit,
            "failure": None,  # what is wrong, once the hosts are final (advisor.rules.engine)
        })
