"""--probes / --skip-probes on scan, collect, plan and verify (the local host, then its capture):
a probe left out is never run, its rules are not_applicable saying why, plan and verify say so."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from advisor.collect.probe_selection import SKIPPED, selected_probes
from advisor.util.errors import UsageError
from advisor.rules.specs import load_catalog
from tests.support.cli import storadvise

REPO = Path(__file__).resolve().parents[2]


def test_selection_by_names_and_globs():
    names = ["block.queue", "block.diskstats", "disk.smart", "network.sysctl"]
    assert selected_probes(None, None, names) is None
    assert selected_probes("block.*", None, names) == {"block.queue", "block.diskstats"}
    assert selected_probes(None, "disk.smart, block.*", names) == {"network.sysctl"}
    assert selected_probes("block.*,network.sysctl", "block.queue", names) == {"block.diskstats", "network.sysctl"}
    with pytest.raises(UsageError, match="--skip-probes 'disk.smrt' matches no probe"):
        selected_probes(None, "disk.smrt", names)
    with pytest.raises(UsageError, match="leave no probe"):
        selected_probes("disk.smart", "disk.*", names)


@pytest.fixture(scope="module")
def local(tmp_path_factory):
    d = tmp_path_factory.mktemp("sel")
    site = d / "here.yml"
    site.write_text("name: here\ntransport: local\nhosts:\n  - {name: box, address: localhost, roles: [worker]}\n")
    full = d / "full"
    r = storadvise("collect", "--site", site, "--out-dir", full, "--sample-seconds", "0.2")
    assert r.returncode == 0, r.stderr
    return d, site, full


def _skipped(report: dict) -> dict[str, str]:
    return {f["rule_id"]: f["message"] for f in report["findings"]
            if f["status"] == "not_applicable" and SKIPPED in (f["message"] or "")}


def test_collect_and_scan_leave_out_probes_and_say_why(local):
    d, site, full = local
    cap = d / "no-disk"
    r = storadvise("collect", "--site", site, "--out-dir", cap, "--sample-seconds", "0.2", "--skip-probes", "disk.smart,block.*")
    assert r.returncode == 0, r.stderr
    index = json.loads((cap / "hosts" / "box" / "outputs.json").read_text())["outputs"]
    not_run = hashlib.sha256(f"# {SKIPPED}".encode()).hexdigest()
    assert index["disk.smart"]["script"] == not_run and index["block.queue"]["script"] == not_run
    assert index["network.sysctl"]["script"] != not_run
    # the capture keeps the reason: a scan of it says so without being told again
    r = storadvise("scan", "--from", cap, "--no-history", "--json", "--fail-on", "critical")
    assert r.returncode in (0, 2), r.stderr
    rep = json.loads(r.stdout)
    skipped = _skipped(rep)
    assert skipped["DISK-FAILING"] == f"probe disk.smart {SKIPPED}"
    assert {"DISK-IO-ERRORS", "DISK-UTIL-HIGH"} <= set(skipped)
    assert rep["hosts"][0]["probes"]["disk.smart"] == "not_applicable"
    assert rep["hosts"][0]["probes"]["network.sysctl"] == "ok"
    # --probes on a scan of the full capture: only those probes' rules are checked
    r = storadvise("scan", "--from", full, "--no-history", "--json", "--fail-on", "critical", "--probes", "network.sysctl")
    rep = json.loads(r.stdout)
    catalog = load_catalog()
    checked = {f["rule_id"] for f in rep["findings"] if f["status"] in ("pass", "fail")}
    assert checked and all(catalog.rules[rid].probe in ("network.sysctl", None) for rid in checked)
    assert "DISK-FAILING" in _skipped(rep) and not any(rid.startswith("NET-") for rid in _skipped(rep))
    r = storadvise("scan", "--from", full, "--no-history", "--probes", "network.sysctl,nosuch")
    assert r.returncode == 1 and "--probes 'nosuch' matches no probe" in r.stderr and r.stderr.count("\n") == 1


def test_plan_and_verify_say_what_was_not_checked(local):
    d, site, full = local
    before = d / "before.json"
    r = storadvise("scan", "--from", full, "--no-history", "-o", before, "--fail-on", "critical")
    assert r.returncode in (0, 2), r.stderr
    catalog = load_catalog()
    failed = [f for f in json.loads(before.read_text())["findings"]
              if f["status"] == "fail" and catalog.rules[f["rule_id"]].probe]
    assert failed, "the local host has at least one failed finding read from a probe (e.g. qdisc, tcp settings)"
    rule = failed[0]["rule_id"]
    probe = catalog.rules[rule].probe
    r = storadvise("verify", "--site", site, "--from", full, "--before", before, "--no-history", "--json",
            "--fail-on", "critical", "--skip-probes", probe)
    assert r.returncode in (0, 2), r.stderr
    v = json.loads(r.stdout)
    outcome = {(x["rule_id"], x["host"]): x["outcome"] for x in v["findings"]}
    assert outcome[(rule, "box")] == "not_checked"  # not "fixed": it was not looked at
    assert v["summary"]["not_checked"] >= 1 and v["summary"]["fixed"] == 0
    r = storadvise("verify", "--site", site, "--from", full, "--before", before, "--no-history",
            "--fail-on", "critical", "--skip-probes", probe)
    assert "not checked" in r.stdout and "left out by --probes/--skip-probes" in r.stdout

    skipped_scan = d / "skipped.json"
    storadvise("scan", "--from", full, "--no-history", "-o", skipped_scan, "--skip-probes", probe)
    r = storadvise("plan", "--site", site, "--scan", skipped_scan, "--out-dir", d / "fix", "--min-severity", "info")
    assert r.returncode in (0, 3), r.stderr
    plan_md = (d / "fix" / "PLAN.md").read_text()
    assert "not checked" in plan_md and rule in plan_md.split("not checked", 1)[1]
    assert "not checked" in r.stdout


def test_collect_through_ansible_sends_only_the_chosen_probes(local):
    d, site, _full = local
    vars_file = d / "collect-vars.yml"
    r = storadvise("collect", "--site", site, "--ansible-vars", vars_file, "--skip-probes", "disk.smart,block.*")
    assert r.returncode == 0, r.stderr
    collect = json.loads((d / "collect-vars.batches.json").read_text())  # the batches beside the vars file
    keys = {c["key"] for c in collect["batches"][collect["hosts"]["box"]["batch"]]["commands"]}
    assert "network.sysctl" in keys and "disk.smart" not in keys and not any(k.startswith("block.") for k in keys)
