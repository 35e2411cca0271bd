"""What changed between two stored scans (``history diff``)."""

from __future__ import annotations

from typing import Any

from advisor.apply.verify import verify_result
from advisor.report.model import ScanReport


def diff_scans(a: ScanReport, b: ScanReport, fail_on: str = "high") -> dict[str, Any]:
    """A -> B as ``verify`` shows before -> after: findings fixed / still failing / new, paths, efficiency."""
    return verify_result(a, b, fail_on)
