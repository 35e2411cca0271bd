"""The console at 1,000 hosts: host ranges, identical hosts folded, only hosts with failures
unless --verbose; --json stays complete (issue 14, item 7)."""

from __future__ import annotations

import io
import json
import random

import pytest
from rich.console import Console

from advisor.model.facts import FactSet, HostFacts, ProbeResult, ProbeStatus
from advisor.report.console import host_rows, render_scan
from advisor.util.host_ranges import expand_hosts, fold_hosts, hosts_text
from advisor.report.json_stream import write_report_json
from advisor.report.model import build_report
from advisor.rules.engine import evaluate
from advisor.rules.specs import load_catalog
from tests.support.rule_packs import SACK_PACK, write_rules


@pytest.mark.parametrize("names,folded", [
    ([f"wn{i:04d}" for i in range(1, 951)], ["wn[0001-0950]"]),
    (["wn0001", "wn0002", "wn0004", "gpfs01", "gpfs02", "se01"], ["gpfs[01-02]", "se01", "wn[0001-0002,0004]"]),
    (["wn9", "wn10", "wn11"], ["wn[9-11]"]),
    (["wn0999", "wn1000"], ["wn[0999-1000]"]),
    (["rack1-wn01", "rack1-wn02", "rack2-wn01"], ["rack1-wn[01-02]", "rack2-wn01"]),
    (["node1.example.org", "node2.example.org"], ["node[1-2].example.org"]),
    (["login", "login"], ["login"]),
    ([], []),
])
def test_fold_hosts(names, folded):
    assert fold_hosts(names) == folded
    assert expand_hosts(folded) == sorted(set(names))


def test_fold_hosts_round_trips_random_names():
    rng = random.Random(14)
    for _ in range(200):
        names = {f"{rng.choice(['wn', 'gpfs', 'x-', ''])}{rng.randrange(0, 1200):0{rng.choice([0, 2, 4])}d}"
                 f"{rng.choice(['', '.lan', 'b'])}" for _ in range(rng.randrange(1, 60))}
        assert expand_hosts(fold_hosts(names)) == sorted(names)


def test_hosts_text_limits_items():
    names = [f"wn{i:04d}" for i in range(0, 40, 2)]  # 20 separate hosts
    assert hosts_text(names, limit=3) == "wn[0000,0002,0004,0006,0008,0010,0012,0014,0016,0018,0020,0022,0024,0026," \
                                          "0028,0030,0032,0034,0036,0038]"
    assert hosts_text(["a", "b", "c", "d"], limit=2) == "a, b, … 2 more"


def _report(tmp_path, n=1000, bad=(7, 500, 501, 502)):
    hosts = {}
    for i in range(1, n + 1):
        name = f"wn{i:04d}"
        value = 0 if i in bad else 1
        facts = {"sysctls": {"net.ipv4.tcp_sack": {"runtime": value, "absent": False}}}
        hosts[name] = HostFacts(name=name, roles=["worker"], probes={
            "network.sysctl": ProbeResult(probe="network.sysctl", status=ProbeStatus.ok, facts=facts)})
    hosts["wn0999"] = HostFacts(name="wn0999", roles=["worker"], reachable=False, errors=["wn0999: connection refused"])
    fs = FactSet(site="t1", hosts=hosts)
    ev = evaluate(fs, catalog=load_catalog(write_rules(tmp_path, SACK_PACK)))
    return build_report(fs, ev.findings, profiles=["generic"], started_at="", finished_at="", duration_s=1.0,
                        site_file=None)


def _render(report, verbose=False) -> str:
    buf = io.StringIO()
    render_scan(report, Console(file=buf, width=160, color_system=None), verbose=verbose)
    return buf.getvalue()


def test_console_groups_identical_hosts_and_lists_ranges(tmp_path):
    report = _report(tmp_path)
    rows = host_rows(report)
    assert sum(len(names) for _row, names in rows) == 1000
    assert len(rows) == 3  # failed, unreachable, clean: by what the row says, not by neighbours
    text = _render(report)
    assert "hosts: wn[0007,0500-0502]" in text
    assert "wn[0007,0500-0502]" in text.split("Findings")[0]  # the failing hosts' row in the table
    assert "wn0999" in text.split("Findings")[0] and "connection refused" in text
    assert "wn[0001-0006,0008-0499,0503-0998,1000]: nothing failed at low or above" in text
    assert len(text.splitlines()) < 40
    assert "wn0001 " not in text and "wn0001\n" not in text  # a clean host is not listed on its own


def test_console_verbose_lists_every_host_and_json_stays_complete(tmp_path):
    report = _report(tmp_path)
    verbose = _render(report, verbose=True)
    table = verbose.split("Findings")[0]
    assert "wn[0001-0006,0008-0499,0503-0998,1000]" in table and "nothing failed" not in table
    buf = io.StringIO()
    write_report_json(report, buf)
    data = json.loads(buf.getvalue())
    assert len(data["hosts"]) == 1000
    failed = next(f for f in data["findings"] if f["status"] == "fail")
    assert failed["hosts"] == ["wn0007", "wn0500", "wn0501", "wn0502"]


def test_hosts_table_at_80_columns_folds_long_cells_and_never_cuts_them():
    """At 80 columns the hosts table cut its last header to "failed (crit/high/me…" and a host's roles to
    "storage,san-c…" (the ifca lab's gpfs01); a cell too wide now folds onto more lines, whole."""
    from advisor.report.console import render_hosts
    from tests.support.reports import make_report

    report = make_report()
    report.hosts[0].roles = ["storage", "san-controller", "cache"]
    buf = io.StringIO()
    render_hosts(report, Console(file=buf, width=80, color_system=None, force_terminal=False))
    text = buf.getvalue()
    assert "…" not in text, text
    rows = [line.split("│") for line in text.splitlines() if line.startswith("│")]
    assert "".join(r[3].strip() for r in rows) == "storage,san-controller,cache", text
    header = [line.split("┃") for line in text.splitlines() if line.startswith("┃")]
    assert "".join(h[6].strip() for h in header) == "failed(crit/high/med/low)", text
