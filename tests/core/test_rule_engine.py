"""The rule engine: operators, statuses, grouping, waivers, profiles, analytic rules."""

from __future__ import annotations

import datetime as dt

import pytest

from advisor.util.errors import RuleDefinitionError
from advisor.model.facts import FactSet, HostFacts, ProbeResult, ProbeStatus
from advisor.model.findings import FindingStatus
from advisor.rules.comparisons import compare
from advisor.rules.engine import evaluate
from advisor.rules.waivers import apply_waivers
from advisor.rules.fact_paths import MISSING, get_path, split_path
from advisor.rules.specs import load_catalog, resolve_profiles
from advisor.site.model import Host, Site, Waiver
from tests.support.rule_packs import SACK_PACK, write_rules


def sysctl_facts(**values):
    return {"sysctls": {k.replace("_", ".", 2) if False else k: {"runtime": v, "absent": False} for k, v in values.items()}}


def host(name, roles=("storage",), probes=None, reachable=True, errors=()):
    return HostFacts(name=name, roles=list(roles), reachable=reachable, errors=list(errors), probes=probes or {})


def ok(probe, facts):
    return ProbeResult(probe=probe, status=ProbeStatus.ok, facts=facts)


@pytest.mark.parametrize(
    "op,observed,expected,result",
    [
        ("eq", "1", 1, True), ("eq", "0", 1, False), ("eq", "fq", "FQ", True), ("eq", True, 1, True), ("eq", False, "0", True),
        ("ne", "0", 0, False), ("ne", "bbr", "cubic", True),
        ("lt", 74.9, 75, True), ("lt", 75, 75, False), ("le", 75, 75, True), ("gt", "4096", 1024, True),
        ("ge", 1023, 1024, False),
        ("in", "bbr", ["htcp", "bbr"], True), ("in", "reno", ["htcp", "bbr"], False),
        ("not_in", "reno", ["htcp", "bbr"], True),
        ("regex", "mq-deadline", r"deadline$", True), ("regex", "cfq", r"deadline", False),
        ("between", 0.92, [0.9, 0.95], True), ("between", 0.97, [0.9, 0.95], False),
        ("present", "x", None, True), ("present", MISSING, None, False),
        ("absent", MISSING, None, True), ("absent", 0, None, False),
    ],
)
def test_operators(op, observed, expected, result):
    assert compare(op, observed, expected) is result


def test_operator_type_errors():
    with pytest.raises(ValueError):
        compare("lt", "abc", 3)
    with pytest.raises(ValueError):
        compare("between", 1, [1])
    with pytest.raises(ValueError):
        compare("in", 1, 1)


def test_fact_paths():
    assert split_path('a."b.c".d') == ("a", "b.c", "d")
    data = {"a": {"b.c": {"d": 5}}, "l": [1, {"x": 2}]}
    assert get_path(data, 'a."b.c".d') == 5
    assert get_path(data, "l.1.x") == 2
    assert get_path(data, "a.nope") is MISSING
    with pytest.raises(ValueError):
        split_path('a."b')


def test_check_rule_statuses_and_grouping(tmp_path):
    catalog = load_catalog(write_rules(tmp_path, SACK_PACK))
    fs = FactSet(site="t", hosts={
        "gpfs01": host("gpfs01", probes={"network.sysctl": ok("network.sysctl", {"sysctls": {"net.ipv4.tcp_sack": {"runtime": "0"}}})}),
        "gpfs02": host("gpfs02", probes={"network.sysctl": ok("network.sysctl", {"sysctls": {"net.ipv4.tcp_sack": {"runtime": "0"}}})}),
        "wn01": host("wn01", roles=("worker",), probes={"network.sysctl": ok("network.sysctl", {"sysctls": {"net.ipv4.tcp_sack": {"runtime": "1"}}})}),
        "wn02": host("wn02", roles=("worker",), probes={"network.sysctl": ProbeResult(probe="network.sysctl", status=ProbeStatus.error, message="permission denied")}),
        "wn03": host("wn03", roles=("worker",), reachable=False, errors=["wn03: connection refused"]),
        "wn04": host("wn04", roles=("worker",), probes={"network.sysctl": ok("network.sysctl", {"sysctls": {}})}),
        "se01": host("se01", roles=("door",), probes={"network.sysctl": ok("network.sysctl", {"sysctls": {"net.ipv4.tcp_sack": {"runtime": "0"}}})}),
    })
    findings = evaluate(fs, profiles=["generic"], catalog=catalog).findings
    by = {f.status: f for f in findings}
    fail = by[FindingStatus.fail]
    assert fail.hosts == ["gpfs01", "gpfs02"]  # grouped: same observation on two hosts
    assert fail.observed == "0" and fail.expected == 1
    # one change per host, with the value the scan saw and what must change: no file sets the key,
    # so its boot value is the kernel default (1, already right): only the runtime value changes
    assert [(c.host, c.adapter, c.key, c.runtime, c.persisted, c.target, c.scope.value) for c in fail.changes] == [
        ("gpfs01", "sysctl", "net.ipv4.tcp_sack", "0", None, "1", "runtime"),
        ("gpfs02", "sysctl", "net.ipv4.tcp_sack", "0", None, "1", "runtime")]
    assert {(c.boot.value, c.boot.source.value) for c in fail.changes} == {("1", "default")}
    assert fail.remediation.role == "network_tuning"
    assert any(e.startswith("gpfs01:") for e in fail.evidence)
    assert by[FindingStatus.passed].hosts == ["wn01"]
    errors = [f for f in findings if f.status == FindingStatus.error]
    assert sorted(h for f in errors for h in f.hosts) == ["wn02", "wn03"]  # never pass on a failed probe
    assert "permission denied" in next(f for f in errors if f.hosts == ["wn02"]).message
    assert by[FindingStatus.not_applicable].hosts == ["wn04"]  # fact absent
    assert all("se01" not in f.hosts for f in findings)  # role does not match
    assert findings[0].status == FindingStatus.fail  # worst first


def test_profile_vars_severity_and_exclude(tmp_path):
    d = write_rules(tmp_path, SACK_PACK, {
        "strict": "name: strict\ninclude: [generic]\nvars: {sack_expected: 0}\nseverity: {T-SACK: critical}\n",
        "none": "name: none\ninclude: [generic]\nexclude: ['T-*']\n",
        "loop": "name: loop\ninclude: [loop2]\n",
        "loop2": "name: loop2\ninclude: [loop]\n",
    })
    catalog = load_catalog(d)
    fs = FactSet(site="t", hosts={"g": host("g", probes={"network.sysctl": ok("network.sysctl", {"sysctls": {"net.ipv4.tcp_sack": {"runtime": "0"}}})})})
    res = resolve_profiles(["strict"], catalog, directory=d)
    assert res.vars["sack_expected"] == 0 and res.severity["T-SACK"].value == "critical"
    assert resolve_profiles(["none"], catalog, directory=d).rule_ids == []
    with pytest.raises(RuleDefinitionError, match="cycle"):
        resolve_profiles(["loop"], catalog, directory=d)
    with pytest.raises(RuleDefinitionError, match="unknown profile"):
        resolve_profiles(["nope"], catalog, directory=d)
    # a site variable beats the profile
    site = Site(name="t", hosts=[Host(name="g", roles=["storage"])], vars={"sack_expected": 0})
    import advisor.rules.specs as specs

    orig = specs.profiles_dir
    specs.profiles_dir = lambda directory=None: d / "profiles"
    try:
        f = evaluate(fs, site, profiles=["generic"], catalog=catalog).findings
    finally:
        specs.profiles_dir = orig
    assert f[0].status == FindingStatus.passed


def test_waivers_valid_expired_and_partial():
    from advisor.model.findings import Finding, Severity

    f = Finding(rule_id="T-SACK", hosts=["gpfs01", "gpfs02", "wn01"], status=FindingStatus.fail,
                severity=Severity.high, evidence=["gpfs01: a", "gpfs02: b", "wn01: c"])
    today = dt.date(2026, 11, 21)
    waivers = [
        Waiver(rule="T-*", hosts="gpfs0*", justification="vendor requirement", approved_by="ops",
               expires=dt.date(2027, 1, 1)),
        Waiver(rule="T-SACK", hosts="wn01", justification="old", expires=dt.date(2026, 1, 1)),
    ]
    out = apply_waivers([f], waivers, today)
    failed = [x for x in out if x.status == FindingStatus.fail]
    waived = [x for x in out if x.status == FindingStatus.waived]
    assert failed[0].hosts == ["wn01"] and "expired" in failed[0].message and failed[0].evidence == ["wn01: c"]
    assert waived[0].hosts == ["gpfs01", "gpfs02"] and "vendor requirement" in waived[0].message
    assert "ops" in waived[0].message
    # a passing finding is never turned into waived
    p = f.model_copy(update={"status": FindingStatus.passed})
    assert apply_waivers([p], waivers, today)[0].status == FindingStatus.passed


def test_waiver_requires_justification():
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        Waiver(rule="X-Y", hosts="*", justification="")


def test_for_each_with_where(tmp_path):
    pack = """
    rules:
      - id: T-RA
        title: read ahead
        probe: block.queue
        for_each: devices
        where: {path: virtual, operator: eq, expected: false}
        fact: read_ahead_kb
        operator: ge
        expected: 1024
        severity: low
        rationale: Tokyo
        evidence: [read_ahead_kb]
    """
    catalog = load_catalog(write_rules(tmp_path, pack))
    devices = {"sda": {"read_ahead_kb": 128, "virtual": False}, "sdb": {"read_ahead_kb": 4096, "virtual": False},
               "loop0": {"read_ahead_kb": 128, "virtual": True}}
    fs = FactSet(site="t", hosts={"h": host("h", probes={"block.queue": ok("block.queue", {"devices": devices})})})
    findings = evaluate(fs, profiles=["generic"], catalog=catalog).findings
    subjects = {f.subject: f.status for f in findings}
    assert subjects == {"sda": FindingStatus.fail, "sdb": FindingStatus.passed}
    assert findings[0].evidence == ["h: 128"]


def test_bad_rule_packs_are_one_line_errors(tmp_path):
    bad = write_rules(tmp_path, "rules:\n  - id: lower-case\n    title: x\n    severity: high\n    rationale: r\n")
    with pytest.raises(RuleDefinitionError) as exc:
        load_catalog(bad)
    assert "test.yml:2" in str(exc.value) and "\n" not in str(exc.value)
    (tmp_path / "test.yml").write_text(SACK_PACK + SACK_PACK.split("rules:")[1])
    with pytest.raises(RuleDefinitionError, match="duplicate rule id T-SACK"):
        load_catalog(tmp_path)


def test_analytic_rule_registration_and_context(tmp_path):
    from advisor.rules.context import analytic_rule

    @analytic_rule("TEST-ANALYTIC-PAIR")
    def pair(ctx):
        hosts = ctx.hosts()
        yield ctx.finding([h.name for h in hosts], FindingStatus.fail, observed=len(hosts), expected=0,
                          evidence=["x"], subject="eth0", values={"k": ctx.vars["v"]})

    pack = """
    vars: {v: 7}
    rules:
      - id: TEST-ANALYTIC-PAIR
        title: pair
        kind: python
        function: TEST-ANALYTIC-PAIR
        roles: [worker]
        severity: medium
        rationale: because
        remediation:
          text: set it
          changes: [{adapter: sysctl, key: "net.core.{subject}_{k}", target: "${v}"}]
    """
    catalog = load_catalog(write_rules(tmp_path, pack))
    fs = FactSet(site="t", hosts={"a": host("a", roles=("worker",)), "b": host("b", roles=("storage",))})
    f = evaluate(fs, profiles=["generic"], catalog=catalog).findings
    assert f[0].hosts == ["a"] and f[0].severity.value == "medium"
    assert [(c.host, c.key, c.target) for c in f[0].changes] == [("a", "net.core.eth0_7", "7")]


def test_shipped_rules_lint_clean():
    from advisor.rules.lint import lint

    problems, _ = lint()
    assert problems == []


def test_null_fact_is_not_applicable_not_error(tmp_path):
    catalog = load_catalog(write_rules(tmp_path, SACK_PACK))
    fs = FactSet(site="t", hosts={"g": host("g", probes={"network.sysctl": ok("network.sysctl", {"sysctls": {"net.ipv4.tcp_sack": {"runtime": None}}})})})
    (f,) = evaluate(fs, profiles=["generic"], catalog=catalog).findings
    assert f.status == FindingStatus.not_applicable and "null" in f.message


def test_lint_names_bad_change_templates(tmp_path):
    from advisor.rules.lint import change_template_problems

    pack = """
    vars: {known: 1}
    rules:
      - id: T-BAD
        title: t
        probe: network.sysctl
        fact: x
        operator: eq
        expected: 1
        severity: low
        rationale: r
        remediation:
          changes:
            - {adapter: nosuch, key: "{subject}", target: "${unknown}"}
            - {adapter: sysctl, key: "{device}", target: "${known}"}
    """
    catalog = load_catalog(write_rules(tmp_path, pack))
    problems = change_template_problems(catalog.rules["T-BAD"], catalog.pack_vars)
    assert any("unknown adapter 'nosuch'" in p for p in problems)
    assert any("variable 'unknown' has no default" in p for p in problems)
    assert any("not device" in p for p in problems)


def test_a_template_substitutes_host_text_once_and_never_evaluates_it():
    from advisor.rules.change_templates import ChangeTemplate, render_changes

    t = ChangeTemplate(adapter="sysctl", key="{subject}", target="{observed} ${v}")
    out = render_changes([t], ["h"], {"subject": "{observed}", "observed": "${v} {{7*7}}", "expected": None},
                         {"v": "X"})
    assert out == [{"host": "h", "adapter": "sysctl", "key": "{observed}", "target": "${v} {{7*7}} X"}]


def test_active_efficiency_findings_come_from_the_rule_engine(tmp_path):
    """EFF-ACTIVE-LOW is a rule like any other: profile variables, severities and waivers reach it."""
    from advisor.model.facts import FactSet as FS

    fs = FS(site="t", hosts={"wn01": host("wn01", roles=("worker",)), "wn02": host("wn02", roles=("worker",))},
            efficiency={"mean": 0.5, "hosts": {"wn01": {"efficiency": 0.35, "cpu_seconds": 1.0, "wall_seconds": 2.9},
                                               "wn02": {"efficiency": 0.66, "cpu_seconds": 1.0, "wall_seconds": 1.5}}})
    only = lambda r: r.id == "EFF-ACTIVE-LOW"  # noqa: E731
    site = Site(name="t", hosts=[Host(name="wn01", roles=["worker"]), Host(name="wn02", roles=["worker"])],
                waivers=[Waiver(rule="EFF-ACTIVE-LOW", hosts="wn01", justification="known slow disk")])
    by = {f.hosts[0]: f for f in evaluate(fs, site, rule_filter=only).findings}
    assert by["wn01"].status == FindingStatus.waived and by["wn02"].status == FindingStatus.fail
    site.vars["efficiency_active_min"] = 0.6
    by = {f.hosts[0]: f for f in evaluate(fs, site, rule_filter=only).findings}
    assert by["wn02"].status == FindingStatus.passed and by["wn02"].observed == 0.66


def test_active_efficiency_evidence_rounds_seconds_to_what_they_mean():
    """'cpu 1.95 s / wall 9.73 s', never 'cpu 1.9527190000000002 s' (fails before: raw floats)."""
    from advisor.model.facts import FactSet as FS

    fs = FS(site="t", hosts={"wn01": host("wn01", roles=("worker",))},
            efficiency={"mean": 0.2, "hosts": {"wn01": {"efficiency": 0.2, "cpu_seconds": 1.9527190000000002,
                                                        "wall_seconds": 9.729353512000216, "source": "st01:4000"}}})
    site = Site(name="t", hosts=[Host(name="wn01", roles=["worker"])])
    f = evaluate(fs, site, rule_filter=lambda r: r.id == "EFF-ACTIVE-LOW").findings[0]
    assert f.evidence == ["wn01: test job efficiency 0.20 (cpu 1.95 s / wall 9.73 s, reading from st01:4000)"]
