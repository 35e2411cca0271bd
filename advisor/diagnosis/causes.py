"""Causes: the failed findings folded into the things to fix (docs/diagnosis.md).

A cause is one thing to change (the changes its findings propose, grouped by setting and target)
or one thing to repair by hand (packet loss localised across paths, a measured state such as a
failing disk). Each cause is kept only when it explains a measured symptom: a slow path the path
model (advisor/diagnosis/paths.py) says it lifts, a failed test it unblocks, an active-test
efficiency that follows from such a path, or a measured state. Failed findings that explain no
symptom are hygiene; symptoms that no cause explains are unexplained, never dropped.

Which findings are symptoms is the rule packs' word, through tags: ``symptom`` (a measured effect:
a slow path, a failed test, a low efficiency), ``derived`` (an analysis of symptoms whose proposed
changes are candidates like any other: asymmetry, loss, buffer limits) and ``state`` (a measured
condition that is itself a repair by hand: a failing disk, a service down). Nothing here names a
rule, a storage system or a role.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from advisor.diagnosis.efficiency import efficiency_predictions
from advisor.diagnosis.localise import LossBlame, localise_loss
from advisor.diagnosis.model import Cause, Diagnosis, FindingRef, PlannedSetting, Predicted, SetAside
from advisor.diagnosis.paths import INCONCLUSIVE, Fix, FixIndex, HostFacts, PathState, path_state, predict
from advisor.findings import SEVERITY_ORDER, Finding, FindingStatus

#: a prediction counts as lifting a path when it beats the measurement by this factor
LIFT = 1.10
#: the kernel's limit classes each kind of fix acts on (a cause whose paths agree is confident)
_FIX_CLASS = {"sack": {"loss"}, "loss": {"loss"}, "loss_recv": {"loss"}, "rmem": {"receiver_window"},
              "wmem": {"sender_buffer"}, "wscale": {"receiver_window", "sender_buffer"}, "firewall": {"policer", "loss"}}
_BUFFER_FAMILY = {"net.core.rmem_max": "net.ipv4.tcp_rmem", "net.core.wmem_max": "net.ipv4.tcp_wmem"}


@dataclass
class DiagnosisInput:
    findings: list[Finding]
    mesh: dict[str, Any] | None
    efficiency: dict[str, Any] | None
    #: host -> probe -> facts
    facts: dict[str, HostFacts]
    #: rule id -> its tags
    tags: dict[str, set[str]]
    #: host -> address (which firewall rules meet which peer)
    addresses: dict[str, str] = field(default_factory=dict)


@dataclass
class _Candidate:
    key: tuple
    kind: str  # change | by_hand
    changes: list[PlannedSetting] = field(default_factory=list)
    proposed_by: list[Finding] = field(default_factory=list)
    fixes: set[Fix] = field(default_factory=set)
    blame: LossBlame | None = None
    state: Finding | None = None
    explains: dict[tuple, FindingRef] = field(default_factory=dict)
    predicted: list[Predicted] = field(default_factory=list)
    agree: int = 0
    judged: int = 0


def _norm(v: Any) -> str:
    return " ".join(str(v).split()).lower() if v is not None else ""


def _ref(f: Finding) -> FindingRef:
    return FindingRef(rule_id=f.rule_id, subject=f.subject, hosts=list(f.hosts))


def _refkey(f: Finding) -> tuple:
    return f.rule_id, f.subject or "", tuple(f.hosts)


def fix_of(setting: PlannedSetting) -> Fix | None:
    """The path model's view of a change (None: the change does not act on a TCP path)."""
    k, t = setting.key, _norm(setting.target)
    if setting.adapter == "firewall" and t == "absent":
        return Fix("firewall", setting.host)
    if setting.adapter != "sysctl":
        return None
    if k == "net.ipv4.tcp_sack" and t == "1":
        return Fix("sack", setting.host)
    if k == "net.ipv4.tcp_window_scaling" and t == "1":
        return Fix("wscale", setting.host)
    if k in ("net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"):
        try:
            return Fix("rmem" if k.endswith("rmem") else "wmem", setting.host, float(t.split()[-1]))
        except (ValueError, IndexError):
            return None
    return None


def _group_key(f: Finding, c) -> tuple:
    if c.adapter == "sysctl":
        family = _BUFFER_FAMILY.get(c.key, c.key)
        return ("sysctl", family) if family != c.key else ("sysctl", c.key, _norm(c.target))
    if c.adapter == "firewall":
        return ("firewall", c.host)
    return (c.adapter, f.rule_id)


def _change_candidates(failed: list[Finding]) -> list[_Candidate]:
    """The proposed changes, grouped into candidate causes: one setting to one target across hosts
    (a buffer maximum joins its TCP buffer), one host's firewall, one rule's changes elsewhere."""
    groups: dict[tuple, _Candidate] = {}
    seen: set[tuple] = set()
    for f in failed:
        for c in f.changes:
            if c.runtime is not None and _norm(c.runtime) == _norm(c.target):
                continue  # nothing to change at run time: persistence is the planner's business
            key = _group_key(f, c)
            cand = groups.setdefault(key, _Candidate(key=key, kind="change"))
            slot = (c.host, c.adapter, c.key)
            if slot not in seen:
                seen.add(slot)
                setting = PlannedSetting(host=c.host, adapter=c.adapter, key=c.key, target=c.target, runtime=c.runtime)
                cand.changes.append(setting)
                fx = fix_of(setting)
                if fx:
                    cand.fixes.add(fx)
            if all(g is not f for g in cand.proposed_by):
                cand.proposed_by.append(f)
    # a buffer family keyed without a target: split by target of its TCP key so that hosts raised
    # to different sizes by different rules stay one cause only when the size agrees
    return list(groups.values())


def _path_subjects(f: Finding, states: dict[str, PathState]) -> list[str]:
    if f.subject and f.subject in states:
        return [f.subject]
    return []


def diagnose(inp: DiagnosisInput) -> Diagnosis:
    failed = [f for f in inp.findings if f.status == FindingStatus.fail]
    paths = [p for p in (inp.mesh or {}).get("paths") or [] if isinstance(p, dict)]
    states: dict[str, PathState] = {}
    views: dict = {}
    for p in paths:
        st = path_state(p, inp.facts, inp.addresses, views)
        if st:
            states[st.subject] = st
    failed_paths = {f"{p.get('src')}->{p.get('dst')}": p for p in paths if p.get("status") != "ok"}

    def tagged(f: Finding, tag: str) -> bool:
        return tag in inp.tags.get(f.rule_id, set())

    symptoms = [f for f in failed if tagged(f, "symptom")]
    derived = [f for f in failed if tagged(f, "derived")]
    eff_symptoms = [f for f in symptoms if tagged(f, "efficiency")]
    path_symptoms: dict[str, list[Finding]] = {}
    for f in symptoms + derived:
        if f.subject in states or f.subject in failed_paths:
            path_symptoms.setdefault(f.subject, []).append(f)
    slow = {s for s, fs in path_symptoms.items() if s in states and any(tagged(f, "symptom") for f in fs)}
    inconclusive = {s for s in slow if states[s].limited_by in INCONCLUSIVE}
    conclusive = slow - inconclusive

    cands = _change_candidates([f for f in failed if not tagged(f, "state")])
    blames = localise_loss([states[s] for s in conclusive], list(states.values()))
    for b in blames:
        fixes = {Fix("loss" if b.side == "send" else "loss_recv", h) for h in b.hosts}
        cands.append(_Candidate(key=("loss", b.side, tuple(b.hosts)), kind="by_hand", fixes=fixes, blame=b))

    by_host: dict[str, list[str]] = {}
    for s in conclusive:
        by_host.setdefault(states[s].src, []).append(s)
        by_host.setdefault(states[s].dst, []).append(s)
    for cand in cands:
        _judge_paths(cand, by_host, states, path_symptoms)
        _judge_failed_tests(cand, failed_paths, path_symptoms, inp.facts)
        cand.predicted += efficiency_predictions(inp.efficiency, states, cand.fixes, eff_symptoms, cand.explains, _ref)

    kept = [c for c in cands if c.explains]
    # what a by-hand repair buys is judged after the planned changes: their fixes stay in place
    plan_fixes = {fx for c in kept if c.kind == "change" for fx in c.fixes}
    for c in kept:
        if c.kind == "by_hand" and c.blame is not None:
            _after_plan(c, states, plan_fixes, inp.efficiency)
    for f in failed:
        if tagged(f, "state"):
            c = _Candidate(key=("state", f.rule_id, f.subject or "", tuple(f.hosts)), kind="by_hand", state=f)
            c.explains[_refkey(f)] = _ref(f)
            kept.append(c)
    # derived findings that name hosts rather than a path: explained by the causes of their hosts' slow paths
    causes_of_host: dict[str, dict[int, _Candidate]] = {}
    for c in kept:
        for p in c.predicted:
            if p.metric == "throughput" and p.subject in states:
                st = states[p.subject]
                causes_of_host.setdefault(st.src, {})[id(c)] = c
                causes_of_host.setdefault(st.dst, {})[id(c)] = c
    for f in derived:
        if f.subject in states or f.subject in failed_paths:
            continue
        owners = {k: c for h in f.hosts for k, c in causes_of_host.get(h, {}).items()}
        for c in owners.values():
            c.explains[_refkey(f)] = _ref(f)

    causes = [_to_cause(c) for c in kept]
    causes.sort(key=_rank)
    in_cause = {k for c in kept for k in c.explains} | {_refkey(f) for c in kept for f in c.proposed_by}
    unexplained = [_ref(f) for f in symptoms + derived if _refkey(f) not in in_cause]
    hygiene = [_ref(f) for f in failed if _refkey(f) not in in_cause
               and not (tagged(f, "symptom") or tagged(f, "derived"))]
    all_changes = [ch for c in kept if c.kind == "change" for ch in c.changes]
    hygiene_changes = [PlannedSetting(host=ch.host, adapter=ch.adapter, key=ch.key, target=ch.target, runtime=ch.runtime)
                       for f in failed if _refkey(f) not in in_cause for ch in f.changes]
    # what only an analysis of symptoms proposed, and no kept cause holds, is never planned
    kept_slots = {(ch.host, ch.adapter, ch.key) for c in kept for ch in c.changes}
    other_slots = {(ch.host, ch.adapter, ch.key) for f in failed if not tagged(f, "derived") for ch in f.changes}
    set_aside = {}
    for f in derived:
        for ch in f.changes:
            slot = (ch.host, ch.adapter, ch.key)
            if slot in kept_slots or slot in other_slots or slot in set_aside:
                continue
            same = ch.runtime is not None and _norm(ch.runtime) == _norm(ch.target)
            why = (f"already {ch.target} at run time" if same else
                   "no measured symptom follows from it (the path model: docs/diagnosis.md)")
            set_aside[slot] = SetAside(host=ch.host, adapter=ch.adapter, key=ch.key, target=ch.target, rule_id=f.rule_id,
                                       reason=f"{why}; proposed only by {f.rule_id}, which no cause supports")
    hygiene_changes = [ch for ch in hygiene_changes if (ch.host, ch.adapter, ch.key) not in set_aside]
    return Diagnosis(causes=causes, hygiene=hygiene, unexplained=unexplained, set_aside=list(set_aside.values()),
                     plan_prediction=plan_prediction(inp, all_changes + hygiene_changes, states))


def _judge_paths(cand: _Candidate, by_host: dict[str, list[str]], states: dict[str, PathState],
                 path_symptoms: dict[str, list[Finding]]) -> None:
    """The slow paths a candidate lifts: only paths with an end among its fixes' hosts can be
    (``by_host``: host -> its conclusive slow paths), so the work is linear in paths."""
    if not cand.fixes:
        return
    classes = set().union(*(_FIX_CLASS.get(f.kind, set()) for f in cand.fixes))
    near = sorted({s for f in cand.fixes for s in by_host.get(f.host, ())})
    idx = FixIndex(cand.fixes)
    for s in near:
        st = states[s]
        pr = predict(st, idx)
        if pr.model == "measured" or pr.bps < st.measured_bps * LIFT:
            continue
        cand.predicted.append(Predicted(metric="throughput", subject=s, now=round(st.measured_bps),
                                        after=round(pr.bps), unit="bps", model=pr.model,
                                        inputs={**pr.inputs, "expected_bps": st.expected_bps}))
        for f in path_symptoms.get(s, []):
            cand.explains[_refkey(f)] = _ref(f)
        if st.limited_by and st.limited_by != "unknown":
            cand.judged += 1
            cand.agree += st.limited_by in classes


def _after_plan(cand: _Candidate, states: dict[str, PathState], plan_fixes: set[Fix], efficiency: dict | None) -> None:
    """Re-predict a by-hand cause's paths with the planned changes made: ``after`` is the rate with
    both, ``inputs.after_plan`` the rate with the plan alone (what the cause adds is the difference)."""
    out = []
    plan_idx, both_idx = FixIndex(plan_fixes), FixIndex(plan_fixes | cand.fixes)
    for p in cand.predicted:
        st = states.get(p.subject)
        if p.metric != "throughput" or st is None:
            out.append(p)
            continue
        with_plan = predict(st, plan_idx)
        both = predict(st, both_idx)
        after = max(both.bps, with_plan.bps)
        out.append(Predicted(metric="throughput", subject=p.subject, now=p.now, after=round(after), unit="bps",
                             model=both.model if both.model != "measured" else with_plan.model,
                             inputs={**both.inputs, "expected_bps": st.expected_bps,
                                     "after_plan": round(with_plan.bps)}))
    eff_plan = {p.subject: p for p in efficiency_predictions(efficiency, states, plan_idx, None, None, None)}
    eff_both = efficiency_predictions(efficiency, states, both_idx, None, None, None)
    lifted = {p.subject for p in out if p.metric == "efficiency"}
    for p in eff_both:
        if p.subject in lifted and p.after is not None:
            base = eff_plan.get(p.subject)
            out = [q for q in out if not (q.metric == "efficiency" and q.subject == p.subject)]
            out.append(p.model_copy(update={"inputs": {**p.inputs, "after_plan": base.after if base else None}}))
    cand.predicted = [p for p in out if p.metric == "throughput"] + [p for p in out if p.metric != "throughput"]


def _judge_failed_tests(cand: _Candidate, failed_paths: dict[str, dict], path_symptoms: dict[str, list[Finding]],
                        facts: dict[str, HostFacts]) -> None:
    """A test that could not connect is unblocked by removing a dropping firewall on either end."""
    from advisor.diagnosis.paths import acting_rules

    hosts = {f.host for f in cand.fixes if f.kind == "firewall"}
    for s, p in failed_paths.items():
        err = str(p.get("error") or "").lower()
        if not any(w in err for w in ("unable to connect", "refused", "no route", "timed out", "timeout")):
            continue
        ends = {p.get("src"), p.get("dst")} & hosts
        if not ends:
            continue
        cand.predicted.append(Predicted(metric="throughput", subject=s, now=None, after=None, unit="bps",
                                        model="unquantified", inputs={"now": "test failed: " + err[:80]}))
        for f in path_symptoms.get(s, []):
            cand.explains[_refkey(f)] = _ref(f)


def _cause_id(c: _Candidate) -> str:
    if c.kind == "change":
        basis = sorted(f"{ch.host}|{ch.adapter}|{ch.key}|{_norm(ch.target)}" for ch in c.changes)
    else:
        basis = [repr(c.key)]
    return "c-" + hashlib.sha1("\n".join(basis).encode()).hexdigest()[:10]


def _severity(c: _Candidate) -> str:
    pool = c.proposed_by + ([c.state] if c.state else [])
    if not pool:
        return "high" if (c.blame and c.blame.loss >= 0.001) else "medium"
    return max((f.severity.value for f in pool), key=SEVERITY_ORDER.index)


def _title(c: _Candidate) -> tuple[str, str | None]:
    if c.state is not None:
        return c.state.title or c.state.rule_id, c.state.remediation.text or None
    if c.blame is not None:
        return c.blame.title(), c.blame.action()
    first = c.changes[0]
    if first.adapter == "firewall":
        n = len(c.changes)
        return f"remove {n} firewall rule{'s' if n != 1 else ''} that drop or rate-limit", None
    if first.adapter == "sysctl":
        primary = [ch for ch in c.changes if ch.key not in _BUFFER_FAMILY] or c.changes
        before = sorted({_norm(ch.runtime) or "?" for ch in primary})
        after = sorted({_norm(ch.target) for ch in primary})
        return f"{primary[0].key} {'/'.join(before)} -> {'/'.join(after)}", None
    rules = sorted({f.title or f.rule_id for f in c.proposed_by})
    return "; ".join(rules), None


def _confidence(c: _Candidate) -> float:
    if c.state is not None:
        return 0.9
    if c.blame is not None:
        return round(min(0.95, 0.5 + 0.45 * c.blame.share), 2)
    if c.judged:
        return round(0.5 + 0.45 * c.agree / c.judged, 2)
    return 0.6


def _gain(c: _Candidate) -> float | None:
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
    if not known:
        return None
    if not any(p.metric == "throughput" and p.now is not None for p in c.predicted):
        g = sum(max(0.0, (p.after or 0) - (p.now or 0)) for p in c.predicted if p.metric == "efficiency")
    return round(g, 3)


def _to_cause(c: _Candidate) -> Cause:
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


def _rank(c: Cause) -> tuple:
    quantified = c.gain is not None
    return (not quantified, -(round(c.gain, 2) if quantified else 0), c.kind != "change",
            -SEVERITY_ORDER.index(c.severity), c.title)


def plan_prediction(inp: DiagnosisInput, settings: list[PlannedSetting],
                    states: dict[str, PathState] | None = None) -> list[Predicted]:
    """Every path (and active-test worker) after ``settings``, by-hand causes still in place."""
    if states is None:
        states = {}
        views: dict = {}
        for p in (inp.mesh or {}).get("paths") or []:
            st = path_state(p, inp.facts, inp.addresses, views) if isinstance(p, dict) else None
            if st:
                states[st.subject] = st
    fixes = FixIndex(fx for s in settings if (s.runtime is None or _norm(s.runtime) != _norm(s.target))
                     for fx in [fix_of(s)] if fx)
    out: list[Predicted] = []
    for s in sorted(states):
        st = states[s]
        if st.limited_by in INCONCLUSIVE:
            out.append(Predicted(metric="throughput", subject=s, now=round(st.measured_bps), after=None, unit="bps",
                                 model="inconclusive", inputs={"limited_by": st.limited_by}))
            continue
        pr = predict(st, fixes)
        out.append(Predicted(metric="throughput", subject=s, now=round(st.measured_bps), after=round(pr.bps),
                             unit="bps", model=pr.model, inputs=pr.inputs))
    out += efficiency_predictions(inp.efficiency, states, fixes, None, None, None)
    return out
