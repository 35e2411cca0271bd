"""Prometheus textfile: accepted by promtool's linter and by the client library's parser, values as scanned."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from advisor.model.findings import Finding, FindingStatus, Severity
from advisor.report.prometheus import prometheus_text, write_prometheus

from tests.support.reports import make_report

DASHBOARD = Path(__file__).resolve().parents[2] / "docs" / "grafana-storadvise.json"


def _promtool():
    tool = shutil.which("promtool")
    if tool is None:
        if os.environ.get("CI"):
            pytest.fail("promtool missing: install.sh installs Debian's prometheus package")
        pytest.skip("promtool not installed (bash install.sh)")
    return tool


def _samples(text):
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for fam in text_string_to_metric_families(text) for s in fam.samples}


def test_promtool_accepts_it(report, tmp_path):
    path = tmp_path / "collector" / "storadvise.prom"
    path.parent.mkdir()  # node_exporter's textfile directory exists; storadvise creates no directory
    write_prometheus(report, path)
    r = subprocess.run([_promtool(), "check", "metrics"], input=path.read_text(), capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert oct(path.stat().st_mode & 0o777) == "0o644" and not list(path.parent.glob(".storadvise.prom.*"))


def test_values_as_scanned(report):
    s = _samples(prometheus_text(report))
    assert s[("storadvise_path_throughput_bytes_per_second", (("dst", "wn01"), ("site", "demo"), ("src", "gpfs01")))] == 310e6 / 8
    assert s[("storadvise_path_ratio", (("dst", "wn01"), ("site", "demo"), ("src", "gpfs01")))] == 0.31
    assert s[("storadvise_path_ok", (("dst", "wn02"), ("site", "demo"), ("src", "wn01")))] == 0
    assert not any(k[0] == "storadvise_path_ratio" and ("src", "wn01") in k[1] and ("dst", "wn02") in k[1] for k in s)
    assert s[("storadvise_findings_failed", (("severity", "high"), ("site", "demo")))] == 1
    assert s[("storadvise_finding", (("host", "gpfs01"), ("rule", "NET-TCP-SACK"), ("severity", "high"), ("site", "demo"),
                                     ("status", "fail"), ("subject", "net.ipv4.tcp_sack")))] == 1
    assert s[("storadvise_host_reachable", (("host", "wn02"), ("site", "demo")))] == 1
    assert s[("storadvise_scan_duration_seconds", (("site", "demo"),))] == 12.5
    assert s[("storadvise_scan_timestamp_seconds", (("site", "demo"),))] == 1795424400  # 10:00 at +01:00
    assert s[("storadvise_efficiency_ratio", (("host", "wn01"), ("site", "demo")))] == 0.55


def test_hostile_label_values_escaped(tmp_path):
    rule = 'X"} 1\nstoradvise_fake{a="b'
    rep = make_report(site='we"ird\\site', findings=[
        Finding(rule_id=rule, hosts=["h\n1"], status=FindingStatus.fail, severity=Severity.low)])
    text = prometheus_text(rep)
    assert "storadvise_fake" not in [f.name for f in text_string_to_metric_families(text)]
    s = _samples(text)
    assert ("storadvise_finding", (("host", "h\n1"), ("rule", rule), ("severity", "low"), ("site", 'we"ird\\site'),
                                   ("status", "fail"), ("subject", ""))) in s
    r = subprocess.run([_promtool(), "check", "metrics"], input=text, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_grafana_dashboard_queries_series_we_write(report):
    dash = json.loads(DASHBOARD.read_text())
    written = {f.name for f in text_string_to_metric_families(prometheus_text(report))}
    exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
    used = {m for e in exprs for m in re.findall(r"storadvise_[a-z_]+", e)}
    assert used and used <= written, used - written
    assert {"storadvise_path_ratio", "storadvise_finding", "storadvise_host_reachable"} <= used
