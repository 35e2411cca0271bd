"""Grouping of findings by key: what one rule says identically about many hosts becomes one
finding listing them, in time linear in the hosts (a dict keyed by what the finding says,
ordered sets of hosts and evidence lines), never by pairwise comparison."""

from __future__ import annotations

import json
from typing import Any

from advisor.findings import Finding


def value_key(value: Any) -> Any:
    """A hashable key that tells apart what ``json.dumps`` tells apart (``1``, ``1.0`` and ``True``
    are three keys); scalars are keyed by type and value, anything else by its sorted JSON."""
    if value is None or type(value) in (str, int, float, bool):
        return (type(value).__name__, value)
    return ("json", json.dumps(value, sort_keys=True, default=str))


def finding_key(f: Finding) -> tuple:
    """What a finding says, hosts and evidence apart: findings with the same key are merged."""
    rem = f.remediation
    return (f.rule_id, f.status.value, f.subject, value_key(f.observed), value_key(f.expected), f.message,
            f.severity.value, rem.text, rem.role, value_key(rem.vars))


def group_findings(findings: list[Finding]) -> list[Finding]:
    """Merge findings that say the same thing about several hosts; first-seen order, hosts and
    evidence lines each listed once, in the order they came."""
    merged: dict[tuple, tuple[Finding, dict[str, None], dict[str, None]]] = {}
    for f in findings:
        key = finding_key(f)
        entry = merged.get(key)
        if entry is None:
            merged[key] = (f, dict.fromkeys(f.hosts), dict.fromkeys(f.evidence))
        else:
            entry[1].update(dict.fromkeys(f.hosts))
            entry[2].update(dict.fromkeys(f.evidence))
    out = []
    for f, hosts, evidence in merged.values():  # each finding is the rule's own, not shared: set in place
        f.hosts = list(hosts)
        f.evidence = list(evidence)
        out.append(f)
    return out


def evidence_host(line: str) -> str:
    """The host an evidence line is about (lines read ``host: text``; host names hold no ':')."""
    return line.partition(":")[0]
