"""``storage_systems: [gpfs, san, xcache]``: a list that gates which storage probes run and which
storage rule packs load (generic ones always); ``storage_kind`` reads as its first entry; profiles
select among the loaded packs."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from pydantic import ValidationError

from advisor.collect.probe_plan import probes_for
from advisor.rules.specs import load_catalog, resolve_profiles
from advisor.site.model import Host, Site
from advisor.site.file import load_site

REPO = Path(__file__).resolve().parents[2]


def prefixes(ids) -> set[str]:
    return {i.split("-")[0] for i in ids}


def test_storage_systems_is_a_list_and_storage_kind_its_first_entry():
    site = Site.model_validate({"name": "t2", "storage_systems": ["gpfs", "san", "xcache"]})
    assert site.storage_systems == ["gpfs", "san", "xrootd"]  # xcache: the xrootd kind's other name
    assert site.storage_kind == "gpfs" and site.profiles == ["gpfs-site"]
    old = Site.model_validate({"name": "t2", "storage_kind": "gpfs"})
    assert old.storage_kind == "gpfs" and old.storage_systems == []
    assert Site.model_validate({"name": "t2", "storage_kind": "san", "storage_systems": ["san", "gpfs"]}).storage_kind == "san"


@pytest.mark.parametrize("data, message", [
    ({"storage_systems": ["gpfs", "tape"]}, "unknown storage system 'tape'"),
    ({"storage_kind": "san", "storage_systems": ["gpfs", "san"]}, "is not the first of storage_systems"),
])
def test_bad_storage_systems_are_refused(data, message):
    with pytest.raises(ValidationError, match=message):
        Site.model_validate({"name": "t2", **data})


def test_storage_systems_gate_the_rule_packs_and_profiles_select_among_them():
    everything = load_catalog()
    assert {"GPFS", "SAN", "XCACHE", "XROOTD", "CEPH", "LUSTRE", "NET", "FW", "BLOCK"} <= prefixes(everything.rules)
    gated = load_catalog(storage_systems=["gpfs", "san", "xrootd"])
    kept = prefixes(gated.rules)
    assert {"GPFS", "SAN", "XCACHE", "XROOTD", "NET", "BLOCK"} <= kept  # generic packs always load
    assert not kept & {"CEPH", "LUSTRE", "BEEGFS", "DCACHE", "EOS", "HDFS"}
    assert set(gated.rules) < set(everything.rules)
    # the gpfs-site profile selects among the loaded packs: with only SAN loaded, no GPFS rule runs
    resolved = resolve_profiles(["gpfs-site"], load_catalog(storage_systems=["san"]))
    assert "SAN" in prefixes(resolved.rule_ids) and "GPFS" not in prefixes(resolved.rule_ids)


def test_storage_systems_gate_the_probes():
    host = Host(name="st1", roles=["storage", "cache", "san-controller", "door"])
    every = {p.name for p in probes_for(host)}
    gated = {p.name for p in probes_for(host, None, ["gpfs", "san"])}
    assert {"gpfs.mmlsconfig", "san.logical_drives", "network.sysctl", "firewall", "block.queue", "host"} <= gated
    assert not {n for n in gated if n.split(".")[0] in ("ceph", "lustre", "beegfs", "dcache", "eos", "hdfs", "xcache", "xrootd")}
    assert gated < every and "lustre.params" in every and "xrootd.server" in every


def test_a_scan_runs_only_the_site_storage_systems(tmp_path):
    site_file = tmp_path / "site.yml"
    site_file.write_text(textwrap.dedent("""\
        name: gated
        transport: local
        storage_systems: [san]
        hosts:
          - {name: box, roles: [storage]}
        """))
    assert load_site(str(site_file)).storage_kind == "san"
    r = subprocess.run([sys.executable, "-m", "advisor.cli.root", "scan", "--site", str(site_file), "--no-mesh",
                        "--sample-seconds", "0.2", "--json", "--fail-on", "critical"],
                       capture_output=True, text=True, timeout=300, cwd=REPO)
    assert r.returncode in (0, 3), r.stderr
    report = json.loads(r.stdout)
    ran = set(report["hosts"][0]["probes"])
    assert "network.sysctl" in ran and not {p for p in ran if p.split(".")[0] in ("gpfs", "ceph", "lustre", "xcache")}
    assert not prefixes(f["rule_id"] for f in report["findings"]) & {"GPFS", "CEPH", "LUSTRE", "XCACHE"}
