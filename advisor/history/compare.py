"""What changed between two stored scans, and which failures are new (``scan --fail-on-new``)."""

from __future__ import annotations

from typing import Any

from advisor.apply.verify import compare_findings, verify_result
from advisor.findings import SEVERITY_ORDER
from advisor.report.model import ScanReport


def diff_scans(a: ScanReport, b: ScanReport, fail_on: str = "high") -> dict[str, Any]:
    """A -> B as ``verify`` shows before -> after: findings fixed / still failing / new, paths, efficiency."""
    return verify_result(a, b, fail_on)


def new_failures(previous: ScanReport | None, report: ScanReport, fail_on: str) -> list[dict[str, Any]]:
    """Failures at or above ``fail_on`` that the previous scan of the site did not have (all of them without one)."""
    threshold = SEVERITY_ORDER.index(fail_on)
    if previous is None:
        previous = report.model_copy(update={"findings": []})
    return [r for r in compare_findings(previous, report)
            if r["outcome"] == "new" and SEVERITY_ORDER.index(r["severity"]) >= threshold]
