"""A full scan is read-only and cleans up after itself, on every host of a lab.

Before and after ``storadvise scan`` (probes, the iperf3 mesh and the active efficiency test, which
start servers on the hosts), every host's network sysctls, firewall ruleset, processes, listening
sockets and the files under /etc, /var and /run it sees (its own mount namespace) are recorded:
they must be identical. Volatile counters (conntrack counts, entropy, packet counters) and the
machine's own logs and caches (/var/log, /var/cache, /var/lib/apt, /var/tmp: other work on this
machine writes there) are left out of the comparison.

While the scan runs, every host's listening TCP sockets are sampled (every 0.2 s): each server the
scan starts (the mesh's iperf3 servers, the active test's data server) must listen on an address
of the host, never on a wildcard (0.0.0.0, ::) that accepts anyone on any network; and the data
server, tried from a worker's namespace as a stranger (its protocol, without the run's secret),
must send no byte.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from advisor.lab.hosts import HOST_DIR_IN_HOST
from tests.support.lab import SMALL_SCENARIO

_VOLATILE_SYSCTL = re.compile(r"(count|random|entropy|stat|_seq|hash|boot_id|uuid|inotify)", re.I)
_SKIP_DIRS = ("/var/log", "/var/cache", "/var/lib/apt", "/var/tmp", "/var/lib/dpkg", "/var/lib/systemd",
              "/var/spool", "/var/mail", "/var/backups", "/run/storadvise-test-labs", "/var/lib/docker",
              # the host's own directory of the lab (its sshd's log grows with every login)
              HOST_DIR_IN_HOST)

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


_WILDCARDS = ("0.0.0.0", "*", "[::]", "::", "[::ffff:0.0.0.0]")
_STRANGER = """import socket, struct, sys
got = 0
try:
    s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=3)
    s.sendall(struct.pack("!Q", 4096))
    s.settimeout(3)
    while got < 4096:
        b = s.recv(4096 - got)
        if not b:
            break
        got += len(b)
except OSError:
    pass
print(got)
"""


def _listeners(ns: str) -> set[tuple[str, str, str]]:
    """(address, port, program) of the namespace's listening TCP sockets."""
    cp = subprocess.run(["ip", "netns", "exec", ns, "ss", "-Hltnp"], capture_output=True, text=True, timeout=30)
    out = set()
    for ln in cp.stdout.splitlines():
        f = ln.split()
        if len(f) >= 4:
            addr, _, port = f[3].rpartition(":")
            prog = re.search(r'users:\(\("([^"]+)"', ln)
            out.add((addr.split("%")[0], port, prog.group(1) if prog else ""))
    return out


class ListenerWatch(threading.Thread):
    """Samples every host's listeners while the scan runs and keeps those the scan added; tries
    each new python listener on ``source`` (the active test's data server) once as a stranger."""

    def __init__(self, rec, source: str, stranger_ns: str):
        super().__init__(daemon=True)
        self.rec, self.source, self.stranger_ns = rec, source, stranger_ns
        self.before = {h: _listeners(info["ns"]) for h, info in rec.hosts.items()}
        self.seen: dict[str, set] = {h: set() for h in rec.hosts}
        self.stranger: dict[tuple[str, str], int] = {}
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            for host, info in self.rec.hosts.items():
                new = _listeners(info["ns"]) - self.before[host]
                self.seen[host] |= new
                for addr, port, prog in new:
                    if host == self.source and prog.startswith("python") and (addr, port) not in self.stranger:
                        target = self.rec.hosts[host]["address"] if addr in _WILDCARDS else addr.strip("[]")
                        cp = subprocess.run(["ip", "netns", "exec", self.stranger_ns, sys.executable, "-c", _STRANGER,
                                             target, port], capture_output=True, text=True, timeout=30)
                        self.stranger[(addr, port)] = int(cp.stdout.strip() or 0)
            time.sleep(0.2)


@pytest.fixture(scope="module")
def readonly_lab(shared_labs, tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("readonly")
    scen = yaml.safe_load(SMALL_SCENARIO)
    scen["site"]["extensions"] = {"efficiency": {"source": {"host": "st1"}, "hosts": ["worker"], "mb": 16}}
    scen["site"]["mesh"].update({"duration": 2, "omit": 0, "parallel": 1})
    return {"rec": shared_labs.up(yaml.safe_dump(scen, sort_keys=False)), "tmp": tmp}


def test_full_scan_changes_nothing_on_any_host(readonly_lab: dict) -> None:
    rec, tmp = readonly_lab["rec"], readonly_lab["tmp"]
    before = _snapshot(rec)
    watch = ListenerWatch(rec, "st1", rec.hosts["wn1"]["ns"])
    watch.start()
    try:
        cp = subprocess.run([sys.executable, "-m", "advisor.cli.root", "scan", "--site", rec.site_file, "--sample-seconds",
                             "0.2", "-o", str(tmp / "scan.json"), "--fail-on", "critical"],
                            capture_output=True, text=True, timeout=900)
    finally:
        watch.stop.set()
        watch.join(60)
    assert cp.returncode in (0, 3), cp.stderr[-2000:]
    added = {h: sorted(v) for h, v in watch.seen.items() if v}
    assert added, "no server of the scan was seen listening (the sampling missed them)"
    wild = {h: [a for a in v if a[0] in _WILDCARDS] for h, v in added.items()}
    assert not any(wild.values()), f"servers of the scan listening on every address: {wild}"
    assert watch.stranger, f"the data server on st1 was not seen: {added}"
    assert not any(watch.stranger.values()), f"a stranger got data from the scan's data server: {watch.stranger}"
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
