"""Slow lab tests: a 32-host lab up and down, and the IFCA throughput faults measured with iperf3.
Need root (CI is root)."""

from __future__ import annotations

import json
import statistics
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from advisor.lab.records import host_ns
from tests.support.lab import lab_cli, lab_traces, no_traces, require_root, root_snapshot, ssh

BIG = """
name: big
switches:
  - name: core
  - name: wn
    uplink: core
hosts:
  - name: st[01:02]
    roles: [storage]
    switch: core
    sysctls: {net.ipv4.tcp_sack: 0}
    persist_sysctls: {file: 60-gpfs-tuning.conf}
  - name: wn[01:30]
    roles: [worker]
    switch: wn
paths:
  - {from: storage, to: worker, loss: 0.2%}
gpfs:
  cluster_name: gpfs.big.lab
  nodes: [storage, worker]
  config: {pagepool: 512M}
"""


def test_32_host_lab(lab_registry: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    require_root()
    before = root_snapshot()
    scen = tmp_path / "big.yml"
    scen.write_text(BIG)
    try:
        t0 = time.monotonic()
        info = json.loads(lab_cli(["up", "--scenario", str(scen), "--name", "t-big", "--json"]).stdout)
        up_s = time.monotonic() - t0
        d = Path(info["state_dir"])
        assert len(info["hosts"]) == 32
        t1 = time.monotonic()
        with ThreadPoolExecutor(8) as ex:
            names = dict(zip(info["hosts"], ex.map(lambda h: ssh(d, info["hosts"][h]["address"], "hostname; sysctl -n net.ipv4.tcp_sack").stdout.split(),
                                                   info["hosts"])))
        ssh_s = time.monotonic() - t1
        for h, (hn, sack) in names.items():
            assert hn == h and sack == ("0" if h.startswith("st") else "1")
    finally:
        t2 = time.monotonic()
        lab_cli(["down", "--name", "t-big"], check=False)
        down_s = time.monotonic() - t2
    assert no_traces(lab_traces("t-big"))
    after = root_snapshot()
    for k in before:
        assert after[k] == before[k], k
    with capsys.disabled():
        print(f"\n32-host lab: up {up_s:.2f}s (CLI, internal {info['timings']}), ssh hostname x32 (8 parallel) "
              f"{ssh_s:.2f}s, down {down_s:.2f}s")


def iperf(ns: str, server: str, seconds: int = 5) -> float:
    cp = subprocess.run(["ip", "netns", "exec", ns, "iperf3", "-c", server, "-C", "cubic", "-t", str(seconds),
                         "-O", "1", "-J"], capture_output=True, text=True, timeout=seconds + 30)
    data = json.loads(cp.stdout)
    if "error" in data:
        raise AssertionError(f"iperf3 {ns} -> {server}: {data['error']}")
    return data["end"]["sum_received"]["bits_per_second"] / 1e6


def test_ifca_throughput_faults(lab_registry: Path, capsys: pytest.CaptureFixture) -> None:
    require_root()
    name = "t-ifca"
    try:
        info = json.loads(lab_cli(["up", "--scenario", "ifca", "--name", name, "--json"]).stdout)
        a = {h: v["address"] for h, v in info["hosts"].items()}
        ns = lambda h: host_ns(name, h)  # noqa: E731
        down = [iperf(ns("gpfs01"), a["wn01"]) for _ in range(3)]
        up = [iperf(ns("wn01"), a["gpfs01"]) for _ in range(3)]
        fw = [iperf(ns("gpfs01"), a["gpfs02"]) for _ in range(2)]
        subprocess.run(["ip", "netns", "exec", ns("gpfs02"), "iptables", "-F", "INPUT"], check=True)
        nofw = [iperf(ns("gpfs01"), a["gpfs02"]) for _ in range(2)]
        subprocess.run(["ip", "netns", "exec", ns("gpfs01"), "sysctl", "-qw", "net.ipv4.tcp_sack=1"], check=True)
        sack_on = [iperf(ns("gpfs01"), a["wn01"]) for _ in range(3)]
    finally:
        lab_cli(["down", "--name", name], check=False)
    with capsys.disabled():
        print(f"\nifca Mbit/s: gpfs01->wn01 sack=0 {[round(x) for x in down]}, sack=1 {[round(x) for x in sack_on]}; "
              f"wn01->gpfs01 {[round(x) for x in up]}; gpfs01->gpfs02 firewall {[round(x) for x in fw]}, "
              f"without {[round(x) for x in nofw]}")
    assert statistics.median(down) < 500
    assert statistics.median(up) >= 900
    assert max(fw) < 0.7 * min(nofw)
    assert statistics.median(sack_on) > 2 * statistics.median(down)


def test_clean_scenario_scan_finds_nothing_above_info(lab_registry: Path, capsys: pytest.CaptureFixture) -> None:
    """The built-in `clean` scenario, scanned for real (probes over SSH, the mesh, the active
    CPU-efficiency test): exit 0, no failed finding above info, every path within its expected
    rate, the test job CPU-bound (>= 75%)."""
    import os
    import sys

    require_root()
    name = "t-clean"
    try:
        lab_cli(["up", "--scenario", "clean", "--name", name])
        cp = subprocess.run([sys.executable, "-c", "import sys; from advisor.cli.root import main; sys.exit(main())",
                             "scan", "--site", name, "--json"], capture_output=True, text=True, timeout=600,
                            env={**os.environ})
    finally:
        lab_cli(["down", "--name", name], check=False)
    report = json.loads(cp.stdout)
    bad = [(f["rule_id"], f["severity"], f["hosts"], f.get("observed")) for f in report["findings"]
           if f["status"] in ("fail", "error") and f["severity"] != "info"]
    paths = report["mesh"]["paths"]
    with capsys.disabled():
        print(f"\nclean: exit {cp.returncode}, mesh {[(p['src'], p['dst'], round((p['measured_bps'] or 0) / 1e6)) for p in paths]}"
              f", efficiency mean {report['efficiency']['mean']:.2f}")
    assert bad == [], bad
    assert cp.returncode == 0, cp.stderr[-1000:]
    assert report["summary"]["worst_failed_severity"] in (None, "info")
    assert len(paths) == 8 and all(p["status"] == "ok" and p["measured_bps"] >= 0.8 * p["expected_bps"] for p in paths)
    assert report["efficiency"]["mean"] >= 0.75
