"""A path from data is one path component (issue 25 case 6): a host key such as ``../../../x`` in
the collect vars file is refused in one line, and nothing is written outside the capture."""

from __future__ import annotations

import json

import pytest
import yaml

from advisor.util.ansible_data import as_data, dump_data, load_data
from advisor.util.path_component import PathComponentError, path_component
from tests.support.cli import storadvise

def test_vars_file_host_key_cannot_leave_the_capture(tmp_path):
    site = tmp_path / "site.yml"
    site.write_text(yaml.safe_dump({"name": "trav", "hosts": [
        {"name": "n1", "address": "127.0.0.1", "port": 1, "roles": ["storage"]}]}))
    vars_file = tmp_path / "v.yml"
    assert storadvise("collect", "--site", str(site), "--ansible-vars", str(vars_file)).returncode == 0
    data = load_data(vars_file.read_text())["storadvise_collect"]
    escape_to = tmp_path / "outside"
    escape_to.mkdir()
    hostile = "../../outside/x"
    data["hosts"] = {hostile: data["hosts"]["n1"]}
    vars_file.write_text(dump_data({"storadvise_collect": as_data(data)}))
    batches_file = tmp_path / "v.batches.json"  # what the capture is written from
    batches = json.loads(batches_file.read_text())
    batches["hosts"] = {hostile: batches["hosts"]["n1"]}
    batches_file.write_text(json.dumps(batches))
    capture = tmp_path / "a" / "cap"
    capture.mkdir(parents=True)
    r = storadvise("collect", "--from-ansible", str(capture), "--ansible-vars", str(vars_file))
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert "host name '../../outside/x': not usable as a file name" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert list(escape_to.rglob("*")) == []


@pytest.mark.parametrize("bad", ["..", ".", "", "a/b", ".hidden", "x\x00y", "tab\there", "a" * 256, None, 7])
def test_path_component_refuses(bad):
    with pytest.raises(PathComponentError, match="not usable as a file name"):
        path_component(bad, "host name")


@pytest.mark.parametrize("good", ["node1", "n1.example.org", "h_01-a", "a..b", "user@h:22", "a" * 255])
def test_path_component_keeps(good):
    assert path_component(good, "host name") == good
