"""gpfs_tuning and san_cache against the lab's GPFS and SMcli emulators (advisor/lab/emulators: the
real output formats, per-host state, an invocation log), run by real Ansible over a real sshd in a
namespace of this test's own. The emulators live in the test's temp dir (bin_dir / SMcli path are
role variables); the lab itself mounts them at /usr/lpp/mmfs/bin and /opt/SMgr/client.
A full scan -> plan -> apply on `storadvise lab up --scenario ifca` is the lab integration test
(test_lab_loop.py, enabled with STORADVISE_LAB_TESTS=1)."""

from __future__ import annotations

import pytest

from tests.support.ansible import ANSIBLE_PLAYBOOK, play_recap
from tests.support.ns_host import requirements_missing

pytestmark = [
    pytest.mark.skipif(requirements_missing() is not None, reason=str(requirements_missing())),
    pytest.mark.usefixtures("ansible_playbook"),
]

emulators = pytest.importorskip("advisor.lab.emulators.gpfs")

PLAYS = """---
- name: GPFS
  hosts: storadvise_gpfs_tuning
  gather_facts: false
  environment: {STORADVISE_LAB_HOST: st01}
  roles:
    - role: gpfs_tuning
      vars: {gpfs_tuning_state: "{{ state | default('present') }}"}
- name: SAN
  hosts: storadvise_san_cache
  gather_facts: false
  roles:
    - role: san_cache
      vars: {san_cache_state: "{{ state | default('present') }}"}
- name: Summary
  hosts: localhost
  gather_facts: false
  roles:
    - role: apply_summary
      vars: {apply_summary_roles: [gpfs_tuning, san_cache]}
"""


@pytest.fixture(scope="module")
def world(ns_hosts):
    from advisor.apply.planner import Plan
    from advisor.apply.project import write_project
    from advisor.lab.emulators import gpfs, san
    from advisor.lab.emulators.gpfs_lab import EMULATION as GPFS_LAB
    from advisor.lab.emulators.san_lab import EMULATION as SAN_LAB
    from advisor.site.file import load_site

    host, cleanup = ns_hosts("st01", {})
    try:
        state = host.dir / "emu-state"
        gpfs.setup_state(state, gpfs.initial_cluster("gpfs.test.lab", "1", ["st01", "st02"], {},
                                                     {"pagepool": "512M", "maxblocksize": "1M"}, [], ["/dev/fs1"]))
        settings = {"read_cache": True, "prefetch": False, "write_cache": True, "write_cache_mirroring": True,
                    "write_cache_without_batteries": False, "flush_after": 10.0, "modification_priority": "high",
                    "raid_level": 5, "capacity": "2,000.000 GB", "status": "Optimal"}
        san.setup_state(state, "DS4700", ["ctl-a", "ctl-b"], ["data01", "data02"], settings)
        dirs = {"gpfs": GPFS_LAB.install(host.dir / "emuhost", state)["/usr/lpp/mmfs/bin"],
                "smcli": SAN_LAB.install(host.dir / "emuhost", state)["/opt/SMgr/client"]}
        site = load_site(str(host.site_file(host.dir / "site.yml", ["storage", "san-controller"])))
        plan = Plan(site="applytest", scan_started_at="-")
        plan.host_vars["st01"] = {
            # no gpfs_tuning_node_name: the plan writes it only where the GPFS node name is not the
            # inventory name, and the role names the member by its inventory name (-N st01 below)
            "gpfs_tuning": {"gpfs_config": {"pagepool": "1G", "maxblocksize": "4M"},
                            "gpfs_tuning_runner": "st01", "gpfs_tuning_group": ["st01"],
                            "gpfs_tuning_bin_dir": str(dirs["gpfs"])},
            "san_cache": {"san_logical_drives": {d: {"cacheReadPrefetch": "TRUE", "modificationPriority": "low",
                                                     "writeCacheEnabled": "FALSE"} for d in ("data01", "data02")},
                          "san_controllers": ["ctl-a", "ctl-b"], "san_cache_smcli": str(dirs["smcli"] / "SMcli")},
        }
        out = host.dir / "plan"
        write_project(plan, site, out)
        (out / "storage.yml").write_text(PLAYS)
        yield {"host": host, "plan": out, "state": state, "gpfs": dirs["gpfs"], "smcli": dirs["smcli"] / "SMcli"}
    finally:
        cleanup()


def playbook(world, *args):
    return world["host"].controller([ANSIBLE_PLAYBOOK, "storage.yml", *args], cwd=world["plan"])


def calls(world, tool):
    from advisor.lab.emulators.common import read_invocations

    return [" ".join(r["argv"]) for r in read_invocations(world["state"]) if r["tool"] == tool]


def mmlsconfig(world, attr):
    return world["host"].on_host(f"STORADVISE_LAB_HOST=st01 {world['gpfs']}/mmlsconfig {attr}").stdout


def drives(world):
    return world["host"].on_host(f"{world['smcli']} ctl-a ctl-b -c 'show allLogicalDrives;'").stdout


def test_check_mode_sends_no_change(world):
    cp = playbook(world, "--check", "--diff")
    assert play_recap(cp.stdout)["st01"]["changed"] == 2
    assert calls(world, "mmchconfig") == [] and not any(c.startswith("SMcli ctl-a ctl-b -c set") for c in calls(world, "SMcli"))


def test_apply_sends_the_expected_commands(world):
    cp = playbook(world)
    assert play_recap(cp.stdout)["st01"]["changed"] == 2
    assert calls(world, "mmchconfig") == ["mmchconfig pagepool=1G -i -N st01", "mmchconfig maxblocksize=4M -N st01"]
    assert "restart_required on st01: maxblocksize" in cp.stdout
    assert "pagepool 1G [st01]" in mmlsconfig(world, "pagepool") and "pagepool 512M" in mmlsconfig(world, "pagepool")
    # the active value changed now (-i) on st01 only
    active = world["host"].on_host(f"STORADVISE_LAB_HOST=st01 {world['gpfs']}/mmdiag --config -Y").stdout
    assert ":pagepool:1073741824:" in active
    sets = [c for c in calls(world, "SMcli") if " set " in c]
    # one script per logical drive (a drive the array refuses does not hold back the others)
    assert sets == ['SMcli ctl-a ctl-b -c set logicalDrive ["data01"] cacheReadPrefetch=TRUE modificationPriority=low '
                    'writeCacheEnabled=FALSE;', 'SMcli ctl-a ctl-b -c set logicalDrive ["data02"] cacheReadPrefetch=TRUE '
                    'modificationPriority=low writeCacheEnabled=FALSE;']
    text = drives(world)
    assert text.count("Dynamic cache read prefetch: Enabled") == 2 and text.count("Modification priority: Low") == 2


def test_second_run_changes_nothing(world):
    n = len(calls(world, "mmchconfig"))
    cp = playbook(world)
    assert play_recap(cp.stdout)["st01"]["changed"] == 0
    assert len(calls(world, "mmchconfig")) == n


def test_rollback_restores_the_old_values(world):
    cp = playbook(world, "-e", "state=rollback")
    assert play_recap(cp.stdout)["st01"]["failed"] == 0
    pp = mmlsconfig(world, "pagepool")
    assert "pagepool 512M [st01]" in pp or "[st01]" not in pp
    assert "maxblocksize 1M [st01]" in mmlsconfig(world, "maxblocksize")
    text = drives(world)
    assert text.count("Dynamic cache read prefetch: Disabled") == 2 and text.count("Modification priority: High") == 2
    assert text.count("Write cache: Enabled") == 2
    cp = playbook(world, "-e", "state=rollback")
    assert play_recap(cp.stdout)["st01"]["changed"] == 0 and "nothing to roll back" in cp.stdout


def test_smuggled_syntax_is_refused_per_setting_and_the_rest_applied(world):
    """Issue 13 item 4: an attribute, value or drive name carrying mmchconfig/SMcli syntax is refused for that
    setting only; the good settings of the same run are applied; the summary names the refusals; exit non-zero."""
    import json

    before = {t: len(calls(world, t)) for t in ("mmchconfig", "SMcli")}
    extra = {
        "gpfs_config": {"pagepool": "2G", "maxMBpS": "4000,pagepool=64M", "prefetchThreads;id": "100",
                        "worker1Threads": "'48'", "nsdBufSpace": "30\n"},
        "san_logical_drives": {"data01": {"writeCacheEnabled": "FALSE"},
                               'data02"] writeCacheEnabled=FALSE; set logicalDrive ["data01': {"readCacheEnabled": "TRUE"},
                               "data02": {"modificationPriority": "low;show allLogicalDrives", "cacheReadPrefetch": "TRUE"}},
    }
    cp = world["host"].controller([ANSIBLE_PLAYBOOK, "storage.yml", "-e", json.dumps(extra)], cwd=world["plan"], check=False)
    assert cp.returncode == 2, cp.stdout[-3000:]
    new_mm = calls(world, "mmchconfig")[before["mmchconfig"]:]
    assert new_mm == ["mmchconfig pagepool=2G -i -N st01"], new_mm
    new_sm = [c for c in calls(world, "SMcli")[before["SMcli"]:] if " set " in c]
    assert new_sm == ['SMcli ctl-a ctl-b -c set logicalDrive ["data01"] writeCacheEnabled=FALSE;',
                      'SMcli ctl-a ctl-b -c set logicalDrive ["data02"] cacheReadPrefetch=TRUE;'], new_sm
    assert "pagepool 2G [st01]" in mmlsconfig(world, "pagepool")
    assert "64M" not in mmlsconfig(world, "pagepool")
    summary = json.loads((world["plan"] / "apply-summary.json").read_text())
    failed = {f["setting"]: f["why"] for f in summary["hosts"]["st01"]["failed"]}
    assert "maxMBpS=4000,pagepool=64M" in failed and "prefetchThreads;id=100" in failed
    assert "worker1Threads='48'" in failed and any(s.startswith("nsdBufSpace=") for s in failed)
    assert any(s.startswith('data02"] writeCacheEnabled') for s in failed)
    assert "data02 modificationPriority=low;show allLogicalDrives" in failed
    changed = {c["setting"] for c in summary["hosts"]["st01"]["changed"]}
    assert changed == {"pagepool on st01", "data01 writeCacheEnabled", "data02 cacheReadPrefetch"}, changed
    assert "FAILED gpfs_tuning maxMBpS=4000,pagepool=64M" in cp.stdout
