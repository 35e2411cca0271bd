"""Benchmark: `storadvise efficiency ingest` over condor_history -jsonl, beside a plain json loop.

    .venv/bin/python bench/bench_efficiency_ingest.py [--records 1000000] [--small 250000] [--repeat 1]

Generates N job ads (the attributes ``condor_history -jsonl -attributes ...`` would give: our
24 plus a few site ones) into a temporary file, then in fresh child processes pinned to one
core measures, over the same file in the same run:

* ``ours``: advisor.efficiency ingest as the CLI runs it without ``--json`` (parse, pair CPU
  with wall, aggregate the summary, then its per-host/group/length distributions as the
  report reads them: ``Summary.to_dict``), no output;
* ``json``: ``for line in f: ad = json.loads(line)`` computing the same efficiency
  (cumulative CPU / ((RemoteWallClockTime - suspension) x cores)) and its mean.

Prints records/s of both (wall clock; the CPU time of the child beside it, which shows when
other load on the machine took the core), their ratio, and each child's peak RSS at two input
sizes (memory must be flat in the input size). The generated file is synced to disk before
it is read, so that neither child pays for its write-back. ``--repeat N`` runs each child N
times, alternating, and reports the median run of each (by wall time) - for a machine shared
with other load. The temporary files are removed.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))


def generate(path: str, n: int, seed: int = 7) -> int:
    rnd = random.Random(seed)
    hosts = [f"wn{i:03d}.example.org" for i in range(200)]
    size = 0
    with open(path, "w") as f:
        for i in range(n):
            cores = rnd.choice((1, 1, 4, 8))
            wall = rnd.randint(300, 48 * 3600)
            eff = rnd.uniform(0.2, 0.98)
            cpu = wall * cores * eff
            status = 4 if rnd.random() > 0.05 else 3
            ad = {
                "GlobalJobId": f"schedd01.example.org#{1000000 + i // 10}.{i % 10}#1700000000",
                "ClusterId": 1000000 + i // 10, "ProcId": i % 10, "Owner": "cmsprd",
                "JobStatus": status, "ExitCode": 0 if rnd.random() > 0.05 else 1, "ExitBySignal": False,
                "LastRemoteHost": f"slot1_{rnd.randint(1, 32)}@glidein_{rnd.randint(1, 99999)}_{rnd.randint(1, 999999)}@{rnd.choice(hosts)}",
                "RequestCpus": cores, "CpusProvisioned": cores,
                "RemoteUserCpu": round(cpu * 0.97, 1), "RemoteSysCpu": round(cpu * 0.03, 1),
                "CumulativeRemoteUserCpu": round(cpu * 0.97, 1), "CumulativeRemoteSysCpu": round(cpu * 0.03, 1),
                "RemoteWallClockTime": float(wall), "CumulativeSuspensionTime": 0, "CommittedTime": wall,
                "CommittedSuspensionTime": 0, "NumJobStarts": 1, "JobRunCount": 1,
                "CompletionDate": 1700000000 + wall, "QDate": 1699990000, "RequestMemory": 2000 * cores,
            }
            line = json.dumps(ad, separators=(", ", ": ")) + "\n"
            size += len(line)
            f.write(line)
        f.flush()
        os.fsync(f.fileno())
    return size


def child_ours(path: str) -> dict:
    from advisor.efficiency.analysis import Summary
    from advisor.efficiency.ingest import IssueLog, ingest_into

    issues = IssueLog()
    summary = Summary()
    t, c = time.perf_counter(), time.process_time()
    ingest_into([path], "auto", summary, issues)
    report = summary.to_dict()
    dt, dc = time.perf_counter() - t, time.process_time() - c
    return {"records": summary.records, "seconds": dt, "cpu_seconds": dc, "errors": issues.count,
            "median": report["efficiency"]["median"]}


def child_json(path: str) -> dict:
    n = 0
    total = 0.0
    t, c = time.perf_counter(), time.process_time()
    with open(path, "rb") as f:
        for line in f:
            ad = json.loads(line)
            cpu = ad.get("CumulativeRemoteUserCpu", 0) + ad.get("CumulativeRemoteSysCpu", 0)
            wall = ad.get("RemoteWallClockTime", 0) - ad.get("CumulativeSuspensionTime", 0)
            cores = ad.get("CpusProvisioned") or ad.get("RequestCpus") or 1
            if wall > 0:
                total += cpu / (wall * cores)
            n += 1
    dt, dc = time.perf_counter() - t, time.process_time() - c
    return {"records": n, "seconds": dt, "cpu_seconds": dc, "mean": total / n if n else None}


def run_child(kind: str, path: str) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", kind, path], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--small", type=int, default=250_000)
    ap.add_argument("--repeat", type=int, default=1, help="runs of each child; the median is reported")
    ap.add_argument("--child", nargs=2, metavar=("KIND", "FILE"))
    args = ap.parse_args()
    if args.child:
        kind, path = args.child
        try:
            os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[-1]})
        except (AttributeError, OSError):
            pass
        res = child_ours(path) if kind == "ours" else child_json(path)
        res["max_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(json.dumps(res))
        return
    try:
        import msgspec  # noqa: F401
        accel = f"msgspec {msgspec.__version__}"
    except ImportError:
        accel = "none (stdlib json; install msgspec for the fast path)"
    print(f"python {sys.version.split()[0]}, accelerator: {accel}"
          + (f", median of {args.repeat} runs each" if args.repeat > 1 else ""))
    with tempfile.TemporaryDirectory(prefix="bench-eff-") as tmp:
        results = {}
        for n in (args.small, args.records):
            path = os.path.join(tmp, f"history-{n}.jsonl")
            size = generate(path, n)
            runs: dict[str, list[dict]] = {"ours": [], "json": []}
            for _ in range(max(1, args.repeat)):
                for kind in runs:
                    runs[kind].append(run_child(kind, path))
            ours, plain = (sorted(r, key=lambda x: x["seconds"])[len(r) // 2] for r in runs.values())
            results[n] = (ours, plain)
            if ours["records"] != n or plain["records"] != n or ours["errors"]:
                raise SystemExit(f"the loops disagree on {path}: {ours} {plain}")
            r_ours = ours["records"] / ours["seconds"]
            r_json = plain["records"] / plain["seconds"]
            print(f"{n:>9} records ({size / 1e6:.0f} MB): ours {r_ours:>10,.0f} rec/s "
                  f"(cpu {n / ours['cpu_seconds']:,.0f}), peak RSS {ours['max_rss_mb']:.0f} MB | "
                  f"json loop {r_json:>10,.0f} rec/s (cpu {n / plain['cpu_seconds']:,.0f}), "
                  f"peak RSS {plain['max_rss_mb']:.0f} MB | ratio ours/json {r_ours / r_json:.2f}")
            os.unlink(path)
        small, big = results[args.small][0], results[args.records][0]
        print(f"memory: ours {small['max_rss_mb']:.0f} MB at {args.small:,} records, {big['max_rss_mb']:.0f} MB at "
              f"{args.records:,} ({big['max_rss_mb'] / small['max_rss_mb']:.2f}x for {args.records / args.small:.0f}x the input)")
        rate = big["records"] / big["seconds"]
        print(f"target >= 500,000 rec/s on one core: {'met' if rate >= 500_000 else 'NOT met'} ({rate:,.0f})")


if __name__ == "__main__":
    main()
