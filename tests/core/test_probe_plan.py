"""What runs where has one answer (advisor.collect.probe_plan): the probes the collector sends to each host, the
ones ``scan --dry-run`` lists, the ones ``collect --ansible-vars`` batches, the root ones the host's probe
helper holds and the ones the sudoers snippet allows are the same sets, with the same privilege, on every
shipped lab scenario and on generated sites (each as written and narrowed to its storage kind), and on a
small GPFS-only site through the command line. No lab is brought up: each scenario becomes the site file
``lab up`` would write (advisor.lab.site_files.site_document)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from advisor.collect.ansible import batch_vars
from advisor.cli.root import app
from advisor.collect.collector import collect_site_facts
from advisor.scan.dry_run import scan_dry_run
from advisor.lab.generate import generate_scenario
from advisor.lab.records import LabRecord
from advisor.lab.scenario import Scenario, builtin_scenarios, load_scenario
from advisor.lab.site_files import site_document
from advisor.scan.pipeline import open_scan
from advisor.scan.options import ScanOptions
from advisor.site.model import Site
from advisor.transport.base import CommandResult, Transport
from advisor.transport.batch_framing import BatchScript

REPO = Path(__file__).resolve().parents[2]
SEEDS = range(1, 9)


class RecordingTransport(Transport):
    """Stands in for a host: keeps the commands the collector sends, each with how it gets root: the
    sudo flag the SSH batch wrapper (advisor.transport.batch_framing, the real one) gives it, or a call
    of the probe helper through sudo in its own script; returns empty outputs."""

    def __init__(self, host, sent):
        self.host, self.sent = host, sent

    def run_batch(self, commands):
        batch = BatchScript.build(commands, self.host.sudo)
        self.sent[self.host.name] = {c.key: "sudo" if flag else "helper" if c.own_sudo else "user"
                                     for c, flag in zip(commands, batch.sudo)}
        return [CommandResult(key=c.key, rc=0, stdout="") for c in commands]


def _site_of(sc: Scenario, narrow: bool) -> Site:
    rec = LabRecord(name=sc.name, index=0, subnet="198.18.0.0/24", scenario=sc.name, scenario_source=None,
                    hosts={h.name: {"address": f"198.18.0.{11 + i}"} for i, h in enumerate(sc.hosts)})
    doc = site_document(rec, sc)
    for i, h in enumerate(doc["hosts"]):
        h["user"] = "scanner"  # not root: the root probes go through sudo or the helper
        if i % 2 == 0:
            h["vars"]["probe_helper"] = True
        # the lab points the root probes at the host's own files, which a helper may not read and the
        # sudoers snippet refuses (docs/privileges.md): the documented default locations here
        for var in ("firewall_iptables_files", "firewall_nftables_conf", "firewall_firewalld_dir", "xcache_log"):
            h["vars"].pop(var, None)
    if narrow:
        doc["storage_systems"] = [doc.get("storage_kind") or doc["storage_systems"][0]]
        doc.pop("storage_kind", None)
    return Site.model_validate(doc)


def _sites():
    for name in builtin_scenarios():
        sc = load_scenario(name)
        for narrow in (False, True):
            yield f"{name}{'-narrowed' if narrow else ''}", _site_of(sc, narrow)
    for seed in SEEDS:
        sc = Scenario.model_validate(generate_scenario(seed))
        for narrow in (False, True):
            yield f"gen{seed}{'-narrowed' if narrow else ''}", _site_of(sc, narrow)


def _sudoers_allows(site_file: Path, hosts: str | None = None) -> set[str]:
    args = ["sudoers", "--site", str(site_file)] + (["--hosts", hosts] if hosts else [])
    r = CliRunner().invoke(app, args, prog_name="storadvise")
    assert r.exit_code == 0, r.output
    return {ln.strip().rstrip(", \\").split()[-1] for ln in r.output.splitlines()
            if ln.strip().startswith("/usr/local/sbin/storadvise-probe ")}


def _helper_lists(site_file: Path, host: str, tmp_path: Path) -> set[str]:
    out = tmp_path / f"helper-{host}"
    r = CliRunner().invoke(app, ["probe", "helper", "--site", str(site_file), "--host", host, "-o", str(out)],
                           prog_name="storadvise")
    if r.exit_code == 1 and "needs no helper" in r.output:
        return set()
    assert r.exit_code == 0, r.output
    listed = subprocess.run(["sh", str(out), "--list"], capture_output=True, text=True, timeout=30)
    return set(listed.stdout.split())


def _check_one_answer(label: str, site: Site, tmp_path: Path) -> None:
    options = ScanOptions(mesh=False, efficiency=False)
    target = open_scan(options, site)
    sent: dict[str, dict[str, str]] = {}
    collect_site_facts(site, lambda h: RecordingTransport(h, sent), parallel=1)
    dry = {h["host"]: h for h in scan_dry_run(target, options, None)["hosts"]}
    batches = batch_vars(site, site.hosts, 5.0)
    site_file = tmp_path / f"{label}.yml"
    site_file.write_text(yaml.safe_dump(json.loads(site.model_dump_json(exclude_none=True))))
    every_root = set()
    for host in site.hosts:
        run = sent[host.name]
        listed = {p["probe"]: p for p in dry[host.name]["probes"]}
        assert set(listed) == set(run), (label, host.name, set(listed) ^ set(run))
        assert not any(p["skipped"] for p in listed.values())
        # the privilege the dry run shows is the one the batch wrapper applies
        for name, how in run.items():
            assert listed[name]["privilege"] == how, (label, host.name, name, listed[name])
            assert listed[name]["sudo"] is (how != "user"), (label, host.name, name, listed[name])
        shared = batches["batches"][batches["hosts"][host.name]["batch"]]
        assert [c["key"] for c in shared["commands"]] == list(run), (label, host.name)
        root = {n for n, p in listed.items() if p["needs_root"]}
        assert _helper_lists(site_file, host.name, tmp_path) == root, (label, host.name)
        every_root |= root
    assert _sudoers_allows(site_file) == every_root, label


@pytest.mark.parametrize("label,site", list(_sites()), ids=lambda v: v if isinstance(v, str) else "")
def test_collector_dry_run_batches_helper_and_sudoers_give_one_answer(label, site, tmp_path):
    _check_one_answer(label, site, tmp_path)


GPFS_SITE = """\
name: first-day
storage_systems: [gpfs]
defaults: {user: scanner, link_rate: 10G}
vars: {probe_helper: true}
hosts:
  - {name: st01, address: 192.0.2.10, roles: [storage], groups: [gpfs]}
  - {name: st02, address: 192.0.2.11, roles: [storage], groups: [gpfs]}
  - {name: wn01, address: 192.0.2.20, roles: [worker], groups: [wn]}
"""


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "advisor.cli.root", *map(str, args)], capture_output=True, text=True,
                          cwd=REPO, timeout=300)


def test_gpfs_only_site_dry_run_scan_and_sudoers_agree(tmp_path):
    """The first-day case of issue 37: a GPFS-only site. The dry run lists, per host, the probes the
    scan runs; the sudoers snippet allows exactly their root ones; no Ceph, dCache, EOS, HDFS, Lustre,
    BeeGFS or XCache probe appears anywhere."""
    site_file = tmp_path / "site.yml"
    site_file.write_text(GPFS_SITE)
    r = _cli("scan", "--site", site_file, "--dry-run", "--json")
    assert r.returncode == 0, r.stderr
    dry = {h["host"]: {p["probe"] for p in h["probes"]} for h in json.loads(r.stdout)["hosts"]}
    from advisor.site.file import load_site

    site = load_site(str(site_file))
    sent: dict[str, dict[str, str]] = {}
    collect_site_facts(site, lambda h: RecordingTransport(h, sent), parallel=1)
    assert dry == {h: set(p) for h, p in sent.items()}
    foreign = ("ceph.", "dcache.", "eos.", "hdfs.", "lustre.", "beegfs.", "xcache.", "xrootd.")
    assert not [p for ps in dry.values() for p in ps if p.startswith(foreign)], dry
    assert {"gpfs.mmlsconfig", "network.sysctl"} <= dry["st01"]
    r = _cli("sudoers", "--site", site_file)
    assert r.returncode == 0, r.stderr
    allowed = {ln.strip().rstrip(", \\").split()[-1] for ln in r.stdout.splitlines()
               if ln.strip().startswith("/usr/local/sbin/storadvise-probe ")}
    from probes import all_probes

    root = {p for ps in dry.values() for p in ps if all_probes()[p].needs_root}
    assert allowed == root and "ceph.health" not in allowed and "eos.fs" not in allowed
    # --hosts narrows the snippet to the probes of the hosts it names
    r = _cli("sudoers", "--site", site_file, "--hosts", "worker")
    narrowed = {ln.strip().rstrip(", \\").split()[-1] for ln in r.stdout.splitlines()
                if ln.strip().startswith("/usr/local/sbin/storadvise-probe ")}
    assert narrowed == {p for p in dry["wn01"] if all_probes()[p].needs_root}, r.stderr


def test_dry_run_shows_sudo_only_where_the_scan_uses_it(tmp_path):
    """A root login uses no sudo: the dry run says so instead of 'sudo -n'; a non-root login does."""
    site_file = tmp_path / "site.yml"
    site_file.write_text(GPFS_SITE.replace("user: scanner", "user: root").replace("vars: {probe_helper: true}\n", ""))
    r = _cli("scan", "--site", site_file, "--dry-run", "--hosts", "st01")
    assert r.returncode == 0, r.stderr
    assert "sudo -n" not in r.stdout and "-- firewall: as root (the login user): no sudo" in r.stdout, r.stdout
    site_file.write_text(GPFS_SITE.replace("vars: {probe_helper: true}\n", ""))
    r = _cli("scan", "--site", site_file, "--dry-run", "--hosts", "st01")
    assert "-- firewall: sudo -n, timeout" in r.stdout and "-- host: timeout" in r.stdout, r.stdout
