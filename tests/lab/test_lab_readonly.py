"""A full scan is read-only and cleans up after itself, on every host of a lab.

Before and after ``storadvise scan`` (probes, the iperf3 mesh and the active efficiency test, which
start servers on the hosts), every host's network sysctls, firewall ruleset, processes, listening
sockets and the files under /etc, /var and /run it sees (its own mount namespace) are recorded:
they must be identical. Volatile counters (conntrack counts, entropy, packet counters) and the
machine's own logs and caches (/var/log, /var/cache, /var/lib/apt, /var/tmp: other work on this
machine writes there) are left out of the comparison.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.lab.conftest import SMALL_SCENARIO, lab_cli, require_root

pytestmark = [pytest.mark.root, pytest.mark.slow]

NAME = "t-readonly"
_VOLATILE_SYSCTL = re.compile(r"(count|random|entropy|stat|_seq|hash|boot_id|uuid|inotify)", re.I)
_SKIP_DIRS = ("/var/log", "/var/cache", "/var/lib/apt", "/var/tmp", "/var/lib/dpkg", "/var/lib/systemd",
              "/var/spool", "/var/mail", "/var/backups", "/run/storadvise-test-labs", "/var/lib/docker")

SNAPSHOT = r'''
import hashlib, json, os, sys
skip = tuple(sys.argv[1:])
files = {}
for top in ("/etc", "/var", "/run"):
    for d, dirs, names in os.walk(top):
        if d.startswith(skip):
            dirs[:] = []
            continue
        dirs[:] = [x for x in dirs if not os.path.join(d, x).startswith(skip)]
        for n in names:
            p = os.path.join(d, n)
            try:
                st = os.lstat(p)
            except OSError:
                continue
            files[p] = (st.st_mode, st.st_size, int(st.st_mtime))
print(json.dumps(files))
'''


def _in_host(pid: int, argv: list[str], text: str | None = None) -> str:
    cp = subprocess.run(["nsenter", "-t", str(pid), "-n", "-m", "--", *argv], capture_output=True, text=True,
                        input=text, timeout=120)
    return cp.stdout


def _snapshot(rec) -> dict:
    sshd = {host: pid for pid, what, host in rec.pids() if what == "sshd"}
    out = {}
    for host, pid in sorted(sshd.items()):
        ns = rec.hosts[host]["ns"]
        sysctls = {}
        for line in _in_host(pid, ["sysctl", "-a"]).splitlines():
            k, _, v = line.partition(" = ")
            if k.startswith("net.") and not _VOLATILE_SYSCTL.search(k):
                sysctls[k] = v
        nft = re.sub(r"counter packets \d+ bytes \d+", "counter", _in_host(pid, ["nft", "list", "ruleset"]))
        ipt = [re.sub(r"\[\d+:\d+\]", "", ln) for ln in _in_host(pid, ["iptables-save"]).splitlines()
               if not ln.startswith("#")]
        pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()
        procs = sorted(Path(f"/proc/{p}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
                       for p in pids if Path(f"/proc/{p}/cmdline").exists())
        listening = sorted(ln.split()[0] + " " + ln.split()[4] for ln in _in_host(pid, ["ss", "-Hltnu"]).splitlines() if ln.strip())
        files = json.loads(_in_host(pid, [sys.executable, "-c", SNAPSHOT, *_SKIP_DIRS]))
        out[host] = {"sysctls": sysctls, "nft": nft, "iptables": ipt, "processes": procs, "listening": listening,
                     "files": files}
    return out


@pytest.fixture(scope="module")
def readonly_lab(lab_registry: Path, tmp_path_factory: pytest.TempPathFactory):
    require_root()
    from advisor.lab.records import LabRecord

    tmp = tmp_path_factory.mktemp("readonly")
    scen = yaml.safe_load(SMALL_SCENARIO)
    scen["site"]["extensions"] = {"efficiency": {"source": {"host": "st1"}, "hosts": ["worker"], "mb": 16}}
    scen["site"]["mesh"].update({"duration": 2, "omit": 0, "parallel": 1})
    (tmp / "scen.yml").write_text(yaml.safe_dump(scen, sort_keys=False))
    try:
        lab_cli(["up", "--scenario", str(tmp / "scen.yml"), "--name", NAME, "--json"], timeout=600)
        yield {"rec": LabRecord.load(NAME), "tmp": tmp}
    finally:
        lab_cli(["down", "--name", NAME], check=False)


def test_full_scan_changes_nothing_on_any_host(readonly_lab: dict) -> None:
    rec, tmp = readonly_lab["rec"], readonly_lab["tmp"]
    before = _snapshot(rec)
    cp = subprocess.run([sys.executable, "-m", "advisor.cli", "scan", "--site", rec.site_file, "--sample-seconds", "0.2",
                         "-o", str(tmp / "scan.json"), "--fail-on", "critical"],
                        capture_output=True, text=True, timeout=900)
    assert cp.returncode in (0, 3), cp.stderr[-2000:]
    report = json.loads((tmp / "scan.json").read_text())
    assert report["mesh"] and report["mesh"]["paths"], "the mesh ran"
    assert report["efficiency"] is not None, "the active test ran"
    time.sleep(1.0)  # servers stopped by the scan have exited
    after = _snapshot(rec)
    for host in before:
        for what in before[host]:
            if what == "files":
                changed = {p for p in set(before[host]["files"]) | set(after[host]["files"])
                           if before[host]["files"].get(p) != after[host]["files"].get(p)}
                assert not changed, (host, sorted(changed)[:20])
            else:
                assert before[host][what] == after[host][what], (host, what)
