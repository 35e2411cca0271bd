"""eos.fs: the table parser on real captures (corpus), refusals, and the rules on them."""

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

PROBE = get_probe("eos.fs")
REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "eos.fs"


def _findings(text: str):
    facts = PROBE.parse(text)
    h = HostFacts(name="mgm", roles=["storage"], probes={
        "eos.fs": ProbeResult(probe="eos.fs", status=ProbeStatus.ok, facts=facts.model_dump())})
    return [f for f in evaluate(FactSet(site="t", hosts={"mgm": h}), profiles=["generic"]).findings
            if f.rule_id.startswith("EOS-FS-")]


def test_booted_rw_passes():
    found = _findings((REAL / "eos-vala-single-fst-booted-rw.txt").read_text())
    assert {(f.rule_id, f.status) for f in found} == {("EOS-FS-CONFIGSTATUS", FindingStatus.passed),
                                                      ("EOS-FS-ONLINE", FindingStatus.passed)}


def test_off_file_systems_fail_configstatus_and_are_not_judged_on_boot():
    found = _findings((REAL / "eos-training-spd-ro-fs-down-off.txt").read_text())
    cfg = [f for f in found if f.rule_id == "EOS-FS-CONFIGSTATUS"]
    assert sorted(f.subject for f in cfg) == ["1", "2", "3", "4", "5", "6"]
    assert all(f.status == FindingStatus.fail and f.observed == "off" for f in cfg)
    assert "local::geo         down            off" in str(cfg[0].evidence)
    assert not [f for f in found if f.rule_id == "EOS-FS-ONLINE" and f.status == FindingStatus.fail]


def test_rw_file_system_that_is_down_fails_online():
    text = (REAL / "eos-training-spd-ro-fs-down-off.txt").read_text().replace(
        "local::geo         down            off", "local::geo         down             rw", 1)
    found = {(f.rule_id, f.subject): f for f in _findings(text)}
    assert found[("EOS-FS-ONLINE", "1")].status == FindingStatus.fail and found[("EOS-FS-ONLINE", "1")].observed == "down"
    assert found[("EOS-FS-CONFIGSTATUS", "1")].status == FindingStatus.passed


@pytest.mark.parametrize("text,where", [
    ("", "no header row"),
    ("error: errc=2 msg=\"no such file\"\n", "no header row"),
    ("│a │b │\n x  y\n", "no 'host' and 'id'"),
    ("│host │  id│\n h      x\n", "no file system id"),
    ("│host │  id│\n h      1     extra\n", "longer than the table"),
])
def test_other_formats_are_refused(text, where):
    with pytest.raises(ProbeParseError, match=where):
        PROBE.parse(text)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["│host │  id│ boot│", " h      1  booted", "┌──┐", "└──┘", "x", "", "│", " a b c"]),
                max_size=8) | st.text())
def test_parser_raises_only_parse_error(lines):
    text = lines if isinstance(lines, str) else "\n".join(lines)
    try:
        PROBE.parse(text)
    except ProbeParseError:
        pass


SPACE = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "eos.space"


def _space_findings(name: str):
    facts = get_probe("eos.space").parse((SPACE / name).read_text())
    h = HostFacts(name="mgm", roles=["storage"], probes={
        "eos.space": ProbeResult(probe="eos.space", status=ProbeStatus.ok, facts=facts.model_dump())})
    return {f.rule_id: f for f in evaluate(FactSet(site="t", hosts={"mgm": h}), profiles=["generic"]).findings
            if f.rule_id.startswith("EOS-SPACE-")}


def test_space_balancer_rules_on_documented_outputs():
    off = _space_findings("eos-doc-autorepair-space-status-default.txt")
    assert off["EOS-SPACE-BALANCER"].status == FindingStatus.fail
    assert off["EOS-SPACE-BALANCER"].evidence == ["mgm: balancer                         := off"]
    assert "eos space config default space.balancer=on" in off["EOS-SPACE-BALANCER"].remediation.text
    assert off["EOS-SPACE-BALANCER-NTX"].status == FindingStatus.passed  # 4 transfers per FST
    on = _space_findings("eos-doc-drain-space-status-balancer-on.txt")
    assert {r: f.status for r, f in on.items()} == {"EOS-SPACE-BALANCER": FindingStatus.passed,
                                                    "EOS-SPACE-BALANCER-NTX": FindingStatus.passed}
