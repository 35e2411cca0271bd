"""The loop on the cephfs lab scenario (advisor/lab/scenarios/cephfs.yml: two storage hosts with the lab's
ceph CLI emulator, two workers mounting CephFS through ceph-fuse with client_oc = false in their ceph.conf,
osd.3 slow with slow ops): scan finds every fault with its evidence -> plan writes ceph_client variables for
the fixable one and lists the others as manual (the kernel-mount fstab line among them) -> real
ansible-playbook apply-tuning.yml -> verify says client_oc is fixed and the rest still fail; a second apply
changes nothing; rollback.yml puts ceph.conf back byte for byte. Real namespace hosts, sshd and a real
fuse.ceph-fuse mount entry in each worker's mount namespace; needs root (CI is root)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.support.ansible import run_playbook
from tests.support.cli import storadvise
from tests.support.lab import REPO, lab_cli, lab_traces, no_traces, require_root
from tests.support.plan_files import plan_vars_text

pytestmark = pytest.mark.usefixtures("ansible_playbook")

SCENARIO = REPO / "advisor" / "lab" / "scenarios" / "cephfs.yml"
BIN = Path(sys.executable).parent
MANUAL = {"CEPH-OSD-SLOW", "CEPH-SLOW-OPS", "CEPH-HEALTH", "MOUNT-CEPH-FUSE"}
FIXABLE = {"CEPH-CLIENT-OBJECT-CACHE"}


def _failing(scan: dict) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for f in scan["findings"]:
        if f["status"] == "fail" and f["rule_id"].startswith(("CEPH-", "MOUNT-CEPH")):
            out.setdefault(f["rule_id"], []).append(f)
    return out


def test_cephfs_loop(lab_registry: Path, tmp_path: Path) -> None:
    require_root()
    name = f"t-cph{os.getpid() % 10000}"
    try:
        up = json.loads(lab_cli(["up", "--scenario", str(SCENARIO), "--name", name, "--json"]).stdout)
        conf = Path(os.environ["STORADVISE_LAB_DIR"]) / name / "hosts" / "wn01" / "emu" / "ceph" / "etc" / "ceph.conf"
        original = conf.read_text()
        cp = storadvise("scan", "--site", name, "--json", "--no-history")
        assert cp.returncode == 2, cp.stderr[-2000:]
        scan_file = tmp_path / "scan.json"
        scan_file.write_text(cp.stdout)
        failing = _failing(json.loads(cp.stdout))
        assert set(failing) == MANUAL | FIXABLE, failing

        slow = failing["CEPH-OSD-SLOW"]
        assert [(f["subject"], f["observed"], sorted(f["hosts"])) for f in slow] == [("3", "250", ["st01", "st02"])]
        assert "st01: 3                250               250" in slow[0]["evidence"]
        assert failing["CEPH-SLOW-OPS"][0]["evidence"][0].endswith("[WRN] SLOW_OPS: 17 slow ops, oldest one blocked "
                                                                   "for 62 sec, osd.3 has slow ops")
        assert failing["CEPH-HEALTH"][0]["observed"] == "HEALTH_WARN"
        fuse = failing["MOUNT-CEPH-FUSE"]
        assert sorted(h for f in fuse for h in f["hosts"]) == ["wn01", "wn02"]
        # the evidence is the worker's real mount table line
        assert "wn01: ceph-fuse /mnt/cephfs fuse.ceph-fuse rw,nosuid,nodev" in json.dumps(fuse)
        oc = failing["CEPH-CLIENT-OBJECT-CACHE"][0]
        assert oc["observed"] == "false" and oc["observed_type"] == "boolean" and sorted(oc["hosts"]) == ["wn01", "wn02"]
        assert "wn01: client_oc = false" in oc["evidence"]

        plan = tmp_path / "plan"
        cp = storadvise("plan", "--site", name, "--scan", str(scan_file), "--out", str(plan), "--json")
        assert cp.returncode == 0, cp.stderr[-2000:]
        planned = json.loads(cp.stdout)
        assert {m["rule"] for m in planned["manual"]} == MANUAL
        mons = ",".join(up["hosts"][h]["address"] for h in ("st01", "st02"))
        fstab = f"{mons}:/ /mnt/cephfs ceph name=admin,noatime,_netdev 0 0"
        assert any(fstab in m["text"] for m in planned["manual"] if m["rule"] == "MOUNT-CEPH-FUSE"), planned["manual"]
        assert "client_oc': !unsafe 'true'" in plan_vars_text(plan, "wn01")
        assert "ceph_client" not in plan_vars_text(plan, "st01")
        assert "takes effect at the next ceph-fuse mount" in (plan / "PLAN.md").read_text()

        ap = run_playbook(plan, "apply-tuning.yml")
        assert "Set CephFS FUSE client options in ceph.conf" in ap.stdout
        assert "client_oc = true" in conf.read_text() and "client_oc = false" not in conf.read_text()
        assert "fsid = " in conf.read_text()  # the other lines are kept
        again = run_playbook(plan, "apply-tuning.yml")
        assert "changed=0" in again.stdout.split("PLAY RECAP", 1)[1], again.stdout[-2000:]

        cp = storadvise("verify", "--site", name, "--before", str(scan_file), "--json", "--no-history")
        result = json.loads(cp.stdout)
        outcome = {(f["rule_id"], f["host"], f.get("subject")): f["outcome"] for f in result["findings"]
                   if f["rule_id"] in MANUAL | FIXABLE}
        assert {k: v for k, v in outcome.items() if k[0] in FIXABLE} == {
            ("CEPH-CLIENT-OBJECT-CACHE", "wn01", None): "fixed", ("CEPH-CLIENT-OBJECT-CACHE", "wn02", None): "fixed"}
        assert {v for k, v in outcome.items() if k[0] in MANUAL} == {"still_failing"}

        run_playbook(plan, "rollback.yml")
        assert conf.read_text() == original
    finally:
        lab_cli(["down", "--name", name], check=False)
        assert no_traces(lab_traces(name))
