"""The HTML report in a real headless browser (Debian's chromium): renders cleanly, offline, and reads well."""

from __future__ import annotations


from advisor.model.findings import Finding, FindingStatus, Severity
from advisor.report.html import host_groups, scan_html

from tests.support.browser import open_page
from tests.support.reports import make_report


def _write(tmp_path, html):
    p = tmp_path / "report.html"
    p.write_text(html)
    return p


def test_renders_offline_with_one_cell_per_path(report, tmp_path):
    with open_page(_write(tmp_path, scan_html(report))) as (page, problems):
        cells = page.eval_on_selector_all("svg.heatmap rect.cell", "els => els.map(e => [e.dataset.src, e.dataset.dst])")
        assert sorted(map(tuple, cells)) == sorted((p["src"], p["dst"]) for p in report.mesh["paths"])
        assert page.locator("svg.heatmap rect.cell[data-status=failed]").count() == 1
        # values on hover
        page.hover("svg.heatmap rect.cell[data-src=gpfs01][data-dst=wn01]")
        tip = page.locator("#tip")
        assert tip.is_visible() and "310 Mb/s of 1,000 Mb/s expected (31%)" in tip.inner_text()
        page.hover("h1")
        assert not tip.is_visible()
        assert page.locator("#efficiency svg rect.bar").count() == 2
    assert problems == []


def test_failing_finding_visible_without_scrolling_on_a_big_site(tmp_path):
    rep = make_report()
    many = [Finding(rule_id=f"RULE-{i:03d}", title="a passing check", hosts=[f"wn{i:03d}"], status=FindingStatus.passed,
                    severity=Severity.low) for i in range(300)]
    worst = Finding(rule_id="NET-TCP-SACK", title="TCP SACK disabled", hosts=["gpfs01"], status=FindingStatus.fail,
                    severity=Severity.critical, evidence=[f"gpfs01: line {i}" for i in range(60)])
    rep = make_report(findings=many + [worst])
    with open_page(_write(tmp_path, scan_html(rep)), height=720) as (page, problems):
        summary = page.locator("#summary").bounding_box()
        first = page.locator("#failing details.finding.status-fail").first
        box = first.locator("summary").bounding_box()
        assert first.locator("summary").inner_text().startswith("CRITICAL")
        assert summary["y"] + summary["height"] <= box["y"] and box["y"] + box["height"] <= 720
        assert page.evaluate("window.scrollY") == 0
    assert problems == []


def test_hostile_host_strings_stay_text(tmp_path):
    bad = '<script>alert("x")</script>'
    rep = make_report(findings=[Finding(rule_id="R1", title=bad, hosts=["gpfs01"], status=FindingStatus.fail,
                                        severity=Severity.high, evidence=[f"gpfs01: {bad}\x1b[31m"], observed=bad)])
    rep.mesh["paths"][0]["error"] = bad
    rep.mesh["paths"][0]["status"] = "failed"
    with open_page(_write(tmp_path, scan_html(rep))) as (page, problems):
        assert bad in page.locator("#failing summary").first.inner_text()
        assert "\\x1b[31m" in page.locator("pre.evidence").inner_text()
    assert problems == []


def test_identical_hosts_share_a_row():
    rep = make_report(findings=[
        Finding(rule_id="NET-QDISC", hosts=["gpfs01", "wn01", "wn02"], status=FindingStatus.fail, severity=Severity.info,
                observed="pfifo_fast")])
    assert host_groups(rep) == [["gpfs01"], ["wn01", "wn02"]]
    rep.findings.append(Finding(rule_id="FW", hosts=["wn02"], status=FindingStatus.waived, severity=Severity.low))
    assert host_groups(rep) == [["gpfs01"], ["wn01"], ["wn02"]]


def test_verify_section(report, tmp_path):
    result = {"site": "demo", "before_started_at": "2026-11-22T10:00:00+01:00", "fail_on": "high",
              "summary": {"fixed": 1, "still_failing": 0, "new": 0, "failing_at_or_above_fail_on": 0},
              "findings": [{"outcome": "fixed", "rule_id": "NET-TCP-SACK", "host": "gpfs01", "subject": None,
                            "severity": "high", "before": {"status": "fail", "observed": 0},
                            "after": {"status": "pass", "observed": 1}}],
              "paths": [{"src": "gpfs01", "dst": "wn01", "before": {"measured_bps": 3.1e8},
                         "after": {"measured_bps": 9.4e8}, "ratio_after_before": 3.03, "after_of_expected": 0.94}]}
    with open_page(_write(tmp_path, scan_html(report, verify=result))) as (page, problems):
        text = page.locator("#verify").inner_text()
        assert "fixed 1, still failing 0, new 0" in text and "310 Mb/s" in text and "940 Mb/s" in text and "3.03" in text
    assert problems == []


def test_cache_curves_from_a_real_simulation(report, tmp_path):
    import json
    import random
    import subprocess
    import sys
    from pathlib import Path

    rng = random.Random(7)
    rows = ["timestamp,file,size,server"]
    for i in range(3000):
        f = int(rng.paretovariate(1.2)) % 400
        rows.append(f"{1700000000 + i},/store/data/f{f}.root,{(f % 7 + 1) * 2**20},se{f % 2}")
    log = tmp_path / "transfers.csv"
    log.write_text("\n".join(rows) + "\n")
    repo = Path(__file__).resolve().parents[2]
    sim = tmp_path / "sim.json"
    r = subprocess.run([sys.executable, "-m", "advisor.cli.root", "cache", "simulate", str(log), "--capacity", "64M,256M,1G",
                        "--policy", "lru,arc", "--curve", "--output", str(sim)], capture_output=True, text=True, cwd=repo)
    assert r.returncode == 0, r.stderr
    configs = json.loads(sim.read_text())["configurations"]
    scan = tmp_path / "scan.json"
    scan.write_text(report.model_dump_json())
    html = tmp_path / "site.html"
    r = subprocess.run([sys.executable, "-m", "advisor.cli.root", "report", str(scan), "--html", str(html),
                        "--cache-simulation", str(sim)], capture_output=True, text=True, cwd=repo)
    assert r.returncode == 0, r.stderr
    with open_page(html) as (page, problems):
        assert page.locator("#cache svg.curves").count() == 2
        # one point per simulated configuration in each plot, plus the one-pass LRU curve as a line
        assert page.locator("#cache svg.curves").first.locator("circle.point").count() >= len(configs)
        assert page.locator("#cache svg.curves").first.locator("path.curve").count() == 3
        tips = page.eval_on_selector_all("#cache svg.curves >> nth=0 >> circle.point title", "els => els.map(e => e.textContent)")
        c = configs[0]
        name = c["policy"].upper()
        assert any(t.startswith(f"{name}: ") and t.endswith(f"{c['hit_efficiency']:.1%}") for t in tips), tips
    assert problems == []
    bad = tmp_path / "bad.json"
    bad.write_text('{"configurations": [{"policy": "lru"}]}')
    r = subprocess.run([sys.executable, "-m", "advisor.cli.root", "report", str(scan), "--html", str(html),
                        "--cache-simulation", str(bad)], capture_output=True, text=True, cwd=repo)
    assert r.returncode == 1 and "configurations[0]: needs" in r.stderr and r.stderr.count("\n") == 1
