"""A scan report of a small site built in memory: three hosts (two identical workers), a mesh with one
failed path, an efficiency test, and findings of every status, some with control characters a host printed;
the same with a diagnosis; and a real scan of this machine."""

from __future__ import annotations

import subprocess
from pathlib import Path

from advisor.model.findings import Finding, FindingStatus, Remediation, Severity
from advisor.report.model import HostReport, ScanReport, ScanSummary
from tests.support.cli import storadvise
from tests.support.paths import REPO


def _path(src, dst, measured, expected=10**9, status="ok"):
    return {"src": src, "dst": dst, "status": status, "error": None if status == "ok" else "connection refused",
            "measured_bps": measured if status == "ok" else None, "expected_bps": expected,
            "ratio": (measured / expected) if status == "ok" else None, "retransmits": 12, "rtt_us": 180}


def make_report(site="demo", started_at="2026-11-23T10:00:00+0100", findings=None, mesh=True) -> ScanReport:
    hosts = [
        HostReport(name="gpfs01", roles=["storage"], groups=["storage"], address="10.0.0.1", reachable=True,
                   probes={"network.sysctl": "ok"}),
        HostReport(name="wn01", roles=["worker"], groups=["workers"], address="10.0.0.11", reachable=True,
                   probes={"network.sysctl": "ok"}),
        HostReport(name="wn02", roles=["worker"], groups=["workers"], address="10.0.0.12", reachable=True,
                   probes={"network.sysctl": "ok"}),
    ]
    if findings is None:
        findings = [
            Finding(rule_id="NET-TCP-SACK", title="TCP SACK disabled", hosts=["gpfs01"], status=FindingStatus.fail,
                    severity=Severity.high, observed=0, expected=1, subject="net.ipv4.tcp_sack",
                    evidence=["gpfs01: net.ipv4.tcp_sack = 0", "gpfs01: bell\x07 and nul\x00 from the host"],
                    rationale="Without SACK a lossy path recovers one segment per RTT (RFC 2018).",
                    references=["RFC 2018"], remediation=Remediation(text="set net.ipv4.tcp_sack=1",
                                                                     role="network_tuning")),
            Finding(rule_id="NET-QDISC", title="default qdisc is not fq", hosts=["gpfs01", "wn01", "wn02"],
                    status=FindingStatus.fail, severity=Severity.info, observed="pfifo_fast", expected="fq",
                    evidence=["gpfs01: pfifo_fast", "wn01: pfifo_fast", "wn02: pfifo_fast"]),
            Finding(rule_id="NET-RMEM-MAX", title="rmem_max large enough", hosts=["wn01", "wn02"],
                    status=FindingStatus.passed, severity=Severity.medium, observed=67108864, expected=67108864),
            Finding(rule_id="FW-PRIVATE", title="firewall on the private network", hosts=["wn02"],
                    status=FindingStatus.waived, severity=Severity.medium, message="accepted until 2027-01-01"),
            Finding(rule_id="GPFS-PAGEPOOL", title="pagepool", hosts=["gpfs01"], status=FindingStatus.error,
                    severity=Severity.medium, message="mmlsconfig: parse error at line 3"),
            Finding(rule_id="MESH-THROUGHPUT", title="path below its expected rate", hosts=[],
                    status=FindingStatus.fail, severity=Severity.medium, subject="gpfs01->wn01",
                    observed="310 Mb/s", expected="1000 Mb/s"),
        ]
    by_status = {s.value: sum(1 for f in findings if f.status == s) for s in FindingStatus}
    failed = {s.value: sum(1 for f in findings if f.status == FindingStatus.fail and f.severity == s) for s in Severity}
    worst = next((s for s in reversed(list(failed)) if failed[s]), None)
    paths = [_path("gpfs01", "wn01", 310e6), _path("gpfs01", "wn02", 940e6), _path("wn01", "gpfs01", 930e6),
             _path("wn02", "gpfs01", 700e6), _path("wn01", "wn02", 0, status="failed"), _path("wn02", "wn01", 950e6)]
    return ScanReport(
        tool_version="0.1.0", site=site, profiles=["generic"], started_at=started_at,
        finished_at=started_at, duration_s=12.5, hosts=hosts, findings=findings,
        summary=ScanSummary(hosts=3, unreachable=0, probe_errors=0, by_status=by_status, failed_by_severity=failed,
                            worst_failed_severity=worst, incomplete=True),
        mesh={"rounds": 3, "paths": paths} if mesh else None,
        efficiency={"mean": 0.62, "hosts": {"wn01": {"efficiency": 0.55}, "wn02": {"efficiency": 0.69}}},
    )




def cli(*args, cwd: Path) -> subprocess.CompletedProcess:
    """storadvise in ``cwd``, with a scratch HOME there."""
    return storadvise(*args, cwd=cwd, env={"PYTHONPATH": str(REPO), "HOME": str(cwd),
                                           "PATH": "/usr/bin:/bin:/usr/sbin:/sbin"})


def local_scan(tmp_path: Path, roles: list[str]) -> Path:
    """A real scan of this machine (no mesh, no efficiency test, no smartctl) written to tmp_path/scan.json."""
    (tmp_path / "site.yml").write_text("name: here\ntransport: local\nhosts:\n  - {name: box, address: localhost, "
                                       f"roles: [{', '.join(roles)}]}}\n")
    r = cli("scan", "--site", "site.yml", "--no-history", "--no-mesh", "--no-efficiency", "--skip-probes",
            "disk.smart", "-o", "scan.json", cwd=tmp_path)
    assert r.returncode in (0, 2, 3), r.stderr[-2000:]
    return tmp_path / "scan.json"


def diagnosed_report() -> ScanReport:
    """make_report with the mesh, findings and diagnosis of tests/support/diagnosis_site.py (four causes)."""
    from advisor.diagnosis import DiagnosisInput, diagnose
    from tests.support.diagnosis_site import ADDR, TAGS, findings, mesh, site_facts

    m = mesh()
    d = diagnose(DiagnosisInput(findings=findings(m), mesh=m, efficiency=None, facts=site_facts(), tags=TAGS,
                                addresses=ADDR))
    return make_report().model_copy(update={"mesh": m, "findings": findings(m)}).with_diagnosis(d)
