"""Benchmark: the host CPU of the NIC-layer probes (``nic.ports``, ``cpu.frequency``) on a lab host, beside the
older probes of the same subsystem measured in the same run (``network.nic``, ``network.sysctl``).

A lab of one host with an emulated 10G NIC and cpufreq (advisor/lab/emulators/nic.py) is brought up in a
registry of its own; each probe's script, as the collector renders it, runs over SSH inside ``sh`` followed by
the shell's ``times``: the user + sys CPU of the script and every process it started, on the host, whatever
the sample window's sleep takes in wall time. Each probe runs ``--runs`` times; the median is printed with its
ratio to ``network.nic``'s. The emulated ``ethtool`` is a Python program (a real one is a small C binary): its
start-up is most of ``nic.ports``'s CPU here, so the figure is an upper bound of a real host's. Exit 1 when a
new probe's median is above ``--budget`` (0.2 s). Needs root.

    .venv/bin/python bench/bench_nic_probes.py [--runs 5] [--budget 0.2] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

SCENARIO = """name: bench-nic
description: bench/bench_nic_probes.py, one host with an emulated 10G NIC and cpufreq
hosts:
  - name: n01
    roles: [storage]
    nic: {speed: 10000, ring: {rx: 512, rx_max: 4096}, counters: {rx_missed_errors: 20/s}}
    cpu: {governor: powersave}
"""
PROBES = ("nic.ports", "cpu.frequency", "network.nic", "network.sysctl")
NEW = ("nic.ports", "cpu.frequency")


def host_cpu_seconds(lab_dir: Path, address: str, script: str) -> tuple[float, str]:
    """User + sys CPU of ``script`` and its children on the host (the shell's ``times``), and what it printed."""
    cp = subprocess.run(["ssh", "-F", "/dev/null", "-i", str(lab_dir / "client_key"), "-o",
                         f"UserKnownHostsFile={lab_dir / 'known_hosts'}", "-o", "BatchMode=yes", f"root@{address}",
                         "sh -s >/tmp/bench-nic.out 2>/dev/null; times; cat /tmp/bench-nic.out >&2"],
                        input=script, capture_output=True, text=True, timeout=120)
    if "@@storadvise-not-applicable" in cp.stderr:
        raise SystemExit(f"the probe does not apply on the lab host: {cp.stderr.strip()[:200]}")
    total = 0.0
    for line in cp.stdout.strip().splitlines()[-2:]:  # the shell's own times, then its children's
        for part in line.split():
            m, _, s = part.rstrip("s").partition("m")
            total += float(m) * 60 + float(s)
    return total, cp.stderr


def read_the_nic(text: str) -> None:
    """The emulated NIC answered every ``ethtool`` call (link modes, rings, offloads, statistics): a probe whose
    ``ethtool`` failed at once would measure cheap and say nothing."""
    from probes.nic import parse_nic_ports

    eth0 = parse_nic_ports(text).interfaces.get("eth0")
    missing = [what for what, ok in (("eth0", eth0 is not None),
                                     ("its link modes", eth0 is not None and eth0.max_supported_mbps is not None),
                                     ("its rings", eth0 is not None and eth0.ring is not None),
                                     ("its offloads", eth0 is not None and bool(eth0.offloads)),
                                     ("its counters", eth0 is not None and eth0.counters_read > 0)) if not ok]
    if missing:
        raise SystemExit(f"nic.ports read no {', '.join(missing)} of the lab host's emulated NIC: nothing to measure")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--budget", type=float, default=0.2, help="seconds of host CPU a new probe may take")
    ap.add_argument("--sample-seconds", type=float, default=1.0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    os.environ["STORADVISE_LAB_DIR"] = tempfile.mkdtemp(prefix="bench-nic-labs-", dir="/run")
    from advisor.lab.control import lab_down, lab_up
    from advisor.rules.probe_requests import requested_keys
    from advisor.rules.specs import load_catalog
    from advisor.site.file import resolve_site
    from advisor.collect.collector import probe_context
    from probes import all_probes

    work = Path(tempfile.mkdtemp(prefix="bench-nic-"))
    (work / "bench-nic.yml").write_text(SCENARIO)
    up = lab_up(str(work / "bench-nic.yml"), recreate=True)
    try:
        site = resolve_site(up.site_file, None, ())
        host = site.hosts[0]
        ctx = probe_context(site, host, False, args.sample_seconds, requested_keys(load_catalog()))
        probes = all_probes()
        results = {}
        for name in PROBES:
            script = probes[name].script(ctx)
            measured = [host_cpu_seconds(Path(up.record.dir), host.address, script) for _ in range(args.runs)]
            if name == "nic.ports":
                read_the_nic(measured[-1][1])
            runs = [cpu for cpu, _out in measured]
            results[name] = {"median_s": statistics.median(runs), "runs_s": runs}
        base = results["network.nic"]["median_s"] or 0.001
        over = [n for n in NEW if results[n]["median_s"] > args.budget]
        if args.json:
            print(json.dumps({"runs": args.runs, "budget_s": args.budget, "probes": results, "over_budget": over}, indent=1))
        else:
            print(f"host CPU per run on a lab host, median of {args.runs} (budget {args.budget} s for the new probes)")
            for name, r in results.items():
                print(f"  {name:16} {r['median_s']:6.3f} s  {r['median_s'] / base:5.1f}x network.nic"
                      f"{'  OVER BUDGET' if name in over else ''}")
        return 1 if over else 0
    finally:
        lab_down(up.record.name)


if __name__ == "__main__":
    sys.exit(main())
