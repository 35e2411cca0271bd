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

from dataclasses import dataclass, field
from typing import Any

from advisor.diagnosis.candidates import FIX_CLASS, Candidate, change_candidates, fix_of, norm, ref, refkey
from advisor.diagnosis.efficiency import efficiency_predictions
from advisor.diagnosis.localise import localise_loss
from advisor.diagnosis.nic_causes import absorbed_by_loss, attribute_loss, black_hole, negotiated_low
from advisor.diagnosis.report_types import Diagnosis, Predicted, SetAside
from advisor.diagnosis.paths import (INCONCLUSIVE, Fix, FixIndex, PathState, fixes_at, local_index, path_state,
                                     predict)
from advisor.paths.host_view import HostFacts
from advisor.diagnosis.ranking import cause_id_of, rank, to_cause
from advisor.model.findings import SEVERITY_ORDER, Change, Finding, FindingStatus
from advisor.paths.record import OUTSIDE, PathRecord

#: a prediction counts as lifting a path when it beats the measurement by this factor
LIFT = 1.10
#: a path below this share of its expected rate after a cause's changes is still slow
STILL_SLOW = 0.8


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
    #: rule id -> its pack (measured states of one pack and object fold into one repair)
    packs: dict[str, str] = field(default_factory=dict)
    #: the production flows as paths (advisor/flows/paths.py), when sampled
    flows: dict[str, Any] | None = None


def path_states(inp: DiagnosisInput) -> dict[str, PathState]:
    """Every measured path's state, by subject: the mesh's tests, then the production flows of the
    paths no test measured (a test runs alone and at full pace: where both measured a path, the
    test is modelled, and the flows' disagreement stays in the report: advisor/flows/compare.py)."""
    states: dict[str, PathState] = {}
    views: dict = {}
    records = [PathRecord.from_mesh(p) for p in (inp.mesh or {}).get("paths") or [] if isinstance(p, dict)]
    records += [PathRecord.from_flow(p) for p in (inp.flows or {}).get("paths") or [] if isinstance(p, dict)]
    for rec in records:
        if rec.subject in states:
            continue
        st = path_state(rec, inp.facts, inp.addresses, views)
        if st:
            states[st.subject] = st
    return states


def diagnose(inp: DiagnosisInput) -> Diagnosis:
    failed = [f for f in inp.findings if f.status == FindingStatus.fail]
    paths = [p for p in (inp.mesh or {}).get("paths") or [] if isinstance(p, dict)]
    states = path_states(inp)
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

    cands = change_candidates([f for f in failed if not tagged(f, "state")])
    # packet loss is localised among the site's hosts: a path to or from outside votes for no host
    inside = [st for st in states.values() if OUTSIDE not in (st.src, st.dst)]
    blames = localise_loss([states[s] for s in conclusive if OUTSIDE not in (states[s].src, states[s].dst)], inside)
    state_findings = [f for f in failed if tagged(f, "state")]
    #: measured states a NIC cause repairs (advisor/diagnosis/nic_causes.py): not causes of their own
    absorbed: set[tuple] = set()
    for b in blames:
        fixes = {Fix("loss" if b.side == "send" else "loss_recv", h) for h in b.hosts}
        took = absorbed_by_loss(b, attribute_loss(b, states, inp.facts), state_findings, inp.tags)
        cands.append(Candidate(key=("loss", b.side, tuple(b.hosts)), kind="by_hand", fixes=fixes, blame=b, folded=took))

    by_host: dict[str, list[str]] = {}
    for s in conclusive:
        by_host.setdefault(states[s].src, []).append(s)
        by_host.setdefault(states[s].dst, []).append(s)
    every = FixIndex(fx for c in cands for fx in c.fixes)
    changes_only = FixIndex(fx for c in cands if c.kind == "change" for fx in c.fixes)
    for cand in cands:
        _judge_paths(cand, by_host, states, path_symptoms, (changes_only, every) if cand.kind == "change" else (every,))
        _judge_failed_tests(cand, failed_paths, path_symptoms, inp.facts)
        cand.predicted += efficiency_predictions(inp.efficiency, states, cand.fixes, eff_symptoms, cand.explains, ref)

    kept = [c for c in cands if c.explains]
    for c in kept:
        if c.blame is not None:
            for f in c.folded:
                c.explains[refkey(f)] = ref(f)
                absorbed.add(refkey(f))
    hole = black_hole(paths, path_symptoms, inp.facts, inp.addresses)
    if hole is not None:
        kept.append(hole)
    for c in negotiated_low(states, paths, path_symptoms, inp.facts, [f for f in state_findings if tagged(f, "speed")]):
        kept.append(c)
        absorbed |= {refkey(f) for f in c.folded}
    # what a by-hand repair buys is judged after the planned changes: their fixes stay in place
    plan_idx = FixIndex(fx for c in kept if c.kind == "change" for fx in c.fixes)
    for c in kept:
        if c.kind == "by_hand" and c.blame is not None:
            _after_plan(c, states, plan_idx, inp.efficiency)
    for group in fold_states([f for f in state_findings if refkey(f) not in absorbed], inp.packs):
        lead = group[0]
        c = Candidate(key=("state", lead.rule_id, lead.subject or "", tuple(lead.hosts)), kind="by_hand", state=lead,
                      folded=group)
        for f in group:
            c.explains[refkey(f)] = ref(f)
        kept.append(c)
    # derived findings that name hosts rather than a path: explained by the causes of their hosts' slow paths
    causes_of_host: dict[str, dict[int, Candidate]] = {}
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
            c.explains[refkey(f)] = ref(f)

    _then_held_by(kept, states)
    ids = {c.key: cause_id_of(c) for c in kept}
    causes = [to_cause(c, ids) for c in kept]
    causes.sort(key=rank)
    in_cause = {k for c in kept for k in c.explains} | {refkey(f) for c in kept for f in c.proposed_by}
    # a slow path whose measurement the CPU or other traffic limited: not concluded on, never "unexplained"
    not_concluded = [ref(f) for f in symptoms + derived if refkey(f) not in in_cause and f.subject in inconclusive]
    unexplained = [ref(f) for f in symptoms + derived if refkey(f) not in in_cause and f.subject not in inconclusive]
    hygiene = [ref(f) for f in failed if refkey(f) not in in_cause
               and not (tagged(f, "symptom") or tagged(f, "derived"))]
    all_changes = [ch for c in kept if c.kind == "change" for ch in c.changes]
    hygiene_changes = [ch for f in failed if refkey(f) not in in_cause for ch in f.changes]
    # what only an analysis of symptoms proposed, and no kept cause holds, is never planned
    kept_slots = {(ch.host, ch.adapter, ch.key) for c in kept for ch in c.changes}
    other_slots = {(ch.host, ch.adapter, ch.key) for f in failed if not tagged(f, "derived") for ch in f.changes}
    set_aside = {}
    for f in derived:
        for ch in f.changes:
            slot = (ch.host, ch.adapter, ch.key)
            if slot in kept_slots or slot in other_slots or slot in set_aside:
                continue
            same = ch.runtime is not None and norm(ch.runtime) == norm(ch.target)
            why = (f"already {ch.target} at run time" if same else
                   "no measured symptom follows from it (the path model: docs/diagnosis.md)")
            set_aside[slot] = SetAside(change=ch, rule_id=f.rule_id,
                                       reason=f"{why}; proposed only by {f.rule_id}, which no cause supports")
    hygiene_changes = [ch for ch in hygiene_changes if (ch.host, ch.adapter, ch.key) not in set_aside]
    return Diagnosis(causes=causes, hygiene=hygiene, unexplained=unexplained, inconclusive=not_concluded,
                     set_aside=list(set_aside.values()),
                     plan_prediction=plan_prediction(inp, all_changes + hygiene_changes, states))


def fold_states(states: list[Finding], packs: dict[str, str]) -> list[list[Finding]]:
    """Measured states of one object, one repair by hand each: the findings of one rule pack on the
    same hosts about the same subject (a failing sdb: SMART, its await, its utilisation), with the
    pack's findings that name no subject on those hosts (the kernel's I/O errors) when the pack
    names one object there. Each group leads with its most severe finding."""
    groups: dict[tuple, dict[str, list[Finding]]] = {}
    for f in states:
        groups.setdefault((packs.get(f.rule_id, f.rule_id), tuple(f.hosts)), {}).setdefault(f.subject or "", []).append(f)
    out: list[list[Finding]] = []
    for by_subject in groups.values():
        loose = by_subject.pop("", [])
        if len(by_subject) == 1:
            (only,) = by_subject.values()
            only += loose
            loose = []
        out += list(by_subject.values()) + [[f] for f in loose]
    return [sorted(g, key=lambda f: -SEVERITY_ORDER.index(f.severity.value)) for g in out]


def _lifts(st: PathState, pr) -> bool:
    return pr.model != "measured" and pr.bps >= st.measured_bps * LIFT


def _judge_paths(cand: Candidate, by_host: dict[str, list[str]], states: dict[str, PathState],
                 path_symptoms: dict[str, list[Finding]], worlds: tuple[FixIndex, ...]) -> None:
    """The slow paths a candidate explains: those its own changes lift, and those that several
    causes hold at once, where the candidate's fixes are needed (in one of ``worlds``, the path
    model with all its fixes lifts the path, and without this candidate's it lifts it less). A
    change is judged among the changes alone and among every fix: a repair by hand that would make
    it unneeded (loss that bbr with SACK shrugs off) is no reason to drop it, and a repair that
    frees what it alone cannot (a buffer behind a lossy port) is a reason to keep it. Only paths
    with an end among its fixes' hosts can be (``by_host``: host -> its conclusive slow paths), so
    the work is linear in paths."""
    if not cand.fixes:
        return
    classes = set().union(*(FIX_CLASS.get(f.kind, set()) for f in cand.fixes))
    near = sorted({s for f in cand.fixes for s in by_host.get(f.host, ())})
    idx = FixIndex(cand.fixes)
    for s in near:
        st = states[s]
        pr = predict(st, local_index(idx, (st.src, st.dst)))
        inputs = {**pr.inputs, "expected_bps": st.expected_bps}
        if not _lifts(st, pr):
            needed = _needed(st, cand, worlds)
            if needed is None:
                continue
            together, without = needed
            # held by several causes at once: alone it changes nothing, with the others it is needed
            inputs = {"expected_bps": st.expected_bps, "with_the_other_causes": round(together.bps),
                      "without_it": round(without.bps), "model_together": together.model}
        cand.predicted.append(Predicted(metric="throughput", subject=s, now=round(st.measured_bps),
                                        after=round(pr.bps), unit="bps", model=pr.model, inputs=inputs))
        for f in path_symptoms.get(s, []):
            cand.explains[refkey(f)] = ref(f)
        if st.limited_by and st.limited_by != "unknown":
            cand.judged += 1
            cand.agree += st.limited_by in classes


def _needed(st: PathState, cand: Candidate, worlds: tuple[FixIndex, ...]):
    """(with the others, without it) in the first world where the candidate's fixes are needed to
    lift the path; None when they are in none."""
    ends = (st.src, st.dst)
    for world in worlds:
        together = predict(st, local_index(world, ends))
        if not _lifts(st, together):
            continue
        without = predict(st, local_index(world, ends, cand.fixes))
        # a range that reaches the link (a lossy LAN flow) does not make a fix needed for the rest
        if (without.inputs.get("at_most") or without.bps) < together.bps * 0.95:
            return together, without
    return None


def _after_plan(cand: Candidate, states: dict[str, PathState], plan_idx: FixIndex, efficiency: dict | None) -> None:
    """Re-predict a by-hand cause's paths with the planned changes made (``plan_idx``: the plan's
    fixes): ``after`` is the rate with both, ``inputs.after_plan`` the rate with the plan alone (what
    the cause adds is the difference). Each path reads the fixes at its two ends only: the work is
    the cause's paths, not the site's plan."""
    out = []
    for p in cand.predicted:
        st = states.get(p.subject)
        if p.metric != "throughput" or st is None:
            out.append(p)
            continue
        ends = (st.src, st.dst)
        with_plan = predict(st, local_index(plan_idx, ends))
        both = predict(st, local_index(plan_idx, ends, also=cand.fixes))
        after = max(both.bps, with_plan.bps)
        out.append(Predicted(metric="throughput", subject=p.subject, now=p.now, after=round(after), unit="bps",
                             model=both.model if both.model != "measured" else with_plan.model,
                             inputs={**both.inputs, "expected_bps": st.expected_bps,
                                     "after_plan": round(with_plan.bps)}))
    tested = (efficiency or {}).get("hosts")
    both_idx = local_index(plan_idx, None, also=cand.fixes) if tested else plan_idx
    eff_plan = {p.subject: p for p in efficiency_predictions(efficiency, states, plan_idx, None, None, None)}
    eff_both = efficiency_predictions(efficiency, states, both_idx, None, None, None)
    lifted = {p.subject for p in out if p.metric == "efficiency"}
    for p in eff_both:
        if p.subject in lifted and p.after is not None:
            base = eff_plan.get(p.subject)
            out = [q for q in out if not (q.metric == "efficiency" and q.subject == p.subject)]
            out.append(p.model_copy(update={"inputs": {**p.inputs, "after_plan": base.after if base else None}}))
    cand.predicted = [p for p in out if p.metric == "throughput"] + [p for p in out if p.metric != "throughput"]


def _then_held_by(kept: list[Candidate], states: dict[str, PathState]) -> None:
    """For each path a cause lifts but leaves below STILL_SLOW of its expected rate: which other
    causes hold what remains (adding their fixes lifts the path further), as their keys in the
    prediction's ``inputs.then_held_by``; ``to_cause`` turns them into cause ids. A path no other
    cause lifts keeps the model that binds it (``model``): the loss, a window, a limit by hand."""
    by_host: dict[str, list[Candidate]] = {}
    for c in kept:
        for h in {f.host for f in c.fixes}:
            by_host.setdefault(h, []).append(c)
    # a change on thousands of hosts is one cause: each path reads its fixes at the path's two ends
    index = {id(c): FixIndex(c.fixes) for c in kept}
    for c in kept:
        for p in c.predicted:
            st = states.get(p.subject)
            if p.metric != "throughput" or st is None or p.after is None or not st.expected_bps \
                    or p.after >= STILL_SLOW * st.expected_bps:
                continue
            ends = (st.src, st.dst)
            base = predict(st, local_index(index[id(c)], ends)).bps
            others = {id(o): o for h in ends for o in by_host.get(h, ()) if o is not c}
            held = [o.key for o in others.values()
                    if predict(st, local_index(index[id(c)], ends, also=fixes_at(index[id(o)], ends))).bps >= base * LIFT]
            if held:
                p.inputs["then_held_by"] = held


def _judge_failed_tests(cand: Candidate, failed_paths: dict[str, dict], path_symptoms: dict[str, list[Finding]],
                        facts: dict[str, HostFacts]) -> None:
    """A test that could not connect is unblocked by removing a dropping firewall on either end; a test
    a path-MTU black hole stalled (its full-MTU ping lost: ``path_mtu``) by MTU probing on its sender,
    which lets TCP fall back to a smaller segment (RFC 4821): unquantified, the path's MTU stays smaller."""
    probing = {f.host for f in cand.fixes if f.kind == "mtu_probing"}
    for s, p in failed_paths.items():
        if p.get("src") in probing and (p.get("path_mtu") or {}).get("carried") is False:
            cand.predicted.append(Predicted(metric="throughput", subject=s, now=None, after=None, unit="bps",
                                            model="unquantified",
                                            inputs={"now": "test failed: " + str(p.get("error") or "")[:80],
                                                    "path_mtu": p["path_mtu"].get("mtu")}))
            for f in path_symptoms.get(s, []):
                cand.explains[refkey(f)] = ref(f)
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
            cand.explains[refkey(f)] = ref(f)


def plan_prediction(inp: DiagnosisInput, settings: list[Change],
                    states: dict[str, PathState] | None = None) -> list[Predicted]:
    """Every path (and active-test worker) after the changes ``settings``, by-hand causes still in place."""
    if states is None:
        states = path_states(inp)
    fixes = FixIndex(fx for s in settings if (s.runtime is None or norm(s.runtime) != norm(s.target))
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
