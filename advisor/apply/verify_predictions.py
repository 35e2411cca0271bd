"""verify proves the prediction: each cause's predicted metrics against what the new scan measured,
and a calibration of the plan's prediction (docs/diagnosis.md).

``calibration``: {n, median_ratio, worst_ratio, outside, inconclusive, held, misses}: n plan
predictions compared with a measurement, each ratio measured / predicted, the worst the one farthest
from 1 (by |log ratio|), ``outside`` how many lie outside HOLDS (0.75-1.33) and ``misses`` which
(metric, subject, model, predicted, measured, ratio, limited_by). Every measured path counts, those
a by-hand cause of the before scan still holds included: their prediction is made with that cause
in place (Mathis at the loss and the RTT the flow saw), so a miss there is the model's. ``held``
{n, median_ratio, worst_ratio} repeats those paths apart, for the reader; they are in n too. Only a
measurement that says nothing of what the network carries is counted apart, never compared
(``inconclusive``): a path the new scan calls cpu or contended, a production flow its application
paced or that got its share of a full link (advisor.flows.limits.says_nothing_of_the_network), an
active test job whose compute phases got less than JOB_CPU_SHARE of a CPU.

``verify_causes``: each cause's predicted subjects as measured (``measured``: value, unit,
``source`` (mesh, flows or none for a job) and ``not_compared``, true for a measurement counted
apart as above); a mesh path still shows its symptom below STILL_SLOW of its expected rate; a
production flow path whenever the new scan still names the network or a setting for it
(advisor.flows.limits.NETWORK_CLASSES), whatever its rate: a flow's rate is what its jobs asked for.
"""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from typing import Any

from advisor.diagnosis.report_types import Predicted
from advisor.diagnosis.paths import INCONCLUSIVE
from advisor.util.errors import StoradviseError
from advisor.flows.limits import NETWORK_CLASSES, says_nothing_of_the_network
from advisor.report.model import ScanReport
from advisor.report.scan_compare import measured_paths

#: a path below this share of its expected rate after the change still shows its symptom
STILL_SLOW = 0.8


def load_plan_prediction(plan_dir: Path) -> list[Predicted]:
    p = Path(plan_dir) / "plan.json"
    try:
        data = json.loads(p.read_text())
    except FileNotFoundError:
        raise StoradviseError(f"{p}: not found; --plan takes a directory written by 'storadvise plan'") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise StoradviseError(f"{p}: cannot read the plan: {exc}") from None
    raw = data.get("plan_prediction") if isinstance(data, dict) else None
    if raw is None:
        raise StoradviseError(f"{p}: the plan holds no plan_prediction (written by an older storadvise); plan again")
    try:
        return [Predicted.model_validate(x) for x in raw]
    except Exception as exc:  # pydantic's error: one line
        raise StoradviseError(f"{p}: invalid plan_prediction: {str(exc).splitlines()[0]}") from None


def _measured(after: ScanReport) -> dict[tuple[str, str], tuple[float | None, str, dict]]:
    """What the new scan measured: its mesh's paths, else its production flows' (re-sampled by the
    scan: verify needs no mesh), and the active test's workers."""
    out: dict[tuple[str, str], tuple[float | None, str, dict]] = {}
    for (src, dst), p in measured_paths(after).items():
        ok = p.get("status") == "ok" if p["source"] == "mesh" else True
        out[("throughput", f"{src}->{dst}")] = (p.get("measured_bps") if ok else None, "bps", p)
    for worker, r in ((after.efficiency or {}).get("hosts") or {}).items():
        if isinstance(r, dict) and isinstance(r.get("efficiency"), (int, float)):
            out[("efficiency", worker)] = (float(r["efficiency"]), "ratio", r)
    return out


#: measured / predicted in this band is a prediction that held
HOLDS = (0.75, 1.33)


def _ratios_summary(ratios: list[float]) -> dict[str, Any]:
    if not ratios:
        return {"n": 0, "median_ratio": None, "worst_ratio": None, "outside": 0}
    worst = max(ratios, key=lambda r: abs(math.log(r)) if r > 0 else math.inf)
    return {"n": len(ratios), "median_ratio": round(statistics.median(ratios), 3), "worst_ratio": round(worst, 3),
            "outside": sum(1 for r in ratios if not HOLDS[0] <= r <= HOLDS[1])}


def by_hand_subjects(before: ScanReport) -> set[tuple[str, str]]:
    """(metric, subject) of every prediction a by-hand cause of ``before`` makes: what stays held."""
    return {(p.metric, p.subject) for c in before.causes if c.kind == "by_hand" for p in c.predicted}


#: an active test job whose compute phases got less than this share of a CPU ran on contended
#: cores: its efficiency says that, not what its reads waited for
JOB_CPU_SHARE = 0.8


def _inconclusive(metric: str, record: dict) -> bool:
    """A measurement that says nothing of the network: a path classed cpu/contended, a production flow
    its application paced or a full shared link shared out, a job whose computing was starved."""
    if metric == "efficiency":
        share = record.get("cpu_share_computing")
        return share is not None and share < JOB_CPU_SHARE
    # a flow its application paced (a reader that did not read, a sender with nothing to send), or that
    # got its share of a full link, says nothing of what the network would carry
    if record.get("source") == "flows":
        return says_nothing_of_the_network(record)
    return record.get("limited_by") in INCONCLUSIVE


def calibration(predictions: list[Predicted], after: ScanReport,
                held_by_hand: set[tuple[str, str]] | frozenset = frozenset()) -> dict[str, Any]:
    measured = _measured(after)
    ratios, held, inconclusive, misses = [], [], 0, []
    for pr in predictions:
        if pr.after is None or not pr.after:
            continue
        m = measured.get((pr.metric, pr.subject))
        if m is None or m[0] is None:
            continue
        if _inconclusive(pr.metric, m[2]):
            inconclusive += 1
            continue
        ratios.append(m[0] / pr.after)
        if (pr.metric, pr.subject) in held_by_hand:
            held.append(ratios[-1])
        if not HOLDS[0] <= ratios[-1] <= HOLDS[1]:
            misses.append({"metric": pr.metric, "subject": pr.subject, "model": pr.model, "predicted": pr.after,
                           "measured": m[0], "ratio": round(ratios[-1], 3),
                           "limited_by": m[2].get("limited_by") if pr.metric == "throughput" else None})
    return {**_ratios_summary(ratios), "inconclusive": inconclusive, "held": _ratios_summary(held), "misses": misses}


def _applied(change, after: ScanReport) -> bool | None:
    """Does the new scan see the change made? None: this adapter's value is not read back here."""
    facts = next((h.facts for h in after.hosts if h.name == change.host), None)
    if facts is None:
        return None
    if change.adapter == "sysctl":
        entry = ((facts.get("network.sysctl") or {}).get("sysctls") or {}).get(change.key) or {}
        if entry.get("runtime") is None:
            return None
        return " ".join(str(entry["runtime"]).split()) == " ".join(str(change.target).split())
    if change.adapter == "firewall":
        texts = [str(r.get("text")) for r in (facts.get("firewall") or {}).get("rules") or []]
        return not any(t and t in str(change.key) for t in texts)
    return None


def verify_causes(before: ScanReport, after: ScanReport) -> list[dict[str, Any]]:
    measured = _measured(after)
    out = []
    applied_of = {}
    for cause in before.causes:
        marks = [_applied(ch, after) for ch in cause.changes]
        applied_of[cause.id] = None if not marks or None in marks else all(marks)
    # what can still hold a path after the change: by-hand causes, and changes the new scan does not see
    remaining = [c for c in before.causes if c.kind == "by_hand" or applied_of[c.id] is False]
    for cause in before.causes:
        rows = []
        still = []
        for pr in cause.predicted:
            m = measured.get((pr.metric, pr.subject))
            if m is None:
                continue
            rows.append({"metric": pr.metric, "subject": pr.subject, "value": m[0], "unit": m[1],
                         "not_compared": _inconclusive(pr.metric, m[2]), "source": m[2].get("source")})
            exp = m[2].get("expected_bps") if pr.metric == "throughput" else None
            if m[2].get("source") == "flows":
                # a production flow is still held when the network or a setting still holds it (its
                # rate is whatever the jobs asked for)
                if m[2].get("limited_by") in NETWORK_CLASSES and exp:
                    still.append((pr.subject, (m[0] or 0) / exp))
            elif m[0] is not None and exp and m[0] / exp < STILL_SLOW:
                still.append((pr.subject, m[0] / exp))
        entry = {"id": cause.id, "title": cause.title, "kind": cause.kind,
                 "predicted": [p.model_dump() for p in cause.predicted], "measured": rows,
                 "applied": applied_of[cause.id]}
        entry["verdict"] = _verdict(cause, entry["applied"], still, remaining, rows)
        out.append(entry)
    return out


#: a cause whose every measurement after says nothing of the network (``not_compared``)
NOT_CONCLUDED = "not concluded: the new scan's measurements of its paths were paced by the CPU, other traffic or the application"


def _verdict(cause, applied: bool | None, still: list[tuple[str, float]], remaining: list, rows: list[dict]) -> str:
    unsure = bool(rows) and all(r["not_compared"] for r in rows)
    unmeasured = bool(cause.predicted) and not rows and applied is not False
    if unmeasured:  # no test and no flow on its paths in the new scan (a reader between servers)
        done = "the changes were applied; " if applied else ""
        return done + "not measured again: the new scan measured none of its paths"
    if cause.kind == "by_hand":
        if still:
            return f"still in place: {_paths(still)}"
        if unsure:
            return NOT_CONCLUDED
        if any(r.get("source") == "flows" for r in rows if not r["not_compared"]):
            # a production flow's rate is what its jobs asked for: only its class says the fault is gone
            return "not seen in the new scan's flows: none of its paths was held by the network in the window"
        return "its paths now reach their expected rate"
    if applied is False:
        return "not applied: the new scan still sees the old value"
    if not still:
        done = "the changes were applied; " if applied else ""
        return done + (NOT_CONCLUDED if unsure else "the symptoms are gone")
    others = [c.title for c in remaining if c.id != cause.id
              and {p.subject for p in c.predicted} & {s for s, _ in still}]
    rest = f": the remaining cause is {'; '.join(others)}" if others else ": no other cause of the scan explains them"
    return f"the changes were applied; {_paths(still)}{rest}"


def _paths(still: list[tuple[str, float]]) -> str:
    lo, hi = min(r for _, r in still), max(r for _, r in still)
    span = f"{lo:.2f}" if f"{lo:.2f}" == f"{hi:.2f}" else f"{lo:.2f}-{hi:.2f}"
    names = ", ".join(s for s, _ in still[:3]) + (f" and {len(still) - 3} more" if len(still) > 3 else "")
    return f"{names} still at {span} of expected"
