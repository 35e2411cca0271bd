"""storadvise collect --ansible-vars / --from-ansible: bad input is a one-line error; a host the
playbook never reached is recorded unreachable (exit 3), never invented."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

SA = str(Path(sys.executable).parent / "storadvise")


def _site(tmp: Path) -> Path:
    p = tmp / "site.yml"
    p.write_text(yaml.safe_dump({"name": "clitest", "profiles": ["generic"], "hosts": [
        {"name": "n1", "address": "127.0.0.1", "port": 1, "roles": ["storage"],
         "vars": {"ansible_become_password": "s3cret-pw"}}]}))
    return p


def _run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([SA, "collect", *argv], capture_output=True, text=True, timeout=120)


def test_vars_file_holds_each_hosts_batch_as_unsafe_data(tmp_path):
    vars_file = tmp_path / "v.yml"
    r = _run("--site", str(_site(tmp_path)), "--ansible-vars", str(vars_file), "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["hosts"] == ["n1"]
    text = vars_file.read_text()
    assert "!unsafe 'wrapper': !unsafe |" in text and "storadvise batch wrapper" in text
    assert vars_file.stat().st_mode & 0o077 == 0
    assert "s3cret-pw" not in text  # the become password stays in the site file and the inventory


def test_unreached_host_is_unreachable_and_bad_vars_refused(tmp_path):
    vars_file = tmp_path / "v.yml"
    assert _run("--site", str(_site(tmp_path)), "--ansible-vars", str(vars_file)).returncode == 0
    capture = tmp_path / "cap"
    capture.mkdir()
    r = _run("--from-ansible", str(capture), "--ansible-vars", str(vars_file), "--json")
    assert r.returncode == 3, r.stderr
    manifest = json.loads((capture / "manifest.json").read_text())
    assert manifest["hosts"]["n1"]["reachable"] is False
    assert "no output from Ansible" in manifest["hosts"]["n1"]["errors"][0]
    assert "s3cret-pw" not in (capture / "manifest.json").read_text()

    bad = tmp_path / "bad.yml"
    bad.write_text("just: text\n")
    r = _run("--from-ansible", str(capture), "--ansible-vars", str(bad))
    assert r.returncode == 1
    assert "not a storadvise collect vars file" in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    r = _run("--from-ansible", str(capture))
    assert r.returncode == 1 and "--ansible-vars" in r.stderr
