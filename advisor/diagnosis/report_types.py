"""What the diagnosis stage adds to a scan report (docs/report-schema.md, docs/diagnosis.md)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, field_serializer, model_serializer, model_validator

from advisor.model.findings import Change


class FindingRef(BaseModel):
    """A finding named by reference: its rule, what it looked at, its hosts."""

    rule_id: str
    subject: str | None = None
    hosts: list[str] = Field(default_factory=list)


#: what the scan report writes of each change of a cause: the setting, its target and the value the
#: scan saw at run time (the persisted and boot values and the scope are the plan's, read from the
#: findings); the report's schema names this form ``PlannedSetting`` (advisor/report/schema.py)
CAUSE_CHANGE_KEYS = ("host", "adapter", "key", "target", "runtime")


class Predicted(BaseModel):
    """One metric of one subject before and after: ``now``/``after`` None with model ``unquantified``."""

    metric: str  # throughput | efficiency
    subject: str  # "SRC->DST" for a path, the worker for the active test
    now: float | None = None
    after: float | None = None
    unit: str  # bps | ratio
    model: str
    inputs: dict[str, Any] = Field(default_factory=dict)


class Cause(BaseModel):
    id: str
    title: str
    kind: Literal["change", "by_hand"]
    hosts: list[str]
    confidence: float
    severity: str = "medium"
    #: the changes of its findings it makes (the findings' own Change objects), written as CAUSE_CHANGE_KEYS
    changes: list[Change] = Field(default_factory=list)
    #: for a by-hand cause: what to do
    action: str | None = None
    explains: list[FindingRef] = Field(default_factory=list)
    #: the failed findings it acts on: those whose changes it makes, or the measured state it repairs
    #: (with ``explains``, hygiene, unexplained and inconclusive: every failed finding is in one)
    findings: list[FindingRef] = Field(default_factory=list)
    predicted: list[Predicted] = Field(default_factory=list)
    #: sum over the paths it explains of the fraction of expected rate it recovers (efficiency gain
    #: where no path links it); None: unquantified
    gain: float | None = None
    evidence: list[str] = Field(default_factory=list)

    @field_serializer("changes")
    def _changes_out(self, changes: list[Change]) -> list[dict[str, Any]]:
        return [{k: getattr(c, k) for k in CAUSE_CHANGE_KEYS} for c in changes]


#: the keys of a set-aside change the scan report writes, beside its ``rule_id`` and ``reason``
SET_ASIDE_CHANGE_KEYS = ("host", "adapter", "key", "target")


# The report writes it flat ({host, adapter, key, target, rule_id, reason}) and reads it back so
# (advisor/report/schema.py describes that form).
class SetAside(BaseModel):
    """A change only an analysis of symptoms proposed, that explains no symptom: never planned."""

    change: Change
    rule_id: str
    reason: str

    @model_validator(mode="before")
    @classmethod
    def _from_report(cls, data: Any) -> Any:
        if isinstance(data, dict) and "change" not in data:
            return {"change": {k: data[k] for k in SET_ASIDE_CHANGE_KEYS if k in data},
                    **{k: v for k, v in data.items() if k not in SET_ASIDE_CHANGE_KEYS}}
        return data

    @model_serializer
    def _to_report(self) -> dict[str, Any]:
        return {**{k: getattr(self.change, k) for k in SET_ASIDE_CHANGE_KEYS}, "rule_id": self.rule_id,
                "reason": self.reason}


class Diagnosis(BaseModel):
    causes: list[Cause] = Field(default_factory=list)
    set_aside: list[SetAside] = Field(default_factory=list)
    hygiene: list[FindingRef] = Field(default_factory=list)
    unexplained: list[FindingRef] = Field(default_factory=list)
    #: symptoms of paths whose measurement was inconclusive (limited_by cpu / contended, measured
    #: again alone and still so): neither a cause's nor unexplained; measure them again when quieter
    inconclusive: list[FindingRef] = Field(default_factory=list)
    plan_prediction: list[Predicted] = Field(default_factory=list)

    def parts(self) -> dict[str, Any]:
        """The diagnosis's keys of a scan report, as this model holds them."""
        return {k: getattr(self, k) for k in DIAGNOSIS_KEYS}


#: the scan report's keys the diagnosis writes (ScanReport, and the plan's typed decoder of it)
DIAGNOSIS_KEYS = ("causes", "hygiene", "unexplained", "inconclusive", "set_aside", "plan_prediction")
