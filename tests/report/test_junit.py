"""JUnit XML: valid against the constraints of Jenkins' junit-10.xsd, one case per rule x host, info is not a failure."""

from __future__ import annotations


from lxml import etree

from advisor.report.junit import junit_xml
from tests.support.paths import JUNIT_XSD


def _validate(text: str):
    schema = etree.XMLSchema(etree.parse(str(JUNIT_XSD)))
    doc = etree.fromstring(text.encode())
    assert schema.validate(doc), schema.error_log.last_error
    return doc


def test_schema_valid_with_testsuites_root(report):
    doc = _validate(junit_xml(report))
    assert doc.tag == "testsuites"
    assert {s.get("hostname") for s in doc.findall("testsuite")} == {"gpfs01", "wn01", "wn02", "site"}


def test_one_case_per_rule_and_host(report):
    doc = _validate(junit_xml(report))
    cases = [(s.get("hostname"), c.get("classname")) for s in doc.findall("testsuite") for c in s.findall("testcase")]
    assert len(cases) == len(set(cases))
    assert [h for h, c in cases if c == "storadvise.NET-QDISC"] == ["gpfs01", "wn01", "wn02"]
    assert doc.get("tests") == str(len(cases)) == "9"


def test_info_is_not_a_failure(report):
    doc = _validate(junit_xml(report))
    qdisc = doc.findall(".//testcase[@classname='storadvise.NET-QDISC']")
    assert qdisc and all(c.find("failure") is None for c in qdisc)
    assert all("pfifo_fast" in c.find("system-out").text for c in qdisc)
    # only the high SACK finding and the medium site-level mesh finding fail
    failed = sorted(c.get("classname") for c in doc.iter("testcase") if c.find("failure") is not None)
    assert failed == ["storadvise.MESH-THROUGHPUT", "storadvise.NET-TCP-SACK"]
    assert doc.get("failures") == "2" and doc.get("errors") == "1"
    # a host's evidence stays with that host's case
    (wn01,) = [c for c in qdisc if c.getparent().get("hostname") == "wn01"]
    assert "wn01: pfifo_fast" in wn01.find("system-out").text and "gpfs01" not in wn01.find("system-out").text


def test_control_characters_escaped(report):
    text = junit_xml(report)
    assert "\x07" not in text and "\x00" not in text
    doc = _validate(text)
    (sack,) = doc.findall(".//testcase[@classname='storadvise.NET-TCP-SACK']")
    assert "bell\\x07 and nul\\x00" in sack.find("failure").text


def test_timestamp_has_colon_in_offset(report):
    doc = _validate(junit_xml(report))
    assert {s.get("timestamp") for s in doc.findall("testsuite")} == {"2026-11-23T10:00:00+01:00"}


def test_scan_writes_colon_offsets():
    from advisor.collect.collector import now_iso
    import re

    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d", now_iso())
