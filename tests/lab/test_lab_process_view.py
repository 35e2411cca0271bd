"""Every lab host has its own process view (its own PID namespace and /proc, advisor/lab/hosts.py).

A site with an XRootD origin (started with at most 1024 open files) and an XCache beside dCache pool
and door nodes that run no xrootd: over real OpenSSH each host's ``ps`` lists only its own processes
(sshd is its pid 1); XROOTD-OPEN-FILES-LIMIT fires on the hosts that run xrootd and is not applicable
on the dCache nodes; the pids the lab records are the machine's (not the hosts' own numbers), and
a reboot of the origin's host starts xrootd again (a new pid, on that host only); ``down`` leaves no
process behind. Real namespaces, sshd and xrootd; needs root (CI is root)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.lab import REPO, lab_cli, lab_traces, no_traces, require_root, ssh

SCENARIO = """
name: procview
description: an XRootD origin and an XCache beside dCache pools and a door
switches:
  - name: core
hosts:
  - {name: xrd01, roles: [storage], groups: [xrootd-servers]}
  - {name: cache01, roles: [cache], groups: [xcache]}
  - {name: pool01, roles: [storage], groups: [pools]}
  - {name: door01, roles: [door], groups: [doors]}
xcache:
  host: cache01
  origin: {host: xrd01, files: 1, nofile: 1024}
dcache: {pools: [pools], doors: [doors], pools_per_host: 1}
site:
  storage_kind: xrootd
  profiles: [generic]
"""


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def test_each_host_sees_only_its_processes(lab_registry: Path, tmp_path: Path) -> None:
    require_root()
    name = f"t-pv{os.getpid() % 10000}"
    scen = tmp_path / "procview.yml"
    scen.write_text(SCENARIO)
    try:
        up = json.loads(lab_cli(["up", "--scenario", str(scen), "--name", name, "--json"], timeout=600).stdout)
        d = Path(up["state_dir"])
        hosts = up["hosts"]
        views = {}
        for h, info in hosts.items():
            out = ssh(d, info["address"], "ps -eo pid=,comm=").stdout.split("\n")
            views[h] = {(int(l.split()[0]), l.split()[1]) for l in out if l.strip()}
        for h, view in views.items():
            assert (1, "sshd") in view, (h, view)
        xrootd = {h for h, view in views.items() if any(c == "xrootd" for _p, c in view)}
        assert xrootd == {"xrd01", "cache01"}, views

        # the lab records the machine's pids: each is the process it names, in that host's network namespace
        status = {l["name"]: l for l in json.loads(lab_cli(["status", "--json"]).stdout)}[name]
        for h in status["hosts"]:
            assert h["sshd_alive"] and h["iperf3_alive"], h
            assert _comm(h["iperf3_pid"]) == "iperf3", h
        pids = [(int(p), w, h) for p, w, h in (l.split() for l in (d / "pids").read_text().splitlines())]
        for pid, what, _h in pids:
            if what.startswith("xrootd-"):
                assert _comm(pid) == "xrootd", (pid, what)

        cp = subprocess.run([sys.executable, "-c", "import sys; from advisor.cli.root import main; sys.exit(main())",
                             "scan", "--site", name, "--json", "--no-history"],
                            capture_output=True, text=True, timeout=600, cwd=str(REPO), env={**os.environ})
        assert cp.returncode in (0, 2), cp.stderr[-2000:]
        by_status: dict[str, set[str]] = {}
        for f in json.loads(cp.stdout)["findings"]:
            if f["rule_id"] == "XROOTD-OPEN-FILES-LIMIT":
                by_status.setdefault(f["status"], set()).update(f["hosts"])
        assert "xrd01" in by_status.get("fail", set()), by_status
        assert by_status.get("fail", set()) <= {"xrd01", "cache01"}, by_status
        assert {"pool01", "door01"} <= by_status.get("not_applicable", set()), by_status
        # a reboot of the origin's host starts xrootd again from its file: a new pid, recorded as the machine's,
        # seen on that host only
        rb = json.loads(lab_cli(["reboot", "xrd01", "--name", name, "--json"]).stdout)
        assert rb["emulations_rebooted"] == ["xcache"] and "origin" in rb["emulations"]["xcache"], rb
        new = [(int(p), w) for p, w, h in (l.split() for l in (d / "pids").read_text().splitlines())
               if h == "xrd01" and w == "xrootd-origin"]
        assert len(new) == 2 and _comm(new[-1][0]) == "xrootd" and _comm(new[0][0]) != "xrootd", new
        assert "xrootd" in ssh(d, hosts["xrd01"]["address"], "ps -eo comm=").stdout.split()
        assert "xrootd" not in ssh(d, hosts["pool01"]["address"], "ps -eo comm=").stdout.split()
        recorded = [pid for pid, _w, _h in pids] + [p for p, _w in new]
    finally:
        lab_cli(["down", "--name", name], check=False)
    assert no_traces(lab_traces(name)), lab_traces(name)
    from advisor.lab.netns import pid_alive

    assert not [p for p in recorded if pid_alive(p) and _comm(p) in ("sshd", "iperf3", "xrootd", "unshare")]
