"""ONE host selector (advisor.site.host_patterns.HostPattern) with one grammar: names, globs, groups, roles, comma
lists, ``!exclusion``; the same answer from scan --hosts, waivers, settings the site marks immutable,
mesh pairs (Site.hosts_in), the active test's hosts and lab scenarios."""

from __future__ import annotations

import datetime as dt

import pytest
from pydantic import ValidationError

from advisor.efficiency.active import resolve_hosts
from advisor.util.errors import UsageError
from advisor.model.findings import Finding, FindingStatus, Severity
from advisor.lab.scenario import Scenario
from advisor.mesh.schedule import expand_pairs
from advisor.rules.waivers import apply_waivers
from advisor.scan.pipeline import select_hosts
from advisor.site.model import ImmutableSetting, Site, Waiver

HOSTS = [
    {"name": "gpfs01", "roles": ["storage"], "groups": ["nsd", "servers"]},
    {"name": "gpfs02", "roles": ["storage"], "groups": ["nsd", "servers"]},
    {"name": "gpfs03", "roles": ["storage"], "groups": ["servers"]},
    {"name": "door1", "roles": ["door"], "groups": ["servers"]},
    {"name": "wn01", "roles": ["worker"], "groups": ["workers"]},
    {"name": "wn02", "roles": ["worker"], "groups": ["workers"]},
]

CASES = [
    ("gpfs01", ["gpfs01"]),
    ("gpfs0*", ["gpfs01", "gpfs02", "gpfs03"]),
    ("gpfs0*,!gpfs03", ["gpfs01", "gpfs02"]),
    ("storage", ["gpfs01", "gpfs02", "gpfs03"]),  # a role
    ("nsd", ["gpfs01", "gpfs02"]),  # a group
    ("servers,!storage", ["door1"]),
    ("workers, door", ["door1", "wn01", "wn02"]),  # site order, each once
    ("ns*", ["gpfs01", "gpfs02"]),  # a glob also matches group names
    ("!workers", ["gpfs01", "gpfs02", "gpfs03", "door1"]),  # exclusions alone: from every host
    ("all,!nsd,!wn02", ["gpfs03", "door1", "wn01"]),
    ("*", [h["name"] for h in HOSTS]),
]


@pytest.fixture(scope="module")
def site() -> Site:
    return Site.model_validate({"name": "t2", "hosts": HOSTS})


@pytest.mark.parametrize("pattern, names", CASES)
def test_one_grammar_everywhere(site, pattern, names):
    assert [h.name for h in site.select(pattern)] == names
    assert [h.name for h in select_hosts(site, pattern)] == names  # scan --hosts
    assert [h.name for h in site.hosts_in(pattern)] == names  # mesh pairs, the active test
    assert [h.name for h in resolve_hosts(site, [pattern])] == names
    waiver = Waiver(rule="NET-*", hosts=pattern, justification="t")
    assert [h.name for h in site.hosts if waiver.matches("NET-TCP-SACK", h)] == names
    immutable = ImmutableSetting(key="net.core.*", hosts=pattern)
    assert [h.name for h in site.hosts if immutable.covers("sysctl", "net.core.rmem_max", h)] == names
    scenario = Scenario.model_validate({"name": "s", "hosts": [
        {"name": h["name"], "roles": h["roles"], "groups": h["groups"]} for h in HOSTS]})
    assert [h.name for h in scenario.select(pattern)] == names


def test_waivers_name_groups_and_roles_in_the_rule_engine(site):
    f = Finding(rule_id="NET-TCP-SACK", title="t", hosts=[h.name for h in site.hosts], status=FindingStatus.fail,
                severity=Severity.high, rationale="r")
    waiver = Waiver(rule="NET-TCP-SACK", hosts="storage,!gpfs03", justification="vendor", expires=dt.date(2099, 1, 1))
    out = apply_waivers([f], [waiver], hosts=site.by_name())
    assert {tuple(g.hosts): g.status.value for g in out} == {
        ("gpfs03", "door1", "wn01", "wn02"): "fail", ("gpfs01", "gpfs02"): "waived"}


def test_mesh_pairs_take_host_patterns(site):
    site = Site.model_validate({"name": "t2", "hosts": HOSTS, "mesh": {
        "pairs": [{"a": "workers", "b": "storage,!gpfs03", "direction": "forward"}]}})
    paths = {(p.src, p.dst) for p in expand_pairs(site)}
    assert paths == {(w, s) for w in ("wn01", "wn02") for s in ("gpfs01", "gpfs02")}
    # a pair's exclude list reads the same grammar: a group, a role, a glob
    site = Site.model_validate({"name": "t2", "hosts": HOSTS, "mesh": {
        "pairs": [{"a": "servers", "exclude": ["nsd", "door", "gpfs0[3]"]}]}})
    assert {(p.src, p.dst) for p in expand_pairs(site)} == set()  # nothing left to pair
    site = Site.model_validate({"name": "t2", "hosts": HOSTS, "mesh": {
        "pairs": [{"a": "servers", "b": "workers", "direction": "forward", "exclude": ["nsd,door"]}]}})
    assert {p.src for p in expand_pairs(site)} == {"gpfs03"}
    with pytest.raises(ValidationError, match="host pattern"):
        Site.model_validate({"name": "t2", "hosts": HOSTS, "mesh": {"pairs": [{"a": "servers", "exclude": ["a,,b"]}]}})


@pytest.mark.parametrize("pattern", ["", "a,,b", "wn01,!", " , "])
def test_malformed_patterns_are_refused_where_they_are_written(site, pattern):
    with pytest.raises(ValidationError, match="host pattern"):
        Waiver(rule="X", hosts=pattern, justification="t")
    if pattern:
        with pytest.raises(UsageError, match="--hosts: host pattern"):
            select_hosts(site, pattern)


# --------------------------------------------------------------------------- one of each, by the source


def _sources(*dirs: str) -> dict[str, str]:
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    return {str(p.relative_to(root)): p.read_text() for d in dirs for p in sorted((root / d).rglob("*.py"))
            if not p.is_symlink()}  # a link (the collection's plugins/) is its target's text again


def test_one_profile_variable_grammar_and_one_sysctl_path_mapping():
    """``${var}`` is parsed in advisor/rules/profile_vars.py only; a sysctl key becomes a /proc/sys path in
    playbooks/module_utils/storadvise_sysctl_keys.py only (the probe, the lab and the Ansible module
    import it)."""
    import re

    var_regex = re.compile(r"""r["']\\\$\\\{""")
    proc_sys = re.compile(r"""["']/proc/sys/?["']\s*(\+|,)""")  # "/proc/sys/" + key..., Path("/proc/sys", *parts)
    sources = _sources("advisor", "probes", "playbooks")
    assert [p for p, text in sources.items() if var_regex.search(text)] == ["advisor/rules/profile_vars.py"]
    assert [p for p, text in sources.items() if proc_sys.search(text)] == [
        "playbooks/module_utils/storadvise_sysctl_keys.py"]
