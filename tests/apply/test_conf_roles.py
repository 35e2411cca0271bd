"""The ceph_client and hdfs_balancer roles' edge cases, run by real Ansible over a real sshd in a namespace of
this test's own, on files in the test's directory: check mode writes nothing, a value that would not read back
is a failed setting while the others are made, a missing or foreign file is the role's error on that host (kept
for the summary, then it fails the host and the run ends non-zero) and leaves nothing behind. The main path is in tests/lab/test_lab_cephfs.py,
test_lab_beegfs.py and test_lab_hdfs.py."""

from __future__ import annotations

import json

import pytest

from tests.support.ansible import ANSIBLE_PLAYBOOK, play_recap
from tests.support.ns_host import requirements_missing

pytestmark = [
    pytest.mark.skipif(requirements_missing() is not None, reason=str(requirements_missing())),
    pytest.mark.usefixtures("ansible_playbook"),
]

PLAY = """---
- name: Roles
  hosts: all
  gather_facts: false
  roles:
    - role: {role}
      vars: {vars}
  post_tasks:
    - name: Keep what the role registered for the test
      ansible.builtin.copy:
        content: "{{{{ {{'result': {role}_result | default({{}}), 'error': {role}_error | default('')}} | to_json }}}}"
        dest: "{out}"
        mode: "0600"
      check_mode: false
"""
CEPH = "[global]\n\tfsid = 1\n\n[client]\n\tclient_oc = false\n"


@pytest.fixture(scope="module")
def world(ns_hosts):
    from advisor.apply.planner import Plan
    from advisor.apply.project import write_project
    from advisor.site.file import load_site

    host, cleanup = ns_hosts("cr01", {})
    try:
        site = load_site(str(host.site_file(host.dir / "site.yml", ["worker"])))
        plan = Plan(site="rolestest", scan_started_at="-")
        # a plan carries the roles it uses: both roles this test runs
        plan.host_vars["cr01"] = {"ceph_client": {"ceph_client_options": {"client_oc": "true"}},
                                  "hdfs_balancer": {"hdfs_balancer_properties": {"dfs.balancer.dispatcherThreads": "200"}}}
        out = host.dir / "plan"
        write_project(plan, site, out)
        yield {"host": host, "plan": out, "dir": host.dir}
    finally:
        cleanup()


def run(world, role: str, vars: dict, *args: str):
    out = world["dir"] / "registered.json"
    out.unlink(missing_ok=True)
    book = world["plan"] / "roles-test.yml"
    book.write_text(PLAY.format(role=role, vars=json.dumps(vars), out=out))
    # (the copy runs with check_mode: false, so --check still records the result)
    cp = world["host"].controller([ANSIBLE_PLAYBOOK, book.name, *args], cwd=world["plan"], check=False)
    if play_recap(cp.stdout)["cr01"]["failed"]:
        # the role's error failed the host: the play ends non-zero, the error is the failing task's message
        assert cp.returncode == 2 and not out.exists(), cp.stdout[-3000:]
        return cp, None, cp.stdout.split("fatal: [cr01]: FAILED! =>", 1)[1].split("\n", 1)[0]
    assert cp.returncode == 0, cp.stdout[-3000:]
    got = json.loads(out.read_text())
    return cp, got["result"], got["error"]


def test_ceph_check_mode_writes_nothing(world):
    conf = world["dir"] / "check-ceph.conf"
    conf.write_text(CEPH)
    _, result, error = run(world, "ceph_client", {"ceph_client_conf": str(conf), "ceph_client_options_set": {"client_oc": "true"},
                                                   "ceph_client_backup_file": str(world["dir"] / "b1.json")}, "--check")
    assert result["changed"] is True and not error
    assert result["set"] == ["client_oc=true"] and conf.read_text() == CEPH
    assert not (world["dir"] / "b1.json").exists()


def test_ceph_value_that_would_not_read_back_is_a_failed_setting_and_the_other_is_made(world):
    conf = world["dir"] / "bad-ceph.conf"
    conf.write_text(CEPH)
    _, result, error = run(world, "ceph_client", {
        "ceph_client_conf": str(conf), "ceph_client_backup_file": str(world["dir"] / "b2.json"),
        "ceph_client_options_set": {"client_oc": "true", "client_readahead_max_bytes": "4M\n[global]"}})
    assert not error
    assert [f["setting"] for f in result["failed_settings"]] == ["client_readahead_max_bytes=4M\n[global]"]
    assert conf.read_text() == CEPH.replace("client_oc = false", "client_oc = true")


def test_ceph_missing_file_is_the_roles_error_and_writes_nothing(world):
    missing = world["dir"] / "etc-ceph" / "ceph.conf"
    cp, _, error = run(world, "ceph_client", {"ceph_client_conf": str(missing),
                                              "ceph_client_backup_file": str(world["dir"] / "b3.json"),
                                              "ceph_client_options_set": {"client_oc": "true"}})
    assert "no such file (no Ceph client configuration here)" in error
    # kept for the summary (rescued), then re-raised: the host fails and the run ends non-zero
    assert play_recap(cp.stdout)["cr01"]["failed"] == 1 and play_recap(cp.stdout)["cr01"]["rescued"] == 1
    assert cp.returncode == 2
    assert not missing.exists() and not (world["dir"] / "b3.json").exists()


def test_hdfs_foreign_file_is_refused_untouched(world):
    xml = world["dir"] / "hdfs-site.xml"
    xml.write_text("<beans><bean id='x'/></beans>\n")
    _, _, error = run(world, "hdfs_balancer", {"hdfs_balancer_site_xml": str(xml),
                                               "hdfs_balancer_backup_file": str(world["dir"] / "b4.json"),
                                               "hdfs_balancer_properties_set": {"dfs.balancer.dispatcherThreads": "200"}})
    assert "not a Hadoop configuration file: the root element is <beans>" in error
    assert xml.read_text() == "<beans><bean id='x'/></beans>\n" and not (world["dir"] / "b4.json").exists()
