"""An output file whose directory does not exist is refused before any work, wherever a command writes
one (issue 37, item 14): one line, exit 1, no directory created, no scan made; and rules list --profile
applies the profile's storage systems."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def cli(*args, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "advisor.cli.root", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=300)


@pytest.mark.parametrize("argv", [
    ["scan", "--no-history", "--output", "{missing}/x.json"],
    ["scan", "--no-history", "--html", "{missing}/x.html"],
    ["scan", "--no-history", "--prometheus", "{missing}/x.prom"],
    ["verify", "--before", "{scan}", "--no-history", "-o", "{missing}/x.json"],
    ["audit", "--site", "{site}", "--no-history", "--junit", "{missing}/x.xml"],
    ["report", "{scan}", "--ndjson", "{missing}/x.ndjson"],
    ["lab", "generate", "--seed", "1", "-o", "{missing}/x.yml"],
    ["sudoers", "--site", "{site}", "--user", "scanner", "-o", "{missing}/x"],
    ["collect", "--site", "{site}", "--export", "{missing}/files"],
])
def test_a_missing_directory_is_refused_before_anything_runs(tmp_path, argv):
    site = tmp_path / "here.yml"
    site.write_text("name: here\ntransport: local\nhosts:\n  - {name: box, address: localhost, roles: [storage]}\n")
    scan = tmp_path / "scan.json"
    scan.write_text(json.dumps({"schema_version": "2.1"}))
    missing = tmp_path / "no" / "such" / "dir"
    args = [a.format(missing=missing, scan=scan, site=site) for a in argv]
    r = cli(*args, cwd=tmp_path)
    assert r.returncode == 1 and r.stderr.count("\n") == 1, r.stderr
    assert f"directory {missing}" in r.stderr and "does not exist" in r.stderr, r.stderr
    assert not (tmp_path / "no").exists()


def test_rules_list_applies_the_profile_s_storage_systems():
    def packs(profile):
        r = cli("rules", "list", "--profile", profile, "--json")
        assert r.returncode == 0, r.stderr
        return {row["pack"] for row in json.loads(r.stdout)}

    ifca = packs("ifca")  # ifca includes gpfs-site: GPFS and its SAN, and the generic packs
    assert {"gpfs.yml", "san.yml", "network.yml", "block.yml"} <= ifca
    assert not ifca & {"beegfs.yml", "ceph.yml", "hdfs.yml", "eos.yml", "dcache.yml", "lustre.yml", "xcache.yml"}
    assert {"beegfs.yml", "ceph.yml", "hdfs.yml"} <= packs("generic")
