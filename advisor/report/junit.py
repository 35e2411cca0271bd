"""JUnit XML: one test case per finding, for CI systems that show test reports."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from advisor.findings import FindingStatus
from advisor.report.model import ScanReport


def junit_xml(report: ScanReport) -> str:
    suite = ET.Element("testsuite", name=f"storadvise.{report.site}", timestamp=report.started_at,
                       time=f"{report.duration_s:.3f}")
    tests = failures = errors = skipped = 0
    for f in report.findings:
        tests += 1
        name = f.rule_id + (f"[{f.subject}]" if f.subject else "") + f" {','.join(f.hosts)}"
        case = ET.SubElement(suite, "testcase", classname=f"storadvise.{f.rule_id}", name=name)
        if f.status == FindingStatus.fail:
            failures += 1
            el = ET.SubElement(case, "failure", type=f.severity.value,
                               message=f"{f.title}: observed {f.observed}, expected {f.expected}")
            el.text = "\n".join(f.evidence + ([f"remediation: {f.remediation.text}"] if f.remediation.text else []))
        elif f.status == FindingStatus.error:
            errors += 1
            ET.SubElement(case, "error", message=f.message or "error")
        elif f.status in (FindingStatus.waived, FindingStatus.not_applicable):
            skipped += 1
            ET.SubElement(case, "skipped", message=f.message or f.status.value)
    suite.set("tests", str(tests))
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    suite.set("skipped", str(skipped))
    return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"
