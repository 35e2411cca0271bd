"""The collect job as AWX runs it: ansible-runner (AWX's job engine) in a scratch private data
directory, the repository's playbooks/ as the job's project, the site's inventory, and the capture
written to a path the site gives (an NFS mount in production) under the job's id; then
`storadvise scan --from` on it. The host is this machine through the local connection plugin, with
no Python used on it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import ansible_runner
import pytest

# ansible-runner runs ansible-playbook
pytestmark = pytest.mark.usefixtures("ansible_playbook")

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def test_ansible_runner_runs_the_collect_job_and_its_capture_scans(tmp_path):
    site = tmp_path / "site.yml"
    site.write_text("name: awx\nhosts:\n  - name: wn-awx01\n    roles: [worker]\n")
    vars_file = tmp_path / "project-files" / "collect-vars.yml"
    vars_file.parent.mkdir()
    gen = subprocess.run([str(BIN / "storadvise"), "collect", "--site", str(site), "--ansible-vars", str(vars_file),
                          "--sample-seconds", "1"], capture_output=True, text=True, timeout=120)
    assert gen.returncode == 0, gen.stderr
    private = tmp_path / "runner"
    (private / "inventory").mkdir(parents=True)
    (private / "inventory" / "hosts").write_text(
        "wn-awx01 ansible_connection=local ansible_python_interpreter=/nonexistent/python3\n")
    nfs = tmp_path / "nfs"
    nfs.mkdir()
    result = ansible_runner.run(
        private_data_dir=str(private), project_dir=str(REPO / "playbooks"), playbook="collect.yml",
        ident="4711",  # AWX's job id
        extravars={"storadvise_collect_vars": str(vars_file),
                   "storadvise_collect_dir": str(nfs) + "/captures/{{ awx_job_id }}", "awx_job_id": 4711},
        envvars={"PATH": f"{BIN}:/usr/sbin:/usr/bin:/sbin:/bin", "ANSIBLE_HOME": str(tmp_path / "ansible-home")},
        quiet=True, timeout=600)
    assert (result.status, result.rc) == ("successful", 0), result.stdout.read()[-3000:]
    capture = nfs / "captures" / "4711"
    manifest = json.loads((capture / "manifest.json").read_text())
    assert manifest["hosts"] == {"wn-awx01": {"reachable": True, "errors": []}}
    # the job's per-host results name the batch task, never a set_stats artifact carrying the capture
    tasks = {e["event_data"].get("task") for e in result.events if e.get("event") == "runner_on_ok"}
    assert "Run the host's probe batch" in tasks
    assert not list((private / "artifacts" / "4711").glob("**/custom"))
    scanned = subprocess.run([str(BIN / "storadvise"), "scan", "--from", str(capture), "--json"], capture_output=True,
                             text=True, timeout=120)
    assert scanned.returncode in (0, 2), scanned.stderr
    (host,) = json.loads(scanned.stdout)["hosts"]
    assert host["name"] == "wn-awx01" and host["reachable"]
    assert not [p for p, status in host["probes"].items() if status == "error"], host["probe_messages"]
