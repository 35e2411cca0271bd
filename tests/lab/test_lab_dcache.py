"""The loop on the dcache lab scenario (advisor/lab/scenarios/dcache.yml: two pool nodes with two pools each
and a door node, their dCache files and dcache command emulated by the lab): scan finds the dcache rule
pack's faults with the file lines as evidence -> plan writes dcache_tuning variables and says the changes
take effect at the next domain restart -> real ansible-playbook apply-tuning.yml edits the layout and setup
files without restarting a domain -> verify says they are fixed; a second apply changes nothing;
rollback.yml restores the files; an apply with the restart asked restarts exactly the changed domains, which
then run the new files; a stopped domain fails DCACHE-DOMAIN-RUNNING (dcache status). Real namespace hosts and sshd; needs root (CI is root)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path


import pytest

from advisor.lab.emulators.dcache import domain_state, runs_current_files
from tests.support.ansible import run_playbook
from tests.support.cli import storadvise
from tests.support.lab import REPO, lab_cli, lab_traces, no_traces, require_root, ssh
from tests.support.plan_files import plan_vars_text

pytestmark = pytest.mark.usefixtures("ansible_playbook")

SCENARIO = REPO / "advisor" / "lab" / "scenarios" / "dcache.yml"
BIN = Path(sys.executable).parent
DCACHE_FAILS = {"DCACHE-POOL-DIRECT-MEMORY", "DCACHE-POOL-MOVER-MAX-ACTIVE", "DCACHE-SRM-TCP-BUFFER"}


def _fails(scan: dict) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for f in scan["findings"]:
        if f["rule_id"].startswith("DCACHE-") and f["status"] == "fail":
            out.setdefault(f["rule_id"], []).append(f)
    return out


def test_dcache_loop(lab_registry: Path, tmp_path: Path) -> None:
    require_root()
    name = f"t-dc{os.getpid() % 10000}"
    try:
        up = json.loads(lab_cli(["up", "--scenario", str(SCENARIO), "--name", name, "--json"]).stdout)
        lab_dir = Path(up["state_dir"])
        emu = lab_dir / "emu"
        pool01 = up["hosts"]["pool01"]["address"]
        # /etc/dcache needs an overlay on the host's /etc: the host's own sysctl.d stays bound over it
        (lab_dir / "hosts" / "pool01" / "sysctl.d" / "99-marker.conf").write_text("# marker\n")
        assert "99-marker.conf" in ssh(lab_dir, pool01, "ls /etc/sysctl.d").stdout.split()
        assert ssh(lab_dir, pool01, "/opt/d-cache/bin/dcache status").stdout.startswith("DOMAIN ")
        assert not Path("/etc/dcache").exists() or not (Path("/etc/dcache") / "layouts" / "pool01.conf").exists()
        restarts0 = {h: len(domain_state(emu, h)["restarts"]) for h in ("pool01", "pool02", "door01")}
        cp = storadvise("scan", "--site", name, "--json", "--no-history")
        assert cp.returncode in (0, 2), cp.stderr[-2000:]
        scan_file = tmp_path / "scan.json"
        scan_file.write_text(cp.stdout)
        fails = _fails(json.loads(cp.stdout))
        assert set(fails) == DCACHE_FAILS, fails
        running = [f for f in json.loads(cp.stdout)["findings"] if f["rule_id"] == "DCACHE-DOMAIN-RUNNING"]
        assert sorted(f["subject"] for f in running) == ["doorsDomain", "pool01_poolsDomain", "pool02_poolsDomain"]
        assert all(f["status"] == "pass" for f in running)
        mem = fails["DCACHE-POOL-DIRECT-MEMORY"]
        assert sorted((f["hosts"][0], f["subject"]) for f in mem) == [("pool01", "pool01_poolsDomain"),
                                                                       ("pool02", "pool02_poolsDomain")]
        assert all("unset (dCache default 512m)" in json.dumps(f["evidence"]) for f in mem)
        movers = fails["DCACHE-POOL-MOVER-MAX-ACTIVE"]
        assert sorted(f["subject"] for f in movers) == ["pool01_1", "pool01_2", "pool02_1", "pool02_2"]
        assert all(f["observed_value"] == 20 and "mover set max active -queue=regular 20" in json.dumps(f["evidence"])
                   for f in movers)
        srm = fails["DCACHE-SRM-TCP-BUFFER"]
        assert [(f["hosts"], f["subject"], f["observed"]) for f in srm] == [(["door01"], "doorsDomain", "1048576")]

        plan = tmp_path / "plan"
        cp = storadvise("plan", "--site", name, "--scan", str(scan_file), "--out", str(plan), "--json")
        assert cp.returncode == 0, cp.stderr[-2000:]
        hv = plan_vars_text(plan, "pool01")
        assert "dcache_layout_settings" in hv and "dcache_setup_settings" in hv and "dcache_restart: false" in hv
        md = (plan / "PLAN.md").read_text()
        # PLAN.md folds the two pools of a host into one row (pool01_[1-2]) and escapes its cells
        plain = md.replace("\\", "")
        assert "takes effect at next domain restart" in md and "dCache pool pool01_[1-2]: mover set max active" in plain

        ap = run_playbook(plan, "apply-tuning.yml")
        assert "takes effect at next domain restart" in ap.stdout
        again = run_playbook(plan, "apply-tuning.yml")
        assert "changed=0" in again.stdout.split("PLAY RECAP", 1)[1], again.stdout[-2000:]
        layout = (emu / "dcache" / "pool01" / "etc" / "layouts" / "pool01.conf").read_text()
        assert "[${host.name}_poolsDomain]\ndcache.java.memory.direct = 2147483648\n" in layout
        setup = (emu / "dcache" / "pool02" / "lib" / "pools" / "pool02_1" / "setup").read_text()
        assert "mover set max active -queue=regular 100" in setup and "-queue=regular 20" not in setup
        assert "[doorsDomain/srm]\nsrm.limits.transfer-tcp-buffer.size = 4194304" in (
            emu / "dcache" / "door01" / "etc" / "layouts" / "door01.conf").read_text()
        # no restart asked: the domains still run what they read at start
        assert {h: len(domain_state(emu, h)["restarts"]) for h in restarts0} == restarts0
        assert not runs_current_files(emu, "pool01", "pool01_poolsDomain")

        cp = storadvise("verify", "--site", name, "--before", str(scan_file), "--json", "--no-history")
        result = json.loads(cp.stdout)
        dc = [f for f in result["findings"] if f["rule_id"] in DCACHE_FAILS]
        assert dc and all(f["outcome"] == "fixed" for f in dc), dc

        run_playbook(plan, "rollback.yml")
        cp = storadvise("scan", "--site", name, "--json", "--no-history")
        assert set(_fails(json.loads(cp.stdout))) == DCACHE_FAILS
        assert "-queue=regular 20" in (emu / "dcache" / "pool02" / "lib" / "pools" / "pool02_1" / "setup").read_text()

        # the site lets the role restart: exactly the changed domains restart and run the new files
        ap = run_playbook(plan, "apply-tuning.yml", "-e", "dcache_restart=true")
        st = {h: domain_state(emu, h)["restarts"][restarts0[h]:] for h in restarts0}
        assert {h: [r["domain"] for r in v] for h, v in st.items()} == {
            "pool01": ["pool01_poolsDomain"], "pool02": ["pool02_poolsDomain"], "door01": ["doorsDomain"]}
        assert runs_current_files(emu, "pool01", "pool01_poolsDomain") and runs_current_files(emu, "door01", "doorsDomain")

        # a stopped domain: dcache status (the emulator prints dCache's table) says so, the scan fails it
        ssh(lab_dir, pool01, "/opt/d-cache/bin/dcache stop pool01_poolsDomain")
        cp = storadvise("scan", "--site", name, "--json", "--no-history")
        down = [f for f in json.loads(cp.stdout)["findings"] if f["rule_id"] == "DCACHE-DOMAIN-RUNNING" and f["status"] == "fail"]
        assert [(f["hosts"], f["subject"]) for f in down] == [(["pool01"], "pool01_poolsDomain")]
        assert "pool01_poolsDomain stopped dcache /var/log/dcache/pool01_poolsDomain.log" in json.dumps(down[0]["evidence"])
    finally:
        lab_cli(["down", "--name", name], check=False)
        assert no_traces(lab_traces(name))
