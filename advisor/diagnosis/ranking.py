"""A kept candidate as the report's cause: its id, title, severity, confidence and gain, and the
order causes are shown in (docs/diagnosis.md, "Ranking")."""

from __future__ import annotations

import hashlib

from advisor.diagnosis.candidates import BUFFER_FAMILY, Candidate, norm, ref, refkey
from advisor.diagnosis.report_types import Cause
from advisor.model.findings import SEVERITY_ORDER

def _cause_id(c: Candidate) -> str:
    if c.kind == "change":
        basis = sorted(f"{ch.host}|{ch.adapter}|{ch.key}|{norm(ch.target)}" for ch in c.changes)
    else:
        basis = [repr(c.key)]
    return "c-" + hashlib.sha1("\n".join(basis).encode()).hexdigest()[:10]


def _severity(c: Candidate) -> str:
    pool = c.proposed_by + (c.folded or ([c.state] if c.state else []))
    if not pool:
        return "high" if (c.blame and c.blame.loss >= 0.001) else "medium"
    return max((f.severity.value for f in pool), key=SEVERITY_ORDER.index)


def _title(c: Candidate) -> tuple[str, str | None]:
    if c.state is not None:
        return _what_is_wrong(c.state), c.state.remediation.text or None
    if c.blame is not None:
        return c.blame.title(), c.blame.action()
    if c.by_hand is not None:
        return c.by_hand.title, c.by_hand.action
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


#: a cause's confidence is scaled by this when some of its predictions are "at most" (no model
#: explains the path as measured)
AT_MOST_FACTOR = 0.75


def _what_is_wrong(f) -> str:
    """A measured state in the words of its rule's failure (what is wrong, on what object), never
    the rule's title, which states the healthy condition."""
    said = getattr(f, "failure", None)
    if said:
        return said
    on = ", ".join(f.hosts)
    return f"{f.subject} on {on}: {f.rule_id} failed" if f.subject else f"{f.rule_id} failed on {on}"


def _confidence(c: Candidate) -> float:
    if c.state is not None:
        return 0.9
    if c.by_hand is not None:
        return c.by_hand.confidence
    if c.blame is not None:
        base = min(0.95, 0.5 + 0.45 * c.blame.share)
    elif c.judged:
        base = 0.5 + 0.45 * c.agree / c.judged
    else:
        base = 0.6
    if any("at_most" in p.inputs for p in c.predicted):
        base *= AT_MOST_FACTOR
    return round(base, 2)


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


def cause_id_of(c: Candidate) -> str:
    return _cause_id(c)


def to_cause(c: Candidate, ids: dict[tuple, str] | None = None) -> Cause:
    """``ids``: candidate key -> cause id of every kept candidate (names the causes that hold what
    a prediction leaves: ``inputs.then_held_by``)."""
    title, action = _title(c)
    hosts = sorted({ch.host for ch in c.changes} | set(c.blame.hosts if c.blame else [])
                   | set(c.state.hosts if c.state else []) | {h for f in c.folded for h in f.hosts}
                   | set(c.by_hand.hosts if c.by_hand else []))
    evidence = [f"{f.rule_id} on {', '.join(f.hosts)}" + (f" [{f.subject}]" if f.subject else "")
                for f in c.proposed_by[:6]]
    if c.blame:
        evidence = c.blame.evidence + c.blame.nic_evidence + evidence
    if c.by_hand:
        evidence = c.by_hand.evidence + evidence
    if c.state:
        folded = c.folded or [c.state]
        evidence = [line for f in folded for line in f.evidence[: max(1, 6 // len(folded))]]
        if len(folded) > 1:
            evidence.append("also: " + ", ".join(f.rule_id for f in folded[1:]))
    if ids is not None:
        for p in c.predicted:
            if "then_held_by" in p.inputs:
                p.inputs["then_held_by"] = [ids[k] for k in p.inputs["then_held_by"] if k in ids]
    acts_on = {refkey(f): ref(f) for f in c.proposed_by + (c.folded or ([c.state] if c.state else []))}
    return Cause(id=_cause_id(c), title=title, kind=c.kind, hosts=hosts, confidence=_confidence(c),
                 severity=_severity(c), changes=c.changes, action=action, explains=list(c.explains.values()),
                 findings=list(acts_on.values()),
                 predicted=c.predicted, gain=_gain(c), evidence=evidence)


def rank(c: Cause) -> tuple:
    quantified = c.gain is not None
    return (not quantified, -(round(c.gain, 2) if quantified else 0), c.kind != "change",
            -SEVERITY_ORDER.index(c.severity), c.title)


