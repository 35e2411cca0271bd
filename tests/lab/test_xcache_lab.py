"""The `xcache` lab scenario end to end: `lab up` runs a real XCache (xrootd + libXrdPfc) on the
cache host in front of a real origin xrootd on the storage host, xrdcp on a worker reads through
it; `scan` finds the injected faults (pfc.ram and pfc.diskusage unset) on the live instance;
`plan` -> real `ansible-playbook apply-tuning.yml` changes its configuration and restarts it with
the lab's restart command (no systemd in a lab host); the new process runs the new values (its
own "Config effective" log block) and still serves; `verify` shows both faults fixed; `lab down`
stops the instances by pid. Needs root (CI is root). ~40 s."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from advisor.lab import netns as nx

from tests.support.lab import lab_cli, require_root, ssh

pytestmark = pytest.mark.usefixtures("ansible_playbook")

BIN = Path(sys.executable).parent


def run(*argv, cwd=None) -> subprocess.CompletedProcess:
    cp = subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True, timeout=600)
    if cp.returncode not in (0, 2):
        raise AssertionError(f"{argv[:3]} -> {cp.returncode}: {cp.stdout[-2000:]}{cp.stderr[-2000:]}")
    return cp


def _alive(pid: int) -> bool:
    return nx.pid_alive(pid)  # a zombie waiting for its reaper is not alive


def _machine_pid(d: Path, host: str) -> int:
    """The machine's pid of the host's xrootd (its pid file holds the host's own number: own PID namespace)."""
    from advisor.lab.hosts import outer_pid
    from advisor.lab.records import read_pids

    boot = [p for p, w, h in read_pids(d) if w == "sshd" and h == host][-1]
    inner = int((d / "hosts" / host / "xrootd" / "adm" / "instance.pid").read_text())
    pid = outer_pid(boot, inner)
    assert pid is not None, f"{host}: no process {inner} in the host"
    return pid


def _effective(log: Path) -> str:
    """The last "Config effective ... pfc configuration" block XrdPfc logged at start."""
    text = log.read_text(errors="replace")
    return text[text.rindex("pfc configuration:"):].split("Proxy File Cache configuration parsing", 1)[0]


def test_xcache_scenario_loop(lab_registry: Path, tmp_path: Path) -> None:
    require_root()
    name = f"xc{os.getpid()}"
    lab_cli(["up", "--scenario", "xcache", "--name", name])
    pids: list[int] = []
    try:
        d = lab_registry / name
        site = yaml.safe_load((lab_registry / "sites" / f"{name}.yml").read_text())
        addr = {h["name"]: h["address"] for h in site["hosts"]}
        cache_sd, origin_sd = d / "hosts" / "cache01" / "xrootd", d / "hosts" / "xrd01" / "xrootd"
        old = _machine_pid(d, "cache01")
        origin = _machine_pid(d, "xrd01")
        pids += [old, origin]
        assert _alive(old) and _alive(origin)
        # a worker reads through the cache; the cache keeps the file (its .cinfo, read in the cache host)
        ssh(d, addr["wn01"], f"xrdcp -f -s root://{addr['cache01']}:1094//store/file0003 /dev/null")
        cinfo = ssh(d, addr["cache01"], f"xrdpfc_print -j {cache_sd}/cache/store/file0003.cinfo").stdout
        assert '"file"' in cinfo and "file0003.cinfo" in cinfo

        scan = tmp_path / "scan.json"
        run(BIN / "storadvise", "scan", "--site", name, "--hosts", "cache", "--no-mesh", "-o", scan, "--json")
        before = {(f["rule_id"], tuple(f["hosts"])): f for f in json.loads(scan.read_text())["findings"]}
        assert before[("XCACHE-PFC-RAM-SET", ("cache01",))]["status"] == "fail"
        assert before[("XCACHE-WATERMARKS", ("cache01",))]["status"] == "fail"
        # df of the cache's own 64 MiB space: the file read above is in it
        space = before[("XCACHE-SPACE-ABOVE-HWM", ("cache01",))]
        assert space["status"] == "pass" and 0 < space["observed_value"] < 0.5, space
        assert before[("XCACHE-PROCESS-RUNNING", ("cache01",))]["status"] == "pass"
        # the live cache's .cinfo records (xrdpfc_print -j over ssh): the file read above, whole
        facts = next(h for h in json.loads(scan.read_text())["hosts"] if h["name"] == "cache01")["facts"]
        files = next(leaf for leaf in facts["xcache.cinfo"] if leaf["name"] == "/files")  # an array: one leaf
        held = {Path(f["file"]).name: f for f in json.loads(files["value"])}
        assert held["file0003"]["complete"] and held["file0003"]["block_size"] == 65536, held

        run(BIN / "storadvise", "plan", "--site", name, "--scan", scan, "--out", tmp_path / "plan",
            "--min-severity", "medium")
        ap = run(shutil.which("ansible-playbook", path=str(BIN)), "apply-tuning.yml", cwd=tmp_path / "plan")
        assert "RUNNING HANDLER [xcache : Restart the XCache instance with the site's command]" in ap.stdout
        new = _machine_pid(d, "cache01")
        pids.append(new)
        assert new != old and not _alive(old) and _alive(new)
        eff = _effective(cache_sd / "log" / "xcache" / "xrootd.log")
        assert "pfc.ram 4g" in eff, eff
        # 0.90/0.95 of the 64 MiB tmpfs, in bytes as XrdPfc prints them
        assert "pfc.diskusage 0.9 0.95" in (cache_sd / "xcache.cfg").read_text()
        # the restarted process read the new directive (XrdPfc's defaults are 0.90/0.95 too, so the
        # effective block alone would not tell)
        log = (cache_sd / "log" / "xcache" / "xrootd.log").read_text(errors="replace")
        assert "=====> pfc.diskusage 0.9 0.95" in log[log.rindex(" Starting on "):]
        ssh(d, addr["wn02"], f"xrdcp -f -s root://{addr['cache01']}:1094//store/file0004 /dev/null")

        cp = run(BIN / "storadvise", "verify", "--site", name, "--before", scan, "--hosts", "cache", "--no-mesh", "--json")
        outcome = {f["rule_id"]: f["outcome"] for f in json.loads(cp.stdout)["findings"] if f["host"] == "cache01"}
        assert outcome["XCACHE-PFC-RAM-SET"] == "fixed" and outcome["XCACHE-WATERMARKS"] == "fixed", outcome
    finally:
        lab_cli(["down", "--name", name], check=False)
    assert pids and not [p for p in pids if _alive(p)]
