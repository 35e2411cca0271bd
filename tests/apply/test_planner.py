"""The planner's filtering, through the real rule packs and engine: facts -> evaluate -> report ->
build_plan. What can and must change is planned; what changes nothing is dropped; what the host
cannot change, the site marks immutable or waives never reaches Ansible and says why."""

from __future__ import annotations

from advisor.apply.declared_changes import DeclaredChanges
from advisor.apply.planner import build_plan
from advisor.model.facts import FactSet
from advisor.model.findings import Change, Finding, FindingStatus, Severity
from advisor.report.model import build_report
from advisor.rules.engine import evaluate
from advisor.rules.specs import RuleCatalog, RuleSpec
from advisor.site.model import Site
from tests.support.planner_facts import TODAY, healthy, host, sysctl


def site(**extra) -> Site:
    return Site.model_validate({"name": "t", "hosts": [
        {"name": "st01", "roles": ["storage"], "link_rate": "1gbit"},
        {"name": "st02", "roles": ["storage"], "link_rate": "1gbit"}], **extra})


def scan(the_site: Site, hosts: dict[str, dict], extra: list[Finding] = ()):
    fs = FactSet(site="t", hosts={n: host(n, s) for n, s in hosts.items()})
    ev = evaluate(fs, the_site, profiles=["generic"], today=TODAY)
    return build_report(fs, ev.findings + list(extra), profiles=["generic"], started_at="-", finished_at="-",
                        duration_s=0, site_file=None)


def planned(plan) -> dict:
    return {(c.change.host, c.change.key): (c.change.target, c.change.scope.value) for c in plan.changes}


def cannot(plan) -> dict:
    return {(c["host"], c["key"]): c["reason"] for c in plan.cannot_apply}


def test_a_fault_is_planned_with_its_scope_and_role_vars():
    s = healthy()
    s["net.ipv4.tcp_sack"] = sysctl("0", persisted="0")
    plan = build_plan(scan(site(), {"st01": s, "st02": healthy()}), site(), today=TODAY)
    assert planned(plan) == {("st01", "net.ipv4.tcp_sack"): ("1", "both")}
    assert plan.host_vars == {"st01": {"network_tuning": {"network_tuning_sysctls": {"net.ipv4.tcp_sack": "1"}}}}
    assert plan.changes[0].rule_ids == ["NET-TCP-SACK"] and plan.cannot_apply == []


def test_runtime_right_persisted_wrong_is_a_file_only_change():
    s = healthy()
    s["net.ipv4.tcp_sack"] = sysctl("1", persisted="0")
    plan = build_plan(scan(site(), {"st01": s}), site(), today=TODAY)
    assert planned(plan) == {("st01", "net.ipv4.tcp_sack"): ("1", "persisted")}
    c = plan.changes[0]
    assert (c.change.runtime, c.change.persisted, c.rule_ids) == ("1", "0", ["NET-SYSCTL-NOT-PERSISTED"])
    from advisor.apply.project import plan_markdown

    assert "| 1 | 0 | 1 | persisted file only (the runtime value is already right) |" in plan_markdown(plan, "/x")


def test_a_change_already_at_its_target_is_never_planned():
    # an older scan JSON (or a rule) may carry a change that is already made: dropped, and said so
    done = Finding(rule_id="NET-TCP-SACK", hosts=["st01"], status=FindingStatus.fail, severity=Severity.high,
                   changes=[Change(host="st01", adapter="sysctl", key="net.ipv4.tcp_sack", runtime="1", persisted="1",
                                   target="1")])
    plan = build_plan(scan(site(), {"st01": healthy()}, [done]), site(), today=TODAY)
    assert plan.changes == [] and plan.host_vars == {}
    assert any("already 1" in n for n in plan.notices)


def test_a_read_only_key_cannot_be_applied_here():
    s = healthy()
    s["net.core.wmem_max"] = sysctl("212992", writable=False)
    plan = build_plan(scan(site(), {"st01": s}), site(), today=TODAY)
    assert ("st01", "net.core.wmem_max") not in planned(plan)
    assert "read-only /proc/sys entry" in cannot(plan)[("st01", "net.core.wmem_max")]
    assert plan.host_vars == {}  # nothing else to do: Ansible is not even needed


def test_an_absent_key_cannot_be_applied_here():
    done = Finding(rule_id="NET-DEFAULT-QDISC", hosts=["st01"], status=FindingStatus.fail, severity=Severity.low,
                   changes=[Change(host="st01", adapter="sysctl", key="net.core.default_qdisc", target="fq")])
    s = healthy()
    s["net.core.default_qdisc"] = sysctl(None, absent=True, writable=None)
    plan = build_plan(scan(site(), {"st01": s}, [done]), site(), today=TODAY)
    assert "does not exist on this host" in cannot(plan)[("st01", "net.core.default_qdisc")]


def test_immutable_settings_of_the_site():
    s = healthy()
    s["net.core.rmem_max"] = sysctl("212992")
    s["net.ipv4.tcp_sack"] = sysctl("0")
    the_site = site(immutable=["net.core.rmem_max", {"key": "sysctl:net.ipv4.tcp_sa*", "hosts": "st02",
                                                     "reason": "vendor appliance"}])
    plan = build_plan(scan(the_site, {"st01": s, "st02": s}), the_site, today=TODAY)
    why = cannot(plan)
    assert why[("st01", "net.core.rmem_max")] == "immutable on this site: the site marks it immutable"
    assert why[("st02", "net.ipv4.tcp_sack")] == "immutable on this site: vendor appliance"
    assert ("st01", "net.ipv4.tcp_sack") in planned(plan)  # the pattern names st02 only


def test_a_waiver_with_settings_reaches_the_key_whichever_rule_proposes_it():
    s = healthy()
    s["net.core.wmem_max"] = sysctl("212992")
    mesh = Finding(rule_id="MESH-BUFFER-LIMITED", hosts=["st01"], status=FindingStatus.fail, severity=Severity.medium,
                   changes=[Change(host="st01", adapter="sysctl", key="net.core.wmem_max", runtime="212992",
                                   target="134217728")])
    the_site = site(waivers=[{"settings": ["net.core.wmem_max"], "hosts": "st0*",
                              "justification": "fixed by the kernel team"}])
    plan = build_plan(scan(the_site, {"st01": s}, [mesh]), the_site, today=TODAY)
    reason = cannot(plan)[("st01", "net.core.wmem_max")]
    assert reason == "the site waives this setting: fixed by the kernel team"
    c = next(c for c in plan.cannot_apply if c["key"] == "net.core.wmem_max")
    assert set(c["rules"]) == {"NET-CORE-BUFFER-MAX", "MESH-BUFFER-LIMITED"}


def test_a_key_proposed_by_a_waived_rule_is_blocked_for_every_rule():
    s = healthy()
    s["net.core.wmem_max"] = sysctl("212992")
    mesh = Finding(rule_id="MESH-BUFFER-LIMITED", hosts=["st01"], status=FindingStatus.fail, severity=Severity.medium,
                   changes=[Change(host="st01", adapter="sysctl", key="net.core.wmem_max", runtime="212992",
                                   target="134217728")])
    the_site = site(waivers=[{"rule": "NET-CORE-BUFFER-MAX", "justification": "the kernel team owns it"}])
    report = scan(the_site, {"st01": s}, [mesh])
    assert any(f.rule_id == "NET-CORE-BUFFER-MAX" and f.status == FindingStatus.waived for f in report.findings)
    plan = build_plan(report, the_site, today=TODAY)
    assert "proposed by NET-CORE-BUFFER-MAX, which the site waives" in cannot(plan)[("st01", "net.core.wmem_max")]
    assert ("st01", "net.core.wmem_max") not in planned(plan)


def test_an_expired_settings_waiver_blocks_nothing():
    s = healthy()
    s["net.core.wmem_max"] = sysctl("212992")
    the_site = site(waivers=[{"settings": ["net.core.wmem_max"], "justification": "old", "expires": "2020-01-01"}])
    plan = build_plan(scan(the_site, {"st01": s}), the_site, today=TODAY)
    assert ("st01", "net.core.wmem_max") in planned(plan)


def test_two_targets_for_one_key_resolve_to_the_larger_and_say_so():
    s = healthy()
    s["net.ipv4.tcp_wmem"] = sysctl("4096 16384 4194304")
    mesh = Finding(rule_id="MESH-BUFFER-LIMITED", hosts=["st01"], status=FindingStatus.fail, severity=Severity.medium,
                   changes=[Change(host="st01", adapter="sysctl", key="net.ipv4.tcp_wmem", runtime="4096 16384 4194304",
                                   target="4096 16384 67108864")])
    plan = build_plan(scan(site(), {"st01": s}, [mesh]), site(), today=TODAY)
    assert planned(plan)[("st01", "net.ipv4.tcp_wmem")] == ("4096 16384 67108864", "both")
    c = next(c for c in plan.changes if c.change.key == "net.ipv4.tcp_wmem")
    assert set(c.rule_ids) == {"NET-TCP-BUFFER-MAX", "MESH-BUFFER-LIMITED"}
    note = next(n for n in plan.notices if "net.ipv4.tcp_wmem" in n)
    assert "NET-TCP-BUFFER-MAX asks 4096 16384 33554432" in note and "MESH-BUFFER-LIMITED asks 4096 16384 67108864" in note
    assert "planned 4096 16384 67108864 (the larger safe value)" in note


def test_targets_that_cannot_be_ordered_go_to_the_more_severe_rule():
    a = Finding(rule_id="A-RULE", hosts=["st01"], status=FindingStatus.fail, severity=Severity.low,
                changes=[Change(host="st01", adapter="sysctl", key="net.core.default_qdisc", runtime="pfifo", target="fq_codel")])
    b = Finding(rule_id="B-RULE", hosts=["st01"], status=FindingStatus.fail, severity=Severity.high,
                changes=[Change(host="st01", adapter="sysctl", key="net.core.default_qdisc", runtime="pfifo", target="fq")])
    s = healthy()
    s["net.core.default_qdisc"] = sysctl("pfifo")
    # the two rules, each declaring its own target for the key (a plan takes only declared changes)
    declared = DeclaredChanges(RuleCatalog(rules={r.id: r for r in (
        RuleSpec(id=rid, title=rid, kind="python", function=rid, severity=sev, rationale="two rules, one key",
                 remediation={"changes": [{"adapter": "sysctl", "key": "net.core.default_qdisc", "target": t}]})
        for rid, sev, t in (("A-RULE", "low", "fq_codel"), ("B-RULE", "high", "fq")))}, pack_vars={}), {})
    plan = build_plan(scan(site(), {"st01": s}, [a, b]), site(), today=TODAY, declared=declared)
    assert planned(plan)[("st01", "net.core.default_qdisc")][0] == "fq"
    assert any("the most severe rule's" in n for n in plan.notices)


def test_min_severity_leaves_out_and_lists_lower_findings():
    s = healthy()
    s["net.ipv4.tcp_sack"] = sysctl("0")
    s["net.ipv4.tcp_no_metrics_save"] = sysctl("0")  # NET-NO-METRICS-SAVE is info
    report = scan(site(), {"st01": s})
    default = build_plan(report, site(), today=TODAY)
    assert ("st01", "net.ipv4.tcp_no_metrics_save") not in planned(default)  # default: low
    assert {b["rule"] for b in default.below_min_severity} >= {"NET-NO-METRICS-SAVE"}
    high = build_plan(report, site(), min_severity="high", today=TODAY)
    assert set(planned(high)) == {("st01", "net.ipv4.tcp_sack")}
    everything = build_plan(report, site(), min_severity="info", today=TODAY)
    assert ("st01", "net.ipv4.tcp_no_metrics_save") in planned(everything)
    assert everything.as_dict()["below_min_severity"] == [] and high.as_dict()["min_severity"] == "high"


def test_plan_cli_min_severity_and_json(tmp_path, capsys):
    import json

    from advisor.cli.root import main

    s = healthy()
    s["net.ipv4.tcp_sack"] = sysctl("0")
    s["net.ipv4.tcp_no_metrics_save"] = sysctl("0")
    site_file = tmp_path / "t.yml"
    site_file.write_text("name: t\nhosts:\n  - {name: st01, roles: [storage], link_rate: 1gbit}\n")
    (tmp_path / "scan.json").write_text(scan(site(), {"st01": s}).model_dump_json())
    args = ["plan", "--site", str(site_file), "--scan", str(tmp_path / "scan.json"), "--out", str(tmp_path / "p"), "--json"]
    assert main(args + ["--min-severity", "high"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [c["key"] for c in doc["changes"]] == ["net.ipv4.tcp_sack"] and doc["min_severity"] == "high"
    assert "NET-NO-METRICS-SAVE" in {b["rule"] for b in doc["below_min_severity"]}
    assert "Left out: below --min-severity high" in (tmp_path / "p" / "PLAN.md").read_text()
    assert main(args + ["--min-severity", "urgent"]) == 1
    err = capsys.readouterr().err.strip()
    assert "--min-severity 'urgent'" in err and "\n" not in err and "Traceback" not in err


def test_a_change_only_a_symptom_analysis_proposed_and_no_cause_holds_is_set_aside():
    """A wrong blame (an asymmetry finding naming a clean host, with no measured path it explains)
    never reaches Ansible; the same key proposed by a setting rule still does (fails before the
    diagnosis stage: the planner planned every failed finding's change)."""
    s = healthy()
    s["net.ipv4.tcp_wmem"] = sysctl("4096 16384 4194304")
    blame = Finding(rule_id="MESH-ASYMMETRY", hosts=["st02"], status=FindingStatus.fail, severity=Severity.high,
                    subject="st02 as sender",
                    changes=[Change(host="st02", adapter="sysctl", key="net.ipv4.tcp_timestamps", runtime="1",
                                    target="0")])
    the_site = site()
    plan = build_plan(scan(the_site, {"st01": s, "st02": healthy()}, [blame]), the_site, today=TODAY)
    assert ("st02", "net.ipv4.tcp_timestamps") not in planned(plan)
    assert [(a["host"], a["key"], a["rules"]) for a in plan.set_aside] == [("st02", "net.ipv4.tcp_timestamps",
                                                                            ["MESH-ASYMMETRY"])]
    assert ("st01", "net.ipv4.tcp_wmem") in planned(plan)  # NET-TCP-BUFFER-MAX: hygiene, planned
    assert plan.as_dict()["set_aside"] == plan.set_aside


def test_a_persisted_change_is_planned_only_when_the_boot_value_is_wrong():
    """ifca: MESH-LOSS asks tcp_sack=1 on workers whose runtime is 1 and where no file sets it.
    The boot value is the kernel default (1, Documentation/networking/ip-sysctl.rst): no row.
    Where a file sets it to 0, the file is wrong: a persisted-only change, shown with its file value;
    a runtime fault whose boot value is the default shows "default (1)" and changes the runtime only."""
    from advisor.apply.project import plan_markdown

    loss = Finding(rule_id="MESH-LOSS", hosts=["st01", "st02"], status=FindingStatus.fail, severity=Severity.high,
                   changes=[Change(host=h, adapter="sysctl", key="net.ipv4.tcp_sack", runtime="1", persisted=None,
                                   target="1", scope="persisted") for h in ("st01", "st02")])
    s2 = healthy()
    s2["net.ipv4.tcp_sack"] = sysctl("1", persisted="0")
    plan = build_plan(scan(site(), {"st01": healthy(), "st02": s2}, [loss]), site(), today=TODAY)
    assert ("st01", "net.ipv4.tcp_sack") not in planned(plan)
    assert planned(plan)[("st02", "net.ipv4.tcp_sack")] == ("1", "persisted")
    assert plan.changes[0].change.boot.model_dump(mode="json") == {"value": "0", "source": "file", "origin": None}

    s1 = healthy()
    s1["net.ipv4.tcp_sack"] = sysctl("0")
    plan = build_plan(scan(site(), {"st01": s1}), site(), today=TODAY)
    assert planned(plan) == {("st01", "net.ipv4.tcp_sack"): ("1", "runtime")}
    c = plan.changes[0]
    assert c.as_dict()["boot"]["source"] == "default" and c.as_dict()["boot"]["value"] == "1"
    assert "| net.ipv4.tcp_sack | 0 | default (1) | 1 | runtime only" in plan_markdown(plan, "/x")
    # the role sets it now and writes no file for it
    assert plan.host_vars["st01"]["network_tuning"]["network_tuning_runtime_only"] == ["net.ipv4.tcp_sack"]
