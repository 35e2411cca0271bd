"""Issue 12's report, on a lab of another shape than ifca (a dCache-like site: a door, pools,
a worker): the plan holds only what can and must change, says what it cannot apply and why, and
real ansible-playbook applies the rest without aborting; verify finds the faults fixed.

- net.core.wmem_max is proposed (NET-CORE-BUFFER-MAX: 1 Gb/s wants 64 MiB) but read-only inside
  a network namespace: "Cannot apply here", never sent to Ansible;
- net.core.rmem_max is covered by a site waiver's ``settings:``: "Cannot apply here" (waived);
- pool01 runs tcp_sack=1 but a vendor file persists 0: a file-only change;
- door01 runs and persists tcp_sack=0: a runtime-and-file change;
- pool02's tcp_wmem is immutable by the site: "Cannot apply here" (pool01's is planned).
Needs root (CI is root). About 40 s on the 2-core CI box (lab up/down, two scans, two applies)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.usefixtures("ansible_playbook")

BIN = Path(sys.executable).parent

SCENARIO = """
name: dcachelike
description: a dCache-like site (door, pools, a worker) with the faults of issue 12
hosts:
  - name: door01
    roles: [door]
    groups: [doors]
    sysctls: {net.ipv4.tcp_sack: 0}
    persist_sysctls: {file: 60-door-tuning.conf, comment: "an old door tuning"}
  - name: pool01
    roles: [storage]
    groups: [pools]
    persist_sysctls:
      file: 70-pool-vendor.conf
      comment: "a vendor file: applied at the next boot, not now"
      values: {net.ipv4.tcp_sack: 0}
  - name: pool02
    roles: [storage]
    groups: [pools]
  - name: wn01
    roles: [worker]
    groups: [workers]
site:
  storage_kind: dcache
  profiles: [generic]
  waivers:
    - settings: [net.core.rmem_max]
      hosts: "*"
      justification: the kernel team owns the core buffer maxima
  immutable:
    - {key: net.ipv4.tcp_wmem, hosts: "pool02", reason: "pool02 is a vendor appliance"}
"""


def run(*argv, cwd=None, ok=(0, 2, 3)):
    cp = subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True, timeout=900)
    if ok is not None and cp.returncode not in ok:
        raise AssertionError(f"{argv[:3]} -> {cp.returncode}\n{cp.stdout[-3000:]}\n{cp.stderr[-3000:]}")
    return cp


def test_issue12_shape_plan_and_apply(lab_registry, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root (network namespaces)")
    playbook = shutil.which("ansible-playbook", path=str(BIN)) or shutil.which("ansible-playbook")
    scen = tmp_path / "dcachelike.yml"
    scen.write_text(SCENARIO)
    name = f"shape{os.getpid()}"
    run(BIN / "storadvise", "lab", "up", "--scenario", scen, "--name", name, ok=(0,))
    try:
        scan = tmp_path / "scan.json"
        run(BIN / "storadvise", "scan", "--site", name, "-o", scan, "--json")
        cp = run(BIN / "storadvise", "plan", "--site", name, "--scan", scan, "--out", tmp_path / "plan", "--json")
        plan = json.loads(cp.stdout)
        cannot = {(c["host"], c["key"]): c["reason"] for c in plan["cannot_apply"]}
        changes = {(c["host"], c["key"]): c for c in plan["changes"]}
        for h in ("door01", "pool01", "pool02", "wn01"):
            assert "read-only /proc/sys entry" in cannot[(h, "net.core.wmem_max")], cannot
            assert cannot[(h, "net.core.rmem_max")] == "the site waives this setting: the kernel team owns the core buffer maxima"
            assert (h, "net.core.wmem_max") not in changes and (h, "net.core.rmem_max") not in changes
        assert cannot[("pool02", "net.ipv4.tcp_wmem")] == "immutable on this site: pool02 is a vendor appliance"
        assert ("pool01", "net.ipv4.tcp_wmem") in changes  # NET-TCP-BUFFER-MAX: 4 MiB < 32 MiB at 1 Gb/s
        sack = changes[("pool01", "net.ipv4.tcp_sack")]
        assert (sack["runtime"], sack["persisted"], sack["target"], sack["scope"]) == ("1", "0", "1", "persisted")
        door = changes[("door01", "net.ipv4.tcp_sack")]
        assert (door["runtime"], door["persisted"], door["scope"]) == ("0", "0", "both")
        for h, v in plan["hosts"].items():
            assert "net.core.wmem_max" not in v["vars"].get("network_tuning_sysctls", {}), h
        md = (tmp_path / "plan" / "PLAN.md").read_text()
        assert "## Cannot apply here" in md and "persisted file only (the runtime value is already right)" in md

        ap = run(playbook, "apply-tuning.yml", cwd=tmp_path / "plan", ok=None)
        assert ap.returncode == 0, ap.stdout[-3000:]
        again = run(playbook, "apply-tuning.yml", cwd=tmp_path / "plan", ok=(0,))
        assert "changed=0" in again.stdout.split("PLAY RECAP", 1)[1] and "changed=1" not in again.stdout.split("PLAY RECAP", 1)[1]

        cp = run(BIN / "storadvise", "verify", "--site", name, "--before", scan, "--json", "--no-mesh", "--no-efficiency")
        result = json.loads(cp.stdout)
        outcome = {(f["rule_id"], f["host"], f.get("subject")): f["outcome"] for f in result["findings"]}
        assert outcome[("NET-TCP-SACK", "door01", None)] == "fixed", outcome
        assert outcome[("NET-SYSCTL-NOT-PERSISTED", "pool01", "net.ipv4.tcp_sack")] == "fixed", outcome
        assert not [k for k, o in outcome.items() if o == "new"], outcome
    finally:
        run(BIN / "storadvise", "lab", "down", "--name", name, ok=None)
