"""plan -> ansible-playbook (network_tuning) -> second run -> --check -> rollback, over a real sshd in
a network namespace of this test's own, from a scan made by the real collector and rule engine."""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import pytest
from advisor.util.ansible_data import dump_data, load_data

from tests.support.ansible import ANSIBLE_PLAYBOOK, play_recap
from tests.support.ns_host import STORADVISE, file_digests, load_json, requirements_missing, root_sysctls

pytestmark = [
    pytest.mark.skipif(requirements_missing() is not None, reason=str(requirements_missing())),
    pytest.mark.usefixtures("ansible_playbook"),
]

OLD_GUIDE = "# old GPFS tuning guide: network settings for NSD servers\nnet.ipv4.tcp_sack = 0\n"
REAL_ETC = ["/etc/sysctl.conf", "/etc/sysctl.d"]
KEYS = ["net.ipv4.tcp_sack", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", "net.ipv4.tcp_no_metrics_save",
        "net.core.rmem_max"]
# net.core.rmem_max/wmem_max are read-only in a network namespace: waived here (a waived finding is
# never planned); test_read_only_sysctl_fails_clearly applies one on purpose.
WAIVERS = [{"rule": "NET-CORE-BUFFER-MAX", "justification": "read-only inside a network namespace"}]


@pytest.fixture(scope="module")
def world(tmp_path_factory, ns_hosts):
    host, cleanup = ns_hosts("st01", {"60-gpfs-tuning.conf": OLD_GUIDE})
    try:
        host.on_host("sysctl -q -w net.ipv4.tcp_sack=0")
        root_before = root_sysctls(KEYS)
        etc_before = file_digests(REAL_ETC)
        site = host.site_file(host.dir / "site.yml", ["storage"], extra={"waivers": WAIVERS})
        scan = host.dir / "scan.json"
        cp = host.controller([STORADVISE, "scan", "--site", str(site), "--sample-seconds", "0.2", "-o", str(scan), "--json"],
                             check=False)
        assert cp.returncode in (0, 2, 3), cp.stderr
        yield {"host": host, "site": site, "scan": scan, "plan": host.dir / "plan", "root_before": root_before,
               "etc_before": etc_before, "original_old_guide": (host.sysctl_d / "60-gpfs-tuning.conf").read_text()}
    finally:
        cleanup()


def playbook(world, book: str, *args: str, check: bool = True):
    return world["host"].controller([ANSIBLE_PLAYBOOK, book, *args], cwd=world["plan"], check=check)


def test_plan_writes_the_project(world):
    host = world["host"]
    cp = host.controller([STORADVISE, "plan", "--site", str(world["site"]), "--scan", str(world["scan"]),
                          "--out", str(world["plan"]), "--json"])
    summary = json.loads(cp.stdout)
    d = world["plan"]
    for name in ("ansible.cfg", "inventory.yml", "apply-tuning.yml", "rollback.yml", "PLAN.md", "plan.json",
                 "host_vars/st01.yml", "roles/network_tuning/tasks/main.yml", "module_utils/storadvise_state.py"):
        assert (d / name).exists(), name
    assert "host_key_checking = True" in (d / "ansible.cfg").read_text()
    inv = load_data((d / "inventory.yml").read_text())
    hv = inv["all"]["hosts"]["st01"]
    assert hv["ansible_host"] == "127.0.0.1" and hv["ansible_port"] == 22 and hv["ansible_user"] == "root"
    # quoted for Ansible's shlex split and for ssh's own split of the value (docs/security.md)
    assert f'UserKnownHostsFile="{host.known_hosts}"' in shlex.split(hv["ansible_ssh_common_args"])
    assert "StrictHostKeyChecking=yes" in hv["ansible_ssh_common_args"]
    assert "st01" in inv["all"]["children"]["storadvise_network_tuning"]["hosts"]
    vars_ = load_data((d / "host_vars" / "st01.yml").read_text())
    sysctls = vars_["network_tuning_sysctls"]
    assert sysctls["net.ipv4.tcp_sack"] == "1"
    assert "net.core.rmem_max" not in sysctls  # waived: never planned
    sack = [c for c in summary["changes"] if c["setting"] == "net.ipv4.tcp_sack"]
    assert sack == [{"host": "st01", "adapter": "sysctl", "role": "network_tuning", "key": "net.ipv4.tcp_sack",
                     "setting": "net.ipv4.tcp_sack", "runtime": "0", "persisted": "0", "target": "1", "scope": "both",
                     "old": "0", "new": "1", "rules": ["NET-TCP-SACK"],
                     "boot": {"value": "0", "source": "file", "origin": None}}]
    assert "| network_tuning | net.ipv4.tcp_sack | 0 | 0 | 1 | runtime and persisted | NET-TCP-SACK |" in (d / "PLAN.md").read_text()


def test_check_mode_changes_nothing(world):
    host = world["host"]
    cp = playbook(world, "apply-tuning.yml", "--check", "--diff")
    assert play_recap(cp.stdout)["st01"]["changed"] >= 1
    assert "+net.ipv4.tcp_sack = 1" in cp.stdout  # the diff of the persisted file
    assert host.sysctl("net.ipv4.tcp_sack") == "0"
    assert not (host.sysctl_d / "90-storadvise.conf").exists()
    assert (host.sysctl_d / "60-gpfs-tuning.conf").read_text() == world["original_old_guide"]
    assert not host.backup_dir.exists()


def test_apply_fixes_exactly_the_namespace_and_persists(world):
    host = world["host"]
    cp = playbook(world, "apply-tuning.yml")
    recap = play_recap(cp.stdout)["st01"]
    assert recap["changed"] == 1 and recap["failed"] == 0
    assert host.sysctl("net.ipv4.tcp_sack") == "1"
    planned = load_data((world["plan"] / "host_vars" / "st01.yml").read_text())["network_tuning_sysctls"]
    for k, v in planned.items():
        assert " ".join(host.sysctl(k).split()) == v
    # persisted in this host's private sysctl.d, the conflicting line commented out with the marker
    persisted = (host.sysctl_d / "90-storadvise.conf").read_text()
    assert "net.ipv4.tcp_sack = 1" in persisted
    old = (host.sysctl_d / "60-gpfs-tuning.conf").read_text()
    assert "# storadvise disabled (net.ipv4.tcp_sack = 1 is set in /etc/sysctl.d/90-storadvise.conf): net.ipv4.tcp_sack = 0" in old
    assert "\nnet.ipv4.tcp_sack = 0" not in old
    # the host sees the same through its own /etc/sysctl.d; the machine's own did not change
    assert "net.ipv4.tcp_sack = 1" in host.on_host("cat /etc/sysctl.d/90-storadvise.conf").stdout
    assert not Path("/etc/sysctl.d/90-storadvise.conf").exists()
    assert file_digests(["/etc/sysctl.conf", "/etc/sysctl.d"]) == world["etc_before"]
    assert root_sysctls(KEYS) == world["root_before"]
    backup = json.loads((host.backup_dir / "network_tuning.json").read_text())
    assert backup["runtime"]["net.ipv4.tcp_sack"] == "0"
    assert backup["files"]["/etc/sysctl.d/90-storadvise.conf"] is None


def test_second_run_changes_nothing(world):
    cp = playbook(world, "apply-tuning.yml")
    recap = play_recap(cp.stdout)["st01"]
    assert recap["changed"] == 0 and recap["failed"] == 0
    cp = playbook(world, "apply-tuning.yml", "--check", "--diff")
    assert play_recap(cp.stdout)["st01"]["changed"] == 0


def test_verify_shows_the_fix(world):
    host = world["host"]
    cp = host.controller([STORADVISE, "verify", "--site", str(world["site"]), "--before", str(world["scan"]), "--json",
                          "--no-mesh", "--fail-on", "critical"], check=False)
    assert cp.returncode == 0, cp.stderr
    result = json.loads(cp.stdout)
    assert set(result) >= {"findings", "paths", "summary"}
    sack = [f for f in result["findings"] if f["rule_id"] == "NET-TCP-SACK"]
    assert sack and sack[0]["outcome"] == "fixed" and sack[0]["host"] == "st01"
    assert sack[0]["before"]["status"] == "fail" and sack[0]["after"]["status"] == "pass"
    assert result["summary"]["fixed"] >= 1 and result["paths"] == []


def test_interrupted_run_keeps_the_original_in_the_backup(world):
    """A run that stopped after the runtime change (file not yet written) is completed by a re-run,
    and the backup still holds the value from before the first run."""
    host = world["host"]
    (host.sysctl_d / "90-storadvise.conf").unlink()
    cp = playbook(world, "apply-tuning.yml")
    assert play_recap(cp.stdout)["st01"]["changed"] == 1
    assert "net.ipv4.tcp_sack = 1" in (host.sysctl_d / "90-storadvise.conf").read_text()
    backup = json.loads((host.backup_dir / "network_tuning.json").read_text())
    assert backup["runtime"]["net.ipv4.tcp_sack"] == "0"
    assert backup["files"]["/etc/sysctl.d/90-storadvise.conf"] is None


def test_read_only_sysctl_fails_clearly(world):
    host = world["host"]
    cp = playbook(world, "apply-tuning.yml", "-e", json.dumps({"network_tuning_sysctls": {"net.core.rmem_max": "268435456"}}),
                  check=False)
    assert cp.returncode != 0
    # refused for that key (the entry is 0444 in a network namespace), named in the summary; the run fails
    assert "FAILED network_tuning net.core.rmem_max: read-only here (/proc/sys/net/core/rmem_max" in cp.stdout
    assert root_sysctls(KEYS) == world["root_before"]
    assert "net.core.rmem_max" not in (host.sysctl_d / "90-storadvise.conf").read_text()


def test_rollback_restores_exactly(world):
    host = world["host"]
    cp = playbook(world, "rollback.yml")
    assert play_recap(cp.stdout)["st01"]["failed"] == 0
    assert host.sysctl("net.ipv4.tcp_sack") == "0"
    assert (host.sysctl_d / "60-gpfs-tuning.conf").read_text() == world["original_old_guide"]
    assert not (host.sysctl_d / "90-storadvise.conf").exists()
    assert sorted(p.name for p in host.backup_dir.iterdir())[0].startswith("network_tuning.json.restored-")
    assert root_sysctls(KEYS) == world["root_before"]
    assert file_digests(["/etc/sysctl.conf", "/etc/sysctl.d"]) == world["etc_before"]


def test_rollback_without_backup_says_so_and_changes_nothing(world):
    host = world["host"]
    cp = playbook(world, "rollback.yml")
    assert play_recap(cp.stdout)["st01"]["changed"] == 0
    assert "no backup at" in cp.stdout and "nothing to roll back on this host" in cp.stdout
    assert host.sysctl("net.ipv4.tcp_sack") == "0"


def _runner_job(world, ident: str, inventory: str) -> tuple[int, dict]:
    """The apply job as AWX runs it: ansible-runner, the plan directory as the project, the site's own
    inventory (no storadvise group in it): returns the exit status and the summary it wrote."""
    private = world["host"].dir / f"runner-{ident}"
    (private / "inventory").mkdir(parents=True)
    (private / "inventory" / "hosts").write_text(inventory)
    summary = world["plan"] / "apply-summary.json"
    summary.unlink(missing_ok=True)
    cp = world["host"].controller([str(Path(ANSIBLE_PLAYBOOK).parent / "ansible-runner"), "run", str(private),
                                   "-p", "apply-tuning.yml", "--project-dir", str(world["plan"]), "--ident", ident],
                                  check=False)
    return cp.returncode, load_json(summary)


def test_the_apply_job_runs_through_ansible_runner_against_the_sites_own_inventory(world):
    """After the rollback (tcp_sack 0 again): the plan applied by ansible-runner with an inventory
    that has only the site's host and its connection (plan_groups.yml puts it into the plan's
    groups); then with an inventory that lacks the planned host: it fails and names the host."""
    host = world["host"]
    assert host.sysctl("net.ipv4.tcp_sack") == "0"
    # the site's inventory: the host with its connection and site variables (this test host's private
    # paths among them), in a group of the site's own, none of the plan's
    st01 = load_data((world["plan"] / "inventory.yml").read_text())["all"]["hosts"]["st01"]
    site_inventory = dump_data({"all": {"children": {"storage": {"hosts": {"st01": st01}}}}})
    assert "storadvise_" not in site_inventory.replace("storadvise_backup_dir", "")
    rc, summary = _runner_job(world, "101", site_inventory)
    assert rc == 0, summary
    assert host.sysctl("net.ipv4.tcp_sack") == "1"
    assert (host.backup_dir / "network_tuning.json").is_file()
    assert [c["setting"] for c in summary["hosts"]["st01"]["changed"]].count("net.ipv4.tcp_sack") == 1
    assert summary["failed_count"] == 0 and summary["unfinished_hosts"] == []
    rc, summary = _runner_job(world, "102", "[other]\nwn99 ansible_connection=local\n")
    assert rc != 0
    assert summary["failed_hosts"] == ["st01"] and summary["unfinished_hosts"] == ["st01"]
    assert "not in the inventory" in summary["hosts"]["st01"]["failed"][0]["why"]
    cp = playbook(world, "rollback.yml")  # the state the next test expects
    assert play_recap(cp.stdout)["st01"]["failed"] == 0 and host.sysctl("net.ipv4.tcp_sack") == "0", cp.stdout[-3000:]


def test_plan_refuses_another_site_schema_and_unreachable_hosts(world, tmp_path):
    host = world["host"]
    data = json.loads(world["scan"].read_text())
    other = dict(data, site="elsewhere")
    (tmp_path / "other.json").write_text(json.dumps(other))
    cp = host.controller([STORADVISE, "plan", "--site", str(world["site"]), "--scan", str(tmp_path / "other.json"),
                          "--out", str(tmp_path / "p1")], check=False)
    assert cp.returncode == 1 and "is of site 'elsewhere', not 'applytest'" in cp.stderr
    assert "Traceback" not in cp.stderr and len(cp.stderr.strip().splitlines()) == 1
    (tmp_path / "v3.json").write_text(json.dumps(dict(data, schema_version="3.0")))
    cp = host.controller([STORADVISE, "plan", "--site", str(world["site"]), "--scan", str(tmp_path / "v3.json"),
                          "--out", str(tmp_path / "p2")], check=False)
    assert cp.returncode == 1 and "schema 3.0 is not supported" in cp.stderr
    down = json.loads(json.dumps(data))
    for h in down["hosts"]:
        h["reachable"] = False
        h["errors"] = ["st01: connection refused"]
    (tmp_path / "down.json").write_text(json.dumps(down))
    cp = host.controller([STORADVISE, "plan", "--site", str(world["site"]), "--scan", str(tmp_path / "down.json"),
                          "--out", str(tmp_path / "p3"), "--json"], check=False)
    assert cp.returncode == 3
    summary = json.loads(cp.stdout)
    assert summary["refused"] == [{"host": "st01", "reason": "unreachable at scan time (st01: connection refused); "
                                                             "fix the connection and scan again"}]
    assert summary["hosts"] == {}
    shutil.rmtree(tmp_path, ignore_errors=True)
