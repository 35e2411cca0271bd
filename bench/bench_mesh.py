"""Benchmark: a full iperf3 mesh of N hosts in rounds against the same pairs run one at a time.

Checks (issue 4):
  * rounds == N-1 (even N; N for odd N),
  * wall time of the round schedule <= 1.2 x rounds x per-test time (per-test time = the
    serial run's wall time / its number of tests),
  * every path measured in a concurrent round within 10% of the same path measured alone,
and prints the ratio of the serial wall time to the round schedule's, measured in the same run.

Three ways to run it (root):

  # on a storadvise lab it brings up itself (N hosts "h01".."hNN" on one switch, tbf-shaped
  # links at --rate, real sshd and iperf3 in every host, every test over SSH as a scan runs it;
  # `lab down` at the end, even on failure):
  .venv/bin/python bench/bench_mesh.py --lab --hosts 16 --rate 100mbit --duration 2

  # on a running lab (storadvise lab up ...): the first N hosts of the lab's site, over SSH:
  .venv/bin/python bench/bench_mesh.py --site <lab-site> --hosts 16

  # on bare namespaces it builds itself (bridge in a switch namespace, tbf-shaped veths in
  # 198.18.200.0/24, iperf3 through `ip netns exec`, no SSH; torn down at the end):
  .venv/bin/python bench/bench_mesh.py --hosts 16 --rate 100mbit --duration 2

Shaped links keep the machine's 2 cores from being the bottleneck: LAB-TRIAL.md measured two
disjoint 1 Gbit/s pairs at full rate together, but 8 concurrent bidirectional 1 Gbit/s tests
(16 host pairs' worth of flows) are CPU-bound on 2 cores, so the self-built default is 100 Mbit/s
per host egress (--rate to change). Exit status 0 when all three checks pass, 1 otherwise.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from advisor.mesh.runner import run_mesh  # noqa: E402
from advisor.mesh.schedule import PathRequest  # noqa: E402
from advisor.site.model import Site  # noqa: E402


def full_mesh(names: list[str], rate: int | None) -> list[PathRequest]:
    reqs = []
    for a, b in itertools.combinations(names, 2):
        reqs += [PathRequest(a, b, rate, "bench"), PathRequest(b, a, rate, "bench")]
    return reqs


def measure(site: Site, transports, reqs: list[PathRequest], args) -> tuple[dict, dict]:
    common = dict(requests=reqs, bidir=not args.no_bidir, duration=args.duration, omit=args.omit,
                  streams=args.streams, congestion=args.congestion,
                  # the schedule's own cost is measured: no extra tests for paths judged inconclusive
                  retest_inconclusive=False)
    print(f"round schedule: {len(reqs)} paths ...", flush=True)
    t = time.monotonic()
    rounds = run_mesh(site, transports, **common)
    print(f"  {rounds['rounds']} rounds in {time.monotonic() - t:.1f} s", flush=True)
    print("serial schedule (one test at a time) ...", flush=True)
    t = time.monotonic()
    serial = run_mesh(site, transports, parallel=1, **common)
    print(f"  {time.monotonic() - t:.1f} s", flush=True)
    return rounds, serial


def report(rounds: dict, serial: dict, n: int, args) -> bool:
    tests = sum(len({frozenset(d) for d in map(tuple, rnd)}) if not args.no_bidir else len(rnd)
                for rnd in serial["schedule"])
    per_test = serial["wall_seconds"] / max(1, tests)
    expected_rounds = n - 1 if n % 2 == 0 else n
    bound = 1.2 * rounds["rounds"] * per_test
    alone = {(p["src"], p["dst"]): p for p in serial["paths"]}
    ratios, failed = [], []
    for p in rounds["paths"]:
        a = alone.get((p["src"], p["dst"]))
        if p["status"] != "ok" or not a or a["status"] != "ok":
            failed.append(f"{p['src']}->{p['dst']}: {p.get('error') or (a or {}).get('error')}")
            continue
        ratios.append((p["measured_bps"] / a["measured_bps"], p["src"], p["dst"]))
    worst = min(ratios) if ratios else (0.0, "-", "-")
    within = [r for r in ratios if abs(1 - r[0]) <= 0.10]
    print()
    print(f"hosts                      {n}")
    print(f"rounds                     {rounds['rounds']} (expected {expected_rounds})")
    print(f"tests per schedule         {tests} ({len(rounds['paths'])} directed paths, "
          f"{'bidir' if not args.no_bidir else 'one direction per test'})")
    print(f"per-test time (serial)     {per_test:.2f} s")
    print(f"round schedule wall        {rounds['wall_seconds']:.1f} s (bound 1.2 x {rounds['rounds']} x "
          f"{per_test:.2f} = {bound:.1f} s)")
    print(f"serial schedule wall       {serial['wall_seconds']:.1f} s")
    print(f"speed-up serial/rounds     {serial['wall_seconds'] / rounds['wall_seconds']:.2f}x")
    if ratios:
        med = statistics.median(r[0] for r in ratios)
        print(f"concurrent/alone per path  median {med:.3f}, worst {worst[0]:.3f} ({worst[1]}->{worst[2]}), "
              f"{len(within)}/{len(ratios)} within 10%")
        print(f"median rate alone          {statistics.median(a['measured_bps'] for a in alone.values() if a['measured_bps']) / 1e6:.0f} Mb/s")
    for f in failed[:10]:
        print(f"FAILED {f}")
    ok_rounds = rounds["rounds"] == expected_rounds
    ok_wall = rounds["wall_seconds"] <= bound
    ok_paths = bool(ratios) and len(within) == len(ratios) and not failed
    print()
    print(f"rounds == N-1/N: {'PASS' if ok_rounds else 'FAIL'};  wall <= 1.2 x rounds x per-test: "
          f"{'PASS' if ok_wall else 'FAIL'};  every path within 10% of alone: {'PASS' if ok_paths else 'FAIL'}")
    return ok_rounds and ok_wall and ok_paths


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hosts", type=int, default=16, help="N hosts in the full mesh (default 16)")
    ap.add_argument("--site", help="a running lab's site (name or file); default: build namespaces")
    ap.add_argument("--lab", action="store_true", help="bring up a storadvise lab of --hosts hosts for the run")
    ap.add_argument("--rate", default="100mbit", help="tbf rate per host egress for self-built namespaces")
    ap.add_argument("--duration", type=float, default=2.0)
    ap.add_argument("--omit", type=float, default=0.5)
    ap.add_argument("--streams", type=int, default=1)
    ap.add_argument("--congestion", default="cubic")
    ap.add_argument("--no-bidir", action="store_true", help="one direction per test (reverse right after)")
    ap.add_argument("--json", help="write both result dicts to this file")
    args = ap.parse_args()
    from advisor.util.units import parse_rate_bps

    lab_name = None
    if args.lab:
        import tempfile

        from advisor.lab.control import lab_up

        lab_name = "bench-mesh"
        scen = Path(tempfile.mkdtemp(prefix="bench-mesh-")) / "bench-mesh.yml"
        scen.write_text(f"name: {lab_name}\ndescription: bench/bench_mesh.py, no faults\nlink_rate: {args.rate}\n"
                        f"hosts:\n  - name: h[01:{args.hosts:02d}]\n    roles: [worker]\n")
        t = time.monotonic()
        lab_up(str(scen), recreate=True)
        print(f"lab {lab_name}: {args.hosts} hosts up in {time.monotonic() - t:.1f} s", flush=True)
        args.site = lab_name
    try:
        return _run(args, parse_rate_bps)
    finally:
        if lab_name:
            from advisor.lab.control import lab_down

            lab_down(lab_name)
            print(f"lab {lab_name}: down", flush=True)


def _run(args, parse_rate_bps) -> int:
    if args.site:
        from advisor.site.file import load_site
        from advisor.transport.factory import transport_for

        site = load_site(args.site)
        names = [h.name for h in site.hosts][: args.hosts]
        if len(names) < 2:
            print(f"{args.site}: needs at least 2 hosts", file=sys.stderr)
            return 1
        rate = min((site.host(n).link_rate for n in names if site.host(n).link_rate), default=None)
        reqs = full_mesh(names, rate)
        rounds, serial = measure(site, lambda h: transport_for(h, site), reqs, args)
        ok = report(rounds, serial, len(names), args)
    else:
        from tests.support.netns import NetnsSite

        with NetnsSite(args.hosts, rate=args.rate) as ns:
            site = Site.model_validate({
                "name": "bench", "hosts": [{"name": h, "address": ns.addresses[h], "link_rate": args.rate}
                                           for h in ns.hosts],
            })
            reqs = full_mesh(ns.hosts, parse_rate_bps(args.rate))
            rounds, serial = measure(site, ns.transports(), reqs, args)
        ok = report(rounds, serial, args.hosts, args)
    if args.json:
        import json

        Path(args.json).write_text(json.dumps({"rounds": rounds, "serial": serial}, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
