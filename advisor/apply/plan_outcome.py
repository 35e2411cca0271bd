"""What a plan will buy: the scan's causes with the changes the plan makes for each, and every path
and metric after exactly those changes (advisor/diagnosis), for plan.json and PLAN.md; ``verify
--plan`` checks that prediction."""

from __future__ import annotations

from typing import Any

from advisor.apply.plan_model import PlannedChange
from advisor.diagnosis import diagnosis_input, plan_prediction
from advisor.report.model import ScanReport


def predicted_outcome(report: ScanReport, changes: list[PlannedChange]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    planned = {(c.host, c.adapter, c.key): c for c in (pc.change for pc in changes)}
    causes = []
    for cause in report.causes:
        mine = [planned[(ch.host, ch.adapter, ch.key)] for ch in cause.changes if (ch.host, ch.adapter, ch.key) in planned]
        causes.append({"id": cause.id, "title": cause.title, "kind": cause.kind, "hosts": cause.hosts,
                       "action": cause.action,
                       "gain": cause.gain, "planned": [{"host": c.host, "adapter": c.adapter, "key": c.key,
                                                        "target": c.target} for c in mine],
                       "not_planned": len(cause.changes) - len(mine),
                       "predicted": [p.model_dump() for p in cause.predicted]})
    if not report.mesh and not report.efficiency and not report.flows:
        return causes, []
    inp = diagnosis_input([], report.mesh, report.efficiency, {h.name: h.facts for h in report.hosts}, _NoRules(),
                          {h.name: h.address for h in report.hosts if h.address}, report.flows)
    return causes, [p.model_dump() for p in plan_prediction(inp, [pc.change for pc in changes])]


class _NoRules:
    """The prediction reads no rule: only the paths, the facts and the planned settings."""

    rules: dict = {}
