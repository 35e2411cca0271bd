"""Benchmark: ``storadvise scan --from DIR`` of a Tier-1-sized capture, wall time and peak RSS.

The capture is made from a real one (a directory written by ``storadvise collect``, e.g. of
``storadvise lab up --scenario ifca``): its hosts without --role are kept, its --role hosts are
copied file by file until the capture has N hosts (``wn00001`` ...), and the manifest's site
lists them all. Then, in the same run, alternating, --repeat times each:

  * ``scan``: ``storadvise scan --from DIR --output REPORT --history W/history.db`` (the whole JSON
    report written, the scan stored in a history of the run's own);
  * ``read``: ``tar -cf /dev/null DIR``: reading every file of the capture once, the floor of
    any analysis of it (the peer the ratio is against).

With ``--flows`` (a capture of a lab with production traffic, e.g. ``lab up --scenario flows``),
the whole captured site is copied instead, as cells of a larger site (``c0001-stor01``, ...) until
it has N hosts: every host of a cell gets an address of its own (10.0.0.0/8), in its flows and
NIC outputs too (READDRESSED), so the ``network.flows`` listings of a cell's servers and readers join into that
cell's paths, as a real site's racks and their servers do (each server with its own few hundred
connections, not one server with every worker's).

Printed: the medians, scan/read, the scan's peak RSS (the largest process, and the sum of the
parse workers' peaks when it used processes), the report's size, and the issue's targets
(<= 15 s and <= 1 GB at 10,000 hosts on a 2-core machine).

  .venv/bin/python bench/bench_capture.py --capture DIR --hosts 10000 --work /tmp/cap10k [--flows]
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


#: the outputs a cell's copy gets its own addresses in (``--flows``): what joins the flows by
#: address; the rest stay as captured (a firewall's rules still name the template's addresses, so
#: every copy's ruleset is one text, as a site's firewall baseline is)
READDRESSED = ("network.flows", "network.nic")


def cells(site_hosts: list[dict], n: int) -> list[tuple[str, dict, dict[str, str]]]:
    """(name, template host, template address -> the cell's) of every host of N, the site copied
    whole as cells (``--flows``)."""
    size = len(site_hosts)
    count = -(-n // size)
    width = len(str(count))
    out = []
    for i in range(n):
        k, h = divmod(i, size)
        base = 0x0A000001 + k * size
        remap = {t["address"]: str(ipaddress.IPv4Address(base + j)) for j, t in enumerate(site_hosts)}
        out.append((f"c{k + 1:0{width}d}-{site_hosts[h]['name']}", site_hosts[h], remap))
    return out


def build_capture(template: Path, out: Path, n: int, role: str, fmt: int = 2, flows: bool = False) -> int:
    """Write the N-host capture into ``out`` (reused when it already holds N hosts). Format 2 is
    written by storadvise's own writer (texts content-addressed); format 1 by copying the
    template's per-host files. ``flows``: the whole site copied as cells, each host readdressed
    (format 2 only)."""
    sys.path.insert(0, str(ROOT))
    from advisor.transport.base import Command
    from advisor.transport.capture_objects import CaptureObjects
    from advisor.transport.captured import CapturedTransport, write_capture
    from probes import all_probes

    manifest = json.loads((template / "manifest.json").read_text())
    site_hosts = manifest["site"]["hosts"]
    templates = [h for h in site_hosts if role in h.get("roles", [])]
    keep = [h for h in site_hosts if h not in templates]
    if not templates and not flows:
        raise SystemExit(f"{template}: no host with role {role}")
    done = out / "manifest.json"
    if done.is_file() and len(json.loads(done.read_text())["site"]["hosts"]) == n:
        return n
    if out.exists():
        shutil.rmtree(out)
    (out / "hosts").mkdir(parents=True)
    keys = [Command(key=k, script="") for k in all_probes()]
    source = CaptureObjects(template)
    objects = CaptureObjects(out)

    address_re = re.compile(r"(?<![\d.])(" + "|".join(re.escape(h["address"]) for h in site_hosts) + r")(?![\d])")

    def copy(src: str, dst: str, remap: dict[str, str] | None = None) -> None:
        if fmt == 1:
            shutil.copytree(template / "hosts" / src, out / "hosts" / dst)
            return
        results = [r for r in CapturedTransport(template, src, source).run_batch(keys) if r.stderr != "not captured"]
        if remap:
            results = [r.model_copy(update={"stdout": address_re.sub(lambda m: remap[m.group(1)], r.stdout)})
                       if r.key in READDRESSED else r for r in results]
        meta = {}
        index = template / "hosts" / src / "outputs.json"
        if index.is_file():
            meta = json.loads(index.read_text())["outputs"]
        cmds = [Command(key=r.key, script=source.get(meta[r.key]["script"]) if r.key in meta else "",
                        sudo=bool(meta.get(r.key, {}).get("sudo"))) for r in results]
        write_capture(out, dst, cmds, results, objects)

    hosts, records = [], {}
    if flows:
        keep, templates = [], []
        for name, t, remap in cells(site_hosts, n):
            copy(t["name"], name, remap)
            hosts.append({**t, "name": name, "address": remap[t["address"]]})
            records[name] = manifest["hosts"].get(t["name"], {"reachable": True, "errors": []})
    for h in keep:
        copy(h["name"], h["name"])
        hosts.append(h)
        records[h["name"]] = manifest["hosts"].get(h["name"], {"reachable": True, "errors": []})
    width = len(str(n))
    for i in range(max(0, n - len(keep)) if templates else 0):
        t = templates[i % len(templates)]
        name = f"wn{i + 1:0{width}d}"
        copy(t["name"], name)
        hosts.append({**t, "name": name})
        records[name] = manifest["hosts"].get(t["name"], {"reachable": True, "errors": []})
    for name, rec in records.items():
        (out / "hosts" / name / "host.json").write_text(json.dumps(rec, indent=2) + "\n")
    manifest["site"]["hosts"] = hosts
    manifest["hosts"] = records
    manifest["capture_format"] = fmt
    done.write_text(json.dumps(manifest, indent=1) + "\n")
    return n


def _du(path: Path) -> str:
    out = subprocess.run(["du", "-sh", str(path)], capture_output=True, text=True).stdout.split()
    return f"{out[0]} on disk" if out else "size unknown"


def timed(argv: list[str], env: dict | None = None) -> tuple[float, float, int]:
    """Wall seconds, peak RSS of the largest process (MiB), exit status."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t = time.monotonic()
    p = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    wall = time.monotonic() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if p.returncode not in (0, 2, 3):
        raise SystemExit(f"{argv[0]} exited {p.returncode}: {p.stderr.decode()[-800:]}")
    return wall, max(after, before) / 1024.0, p.returncode


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--capture", type=Path, required=True, help="a directory written by 'storadvise collect'")
    ap.add_argument("--hosts", type=int, default=10000)
    ap.add_argument("--role", default="worker")
    ap.add_argument("--work", type=Path, default=Path("/tmp/storadvise-bench-capture"))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--format", type=int, choices=(1, 2), default=2,
                    help="capture format written: 2 content-addressed (storadvise collect), 1 per-host files")
    ap.add_argument("--flows", action="store_true",
                    help="copy the whole site as cells, each host readdressed, so production flows join per cell")
    ap.add_argument("--storadvise", default=str(ROOT / ".venv" / "bin" / "storadvise"))
    args = ap.parse_args()
    if args.flows and args.format != 2:
        raise SystemExit("--flows writes format 2 only")
    cap = args.work / f"capture-{args.hosts}-f{args.format}{'-flows' if args.flows else ''}"
    t = time.monotonic()
    build_capture(args.capture, cap, args.hosts, args.role, args.format, args.flows)
    print(f"machine: {platform.machine()}, {len(os.sched_getaffinity(0))} cores, Python {platform.python_version()}; "
          f"capture (format {args.format}) of {args.hosts} hosts at {cap} ({_du(cap)}) ready in {time.monotonic() - t:.1f} s", flush=True)
    report = args.work / f"report-{args.hosts}.json"
    scans, reads, peak = [], [], 0.0
    for i in range(args.repeat):
        subprocess.run(["sync"], check=False)
        w, _, _ = timed(["tar", "-cf", "/dev/null", "-C", str(cap), "."])
        reads.append(w)
        # RUSAGE_CHILDREN's maxrss is the largest of all children so far: measure the scan in a
        # fresh child python so the figure is the scan's own
        # the scan is stored in a history of its own, new for each run (a site's first scan):
        # never the user's, and no run pays for the ones before it
        history = args.work / "history.db"
        for f in (history, history.with_name("history.db-wal"), history.with_name("history.db-shm")):
            f.unlink(missing_ok=True)
        argv = [args.storadvise, "scan", "--from", str(cap), "--output", str(report), "--history", str(history)]
        probe = (f"import resource,subprocess,sys,time;t=time.monotonic();"
                 f"r=subprocess.run({argv!r},"
                 f"stdout=subprocess.DEVNULL);w=time.monotonic()-t;"
                 f"print(w, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, r.returncode)")
        out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split()
        w, rss, rc = float(out[0]), int(out[1]) / 1024.0, int(out[2])
        if rc not in (0, 2, 3):
            raise SystemExit(f"scan --from exited {rc}")
        scans.append(w)
        peak = max(peak, rss)
        print(f"  run {i + 1}: scan {w:.2f} s (peak RSS {rss:.0f} MiB, exit {rc}), read {reads[-1]:.2f} s", flush=True)
    s, r = statistics.median(scans), statistics.median(reads)
    size = report.stat().st_size / 2**20
    print(f"{args.hosts} hosts: scan --from median {s:.2f} s, reading the capture (tar) median {r:.2f} s, "
          f"scan/read {s / r:.1f}x; peak RSS {peak:.0f} MiB; JSON report {size:.0f} MiB")
    ok = s <= 15 and peak <= 1024
    print(f"targets at 10,000 hosts: <= 15 s wall, <= 1024 MiB: {'met' if ok else 'NOT met'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
