"""A storage system we have never seen plugs in through the storage-kind contract alone: a probe
module, a rule pack, an Ansible role and its adapter, registered by one entry
(advisor.storage_kinds.register_storage_kind). No other code changes: the site file accepts its
``storage_kind``, the collector runs its probe, the rule engine evaluates its pack, the planner
asks its adapter, the project ships its role and play, and real ansible-playbook applies it; the
next scan passes."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from advisor.storage_kinds import StorageKind, register_storage_kind, unregister_storage_kind

ANSIBLE_PLAYBOOK = shutil.which("ansible-playbook", path=str(Path(sys.executable).parent)) or shutil.which("ansible-playbook")

PROBE = '''
from pydantic import BaseModel
from probes.probe import Probe, ProbeContext, ProbeParseError


class FakeFsFacts(BaseModel):
    settings: dict[str, int]


class FakeFsProbe(Probe):
    name = "fakefs.tunables"
    title = "fakefs tunables (key=value)"
    facts_model = FakeFsFacts

    def script(self, ctx: ProbeContext) -> str:
        return "cat " + ctx.vars["fakefs_conf"] + "\\n"

    def parse(self, text: str) -> FakeFsFacts:
        out = {}
        for n, line in enumerate(text.splitlines(), 1):
            k, sep, v = line.partition("=")
            if not sep or not v.strip().isdigit():
                raise ProbeParseError(f"fakefs line {n} is not key=<integer>")
            out[k.strip()] = int(v)
        return FakeFsFacts(settings=out)
'''

ADAPTER = '''
from advisor.adapters import Adapter


class FakeFsAdapter(Adapter):
    name = "fakefs"
    role = "fakefs_tuning"

    def current(self, facts, key):
        v = ((facts.get("fakefs.tunables") or {}).get("settings") or {}).get(key)
        return v, v

    def role_vars(self, changes, facts, host_vars):
        return {"fakefs_settings": {c.key: str(c.target) for c in changes}}


ADAPTER = FakeFsAdapter()
'''

PACK = '''
rules:
  - id: FAKEFS-STRIPE
    title: fakefs stripes are large enough for streaming reads
    roles: [storage]
    probe: fakefs.tunables
    fact: settings.stripe_kb
    operator: ge
    expected: 1024
    severity: medium
    rationale: a test storage system's rule
    remediation:
      text: Raise stripe_kb to 1024.
      changes: [{adapter: fakefs, key: stripe_kb, target: "1024"}]
'''

ROLE_TASKS = '''
- name: Set fakefs settings
  ansible.builtin.lineinfile:
    path: "{{ fakefs_conf }}"
    regexp: "^{{ item.key }}="
    line: "{{ item.key }}={{ item.value }}"
  loop: "{{ fakefs_settings | dict2items }}"
  register: fakefs_tuning_result
  when: fakefs_tuning_state | default('present') == 'present'
'''


@pytest.fixture
def fakefs(tmp_path, monkeypatch):
    pkg = tmp_path / "plugin" / "fakefs_plugin"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "probe.py").write_text(PROBE)
    (pkg / "adapter.py").write_text(ADAPTER)
    (pkg / "fakefs.yml").write_text(PACK)
    role = tmp_path / "plugin" / "fakefs_tuning"
    (role / "tasks").mkdir(parents=True)
    (role / "tasks" / "main.yml").write_text(ROLE_TASKS)
    monkeypatch.syspath_prepend(str(tmp_path / "plugin"))
    kind = register_storage_kind(StorageKind(
        "fakefs", "a storage system the product has never seen", probe_module="fakefs_plugin.probe",
        rule_pack=str(pkg / "fakefs.yml"), role=str(role), adapter_module="fakefs_plugin.adapter"))
    try:
        yield kind
    finally:
        unregister_storage_kind("fakefs")
        for m in [m for m in sys.modules if m.startswith("fakefs_plugin")]:
            del sys.modules[m]


def scan(site, collect_site_facts, transport_for):
    from advisor.report.model import build_report
    from advisor.rules.engine import evaluate

    fs = collect_site_facts(site, lambda h: transport_for(h, site), probes=["fakefs.tunables"], sample_seconds=0.1)
    ev = evaluate(fs, site)
    return build_report(fs, ev.findings, profiles=site.profiles, started_at="-", finished_at="-", duration_s=0,
                        site_file=None)


@pytest.mark.usefixtures("ansible_playbook")
@pytest.mark.skipif(ANSIBLE_PLAYBOOK is None, reason="ansible-playbook not found")
def test_a_new_storage_kind_is_scanned_planned_applied_and_verified(fakefs, tmp_path):
    from advisor.apply.planner import build_plan
    from advisor.apply.project import write_project
    from advisor.collect.collector import collect_site_facts
    from advisor.site.model import Site
    from advisor.transport.factory import transport_for

    conf = tmp_path / "fakefs.conf"
    conf.write_text("stripe_kb=256\nqueue=8\n")
    # fs02's file is gone by the time the plan is applied: its role fails there
    gone = tmp_path / "gone" / "fakefs.conf"
    gone.parent.mkdir()
    gone.write_text("stripe_kb=256\n")
    site = Site.model_validate({"name": "plug", "storage_kind": "fakefs", "transport": "local", "hosts": [
        {"name": "fs01", "address": "localhost", "roles": ["storage"], "vars": {"fakefs_conf": str(conf)}},
        {"name": "fs02", "address": "localhost", "roles": ["storage"], "vars": {"fakefs_conf": str(gone)}}]})
    assert site.profiles == ["generic"]  # the kind's default profile
    report = scan(site, collect_site_facts, transport_for)
    fail = [f for f in report.findings if f.rule_id == "FAKEFS-STRIPE"]
    assert [(f.status.value, f.observed) for f in fail] == [("fail", 256)]
    assert [(c.host, c.adapter, c.key, c.runtime, c.target, c.scope.value) for c in fail[0].changes] == [
        ("fs01", "fakefs", "stripe_kb", 256, "1024", "both"), ("fs02", "fakefs", "stripe_kb", 256, "1024", "both")]

    plan = build_plan(report, site)
    assert plan.host_vars == {h: {"fakefs_tuning": {"fakefs_settings": {"stripe_kb": "1024"}}} for h in ("fs01", "fs02")}
    out = tmp_path / "plan"
    write_project(plan, site, out)
    assert (out / "roles" / "fakefs_tuning" / "tasks" / "main.yml").is_file()
    # the plug-in's play runs before the summary, which is handed its role with the shipped ones
    apply = yaml.safe_load((out / "apply-tuning.yml").read_text())
    assert [p.get("hosts") for p in apply].index("storadvise_fakefs_tuning") == len(apply) - 2
    assert "fakefs_tuning" in apply[-1]["roles"][0]["vars"]["apply_summary_roles"]
    assert "fakefs_tuning_state: rollback" in (out / "rollback.yml").read_text()
    assert json.loads((out / "plan.json").read_text())["changes"][0]["role"] == "fakefs_tuning"
    shutil.rmtree(gone.parent)
    cp = subprocess.run([ANSIBLE_PLAYBOOK, "apply-tuning.yml", "-e", "ansible_connection=local",
                         "-e", f"ansible_python_interpreter={sys.executable}"],
                        cwd=out, capture_output=True, text=True, timeout=300)
    assert conf.read_text() == "stripe_kb=1024\nqueue=8\n"
    # fs02's failure reaches apply-summary.json and fails the run, as a shipped role's would
    assert cp.returncode != 0, cp.stdout[-2000:]
    summary = json.loads((out / "apply-summary.json").read_text())
    assert summary["failed_hosts"] == ["fs02"], summary
    assert [u["setting"] for u in summary["hosts"]["fs02"]["unfinished"]] == ["stripe_kb"], summary
    site = site.model_copy(update={"hosts": site.hosts[:1]})
    after = scan(site, collect_site_facts, transport_for)
    assert [f.status.value for f in after.findings if f.rule_id == "FAKEFS-STRIPE"] == ["pass"]


def test_an_unknown_storage_kind_is_refused_by_name():
    from advisor.site.model import Site

    with pytest.raises(ValueError, match="unknown storage kind 'fakefs2'"):
        Site.model_validate({"name": "x", "storage_kind": "fakefs2"})


def test_the_gpfs_kind_selects_its_default_profile():
    from advisor.site.model import Site

    assert Site.model_validate({"name": "x", "storage_kind": "gpfs"}).profiles == ["gpfs-site"]
    assert Site.model_validate({"name": "x", "storage_kind": "gpfs", "profiles": ["ifca"]}).profiles == ["ifca"]
