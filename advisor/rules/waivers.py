"""Waivers over findings: a failed finding on hosts a valid waiver covers becomes ``waived``."""

from __future__ import annotations

import datetime as dt

from advisor.model.findings import Finding, FindingStatus
from advisor.rules.finding_groups import evidence_host
from advisor.site.model import Host, Waiver


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
