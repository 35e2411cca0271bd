"""Findings: what the rule engine concludes, with the evidence."""

from __future__ import annotations

from enum import Enum
from typing import Any

from pydantic import BaseModel, Field


class Severity(str, Enum):
    info = "info"
    low = "low"
    medium = "medium"
    high = "high"
    critical = "critical"

    @property
    def rank(self) -> int:
        return SEVERITY_ORDER.index(self.value)


SEVERITY_ORDER = ["info", "low", "medium", "high", "critical"]


class FindingStatus(str, Enum):
    fail = "fail"
    passed = "pass"
    waived = "waived"
    error = "error"
    not_applicable = "not_applicable"


class Remediation(BaseModel):
    """What to do: a text for people and an Ansible role with its variables for the planner."""

    text: str = ""
    role: str | None = None
    vars: dict[str, Any] = Field(default_factory=dict)


class Finding(BaseModel):
    rule_id: str
    title: str = ""
    hosts: list[str] = Field(default_factory=list)
    status: FindingStatus
    severity: Severity
    observed: Any = None
    expected: Any = None
    #: the raw lines the observation was read from
    evidence: list[str] = Field(default_factory=list)
    rationale: str = ""
    references: list[str] = Field(default_factory=list)
    remediation: Remediation = Field(default_factory=Remediation)
    #: what the rule looked at on the host (e.g. a device, an interface, a path "gpfs01->wn01")
    subject: str | None = None
    #: for waived findings: the waiver's justification, approver and expiry; for errors: the message
    message: str | None = None
