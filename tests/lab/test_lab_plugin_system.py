"""A storage system the product has never seen, added in its own files only: a distribution in a
temporary directory (probe module, adapter module, rule pack, Ansible role, lab emulation and the
StorageKind) whose ``storadvise.storage_kinds`` entry point is found by importlib.metadata in the CLI's
subprocesses (PYTHONPATH). The lab emulates it on two hosts (their /etc/stripefs/stripefs.conf);
scan finds its rule failing with the probe's evidence -> plan writes its role's variables, its play
before the summary play -> real ansible-playbook fixes st01 and fails on st02 (whose file is gone) ->
apply-summary.json names st02 with its setting unfinished -> verify says st01 is fixed and st02
still fails. ``lab generate`` draws the system's fault from its emulation too. No tracked
file of the repository changes. Real namespace hosts and sshd; needs root (CI is root)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from tests.support.cli import storadvise
from tests.support.lab import REPO, lab_cli, lab_traces, no_traces, require_root
from tests.support.plan_files import plan_vars

pytestmark = pytest.mark.usefixtures("ansible_playbook")

BIN = Path(sys.executable).parent
PKG = "stripefs_storadvise"

FILES = {
    "__init__.py": '"""stripefs: a storage system storadvise has never seen, plugged in from outside."""\n',
    "kind.py": '''
        from pathlib import Path

        from advisor.storage_kinds import StorageKind

        HERE = Path(__file__).resolve().parent

        KIND = StorageKind(
            "stripefs", "stripefs clients: key=integer tunables in /etc/stripefs/stripefs.conf",
            probe_module="stripefs_storadvise.probe", rule_pack=str(HERE / "stripefs.yml"),
            role=str(HERE / "stripefs_tuning"), adapter_module="stripefs_storadvise.adapter",
            play_title="Set stripefs tunables in stripefs.conf", lab_emulation="stripefs_storadvise.lab")
    ''',
    "probe.py": '''
        from pydantic import BaseModel

        from probes.probe import NOT_APPLICABLE_MARKER, Probe, ProbeContext, ProbeParseError

        CONF = "/etc/stripefs/stripefs.conf"


        class StripeFsFacts(BaseModel):
            settings: dict[str, int]


        class StripeFsProbe(Probe):
            name = "stripefs.tunables"
            title = "stripefs tunables (key=value)"
            facts_model = StripeFsFacts

            def script(self, ctx: ProbeContext) -> str:
                return f'[ -r {CONF} ] || {{ echo "{NOT_APPLICABLE_MARKER} no {CONF}"; exit 0; }}\\ncat {CONF}\\n'

            def parse(self, text: str) -> StripeFsFacts:
                out = {}
                for n, line in enumerate(text.splitlines(), 1):
                    k, sep, v = line.partition("=")
                    if not sep or not v.strip().isdigit():
                        raise ProbeParseError(f"stripefs.conf line {n} is not key=<integer>")
                    out[k.strip()] = int(v)
                return StripeFsFacts(settings=out)
    ''',
    "adapter.py": '''
        from advisor.adapters import Adapter


        class StripeFsAdapter(Adapter):
            name = "stripefs"
            role = "stripefs_tuning"

            def current(self, facts, key):
                v = ((facts.get("stripefs.tunables") or {}).get("settings") or {}).get(key)
                return v, v

            def role_vars(self, changes, facts, host_vars):
                return {"stripefs_settings": {c.key: str(c.target) for c in changes}}


        ADAPTER = StripeFsAdapter()
    ''',
    "stripefs.yml": '''
        rules:
          - id: STRIPEFS-STRIPE
            title: stripefs stripes are large enough for streaming reads
            roles: [storage]
            probe: stripefs.tunables
            fact: settings.stripe_kb
            operator: ge
            expected: 1024
            severity: medium
            rationale: stripefs reads a whole stripe per request; a small stripe splits a streaming read
            remediation:
              text: Raise stripe_kb to 1024 in /etc/stripefs/stripefs.conf.
              changes: [{adapter: stripefs, key: stripe_kb, target: "1024"}]
    ''',
    "stripefs_tuning/defaults/main.yml": '''
        stripefs_conf: /etc/stripefs/stripefs.conf
        stripefs_settings: {}
        stripefs_tuning_state: present
    ''',
    "stripefs_tuning/tasks/main.yml": '''
        - name: Set stripefs tunables (a backup first)
          ansible.builtin.lineinfile:
            path: "{{ stripefs_conf }}"
            regexp: "^{{ item.key }}="
            line: "{{ item.key }}={{ item.value }}"
            backup: true
          loop: "{{ stripefs_settings | dict2items }}"
          register: stripefs_tuning_result
          when: stripefs_tuning_state == 'present'
    ''',
    "lab.py": '''
        """The ``stripefs:`` section of a lab scenario: the hosts that carry /etc/stripefs/stripefs.conf."""

        from pathlib import Path

        from pydantic import BaseModel, ConfigDict, Field

        from advisor.lab.emulation import LabEmulation


        class StripeFsSection(BaseModel):
            model_config = ConfigDict(extra="forbid")

            hosts: list[str] = Field(min_length=1)
            settings: dict[str, int] = Field(default_factory=dict)


        class StripeFsLab(LabEmulation):
            section = "stripefs"
            bind_dirs = ("/etc/stripefs",)
            model = StripeFsSection
            generated_fault = "stripefs"  # lab generate draws it, from a random generator of its own

            def generate_fault(self, rng, data, storage, workers, sg, wg, expect):
                kb = rng.choice([128, 256, 512])
                data["stripefs"] = {"hosts": [sg], "settings": {"stripe_kb": kb}}
                for h in storage:
                    expect.append({"rule": "STRIPEFS-STRIPE", "host": h["name"], "fault": f"stripe_kb = {kb}"})

            def check(self, spec, scenario):
                for sel in spec.hosts:
                    if not scenario.select(sel):
                        raise ValueError(f"stripefs.hosts: selector {sel!r} matches no host, group or role")

            def hosts(self, spec, scenario):
                return [h.name for h in scenario.select_all(spec.hosts)]

            def setup(self, state_dir, spec, scenario):
                d = Path(state_dir) / "stripefs"
                d.mkdir(parents=True, exist_ok=True)
                (d / "stripefs.conf").write_text("".join(f"{k}={v}\\n" for k, v in spec.settings.items()))

            def install(self, host_dir, state_dir):
                d = Path(host_dir) / "emu" / "stripefs"
                d.mkdir(parents=True, exist_ok=True)
                (d / "stripefs.conf").write_text((Path(state_dir) / "stripefs" / "stripefs.conf").read_text())
                return {"/etc/stripefs": d}


        EMULATION = StripeFsLab()
    ''',
}

SCENARIO = """
name: stripefs
description: two stripefs clients at a small stripe (a storage system added as a plug-in)
switches:
  - name: core
hosts:
  - name: st[01:02]
    roles: [storage]
    switch: core
stripefs:
  hosts: [storage]
  settings: {stripe_kb: 256, queue: 8}
site:
  storage_kind: stripefs
  storage_systems: [stripefs]
"""


def write_distribution(root: Path) -> None:
    """The plug-in as an installed distribution would leave it: the package and its dist-info."""
    for rel, text in FILES.items():
        f = root / PKG / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(textwrap.dedent(text).lstrip())
    info = root / f"{PKG}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: stripefs-storadvise\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[storadvise.storage_kinds]\nstripefs = {PKG}.kind:KIND\n")


def tracked_state() -> tuple[str, str]:
    status = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
                            capture_output=True, text=True, check=True).stdout
    diff = subprocess.run(["git", "-C", str(REPO), "diff", "--stat"], capture_output=True, text=True, check=True).stdout
    return status, diff


def test_a_storage_system_added_in_its_own_files(lab_registry: Path, tmp_path: Path, monkeypatch) -> None:
    require_root()
    # compared with the tree as it was before the test, so a developer's uncommitted work does not fail it
    before = tracked_state()
    plugin = tmp_path / "site-packages"
    write_distribution(plugin)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(plugin), os.environ.get("PYTHONPATH")) if p))
    scenario = tmp_path / "stripefs.yml"
    scenario.write_text(SCENARIO)
    # lab generate draws the plug-in's fault too: a seed that holds it gets the section and its findings;
    # the shipped systems' draws of every seed stay as they were without the plug-in
    from advisor.lab.generate import generate_scenario

    holding = []
    for seed in range(1, 9):
        data = json.loads(lab_cli(["generate", "--seed", str(seed), "--json"]).stdout)
        without = json.loads(json.dumps(generate_scenario(seed)))  # this process has no plug-in
        assert {k: v for k, v in data.items() if k not in ("stripefs", "expect", "description", "site")} == {
            k: v for k, v in without.items() if k not in ("expect", "description", "site")}
        # (the waiver, drawn among every fixable finding, may fall on another one: 'waived' is left out)
        assert [{k: v for k, v in e.items() if k != "waived"} for e in data["expect"]
                if e.get("rule") != "STRIPEFS-STRIPE"] == [{k: v for k, v in e.items() if k != "waived"}
                                                            for e in without["expect"]]
        if "stripefs" in data:
            holding.append(seed)
            storage = sorted(h["name"] for h in data["hosts"] if "storage" in h["roles"])
            assert sorted(e["host"] for e in data["expect"] if e.get("rule") == "STRIPEFS-STRIPE") == storage
            assert "stripefs" in data["description"]
    assert holding, "no seed of 1-8 drew the plug-in's fault"
    name = f"t-plg{os.getpid() % 10000}"
    try:
        lab_cli(["up", "--scenario", str(scenario), "--name", name, "--json"])
        cp = storadvise("scan", "--site", name, "--json", "--no-history")
        assert cp.returncode in (0, 2), cp.stderr[-2000:]
        scan_file = tmp_path / "scan.json"
        scan_file.write_text(cp.stdout)
        scan = json.loads(cp.stdout)
        failed = [f for f in scan["findings"] if f["rule_id"] == "STRIPEFS-STRIPE"]
        assert [(f["status"], f["observed_value"], sorted(f["hosts"])) for f in failed] == [
            ("fail", 256, ["st01", "st02"])], failed
        # storage_systems: [stripefs] gates the probes: the plug-in's ran, no other storage system's did
        ran = {h["name"]: set(h["facts"]) for h in scan["hosts"]}
        assert all("stripefs.tunables" in r and not any(p.split(".")[0] in ("gpfs", "lustre", "hdfs") for p in r)
                   for r in ran.values()), ran
        # the evidence is the plug-in probe's fact, read on each host
        assert failed[0]["evidence"] == ["st01: settings.stripe_kb = 256", "st02: settings.stripe_kb = 256"], failed

        plan = tmp_path / "plan"
        cp = storadvise("plan", "--site", name, "--scan", str(scan_file), "--out", str(plan), "--json")
        assert cp.returncode == 0, cp.stderr[-2000:]
        for host in ("st01", "st02"):
            assert plan_vars(plan, host)["stripefs_settings"] == {"stripe_kb": "1024"}
        assert (plan / "roles" / "stripefs_tuning" / "tasks" / "main.yml").is_file()
        plays = yaml.safe_load((plan / "apply-tuning.yml").read_text())
        # the plug-in's play runs before the summary play, which is handed its role with the shipped ones
        assert [p.get("hosts") for p in plays].index("storadvise_stripefs_tuning") == len(plays) - 2
        assert "stripefs_tuning" in plays[-1]["roles"][0]["vars"]["apply_summary_roles"]

        # st02's stripefs.conf is gone by the time the plan is applied (its mount went away): its role fails there
        gone = lab_registry / name / "hosts" / "st02" / "emu" / "stripefs" / "stripefs.conf"
        old = gone.read_text()
        gone.unlink()
        ap = subprocess.run([shutil.which("ansible-playbook", path=str(BIN)) or "ansible-playbook", "apply-tuning.yml"],
                            cwd=plan, capture_output=True, text=True, timeout=300)
        assert ap.returncode != 0, ap.stdout[-3000:]
        assert "Set stripefs tunables in stripefs.conf" in ap.stdout
        conf = lab_registry / name / "hosts" / "st01" / "emu" / "stripefs" / "stripefs.conf"
        assert conf.read_text() == "stripe_kb=1024\nqueue=8\n"
        summary = json.loads((plan / "apply-summary.json").read_text())
        assert summary["failed_hosts"] == ["st02"], summary
        assert [(u["setting"], u["role"]) for u in summary["hosts"]["st02"]["unfinished"]] == [
            ("stripe_kb", "stripefs_tuning")], summary

        # st02's file is back (unchanged): verify says st01 is fixed and st02 still fails
        gone.write_text(old)
        cp = storadvise("verify", "--site", name, "--before", str(scan_file), "--json", "--no-history")
        result = json.loads(cp.stdout)
        outcomes = sorted((f["host"], f["outcome"]) for f in result["findings"] if f["rule_id"] == "STRIPEFS-STRIPE")
        assert outcomes == [("st01", "fixed"), ("st02", "still_failing")], result["findings"]
    finally:
        lab_cli(["down", "--name", name], check=False)
        assert no_traces(lab_traces(name))
    # the whole storage system lived in tmp_path: no tracked file of the repository changed
    assert tracked_state() == before
