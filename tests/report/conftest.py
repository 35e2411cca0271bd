"""The report tests' scan report: tests/support/reports.py's small site, built in memory."""

from __future__ import annotations

import pytest

from advisor.report.model import ScanReport
from tests.support.reports import make_report


@pytest.fixture
def report() -> ScanReport:
    return make_report()
