"""Benchmark: a live scan of N lab hosts against `ansible all -m setup -f N` on the same hosts, and
against a scan of one of them, measured in the same run (issue 14, Build 3).

Brings up a storadvise lab of N small hosts ("f01".."fNN", worker role, one switch; every host
runs its own sshd), then runs, --repeat times and interleaved so that load drifts hit all three
alike:

  * ``scan N``: ``storadvise scan --site LAB --parallel N --sample-seconds S --no-mesh
    --no-efficiency --no-history --json`` (every host probe, the disk sample window);
  * ``scan 1``: the same command with ``--hosts f01``;
  * ``ansible``: ``ansible all -i <the lab's inventory> -m setup -f N`` (Ansible's fact
    gathering over the same SSH keys, known_hosts and users as the scan; ``-o``, one line per
    host, each checked to say SUCCESS),

and prints the medians and the ratios scan N / ansible (target <= 1/3) and scan N / scan 1
(target <= 1.5). ``lab down`` at the end, even on failure.

    # root
    .venv/bin/python bench/bench_fleet.py --hosts 32 [--repeat 3] [--sample-seconds 1]

Every lab host's sshd and probes run on this machine's cores: the N-host figures include the
hosts' own work, which a real site spreads over N machines.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from measure import measure  # noqa: E402

BIN = Path(sys.executable).parent


def timed(argv: list[str], env: dict[str, str] | None = None, ok: tuple[int, ...] = (0,)) -> tuple[dict, str]:
    """One run of argv measured (bench/measure.py: wall, controller CPU, host-side CPU), and its
    stdout; a failing run stops the benchmark."""
    m = measure(argv, env, ok)
    return m, m["stdout"]


def scan_summary(stdout: str) -> tuple[int, int]:
    """(hosts scanned, hosts unreachable) from a scan's JSON report."""
    summary = json.loads(stdout)["summary"]
    return summary["hosts"], summary["unreachable"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hosts", type=int, default=32)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--sample-seconds", default="1")
    ap.add_argument("--name", default="bench-fleet", help="lab name (default bench-fleet)")
    args = ap.parse_args()
    from advisor.lab.control import lab_down, lab_up

    work = Path(tempfile.mkdtemp(prefix="bench-fleet-"))
    scen = work / "bench-fleet.yml"
    width = max(2, len(str(args.hosts)))
    first = f"f{1:0{width}d}"
    scen.write_text(f"name: {args.name}\ndescription: bench/bench_fleet.py, {args.hosts} small hosts\n"
                    f"hosts:\n  - name: f[{1:0{width}d}:{args.hosts:0{width}d}]\n    roles: [worker]\n")
    t = time.monotonic()
    up = lab_up(str(scen), recreate=True)
    print(f"lab {args.name}: {args.hosts} hosts up in {time.monotonic() - t:.1f} s", flush=True)
    try:
        site = up.site_file
        inventory = Path(up.record.dir) / "inventory.ini"
        sa = str(BIN / "storadvise")
        scan = [sa, "scan", "--site", site, "--sample-seconds", args.sample_seconds, "--no-mesh",
                "--no-efficiency", "--no-history", "--json"]
        scan_n = scan + ["--parallel", str(args.hosts)]
        scan_1 = scan + ["--parallel", "1", "--hosts", first]
        env = {**os.environ, "ANSIBLE_HOME": str(work / "ansible-home"), "ANSIBLE_HOST_KEY_CHECKING": "True",
               "PATH": f"{BIN}:{os.environ.get('PATH', '')}"}
        ansible = [str(BIN / "ansible"), "all", "-i", str(inventory), "-m", "setup", "-f", str(args.hosts), "-o"]
        # one untimed round first: page cache, Python byte code, sshd host keys in every namespace
        timed(scan_1, ok=(0, 2))
        timed(ansible, env)
        runs: dict[str, list[dict]] = {"scan N": [], "scan 1": [], "ansible": []}
        for i in range(args.repeat):
            w, out = timed(scan_n, ok=(0, 2))  # 2: findings (a lab host is not tuned)
            n, unreachable = scan_summary(out)
            if n != args.hosts or unreachable:
                raise SystemExit(f"scan N: {n} hosts in the report, {unreachable} unreachable")
            runs["scan N"].append(w)
            w, out = timed(scan_1, ok=(0, 2))
            if scan_summary(out) != (1, 0):
                raise SystemExit(f"scan 1: {scan_summary(out)}")
            runs["scan 1"].append(w)
            # a fresh ssh control path: no ControlPersist master left by an earlier run (the scan, too,
            # opens every connection anew)
            w, out = timed(ansible, {**env, "ANSIBLE_SSH_CONTROL_PATH_DIR": str(work / f"cp-{i}")})
            gathered = [ln.split(" | ")[0] for ln in out.splitlines() if " | SUCCESS => " in ln]
            if len(set(gathered)) != args.hosts:
                raise SystemExit(f"ansible: facts of {len(set(gathered))} of {args.hosts} hosts: {out[-800:]}")
            runs["ansible"].append(w)
            print(f"  run {i + 1}: scan {args.hosts} {runs['scan N'][-1]['wall_s']:.2f} s, "
                  f"scan 1 {runs['scan 1'][-1]['wall_s']:.2f} s, "
                  f"ansible -m setup -f {args.hosts} {runs['ansible'][-1]['wall_s']:.2f} s "
                  f"(load {os.getloadavg()[0]:.1f})", flush=True)
        med = {k: statistics.median(r["wall_s"] for r in v) for k, v in runs.items()}
        cpu = {k: {m: statistics.median(r[m] for r in v) for m in ("cpu_s", "hosts_cpu_s")} for k, v in runs.items()}
        print(f"machine: {len(os.sched_getaffinity(0))} cores, {platform.machine()}, {platform.system()} "
              f"{platform.release()}, Python {platform.python_version()}; {args.hosts} lab hosts on the same machine")
        print(f"medians of {args.repeat}: scan {args.hosts} hosts {med['scan N']:.2f} s, scan 1 host {med['scan 1']:.2f} s, "
              f"ansible -m setup {med['ansible']:.2f} s")
        print(f"medians of {args.repeat}, CPU: scan {args.hosts} hosts: controller {cpu['scan N']['cpu_s']:.1f} s, "
              f"hosts {cpu['scan N']['hosts_cpu_s']:.1f} s; ansible -m setup: controller {cpu['ansible']['cpu_s']:.1f} s, "
              f"hosts {cpu['ansible']['hosts_cpu_s']:.1f} s (hosts: the machine's busy time from /proc/stat minus the "
              "controller's)")
        r_ansible = med["scan N"] / med["ansible"]
        r_one = med["scan N"] / med["scan 1"]
        r_ctl = cpu["scan N"]["cpu_s"] / cpu["ansible"]["cpu_s"]
        r_hosts = cpu["scan N"]["hosts_cpu_s"] / cpu["ansible"]["hosts_cpu_s"]
        print(f"scan {args.hosts} / ansible -m setup: wall {r_ansible:.2f}, controller CPU {r_ctl:.2f}, host CPU "
              f"{r_hosts:.2f} (targets <= 0.33); scan {args.hosts} / scan 1: {r_one:.2f} (target <= 1.5)")
        return 0 if max(r_ansible, r_ctl, r_hosts) <= 1 / 3 and r_one <= 1.5 else 1
    finally:
        lab_down(args.name)
        print(f"lab {args.name}: down", flush=True)


if __name__ == "__main__":
    sys.exit(main())
