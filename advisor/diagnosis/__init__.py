"""The diagnosis stage: findings + each path's limit -> causes ranked by predicted gain
(docs/diagnosis.md). Runs after the rules, before the reports; pure data work."""

from __future__ import annotations

from typing import Any

from advisor.diagnosis.causes import DiagnosisInput, diagnose, plan_prediction
from advisor.diagnosis.report_types import Cause, Diagnosis, FindingRef, Predicted

__all__ = ["Cause", "Diagnosis", "DiagnosisInput", "FindingRef", "Predicted", "diagnose",
           "diagnosis_input", "plan_prediction"]


def diagnosis_input(findings, mesh: dict | None, efficiency: dict | None, facts: dict[str, dict[str, Any]],
                    catalog, addresses: dict[str, str] | None = None, flows: dict | None = None) -> DiagnosisInput:
    """The stage's input from what a scan holds; ``catalog`` gives the rules' tags."""
    tags = {rid: set(spec.tags) for rid, spec in catalog.rules.items()}
    return DiagnosisInput(findings=list(findings), mesh=mesh, efficiency=efficiency, facts=facts, tags=tags,
                          addresses={k: v for k, v in (addresses or {}).items() if v}, flows=flows,
                          packs={rid: spec.pack for rid, spec in catalog.rules.items() if spec.pack})
