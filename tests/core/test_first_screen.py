"""The first screen of a scan (issue 37, items 9 and 11): no empty section, hygiene lines with their
severity and current -> target, what --probes and a scan with no --role left out, "every probe ran" only
when it is so, no "0 failed ()"; and the counts of the console, JUnit and audit agree (docs/reports.md,
"Counts"). The findings come from the shipped rules and the diagnosis run over facts as the probes parse
them, with one host unreachable."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from rich.console import Console

from advisor.audit.checklist import audit_checklist
from advisor.report.console import render_scan
from advisor.report.junit import junit_xml
from tests.support.small_report import small_report

REPO = Path(__file__).resolve().parents[2]


def _console(report, verbose=False) -> str:
    buf = io.StringIO()
    render_scan(report, Console(file=buf, width=200, color_system=None, emoji=False), verbose=verbose)
    return buf.getvalue()


def test_console_junit_and_audit_count_the_same_failed_checks():
    report, site, catalog = small_report()
    text = _console(report)
    m = re.search(r"^(\d+) failed \(([^)]*)\) on (\d+) host checks, (\d+) info", text, re.M)
    assert m, text
    findings, checks, info = int(m.group(1)), int(m.group(3)), int(m.group(4))
    assert (findings, checks) == (2, 3)  # SACK on st01; timestamps on wn01, wn02
    assert info >= 1  # the default qdisc on three hosts
    doc = ET.fromstring(junit_xml(report).split("?>", 1)[1])
    assert int(doc.get("failures")) == checks
    # the hosts table: "│ hosts │ n │ roles │ reachable │ probes │ failed (crit/high/med/low) │", rows folded
    table = _console(report, verbose=True).split("Findings")[0]
    rows = [r.split("│") for r in table.splitlines() if r.startswith("│") and r.split("│")[6].strip()[:1].isdigit()]
    assert sum(int(r[2]) * sum(map(int, r[6].split("/"))) for r in rows) == checks
    items = audit_checklist(report, site, catalog, threshold="low")
    about_wn03 = [i for i in items if "wn03" in i.subject and not i.passed]
    assert len(about_wn03) == 1 and about_wn03[0].check == "reachable", about_wn03
    settings = [i for i in items if i.check == "setting" and not i.passed]
    assert len(settings) == checks and all("expected" in i.message or "wants" in i.message for i in settings)


def test_first_screen_has_no_empty_section_and_hygiene_says_severity_and_values():
    report, _, _ = small_report()
    assert not report.causes and report.hygiene  # no measured symptom: every failed setting is hygiene
    text = _console(report)
    assert "0 cause(s)" not in text and "What to change first" not in text
    hygiene = text.split("Hygiene", 1)[1].splitlines()[1:]
    qdisc = next(ln for ln in hygiene if "NET-DEFAULT-QDISC" in ln)
    assert qdisc.split()[0] == "INFO" and "net.core.default_qdisc pfifo_fast -> fq" in qdisc, qdisc
    sack = next(ln for ln in hygiene if "NET-TCP-SACK" in ln)
    assert sack.split()[0] == "HIGH" and "net.ipv4.tcp_sack 0 -> 1" in sack, sack


def test_first_screen_says_what_probes_and_role_left_out(tmp_path):
    r = subprocess.run([sys.executable, "-m", "advisor.cli.root", "scan", "--probes", "network.*,host", "--sample-seconds",
                        "0.2", "--no-history"], capture_output=True, text=True, cwd=tmp_path, timeout=300,
                       env={**os.environ, "COLUMNS": "200"})
    assert r.returncode in (0, 2), r.stderr
    text = " ".join(r.stdout.split())
    assert "every probe" not in text and "failed ()" not in text
    assert "left out by --probes/--skip-probes (" in text and "block.diskstats" in text
    assert "scanned with no role, so the" in text and "--role storage" in text
    assert "0 cause(s)" not in text
