"""A small scan report built as a scan builds it: the shipped rules and the diagnosis over the facts the
probes parse for four hosts (one storage host and two worker nodes with a tcp setting off, one worker node
unreachable); saved, with its site file, as scan saves them. Shared by the first-screen, whole-values and
plan-files tests."""

from __future__ import annotations

import json

import yaml

from advisor.model.facts import FactSet, HostFacts, ProbeResult, ProbeStatus
from advisor.report.diagnosed import diagnose_report
from advisor.report.json_stream import write_report_json
from advisor.report.model import build_report
from advisor.rules.engine import evaluate
from advisor.rules.specs import load_catalog
from advisor.site.model import Site
from probes.network import SysctlFacts


def sysctls(**values) -> ProbeResult:
    facts = SysctlFacts.model_validate({"sysctls": {
        k: {"runtime": v, "line": f"{k} = {v}"} for k, v in values.items()}}).model_dump(mode="json")
    return ProbeResult(probe="network.sysctl", status=ProbeStatus.ok, facts=facts)


def small_report():
    """(report, site, catalog)."""
    base = {"net.ipv4.tcp_sack": "1", "net.ipv4.tcp_timestamps": "1", "net.ipv4.tcp_window_scaling": "1",
            "net.core.default_qdisc": "pfifo_fast", "net.ipv4.tcp_no_metrics_save": "1",
            "net.ipv4.tcp_congestion_control": "cubic"}
    facts = FactSet(site="t")
    facts.hosts["st01"] = HostFacts(name="st01", roles=["storage"], probes={
        "network.sysctl": sysctls(**{**base, "net.ipv4.tcp_sack": "0"})})
    for wn in ("wn01", "wn02"):  # the same failure on two hosts: one finding, two failed checks
        facts.hosts[wn] = HostFacts(name=wn, roles=["worker"], probes={
            "network.sysctl": sysctls(**{**base, "net.ipv4.tcp_timestamps": "0"})})
    facts.hosts["wn03"] = HostFacts(name="wn03", roles=["worker"], reachable=False,
                                    errors=["wn03: connection refused (192.0.2.23:22)"])
    site = Site(name="t", hosts=[{"name": n, "roles": ["storage" if n == "st01" else "worker"]}
                                 for n in ("st01", "wn01", "wn02", "wn03")])
    catalog = load_catalog()
    ev = evaluate(facts, site, profiles=["generic"], catalog=catalog)
    report = build_report(facts, ev.findings, profiles=["generic"], started_at="2026-01-01T00:00:00+00:00",
                          finished_at="2026-01-01T00:00:01+00:00", duration_s=1.0, site_file=None)
    return report.with_diagnosis(diagnose_report(report, catalog)), site, catalog


def saved_small_report(tmp_path):
    """(report, its saved JSON, its site file) in ``tmp_path``."""
    report, site, _ = small_report()
    path = tmp_path / "scan.json"
    with open(path, "w") as fh:
        write_report_json(report, fh)
    site_file = tmp_path / "t.yml"
    site_file.write_text(yaml.safe_dump(json.loads(site.model_dump_json(exclude_defaults=True))))
    return report, path, site_file
