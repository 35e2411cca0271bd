"""Rules ask for their facts, and a site adds its own rule packs.

A new sysctl rule is ONE YAML entry: in rules/ (a copy of the shipped directory) or in a site-local
``--rules DIR`` / ``rules_dirs:``. The sysctl probe reads the keys the loaded rules name; an older
capture that lacks the key still replays, the rule ``not_applicable`` "not collected". The live
half (a lab host) is tests/lab/test_lab_rule_requests.py.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from advisor.util.errors import RuleDefinitionError
from advisor.rules.probe_requests import requested_keys
from advisor.rules.specs import load_catalog, resolve_profiles
from advisor.scan.pipeline import open_scan, run_scan
from advisor.scan.options import ScanOptions
from advisor.site.file import load_site
from tests.support.cli import storadvise
from tests.support.rule_packs import NEW_KEY, rules_copy, site_pack

REPO = Path(__file__).resolve().parents[2]
#: outputs of the network.sysctl probe of an older storadvise (tests/fixtures/network/capture.py):
#: no 'requested' section, a runtime section from the key list of its day
OLDER_SYSCTL_OUTPUT = (REPO / "tests" / "fixtures" / "network" / "sysctl-netns-gpfs-server.txt").read_text()

def older_capture(tmp_path: Path) -> Path:
    """A capture (format 1, as older storadvise wrote) of one storage server's sysctls."""
    cap = tmp_path / "older-capture"
    host = cap / "hosts" / "gpfs01"
    host.mkdir(parents=True)
    (host / "network.sysctl.out").write_text(OLDER_SYSCTL_OUTPUT)
    (cap / "manifest.json").write_text(json.dumps({
        "capture_format": 1, "collected_at": "2026-01-10T09:00:00+01:00",
        "site": {"name": "older", "hosts": [{"name": "gpfs01", "roles": ["storage"]}]},
        "hosts": {"gpfs01": {"reachable": True, "errors": []}}}))
    return cap


def finding(report: dict, rule_id: str) -> dict:
    (f,) = [f for f in report["findings"] if f["rule_id"] == rule_id]
    return f


# --------------------------------------------------------------------------- the probe asks the rules


def test_the_shipped_rules_do_not_ask_for_the_key_and_one_entry_makes_them(tmp_path):
    assert NEW_KEY not in requested_keys(load_catalog())["network.sysctl"]
    assert NEW_KEY in requested_keys(load_catalog(rules_copy(tmp_path)))["network.sysctl"]
    assert NEW_KEY in requested_keys(load_catalog(site_dirs=[site_pack(tmp_path)]))["network.sysctl"]


def test_keys_come_from_fact_paths_evidence_and_change_keys_not_templates(tmp_path):
    d = tmp_path / "d"
    d.mkdir()
    (d / "k.yml").write_text(textwrap.dedent("""\
        rules:
          - id: SITE-VM-SWAPPINESS
            title: swappiness is low
            probe: network.sysctl
            fact: sysctls."vm.swappiness".runtime
            operator: le
            expected: 10
            severity: info
            rationale: storage servers keep their page cache
            evidence: [sysctls."kernel.pid_max".runtime]
            remediation:
              changes:
                - {adapter: sysctl, key: net.core.somaxconn, target: "4096"}
                - {adapter: sysctl, key: "{subject}", target: "1"}
        """))
    keys = requested_keys(load_catalog(site_dirs=[d]))["network.sysctl"]
    assert {"vm.swappiness", "kernel.pid_max", "net.core.somaxconn"} <= set(keys)
    assert not [k for k in keys if "{" in k]


# --------------------------------------------------------------------------- an older capture replays


def test_an_older_capture_replays_with_the_site_rule_not_collected(tmp_path):
    cap = older_capture(tmp_path)
    r = storadvise("scan", "--from", cap, "--rules", site_pack(tmp_path), "--json", "--fail-on", "critical")
    assert r.returncode in (0, 3), r.stderr
    report = json.loads(r.stdout)
    f = finding(report, "NET-TCP-SLOW-START-IDLE")
    assert f["status"] == "not_applicable" and f["hosts"] == ["gpfs01"]
    assert "not collected" in f["message"] and NEW_KEY in f["message"]
    # the keys the capture holds are still judged: the older output parses (no "lacks ... (truncated?)")
    assert report["hosts"][0]["probes"]["network.sysctl"] == "ok"
    assert finding(report, "NET-TCP-SACK")["status"] == "fail"


def test_an_older_capture_replays_with_the_rule_added_to_rules_dir(tmp_path, monkeypatch):
    import advisor.rules.specs

    copy = rules_copy(tmp_path)
    monkeypatch.setattr(advisor.rules.specs, "rules_dir", lambda: copy)
    options = ScanOptions(from_capture=older_capture(tmp_path))
    target = open_scan(options)
    assert NEW_KEY in target.requested["network.sysctl"]
    report = run_scan(target, options).report.model_dump(mode="json")
    f = finding(report, "NET-TCP-SLOW-START-IDLE")
    assert f["status"] == "not_applicable" and "not collected" in f["message"]


# --------------------------------------------------------------------------- site-local rule packs


def test_site_file_rules_dirs_are_relative_to_the_site_file_and_loaded_like_shipped_packs(tmp_path):
    pack = site_pack(tmp_path)
    (pack / "profiles").mkdir()
    (pack / "profiles" / "our-site.yml").write_text(
        "name: our-site\ninclude: [generic]\nseverity: {NET-TCP-SLOW-START-IDLE: high}\n")
    site_file = tmp_path / "site.yml"
    site_file.write_text(textwrap.dedent("""\
        name: oursite
        rules_dirs: [site-rules]
        profiles: [our-site]
        hosts:
          - {name: wn01, roles: [worker]}
        waivers:
          - {rule: NET-TCP-SLOW-START-IDLE, hosts: "wn*", justification: ticket 42, approved_by: ops}
        """))
    site = load_site(str(site_file))
    assert site.rules_dirs == [pack]
    catalog = load_catalog(site_dirs=site.rules_dirs)
    assert catalog.rules["NET-TCP-SLOW-START-IDLE"].pack == str(pack / "local.yml")
    resolved = resolve_profiles(site.profiles, catalog)  # a site profile, found in the site's directory
    assert "NET-TCP-SLOW-START-IDLE" in resolved.rule_ids and resolved.severity["NET-TCP-SLOW-START-IDLE"] == "high"
    r = storadvise("rules", "lint", "--site", site_file, "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    lint = json.loads(r.stdout)
    assert not [w for w in lint["warnings"] if "waivers[0]" in w and "matches no rule" in w]
    r = storadvise("rules", "list", "--rules", pack, "--json")
    assert r.returncode == 0, r.stderr
    assert any(row["id"] == "NET-TCP-SLOW-START-IDLE" for row in json.loads(r.stdout))


def test_a_site_directory_holds_data_rules_only(tmp_path):
    d = tmp_path / "site-rules"
    d.mkdir()
    (d / "py.yml").write_text(textwrap.dedent("""\
        rules:
          - id: SITE-PY-RULE
            title: a python rule
            kind: python
            function: NET-TCP-BUFFER-MAX
            severity: info
            rationale: none
        """))
    with pytest.raises(RuleDefinitionError, match=r"py.yml:4: rule SITE-PY-RULE: .*data rules only"):
        load_catalog(site_dirs=[d])
    r = storadvise("scan", "--rules", d, "--json")
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "data rules only" in r.stderr and len(r.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("content, message", [
    (None, "rules directory not found"),
    ("rules:\n  - id: NET-TCP-SACK\n    title: again\n    probe: network.sysctl\n    fact: x\n    operator: present\n"
     "    severity: low\n    rationale: dup\n", "duplicate rule id NET-TCP-SACK"),
])
def test_bad_site_rules_are_one_line_errors(tmp_path, content, message):
    d = tmp_path / "site-rules"
    if content is not None:
        d.mkdir()
        (d / "bad.yml").write_text(content)
    for args in (("scan", "--rules", d, "--json"), ("rules", "lint", "--rules", d), ("rules", "list", "--rules", d)):
        r = storadvise(*args)
        out = r.stderr + r.stdout
        assert r.returncode == 1 and message in out and "Traceback" not in out, (args, out)


def test_inventory_vars_give_an_inventory_only_site_its_rules_dirs(tmp_path):
    from advisor.site.inventory import parse_role_map, site_from_inventory

    pack = site_pack(tmp_path)
    inv = tmp_path / "hosts.ini"
    inv.write_text(f"[wn]\nwn01\nwn02\n\n[all:vars]\nstoradvise_rules_dirs=['{pack}']\n"
                   "storadvise_storage_systems=['gpfs', 'san']\n")
    site = site_from_inventory(inv, parse_role_map(["wn=worker"]), name="inv")
    assert site.rules_dirs == [pack] and site.storage_systems == ["gpfs", "san"] and site.storage_kind == "gpfs"
