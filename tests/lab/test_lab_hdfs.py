"""The loop on the hdfs lab scenario (advisor/lab/scenarios/hdfs.yml: two DataNode hosts whose
hdfs-site.xml, read by the lab's hdfs emulator, lets the balancer make 200 concurrent moves per DataNode
with 400 dispatcher threads): scan finds both through hdfs getconf -> plan writes hdfs_balancer variables
and says when they take effect -> real ansible-playbook apply-tuning.yml -> verify says both are fixed and
the balancer's own start-up lines (hdfs balancer over ssh, parsed by the probe) show the new values; a
second apply changes nothing; rollback.yml puts hdfs-site.xml back byte for byte. Real namespace hosts and
sshd; needs root (CI is root)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


import pytest

from probes.hdfs import parse_balancer_log
from tests.support.ansible import run_playbook
from tests.support.cli import storadvise
from tests.support.lab import REPO, lab_cli, lab_traces, no_traces, require_root, ssh
from tests.support.plan_files import plan_vars_text

pytestmark = pytest.mark.usefixtures("ansible_playbook")

SCENARIO = REPO / "advisor" / "lab" / "scenarios" / "hdfs.yml"
BIN = Path(sys.executable).parent
RULES = {"HDFS-BALANCER-CONCURRENT-MOVES", "HDFS-BALANCER-DISPATCHER-THREADS"}


def test_hdfs_balancer_loop(lab_registry: Path, tmp_path: Path) -> None:
    require_root()
    name = f"t-hdf{os.getpid() % 10000}"
    try:
        up = json.loads(lab_cli(["up", "--scenario", str(SCENARIO), "--name", name, "--json"]).stdout)
        lab_dir = Path(os.environ["STORADVISE_LAB_DIR"]) / name
        xml = lab_dir / "hosts" / "dn01" / "emu" / "hdfs" / "conf" / "hdfs-site.xml"
        original = xml.read_text()
        cp = storadvise("scan", "--site", name, "--json", "--no-history")
        assert cp.returncode in (0, 2), cp.stderr[-2000:]
        scan_file = tmp_path / "scan.json"
        scan_file.write_text(cp.stdout)
        failed = [f for f in json.loads(cp.stdout)["findings"] if f["rule_id"] in RULES and f["status"] == "fail"]
        assert {f["rule_id"]: (f["observed"], sorted(f["hosts"])) for f in failed} == {
            "HDFS-BALANCER-CONCURRENT-MOVES": ("200", ["dn01", "dn02"]),
            "HDFS-BALANCER-DISPATCHER-THREADS": ("400", ["dn01", "dn02"])}
        assert "dn01: hdfs getconf -confKey dfs.datanode.balance.max.concurrent.moves: 200" in json.dumps(failed)

        plan = tmp_path / "plan"
        cp = storadvise("plan", "--site", name, "--scan", str(scan_file), "--out", str(plan), "--json")
        assert cp.returncode == 0, cp.stderr[-2000:]
        hv = plan_vars_text(plan, "dn01")
        assert "'dfs.datanode.balance.max.concurrent.moves': !unsafe '50'" in hv
        assert "'dfs.balancer.dispatcherThreads': !unsafe '200'" in hv
        assert "takes effect when the DataNodes and the balancer start again" in (plan / "PLAN.md").read_text()

        ap = run_playbook(plan, "apply-tuning.yml")
        assert "Set HDFS balancer properties in hdfs-site.xml" in ap.stdout
        text = xml.read_text()
        assert "<value>50</value>" in text and "<value>200</value>" in text and "<name>dfs.replication</name>" in text
        assert text.splitlines()[:3] == original.splitlines()[:3]  # declaration, stylesheet, comment kept
        again = run_playbook(plan, "apply-tuning.yml")
        assert "changed=0" in again.stdout.split("PLAY RECAP", 1)[1], again.stdout[-2000:]

        cp = storadvise("verify", "--site", name, "--before", str(scan_file), "--json", "--no-history")
        outcome = {(f["rule_id"], f["host"]): f["outcome"] for f in json.loads(cp.stdout)["findings"]
                   if f["rule_id"] in RULES}
        assert outcome == {(r, h): "fixed" for r in RULES for h in ("dn01", "dn02")}, outcome
        # the balancer, started now, logs the new values in its own format
        run = ssh(lab_dir, up["hosts"]["dn01"]["address"], "/opt/hadoop/bin/hdfs balancer")
        seen = parse_balancer_log(run.stderr)
        assert seen.settings["dfs.datanode.balance.max.concurrent.moves"].number == 50
        assert seen.settings["dfs.balancer.dispatcherThreads"].default == "200"
        assert "The cluster is balanced. Exiting..." in run.stdout

        run_playbook(plan, "rollback.yml")
        assert xml.read_text() == original
    finally:
        lab_cli(["down", "--name", name], check=False)
        assert no_traces(lab_traces(name))
