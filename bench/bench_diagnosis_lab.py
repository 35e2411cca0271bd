"""Benchmark: the diagnosis scored on generated lab sites (and ifca), end to end. Needs root.

For each seed: ``lab generate`` -> ``lab up`` -> ``scan`` (the mesh on, no active test) -> the
diagnosis scored against the scenario's ``expect`` list -> ``plan`` -> real ``ansible-playbook`` ->
``verify --plan`` -> the calibration of the plan's prediction. Printed per seed and over all:

  * recall: measured symptoms (``symptom: true``) named by a cause on the faulty host that explains
    a slow path of that host (advisor/lab/expect_check.py) / all of them;
  * precision: causes that name a host with an injected fault / all causes;
  * placed: other injected faults that are in a cause or in hygiene / all of them;
  * calibration: measured / predicted after the plan (median, worst), for the paths no remaining
    by-hand cause limits, and how many are outside 0.75-1.33; apart, the paths a by-hand cause
    still holds (predicted with it in place: Mathis with the loss for a lossy port);
  * a CPU-loaded host (cpu-load): how many of its paths were inconclusive (``cpu``/``contended``);
    a cause on it alone counts against precision.

Run it from a checkout nobody edits meanwhile (a ``git worktree``, with ``PYTHONPATH`` set to it):
each step starts ``storadvise`` anew and imports the code as it is at that moment.

  sudo .venv/bin/python bench/bench_diagnosis_lab.py --seeds 1-10 [--ifca] [--keep]

Each seed takes a few minutes (two short meshes); run it on a quiet machine: the lab's hosts share
its cores, and a CPU-bound measurement is reported as such, not scored.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from advisor.lab.expect_check import measurement_faults, symptom_named, unplaced_findings  # noqa: E402
from advisor.lab.generate import generate_scenario, scenario_yaml  # noqa: E402

BIN = Path(sys.executable).parent


def sh(*args, cwd=None, timeout=1800) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, cwd=cwd, timeout=timeout)


def storadvise(*args, **kw) -> subprocess.CompletedProcess:
    return sh(BIN / "storadvise", *args, **kw)


def seeds_of(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        a, _, b = part.partition("-")
        out += list(range(int(a), int(b) + 1)) if b else [int(a)]
    return out


def score(report: dict, expect: list[dict]) -> dict:
    causes = report.get("causes") or []
    # a host loaded during the tests (cpu-load) names no finding; a cause on it alone is a false one
    expect, loaded = measurement_faults(expect)
    faulty = {e["host"] for e in expect}
    symptoms = [e for e in expect if e.get("symptom")]
    found = [e for e in symptoms if symptom_named(report, e)]
    precise = [c for c in causes if set(c["hosts"]) & faulty]
    placed_refs = {(r["rule_id"], h) for r in report.get("hygiene") or [] for h in r["hosts"]}
    for c in causes:
        placed_refs |= {(r["rule_id"], h) for r in c["explains"] for h in r["hosts"]}
        placed_refs |= {(ch["adapter"], ch["host"]) for ch in c["changes"]}
    others = [e for e in expect if not e.get("symptom") and not e.get("waived")]
    fails = {(f["rule_id"], h) for f in report["findings"] if f["status"] == "fail" for h in f["hosts"]}
    placed = [e for e in others if (e["rule"], e["host"]) in placed_refs
              or ((e["rule"], e["host"]) in fails and any(e["host"] in c["hosts"] for c in causes))]
    cpu_paths = [p for p in (report.get("mesh") or {}).get("paths") or [] if p.get("limited_by") in ("cpu", "contended")
                 and loaded & {p.get("src"), p.get("dst")}]
    return {"symptoms": len(symptoms), "found": len(found), "causes": len(causes), "precise": len(precise),
            "loaded": len(loaded), "inconclusive_paths": len(cpu_paths),
            "others": len(others), "placed": len(placed),
            "missed": [e["fault"] for e in symptoms if e not in found],
            "blamed": [c["title"] for c in causes if c not in precise],
            "unplaced": [f"{e['rule']}@{e['host']}" for e in others if e not in placed]}


def run_site(name: str, scenario: Path | None, expect: list[dict], work: Path, keep: bool) -> dict:
    up = storadvise("lab", "up", "--scenario", scenario or "ifca", "--name", name, timeout=900)
    if up.returncode != 0:
        return {"error": f"lab up: {up.stderr.strip()[-300:]}"}
    try:
        before = work / f"{name}-before.json"
        cp = storadvise("scan", "--site", name, "--no-efficiency", "--json", "-o", before)
        if cp.returncode not in (0, 2, 3):
            return {"error": f"scan: {cp.stderr.strip()[-300:]}"}
        report = json.loads(before.read_text())
        res = score(report, expect)
        plan = work / f"{name}-plan"
        cp = storadvise("plan", "--site", name, "--scan", before, "--out", plan, "--json")
        if cp.returncode not in (0, 3):
            return {**res, "error": f"plan: {cp.stderr.strip()[-300:]}"}
        ap = sh(shutil.which("ansible-playbook", path=str(BIN)) or "ansible-playbook", "apply-tuning.yml", cwd=plan)
        if ap.returncode != 0:
            return {**res, "error": "apply failed"}
        cp = storadvise("verify", "--site", name, "--before", before, "--plan", plan, "--no-efficiency", "--json")
        verify = json.loads(cp.stdout) if cp.stdout.strip().startswith("{") else {}
        (work / f"{name}-verify.json").write_text(cp.stdout)
        prediction = json.loads((plan / "plan.json").read_text()).get("plan_prediction") or []
        # every predicted path measured after, from the verify's own scan
        measured = {}
        for c in verify.get("causes") or []:
            for m in c["measured"]:
                measured[(m["metric"], m["subject"])] = m["value"]
        by_hand = {p["subject"] for c in report.get("causes") or [] if c["kind"] == "by_hand" for p in c["predicted"]}
        # every slow path of the scan before, measured after (verify's own scan), against the plan's
        # prediction; those a remaining by-hand cause holds are counted too (and named in held)
        slow = {f["subject"] for f in report["findings"] if f["rule_id"] == "MESH-PATH-SLOW" and f["status"] == "fail"}
        after_paths = {f"{q['src']}->{q['dst']}": q for q in (verify_after(verify) or [])}
        rs, held, inconclusive = [], [], 0
        for p in prediction:
            v = measured.get((p["metric"], p["subject"]))
            if p["metric"] != "throughput" or p["subject"] not in slow or not p["after"]:
                continue
            q = after_paths.get(p["subject"]) or {}
            v = v or q.get("measured_bps")
            if q.get("limited_by") in ("cpu", "contended") or p["model"] == "inconclusive":
                inconclusive += 1
                continue
            if v:
                rs.append(v / p["after"])
                if p["subject"] in by_hand:
                    held.append(rs[-1])
        return {**res, "ratios": rs, "held": held, "inconclusive": inconclusive,
                "calibration": verify.get("calibration"), "unplaced_findings": unplaced_findings(report),
                "unexplained_slow": sorted(slow - {r["subject"] for c in report.get("causes") or [] for r in c["explains"]}
                                           - {r["subject"] for r in report.get("inconclusive") or []})}
    finally:
        if not keep:
            storadvise("lab", "down", "--name", name)


def verify_after(verify: dict) -> list[dict]:
    """The paths of verify's own scan ({src, dst, measured_bps, limited_by}), from its JSON."""
    return [{"src": p["src"], "dst": p["dst"], **(p.get("after") or {})} for p in verify.get("paths") or []]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="1-10")
    ap.add_argument("--ifca", action="store_true", help="also the ifca scenario (its faults as expectations)")
    ap.add_argument("--scenario", action="append", type=Path, default=[],
                    help="also this scenario file (its expect: list scores it); repeatable")
    ap.add_argument("--keep", action="store_true", help="leave the labs up")
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("needs root (network namespaces)", file=sys.stderr)
        return 1
    print(f"machine: {platform.machine()}, {os.cpu_count()} cpu(s), Python {platform.python_version()}; "
          f"load {os.getloadavg()[0]:.1f}")
    work = Path(tempfile.mkdtemp(prefix="bench-diag-"))
    rows = []
    sites: list[tuple[str, Path | None, list[dict]]] = []
    for seed in seeds_of(a.seeds):
        data = generate_scenario(seed, name=f"bd{seed}")
        path = work / f"bd{seed}.yml"
        path.write_text(scenario_yaml(data))
        sites.append((f"bd{seed}", path, data["expect"]))
    if a.ifca:
        sites.append(("bdifca", None, [
            {"rule": "NET-TCP-SACK", "host": h, "fault": "tcp_sack=0"} for h in ("gpfs01", "gpfs02")] + [
            {"rule": "MESH-PATH-SLOW", "host": h, "symptom": True, "fault": f"{h} -> workers lossy, SACK off"}
            for h in ("gpfs01", "gpfs02")] + [{"rule": "FW-STORAGE-NETWORK", "host": "gpfs02", "fault": "hashlimit"}]))
    for path in a.scenario:
        data = yaml.safe_load(path.read_text())
        sites.append((f"bd{data['name']}"[:30], path, data.get("expect") or []))
    for name, path, expect in sites:
        r = run_site(name, path, expect, work, a.keep)
        rows.append((name, r))
        rs = r.get("ratios") or []
        out = sum(1 for x in rs if not 0.75 <= x <= 1.33)
        print(f"{name}: symptoms {r.get('found', 0)}/{r.get('symptoms', 0)} found, causes {r.get('precise', 0)}/"
              f"{r.get('causes', 0)} on faulty hosts, other faults placed {r.get('placed', 0)}/{r.get('others', 0)}"
              + (f"; CPU-loaded hosts {r['loaded']}, their paths inconclusive {r['inconclusive_paths']}"
                 if r.get("loaded") else "")
              + f"; calibration {len(rs)} paths" + (f", median {statistics.median(rs):.2f}, worst "
                                                 f"{max(rs, key=lambda x: abs(x - 1)):.2f}, {out} outside 0.75-1.33"
                                                 if rs else "")
              + (f" ({len(r['held'])} of them still held by a by-hand cause, median {statistics.median(r['held']):.2f})"
                 if r.get("held") else "")
              + (f"; {r['inconclusive']} inconclusive after" if r.get("inconclusive") else "")
              + (f"; UNPLACED findings {r['unplaced_findings']}" if r.get("unplaced_findings") else "")
              + (f"; UNEXPLAINED slow paths {r['unexplained_slow']}" if r.get("unexplained_slow") else "")
              + (f"; ERROR {r['error']}" if r.get("error") else "")
              + (f"; missed {r['missed']}" if r.get("missed") else "")
              + (f"; blamed {r['blamed']}" if r.get("blamed") else "")
              + (f"; unplaced {r['unplaced']}" if r.get("unplaced") else ""), flush=True)
    sym = sum(r.get("symptoms", 0) for _, r in rows)
    found = sum(r.get("found", 0) for _, r in rows)
    causes = sum(r.get("causes", 0) for _, r in rows)
    precise = sum(r.get("precise", 0) for _, r in rows)
    allr = [x for _, r in rows for x in r.get("ratios") or []]
    print(f"ALL: recall {found}/{sym} = {found / sym if sym else 1:.2f}, precision {precise}/{causes} = "
          f"{precise / causes if causes else 1:.2f}"
          + (f"; calibration {len(allr)} paths, median {statistics.median(allr):.2f}, worst "
             f"{max(allr, key=lambda x: abs(x - 1)):.2f}, {sum(1 for x in allr if not 0.75 <= x <= 1.33)} outside"
             if allr else ""))
    return 0 if found == sym and precise == causes else 2


if __name__ == "__main__":
    sys.exit(main())
