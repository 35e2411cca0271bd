"""Manual steps name the object they are about (issue 37, item 8): the interface, the device, the unit, the
GPFS nodes, the SAN controllers; and PLAN.md says what its '?' means. The findings come from the shipped
rules over parsed facts (a real NIC listing; a real mmlsconfig output)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from advisor.model.facts import FactSet, HostFacts, ProbeResult, ProbeStatus
from advisor.model.findings import FindingStatus
from advisor.rules.engine import evaluate
from advisor.site.model import Site
from probes import all_probes

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
REPO = Path(__file__).resolve().parents[2]


def _ok(probe: str, facts: dict) -> ProbeResult:
    return ProbeResult(probe=probe, status=ProbeStatus.ok, facts=facts)


def _failed(facts: FactSet, site: Site, rule: str):
    return [f for f in evaluate(facts, site, profiles=["generic", "gpfs-site"]).findings
            if f.rule_id == rule and f.status == FindingStatus.fail]


def test_txqueuelen_names_the_interface_and_the_value():
    nic = all_probes()["network.nic"].parse((FIXTURES / "network" / "nic-vm-virtio-veth.txt").read_text())
    nic = nic.model_dump(mode="json")
    nic["interfaces"]["eth0"]["speed_mbps"] = 25000  # a 25G NIC at the default txqueuelen 1000
    facts = FactSet(site="t")
    facts.hosts["st01"] = HostFacts(name="st01", roles=["storage"], probes={"network.nic": _ok("network.nic", nic)})
    [f] = _failed(facts, Site(name="t", hosts=[{"name": "st01", "roles": ["storage"]}]), "NET-TXQUEUELEN")
    assert "ip link set dev eth0 txqueuelen 10000" in f.remediation.text, f.remediation.text
    assert " IF " not in f.remediation.text


def test_gpfs_and_service_steps_name_the_nodes_and_the_unit():
    text = (FIXTURES / "real" / "gpfs.mmlsconfig" / "ibm-docs-linuxonibm-pagepool-size-transcript.txt").read_text()
    gpfs = all_probes()["gpfs.mmlsconfig"].parse(text).model_dump(mode="json")
    units = all_probes()["services.xrootd"].parse(
        (FIXTURES / "services" / "systemctl-xrootd-units-CONSTRUCTED.txt").read_text()).model_dump(mode="json")
    facts = FactSet(site="t")
    for name in ("nsd01", "nsd02"):
        facts.hosts[name] = HostFacts(name=name, roles=["storage"], probes={
            "gpfs.mmlsconfig": _ok("gpfs.mmlsconfig", gpfs), "services.xrootd": _ok("services.xrootd", units)})
    site = Site(name="t", storage_systems=["gpfs", "xrootd"], vars={"gpfs_server_pagepool_min": 64 << 30},
                hosts=[{"name": n, "roles": ["storage"]} for n in ("nsd01", "nsd02")])
    [pp] = _failed(facts, site, "GPFS-PAGEPOOL-SERVER")
    assert "-N nsd01,nsd02" in pp.remediation.text and "<these" not in pp.remediation.text, pp.remediation.text
    inactive = _failed(facts, site, "SERVICE-XROOTD-INACTIVE")
    assert inactive and all(f"systemctl restart {f.subject}" in f.remediation.text for f in inactive)
    assert not any("<unit>" in f.remediation.text for f in inactive)


def test_no_shipped_remediation_text_keeps_a_generic_placeholder():
    generic = ("<unit>", "<name>", "<attr>", "<these", "<controllers>", " IF ", "=N ", "=N.", "the device (")
    offenders = []
    for pack in sorted((REPO / "rules").glob("*.yml")):
        for rule in yaml.safe_load(pack.read_text()).get("rules") or []:
            text = " ".join(str((rule.get("remediation") or {}).get("text") or "").split())
            offenders += [f"{rule['id']}: {g!r}" for g in generic if g in text]
    assert offenders == []


def test_plan_md_explains_its_question_marks(tmp_path):
    from advisor.apply.plan_markdown import UNKNOWN_VALUE, plan_markdown
    from advisor.apply.plan_model import Plan, PlannedChange

    from advisor.model.findings import Change, ChangeScope

    plan = Plan(site="t", scan_started_at="2026-01-01T00:00:00+00:00", min_severity="low")
    plan.changes = [PlannedChange(change=Change(host="st01", adapter="sysctl", key="net.ipv4.tcp_sack", runtime=None,
                                                persisted=None, target="1", scope=ChangeScope.both),
                                  role="network_tuning", setting="net.ipv4.tcp_sack", rule_ids=["NET-TCP-SACK"])]
    plan.host_vars = {"st01": {"network_tuning": {"network_tuning_sysctls": {"net.ipv4.tcp_sack": "1"}}}}
    text = plan_markdown(plan, tmp_path)
    assert "| ? | ? | 1 |" in text and f"`?`: {UNKNOWN_VALUE}." in text
