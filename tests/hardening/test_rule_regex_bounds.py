"""A rule regex cannot let a host stall the scan (docs/security.md, "Rule packs").

A site rule ``operator: regex`` with a pattern that backtracks (``^([a-z]+)+$``) against a host that
reports 31 letters and a ``!`` kept ``scan --from`` busy for minutes (Python's ``re``); a pattern
that does not compile passed ``rules lint`` and failed only at scan time. Rule regexes are RE2 now,
compiled when the pack loads, and matched under a budget: a value past it is an error on that host
only."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.hardening.sysctl_capture import cli, sysctl_capture

RULE = """\
rules:
  - id: SITE-CC-NAME
    title: The congestion control algorithm has a plain name
    probe: network.sysctl
    fact: sysctls."net.ipv4.tcp_congestion_control".runtime
    operator: regex
    expected: {pattern}
    severity: low
    rationale: a site's own check
    remediation:
      text: Set a known congestion control algorithm.
"""


def run(*args, timeout=60):
    return cli(*args, timeout=timeout)


def rules_dir(tmp_path: Path, pattern: str) -> Path:
    d = tmp_path / "site-rules"
    d.mkdir(exist_ok=True)
    (d / "local.yml").write_text(RULE.format(pattern=json.dumps(pattern)))
    return d


def capture(tmp_path: Path, values: dict[str, str]) -> Path:
    """Hosts whose network.sysctl output is the fixture's, each with its own tcp_congestion_control."""
    return sysctl_capture(tmp_path, values)


def site_finding(report: dict) -> dict[str, tuple[str, str]]:
    """host -> (status, message) of SITE-CC-NAME."""
    return {h: (f["status"], f.get("message") or "") for f in report["findings"] if f["rule_id"] == "SITE-CC-NAME"
            for h in f["hosts"]}


def test_a_backtracking_pattern_does_not_hold_the_scan(tmp_path):
    cap = capture(tmp_path, {"hostile": "a" * 31 + "!", "good": "bbr"})
    start = time.monotonic()
    cp = run("scan", "--from", str(cap), "--rules", str(rules_dir(tmp_path, "^([a-z]+)+$")), "--json",
             "--no-history", "--fail-on", "critical", timeout=60)
    took = time.monotonic() - start
    assert cp.returncode in (0, 3), cp.stderr
    assert took < 15, f"scan --from took {took:.1f} s"
    by_host = site_finding(json.loads(cp.stdout))
    assert by_host == {"hostile": ("fail", ""), "good": ("pass", "")}, by_host


def test_a_value_past_the_budget_is_an_error_on_that_host_only(tmp_path):
    # 40 nested stars: RE2 runs it in linear time, but its program times a 1 MB value is past one match's budget
    cap = capture(tmp_path, {"hostile": "x" * 1_000_000, "good": "bbr"})
    cp = run("scan", "--from", str(cap), "--rules", str(rules_dir(tmp_path, "^(.*b){40}")), "--json",
             "--no-history", "--fail-on", "critical", timeout=60)
    assert cp.returncode == 3, cp.stderr  # a rule in error: incomplete
    by_host = site_finding(json.loads(cp.stdout))
    assert by_host["good"] == ("fail", ""), by_host
    status, message = by_host["hostile"]
    assert status == "error" and "regex budget" in message, by_host


def test_the_per_host_budget_spans_the_rules_matches():
    from advisor.rules.rule_regex import (HOST_BUDGET, MATCH_BUDGET, HostBudgetSpent, MatchBudget,
                                          compile_rule_regex, regex_search)

    pattern = "^(a|b)+c$"
    value = "a" * (MATCH_BUDGET // compile_rule_regex(pattern).programsize)  # each match just within its budget
    budget = MatchBudget()
    with pytest.raises(HostBudgetSpent):
        for _ in range(HOST_BUDGET // MATCH_BUDGET + 1):
            regex_search(pattern, value, budget)
    assert regex_search(pattern, value, MatchBudget()) is False  # another host's budget is its own


@pytest.mark.parametrize("pattern, why", [
    ("(unclosed", "missing )"),
    (r"(a)\1", "invalid escape"),  # a backreference: only a backtracking engine does it
    ("(?=a)b", "invalid perl operator"),
    ("(" * 300 + "a" + ")*" * 300, "instructions"),
])
def test_lint_refuses_a_pattern_that_does_not_compile(tmp_path, pattern, why):
    cp = run("rules", "lint", "--rules", str(rules_dir(tmp_path, pattern)))
    assert cp.returncode == 1, cp.stdout + cp.stderr
    lines = cp.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in cp.stderr, cp.stderr
    assert "local.yml:" in lines[0] and why in lines[0], lines


def test_a_pattern_given_by_a_variable_is_checked_by_lint(tmp_path):
    d = rules_dir(tmp_path, "${cc_pattern}")
    text = (d / "local.yml").read_text()
    (d / "local.yml").write_text("vars:\n  cc_pattern: '(unclosed'\n" + text)
    cp = run("rules", "lint", "--rules", str(d))
    assert cp.returncode == 1 and "cc_pattern" in cp.stdout + cp.stderr and "missing )" in cp.stdout + cp.stderr, \
        cp.stdout + cp.stderr
