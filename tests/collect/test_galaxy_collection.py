"""The storadvise.tuning collection: built from the repository with ansible-galaxy, installed
offline from the tarball, its collect playbook and roles found by their fully qualified names."""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

pytestmark = [
    pytest.mark.skipif(not (BIN / "ansible-galaxy").exists(), reason="ansible-core not installed"),
    pytest.mark.usefixtures("ansible_playbook"),
]


def _run(argv: list[str], tmp: Path, **extra: str) -> subprocess.CompletedProcess:
    env = {"PATH": f"{BIN}:/usr/bin:/bin", "HOME": str(tmp), "ANSIBLE_HOME": str(tmp / "ansible-home"),
           "ANSIBLE_COLLECTIONS_PATH": str(tmp / "installed"), "ANSIBLE_NOCOLOR": "1", **extra}
    cp = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300, cwd=tmp)
    assert cp.returncode == 0, f"{argv[:3]}: {cp.stdout[-2000:]}{cp.stderr[-2000:]}"
    return cp


def test_collection_builds_installs_offline_and_its_playbooks_resolve(tmp_path):
    _run([str(BIN / "ansible-galaxy"), "collection", "build", str(REPO / "playbooks"), "--output-path",
          str(tmp_path / "dist")], tmp_path)
    (tarball,) = (tmp_path / "dist").glob("storadvise-tuning-*.tar.gz")
    with tarfile.open(tarball) as t:
        names = set(t.getnames())
    assert {"playbooks/collect.yml", "roles/network_tuning/tasks/main.yml", "galaxy.yml"} - names == {"galaxy.yml"}
    # a collection's roles cannot carry modules: each role's module is also the collection's
    role_modules = {p.name for p in (REPO / "playbooks" / "roles").glob("*/library/*.py")}
    assert role_modules and {f"plugins/modules/{m}" for m in role_modules} <= names
    _run([str(BIN / "ansible-galaxy"), "collection", "install", "--offline", "-p", str(tmp_path / "installed"),
          str(tarball)], tmp_path)
    root = tmp_path / "installed" / "ansible_collections" / "storadvise" / "tuning"
    assert (root / "playbooks" / "collect.yml").read_text() == (REPO / "playbooks" / "collect.yml").read_text()
    listed = _run([str(BIN / "ansible-galaxy"), "collection", "list", "-p", str(tmp_path / "installed")], tmp_path)
    assert "storadvise.tuning" in listed.stdout
    # the playbook by its fully qualified name, and a role of the collection by its own
    for book in ("collect", "apply_tuning", "rollback"):  # the last two import plan_groups.yml beside them
        _run([str(BIN / "ansible-playbook"), "--syntax-check", "-i", "localhost,", f"storadvise.tuning.{book}"], tmp_path)
    play = tmp_path / "uses_role.yml"
    play.write_text("---\n- name: Use a role of the collection\n  hosts: all\n  gather_facts: false\n  roles:\n"
                    "    - role: storadvise.tuning.network_tuning\n")
    _run([str(BIN / "ansible-playbook"), "--syntax-check", "-i", "localhost,", str(play)], tmp_path)
    # a role's module run from the installed collection, its module_utils found in the collection itself
    _run([str(BIN / "ansible"), "localhost", "--check", "-m", "storadvise.tuning.storadvise_sysctl", "-a",
          f"sysctls={{}} sysctl_file={tmp_path / 'x.conf'} conf_paths=[] editable_prefixes=[] "
          f"backup_file={tmp_path / 'b.json'} state=present", "-e", f"ansible_python_interpreter={sys.executable}"],
         tmp_path)
    assert {p.name for p in (root / "plugins" / "module_utils").iterdir()} == {
        p.name for p in (REPO / "playbooks" / "module_utils").glob("*.py")}


def test_installed_collections_collect_playbook_writes_a_capture_without_storadvise(tmp_path):
    """storadvise.tuning.collect from the installed collection, as an AWX job runs it: the batch
    through the script module (the host's Python is never used), the capture written by the
    collection's own storadvise_capture module; the playbook's environment cannot import storadvise."""
    _run([str(BIN / "ansible-galaxy"), "collection", "build", str(REPO / "playbooks"), "--output-path",
          str(tmp_path / "dist")], tmp_path)
    (tarball,) = (tmp_path / "dist").glob("storadvise-tuning-*.tar.gz")
    _run([str(BIN / "ansible-galaxy"), "collection", "install", "--offline", "-p", str(tmp_path / "installed"),
          str(tarball)], tmp_path)
    site = tmp_path / "site.yml"
    site.write_text("name: coll\nhosts:\n  - name: self\n    roles: [worker]\n")
    vars_file = tmp_path / "collect-vars.yml"
    _run([str(BIN / "storadvise"), "collect", "--site", str(site), "--ansible-vars", str(vars_file),
          "--sample-seconds", "1"], tmp_path)
    inventory = tmp_path / "inventory.ini"
    inventory.write_text("self ansible_connection=local ansible_python_interpreter=/nonexistent/python3\n")
    capture = tmp_path / "capture"
    # the controller's Python runs the module; PYTHONPATH cannot reach the repository's advisor package
    played = _run([str(BIN / "ansible-playbook"), "-i", str(inventory), "storadvise.tuning.collect",
                   "-e", f"storadvise_collect_vars={vars_file}", "-e", f"storadvise_collect_dir={capture}"],
                  tmp_path, PYTHONSAFEPATH="1",
                  PATH=f"{BIN}:/usr/sbin:/usr/bin:/sbin:/bin")  # the local "host" runs its probes with this PATH
    assert "failed=0" in played.stdout
    manifest = (capture / "manifest.json").read_text()
    assert '"reachable": true' in manifest and "self" in manifest
    scanned = subprocess.run([str(BIN / "storadvise"), "scan", "--from", str(capture), "--json"], capture_output=True,
                             text=True, timeout=120)
    assert scanned.returncode in (0, 2), scanned.stderr
    (host,) = json.loads(scanned.stdout)["hosts"]
    assert host["reachable"] and len(host["probes"]) >= 10
    assert not [p for p, status in host["probes"].items() if status == "error"], host["probe_messages"]
