"""Benchmark: the apply under faults, on lab shapes (the shapes of bench_reboot.py).

For each shape, in a lab registry of its own (removed at the end), after ``lab up``, a scan and a plan:

  1. a reference: ``apply-tuning.yml`` uninterrupted, its summary's failed settings and the scan after it;
     then ``rollback.yml`` and ``lab reboot`` of every host (back to the before state);
  2. for every role the plan uses: ``apply-tuning.yml`` killed (SIGKILL, by pid: the ansible-playbook
     process and its worker processes, read from /proc before the kill) right after the first host's
     result in that role's play; then ``apply-tuning.yml`` again: it must finish with no failure the
     reference did not have, the scan after it must fail exactly what the reference's did (by meaning;
     the findings of the rules the plan's changes name, as bench_reboot.py compares them),
     and no persisted file of the lab may hold a line twice that it did not hold twice before; then
     ``rollback.yml`` and a reboot of every host;
  3. a host down mid-play: the host (its boot process, by pid: the whole host) is killed right after the
     first host's result in the first play that has it; the other hosts complete (recap, no failure on
     them the reference did not have) and ``apply-summary.json`` names the host under
     ``unfinished_hosts`` with its planned changes of the roles it never finished.

Needs root.

  .venv/bin/python bench/bench_apply_faults.py --scenario ifca
  .venv/bin/python bench/bench_apply_faults.py --all --json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_reboot import REPO, Shape, _cli, _playbook, failing, planned_rules, recap, shapes  # noqa: E402

#: files of a lab host that are not persisted configuration (logs, pid files, the emulators' own state)
_NOT_CONFIG = (".log", ".pid", ".json", ".lock", ".ready")


def persisted_files(lab_dir: Path) -> dict[Path, str]:
    """Every text file under the lab's host directories (what a role may edit), by path."""
    out = {}
    for f in sorted((lab_dir / "hosts").rglob("*")):
        if not f.is_file() or f.is_symlink() or f.name.endswith(_NOT_CONFIG) or f.stat().st_size > 1 << 20:
            continue
        if any(p in ("log", "data", "cache", "adm", "run", "sys-block", "ovl") for p in f.relative_to(lab_dir).parts):
            continue
        try:
            out[f] = f.read_text()
        except (UnicodeDecodeError, OSError):
            continue
    return out


def config_lines(text: str) -> Counter:
    """How often each configuration line (not blank, not a comment) occurs in a file."""
    return Counter(l.strip() for l in text.splitlines() if l.strip() and not l.lstrip().startswith(("#", ";", "<!--")))


def new_duplicates(before: dict[Path, str], after: dict[Path, str]) -> list[str]:
    """Lines a file now holds more than once that it did not hold more than once before."""
    out = []
    for f, text in after.items():
        was = config_lines(before.get(f, ""))
        for line, n in config_lines(text).items():
            if n > 1 and n > was.get(line, 0):
                out.append(f"{f}: {line!r} x{n}")
    return out


def descendants(pid: int) -> list[int]:
    """The process's children, grandchildren ... read from /proc (pids only)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for t in tasks:
            try:
                kids = [int(x) for x in open(f"/proc/{p}/task/{t}/children").read().split()]
            except OSError:
                continue
            out += kids
            todo += kids
    return out


def play_titles(plan: Path) -> dict[str, str]:
    """role -> the title of its play in apply-tuning.yml."""
    import yaml

    out = {}
    for play in yaml.safe_load((plan / "apply-tuning.yml").read_text()):
        for r in play.get("roles") or []:
            out[r["role"] if isinstance(r, dict) else r] = play["name"]
    return out


def apply_interrupted(plan: Path, title: str, on_cue) -> tuple[str, bool]:
    """Run apply-tuning.yml; when the play ``title`` has reported its first host's result, call
    ``on_cue(proc)``. Returns (stdout so far, whether the cue came)."""
    proc = subprocess.Popen([_playbook(), "apply-tuning.yml"], cwd=plan, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    out, in_play, cued = [], False, False
    assert proc.stdout is not None
    for line in proc.stdout:
        out.append(line)
        if line.startswith("PLAY ["):
            in_play = line.startswith(f"PLAY [{title}]")
        elif in_play and not cued and line.startswith(("ok: [", "changed: [", "failed: [", "fatal: [")):
            cued = True
            on_cue(proc, line.split("[", 1)[1].split("]", 1)[0])
    proc.wait(timeout=900)
    return "".join(out), cued


def kill_playbook(proc: subprocess.Popen, _reported: str = "") -> None:
    pids = [proc.pid] + descendants(proc.pid)
    for p in pids:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass


def failed_settings(plan: Path) -> set[tuple[str, str, str]]:
    f = plan / "apply-summary.json"
    if not f.exists():
        return set()
    s = json.loads(f.read_text())
    return {(h, x["role"], str(x.get("setting"))) for h, v in s["hosts"].items() for x in v["failed"]}


class FaultShape(Shape):
    def run(self) -> dict:
        from advisor.lab.control import lab_down, lab_up
        from advisor.lab.records import LabRecord

        t0 = time.monotonic()
        row = self.row
        row["kills"] = {}
        try:
            rec = lab_up(self.scenario, self.name, recreate=True).record
            hosts = sorted(rec.hosts)
            row["hosts"] = len(hosts)
            self.scan("before")
            plan = self.dir / "plan"
            cp = _cli("plan", "--site", self.name, "--scan", self.dir / "before.json", "--out", plan, "--json")
            if cp.returncode not in (0, 2):
                raise RuntimeError(f"plan failed ({cp.returncode}): {cp.stderr.strip()[-400:]}")
            changes = json.loads((plan / "plan.json").read_text())["changes"]
            roles = list(dict.fromkeys(c["role"] for c in changes))
            row["roles"] = roles
            titles = play_titles(plan)
            files0 = persisted_files(rec.dir)
            # 1. the reference
            self.apply(plan, "apply-tuning.yml")
            ref_failed = failed_settings(plan)
            touched = planned_rules(plan)
            ref_scan = {f for f in failing(self.scan("reference")) if f[0] in touched}
            self.apply(plan, "rollback.yml")
            self.reboot_all(hosts)
            # 2. a kill in every role's play
            for role in roles:
                self.progress(f"{self.label}: kill in {role}")
                _out, cued = apply_interrupted(plan, titles[role], kill_playbook)
                again = self.apply(plan, "apply-tuning.yml")
                problems = []
                if not cued:
                    problems.append("the play never reported a host (not killed)")
                if again.returncode not in (0, 2) or not recap(again.stdout):
                    problems.append(f"re-run exit {again.returncode}")
                extra = failed_settings(plan) - ref_failed
                if extra:
                    problems.append("re-run failed: " + ", ".join(f"{h} {r} {s}" for h, r, s in sorted(extra)))
                dups = new_duplicates(files0, persisted_files(rec.dir))
                if dups:
                    problems.append("duplicate lines: " + "; ".join(dups[:5]))
                now = {f for f in failing(self.scan(f"killed-{role}")) if f[0] in touched}
                if now != ref_scan:
                    problems.append("scan after the re-run differs from the uninterrupted apply's: " + "; ".join(
                        [f"-{r}@{h}" for r, h, _ in sorted(ref_scan - now)] + [f"+{r}@{h}" for r, h, _ in sorted(now - ref_scan)]))
                self.apply(plan, "rollback.yml")
                self.reboot_all(hosts)
                row["kills"][role] = "ok" if not problems else "; ".join(problems)
                row["problems"] += [f"kill in {role}: {p}" for p in problems]
            # 3. a host down mid-play
            victim_role = next((r for r in roles if len({c["host"] for c in changes if c["role"] == r}) > 1), roles[0] if roles else None)
            if victim_role:
                rhosts = sorted({c["host"] for c in changes if c["role"] == victim_role})
                later = {h: sum(1 for c in changes if c["host"] == h) for h in rhosts}
                boots = {h: p for p, w, h in LabRecord.load(self.name).pids() if w == "sshd"}
                chosen: list[str] = []

                def host_down(_proc: subprocess.Popen, reported: str) -> None:
                    # a host of the play that has not reported yet (the most planned changes first), by its boot pid
                    left = sorted((h for h in rhosts if h != reported), key=lambda h: -later[h]) or rhosts
                    chosen.append(left[0])
                    os.kill(boots[left[0]], signal.SIGKILL)

                self.progress(f"{self.label}: a host down in {victim_role}")
                out, cued = apply_interrupted(plan, titles[victim_role], host_down)
                victim = chosen[0] if chosen else "-"
                summary = json.loads((plan / "apply-summary.json").read_text())
                rc = recap(out)
                others = [h for h in hosts if h != victim and h in rc]
                row["host_down"] = {"host": victim, "role": victim_role,
                                    "unfinished": summary.get("hosts", {}).get(victim, {}).get("unfinished", []),
                                    "unfinished_hosts": summary.get("unfinished_hosts")}
                if not cued:
                    row["problems"].append("host down: the play never reported a host")
                if victim not in (summary.get("unfinished_hosts") or []):
                    row["problems"].append(f"host down: apply-summary.json does not name {victim} as unfinished")
                bad = [h for h in others if rc[h].get("unreachable") or rc[h].get("failed")
                       and not any(x[0] == h for x in ref_failed)]
                extra = {x for x in failed_settings(plan) - ref_failed if x[0] != victim}
                if bad or extra:
                    row["problems"].append("host down: other hosts did not complete: "
                                           + ", ".join(bad + [f"{h} {r} {s}" for h, r, s in sorted(extra)]))
        except Exception as exc:
            row["problems"].append(f"error: {exc}")
        finally:
            try:
                lab_down(self.name)
            except Exception as exc:
                row["problems"].append(f"lab down: {exc}")
            row["seconds"] = round(time.monotonic() - t0, 1)
        row["ok"] = not row["problems"]
        return row


def table(rows: list[dict]) -> str:
    lines = [f"{'shape':<14} {'hosts':>5} {'secs':>6}  kills (role: result)  / host down"]
    for r in rows:
        kills = ", ".join(f"{k}:{'ok' if v == 'ok' else 'FAIL'}" for k, v in r.get("kills", {}).items())
        hd = r.get("host_down") or {}
        down = (f"{hd['host']} in {hd['role']}: {len(hd['unfinished'])} unfinished named" if hd else "-")
        lines.append(f"{r['shape']:<14} {r.get('hosts', '-'):>5} {r.get('seconds', 0):>6}  {kills or '-'}  / {down}"
                     f"  {'ok' if r['ok'] else 'FAIL'}")
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
        print("bench_apply_faults: needs root (lab namespaces)", file=sys.stderr)
        return 1
    if not (args.all or args.scenario or args.seed):
        ap.error("give --all, --scenario or --seed")
    registry = Path(tempfile.mkdtemp(prefix="bench-faults-", dir="/run"))
    os.environ["STORADVISE_LAB_DIR"] = str(registry / "labs")
    work = registry / "work"
    work.mkdir()
    rows = []
    try:
        for label, scenario in shapes(args, work):
            d = work / label
            d.mkdir()
            row = FaultShape(label, scenario, d, progress=lambda m: print(m, file=sys.stderr, flush=True)).run()
            rows.append(row)
            print(f"{label}: {'ok' if row['ok'] else 'FAIL'} in {row['seconds']}s", file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(registry, ignore_errors=True)
    print(json.dumps(rows, indent=2) if args.json else table(rows))
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
