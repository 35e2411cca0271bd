"""Benchmark: ``storadvise plan --scan SCAN.json`` of a Tier-1-sized site, wall time, peak RSS and
what it writes.

The site is made as bench/bench_capture.py makes it: a real capture (``storadvise collect`` of
``storadvise lab up --scenario ifca``), its hosts without --role kept, its --role hosts copied until
the capture has N hosts (``wn00001`` ...). The copies' site entries get their own names where the
template's name appears in their vars (GPFS node name, backup and config paths), as a real site
file has them. Then, in the same run:

  * ``scan``: ``storadvise scan --from DIR --output SCAN.json`` once (the peer the ratio is against,
    and the scan the plan reads);
  * ``plan``: ``storadvise plan --site SITE --scan SCAN.json --out DIR``, --repeat times.

Printed: the machine, the medians, plan/scan, the plan's peak RSS, PLAN.md's lines, the number and
total size of the vars files (group_vars/ and host_vars/) and of inventory.yml, and the issue's
targets (<= 15 s, <= 1 GB and a PLAN.md of at most 200 lines at 10,000 hosts).

  .venv/bin/python bench/bench_plan.py --capture DIR --hosts 10000 --work /tmp/plan10k
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_capture import ROOT, build_capture  # noqa: E402


def _renamed(value: Any, old: str, new: str) -> Any:
    if isinstance(value, str):
        return re.sub(rf"\b{re.escape(old)}\b", new, value)
    if isinstance(value, list):
        return [_renamed(v, old, new) for v in value]
    if isinstance(value, dict):
        return {k: _renamed(v, old, new) for k, v in value.items()}
    return value


def write_site(capture: Path, template: Path, out: Path) -> Path:
    """The capture's site as a site file; each copy's vars name the copy, not its template."""
    site = json.loads((capture / "manifest.json").read_text())["site"]
    originals = {h["name"]: h for h in json.loads((template / "manifest.json").read_text())["site"]["hosts"]}
    for h in site["hosts"]:
        if h["name"] in originals:
            continue
        source = next((n for n, o in originals.items() if o.get("vars") == h.get("vars")), None)
        if source:
            h["vars"] = _renamed(h["vars"], source, h["name"])
    out.write_text(yaml.safe_dump(site, sort_keys=False))
    return out


def timed(argv: list[str]) -> tuple[float, float, int]:
    """Wall seconds, peak RSS (MiB) and exit status of ``argv``, run from a fresh child Python so
    RUSAGE_CHILDREN's maximum is this command's own."""
    probe = (f"import resource,subprocess,time;t=time.monotonic();"
             f"r=subprocess.run({argv!r},stdout=subprocess.DEVNULL,stderr=subprocess.PIPE);w=time.monotonic()-t;"
             f"print(w, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, r.returncode);"
             f"import sys;sys.stderr.write(r.stderr.decode()[-800:])")
    cp = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    w, rss, rc = cp.stdout.split()
    if int(rc) not in (0, 2, 3):
        raise SystemExit(f"{argv[1]} exited {rc}: {cp.stderr}")
    return float(w), int(rss) / 1024.0, int(rc)


def written(plan: Path) -> dict[str, Any]:
    files = [p for d in ("group_vars", "host_vars") if (plan / d).is_dir() for p in (plan / d).iterdir()]
    return {"plan_md_lines": len((plan / "PLAN.md").read_text().splitlines()),
            "group_vars": len(list((plan / "group_vars").iterdir())) if (plan / "group_vars").is_dir() else 0,
            "host_vars": len(list((plan / "host_vars").iterdir())) if (plan / "host_vars").is_dir() else 0,
            "vars_bytes": sum(p.stat().st_size for p in files),
            "inventory_bytes": (plan / "inventory.yml").stat().st_size,
            "plan_json_bytes": (plan / "plan.json").stat().st_size}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--capture", type=Path, required=True, help="a directory written by 'storadvise collect'")
    ap.add_argument("--hosts", type=int, default=10000)
    ap.add_argument("--role", default="worker")
    ap.add_argument("--work", type=Path, default=Path("/tmp/storadvise-bench-plan"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--storadvise", default=str(ROOT / ".venv" / "bin" / "storadvise"))
    args = ap.parse_args()
    cap = args.work / f"capture-{args.hosts}"
    t = time.monotonic()
    build_capture(args.capture, cap, args.hosts, args.role)
    site = write_site(cap, args.capture, args.work / f"site-{args.hosts}.yml")
    print(f"machine: {platform.machine()}, {len(os.sched_getaffinity(0))} cores, Python {platform.python_version()}, "
          f"load average {os.getloadavg()[0]:.1f}; capture of {args.hosts} hosts ready in {time.monotonic() - t:.1f} s",
          flush=True)
    scan = args.work / f"scan-{args.hosts}.json"
    s, s_rss, _ = timed([args.storadvise, "scan", "--from", str(cap), "--output", str(scan), "--no-history"])
    print(f"  scan --from: {s:.2f} s (peak RSS {s_rss:.0f} MiB), JSON {scan.stat().st_size / 2**20:.0f} MiB", flush=True)
    plans, peak = [], 0.0
    out = args.work / f"plan-{args.hosts}"
    for i in range(args.repeat):
        w, rss, rc = timed([args.storadvise, "plan", "--site", str(site), "--scan", str(scan), "--out", str(out)])
        plans.append(w)
        peak = max(peak, rss)
        print(f"  run {i + 1}: plan {w:.2f} s (peak RSS {rss:.0f} MiB, exit {rc})", flush=True)
    p = statistics.median(plans)
    f = written(out)
    print(f"{args.hosts} hosts: plan median {p:.2f} s, scan --from {s:.2f} s, plan/scan {p / s:.2f}x; "
          f"peak RSS {peak:.0f} MiB")
    print(f"written: PLAN.md {f['plan_md_lines']} lines; vars files {f['group_vars']} group_vars + {f['host_vars']} "
          f"host_vars, {f['vars_bytes'] / 1024:.1f} KiB; inventory.yml {f['inventory_bytes'] / 2**20:.1f} MiB; "
          f"plan.json {f['plan_json_bytes'] / 2**20:.1f} MiB")
    ok = p <= 15 and peak <= 1024 and f["plan_md_lines"] <= 200
    print(f"targets at 10,000 hosts: <= 15 s wall, <= 1024 MiB, PLAN.md <= 200 lines: {'met' if ok else 'NOT met'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
