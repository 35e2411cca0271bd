"""trusted(): the same instance model_construct builds, refused when a field is missing."""

from __future__ import annotations

import pytest

from advisor.model.facts import ProbeResult, ProbeStatus
from advisor.model.findings import Finding, FindingStatus, Remediation, Severity
from advisor.util.trusted_models import trusted


def test_trusted_equals_validated_and_dumps_the_same():
    fields = {"probe": "network.sysctl", "status": ProbeStatus.ok, "facts": {"a": {"b": [1, 2]}}, "raw": "x\n",
              "message": None, "duration_s": 0.25}
    t = trusted(ProbeResult, dict(fields))
    v = ProbeResult(**fields)
    assert t == v and t.model_dump_json() == v.model_dump_json() and t.model_fields_set == v.model_fields_set
    rem = {"text": "do", "role": "network_tuning"}
    f = {"rule_id": "R", "title": "t", "hosts": ["a"], "status": FindingStatus.fail, "severity": Severity.high,
         "observed": 1, "expected": 0, "evidence": ["a: x"], "rationale": "r", "references": [],
         "remediation": trusted(Remediation, dict(rem)), "changes": [], "subject": None, "message": None,
         "operator": "ge", "unit": "threads", "failure": "x on a"}
    built = trusted(Finding, dict(f))
    assert built == Finding(**{**f, "remediation": Remediation(**rem)})
    assert built.model_copy(deep=True) == built


def test_trusted_refuses_a_partial_field_set():
    with pytest.raises(TypeError, match="every field"):
        trusted(ProbeResult, {"probe": "x", "status": ProbeStatus.ok})
