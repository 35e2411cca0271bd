"""Benchmark: the throughput models (advisor/mesh/throughput_models.py) characterised on real TCP in the lab.

Every point is one real iperf3 test through the lab's shaped links (tbf), nftables loss and the
NFQUEUE delay forwarder, measured by the product's own mesh (``storadvise mesh run``), with its
congestion control chosen per socket (iperf3 ``-C``: a lab namespace cannot make cubic its default).
The grid:

  * link rate (``--rates``) and the depth of the shaper's queue (``--queues``, tbf latency);
  * loss from sender to receiver (``--losses``, per cent) and one-way delay (``--delays``, ms: the
    RTT is the delay plus the lab's ~0.05 ms);
  * SACK on or off on the sender (off on either end has the same effect);
  * the congestion control (``--cc``: cubic, the EL9/Debian default, and bbr);
  * the mode (``--modes``): ``single`` (one direction at a time) or ``bidir`` (both directions at
    once: the reverse direction's data queue in front of the forward direction's ACKs, the RTT the
    flow sees under load grows, as on a busy production link).

Each lab holds one receiver and one sender per (loss, delay, SACK) point, with ample buffers on
every host (64 MiB maxima) so that only the point's faults can hold a path. Tests run one at a time
(``parallel: 1``). For every measured path the product's path model (advisor/diagnosis/paths.py)
gives its binding limit as measured (what ``scan`` says holds the path) and, for a SACK-off path,
the rate it predicts once SACK is on, which the SACK-on point of the same lab measured: both are
reported as measured / model. A path the measurement itself calls inconclusive (``cpu``,
``contended``) is listed, never scored.

  sudo .venv/bin/python bench/bench_tcp_models.py                     # the full grid (~40 min)
  sudo .venv/bin/python bench/bench_tcp_models.py --rates 200mbit --queues 10ms --cc cubic --modes bidir
  .venv/bin/python bench/bench_tcp_models.py --from results.json      # re-score saved measurements

Run it on a quiet machine: the lab's hosts share its cores (a test the CPU limited is reported as
such). ``--out FILE`` keeps the raw path records for ``--from``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from advisor.diagnosis.paths import Fix, binding_limit, path_state, predict  # noqa: E402
from advisor.mesh.limits import classify_path  # noqa: E402
from advisor.util.units import parse_rate_bps  # noqa: E402

BIN = Path(sys.executable).parent
#: ample buffers on every host: only the point's faults hold a path
BUFFERS = {"net.ipv4.tcp_rmem": "4096 131072 67108864", "net.ipv4.tcp_wmem": "4096 16384 67108864"}
#: the ratios the diagnosis calls a held prediction (docs/diagnosis.md)
HOLDS = (0.75, 1.33)
#: a shape whose lossless control path carries less than this share of its link is the lab's limit
LAB_CARRIES = 0.9


def storadvise(*args: str, timeout: float = 3600) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "storadvise"), *args], capture_output=True, text=True, timeout=timeout)


def sender_name(loss: float, delay: float, sack: bool) -> str:
    return f"l{loss:g}d{delay:g}s{int(sack)}".replace(".", "p")


def scenario(name: str, rate: str, queue: str, losses: list[float], delays: list[float]) -> tuple[dict, list[dict]]:
    """A lab of one receiver and a sender per point; the points' (loss, delay, sack)."""
    hosts = [{"name": "rcv", "roles": ["worker"], "groups": ["rcv"], "link_queue": queue, "sysctls": dict(BUFFERS)}]
    paths, points = [], []
    for delay in delays:
        for loss in [0.0, *losses]:
            for sack in ((True,) if loss == 0 else (True, False)):
                h = sender_name(loss, delay, sack)
                hosts.append({"name": h, "roles": ["storage"], "groups": ["snd"], "link_queue": queue,
                              "sysctls": {**BUFFERS, "net.ipv4.tcp_sack": int(sack)}})
                fault = {"from": h, "to": "rcv"}
                if loss:
                    fault["loss"] = f"{loss:g}%"
                if delay:
                    fault["delay"] = f"{delay:g}ms"
                if len(fault) > 2:
                    paths.append(fault)
                points.append({"host": h, "loss_pct": loss, "delay_ms": delay, "sack": sack})
    return {"name": name, "description": "storadvise model characterisation", "link_rate": rate,
            "hosts": hosts, "paths": paths, "site": {"profiles": ["generic"]}}, points


def facts_of(sc: dict) -> dict[str, dict]:
    """The facts the path model reads of each host (its sysctls), as a scan would give them."""
    out = {}
    for h in sc["hosts"]:
        sysctls = {"net.ipv4.tcp_sack": "1", "net.ipv4.tcp_window_scaling": "1"}
        sysctls.update({k: str(v) for k, v in h["sysctls"].items()})
        out[h["name"]] = {"network.sysctl": {"sysctls": {k: {"runtime": v} for k, v in sysctls.items()}},
                          "firewall": {"rules": []}}
    return out


def measure(args) -> list[dict]:
    rows: list[dict] = []
    for rate in args.rates:
        for queue in args.queues:
            name = f"bm{len(rows) % 1000}"
            sc, points = scenario(name, rate, queue, args.losses, args.delays)
            with tempfile.TemporaryDirectory() as tmp:
                scen = Path(tmp) / "scenario.yml"
                scen.write_text(yaml.safe_dump(sc))
                up = storadvise("lab", "up", "--scenario", str(scen), "--name", name, "--recreate", "--json")
                if up.returncode != 0:
                    sys.exit(f"lab up failed: {up.stderr.strip()[-400:]}")
                try:
                    site = yaml.safe_load(Path(json.loads(up.stdout)["site_file"]).read_text())
                    for cc in args.cc:
                        for mode in args.modes:
                            site["mesh"] = {"duration": args.duration, "omit": 1, "congestion": cc,
                                            "bidir": mode == "bidir", "parallel": 1,
                                            "pairs": [{"a": "snd", "b": "rcv", "direction": "both" if mode == "bidir"
                                                       else "forward"}]}
                            sf = Path(tmp) / f"site-{cc}-{mode}.yml"
                            sf.write_text(yaml.safe_dump(site))
                            t0 = time.monotonic()
                            cp = storadvise("mesh", "run", "--site", str(sf), "--json")
                            if cp.returncode not in (0, 2, 3):
                                sys.exit(f"mesh run failed: {cp.stderr.strip()[-400:]}")
                            mesh = json.loads(cp.stdout)
                            by_src = {p["src"]: p for p in mesh["paths"] if p["dst"] == "rcv"}
                            for pt in points:
                                rows.append({"rate": rate, "queue": queue, "cc": cc, "mode": mode, **pt,
                                             "path": by_src.get(pt["host"])})
                            print(f"# {rate} queue {queue} {cc} {mode}: {len(by_src)} paths in "
                                  f"{time.monotonic() - t0:.0f} s", file=sys.stderr, flush=True)
                            for r in rows:
                                r.setdefault("facts", facts_of(sc))
                            if args.out:  # what is measured so far survives an interrupted run
                                args.out.write_text(json.dumps(rows))
                finally:
                    storadvise("lab", "down", "--name", name)
    return rows


def _ratio(measured: float | None, model: float | None) -> float | None:
    return measured / model if measured and model else None


def score(rows: list[dict]) -> list[dict]:
    """Per point: the binding limit the models give for the measurement, and (SACK off) the rate
    predicted with SACK on against the SACK-on point's measurement."""
    sack_on = {(r["rate"], r["queue"], r["cc"], r["mode"], r["loss_pct"], r["delay_ms"]): r
               for r in rows if r["sack"]}
    out = []
    for r in rows:
        p = r.get("path")
        row = {k: r[k] for k in ("rate", "queue", "cc", "mode", "loss_pct", "delay_ms", "sack")}
        if not p or p.get("status") != "ok":
            out.append({**row, "error": (p or {}).get("error") or "no path"})
            continue
        control = (sack_on.get((r["rate"], r["queue"], r["cc"], r["mode"], 0.0, r["delay_ms"])) or {}).get("path") or {}
        if (control.get("measured_bps") or 0) < LAB_CARRIES * (control.get("expected_bps") or float("inf")):
            # the lossless path of the same shape did not reach its link: the lab itself (its delay
            # forwarder at 1 Gbit/s and 20 ms, on this machine's cores) held it, not the point's faults
            out.append({**row, "error": f"lab-limited: its lossless control ran at "
                                        f"{(control.get('measured_bps') or 0) / 1e6:.0f} Mb/s"})
            continue
        p = dict(p)
        p["limited_by"], p["limited_evidence"] = classify_path(p)  # as the code classifies it today
        st = path_state(p, r["facts"])
        lim = binding_limit(st)
        row.update(measured_bps=p["measured_bps"], limited_by=p.get("limited_by"),
                   rtt_ms=(p.get("rtt_us") or 0) / 1000, idle_ms=(p.get("idle_rtt_us") or 0) / 1000,
                   loss=st.loss, model=lim.model if lim else None, model_bps=lim.bps if lim else None,
                   cpu_wait=max((p.get("cpu_wait_frac") or {}).values(), default=None, key=lambda v: v or 0))
        row["now_ratio"] = _ratio(row["measured_bps"], row["model_bps"])
        row["rtt_band"] = rtt_band(row["rtt_ms"] if row["measured_bps"] < 0.9 * p["expected_bps"] else row["idle_ms"])
        if not r["sack"]:
            on = sack_on.get((r["rate"], r["queue"], r["cc"], r["mode"], r["loss_pct"], r["delay_ms"]))
            onp = dict((on or {}).get("path") or {})
            if onp.get("status") == "ok":
                onp["limited_by"], _ = classify_path(onp)
            pr = predict(st, {Fix("sack", p["src"])})
            row.update(fix_model=pr.model, fix_bps=pr.bps, fix_measured_bps=onp.get("measured_bps"),
                       fix_limited_by=onp.get("limited_by"))
            row["fix_ratio"] = _ratio(row["fix_measured_bps"], pr.bps)
        out.append(row)
    return out


def rtt_band(ms: float) -> str:
    """The RTT region a model is judged in: a LAN (< 1 ms), a metro or campus path, a WAN."""
    return "<1ms" if ms < 1 else ("1-10ms" if ms < 10 else ">=10ms")


def _fmt(v, spec=".2f") -> str:
    return "—" if v is None else format(v, spec)


def table(scored: list[dict]) -> str:
    lines = ["| rate | queue | cc | mode | loss % | delay ms | sack | Mb/s | limited_by | rtt/idle ms | model | "
             "measured/model | SACK on: model -> measured |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in scored:
        if "error" in r:
            lines.append(f"| {r['rate']} | {r['queue']} | {r['cc']} | {r['mode']} | {r['loss_pct']:g} | "
                         f"{r['delay_ms']:g} | {'on' if r['sack'] else 'off'} | failed: {r['error'][:40]} |||||")
            continue
        fix = ""
        if not r["sack"]:
            fix = (f"{r['fix_model']} {_fmt(r['fix_bps'] / 1e6, '.0f')} -> {_fmt((r['fix_measured_bps'] or 0) / 1e6, '.0f')}"
                   f" ({_fmt(r['fix_ratio'])})")
        lines.append(f"| {r['rate']} | {r['queue']} | {r['cc']} | {r['mode']} | {r['loss_pct']:g} | {r['delay_ms']:g} | "
                     f"{'on' if r['sack'] else 'off'} | {r['measured_bps'] / 1e6:.0f} | {r['limited_by']} | "
                     f"{r['rtt_ms']:.1f}/{r['idle_ms']:.2f} | {r['model']} | {_fmt(r['now_ratio'])} | {fix} |")
    return "\n".join(lines)


def summary(scored: list[dict]) -> str:
    """Per model and region (both modes together): how many points hold (0.75-1.33), median and
    worst ratio. A point
    whose measurement (or, for a SACK fix, whose SACK-on measurement) the code classes cpu or
    contended is not scored: the CPU held it, not the model's subject."""
    groups: dict[tuple, list[float]] = {}
    skipped = 0
    limited = sum(1 for r in scored if str(r.get("error", "")).startswith("lab-limited"))
    for r in scored:
        if "error" in r:
            continue
        for kind, model, ratio, cls in (("now", r["model"], r["now_ratio"], r.get("limited_by")),
                                        ("sack-fix", r.get("fix_model"), r.get("fix_ratio"), r.get("fix_limited_by"))):
            if ratio is None:
                continue
            if cls in ("cpu", "contended") or (kind == "sack-fix" and r.get("limited_by") in ("cpu", "contended")):
                skipped += 1
                continue
            if model in ("bbr-nosack", "measured") and kind == "now":
                continue  # the measurement itself: nothing to score
            region = (r["cc"], "sack" if r["sack"] else "nosack", r["rate"], r["rtt_band"])
            groups.setdefault((kind, model, *region), []).append(ratio)
    lines = [f"({skipped} predictions not scored: their measurement was cpu or contended; {limited} points "
             "lab-limited: their lossless control path did not reach its link)", "",
             "| prediction | model | cc | sack now | rate | rtt | n | held | median | worst |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for key in sorted(groups):
        rs = groups[key]
        held = sum(HOLDS[0] <= x <= HOLDS[1] for x in rs)
        worst = max(rs, key=lambda x: abs(math.log(x)))
        lines.append("| " + " | ".join(str(k) for k in key) + f" | {len(rs)} | {held} | {statistics.median(rs):.2f} | {worst:.2f} |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rates", default="200mbit,1gbit")
    ap.add_argument("--queues", default="10ms,50ms")
    ap.add_argument("--losses", default="0.1,0.3,1", help="per cent")
    ap.add_argument("--delays", default="0,2,20", help="one way, ms")
    ap.add_argument("--cc", default="cubic,bbr")
    ap.add_argument("--modes", default="single,bidir")
    ap.add_argument("--duration", type=float, default=4.0)
    ap.add_argument("--out", type=Path, help="write the raw measurements here (for --from)")
    ap.add_argument("--from", dest="from_", type=Path, help="score saved measurements instead of measuring")
    args = ap.parse_args()
    if args.from_:
        rows = json.loads(args.from_.read_text())
    else:
        if os.geteuid() != 0:
            sys.exit("needs root (the lab's network namespaces)")
        for k in ("rates", "queues", "cc", "modes"):
            setattr(args, k, [x for x in getattr(args, k).split(",") if x])
        for k in ("rates",):
            [parse_rate_bps(x) for x in args.rates]
        args.losses = [float(x) for x in args.losses.split(",") if x]
        args.delays = [float(x) for x in args.delays.split(",") if x]
        print(f"# {platform.node()} {platform.machine()} {os.cpu_count()} cores, {platform.release()}, "
              f"load {os.getloadavg()[0]:.1f}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}", file=sys.stderr)
        rows = measure(args)
    scored = score(rows)
    print(table(scored))
    print()
    print(summary(scored))
    return 0


if __name__ == "__main__":
    sys.exit(main())
