"""``scan --hosts`` limits the throughput mesh to paths among the selected hosts.

Three hosts of a local site (loopback addresses 127.0.0.1-3, real iperf3); the mesh asks for every
pair of the group; ``--hosts a,b`` must test a<->b only and never start a server for c.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(shutil.which("iperf3") is None, reason="needs iperf3")

SITE = """
name: meshsel
transport: local
hosts:
  - {name: a, address: localhost, groups: [g], vars: {mesh_address: 127.0.0.1}}
  - {name: b, address: localhost, groups: [g], vars: {mesh_address: 127.0.0.2}}
  - {name: c, address: localhost, groups: [g], vars: {mesh_address: 127.0.0.3}}
mesh:
  pairs: [{a: g, expected_rate: 1gbit}]
"""


def test_mesh_obeys_hosts(tmp_path):
    (tmp_path / "site.yml").write_text(SITE)
    site_text = (tmp_path / "site.yml").read_text()
    cp = subprocess.run([sys.executable, "-m", "advisor.cli.root", "scan", "--site", "site.yml", "--hosts", "a,b",
                         "--no-efficiency", "--sample-seconds", "0.2", "--json"],
                        capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert cp.returncode in (0, 2, 3), cp.stderr[-2000:]
    mesh = json.loads(cp.stdout)["mesh"]
    paths = sorted((p["src"], p["dst"]) for p in mesh["paths"])
    assert paths == [("a", "b"), ("b", "a")], paths
    assert sorted(mesh["hosts"]) == ["a", "b"]
    help_text = subprocess.run(["iperf3", "--help"], capture_output=True, text=True)
    if "rsa-public-key-path" in help_text.stdout + help_text.stderr:  # this iperf3 can authenticate: it did
        assert all(h["auth"] for h in mesh["hosts"].values()), mesh["hosts"]
    assert all(p["status"] == "ok" for p in mesh["paths"]), mesh["paths"]
    assert site_text == (tmp_path / "site.yml").read_text()
