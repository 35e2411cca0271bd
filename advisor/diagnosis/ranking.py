"""A kept candidate as the report's cause: its id, title, severity, confidence and gain, and the
order causes are shown in (docs/diagnosis.md, "Ranking")."""

from __future__ import annotations

import hashlib

from advisor.diagnosis.candidates import BUFFER_FAMILY, Candidate, norm
from advisor.diagnosis.model import Cause
from advisor.findings import SEVERITY_ORDER

def _cause_id(c: Candidate) -> str:
    if c.kind == "change":
        basis = sorted(f"{ch.host}|{ch.adapter}|{ch.key}|{norm(ch.target)}" for ch in c.changes)
    else:
        basis = [repr(c.key)]
    return "c-" + hashlib.sha1("\n".join(basis).encode()).hexdigest()[:10]


def _severity(c: Candidate) -> str:
    pool = c.proposed_by + ([c.state] if c.state else [])
    if not pool:
        return "high" if (c.blame and c.blame.loss >= 0.001) else "medium"
    return max((f.severity.value for f in pool), key=SEVERITY_ORDER.index)


def _title(c: Candidate) -> tuple[str, str | None]:
    if c.state is not None:
        return c.state.title or c.state.rule_id, c.state.remediation.text or None
    if c.blame is not None:
        return c.blame.title(), c.blame.action()
    first = c.changes[0]
    if first.adapter == "firewall":
        n = len(c.changes)
        return f"remove {n} firewall rule{'s' if n != 1 else ''} that drop or rate-limit", None
    if first.adapter == "sysctl":
        primary = [ch for ch in c.changes if ch.key not in BUFFER_FAMILY] or c.changes
        before = sorted({norm(ch.runtime) or "?" for ch in primary})
        after = sorted({norm(ch.target) for ch in primary})
        return f"{primary[0].key} {'/'.join(before)} -> {'/'.join(after)}", None
    rules = sorted({f.title or f.rule_id for f in c.proposed_by})
    return "; ".join(rules), None


def _confidence(c: Candidate) -> float:
    if c.state is not None:
        return 0.9
    if c.blame is not None:
        return round(min(0.95, 0.5 + 0.45 * c.blame.share), 2)
    if c.judged:
        return round(0.5 + 0.45 * c.agree / c.judged, 2)
    return 0.6


def _gain(c: Candidate) -> float | None:
    g = 0.0
    known = False
    for p in c.predicted:
        if p.now is None or p.after is None:
            continue
        known = True
        if p.metric == "throughput":
            ref = p.inputs.get("expected_bps") or max(p.after, 1)
            base = p.inputs.get("after_plan", p.now)
            g += max(0.0, p.after - base) / ref
            if "with_the_other_causes" in p.inputs:  # its share of a path several causes hold
                g += max(0.0, p.inputs["with_the_other_causes"] - p.inputs["without_it"]) / ref
    if not known:
        return None
    if not any(p.metric == "throughput" and p.now is not None for p in c.predicted):
        g = sum(max(0.0, (p.after or 0) - (p.now or 0)) for p in c.predicted if p.metric == "efficiency")
    return round(g, 3)


def to_cause(c: Candidate) -> Cause:
    title, action = _title(c)
    hosts = sorted({ch.host for ch in c.changes} | set(c.blame.hosts if c.blame else [])
                   | set(c.state.hosts if c.state else []))
    evidence = [f"{f.rule_id} on {', '.join(f.hosts)}" + (f" [{f.subject}]" if f.subject else "")
                for f in c.proposed_by[:6]]
    if c.blame:
        evidence = c.blame.evidence + evidence
    if c.state:
        evidence = list(c.state.evidence[:5])
    return Cause(id=_cause_id(c), title=title, kind=c.kind, hosts=hosts, confidence=_confidence(c),
                 severity=_severity(c), changes=c.changes, action=action, explains=list(c.explains.values()),
                 predicted=c.predicted, gain=_gain(c), evidence=evidence)


def rank(c: Cause) -> tuple:
    quantified = c.gain is not None
    return (not quantified, -(round(c.gain, 2) if quantified else 0), c.kind != "change",
            -SEVERITY_ORDER.index(c.severity), c.title)


