"""``verify``: the scan after a change against the one before (the scan itself is advisor/scan/pipeline.py).

The findings and paths are compared as advisor/report/scan_compare.py says (``fixed``,
``still_failing``, ``new``, ``not_checked``); the active test's efficiency before and after; and the
before scan's predictions checked against what the new scan measured (verify_predictions.py).
"""

from __future__ import annotations

from typing import Any

from advisor.apply.verify_predictions import by_hand_subjects, calibration, verify_causes
from advisor.report.diagnosed import ensure_diagnosis
from advisor.util.errors import StoradviseError
from advisor.model.findings import SEVERITY_ORDER, FindingStatus
from advisor.report.model import ScanReport
from advisor.report.scan_compare import compare_findings, compare_paths


def compare_efficiency(before: dict | None, after: dict | None) -> dict[str, Any] | None:
    """Active-test efficiency before -> after (``ratio`` = after mean / before mean)."""
    if not before and not after:
        return None
    from advisor.efficiency.active import compare_efficiency as compare

    return compare(before, after)


def verify_result(before: ScanReport, after: ScanReport, fail_on: str,
                  hosts: set[str] | None = None, prediction: list | None = None) -> dict[str, Any]:
    """``prediction``: the plan's prediction (``verify --plan``); None: the before scan's, which
    assumes every proposed change."""
    if before.site != after.site:
        raise StoradviseError(f"the before scan is of site {before.site!r}, the new one of {after.site!r}")
    before = ensure_diagnosis(before)
    findings = compare_findings(before, after, hosts)
    paths = compare_paths(before, after)
    threshold = SEVERITY_ORDER.index(fail_on)
    failing = [r for r in findings if r["outcome"] in ("still_failing", "new")
               and SEVERITY_ORDER.index(r["severity"]) >= threshold]
    counts = {o: sum(1 for r in findings if r["outcome"] == o) for o in ("fixed", "still_failing", "new", "not_checked")}
    return {
        "site": after.site, "before_started_at": before.started_at, "after_started_at": after.started_at,
        "fail_on": fail_on, "summary": {**counts, "failing_at_or_above_fail_on": len(failing),
                                        "mesh_ran": bool(after.mesh), "flows_sampled": bool(after.flows)},
        "findings": findings, "paths": paths,
        "efficiency": compare_efficiency(before.efficiency, after.efficiency),
        "causes": verify_causes(before, after),
        "calibration": calibration(before.plan_prediction if prediction is None else prediction, after,
                                   by_hand_subjects(before)),
        "prediction_source": "plan" if prediction is not None else "scan",
    }


def network_touched(before: ScanReport) -> bool:
    """Did the plan (the before scan's failed findings) change settings that act on the network
    (an adapter with ``touches_network``: kernel network settings, the firewall)?"""
    from advisor.adapters import get_adapter

    def touches(adapter: str) -> bool:
        a = get_adapter(adapter)
        return bool(a and a.touches_network)

    return any(f.status == FindingStatus.fail and any(touches(c.adapter) for c in f.changes) for f in before.findings)
