"""The diagnosis of a scan report: built in the scan pipeline, and again for a saved report that
predates the diagnosis (``plan --scan``, ``verify --before`` of an older scan)."""

from __future__ import annotations

from advisor.diagnosis import diagnose, diagnosis_input
from advisor.diagnosis.report_types import Diagnosis
from advisor.util.gc_paused import gc_paused
from advisor.report.model import ScanReport
from advisor.rules.specs import RuleCatalog, load_catalog


def diagnose_report(report: ScanReport, catalog: RuleCatalog | None = None) -> Diagnosis:
    if catalog is None:
        catalog = load_catalog()
    inp = diagnosis_input(report.findings, report.mesh, report.efficiency, {h.name: h.facts for h in report.hosts},
                          catalog, {h.name: h.address for h in report.hosts if h.address}, report.flows)
    with gc_paused():  # a setting and a path state per host and path, none in a reference cycle
        return diagnose(inp)


def ensure_diagnosis(report: ScanReport, catalog: RuleCatalog | None = None) -> ScanReport:
    """A saved report without causes (older storadvise) gets them now; one with causes keeps its own."""
    if report.causes or report.hygiene or report.unexplained or report.inconclusive or report.plan_prediction:
        return report
    if not any(f.status.value == "fail" for f in report.findings) and not report.mesh and not report.flows:
        return report
    return report.with_diagnosis(diagnose_report(report, catalog))
