"""Where the tests find the repository and its real-format fixtures."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
JUNIT_XSD = FIXTURES / "junit" / "junit-jenkins-constraints.xsd"  # Jenkins' JUnit constraints
