"""What ``storadvise plan --scan FILE`` reads of a scan report, and nothing more.

A scan JSON of 10,000 hosts is ~400 MB, nearly all of it the hosts' ``facts``. The planner reads
of it the site, the start time, each host's name, reachability and errors, the failed findings'
rule, hosts, severity, subject, remediation text and changes, and (only through the adapters)
the facts of the hosts it plans changes for. This module decodes exactly that with typed
msgspec structs: every other field is skipped by the decoder, and each probe's facts stay raw
JSON until an adapter asks for them (decoded once per distinct text, so 10,000 identical workers
cost one decode). The structs have the attribute names of advisor.report.model and
advisor.model.findings, so advisor.apply.planner reads either; a change's struct has exactly the fields,
types and defaults of advisor.model.findings.Change (tests/apply/test_change_parity.py holds them equal).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import msgspec

from advisor.util.errors import StoradviseError
from advisor.model.findings import BootSource, ChangeScope, FindingStatus, Severity
from advisor.report.saved_json import check_value, past_limit
from advisor.report.wire import facts_from_leaves, major_of


class PlanBootValue(msgspec.Struct, kw_only=True):
    """advisor.model.findings.BootValue as the decoder reads it (field by field the same:
    tests/apply/test_change_parity.py)."""

    value: Any = None
    source: BootSource
    origin: str | None = None


class PlanChange(msgspec.Struct, kw_only=True):
    """advisor.model.findings.Change as the decoder reads it: the same fields, types and defaults, in the
    same order (tests/apply/test_change_parity.py fails when the two differ)."""

    host: str
    adapter: str
    key: str
    runtime: Any = None
    persisted: Any = None
    target: Any
    scope: ChangeScope = ChangeScope.both
    boot: PlanBootValue | None = None


class PlanRemediation(msgspec.Struct):
    text: str = ""


class PlanFinding(msgspec.Struct):
    rule_id: str
    status: FindingStatus
    severity: Severity
    title: str = ""
    evidence: list[str] = []
    hosts: list[str] = []
    remediation: PlanRemediation = msgspec.field(default_factory=PlanRemediation)
    changes: list[PlanChange] = []
    subject: str | None = None
    message: str | None = None


class PlanHost(msgspec.Struct):
    name: str
    reachable: bool
    address: str | None = None
    errors: list[str] = []
    #: probe name -> why it did not run (a probe --skip-probes left out: advisor.collect.probe_selection)
    probe_messages: dict[str, str] = {}
    #: probe name -> its facts: raw JSON as decoded, then (load_plan_scan) a RawProbeFacts mapping
    facts: dict[str, msgspec.Raw] = {}


class PlanScan(msgspec.Struct):
    site: str
    started_at: str
    hosts: list[PlanHost]
    findings: list[PlanFinding]
    #: the profiles the scan evaluated (names of this site's profiles: advisor.apply.declared_changes)
    profiles: list[str] = []
    #: 1.x or 2.x (advisor.report.wire); a file without it is refused
    schema_version: Any = None
    #: what the planner's prediction reads (advisor/apply/plan_outcome.py)
    mesh: dict[str, Any] | None = None
    efficiency: dict[str, Any] | None = None
    flows: dict[str, Any] | None = None
    #: the diagnosis (advisor.diagnosis.report_types), as plain data until load_plan_scan validates it
    causes: list[Any] = []
    hygiene: list[Any] = []
    unexplained: list[Any] = []
    inconclusive: list[Any] = []
    set_aside: list[Any] = []
    plan_prediction: list[Any] = []

    def with_diagnosis(self, d: Any) -> "PlanScan":
        for k, v in d.parts().items():
            setattr(self, k, v)
        return self


class _Head(msgspec.Struct):
    schema_version: Any = None


class RawProbeFacts(Mapping):
    """One host's ``facts``: probe name -> facts, each decoded from its raw JSON on first use.
    ``decoded`` is shared by the hosts of one report: the same text is decoded once (adapters
    only read facts)."""

    def __init__(self, raw: dict[str, bytes], decoded: dict[bytes, Any], where: str, leaves: bool) -> None:
        self._raw = raw
        self._decoded = decoded
        self._where = where
        #: schema 2: each probe's facts are a list of leaves (advisor.report.wire)
        self._leaves = leaves

    def __getitem__(self, probe: str) -> Any:
        text = self._raw[probe]
        if text not in self._decoded:
            where = f"{self._where}.facts.{probe}"
            data = _decode_bounded(text, where)
            self._decoded[text] = facts_from_leaves(data, where) if self._leaves else data
        return self._decoded[text]

    def __contains__(self, probe: object) -> bool:
        return probe in self._raw

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)


_DECODER = msgspec.json.Decoder(PlanScan)


def load_plan_scan(path: str | Path) -> PlanScan:
    """The parts of a scan JSON (``storadvise scan --json``) the planner reads; a one-line
    StoradviseError for a file that is missing, not JSON, not a scan report or of another schema."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise StoradviseError(f"{p}: scan report not found") from None
    except OSError as exc:
        raise StoradviseError(f"{p}: cannot read scan report: {exc.strerror or exc}") from None
    try:
        report = _DECODER.decode(data)
    except RecursionError:
        raise past_limit(data, p) from None
    except msgspec.ValidationError as exc:
        _check_schema(p, data)
        if "out of range" in str(exc):  # a number past what msgspec (and Python) convert
            raise past_limit(data, p) from None
        raise StoradviseError(f"{p}: invalid scan report: {exc}") from None
    except msgspec.DecodeError as exc:
        raise StoradviseError(f"{p}: not JSON: {exc}") from None
    # what is decoded as Any (a change's values, the mesh, the diagnosis): nesting and digits bounded
    # as every saved scan's (advisor.report.saved_json); facts are checked when decoded
    check_value([[c.target, c.runtime, c.persisted, None if c.boot is None else c.boot.value]
                 for f in report.findings for c in f.changes]
                + [report.mesh, report.efficiency, report.flows, report.causes, report.hygiene, report.unexplained,
                   report.inconclusive, report.set_aside, report.plan_prediction, report.schema_version],
                data, p)
    leaves = _major(p, report.schema_version) == "2"
    _validate_diagnosis(p, report)
    # each probe's raw text copied out once per distinct text (identical workers share one), so
    # the file's buffer, which every msgspec.Raw points into, is freed when this returns
    texts: dict[bytes, bytes] = {}
    decoded: dict[bytes, Any] = {}
    for i, h in enumerate(report.hosts):
        own = {}
        for probe, raw in h.facts.items():
            text = bytes(raw)
            own[probe] = texts.setdefault(text, text)
        h.facts = RawProbeFacts(own, decoded, f"{p}: hosts[{i}]", leaves)  # type: ignore[assignment]
    return report


def _decode_bounded(text: bytes, where: str) -> Any:
    """One probe's raw facts decoded, nesting and digits bounded (advisor.report.saved_json)."""
    try:
        data = msgspec.json.decode(text)
    except RecursionError:
        raise past_limit(text, where) from None
    except (msgspec.ValidationError, msgspec.DecodeError) as exc:
        if "out of range" in str(exc):
            raise past_limit(text, where) from None
        raise StoradviseError(f"{where}: not JSON: {exc}") from None
    check_value(data, text, where)
    return data


def _check_schema(p: Path, data: bytes) -> None:
    try:
        head = msgspec.json.decode(data, type=_Head)
    except RecursionError:
        raise past_limit(data, p) from None
    except (msgspec.ValidationError, msgspec.DecodeError):
        raise StoradviseError(f"{p}: not a storadvise scan report (not a JSON object)") from None
    _major(p, head.schema_version)


def _major(p: Path, version: Any) -> str:
    return major_of(p, {} if version is None else {"schema_version": version})


def _validate_diagnosis(p: Path, report: PlanScan) -> None:
    """The diagnosis keys as the diagnosis stage's own models (a few causes: cheap)."""
    from pydantic import ValidationError

    from advisor.diagnosis.report_types import DIAGNOSIS_KEYS, Diagnosis

    try:
        d = Diagnosis.model_validate({k: getattr(report, k) for k in DIAGNOSIS_KEYS})
    except ValidationError as exc:
        e = exc.errors()[0]
        raise StoradviseError(f"{p}: invalid scan report at {'.'.join(str(x) for x in e['loc'])}: {e['msg']}") from None
    report.with_diagnosis(d)
