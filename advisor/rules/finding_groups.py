"""Grouping of findings by key: what one rule says identically about many hosts becomes one
finding listing them, in time linear in the hosts (a dict keyed by what the finding says,
ordered sets of hosts and evidence lines), never by pairwise comparison."""

from __future__ import annotations

import json
from typing import Any

from advisor.model.findings import Change, Finding


def value_key(value: Any) -> Any:
    """A hashable key that tells apart what ``json.dumps`` tells apart (``1``, ``1.0`` and ``True``
    are three keys); scalars are keyed by type and value, anything else by its sorted JSON."""
    if value is None or type(value) in (str, int, float, bool):
        return (type(value).__name__, value)
    return ("json", json.dumps(value, sort_keys=True, default=str))


def finding_key(f: Finding) -> tuple:
    """What a finding says, hosts, evidence and which host each change is for apart: findings
    with the same key are merged."""
    rem = f.remediation
    changes = tuple(sorted({(c.adapter, c.key, str(c.target)) for c in f.changes}))
    return (f.rule_id, f.status.value, f.subject, value_key(f.observed), value_key(f.expected), f.message,
            f.severity.value, rem.text, rem.role, changes)


def change_key(c: Change) -> tuple:
    """One change's identity: the same setting to the same value on the same host."""
    return (c.host, c.adapter, c.key, value_key(c.target), value_key(c.runtime), value_key(c.persisted), c.scope)


def group_findings(findings: list[Finding]) -> list[Finding]:
    """Merge findings that say the same thing about several hosts; first-seen order, hosts and
    evidence lines each listed once, in the order they came."""
    merged: dict[tuple, tuple[Finding, dict[str, None], dict[str, None], dict[tuple, Change]]] = {}
    for f in findings:
        key = finding_key(f)
        entry = merged.get(key)
        changes = {change_key(c): c for c in f.changes}
        if entry is None:
            merged[key] = (f, dict.fromkeys(f.hosts), dict.fromkeys(f.evidence), changes)
        else:
            entry[1].update(dict.fromkeys(f.hosts))
            entry[2].update(dict.fromkeys(f.evidence))
            for k, c in changes.items():
                entry[3].setdefault(k, c)
    out = []
    for f, hosts, evidence, changes in merged.values():  # each finding is the rule's own, not shared: set in place
        f.hosts = list(hosts)
        f.evidence = list(evidence)
        f.changes = list(changes.values())
        out.append(f)
    return out


def evidence_host(line: str) -> str:
    """The host an evidence line is about (lines read ``host: text``; host names hold no ':')."""
    return line.partition(":")[0]
