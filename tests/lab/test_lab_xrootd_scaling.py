"""Client scaling over real XRootD (Goethe's runtime-per-client curve) on a lab site: a real origin
xrootd on the storage host and a real XCache (xrootd + libXrdPfc) on the cache host; the test
job's clients on two workers read the origin's files with the real xrdcp, 1, 2, 4 and 8 clients
per protocol, spread over 2 nodes. Asserts the JSON shape, plausible rates, the knee recomputed
from the measured points, the comparison plot, that the reads went through the cache, and that
`lab down` leaves no xrootd running. Needs root (CI is root). ~60 s on 2 shared cores."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from advisor.efficiency.scaling_curve import find_knee
from advisor.lab import netns as nx

from tests.support.lab import REPO, lab_cli, require_root, ssh

BIN = Path(sys.executable).parent
SCENARIO = (REPO / "advisor/lab/scenarios/xcache.yml").read_text()


def test_scaling_over_real_xrootd_and_xcache(lab_registry: Path, tmp_path: Path) -> None:
    require_root()
    name = f"xs{os.getpid()}"
    scen = tmp_path / "xcscale.yml"
    scen.write_text(SCENARIO.replace("file_size: 1m", "file_size: 2m").replace("disk: 64m", "disk: 96m"))
    lab_cli(["up", "--scenario", str(scen), "--name", name])
    pids: list[int] = []
    try:
        d = lab_registry / name
        site = yaml.safe_load((lab_registry / "sites" / f"{name}.yml").read_text())
        addr = {h["name"]: h["address"] for h in site["hosts"]}
        from advisor.lab.hosts import outer_pid
        from advisor.lab.records import read_pids

        for host in ("xrd01", "cache01"):
            # the pid file holds the host's own number (its own PID namespace): the machine's pid of it
            boot = [p for p, w, h in read_pids(d) if w == "sshd" and h == host][-1]
            pid = outer_pid(boot, int((d / "hosts" / host / "xrootd" / "adm" / "instance.pid").read_text()))
            assert pid is not None
            pids.append(pid)
        plot = tmp_path / "scaling.png"
        cp = subprocess.run([str(BIN / "storadvise"), "efficiency", "test", "--site", name, "--clients", "1,2,4,8",
                             "--protocol", "xrootd,xcache", "--nodes", "2", "--mb", "8", "--plot", str(plot), "--json"],
                            capture_output=True, text=True, timeout=600)
        assert cp.returncode == 0, cp.stderr[-2000:]
        r = json.loads(cp.stdout)
        assert r["failed"] == [] and r["source"]["protocol"] == "xrootd"
        points = r["scaling"]
        assert [(p["protocol"], p["clients"]) for p in points] == [
            (pr, c) for pr in ("xrootd", "xcache") for c in (1, 2, 4, 8)]
        for p in points:
            assert "error" not in p, p
            for key in ("clients", "nodes", "runtime_per_client_s", "rate_per_client_bps", "efficiency"):
                assert p[key] is not None, (key, p)
            assert p["nodes"] == min(2, p["clients"])
            assert sum(p["clients_per_node"].values()) == p["clients"]
            assert 0 < p["efficiency"] <= 1.2 and p["runtime_per_client_s"] > 0
            assert 1e6 < p["rate_per_client_bps"] < 20e9
            assert p["mb_per_client"] == 8  # the same work per client at every point
        for proto in ("xrootd", "xcache"):
            rows = {p["clients"]: p for p in points if p["protocol"] == proto}
            # plausible: 8 clients on 2 nodes (4 shared cores at most) cannot each beat one client alone by far,
            # and their aggregate rate is at least a single client's
            assert rows[8]["rate_per_client_bps"] < 1.5 * rows[1]["rate_per_client_bps"], rows
            assert rows[8]["aggregate_read_mbps"] * 1e6 > 0.5 * rows[1]["rate_per_client_bps"], rows
            knee = next(k["knee"] for k in r["protocols"] if k["protocol"] == proto)
            assert knee == find_knee(rows.values(), 0.25, 0.5)
            assert knee["status"] in ("found", "not-reached", "degraded-at-start")
        assert r["knee"] == r["protocols"][0]["knee"]
        assert r["plot"] == [str(plot)] and plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        # the xcache clients' reads went through the cache: it holds the files (its .cinfo records)
        held = ssh(d, addr["cache01"], f"ls {d}/hosts/cache01/xrootd/cache/store").stdout.split()
        assert any(f.endswith(".cinfo") for f in held), held
    finally:
        lab_cli(["down", "--name", name], check=False)
    for pid in pids:
        assert not nx.pid_alive(pid), pid
