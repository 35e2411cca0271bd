"""The fault suite's lab (tests/lab/test_lab_faults.py, bench/bench_fault_repeat.py): 16 hosts, every fault
the transport must survive injected at once, and the scan of it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import yaml

NAME = "t-faults"
CONNECT_TIMEOUT = 3.0
PROBE_TIMEOUT = 30.0  # the probes' own default (probes/probe.py)
GRACE = 5.0  # advisor/transport/ssh.py STALL_GRACE
MESH_ALLOWANCE = 40.0  # one pair, both directions, 2 s tests, servers started over SSH

SCENARIO = """
name: faults
description: sixteen small hosts for the fault suite
switches: [{name: core}]
hosts:
  - {name: "h[01:16]", roles: [worker], groups: [fleet], switch: core}
site:
  profiles: [generic]
  mesh:
    duration: 2
    omit: 0
    streams: 1
    parallel: 1
    pairs: [{a: meshpair}]
"""


def _ns_pids(ns: str) -> list[int]:
    cp = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True)
    return [int(p) for p in cp.stdout.split() if p.isdigit()]


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def signal_pids(pids: list[int], sig: int) -> None:
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def _when_probing(ns: str, action, stop: threading.Event, timeout: float = 60.0) -> None:
    """Call ``action()`` once a probe of the batch wrapper runs in ``ns`` (the FIFO holds it)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end and not stop.is_set():
        if any("storadvise." in _cmdline(p) and "sh" in _comm(p) for p in _ns_pids(ns)):
            time.sleep(0.5)
            action()
            return
        time.sleep(0.1)


def inject_and_scan(lab: dict) -> dict:
    rec, tmp = lab["rec"], lab["tmp"]
    d = rec.dir
    hosts = rec.hosts
    sshd = {host: pid for pid, what, host in rec.pids() if what == "sshd"}
    ns = {h: hosts[h]["ns"] for h in hosts}
    site = yaml.safe_load(Path(rec.site_file).read_text())
    for h in site["hosts"]:
        if h["name"] in ("h07", "h08"):
            h.setdefault("groups", []).append("meshpair")
    # h01: down
    signal_pids([sshd["h01"]], signal.SIGKILL)
    # h03: a wrong host key
    wrong = tmp / "wrong_known_hosts"
    other = (d / "hosts" / "h04" / "ssh_host_ed25519_key.pub").read_text().split()[:2]
    wrong.write_text(f"{hosts['h03']['address']} {' '.join(other)}\n")
    next(h for h in site["hosts"] if h["name"] == "h03")["known_hosts"] = str(wrong)
    # h04: 100% loss (TCP connects hang)
    # (no netem in this kernel: an nft table in h04's namespace drops every packet it receives)
    subprocess.run(["ip", "netns", "exec", ns["h04"], "nft", "-f", "-"], check=True, text=True,
                   input="table inet sa_fault_loss {\n chain drop_all {\n  type filter hook input priority 0; policy drop;\n }\n}\n")
    # h02, h05, h06: a probe that blocks on a FIFO in the host's private /etc/sysctl.d
    for h in ("h02", "h05", "h06"):
        os.mkfifo(d / "hosts" / h / "sysctl.d" / "50-never-ends.conf")
    # h07: no iperf3 (a non-executable file over the binary, in h07's own mount namespace)
    blank = d / "hosts" / "h07" / "no-iperf3"
    blank.write_text("")
    blank.chmod(0o644)
    subprocess.run(["nsenter", "-t", str(sshd["h07"]), "-m", "--", "mount", "-n", "--bind", str(blank),
                    "/usr/bin/iperf3"], check=True)
    # h09: garbage; h10: an endless stream (the login shell's rc file, private to each host)
    (d / "hosts" / "h09" / "empty-bashrc").write_text("head -c 300000 /dev/urandom; exit 0\n")
    (d / "hosts" / "h10" / "empty-bashrc").write_text("yes 'storadvise endless garbage'\n")
    site_file = tmp / "site.yml"
    site_file.write_text(yaml.safe_dump(site, sort_keys=False))

    stop = threading.Event()

    def kill_sshd_h02() -> None:
        signal_pids([p for p in _ns_pids(ns["h02"]) if _comm(p) == "sshd"], signal.SIGKILL)

    def freeze_h06() -> None:
        pids = _ns_pids(ns["h06"])
        lab["stopped"].extend(pids)
        signal_pids(pids, signal.SIGSTOP)

    threads = [threading.Thread(target=_when_probing, args=(ns["h02"], kill_sshd_h02, stop), daemon=True),
               threading.Thread(target=_when_probing, args=(ns["h06"], freeze_h06, stop), daemon=True)]
    for t in threads:
        t.start()
    report = tmp / "scan.json"
    t0 = time.monotonic()
    cp = subprocess.run([sys.executable, "-m", "advisor.cli.root", "scan", "--site", str(site_file), "--connect-timeout",
                         str(CONNECT_TIMEOUT), "--sample-seconds", "0.2", "--no-efficiency", "--fail-on", "critical",
                         "-o", str(report)],
                        capture_output=True, text=True, timeout=600)
    took = time.monotonic() - t0
    stop.set()
    print(f"fault scan took {took:.1f}s")
    return {"cp": cp, "took": took, "report": json.loads(report.read_text()) if report.exists() else None}
