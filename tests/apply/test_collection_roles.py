"""The storadvise.tuning collection as a site uses it: built with ansible-galaxy, installed into a scratch
collections path, each role run by its fully qualified name from a plain playbook (no plan directory, no
ansible.cfg, no module_utils path) against a real host (sshd in a namespace of this test's own). Every role's
module loads its module_utils from the collection; a module that fails on one host fails that host (the
other host goes on) and the run ends non-zero, with the error still kept for the summary."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.support.ansible import ANSIBLE_PLAYBOOK, VENV_BIN, play_recap
from tests.support.ns_host import requirements_missing

pytestmark = [
    pytest.mark.skipif(requirements_missing() is not None, reason=str(requirements_missing())),
    pytest.mark.usefixtures("ansible_playbook"),
]

ROLES = ["firewall", "network_tuning", "block_tuning", "gpfs_tuning", "san_cache", "xcache", "xrootd_tuning",
         "dcache_tuning", "lustre_tuning", "ceph_client", "beegfs_client", "hdfs_balancer"]


@pytest.fixture(scope="module")
def world(tmp_path_factory, ns_hosts):
    from advisor.util.resources import playbooks_dir

    tmp = tmp_path_factory.mktemp("collection")
    for argv in (["build", str(playbooks_dir()), "--output-path", str(tmp / "dist")],
                 ["install", "--offline", "-p", str(tmp / "collections")]):
        if argv[0] == "install":
            argv.append(str(next((tmp / "dist").glob("storadvise-tuning-*.tar.gz"))))
        cp = subprocess.run([str(VENV_BIN / "ansible-galaxy"), "collection", *argv], capture_output=True, text=True,
                            timeout=300, cwd=tmp, env={"PATH": f"{VENV_BIN}:/usr/bin:/bin", "HOME": str(tmp)})
        assert cp.returncode == 0, cp.stdout[-2000:] + cp.stderr[-2000:]
    host, cleanup = ns_hosts("co01", {})
    try:
        # GPFS and SMcli as the lab emulates them (advisor/lab/emulators), so those roles' modules run too
        from advisor.lab.emulators import gpfs, san
        from advisor.lab.emulators.gpfs_lab import EMULATION as GPFS_LAB
        from advisor.lab.emulators.san_lab import EMULATION as SAN_LAB

        state = host.dir / "emu-state"
        gpfs.setup_state(state, gpfs.initial_cluster("gpfs.test.lab", "1", ["co01"], {}, {"pagepool": "512M"}, [],
                                                     ["/dev/fs1"]))
        san.setup_state(state, "DS4700", ["ctl-a"], ["data01"], {
            "read_cache": True, "prefetch": False, "write_cache": True, "write_cache_mirroring": True,
            "write_cache_without_batteries": False, "flush_after": 10.0, "modification_priority": "high",
            "raid_level": 5, "capacity": "2,000.000 GB", "status": "Optimal"})
        emu = {"gpfs": GPFS_LAB.install(host.dir / "emuhost", state)["/usr/lpp/mmfs/bin"],
               "smcli": SAN_LAB.install(host.dir / "emuhost", state)["/opt/SMgr/client"] / "SMcli"}
        yield {"host": host, "tmp": tmp, "collections": tmp / "collections", "emu": emu}
    finally:
        cleanup()


def _inventory(world, hosts: dict[str, dict]) -> str:
    h = world["host"]
    common = {"ansible_host": "127.0.0.1", "ansible_user": "root", "ansible_ssh_private_key_file": str(h.key),
              "ansible_ssh_common_args": f"-o UserKnownHostsFile={h.known_hosts} -o StrictHostKeyChecking=yes",
              "ansible_python_interpreter": "/usr/bin/python3"}
    path = world["tmp"] / "inventory.json"
    path.write_text(json.dumps({"all": {"hosts": {n: {**common, **v} for n, v in hosts.items()}}}))
    return str(path)


def _play(world, name: str, text: str, inventory: str) -> subprocess.CompletedProcess:
    book = world["tmp"] / name
    book.write_text(text)
    # run from the scratch directory: no ansible.cfg, no module_utils path, only the installed collection
    return world["host"].controller([ANSIBLE_PLAYBOOK, "-i", inventory, book.name], cwd=world["tmp"], check=False,
                                    env_extra={"ANSIBLE_COLLECTIONS_PATH": str(world["collections"]),
                                               "ANSIBLE_MODULE_UTILS": "", "ANSIBLE_LIBRARY": ""})


def _role_vars(world) -> dict:
    """Each role pointed at files in the host's own directory, with nothing planned: its module runs and
    changes nothing."""
    d, emu = world["host"].dir, world["emu"]
    return {
        "storadvise_backup_dir": str(d / "backup"),
        "firewall_nftables_conf": "", "firewall_iptables_files": {"ip": [], "ip6": []},
        "firewall_firewalld_dir": str(d / "firewalld"),
        "network_tuning_sysctl_file": str(d / "sysctl.d" / "90-storadvise.conf"),
        "network_tuning_conf_paths": [str(d / "sysctl.d")], "network_tuning_editable_prefixes": [str(d / "sysctl.d")],
        "block_tuning_udev_rules_file": str(d / "60-storadvise-block.rules"),
        "gpfs_tuning_bin_dir": str(emu["gpfs"]), "gpfs_tuning_group": ["co01"], "gpfs_tuning_runner": "co01",
        "san_cache_smcli": str(emu["smcli"]), "san_cache_controllers": ["ctl-a"],
        "xcache_config_file": str(d / "xcache.cfg"),
        "dcache_tuning_layout_file": str(d / "layout.conf"),
        "ceph_client_conf": str(d / "ceph.conf"), "beegfs_client_conf": str(d / "beegfs-client.conf"),
        "hdfs_balancer_site_xml": str(d / "hdfs-site.xml"),
    }


def test_every_role_runs_by_its_fully_qualified_name_from_the_installed_collection(world):
    d = world["host"].dir
    (d / "xcache.cfg").write_text("all.export /\n")
    (d / "layout.conf").write_text("[dCacheDomain]\n")
    (d / "ceph.conf").write_text("[client]\n")
    (d / "beegfs-client.conf").write_text("tuneFileCacheType = buffered\n")
    (d / "hdfs-site.xml").write_text("<configuration>\n</configuration>\n")
    roles = "\n".join(f"    - role: storadvise.tuning.{r}" for r in ROLES)
    cp = _play(world, "all-roles.yml", f"""---
- name: Every tuning role of the collection, by its fully qualified name
  hosts: all
  gather_facts: false
  environment: {{STORADVISE_LAB_HOST: co01}}
  roles:
{roles}
  post_tasks:
    - name: Keep what each role registered
      ansible.builtin.copy:
        content: "{{{{ {{'results': {{{', '.join(f"'{r}': {r}_result | default(none)" for r in ROLES)}}},
                       'errors': {{{', '.join(f"'{r}': {r}_error | default(none)" for r in ROLES)}}}}} | to_json }}}}"
        dest: "{d / 'registered.json'}"
        mode: "0600"

- name: The summary role of the collection
  hosts: localhost
  gather_facts: false
  roles:
    - role: storadvise.tuning.apply_summary
      vars:
        apply_summary_file: "{d / 'apply-summary.json'}"
        apply_summary_roles: {json.dumps(ROLES)}
""", _inventory(world, {"co01": _role_vars(world)}))
    recap = play_recap(cp.stdout)
    assert cp.returncode == 0, cp.stdout[-4000:]
    # nothing was rescued: no module failed to load its support code and had its error hidden
    assert recap["co01"]["failed"] == 0 and recap["co01"]["rescued"] == 0, cp.stdout[-4000:]
    assert "Could not find imported module support code" not in cp.stdout
    got = json.loads((d / "registered.json").read_text())
    assert got["errors"] == {r: None for r in ROLES}
    # every role that has a module to run with nothing planned ran it from the collection
    ran = {r for r, res in got["results"].items() if res is not None}
    assert ran >= set(ROLES) - {"xrootd_tuning"}, got["results"]
    for role in ROLES:
        assert f"TASK [storadvise.tuning.{role} : " in cp.stdout, role
    assert json.loads((d / "apply-summary.json").read_text())["failed_count"] == 0


def test_a_module_failure_fails_that_host_the_other_goes_on_and_the_run_ends_non_zero(world):
    d = world["host"].dir
    (d / "not-a-dir").write_text("a file where the backup directory should be\n")
    good = {**_role_vars(world), "network_tuning_sysctls": {"net.ipv4.tcp_sack": "1"}}
    # a change whose backup cannot be written (a file where its directory should be): the module fails
    bad = {**good, "network_tuning_sysctls": {"net.ipv4.tcp_timestamps": "0"},
           "network_tuning_sysctl_file": str(d / "sysctl.d" / "91-bad.conf"),
           "network_tuning_backup_file": str(d / "not-a-dir" / "network_tuning.json")}
    cp = _play(world, "forced-failure.yml", f"""---
- name: Network tuning by its fully qualified name
  hosts: all
  gather_facts: false
  roles:
    - role: storadvise.tuning.network_tuning

- name: The summary still names the failed host
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Keep the failed host's error
      ansible.builtin.copy:
        content: "{{{{ hostvars['bad01'].network_tuning_error | default('') }}}}"
        dest: "{d / 'bad01-error.txt'}"
        mode: "0600"
""", _inventory(world, {"bad01": bad, "good01": good}))
    recap = play_recap(cp.stdout)
    assert cp.returncode == 2, cp.stdout[-4000:]
    assert recap["bad01"]["failed"] == 1 and recap["bad01"]["rescued"] == 1, recap
    assert recap["good01"]["failed"] == 0 and recap["good01"]["ok"] >= 1, recap
    assert "Not a directory" in (d / "bad01-error.txt").read_text()
    assert world["host"].sysctl("net.ipv4.tcp_sack") == "1"
    assert world["host"].sysctl("net.ipv4.tcp_timestamps") == "1"  # nothing changed where the backup failed
