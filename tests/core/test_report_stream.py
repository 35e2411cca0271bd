"""The streamed JSON report (a host and a finding at a time) is the whole-report dump's schema 2 JSON, and reads
back as the report it was written from."""

from __future__ import annotations

import io
import json

from advisor.model.facts import FactSet, HostFacts, ProbeResult, ProbeStatus
from advisor.report.json_stream import write_report_json
from advisor.report.model import build_report, report_from_data
from advisor.rules.engine import evaluate
from advisor.rules.specs import load_catalog
from tests.support.rule_packs import SACK_PACK, write_rules


def _report(tmp_path, n):
    hosts = {}
    for i in range(n):
        facts = {"sysctls": {"net.ipv4.tcp_sack": {"runtime": i % 2, "absent": False}}, "note": "ünïcode \"q\" \\ 1e-07",
                 "a/b~c": {"": [1, "x"], "empty": {}}}
        hosts[f"wn{i}"] = HostFacts(name=f"wn{i}", roles=["worker"], probes={
            "network.sysctl": ProbeResult(probe="network.sysctl", status=ProbeStatus.ok, facts=facts, raw="x"),
            "host": ProbeResult(probe="host", status=ProbeStatus.ok, facts={}, raw="x")})
    fs = FactSet(site="s", hosts=hosts, mesh={"paths": [{"status": "ok", "mbps": 1e-7}]} if n else None)
    ev = evaluate(fs, catalog=load_catalog(write_rules(tmp_path, SACK_PACK)))
    return build_report(fs, ev.findings, profiles=["generic"], started_at="t0", finished_at="t1", duration_s=0.5,
                        site_file=None)


def test_streamed_report_is_the_dump_and_reads_back(tmp_path):
    for n in (0, 1, 3):
        report = _report(tmp_path, n)
        buf = io.StringIO()
        write_report_json(report, buf)
        data = json.loads(buf.getvalue())
        assert data == json.loads(report.model_dump_json()) and data["schema_version"] == "2.2"
        back = report_from_data("stream", data)
        assert back.hosts == report.hosts and back.findings == report.findings
        if n:
            assert '"hosts": [\n    {\n      "name": "wn0"' in buf.getvalue()
            # one line per fact leaf; the key with / and ~ escaped as JSON Pointer wants
            assert '\n          {"name":"/a~1b~0c/","value":"[1,\\"x\\"]","value_num":null,"type":"array"}' \
                in buf.getvalue(), buf.getvalue()
