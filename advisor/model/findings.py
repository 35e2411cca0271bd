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
    """What to do, for people; the machine-readable part is the finding's ``changes``."""

    text: str = ""
    #: the Ansible role of the finding's changes (informative; the planner reads ``changes``)
    role: str | None = None


class ChangeScope(str, Enum):
    runtime = "runtime"
    persisted = "persisted"
    both = "both"


class BootSource(str, Enum):
    file = "file"
    default = "default"


class BootValue(BaseModel):
    """The value a setting will have after the next boot (or service restart): what a persisted
    file sets (``file``), else the kernel's or the service's default (``default``)."""

    value: Any = None
    source: BootSource
    #: where it comes from: the file (and how it was read), or the default's documentation
    origin: str | None = None


# The one type of a change from finding to plan: an analysis that asks for a target only (the mesh's
# differences, advisor/mesh/symptoms.py) leaves the values unknown; a cause of the diagnosis holds the
# changes of its findings (advisor/diagnosis/report_types.py); a plan holds each change it makes
# (advisor/apply/plan_model.py). The planner's decoder of a saved scan has its msgspec form
# (advisor/apply/plan_input.py), held field by field to this one by tests/apply/test_change_parity.py.
class Change(BaseModel):
    """One setting a failed finding asks to change on one host (docs/report-schema.md).

    ``adapter`` names the module that applies it (advisor.adapters); ``runtime`` and ``persisted``
    are the values the scan saw (None: unknown or not set); ``scope`` says which of the two must
    change: ``runtime`` (the persisted value is already right), ``persisted`` (the running value is
    right, only the file/config is wrong) or ``both``. ``boot`` is the value the setting gets at
    the next boot: the persisted value, or the default when no file sets it (None: unknown);
    ``scope`` compares runtime and boot values with the target, by meaning.
    """

    host: str
    adapter: str
    key: str
    runtime: Any = None
    persisted: Any = None
    target: Any
    scope: ChangeScope = ChangeScope.both
    boot: BootValue | None = None


class Finding(BaseModel):
    rule_id: str
    #: the rule's healthy condition ("TCP selective acknowledgements are enabled")
    title: str = ""
    #: for a failed or waived finding: what is wrong, in the rule's words for its failure ("SACK is
    #: off on gpfs[01-02]": advisor.rules.specs.failure_line); None otherwise
    failure: str | None = None
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
    #: for failed findings: the settings that fix it, one per host and key (empty: by hand)
    changes: list[Change] = Field(default_factory=list)
    #: what the rule looked at on the host (e.g. a device, an interface, a path "gpfs01->wn01")
    subject: str | None = None
    #: for waived findings: the waiver's justification, approver and expiry; for errors: the message
    message: str | None = None
    #: how observed was judged against expected: a check rule's operator (``ge``, ``eq``, ``in`` ...),
    #: ``analytic`` for a Python rule; None for the scan's own findings (a host not reached)
    operator: str | None = None
    #: the unit of observed and expected (the rule's ``unit``: ``%``, ``ms``, ``bytes`` ...)
    unit: str | None = None
