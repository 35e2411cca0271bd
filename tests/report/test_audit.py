"""storadvise audit: the acceptance checklist, its JUnit (valid for Jenkins) and HTML, exit codes for CI."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from lxml import etree

from advisor.audit.checklist import audit_checklist
from advisor.model.findings import Finding, FindingStatus, Severity
from advisor.rules.specs import load_catalog
from advisor.site.model import Host, MeshPair, MeshSpec, Site, Waiver

from tests.support.cli import storadvise
from tests.support.paths import JUNIT_XSD
from tests.support.reports import make_report

REPO = Path(__file__).resolve().parents[2]


def _site(waivers=(), mesh=True):
    hosts = [Host(name="gpfs01", address="10.0.0.1", roles=["storage"]),
             Host(name="wn01", address="10.0.0.11", roles=["worker"]), Host(name="wn02", address="10.0.0.12", roles=["worker"])]
    spec = MeshSpec(pairs=[MeshPair(a="storage", b="worker")]) if mesh else None
    return Site(name="demo", hosts=hosts, waivers=list(waivers), mesh=spec)


def test_checklist_items():
    today = dt.date(2026, 11, 23)
    waivers = [Waiver(rule="NET-TCP-SACK", hosts="gpfs01", justification="vendor", approved_by="ops", expires=dt.date(2027, 1, 1)),
               Waiver(rule="NET-TCP-SACK", hosts="wn*", justification="old", approved_by="ops", expires=dt.date(2026, 1, 1)),
               Waiver(rule="NO-SUCH", hosts="nohost", justification="typo")]
    items = audit_checklist(make_report(), _site(waivers), load_catalog(), today=today)
    failed = {(i.check, i.subject) for i in items if not i.passed}
    assert ("mesh", "gpfs01->wn01") in failed and ("mesh", "wn01->wn02") in failed and ("mesh", "wn02->gpfs01") in failed
    assert ("mesh", "gpfs01->wn02") not in failed  # 94% of expected
    # high SACK, medium mesh, and the errored GPFS rule; the info qdisc and the waived firewall are accepted
    settings = sorted(s for c, s in failed if c == "setting")
    assert len(settings) == 3 and any("NET-TCP-SACK[net.ipv4.tcp_sack] on gpfs01" in s for s in settings)
    assert any("GPFS-PAGEPOOL on gpfs01" in s for s in settings) and not any("NET-QDISC" in s for s in settings)
    w = {i.subject: i for i in items if i.check == "waiver"}
    assert w["waivers[0] NET-TCP-SACK on gpfs01"].passed
    assert w["waivers[1] NET-TCP-SACK on wn*"].message == "expired on 2026-01-01"
    assert w["waivers[2] NO-SUCH on nohost"].message == "matches no rule; matches no host of the site; no approved_by; no expiry date"
    assert all(i.passed for i in items if i.check == "reachable")


def test_a_site_that_meets_everything_is_accepted():
    good = [Finding(rule_id="NET-TCP-SACK", hosts=["gpfs01"], status=FindingStatus.passed, severity=Severity.high),
            Finding(rule_id="NET-QDISC", hosts=["wn01"], status=FindingStatus.fail, severity=Severity.low)]
    rep = make_report(findings=good)
    rep.mesh["paths"] = [p for p in rep.mesh["paths"] if p["status"] == "ok" and p["ratio"] >= 0.9]
    items = audit_checklist(rep, _site(), load_catalog())
    assert all(i.passed for i in items), [i for i in items if not i.passed]
    rep.hosts[1].reachable = False
    rep.hosts[1].errors = ["wn01: connection refused"]
    assert [(i.check, i.subject, i.message) for i in audit_checklist(rep, _site(), load_catalog()) if not i.passed] == [
        ("reachable", "wn01", "wn01: connection refused")]
    rep.mesh = None  # the site asks for a mesh that did not run
    assert ("mesh", "all paths") in {(i.check, i.subject) for i in audit_checklist(rep, _site(), load_catalog()) if not i.passed}


def test_audit_command_for_ci(tmp_path):
    site = tmp_path / "site.yml"
    site.write_text("name: here\ntransport: local\nhosts:\n  - {name: box, address: localhost, roles: [worker]}\n"
                    "waivers:\n  - {rule: NET-TCP-SACK, hosts: box, justification: old, approved_by: ops, expires: 2020-01-01}\n")
    cap = tmp_path / "cap"
    assert storadvise("collect", "--site", site, "--out", cap, "--sample-seconds", "0.2").returncode == 0
    r = storadvise("audit", "--site", site, "--from", cap, "--json", "--junit", tmp_path / "a.xml", "--html", tmp_path / "a.html",
            "--threshold", "info")
    assert r.returncode == 2, r.stderr
    d = json.loads(r.stdout)
    assert d["profiles"] == ["pre-deployment"] and d["accepted"] is False
    assert {"check": "reachable", "subject": "box", "passed": True, "message": "reached"} in d["checks"]
    assert any(c["check"] == "waiver" and c["message"] == "expired on 2020-01-01" for c in d["checks"])
    doc = etree.fromstring((tmp_path / "a.xml").read_bytes())
    schema = etree.XMLSchema(etree.parse(str(JUNIT_XSD)))
    assert schema.validate(doc), schema.error_log.last_error
    assert int(doc.get("failures")) == sum(1 for c in d["checks"] if not c["passed"]) > 0
    assert {s.get("name") for s in doc.findall("testsuite")} >= {"audit.reachable", "audit.waiver", "audit.setting"}
    from tests.support.browser import open_page

    with open_page(tmp_path / "a.html") as (page, problems):
        verdict = page.locator("#audit p.bad")
        assert verdict.inner_text().startswith("NOT ACCEPTED") and verdict.bounding_box()["y"] < 200
        assert page.locator("#audit tbody tr").count() == len(d["checks"])
    assert problems == []
    r = storadvise("audit", "--site", site, "--from", cap, "--threshold", "bogus")
    assert r.returncode == 1 and "--threshold must be one of" in r.stderr and "Traceback" not in r.stderr
