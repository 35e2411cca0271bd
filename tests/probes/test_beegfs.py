"""beegfs.client_conf: the parser on ThinkParQ's shipped file (corpus), refusals, and the two rules."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.model.facts import FactSet, HostFacts, ProbeResult, ProbeStatus
from advisor.model.findings import FindingStatus
from advisor.rules.engine import evaluate
from probes import get_probe
from probes.probe import ProbeParseError

PROBE = get_probe("beegfs.client_conf")
SHIPPED = (Path(__file__).resolve().parents[1] / "fixtures" / "real" / "beegfs.client_conf"
           / "thinkparq-beegfs-client.conf-settings.txt").read_text()


def _findings(text: str):
    facts = PROBE.parse(text)
    h = HostFacts(name="wn1", roles=["worker"], probes={
        "beegfs.client_conf": ProbeResult(probe="beegfs.client_conf", status=ProbeStatus.ok, facts=facts.model_dump())})
    return {f.rule_id: f for f in evaluate(FactSet(site="t", hosts={"wn1": h}), profiles=["generic"]).findings
            if f.rule_id.startswith("BEEGFS-")}


def test_shipped_defaults_pass():
    found = _findings(SHIPPED)
    assert {r: f.status for r, f in found.items()} == {"BEEGFS-FILE-CACHE": FindingStatus.passed,
                                                       "BEEGFS-CONN-MAX-INTERNODE": FindingStatus.passed}


def test_cache_off_and_few_connections_fail_with_the_lines():
    text = (SHIPPED.replace("tuneFileCacheType             = buffered", "tuneFileCacheType             = none")
            .replace("connMaxInternodeNum           = 12", "connMaxInternodeNum           = 4"))
    found = _findings(text)
    assert found["BEEGFS-FILE-CACHE"].status == FindingStatus.fail and found["BEEGFS-FILE-CACHE"].observed == "none"
    assert "tuneFileCacheType             = none" in str(found["BEEGFS-FILE-CACHE"].evidence)
    assert found["BEEGFS-CONN-MAX-INTERNODE"].status == FindingStatus.fail
    assert found["BEEGFS-CONN-MAX-INTERNODE"].observed == 4


@pytest.mark.parametrize("text,where", [
    ("sysMgmtdHost = mgmt01\n<Directory /beegfs>\n", "line 2: not 'key = value'"),
    ("# only comments\n\n", "no settings"),
    ("connMaxInternodeNum = 1" + "0" * 40 + "\n", "digits"),
])
def test_other_formats_are_refused(text, where):
    with pytest.raises(ProbeParseError, match=where):
        PROBE.parse(text)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["a = b", "connMaxInternodeNum = 12", "x=", "# c", "", "=", "[s]", "k = -1"]),
                max_size=10) | st.text())
def test_parser_raises_only_parse_error(lines):
    text = lines if isinstance(lines, str) else "\n".join(lines)
    try:
        PROBE.parse(text)
    except ProbeParseError:
        pass
