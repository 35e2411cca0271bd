"""verify's outcome per finding (advisor/report/scan_compare.py compare_findings): a failure is "fixed" only when
the new scan looked at it and found it passing."""

from advisor.report.scan_compare import compare_findings
from advisor.model.findings import Finding, FindingStatus, Severity
from advisor.report.model import HostReport, ScanReport, ScanSummary


def _report(findings, probes=None):
    host = HostReport(name="st01", reachable=True, probes=probes or {"ceph.osd_perf": "ok"})
    return ScanReport(tool_version="t", site="s", profiles=[], started_at="", finished_at="", duration_s=0.0,
                      hosts=[host], findings=findings,
                      summary=ScanSummary(hosts=1, unreachable=0, probe_errors=0, by_status={}, failed_by_severity={},
                                          worst_failed_severity=None, incomplete=False))


def _f(status, subject=None, message=None):
    return Finding(rule_id="CEPH-OSD-SLOW", hosts=["st01"], status=status, severity=Severity.medium,
                   subject=subject, message=message)


def _outcomes(before, after):
    return {(r["rule_id"], r["host"], r["subject"]): r["outcome"] for r in compare_findings(before, after)}


def test_a_probe_that_failed_in_the_new_scan_leaves_the_failure_not_checked():
    before = _report([_f(FindingStatus.fail, "4"), _f(FindingStatus.passed, "3")])
    # the ceph probe timed out on the host in the new scan: one error finding, no subjects
    after = _report([_f(FindingStatus.error, message="probe ceph.osd_perf failed: timed out after 30 s")],
                    probes={"ceph.osd_perf": "error"})
    out = _outcomes(before, after)
    assert out[("CEPH-OSD-SLOW", "st01", "4")] == "not_checked"
    assert "fixed" not in out.values()


def test_a_failure_the_new_scan_saw_pass_is_fixed_and_one_still_failing_is_not():
    before = _report([_f(FindingStatus.fail, "4"), _f(FindingStatus.fail, "5")])
    after = _report([_f(FindingStatus.passed, "4"), _f(FindingStatus.fail, "5")])
    out = _outcomes(before, after)
    assert out[("CEPH-OSD-SLOW", "st01", "4")] == "fixed"
    assert out[("CEPH-OSD-SLOW", "st01", "5")] == "still_failing"
