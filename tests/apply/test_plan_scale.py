"""The plan at fleet scale (issue 23, "the plan scales too"): identical changes across hosts fold
into one PLAN.md row with host ranges, identical change sets are written once as group_vars of a
generated inventory group, and Ansible (ansible-inventory, real) resolves the same variables on
every host as when each host had its own host_vars file."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.util.ansible_data import load_data
from advisor.apply.changesets import split_vars
from advisor.apply.plan_input import load_plan_scan
from advisor.apply.plan_markdown import change_table, group_changes, plan_markdown
from advisor.apply.plan_model import Plan, PlannedChange
from advisor.apply.planner import build_plan
from advisor.util.errors import StoradviseError
from advisor.model.facts import FactSet
from advisor.model.findings import Change, ChangeScope
from advisor.report.model import build_report, load_report
from advisor.rules.engine import evaluate
from advisor.site.model import Site
from tests.support.planner_facts import TODAY, healthy, host, sysctl

ANSIBLE_INVENTORY = shutil.which("ansible-inventory", path=str(Path(sys.executable).parent))



def unescaped(md: str) -> str:
    """PLAN.md with the Markdown escapes of host ranges' brackets taken off (PLAN.md escapes every
    host-supplied cell: advisor/report/safe_text.py), for comparing rows as text."""
    return md.replace("\\[", "[").replace("\\]", "]")

def _change(h: str, setting: str, key: str | None = None, role: str = "san_cache", runtime="TRUE", target="FALSE",
            rules=("SAN-WRITE-CACHE",)) -> PlannedChange:
    return PlannedChange(change=Change(host=h, adapter=role, key=key or setting, runtime=runtime, persisted=runtime,
                                       target=target, scope=ChangeScope.both),
                         role=role, setting=setting, rule_ids=list(rules))


def test_identical_changes_fold_into_one_row_with_host_ranges():
    plan = Plan(site="t", scan_started_at="-", role_order=["network_tuning", "san_cache"])
    for i in range(1, 5):
        plan.changes.append(_change(f"wn{i:02d}", "net.ipv4.tcp_wmem", role="network_tuning",
                                    runtime="4096 16384 4194304", target="4096 16384 33554432",
                                    rules=("NET-TCP-BUFFER-MAX",)))
    plan.changes.append(_change("wn06", "net.ipv4.tcp_wmem", role="network_tuning", runtime="4096 16384 4194304",
                                target="4096 16384 33554432", rules=("NET-TCP-BUFFER-MAX",)))
    # one worker is different: another current value, its own row
    plan.changes.append(_change("wn05", "net.ipv4.tcp_wmem", role="network_tuning", runtime="4096 16384 8388608",
                                target="4096 16384 33554432", rules=("NET-TCP-BUFFER-MAX",)))
    for lun in range(1, 5):  # one attribute on four LUNs of one host: one row, the LUNs as a range
        plan.changes.append(_change("gpfs01", f"SAN gpfs_data{lun:02d} writeCacheEnabled"))
    plan.changes.append(_change("gpfs01", "SAN gpfs_data01 cacheReadPrefetch", runtime="FALSE", target="TRUE",
                                rules=("SAN-READ-PREFETCH",)))
    plan.host_vars = {h: {"network_tuning": {}} for h in {c.change.host for c in plan.changes}}
    groups = group_changes(plan)
    assert [(g.hosts, g.settings, g.runtime) for g in groups] == [
        (["wn01", "wn02", "wn03", "wn04", "wn06"], ["net.ipv4.tcp_wmem"], "4096 16384 4194304"),
        (["wn05"], ["net.ipv4.tcp_wmem"], "4096 16384 8388608"),
        (["gpfs01"], ["SAN gpfs_data01 cacheReadPrefetch"], "FALSE"),
        (["gpfs01"], ["SAN gpfs_data[01-04] writeCacheEnabled"], "TRUE"),
    ]
    assert sum(len(g.changes) for g in groups) == len(plan.changes)
    md = unescaped(plan_markdown(plan, "/x"))
    assert "| wn[01-04,06] | network_tuning | net.ipv4.tcp_wmem | 4096 16384 4194304 | 4096 16384 4194304 | " \
           "4096 16384 33554432 | runtime and persisted | NET-TCP-BUFFER-MAX |" in md
    assert "| gpfs01 | san_cache | SAN gpfs_data[01-04] writeCacheEnabled | TRUE | TRUE | FALSE |" in md
    assert md.count("writeCacheEnabled") == 1
    # the table renders the groups in the order it is given (e.g. by cause, worst first)
    reordered = unescaped(plan_markdown(plan, "/x", groups=list(reversed(groups))))
    rows = [ln for ln in reordered.splitlines() if ln.startswith("| ") and "---" not in ln][1:]
    assert rows == [unescaped(r) for r in change_table(list(reversed(groups)))[2:]]
    assert rows[0].startswith("| gpfs01 | san_cache | SAN gpfs_data[01-04] writeCacheEnabled")


def test_cannot_apply_notices_manual_and_left_out_fold_by_hosts():
    plan = Plan(site="t", scan_started_at="-")
    names = [f"wn{i:03d}" for i in range(1, 301)]
    for h in names:
        plan.cannot_apply.append({"host": h, "adapter": "sysctl", "key": "net.core.wmem_max",
                                  "setting": "net.core.wmem_max", "target": "67108864", "runtime": "212992",
                                  "persisted": None, "rules": ["NET-CORE-BUFFER-MAX"],
                                  "reason": "read-only /proc/sys entry (mode 444)"})
        plan.notices.append(f"{h}: takes effect at the next mount")
        plan.manual.append({"rule": "DISK-FAILING", "hosts": [h], "severity": "high", "subject": None,
                            "text": "replace the disk"})
        plan.below_min_severity.append({"rule": "NET-NO-METRICS-SAVE", "hosts": [h], "severity": "info",
                                        "subject": None})
        plan.refused.append({"host": h, "reason": "unreachable at scan time (no connection); fix it"})
    md = unescaped(plan_markdown(plan, "/x"))
    assert "| wn[001-300] | net.core.wmem_max | 67108864 | read-only /proc/sys entry (mode 444) | " \
           "NET-CORE-BUFFER-MAX |" in md
    assert "- wn[001-300]: takes effect at the next mount" in md
    assert "- DISK-FAILING on wn[001-300]: replace the disk" in md
    assert "- NET-NO-METRICS-SAVE (info) on wn[001-300]" in md
    assert "- wn[001-300]: unreachable at scan time (no connection); fix it" in md
    assert len(md.splitlines()) < 40


def test_split_vars_shares_identical_values_and_keeps_what_differs():
    plan_vars = {f"wn{i}": {"network_tuning_sysctls": {"net.ipv4.tcp_wmem": "4096 16384 33554432"},
                            "gpfs_config": {"pagepool": "1G"}, "gpfs_tuning_runner": "wn1"} for i in range(1, 6)}
    plan_vars["wn1"]["gpfs_tuning_group"] = [f"wn{i}" for i in range(1, 6)]
    plan_vars["st1"] = {"network_tuning_sysctls": {"net.ipv4.tcp_sack": "1"}}
    layout = split_vars(plan_vars)
    [cs] = layout.changesets
    assert cs.name == "storadvise_changeset_1" and cs.hosts == ["wn1", "wn2", "wn3", "wn4", "wn5"]
    assert cs.vars == {"network_tuning_sysctls": {"net.ipv4.tcp_wmem": "4096 16384 33554432"},
                       "gpfs_config": {"pagepool": "1G"}, "gpfs_tuning_runner": "wn1"}
    assert layout.host_vars == {"wn1": {"gpfs_tuning_group": ["wn1", "wn2", "wn3", "wn4", "wn5"]},
                                "st1": {"network_tuning_sysctls": {"net.ipv4.tcp_sack": "1"}}}
    # a plan variable the host's inventory entry also sets is written to its host_vars as well
    # (inventory host variables take precedence over group_vars, host_vars over both)
    with_inventory = split_vars(plan_vars, {"wn5": {"gpfs_tuning_runner", "ansible_host"}})
    assert with_inventory.changesets == layout.changesets
    assert with_inventory.host_vars == {**layout.host_vars, "wn5": {"gpfs_tuning_runner": "wn1"}}
    # every host still resolves to exactly its own variables
    for h, v in plan_vars.items():
        shared = next((c.vars for c in layout.changesets if h in c.hosts), {})
        assert {**shared, **layout.host_vars.get(h, {})} == v


def _unsafe_as_text(v):
    """ansible-inventory --list writes an !unsafe string as {"__ansible_unsafe": text}."""
    if isinstance(v, dict):
        return v["__ansible_unsafe"] if set(v) == {"__ansible_unsafe"} else {k: _unsafe_as_text(x) for k, x in v.items()}
    return v


def _fleet(n_workers: int) -> tuple[Site, object]:
    """A site of two storage servers (SACK off, one of them also a small send buffer) and N identical
    workers with an undersized TCP send buffer, through the real rule packs and engine."""
    width = len(str(n_workers))
    workers = [f"wn{i:0{width}d}" for i in range(1, n_workers + 1)]
    the_site = Site.model_validate({"name": "fleet", "hosts": [
        {"name": "st01", "roles": ["storage"], "link_rate": "1gbit"},
        {"name": "st02", "roles": ["storage"], "link_rate": "1gbit"},
        *({"name": w, "roles": ["worker"], "link_rate": "1gbit", "address": "192.0.2.1"} for w in workers)]})
    small = healthy()
    small["net.ipv4.tcp_wmem"] = sysctl("4096 16384 4194304", "4096 16384 4194304")
    storage = healthy()
    storage["net.ipv4.tcp_sack"] = sysctl("0", "0")
    hosts = {"st01": host("st01", storage), "st02": host("st02", {**storage, "net.ipv4.tcp_wmem": small["net.ipv4.tcp_wmem"]})}
    hosts.update({w: host(w, small, roles=("worker",)) for w in workers})
    fs = FactSet(site="fleet", hosts=hosts)
    ev = evaluate(fs, the_site, profiles=["generic"], today=TODAY)
    return the_site, build_report(fs, ev.findings, profiles=["generic"], started_at="-", finished_at="-",
                                  duration_s=0, site_file=None)


def _site_file(the_site: Site, path: Path) -> Path:
    import yaml

    path.write_text(yaml.safe_dump({"name": the_site.name, "hosts": [
        {"name": h.name, "roles": [str(getattr(r, "value", r)) for r in h.roles], "link_rate": "1gbit",
         "address": "192.0.2.1"} for h in the_site.hosts]}))
    return path


def test_the_plan_reads_the_same_from_the_typed_decoder(tmp_path):
    the_site, report = _fleet(3)
    (tmp_path / "s.json").write_text(report.model_dump_json(indent=2))
    typed = build_plan(load_plan_scan(tmp_path / "s.json"), the_site, today=TODAY).as_dict()
    full = build_plan(load_report(tmp_path / "s.json"), the_site, today=TODAY).as_dict()
    assert typed == full and typed["changes"]
    for text, said in (("{", "not JSON"), ('{"a": 1}', "no schema_version"), ('[1]', "not a storadvise scan report"),
                       (json.dumps({**json.loads(report.model_dump_json()), "schema_version": "9.0"}),
                        "schema 9.0 is not supported"),
                       (json.dumps({**json.loads(report.model_dump_json()), "findings": [{"rule_id": 3}]}),
                        "invalid scan report")):
        (tmp_path / "bad.json").write_text(text)
        with pytest.raises(StoradviseError, match=said) as err:
            load_plan_scan(tmp_path / "bad.json")
        assert "\n" not in str(err.value)


def test_a_saved_change_s_boot_value_is_read_as_the_model_types_it(tmp_path):
    """The decoder's change is the model's, field by field (tests/apply/test_change_parity.py): a boot
    value of a saved scan that is not a BootValue is one line naming where, when the scan is read."""
    the_site, report = _fleet(1)
    data = json.loads(report.model_dump_json())
    change = next(c for f in data["findings"] if f["status"] == "fail" for c in f["changes"])
    change["boot"] = {"value": "1", "source": "bogus"}
    (tmp_path / "bad.json").write_text(json.dumps(data))
    where = r"findings\[\d+\]\.changes\[0\]\.boot\.source"
    with pytest.raises(StoradviseError, match="invalid scan report: .*" + where) as err:
        build_plan(load_plan_scan(tmp_path / "bad.json"), the_site, today=TODAY)
    assert "\n" not in str(err.value)


@pytest.mark.skipif(ANSIBLE_INVENTORY is None, reason="ansible-core is a dependency; its ansible-inventory is missing")
def test_a_fleet_of_identical_workers_is_one_group_vars_file_and_a_short_plan(tmp_path):
    """The benchmark (bench/bench_plan.py) scaled down to 500 workers: through the CLI, as a site
    runs it, then what Ansible itself resolves for a worker from the written inventory."""
    the_site, report = _fleet(500)
    (tmp_path / "scan.json").write_text(report.model_dump_json())
    site_file = _site_file(the_site, tmp_path / "fleet.yml")
    out = tmp_path / "plan"
    cp = subprocess.run([sys.executable, "-m", "advisor.cli.root", "plan", "--site", str(site_file), "--scan",
                         str(tmp_path / "scan.json"), "--out", str(out), "--json"], capture_output=True, text=True,
                        timeout=600)
    assert cp.returncode == 0, cp.stderr[-2000:]
    summary = json.loads(cp.stdout)
    assert len(summary["changes"]) == 500 + 3
    md = unescaped((out / "PLAN.md").read_text())
    assert len(md.splitlines()) <= 200
    assert "| st02, wn[001-500] | network_tuning | net.ipv4.tcp_wmem |" in md
    assert "| st[01-02] | network_tuning | net.ipv4.tcp_sack | 0 | 0 | 1 |" in md
    group_files = sorted(p.name for p in (out / "group_vars").iterdir())
    host_files = sorted(p.name for p in (out / "host_vars").iterdir())
    [workers] = [c for c in summary["changesets"] if "wn001" in c["hosts"]]
    assert len(workers["hosts"]) == 500
    assert f"{workers['group']}.yml" in group_files and len(group_files) == 1
    assert not [f for f in host_files if f.startswith("wn")]
    assert host_files == ["st01.yml", "st02.yml"]  # each has a change set of its own
    inv = load_data((out / "inventory.yml").read_text())
    assert "wn250" in inv["all"]["children"][workers["group"]]["hosts"]
    assert "wn250" in inv["all"]["children"]["storadvise_network_tuning"]["hosts"]
    # Ansible itself: the worker gets the planned variables, the storage host its own
    cp = subprocess.run([ANSIBLE_INVENTORY, "-i", "inventory.yml", "--list"], capture_output=True, text=True,
                        cwd=out, timeout=300)
    assert cp.returncode == 0, cp.stderr[-2000:]
    resolved = json.loads(cp.stdout)["_meta"]["hostvars"]
    for h, want in (("wn250", {"net.ipv4.tcp_wmem": "4096 16384 33554432"}),
                    ("st01", {"net.ipv4.tcp_sack": "1"}),
                    ("st02", {"net.ipv4.tcp_sack": "1", "net.ipv4.tcp_wmem": "4096 16384 33554432"})):
        got = _unsafe_as_text(resolved[h])
        # (a target the rule pack writes as a number stays one)
        assert {k: str(v) for k, v in got["network_tuning_sysctls"].items()} == want, (h, got)
        assert got["ansible_host"] == "192.0.2.1"
    # the plan as plan.json and the console see every host as before
    assert set(summary["hosts"]) == {h.name for h in the_site.hosts}
    assert summary["hosts"]["wn250"]["vars"] == {"network_tuning_sysctls": {"net.ipv4.tcp_wmem": "4096 16384 33554432"}}
