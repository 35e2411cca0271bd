"""Check rules (YAML, advisor.rules.specs): one fact per host, or per item of a fact mapping,
compared with an expected value.

Evaluation is linear in the hosts and cheap per host: the rule's paths are split once, the
comparison's outcome is remembered per distinct observed value (a thousand workers holding the
same sysctl value are compared once), and outcomes are grouped by what they say as they are
produced, so a finding is built per group, not per host.
"""

from __future__ import annotations

import json
from typing import Any

from advisor.rules.comparisons import compare
from advisor.rules.rule_regex import HostBudgetSpent, MatchBudget
from advisor.rules.fact_paths import MISSING, get_path, split_path
from advisor.rules.finding_groups import value_key
from advisor.model.findings import Finding, FindingStatus
from advisor.rules.specs import Condition, RuleSpec, substitute_vars

#: the advisor.rules.engine.RuleContext a rule is evaluated in (not imported: the engine imports this module)
RuleContext = Any

_OK, _NA, _ERR = "ok", "not_applicable", "error"
#: observed values keyed by (type, value) directly (1, 1.0 and True stay three keys)
_SCALARS = frozenset((str, int, float, bool))


def fact_label(path: str) -> str:
    """A readable name for a fact path: the quoted key (a sysctl name) when there is one."""
    parts = split_path(path)
    dotted = [p for p in parts if "." in p]
    return dotted[-1] if dotted else path


def _evidence_values(rule: RuleSpec, item: Any) -> list[str]:
    """The values the rule's ``evidence`` paths point at, as text, each once (empty when none has
    a value); an evidence line is ``host: value``."""
    values: list[str] = []
    for path in rule.evidence:
        v = get_path(item, path)
        if v is MISSING or v in (None, "", []):
            continue
        if isinstance(v, list):
            values.extend(x if isinstance(x, str) else json.dumps(x) for x in v)
        else:
            values.append(str(v))
    return list(dict.fromkeys(values))


def _conditions_hold(conditions: list[Condition], item: Any, facts: Any, variables: dict[str, Any],
                     budget: MatchBudget | None = None) -> bool:
    return all(_condition_holds(c, item, facts, variables, budget) for c in conditions)


def _condition_holds(cond: Condition, item: Any, facts: Any, variables: dict[str, Any],
                     budget: MatchBudget | None = None) -> bool:
    value = get_path(item, cond.path)
    if value is MISSING:
        value = get_path(facts, cond.path)
    if value is MISSING and cond.operator not in ("present", "absent"):
        return False
    try:
        return compare(cond.operator, value, substitute_vars(cond.expected, variables), budget)
    except ValueError:
        return False


class _Groups:
    """Outcomes of one rule grouped by what they say: key -> [hosts, evidence lines, observed]."""

    def __init__(self) -> None:
        self.by_key: dict[tuple, list] = {}

    def add(self, key: tuple, host: str, observed: Any = None, evidence: list[str] | None = None) -> None:
        g = self.by_key.get(key)
        if g is None:
            g = self.by_key[key] = [[], [], observed]
        g[0].append(host)
        if evidence:
            g[1].extend(evidence)


#: one outcome of a rule on one host: (group key, observed value, evidence line suffixes or None)
_Outcome = tuple[tuple, Any, "list[str] | None"]


def evaluate_check(ctx: RuleContext) -> list[Finding]:
    """The rule's findings, one per group of hosts whose outcome says the same thing.

    A host's outcomes depend on its probe's facts alone (the host's name only prefixes evidence
    lines), and hosts that printed the same output share one facts object (advisor.model.output_store):
    the outcomes are computed once per distinct facts object, then listed for every host holding
    it."""
    rule = ctx.rule
    assert rule.probe and rule.fact and rule.operator
    expected = substitute_vars(rule.expected, ctx.vars)
    operator, probe = rule.operator, rule.probe
    fact = split_path(rule.fact)
    each = split_path(rule.for_each) if rule.for_each else None
    presence = operator in ("present", "absent")
    conditions = rule.conditions
    verdicts: dict[Any, tuple[bool | None, str | None]] = {}
    groups = _Groups()
    add = groups.add
    na_reason = f"probe {probe} does not apply to this host"
    label = fact_label(rule.fact)
    # a path the facts lack: the probe did not read it (an older capture, from before a rule asked
    # for the key: advisor.rules.probe_requests) or the host has no such item
    not_collected = f"{label} not collected: {rule.fact} is absent from the {probe} facts"
    # id(facts) -> outcomes; the facts objects are held by the fact set while this runs, so an id
    # is never reused for another object here
    by_facts: dict[int, list[_Outcome]] = {}

    uses_regex = operator == "regex" or any(c.operator == "regex" for c in rule.conditions)

    def judge(item: Any, subject: str | None, budget: MatchBudget | None) -> _Outcome:
        observed = get_path(item, fact)
        if (observed is MISSING or observed is None) and not presence:
            why = not_collected if observed is MISSING else f"{rule.fact} is not known (null)"
            return (_NA, subject, None, why, False), None, None
        plain = None if observed is MISSING else observed
        kind = type(plain)
        vkey = (kind, plain) if kind in _SCALARS else value_key(plain) if observed is not MISSING else ("missing",)
        verdict = verdicts.get(vkey)
        if verdict is None:
            try:
                verdict = (compare(operator, observed, expected, budget), None)
            except HostBudgetSpent as exc:  # this host's, not the value's: not remembered for others
                return (_ERR, subject, vkey, str(exc), True), plain, None
            except ValueError as exc:
                verdict = (None, str(exc))
            verdicts[vkey] = verdict
        ok, err = verdict
        if err is not None:
            return (_ERR, subject, vkey, err, True), plain, None
        suffixes = None
        if rule.evidence:  # without evidence paths, the group's lines are written once at the end
            suffixes = _evidence_values(rule, item) or [_value_line(label, plain)]
        return ("pass" if ok else "fail", subject, vkey, None, True), plain, suffixes

    def outcomes(facts: Any) -> list[_Outcome]:
        # the regex steps of this rule on this host (advisor.rules.rule_regex)
        budget = MatchBudget() if uses_regex else None
        if each is not None:
            collection = get_path(facts, each)
            if collection is MISSING or not collection:
                return [((_NA, None, None, f"no {rule.for_each} on this host", False), None, None)]
            items = collection.items() if isinstance(collection, dict) else enumerate(collection)
            return [judge(item, str(key), budget) for key, item in items
                    if _conditions_hold(conditions, item, facts, ctx.vars, budget)]
        if conditions and not _conditions_hold(conditions, facts, facts, ctx.vars, budget):
            return [((_NA, None, None, "condition not met", False), None, None)]
        return [judge(facts, None, budget)]

    for host in ctx.hosts():
        name = host.name
        if not host.reachable:
            add((_ERR, None, None, "; ".join(host.errors) or "host unreachable", False), name)
            continue
        result = host.probes.get(probe)
        if result is None:
            add((_NA, None, None, na_reason, False), name)
            continue
        status = result.status.value
        if status == _NA:
            add((_NA, None, None, result.message, False), name)
            continue
        if status == _ERR:
            add((_ERR, None, None, f"probe {probe} failed: {result.message}", False), name)
            continue
        facts = result.facts
        found = by_facts.get(id(facts))
        if found is None:
            found = by_facts[id(facts)] = outcomes(facts)
        for key, plain, suffixes in found:
            add(key, name, plain, [f"{name}: {s}" for s in suffixes] if suffixes else None)
    return [_finding(ctx, key, g, expected) for key, g in groups.by_key.items()]


def _finding(ctx: RuleContext, key: tuple, group: list, expected: Any) -> Finding:
    status, subject, _vkey, message, compared = key
    hosts, evidence, observed = group
    if not compared:
        return ctx.finding(hosts, FindingStatus(status), subject=subject, message=message)
    if status == _ERR:
        return ctx.finding(hosts, FindingStatus.error, subject=subject, observed=observed, expected=expected,
                           message=message)
    if not ctx.rule.evidence:
        evidence = _default_evidence(ctx.rule, hosts, observed)
    return ctx.finding(hosts, FindingStatus(status), observed=observed, expected=expected, subject=subject,
                       evidence=evidence)


def _value_line(label: str, observed: Any) -> str:
    """``label = value``: what a default evidence line says after ``host: ``."""
    return f"{label} = {observed if isinstance(observed, str) else json.dumps(observed)}"


def _default_evidence(rule: RuleSpec, hosts: list[str], observed: Any) -> list[str]:
    """``host: label = value``, one line per host."""
    line = _value_line(fact_label(rule.fact or ""), observed)
    return [f"{h}: {line}" for h in hosts]
