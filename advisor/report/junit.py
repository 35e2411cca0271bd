"""JUnit XML for CI systems that show test reports (Jenkins, GitLab, GitHub actions).

The layout follows the junit-10.xsd schema that Jenkins' xunit plugin validates against: a
``<testsuites>`` root, one ``<testsuite>`` per host (plus one named ``site`` for findings about no
host in particular), and one ``<testcase>`` per rule x host. Only a failed finding at ``low`` or
above is a ``<failure>``: an ``info`` finding is a passing case whose observation is kept in
``<system-out>``. Characters XML 1.0 cannot carry (control characters read from hosts) are written
as ``\\xNN`` so the file stays well-formed whatever a host printed.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from advisor.model.findings import Finding, FindingStatus, Severity
from advisor.report.finding_text import said
from advisor.report.model import ScanReport
from advisor.report.safe_text import xml_text

SITE_SUITE = "site"


def iso8601(stamp: str) -> str:
    """A timestamp with a colon in its UTC offset (``+0100`` -> ``+01:00``), as ISO 8601 extended form wants."""
    return re.sub(r"([+-]\d{2})(\d{2})$", r"\1:\2", stamp)


def _case_name(f: Finding) -> str:
    return f.rule_id + (f"[{f.subject}]" if f.subject else "")


def _add_case(suite: ET.Element, f: Finding, host: str, counts: dict[str, int]) -> None:
    case = ET.SubElement(suite, "testcase", classname=xml_text(f"storadvise.{f.rule_id}"),
                         name=xml_text(_case_name(f)), time="0")
    counts["tests"] += 1
    detail = "\n".join([*(e for e in f.evidence if not f.hosts or len(f.hosts) == 1 or e.startswith(f"{host}: ")),
                        *([f"remediation: {f.remediation.text}"] if f.remediation.text else [])])
    if f.status == FindingStatus.fail and f.severity != Severity.info:
        counts["failures"] += 1
        el = ET.SubElement(case, "failure", type=f.severity.value,
                           message=xml_text(said(f, host)))
        el.text = xml_text(detail)
    elif f.status == FindingStatus.fail:  # info: worth reading, never a red build
        out = ET.SubElement(case, "system-out")
        out.text = xml_text(f"info: {said(f, host)}\n{detail}")
    elif f.status == FindingStatus.error:
        counts["errors"] += 1
        ET.SubElement(case, "error", type="probe-error", message=xml_text(f.message or "error"))
    elif f.status in (FindingStatus.waived, FindingStatus.not_applicable):
        counts["skipped"] += 1
        ET.SubElement(case, "skipped", message=xml_text(f.message or f.status.value))


def junit_xml(report: ScanReport) -> str:
    root = ET.Element("testsuites", name=xml_text(f"storadvise.{report.site}"), time=f"{max(report.duration_s, 0):.3f}")
    by_host: dict[str, list[Finding]] = {h.name: [] for h in report.hosts}
    for f in report.findings:
        for host in f.hosts or [SITE_SUITE]:
            by_host.setdefault(host, []).append(f)
    total = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    stamp = iso8601(report.started_at)
    for host, findings in by_host.items():
        suite = ET.SubElement(root, "testsuite", name=xml_text(f"storadvise.{report.site}.{host}"),
                              hostname=xml_text(host), timestamp=stamp, time="0")
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        for f in findings:
            _add_case(suite, f, host, counts)
        for k, v in counts.items():
            suite.set(k, str(v))
            total[k] += v
    for k in ("tests", "failures", "errors"):
        root.set(k, str(total[k]))
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def checklist_junit(site: str, items: list, started_at: str, duration_s: float) -> str:
    """An audit checklist (``advisor.audit.checklist.CheckItem``s) as JUnit: one suite per check, one case per item."""
    root = ET.Element("testsuites", name=xml_text(f"storadvise.audit.{site}"), time=f"{max(duration_s, 0):.3f}")
    suites: dict[str, ET.Element] = {}
    total = {"tests": 0, "failures": 0}
    for item in items:
        suite = suites.get(item.check)
        if suite is None:
            suite = suites[item.check] = ET.SubElement(root, "testsuite", name=xml_text(f"audit.{item.check}"),
                                                       timestamp=iso8601(started_at), time="0", errors="0", skipped="0")
        case = ET.SubElement(suite, "testcase", classname=xml_text(f"storadvise.audit.{item.check}"),
                             name=xml_text(item.subject), time="0")
        total["tests"] += 1
        if not item.passed:
            total["failures"] += 1
            ET.SubElement(case, "failure", type=item.check, message=xml_text(item.message))
        else:
            ET.SubElement(case, "system-out").text = xml_text(item.message)
    for suite in suites.values():
        cases = suite.findall("testcase")
        suite.set("tests", str(len(cases)))
        suite.set("failures", str(sum(1 for c in cases if c.find("failure") is not None)))
    root.set("tests", str(total["tests"]))
    root.set("failures", str(total["failures"]))
    root.set("errors", "0")
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
