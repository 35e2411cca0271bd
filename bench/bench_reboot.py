"""Benchmark: fixes survive a reboot, on every shape of lab.

For each shape (a shipped scenario, or a scenario generated from a seed with ``storadvise lab generate``),
in a lab registry of its own (removed at the end):

  1. ``lab up``; ``scan`` without the mesh and the active efficiency test (before); ``lab reboot`` of
     every host and ``scan`` (before, rebooted: a runtime-only drift of the scenario is gone);
  2. ``plan`` from that scan; real ``ansible-playbook apply-tuning.yml`` in the plan directory;
  3. ``apply-tuning.yml`` a second time: its recap must say changed=0 on every host;
  4. ``scan`` again (applied): the findings the apply fixed are those failing before and not now;
  5. ``lab reboot`` of every host; ``scan`` (rebooted): no fixed finding may fail again;
  6. ``rollback.yml``; ``lab reboot`` of every host; ``scan`` (rolled back): the failing findings must
     be the ones of the rebooted before state, compared by meaning (rule, host, subject; not by text
     or order).

The comparisons hold the findings of the rules the plan's changes name (plan.json): measured findings
no change touches (disk latency and utilisation under this machine's load) come and go on their own.

One line per shape, then the failures spelled out. Exit 1 when a shape fails a check. Needs root.

  .venv/bin/python bench/bench_reboot.py --all                 # every shipped scenario and seeds 1-10
  .venv/bin/python bench/bench_reboot.py --scenario ifca --seed 3 --json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

BIN = Path(sys.executable).parent
SCENARIOS = REPO / "advisor" / "lab" / "scenarios"


def _run(argv: list, cwd: Path | None = None, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PYTHONPATH": str(REPO)})


def _cli(*args) -> subprocess.CompletedProcess:
    return _run([sys.executable, "-c", "import sys; from advisor.cli.root import main; sys.exit(main())", *args])


def _playbook() -> str:
    p = shutil.which("ansible-playbook", path=str(BIN)) or shutil.which("ansible-playbook")
    if not p:
        raise SystemExit("bench_reboot: ansible-playbook is not installed")
    return p


def failing(scan: dict) -> set[tuple[str, str, str]]:
    """(rule, host, subject) of every failed finding: the meaning of a scan's failures."""
    out = set()
    for f in scan["findings"]:
        if f.get("status") == "fail":
            for h in f.get("hosts") or ["-"]:
                out.add((f["rule_id"], h, str(f.get("subject") or "")))
    return out


def planned_rules(plan: Path) -> set[str]:
    """The rules the plan's changes fix (plan.json): the findings an apply, a reboot or a rollback can
    move. Measured findings (disk latency, utilisation) that no change names are left out of the
    comparisons: they follow the machine's load, not the configuration."""
    return {r for c in json.loads((plan / "plan.json").read_text()).get("changes", []) for r in c.get("rules") or []}


def recap(stdout: str) -> dict[str, dict[str, int]]:
    out = {}
    for line in stdout.split("PLAY RECAP", 1)[-1].splitlines():
        if ":" in line and "=" in line:
            host, rest = line.split(":", 1)
            out[host.strip()] = {k: int(v) for k, v in (p.split("=") for p in rest.split()) if v.isdigit()}
    return out


class Shape:
    """One lab shape's run; every step's outcome is kept for the table."""

    def __init__(self, label: str, scenario: str, workdir: Path, progress=lambda m: None) -> None:
        self.label, self.scenario, self.dir = label, scenario, workdir
        self.name = "rb-" + "".join(c for c in label if c.isalnum() or c in "-_")[:30]
        self.progress = progress
        self.row: dict = {"shape": label, "problems": []}

    def scan(self, tag: str) -> dict:
        out = self.dir / f"{tag}.json"
        cp = _cli("scan", "--site", self.name, "--no-mesh", "--no-efficiency", "--sample-seconds", "0.2",
                  "--no-history", "--fail-on", "critical", "-o", out)
        if cp.returncode not in (0, 2, 3) or not out.exists():
            raise RuntimeError(f"scan {tag} failed ({cp.returncode}): {cp.stderr.strip()[-400:]}")
        return json.loads(out.read_text())

    def reboot_all(self, hosts: list[str]) -> list[dict]:
        from advisor.lab.control import lab_reboot

        return [lab_reboot(self.name, h) for h in hosts]

    def apply(self, plan: Path, playbook: str) -> subprocess.CompletedProcess:
        return _run([_playbook(), playbook], cwd=plan)

    def run(self) -> dict:
        from advisor.lab.control import lab_down, lab_up

        t0 = time.monotonic()
        row = self.row
        try:
            self.progress(f"{self.label}: up")
            rec = lab_up(self.scenario, self.name, recreate=True).record
            hosts = sorted(rec.hosts)
            row["hosts"] = len(hosts)
            before = self.scan("before")
            fb = failing(before)
            row["failing_before"] = len(fb)
            plan = self.dir / "plan"
            cp = _cli("plan", "--site", self.name, "--scan", self.dir / "before.json", "--out", plan, "--json")
            if cp.returncode not in (0, 2) or not (plan / "apply-tuning.yml").exists():
                raise RuntimeError(f"plan failed ({cp.returncode}): {cp.stderr.strip()[-400:]}")
            # the before state as a boot leaves it (a runtime-only drift of the scenario is gone after a
            # reboot, with or without the apply): what rollback + reboot must give back
            self.reboot_all(hosts)
            baseline = failing(self.scan("before-rebooted"))
            self.progress(f"{self.label}: apply")
            ap = self.apply(plan, "apply-tuning.yml")
            row["apply_rc"] = ap.returncode
            rc1 = recap(ap.stdout)
            row["changed_1"] = sum(r.get("changed", 0) for r in rc1.values())
            if ap.returncode not in (0, 2) or not rc1:
                row["problems"].append(f"apply exit {ap.returncode}: {(ap.stdout + ap.stderr).strip()[-300:]}")
            ap2 = self.apply(plan, "apply-tuning.yml")
            rc2 = recap(ap2.stdout)
            row["changed_2"] = sum(r.get("changed", 0) for r in rc2.values())
            if row["changed_2"] or not rc2:
                row["problems"].append("second apply: " + (", ".join(
                    f"{h} changed={r.get('changed')}" for h, r in rc2.items() if r.get("changed")) or "no recap"))
            touched = planned_rules(plan)
            row["planned_rules"] = len(touched)
            fb = {f for f in fb if f[0] in touched}
            baseline = {f for f in baseline if f[0] in touched}
            row["erased_by_reboot"] = [f"{r}@{h}" for r, h, _s in sorted(fb - baseline)]
            fa = failing(self.scan("applied"))
            fixed = fb - fa
            row["fixed"] = len(fixed)
            self.progress(f"{self.label}: reboot {len(hosts)} hosts")
            self.reboot_all(hosts)
            fr = failing(self.scan("rebooted"))
            back = sorted(fixed & fr)
            row["returned"] = [f"{r}@{h}" + (f"[{s}]" if s else "") for r, h, s in back]
            if back:
                row["problems"].append("fixed findings back after reboot: " + ", ".join(row["returned"]))
            new = sorted(fr - fb)
            row["new_after_reboot"] = [f"{r}@{h}" for r, h, _s in new]
            self.progress(f"{self.label}: rollback")
            rb = self.apply(plan, "rollback.yml")
            row["rollback_rc"] = rb.returncode
            if rb.returncode not in (0, 2):
                row["problems"].append(f"rollback exit {rb.returncode}: {(rb.stdout + rb.stderr).strip()[-300:]}")
            self.reboot_all(hosts)
            fbk = {f for f in failing(self.scan("rolledback")) if f[0] in touched}
            missing, extra = sorted(baseline - fbk), sorted(fbk - baseline)
            row["rollback_same"] = not missing and not extra
            if missing or extra:
                row["problems"].append("after rollback + reboot, not the before state: "
                                       + "; ".join([f"-{r}@{h}" for r, h, _ in missing] + [f"+{r}@{h}" for r, h, _ in extra]))
        except Exception as exc:  # one shape's failure is reported; the others still run
            row["problems"].append(f"error: {exc}")
        finally:
            try:
                lab_down(self.name)
            except Exception as exc:
                row["problems"].append(f"lab down: {exc}")
            row["seconds"] = round(time.monotonic() - t0, 1)
        row["ok"] = not row["problems"]
        return row


def shapes(args: argparse.Namespace, workdir: Path) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    names = sorted(p.stem for p in SCENARIOS.glob("*.yml")) if args.all else list(args.scenario or [])
    # a shipped scenario by name, or a scenario file (labelled by its file name)
    out += [(Path(n).stem if n.endswith((".yml", ".yaml")) else n, n) for n in names]
    seeds = range(1, 11) if args.all and not args.seed else (args.seed or [])
    for s in seeds:
        f = workdir / f"seed{s}.yml"
        cp = _cli("lab", "generate", "--seed", s, "--out", f)
        if cp.returncode:
            raise SystemExit(f"bench_reboot: lab generate --seed {s} failed: {cp.stderr.strip()[-300:]}")
        out.append((f"seed{s}", str(f)))
    return out


def table(rows: list[dict]) -> str:
    head = f"{'shape':<14} {'hosts':>5} {'fail0':>5} {'chg1':>5} {'fixed':>5} {'back':>4} {'chg2':>4} {'rollback':>8} {'secs':>6}  result"
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r['shape']:<14} {r.get('hosts', '-'):>5} {r.get('failing_before', '-'):>5} "
                     f"{r.get('changed_1', '-'):>5} {r.get('fixed', '-'):>5} {len(r.get('returned', [])):>4} "
                     f"{r.get('changed_2', '-'):>4} {('same' if r.get('rollback_same') else 'DIFF'):>8} "
                     f"{r.get('seconds', 0):>6}  {'ok' if r['ok'] else 'FAIL'}")
    for r in rows:
        for p in r["problems"]:
            lines.append(f"{r['shape']}: {p}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--all", action="store_true", help="every shipped scenario and seeds 1-10")
    ap.add_argument("--scenario", action="append", help="a shipped scenario name or a scenario file (repeatable)")
    ap.add_argument("--seed", action="append", type=int, help="a generated scenario's seed (repeatable)")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("bench_reboot: needs root (lab namespaces)", file=sys.stderr)
        return 1
    if not (args.all or args.scenario or args.seed):
        ap.error("give --all, --scenario or --seed")
    registry = Path(tempfile.mkdtemp(prefix="bench-reboot-", dir="/run"))
    os.environ["STORADVISE_LAB_DIR"] = str(registry / "labs")
    work = registry / "work"
    work.mkdir()
    rows = []
    try:
        for label, scenario in shapes(args, work):
            d = work / label
            d.mkdir()
            row = Shape(label, scenario, d, progress=lambda m: print(m, file=sys.stderr, flush=True)).run()
            rows.append(row)
            print(f"{label}: {'ok' if row['ok'] else 'FAIL'} in {row['seconds']}s"
                  + "".join(f"\n  {p}" for p in row["problems"]), file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(registry, ignore_errors=True)
    print(json.dumps(rows, indent=2) if args.json else table(rows))
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
