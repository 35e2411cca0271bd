"""The scan report: a versioned, documented JSON schema (docs/report-schema.md)."""

from __future__ import annotations

import hashlib
import uuid
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError, model_serializer, model_validator

from advisor.diagnosis.report_types import Cause, Diagnosis, FindingRef, Predicted, SetAside
from advisor.util.errors import StoradviseError
from advisor.model.facts import FactSet, ProbeStatus
from advisor.model.findings import SEVERITY_ORDER, Finding, FindingStatus
from advisor.report.saved_json import load_json
from advisor.report.wire import SCHEMA_VERSION, report_out, upgrade


class HostReport(BaseModel):
    name: str
    roles: list[str] = Field(default_factory=list)
    groups: list[str] = Field(default_factory=list)
    address: str | None = None
    reachable: bool
    errors: list[str] = Field(default_factory=list)
    #: probe name -> ok | not_applicable | error
    probes: dict[str, str] = Field(default_factory=dict)
    #: probe name -> message (why not applicable / what failed)
    probe_messages: dict[str, str] = Field(default_factory=dict)
    #: parsed facts per probe (plain data), for offline analysis, plan and verify
    facts: dict[str, Any] = Field(default_factory=dict)


class ScanSummary(BaseModel):
    hosts: int
    unreachable: int
    probe_errors: int
    by_status: dict[str, int]
    failed_by_severity: dict[str, int]
    worst_failed_severity: str | None
    incomplete: bool


def report_id(site: str, started_at: str) -> str:
    """The scan id of a report written before 1.2 had one: derived from its site and start, so the
    same saved report always gets the same id."""
    # (uuid5's own encoding would refuse the lone surrogates a hostile report may hold)
    name = f"storadvise:scan:{site}:{started_at}".encode("utf-8", "surrogatepass")
    return str(uuid.UUID(bytes=hashlib.sha1(uuid.NAMESPACE_URL.bytes + name).digest()[:16], version=5))


class ScanReport(BaseModel):
    schema_version: str = SCHEMA_VERSION
    #: a UUID of this scan, with or without the history (which numbers its scans apart)
    scan_id: str = ""
    tool: str = "storadvise"
    tool_version: str
    site: str
    site_file: str | None = None
    profiles: list[str]
    started_at: str
    finished_at: str
    duration_s: float
    hosts: list[HostReport]
    findings: list[Finding]
    summary: ScanSummary
    mesh: dict[str, Any] | None = None
    efficiency: dict[str, Any] | None = None
    #: the production flows as paths (advisor/flows/paths.py): ``{window_s, hosts, paths: [...]}``, when sampled
    flows: dict[str, Any] | None = None
    #: the diagnosis (docs/diagnosis.md): causes worst first, then hygiene and unexplained symptoms
    causes: list[Cause] = Field(default_factory=list)
    hygiene: list[FindingRef] = Field(default_factory=list)
    unexplained: list[FindingRef] = Field(default_factory=list)
    #: symptoms of paths whose measurement was inconclusive (the CPU, other traffic): not concluded on
    inconclusive: list[FindingRef] = Field(default_factory=list)
    #: changes only an analysis of symptoms proposed and no cause holds: never planned
    set_aside: list[SetAside] = Field(default_factory=list)
    #: every path and metric after every change the causes propose (by-hand causes still in place)
    plan_prediction: list[Predicted] = Field(default_factory=list)

    @model_validator(mode="after")
    def _scan_id(self) -> "ScanReport":
        if not self.scan_id:  # a report from before 1.2
            self.scan_id = report_id(self.site, self.started_at)
        return self

    @model_serializer(mode="wrap", when_used="json")
    def _schema_2(self, handler: Any) -> dict[str, Any]:
        """As JSON the report is always schema 2 (advisor.report.wire); in Python it keeps its types.
        A large report is written by advisor.report.json_stream, a host at a time."""
        return report_out(handler(self))

    def with_diagnosis(self, d: Diagnosis) -> "ScanReport":
        for k, v in d.parts().items():
            setattr(self, k, v)
        return self


def summarise(factset: FactSet, findings: list[Finding]) -> ScanSummary:
    by_status: dict[str, int] = {s.value: 0 for s in FindingStatus}
    failed: dict[str, int] = {s: 0 for s in SEVERITY_ORDER}
    for f in findings:
        by_status[f.status.value] += 1
        if f.status == FindingStatus.fail:
            failed[f.severity.value] += 1
    worst = next((s for s in reversed(SEVERITY_ORDER) if failed[s]), None)
    unreachable = sum(1 for h in factset.hosts.values() if not h.reachable)
    probe_errors = sum(1 for h in factset.hosts.values() for r in h.probes.values() if r.status == ProbeStatus.error)
    measurements_failed = sum(1 for p in (factset.mesh or {}).get("paths", []) if p.get("status") != "ok")
    eff = factset.efficiency or {}
    measurements_failed += 1 if eff.get("error") or eff.get("failed") else 0
    return ScanSummary(
        hosts=len(factset.hosts), unreachable=unreachable, probe_errors=probe_errors,
        by_status=by_status, failed_by_severity=failed, worst_failed_severity=worst,
        incomplete=bool(unreachable or probe_errors or measurements_failed),
    )


def build_report(factset: FactSet, findings: list[Finding], *, profiles: list[str], started_at: str,
                 finished_at: str, duration_s: float, site_file: str | None) -> ScanReport:
    from advisor import __version__

    # built without re-validation: every field comes from validated host facts (a 10,000-host
    # report would otherwise copy every host's facts once more)
    hosts = [
        HostReport.model_construct(
            name=h.name, roles=h.roles, groups=h.groups, address=h.address, reachable=h.reachable, errors=h.errors,
            probes={n: r.status.value for n, r in h.probes.items()},
            probe_messages={n: r.message for n, r in h.probes.items() if r.message},
            facts={n: r.facts for n, r in h.probes.items() if r.status == ProbeStatus.ok},
        )
        for h in factset.hosts.values()
    ]
    return ScanReport(
        scan_id=str(uuid.uuid4()), tool_version=__version__, site=factset.site, site_file=site_file, profiles=profiles,
        started_at=started_at, finished_at=finished_at, duration_s=round(duration_s, 3),
        hosts=hosts, findings=findings, summary=summarise(factset, findings),
        mesh=factset.mesh, efficiency=factset.efficiency, flows=factset.flows,
    )


def load_report(path: str | Path) -> ScanReport:
    """Read a scan JSON written by ``storadvise scan --json`` (schema 2.x, or 1.x: advisor.report.wire);
    refuses other schema versions."""
    p = Path(path)
    try:
        text = p.read_text()
    except FileNotFoundError:
        raise StoradviseError(f"{p}: scan report not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise StoradviseError(f"{p}: cannot read scan report: {exc}") from None
    return report_from_data(p, load_json(text, p))  # nesting and digits bounded (advisor.report.saved_json)


def report_from_data(where: Any, data: Any) -> ScanReport:
    """A report from its JSON data as read (schema 2.x or 1.x); ``where`` names it in errors."""
    data = upgrade(where, data)
    try:
        return ScanReport.model_validate(data)
    except ValidationError as exc:
        e = exc.errors()[0]
        raise StoradviseError(f"{where}: invalid scan report at {'.'.join(str(x) for x in e['loc'])}: {e['msg']}") from None


def exit_code(summary: ScanSummary, fail_on: str) -> int:
    """0 clean; 2 a failed finding at or above ``fail_on``; 3 incomplete (and nothing at 2)."""
    threshold = SEVERITY_ORDER.index(fail_on)
    if any(n for s, n in summary.failed_by_severity.items() if SEVERITY_ORDER.index(s) >= threshold):
        return 2
    if summary.incomplete:
        return 3
    return 0
