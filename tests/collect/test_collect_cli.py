"""storadvise collect --ansible-vars / --from-ansible: bad input is a one-line error; a host the
playbook never reached is recorded unreachable (exit 3), never invented."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import yaml

from tests.support.cli import storadvise

def _site(tmp: Path) -> Path:
    p = tmp / "site.yml"
    p.write_text(yaml.safe_dump({"name": "clitest", "profiles": ["generic"], "hosts": [
        {"name": "n1", "address": "127.0.0.1", "port": 1, "roles": ["storage"],
         "vars": {"ansible_become_password": "s3cret-pw"}}]}))
    return p


def test_vars_file_holds_each_hosts_batch_as_unsafe_data(tmp_path):
    vars_file = tmp_path / "v.yml"
    r = storadvise("collect", "--site", str(_site(tmp_path)), "--ansible-vars", str(vars_file), "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["hosts"] == ["n1"]
    text = vars_file.read_text()
    assert "!unsafe 'script': !unsafe 'v.batch.sh'" in text and "!unsafe 'batch': 0" in text
    script, batches = tmp_path / "v.batch.sh", tmp_path / "v.batches.json"
    assert "storadvise batch wrapper" in script.read_text()
    assert json.loads(batches.read_text())["batches"][0]["commands"]
    for written in (vars_file, script, batches):
        assert written.stat().st_mode & 0o077 == 0
        assert "s3cret-pw" not in written.read_text()  # the become password stays in the site file and the inventory


def test_unreached_host_is_unreachable_and_bad_vars_refused(tmp_path):
    vars_file = tmp_path / "v.yml"
    assert storadvise("collect", "--site", str(_site(tmp_path)), "--ansible-vars", str(vars_file)).returncode == 0
    capture = tmp_path / "cap"
    capture.mkdir()
    r = storadvise("collect", "--from-ansible", str(capture), "--ansible-vars", str(vars_file), "--json")
    assert r.returncode == 3, r.stderr
    manifest = json.loads((capture / "manifest.json").read_text())
    assert manifest["hosts"]["n1"]["reachable"] is False
    assert "no output from Ansible" in manifest["hosts"]["n1"]["errors"][0]
    assert "s3cret-pw" not in (capture / "manifest.json").read_text()

    bad = tmp_path / "bad.yml"
    bad.write_text("just: text\n")
    r = storadvise("collect", "--from-ansible", str(capture), "--ansible-vars", str(bad))
    assert r.returncode == 1
    assert "not a storadvise collect vars file" in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    r = storadvise("collect", "--from-ansible", str(capture))
    assert r.returncode == 1 and "--ansible-vars" in r.stderr


def _sites_hosts(tmp: Path, names: list[str], roles: dict[str, list[str]]) -> Path:
    p = tmp / "site.yml"
    p.write_text(yaml.safe_dump({"name": "shared", "profiles": ["generic"], "hosts": [
        {"name": n, "address": "127.0.0.1", "roles": roles[n[:2]]} for n in names]}))
    return p


def test_hosts_with_the_same_commands_share_one_batch_and_the_script_holds_each_script_once(tmp_path):
    """500 hosts in two roles: two batches, each probe script once in the shared script, and the
    vars file grows by a few bytes per host (it held a whole wrapper per host before)."""
    vars_small, vars_big = tmp_path / "small.yml", tmp_path / "big.yml"  # each with its .batch.sh, .batches.json
    roles = {"st": ["storage"], "wn": ["worker"]}
    small = _sites_hosts(tmp_path, ["st01", "wn001"], roles)
    assert storadvise("collect", "--site", str(small), "--ansible-vars", str(vars_small)).returncode == 0
    big = _sites_hosts(tmp_path, ["st01", *(f"wn{i:03d}" for i in range(1, 500))], roles)
    assert storadvise("collect", "--site", str(big), "--ansible-vars", str(vars_big)).returncode == 0
    data = json.loads((tmp_path / "big.batches.json").read_text())
    assert len(data["batches"]) == 2 and len(data["hosts"]) == 500
    assert {spec["batch"] for spec in data["hosts"].values()} == {0, 1}
    scripts = {c["script"] for b in data["batches"] for c in b["commands"]}
    script = (tmp_path / "big.batch.sh").read_text()
    assert script.count("storadvise batch wrapper") == 1
    assert script.count("() { printf %s ") == len(scripts)  # each distinct probe script once
    # what every host's task loads: per host its batch number only
    per_host = (vars_big.stat().st_size - vars_small.stat().st_size) / 498
    assert per_host < 60, per_host  # a whole wrapper (~40 KB) per host before
    # the script grows by the host names of its --host selection only (a name and a separator each)
    grown = (tmp_path / "big.batch.sh").stat().st_size - (tmp_path / "small.batch.sh").stat().st_size
    assert grown == sum(len(shlex.quote(f"wn{i:03d}") + "|") for i in range(2, 500)), grown
