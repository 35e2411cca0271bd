"""A failed finding reads as what is wrong, and its comparison as the rule states it (issue 37, items 2
and 10): every shipped rule carries the words for its failure beside its healthy title; the console
(--verbose), the HTML report and JUnit list a failure under those words, never under the title, and
print "expected != 0", "expected < 75%", "expected one of fq, fq_codel" with units, never a Python list.
The findings come from the shipped rules run by the real engine over facts as the probes parse them."""

from __future__ import annotations

import io
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from rich.console import Console

from advisor.model.facts import FactSet, HostFacts, ProbeResult, ProbeStatus
from advisor.model.findings import Finding, FindingStatus, Severity
from advisor.report.console import render_scan
from advisor.report.html import scan_html
from advisor.report.junit import junit_xml
from advisor.report.model import build_report
from advisor.rules.engine import evaluate
from advisor.rules.specs import FAILURE_FIELDS, failure_line, load_catalog, substitute_vars
from advisor.site.model import Site
from probes import all_probes
from probes.network import SysctlFacts

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def test_every_shipped_rule_has_words_for_its_failure():
    catalog = load_catalog()
    missing = sorted(rid for rid, r in catalog.rules.items() if not r.failure)
    assert missing == []
    for rid, rule in catalog.rules.items():
        f = Finding(rule_id=rid, title=rule.title, hosts=["st01", "st02"], status=FindingStatus.fail,
                    severity=Severity.high, observed=3,
                    expected=substitute_vars(rule.expected, catalog.pack_vars) if rule.kind == "check" else ">= 4",
                    subject="sda", message="a note", operator=rule.operator or "analytic", unit=rule.unit)
        line = failure_line(rule, f)
        assert line and "{" not in line and line != rule.title, (rid, line)
        assert "st[01-02]" in line or "{host}" not in rule.failure, (rid, line)
    assert set(FAILURE_FIELDS) >= {"host", "subject", "observed", "expected", "comparison"}


def _sysctls(**values) -> dict:
    return SysctlFacts.model_validate({"sysctls": {
        k: {"runtime": v, "line": f"{k} = {v}"} for k, v in values.items()}}).model_dump(mode="json")


def _diskstats() -> dict:
    text = (FIXTURES / "diskio" / "proc-diskstats-firecracker-vm-pair.txt").read_text()
    return all_probes()["block.diskstats"].parse(text).model_dump(mode="json")


def _report():
    facts = FactSet(site="t")
    sysctls = _sysctls(**{"net.ipv4.tcp_sack": "0", "net.ipv4.tcp_timestamps": "0",
                          "net.core.default_qdisc": "pfifo_fast"})
    disks = _diskstats()
    disks["devices"]["vda"]["util_pct"] = 92.5  # the fixture's disk, made busy
    facts.hosts["st01"] = HostFacts(name="st01", roles=["storage"], probes={
        "network.sysctl": ProbeResult(probe="network.sysctl", status=ProbeStatus.ok, facts=sysctls),
        "block.diskstats": ProbeResult(probe="block.diskstats", status=ProbeStatus.ok, facts=disks)})
    site = Site(name="t", hosts=[{"name": "st01", "roles": ["storage"]}])
    ev = evaluate(facts, site, profiles=["generic"])
    return build_report(facts, ev.findings, profiles=["generic"], started_at="2026-01-01T00:00:00+00:00",
                        finished_at="2026-01-01T00:00:01+00:00", duration_s=1.0, site_file=None)


def _console(report) -> str:
    buf = io.StringIO()
    render_scan(report, Console(file=buf, width=80, color_system=None, emoji=False), verbose=True)
    return re.sub(r"\s+", " ", buf.getvalue())


def test_console_lists_a_failure_as_what_is_wrong_with_the_comparison_and_units():
    report = _report()
    text = _console(report)
    assert "SACK is off on st01 (net.ipv4.tcp_sack = 0)" in text
    # the healthy title is not the headline of the failed finding
    assert "NET-TCP-SACK TCP selective acknowledgements are enabled" not in text
    assert "observed 0, expected != 0" in text                          # NET-TCP-TIMESTAMPS: ne 0
    assert "observed 92.5%, expected < 75%" in text                     # DISK-UTIL-HIGH: lt 75, unit %
    assert "vda on st01 is busy 92.5% of the time, wants < 75%" in text
    assert "observed pfifo_fast, expected one of fq, fq_codel" in text  # NET-DEFAULT-QDISC: in [...]
    assert "['fq'" not in text and "expected [" not in text


def test_html_and_junit_list_a_failure_as_what_is_wrong():
    report = _report()
    html = scan_html(report)
    summary = next(s for s in re.findall(r"<summary>(.*?)</summary>", html, re.S) if "NET-TCP-SACK" in s)
    assert "SACK is off on st01" in summary and "TCP selective acknowledgements are enabled" not in summary
    assert "expected</b> != 0" in html and "expected</b> one of fq, fq_codel" in html
    doc = ET.fromstring(junit_xml(report).split("?>", 1)[1])
    sack = next(c for c in doc.iter("testcase") if c.get("classname") == "storadvise.NET-TCP-SACK")
    assert sack.find("failure").get("message").startswith("SACK is off on st01")


def test_disk_rules_leave_out_loop_zram_and_ram_devices_as_disk_smart_does():
    """The fixture is a real VM's /proc/diskstats: loop0-7, vda, zram0. Only vda is a disk."""
    report = _report()
    judged = {f.subject for f in report.findings if f.rule_id == "DISK-UTIL-HIGH" and f.subject}
    assert judged == {"vda"}, judged


@pytest.mark.parametrize("operator,expected,unit,text", [
    ("ne", 0, None, "!= 0"), ("lt", "75", "%", "< 75%"), ("in", ["fq", "fq_codel"], None, "one of fq, fq_codel"),
    ("ge", 1073741824, "bytes", ">= 1073741824 bytes (1 GiB)"), ("eq", True, None, "true"),
    ("between", [1, 3], "ms", "between 1 ms and 3 ms"), ("absent", None, None, "not set"),
    ("analytic", ">= 0.8 x 200 Mb/s", "bytes", ">= 0.8 x 200 Mb/s"),
])
def test_comparison_text(operator, expected, unit, text):
    from advisor.rules.comparisons import comparison_text

    assert comparison_text(operator, expected, unit) == text
