"""A new sysctl rule, one YAML entry, evaluated on live lab hosts: the probe reads the key because
the loaded rule names it (no key list edited). The rule comes from a site-local ``--rules DIR``, from
the site file's ``rules_dirs:``, and from a copy of rules/ with the entry appended. The replay of an
older capture is tests/core/test_rule_requests.py. Needs root (CI is root)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.support.lab import REPO, ssh
from tests.support.rule_packs import NEW_KEY, rules_copy, site_pack

SCENARIO = f"""
name: rulereq
description: two hosts; h2 keeps its TCP window across idle periods
hosts:
  - name: h1
    roles: [worker]
  - name: h2
    roles: [worker]
    sysctls: {{{NEW_KEY}: 0}}
site:
  profiles: [generic]
"""


@pytest.fixture(scope="module")
def lab(shared_labs, tmp_path_factory: pytest.TempPathFactory):
    return {"rec": shared_labs.up(SCENARIO), "tmp": tmp_path_factory.mktemp("rulereq")}


def _scan(*args: str) -> dict:
    cp = subprocess.run([sys.executable, "-m", "advisor.cli.root", "scan", *args, "--no-mesh", "--no-efficiency",
                         "--sample-seconds", "0.2", "--json", "--fail-on", "critical"],
                        capture_output=True, text=True, timeout=600, cwd=str(REPO))
    assert cp.returncode in (0, 3), cp.stderr[-2000:]
    return json.loads(cp.stdout)


def _verdicts(report: dict) -> dict[str, dict]:
    return {h: f for f in report["findings"] if f["rule_id"] == "NET-TCP-SLOW-START-IDLE" for h in f["hosts"]}


def _check_live(report: dict, lab: dict) -> None:
    rec = lab["rec"]
    live = {h: ssh(rec.dir, rec.hosts[h]["address"], f"cat /proc/sys/{NEW_KEY.replace('.', '/')}")
            .stdout.strip() for h in ("h1", "h2")}
    assert live == {"h1": "1", "h2": "0"}
    v = _verdicts(report)
    assert v["h1"]["status"] == "fail" and str(v["h1"]["observed"]) == live["h1"]
    assert [(c["adapter"], c["key"], c["target"]) for c in v["h1"]["changes"]] == [("sysctl", NEW_KEY, "0")]
    assert v["h2"]["status"] == "pass"
    for host in report["hosts"]:
        runtime = {leaf["name"]: leaf["value"] for leaf in host["facts"]["network.sysctl"]}[f"/sysctls/{NEW_KEY}/runtime"]
        assert runtime == live[host["name"]]


def test_site_rules_dir_on_the_command_line(lab: dict, tmp_path: Path) -> None:
    _check_live(_scan("--site", lab["rec"].site_file, "--rules", str(site_pack(tmp_path))), lab)


def test_site_file_rules_dirs(lab: dict, tmp_path: Path) -> None:
    site = yaml.safe_load(Path(lab["rec"].site_file).read_text())
    site["rules_dirs"] = [str(site_pack(tmp_path))]
    site_file = tmp_path / "site.yml"
    site_file.write_text(yaml.safe_dump(site, sort_keys=False))
    _check_live(_scan("--site", str(site_file)), lab)


def test_rule_added_to_a_copy_of_rules(lab: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import advisor.rules.specs
    from advisor.scan.pipeline import open_scan, run_scan
    from advisor.scan.options import ScanOptions

    copy = rules_copy(tmp_path)
    monkeypatch.setattr(advisor.rules.specs, "rules_dir", lambda: copy)
    options = ScanOptions(mesh=False, efficiency=False, sample_seconds=0.2)
    run = run_scan(open_scan(options, lab["rec"].site_file), options)
    _check_live(run.report.model_dump(mode="json"), lab)
