"""The fault suite: a 16-host lab with every fault the transport must survive, all at once.

h01 down (its sshd killed before the scan); h02 sshd killed while its probes run; h03 a wrong host
key; h04 behind a 100%-loss link (TCP connects hang; an nft
drop-everything table in its namespace, as this kernel has no netem); h05 a command that never returns (a FIFO in
its /etc/sysctl.d, read by the sysctl probe); h06 frozen mid-scan (every process of the host
stopped with SIGSTOP while its probes run); h07 without iperf3 (in the mesh with h08); h09 answers
with garbage (its login shell prints random bytes and exits); h10 answers with an endless stream.
h11-h16 and h08 are healthy.

The scan must finish within its budget (connect timeout + one probe's timeout + the grace, plus
the mesh of one pair), keep every healthy host's results, name each failure once per host with
its cause, and exit 3. Hosts are cheap (no GPFS, no SAN): CI share about 1.5 minutes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

from tests.support.lab import lab_cli, require_root

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


def _signal(pids: list[int], sig: int) -> None:
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


@pytest.fixture(scope="module")
def fault_lab(lab_registry: Path, tmp_path_factory: pytest.TempPathFactory):
    require_root()
    from advisor.lab.records import LabRecord

    tmp = tmp_path_factory.mktemp("faults")
    scen = tmp / "faults.yml"
    scen.write_text(SCENARIO)
    stopped: list[int] = []
    try:
        t0 = time.monotonic()
        lab_cli(["up", "--scenario", str(scen), "--name", NAME, "--json"], timeout=600)
        print(f"fault lab up in {time.monotonic() - t0:.1f}s")
        rec = LabRecord.load(NAME)
        yield {"rec": rec, "tmp": tmp, "stopped": stopped}
    finally:
        _signal(stopped, signal.SIGCONT)
        t0 = time.monotonic()
        lab_cli(["down", "--name", NAME], check=False)
        print(f"fault lab down in {time.monotonic() - t0:.1f}s")


def _inject_and_scan(lab: dict) -> dict:
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
    _signal([sshd["h01"]], signal.SIGKILL)
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
        _signal([p for p in _ns_pids(ns["h02"]) if _comm(p) == "sshd"], signal.SIGKILL)

    def freeze_h06() -> None:
        pids = _ns_pids(ns["h06"])
        lab["stopped"].extend(pids)
        _signal(pids, signal.SIGSTOP)

    threads = [threading.Thread(target=_when_probing, args=(ns["h02"], kill_sshd_h02, stop), daemon=True),
               threading.Thread(target=_when_probing, args=(ns["h06"], freeze_h06, stop), daemon=True)]
    for t in threads:
        t.start()
    report = tmp / "scan.json"
    t0 = time.monotonic()
    cp = subprocess.run([sys.executable, "-m", "advisor.cli", "scan", "--site", str(site_file), "--connect-timeout",
                         str(CONNECT_TIMEOUT), "--sample-seconds", "0.2", "--no-efficiency", "--fail-on", "critical",
                         "-o", str(report)],
                        capture_output=True, text=True, timeout=600)
    took = time.monotonic() - t0
    stop.set()
    print(f"fault scan took {took:.1f}s")
    return {"cp": cp, "took": took, "report": json.loads(report.read_text()) if report.exists() else None}


@pytest.fixture(scope="module")
def scanned(fault_lab: dict) -> dict:
    return _inject_and_scan(fault_lab)


def test_scan_finishes_within_budget_and_exits_3(scanned: dict) -> None:
    cp = scanned["cp"]
    assert cp.returncode == 3, cp.stderr[-2000:]
    assert "Traceback" not in cp.stderr
    budget = CONNECT_TIMEOUT + PROBE_TIMEOUT + GRACE + MESH_ALLOWANCE + 15.0
    assert scanned["took"] < budget, f"scan took {scanned['took']:.0f}s, budget {budget:.0f}s"


def test_healthy_hosts_keep_their_results(scanned: dict) -> None:
    hosts = {h["name"]: h for h in scanned["report"]["hosts"]}
    for h in ["h08"] + [f"h{i}" for i in range(11, 17)]:
        info = hosts[h]
        assert info["reachable"], (h, info)
        statuses = info["probes"]
        assert statuses and all(s in ("ok", "not_applicable") for s in statuses.values()), (h, statuses)


def test_each_failure_named_once_per_host_with_its_cause(scanned: dict) -> None:
    findings = scanned["report"]["findings"]
    errors: dict[str, list[dict]] = {}
    for f in findings:
        if f["status"] == "error":
            for h in f["hosts"]:
                errors.setdefault(h, []).append(f)
    causes = {
        "h01": "connection refused", "h03": "host key", "h04": "timed out", "h09": "",
        "h10": "",
    }
    for h, word in causes.items():
        assert len(errors.get(h, [])) == 1, (h, [(f["rule_id"], f["message"]) for f in errors.get(h, [])])
        assert word.lower() in errors[h][0]["message"].lower(), (h, errors[h][0]["message"])
    # h02 (sshd killed), h05 (a command that never returns), h06 (frozen): reachable at first; each
    # cause is one finding, and no rule repeats it
    for h in ("h02", "h05", "h06"):
        msgs = [f["message"] for f in errors.get(h, [])]
        assert msgs and len(msgs) == len(set(msgs)), (h, msgs)
        assert all(f["rule_id"].startswith("SCAN-") for f in errors[h]), (h, [f["rule_id"] for f in errors[h]])
    assert any("timed out after 30s" in m for m in (f["message"] for f in errors["h05"])), errors["h05"]
    assert not any("after 0 s" in (f.get("message") or "") for f in findings)


def test_host_without_iperf3_is_named_in_the_mesh(scanned: dict) -> None:
    mesh = scanned["report"].get("mesh") or {}
    text = json.dumps(mesh)
    assert "h07" in text and "iperf3" in text.lower(), text[:2000]
