"""SAN-WRITE-CACHE never plans a change that can lose acknowledged writes unless the profile opts in."""

from __future__ import annotations

from pathlib import Path

from advisor.model.facts import FactSet, HostFacts, ProbeResult, ProbeStatus
from advisor.model.findings import FindingStatus
from advisor.rules.engine import evaluate
from advisor.site.model import Host, Site
from probes import get_probe

SAN = Path(__file__).resolve().parents[1] / "fixtures" / "san"


def _findings(overrides: dict | None = None):
    # vol_cms_01: write cache off, mirroring off; vol_cms_02: write cache on, mirroring on
    facts = get_probe("san.logical_drives").parse((SAN / "show-allVolumes-CONSTRUCTED-from-FORMATS-labels.txt").read_text())
    h = HostFacts(name="mgmt", roles=["san-controller"], probes={
        "san.logical_drives": ProbeResult(probe="san.logical_drives", status=ProbeStatus.ok, facts=facts.model_dump())})
    site = Site(name="t", hosts=[Host(name="mgmt", roles=["san-controller"])], profiles=["generic"], vars=overrides or {})
    return [f for f in evaluate(FactSet(site="t", hosts={"mgmt": h}), site=site).findings if f.rule_id == "SAN-WRITE-CACHE"]


def test_no_write_cache_change_without_mirroring():
    (off,) = [f for f in _findings() if f.subject == "vol_cms_01"]
    assert off.status == FindingStatus.fail and off.observed is False and off.expected is True
    assert off.changes == []  # nothing for the planner
    assert "acknowledged" in off.message and "controller fails" in off.message
    assert "san_write_cache_unprotected_ok" in off.remediation.text


def test_the_profile_can_opt_in():
    (off,) = [f for f in _findings({"san_write_cache_unprotected_ok": True}) if f.subject == "vol_cms_01"]
    assert [(c.adapter, c.key, c.target) for c in off.changes] == [("san", "vol_cms_01/writeCacheEnabled", "TRUE")]


def test_ifca_profile_expects_it_off_and_protected_drives_are_planned_as_before():
    f = {x.subject: x for x in _findings({"san_write_cache": False})}
    assert f["vol_cms_01"].status == FindingStatus.passed
    assert [(c.adapter, c.key, c.target) for c in f["vol_cms_02"].changes] == [("san", "vol_cms_02/writeCacheEnabled", "FALSE")]
