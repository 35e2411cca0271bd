"""hdfs.balancer: getconf over a stand-in hdfs on PATH, the balancer's start-up log (corpus), the rules."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.model.facts import FactSet, HostFacts, ProbeResult, ProbeStatus
from advisor.model.findings import FindingStatus
from advisor.rules.engine import evaluate
from probes import get_probe
from probes.probe import ProbeContext, ProbeParseError

PROBE = get_probe("hdfs.balancer")
REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "hdfs.balancer"


def _findings(facts):
    h = HostFacts(name="nn1", roles=["storage"], probes={
        "hdfs.balancer": ProbeResult(probe="hdfs.balancer", status=ProbeStatus.ok, facts=facts.model_dump())})
    return {f.rule_id: f for f in evaluate(FactSet(site="t", hosts={"nn1": h}), profiles=["generic"]).findings
            if f.rule_id.startswith("HDFS-")}


def test_getconf_script_reads_each_key(tmp_path):
    tool = tmp_path / "hdfs"
    tool.write_text('#!/bin/sh\ncase "$3" in\n'
                    '  dfs.datanode.balance.max.concurrent.moves) echo 400;;\n'
                    '  dfs.balancer.dispatcherThreads) echo 200;;\n'
                    '  *) echo "Configuration $3 is missing." ; echo "$3 is not found" >&2; exit 1;;\nesac\n')
    tool.chmod(0o755)
    out = subprocess.run(["/bin/sh", "-c", PROBE.script(ProbeContext(host="nn1"))], capture_output=True, text=True,
                         env={"PATH": f"{tmp_path}:/usr/bin:/bin"}).stdout
    facts = PROBE.parse(out)
    assert facts.source == "getconf"
    assert set(facts.settings) == {"dfs.datanode.balance.max.concurrent.moves", "dfs.balancer.dispatcherThreads"}
    found = _findings(facts)
    assert found["HDFS-BALANCER-CONCURRENT-MOVES"].status == FindingStatus.fail
    assert found["HDFS-BALANCER-CONCURRENT-MOVES"].observed == 400
    assert "getconf -confKey dfs.datanode.balance.max.concurrent.moves: 400" in str(found["HDFS-BALANCER-CONCURRENT-MOVES"].evidence)
    assert found["HDFS-BALANCER-DISPATCHER-THREADS"].status == FindingStatus.passed


def test_real_balancer_logs_hadoop2_passes_hadoop3_default_exceeds_the_profile():
    two = _findings(PROBE.parse((REAL / "hadoop2-balancer-start-log-2020.txt").read_text()))
    assert two["HDFS-BALANCER-CONCURRENT-MOVES"].status == FindingStatus.passed
    three = _findings(PROBE.parse((REAL / "hadoop3-balancer-start-log-2022.txt").read_text()))
    assert three["HDFS-BALANCER-CONCURRENT-MOVES"].status == FindingStatus.fail
    assert three["HDFS-BALANCER-CONCURRENT-MOVES"].observed == 100


@pytest.mark.parametrize("text,where", [
    ("The cluster is balanced. Exiting...\n", "no 'INFO balancer.Balancer"),
    ("@@section dfs.balancer.dispatcherThreads\nException in thread main java.lang.Error\n", "not one value"),
    ("@@section dfs.balancer.dispatcherThreads\n\n", "no value for any balancer key"),
])
def test_other_formats_are_refused(text, where):
    with pytest.raises(ProbeParseError, match=where):
        PROBE.parse(text)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["@@section dfs.balancer.dispatcherThreads", "200", "9" * 40, "x y", "",
                                 "1 INFO balancer.Balancer: dfs.a = 1 (default=1)", "is not found"]), max_size=8) | st.text())
def test_parser_raises_only_parse_error(lines):
    text = lines if isinstance(lines, str) else "\n".join(lines)
    try:
        PROBE.parse(text)
    except ProbeParseError:
        pass
