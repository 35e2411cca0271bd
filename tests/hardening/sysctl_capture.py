"""A capture and a saved scan made from a real network.sysctl output, for the hardening tests of the
files a site keeps (rule packs, saved scans): tests/fixtures/network/sysctl-netns-gpfs-server.txt was
captured in a network namespace of the lab (tcp_sack=0 at runtime, files persisting other values)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SYSCTL_OUTPUT = (REPO / "tests" / "fixtures" / "network" / "sysctl-netns-gpfs-server.txt").read_text()


def cli(*args, cwd: Path = REPO, timeout: float = 180) -> subprocess.CompletedProcess:
    """``storadvise ARGS`` in a child process, its output captured."""
    return subprocess.run([sys.executable, "-m", "advisor.cli.root", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=timeout)


def sysctl_capture(directory: Path, congestion: dict[str, str] | None = None) -> Path:
    """A capture (format 1) of site ``older``: per host the fixture's output, with the host's own
    ``tcp_congestion_control`` where ``congestion`` gives one (default: one host, gpfs01, as captured)."""
    hosts = congestion or {"gpfs01": "bbr"}
    cap = directory / "capture"
    for host, value in hosts.items():
        d = cap / "hosts" / host
        d.mkdir(parents=True)
        out = SYSCTL_OUTPUT.replace("net.ipv4.tcp_congestion_control\tbbr", f"net.ipv4.tcp_congestion_control\t{value}")
        (d / "network.sysctl.out").write_text(out)
    (cap / "manifest.json").write_text(json.dumps({
        "capture_format": 1, "collected_at": "2026-01-10T09:00:00+01:00",
        "site": {"name": "older", "hosts": [{"name": h, "roles": ["storage"]} for h in hosts]},
        "hosts": {h: {"reachable": True, "errors": []} for h in hosts}}))
    return cap


def saved_scan(directory: Path) -> dict:
    """A real scan (``scan --from`` of a one-host capture) saved as ``scan --json`` writes it, with the
    site file it is of (gpfs01, and gpfs02 which the scan does not name): {dir, site, capture, text}."""
    cap = sysctl_capture(directory)
    site = directory / "older.yml"
    site.write_text("name: older\nhosts:\n  - name: gpfs01\n    roles: [storage]\n  - name: gpfs02\n    roles: [storage]\n")
    cp = cli("scan", "--from", cap, "--json", "--no-history", "--fail-on", "critical", cwd=directory)
    assert cp.returncode in (0, 3), cp.stderr
    return {"dir": directory, "site": site, "capture": cap, "text": cp.stdout}
