"""A plan is derived from the rules, never copied from a saved scan (docs/security.md, "Who is trusted").

``plan --scan`` took a report's changes as they were: a finding NET-TCP-SACK whose changes said
``kernel.core_pattern = |/bin/sh -c ...`` reached host_vars, and the sysctl module's key check
admitted ``kernel.*`` (applying the plan as root installs a crash-time pipe command); keys like
``../../../etc/passwd`` passed the planner. Now each change must be one its rule declares (its
target derived where the rule fixes one), its key must be one the adapter can have, and the
sysctl and block modules admit only what their rules can ask for. The modules run for real
(``ansible`` in check mode: nothing is written)."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hardening.sysctl_capture import REPO, cli, saved_scan

ANSIBLE = Path(sys.executable).parent / "ansible"
PIPE = "|/bin/sh -c 'touch /tmp/storadvise-core-pattern-marker'"


def run(*args, cwd: Path) -> subprocess.CompletedProcess:
    return cli(*args, cwd=cwd)


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> dict:
    """A real scan (tcp_sack=0 at runtime on gpfs01) and its site file (gpfs01, gpfs02)."""
    s = saved_scan(tmp_path_factory.mktemp("saved"))
    return dict(s, report=json.loads(s["text"]))


def finding(report: dict, rule_id: str) -> dict:
    return next(f for f in report["findings"] if f["rule_id"] == rule_id and f["status"] == "fail")


def plan(saved: dict, name: str, edit) -> tuple[subprocess.CompletedProcess, dict, str]:
    report = copy.deepcopy(saved["report"])
    edit(report)
    path = saved["dir"] / f"{name}.json"
    path.write_text(json.dumps(report))
    out = saved["dir"] / f"plan-{name}"
    cp = run("plan", "--site", saved["site"], "--scan", path, "--out-dir", out, "--json", cwd=saved["dir"])
    assert cp.returncode in (0, 3), cp.stderr[-2000:]
    project = "\n".join(p.read_text() for p in sorted(out.rglob("*")) if p.is_file() and p.suffix in (".yml", ".json", ".md")
                        and p.name != "scan-before.json")
    return cp, json.loads((out / "plan.json").read_text()), project


def cannot(plan_doc: dict, key: str) -> str:
    reasons = [c["reason"] for c in plan_doc["cannot_apply"] if c["key"] == key]
    assert reasons, plan_doc["cannot_apply"]
    return reasons[0]


def test_a_change_the_rule_does_not_declare_never_reaches_the_project(saved):
    def edit(r):
        f = finding(r, "NET-TCP-SACK")
        f["changes"].append(dict(f["changes"][0], key="kernel.core_pattern", target=PIPE))
    _cp, doc, project = plan(saved, "core-pattern", edit)
    why = cannot(doc, "kernel.core_pattern")
    assert "NET-TCP-SACK does not declare sysctl 'kernel.core_pattern'" in why and "net.ipv4.tcp_sack" in why, why
    ansible_files = [p for p in (saved["dir"] / "plan-core-pattern").rglob("*.yml")]  # what Ansible reads
    assert ansible_files and not [p for p in ansible_files if "core_pattern" in p.read_text()]
    assert "net.ipv4.tcp_sack" in "".join(p.read_text() for p in ansible_files)  # the declared change is still planned


def test_a_key_from_a_hostile_subject_is_refused_by_the_adapter(saved):
    """NET-SYSCTL-NOT-PERSISTED declares '{subject}': a subject the report names is still no key the sysctl role takes."""
    def edit(r):
        f = finding(r, "NET-SYSCTL-NOT-PERSISTED")
        f["subject"] = "kernel.core_pattern"
        f["changes"] = [dict(f["changes"][0], key="kernel.core_pattern", target=PIPE)]
    _cp, doc, _project = plan(saved, "subject", edit)
    assert "not a parameter storadvise tunes" in cannot(doc, "kernel.core_pattern")
    assert not [c for c in doc["changes"] if c["key"] == "kernel.core_pattern"]


@pytest.mark.parametrize("adapter, key", [("sysctl", "../../../etc/passwd"), ("block", "../../../etc/read_ahead_kb"),
                                          ("gpfs", "../../../etc/passwd")])
def test_a_path_like_key_is_refused_by_the_planner(saved, adapter, key):
    def edit(r):
        f = finding(r, "NET-SYSCTL-NOT-PERSISTED")
        f["subject"] = key
        f["changes"] = [dict(f["changes"][0], adapter=adapter, key=key)]
    _cp, doc, _project = plan(saved, f"path-{adapter}", edit)
    cannot(doc, key)
    assert not [c for c in doc["changes"] if c["key"] == key]


def test_a_rule_the_site_does_not_have_plans_nothing(saved):
    def edit(r):
        f = copy.deepcopy(finding(r, "NET-TCP-SACK"))
        f["rule_id"] = "EVIL-RULE"
        f["changes"][0]["key"] = "net.ipv4.ip_forward"
        r["findings"].append(f)
    _cp, doc, _project = plan(saved, "unknown-rule", edit)
    assert "EVIL-RULE is not a rule of this site's rule packs" in cannot(doc, "net.ipv4.ip_forward")


def test_a_change_for_a_host_the_finding_does_not_name_is_refused(saved):
    def edit(r):
        f = finding(r, "NET-TCP-SACK")
        f["changes"].append(dict(f["changes"][0], host="gpfs02"))
    _cp, doc, _project = plan(saved, "other-host", edit)
    assert [c["host"] for c in doc["cannot_apply"] if c["key"] == "net.ipv4.tcp_sack"] == ["gpfs02"], doc["cannot_apply"]
    assert [c["host"] for c in doc["changes"] if c["key"] == "net.ipv4.tcp_sack"] == ["gpfs01"]


def test_a_target_the_rule_fixes_is_derived_not_read(saved):
    def edit(r):
        finding(r, "NET-TCP-SACK")["changes"][0]["target"] = "0"
    _cp, doc, _project = plan(saved, "target", edit)
    (sack,) = [c for c in doc["changes"] if c["key"] == "net.ipv4.tcp_sack"]
    assert sack["target"] == "1", sack
    assert any("NET-TCP-SACK declares 1" in n for n in doc["notices"]), doc["notices"]


def test_the_untouched_scan_plans_as_before(saved):
    _cp, doc, _project = plan(saved, "clean", lambda r: None)
    assert not doc["cannot_apply"], doc["cannot_apply"]
    keys = {c["key"] for c in doc["changes"]}
    assert "net.ipv4.tcp_sack" in keys and "net.core.rmem_max" in keys, keys


# --------------------------------------------------------------------------- the modules themselves


def _module(name: str, args: dict, tmp_path: Path) -> dict:
    env = {"PATH": f"{ANSIBLE.parent}:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": str(tmp_path),
           "ANSIBLE_HOME": str(tmp_path / "ansible-home"), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_LIBRARY": str(REPO / "playbooks" / "plugins" / "modules"),
           "ANSIBLE_MODULE_UTILS": str(REPO / "playbooks" / "module_utils")}
    cp = subprocess.run([str(ANSIBLE), "localhost", "-o", "-c", "local", "--check", "-e",
                         f"ansible_python_interpreter={sys.executable}", "-m", name, "-a", json.dumps(args)],
                        capture_output=True, text=True, env=env, timeout=180)
    line = next((ln for ln in cp.stdout.splitlines() if ln.startswith("localhost | ")), None)
    assert line is not None and " => " in line, cp.stdout[-2000:] + cp.stderr[-2000:]
    return json.loads(line.split(" => ", 1)[1])  # -o: one line, "localhost | STATUS => {result}"


@pytest.mark.skipif(not ANSIBLE.exists(), reason="ansible-core not installed")
def test_the_sysctl_module_refuses_kernel_core_pattern(tmp_path):
    """Check mode: the module reads /proc/sys and writes nothing, whatever it decides."""
    conf = tmp_path / "sysctl.d"
    conf.mkdir()
    res = _module("storadvise_sysctl", {
        "sysctls": {"kernel.core_pattern": PIPE, "kernel.modprobe": "/tmp/x", "fs.suid_dumpable": "2",
                    "vm.mmap_min_addr": "0", "../../../etc/passwd": "x", "net.ipv4.tcp_sack": "1"},
        "sysctl_file": str(conf / "90-storadvise.conf"), "conf_paths": [str(conf)], "editable_prefixes": [str(tmp_path)],
        "backup_file": str(tmp_path / "backup.json"), "state": "present"}, tmp_path)
    failed = {f["setting"]: f["why"] for f in res.get("failed_settings", [])}
    for key in ("kernel.core_pattern", "kernel.modprobe", "fs.suid_dumpable", "vm.mmap_min_addr"):
        assert key in failed, (key, res)
    assert "not a parameter storadvise tunes" in failed["kernel.core_pattern"]
    assert "kernel.core_pattern" not in json.dumps(res.get("changed_sysctls", {}))
    assert not [f for f in failed if f.startswith("net.")], failed
    assert not (tmp_path / "backup.json").exists()


@pytest.mark.skipif(not ANSIBLE.exists(), reason="ansible-core not installed")
def test_the_block_module_refuses_an_attribute_its_rules_cannot_ask_for(tmp_path):
    sysfs = tmp_path / "sys-block"
    (sysfs / "sda" / "queue").mkdir(parents=True)
    (sysfs / "sda" / "queue" / "read_ahead_kb").write_text("128\n")
    (sysfs / "sda" / "queue" / "max_sectors_kb").write_text("1280\n")
    res = _module("storadvise_block_queue", {
        "devices": {"sda": {"read_ahead_kb": 4096, "max_sectors_kb": 1, "../../x": 1}},
        "sysfs_block": str(sysfs), "udev_rules_file": str(tmp_path / "udev" / "60-storadvise-block.rules"),
        "backup_file": str(tmp_path / "backup.json"), "state": "present"}, tmp_path)
    failed = {f["setting"]: f["why"] for f in res.get("failed_settings", [])}
    assert "not a setting block_tuning makes" in failed.get("sda max_sectors_kb", ""), res
    assert "sda read_ahead_kb" not in failed, res
    assert (sysfs / "sda" / "queue" / "max_sectors_kb").read_text() == "1280\n"
