"""Benchmark: the diagnosis stage over a synthetic mesh of S servers x W workers, both directions.

``scan --from`` replays no mesh, so this feeds the stage a mesh of its own: S storage servers and W
workers (default 20 x 2,000: 80,000 paths), 1 Gb/s links, with the faults the diagnosis is about:
two servers with SACK off whose packets to every worker are lost at 0.3%, a tenth of the workers
20 ms away with a 256 KiB receive buffer, one server behind a packet-rate firewall. The findings
are what the rule packs give for them (a MESH-PATH-SLOW per slow path, the setting findings with
their changes). Timed in the same process, best of --repeat:

  * ``diagnose``: ``advisor.diagnosis.diagnose`` (causes, hygiene, unexplained, plan prediction);
  * ``json``: ``json.dumps`` of the same mesh, the work the report writer does for it anyway (peer),

and the ratio diagnose/json, with --small the growth from the small mesh to the large one against
the growth of the path count (1.0 = linear). It checks the causes found: the two SACK servers,
the slow rack's buffers, the firewall, the loss by hand; no clean server blamed.

  .venv/bin/python bench/bench_diagnosis.py --servers 20 --workers 2000 --small 200
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from advisor.diagnosis import DiagnosisInput, diagnose  # noqa: E402
from advisor.model.findings import Change, Finding, FindingStatus, Severity  # noqa: E402
from advisor.rules.specs import load_catalog  # noqa: E402

G = 1e9


def build(servers: int, workers: int) -> DiagnosisInput:
    st = [f"st{i:02d}" for i in range(1, servers + 1)]
    wn = [f"wn{i:05d}" for i in range(1, workers + 1)]
    far = set(wn[: max(1, workers // 10)])
    sack_off = set(st[:2])
    policed = st[2] if servers > 2 else None
    addr = {h: f"10.{i // 65536}.{(i // 256) % 256}.{i % 256}" for i, h in enumerate(st + wn)}

    def sysctls(sack="1", rmem="4096 131072 6291456"):
        return {"network.sysctl": {"sysctls": {
            "net.ipv4.tcp_sack": {"runtime": sack}, "net.ipv4.tcp_window_scaling": {"runtime": "1"},
            "net.ipv4.tcp_rmem": {"runtime": rmem}, "net.ipv4.tcp_wmem": {"runtime": "4096 16384 4194304"}}},
            "firewall": {"rules": []}}

    facts = {h: sysctls("0" if h in sack_off else "1") for h in st}
    facts.update({h: sysctls(rmem="4096 87380 262144" if h in far else "4096 131072 6291456") for h in wn})
    fw_text = "-A INPUT -p tcp -m hashlimit --hashlimit-above 20000/sec --hashlimit-name st -j DROP"
    if policed:
        facts[policed]["firewall"]["rules"] = [{"chain": "INPUT", "verdict": "drop", "limit": True, "addresses": [],
                                                "excluded_addresses": [], "text": fw_text}]
    paths, findings = [], []
    for s in st:
        for w in wn:
            for a, b in ((s, w), (w, s)):
                rtt = 20.0 if w in far else 0.2
                bps, retr = 945e6, 0
                if b in far:
                    bps = 48e6
                if a in sack_off:
                    bps, retr = min(bps, 70e6 if rtt < 1 else 9e6), 40
                if b == policed:
                    bps, retr = min(bps, 228e6), 3000
                paths.append({"src": a, "dst": b, "status": "ok", "measured_bps": bps, "expected_bps": G,
                              "ratio": bps / G, "retransmits": retr, "sent_bytes": int(bps * 5 / 8), "rtt_us": rtt * 1e3,
                              "mss": 1448, "streams": 1})
                if bps / G < 0.8:
                    findings.append(Finding(rule_id="MESH-PATH-SLOW", hosts=[a, b], subject=f"{a}->{b}",
                                            status=FindingStatus.fail, severity=Severity.high))

    def f(rule, hosts, changes, subject=None):
        return Finding(rule_id=rule, hosts=hosts, subject=subject, status=FindingStatus.fail, severity=Severity.high,
                       changes=[Change(host=h, adapter=ad, key=k, runtime=r, target=t) for h, ad, k, r, t in changes])

    findings.append(f("NET-TCP-SACK", sorted(sack_off), [(h, "sysctl", "net.ipv4.tcp_sack", "0", "1") for h in sack_off]))
    findings.append(f("MESH-BUFFER-LIMITED", sorted(far), [(h, "sysctl", "net.ipv4.tcp_rmem", "4096 87380 262144",
                                                            "4096 87380 33554432") for h in sorted(far)], "far rack"))
    if policed:
        findings.append(f("FW-STORAGE-NETWORK", [policed], [(policed, "firewall", "iptables ip filter INPUT: " + fw_text,
                                                            "present", "absent")], "storage network"))
    tags = {rid: set(spec.tags) for rid, spec in load_catalog().rules.items()}
    return DiagnosisInput(findings=findings, mesh={"paths": paths}, efficiency=None, facts=facts, tags=tags,
                          addresses=addr)


def best(fn, repeat: int) -> tuple[float, object]:
    out, t = None, float("inf")
    for _ in range(repeat):
        gc.collect()
        t0 = time.perf_counter()
        out = fn()
        t = min(t, time.perf_counter() - t0)
    return t, out


def check(d, servers: int) -> list[str]:
    problems = []
    kinds = {(c.kind, tuple(sorted({ch.key for ch in c.changes}))): c for c in d.causes}
    if not any("net.ipv4.tcp_sack" in k for _, k in kinds):
        problems.append("no SACK cause")
    if not any("net.ipv4.tcp_rmem" in k for _, k in kinds):
        problems.append("no receive-buffer cause")
    if servers > 2 and not any(ch.adapter == "firewall" for c in d.causes for ch in c.changes):
        problems.append("no firewall cause")
    if not any(c.kind == "by_hand" for c in d.causes):
        problems.append("no loss cause")
    clean = {f"st{i:02d}" for i in range(4, servers + 1)}
    if any(clean & set(c.hosts) for c in d.causes):
        problems.append("a clean server blamed")
    return problems


def run(servers: int, workers: int, repeat: int) -> dict:
    inp = build(servers, workers)
    t_diag, d = best(lambda: diagnose(inp), repeat)
    t_json, _ = best(lambda: json.dumps(inp.mesh), repeat)
    return {"paths": len(inp.mesh["paths"]), "diagnose_s": t_diag, "json_s": t_json, "causes": len(d.causes),
            "problems": check(d, servers)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--servers", type=int, default=20)
    ap.add_argument("--workers", type=int, default=2000)
    ap.add_argument("--small", type=int, default=0, help="also a mesh of this many workers, for the growth")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    print(f"machine: {platform.machine()}, {platform.processor() or '?'}, Python {platform.python_version()}, "
          f"{__import__('os').cpu_count()} cpu(s)")
    big = run(a.servers, a.workers, a.repeat)
    print(f"{big['paths']:,} paths: diagnose {big['diagnose_s']:.2f} s, json.dumps of the mesh {big['json_s']:.2f} s, "
          f"ratio {big['diagnose_s'] / big['json_s']:.1f}; {big['causes']} causes; "
          + ("checks ok" if not big["problems"] else "PROBLEMS: " + ", ".join(big["problems"])))
    if a.small:
        small = run(a.servers, a.small, a.repeat)
        growth = (big["diagnose_s"] / small["diagnose_s"]) / (big["paths"] / small["paths"])
        print(f"{small['paths']:,} paths: diagnose {small['diagnose_s']:.2f} s; growth against paths {growth:.2f} "
              "(1.0 = linear)")
    return 1 if big["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
