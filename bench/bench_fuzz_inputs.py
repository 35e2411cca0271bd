"""Fuzz run of the files a site writes and keeps: rule packs, site files, saved scans (issue 36).

Three targets, ``--cases`` inputs each (2,000 by default; CI runs a small slice through
tests/hardening/test_fuzz_inputs.py, in a child process with a memory limit and a timeout):

  * rule_packs: a site rules directory with one pack of random rules: regexes from a pool
    (backtracking, unclosed, backreferences, huge, through ``${var}``), vars with YAML aliases
    (up to a billion laughs), aliases that hold themselves, deep nesting, random fields. The pack
    is loaded (and linted every fifth case); each regex rule it holds is then matched against
    hostile values of up to 1 MB. Allowed: a catalog, or a one-line ``StoradviseError``; a match
    is True/False or a ValueError (past its budget).
  * site_files: a site file with random ``vars:`` and ``defaults:`` (users, key and known_hosts
    paths, probe_helper, the paths root probes read, aliases, nesting). Loaded; when it loads, each
    host's probe helper, the sudoers snippet and the collect vars (``collect --ansible-vars``) are
    built and serialised. Allowed: those, a ``StoradviseError`` (a ValueError from ``sudoers_text``,
    which the CLI turns into one). Checked: no loaded name holds a control character, a helper lies
    in a system directory.
  * saved_scans: a real scan (``scan --from`` of a fixture capture) edited: values nested deep,
    numbers of thousands of digits, changes with other keys, adapters, hosts and rules, cut or
    flipped bytes. Read as ``report`` and ``verify --before`` read it, and planned as ``plan --scan``
    does. Allowed: a plan, or a ``StoradviseError``. Checked: every planned sysctl key is net.* or
    vm.*, no planned key holds a ``..`` component or is one its adapter refuses, and each planned
    change's rules declare changes of its adapter.

Every case must end within ``--case-seconds`` (10): a slower case is a failure (a hang, bounded).
Printed: per target, cases run, failures, seconds; then the peak RSS. Exit status 1 when any case
failed.

  .venv/bin/python bench/bench_fuzz_inputs.py                 # 2,000 cases per target
  .venv/bin/python bench/bench_fuzz_inputs.py --cases 40 --seed 36
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import resource
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from advisor.util.errors import StoradviseError  # noqa: E402

#: a real network.sysctl output (tests/fixtures/network: captured in a network namespace of the lab)
SYSCTL_OUTPUT = ROOT / "tests" / "fixtures" / "network" / "sysctl-netns-gpfs-server.txt"
HOSTILE = ["a\n", "\x00", "ALL", "x$(touch M)", "-oProxyCommand=id", '/tmp/k" -oProxyCommand=x "', "../../etc/passwd",
           "/etc/shadow", "/usr/local/sbin/storadvise-probe", "/tmp/storadvise-probe", "scanner", "root", "é漢",
           "{{ lookup('pipe','id') }}", "%wheel", "#0", "/etc/nftables/main.nft", "/var/log/xrootd/c/xrootd.log",
           "/var/log/xrootd/../../../etc/shadow", "", " ", "9" * 5001, "kernel.core_pattern", "net.ipv4.tcp_sack"]
PATTERNS = ["^([a-z]+)+$", "(unclosed", r"(a)\1", "(?=a)b", "(" * 300 + "a" + ")*" * 300, "^(.*b){40}", "bbr|cubic",
            "[", "a{1000}{1000}", "x" * 5000, "\\", "(?P<n>a)(?P=n)", ".*", "^$", "${cc}"]
LONG_VALUES = ["a" * 31 + "!", "x" * 1_000_000, "bbr", "", "\n" * 1000, "é" * 100_000, "a" * 200_000 + "!"]


def pick(rng: random.Random, good: list, hostile: list | None = None, p_hostile: float = 0.12):
    """Mostly a legal value, sometimes a hostile one: most cases load, and what they load is walked."""
    return rng.choice(hostile if hostile is not None and rng.random() < p_hostile else good)


class Tally:
    def __init__(self, name: str, case_seconds: float):
        self.name, self.cases, self.failures, self.first = name, 0, 0, []
        #: cases read whole (the others were refused with a one-line error)
        self.accepted = 0
        self.case_seconds = case_seconds
        self.t0 = time.monotonic()

    def fail(self, what: str) -> None:
        self.failures += 1
        if len(self.first) < 20:
            self.first.append(what[-3000:])

    def timed(self, started: float, what: str) -> None:
        took = time.monotonic() - started
        if took > self.case_seconds:
            self.fail(f"{what}: took {took:.1f} s (at most {self.case_seconds} s)")

    def line(self) -> str:
        return (f"{self.name:<12} {self.cases:>6} cases ({self.accepted} read, {self.cases - self.accepted} refused)  "
                f"{self.failures:>4} failed  {time.monotonic() - self.t0:7.1f} s")


def yaml_text(rng: random.Random, depth: int = 0) -> str:
    """A flow-style YAML value: scalars from the hostile pool, lists, mappings, sometimes deep."""
    r = rng.random()
    if depth > 3 or r < 0.5:
        return json.dumps(rng.choice(HOSTILE + PATTERNS + [1, 2.5, True, None, "9" * 30]))
    if r < 0.7:
        return "[" + ", ".join(yaml_text(rng, depth + 1) for _ in range(rng.randint(0, 3))) + "]"
    if r < 0.75:
        n = rng.choice([10, 70, 1000, 20_000])
        return "[" * n + "]" * n
    return "{" + ", ".join(f"k{i}: {yaml_text(rng, depth + 1)}" for i in range(rng.randint(0, 3))) + "}"


def aliases(rng: random.Random, indent: str) -> list[str]:
    """Anchors and aliases: a few small repeats, a bomb of 2..9 levels, or an alias holding itself."""
    kind = rng.randrange(3)
    if kind == 0:
        return [f"{indent}small: &small [1, 2]", f"{indent}again: [*small, *small]"]
    if kind == 1:
        levels = rng.randint(2, 9)
        out = [f"{indent}l0: &l0 \"lol\""]
        out += [f"{indent}l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 10) + "]" for i in range(1, levels + 1)]
        return out
    return [f"{indent}loop: &loop [1, *loop]"]


# ------------------------------------------------------------------------------------ rule packs


def _pack(rng: random.Random) -> str:
    lines = []
    if rng.random() < 0.6:
        lines += ["vars:", f"  cc: {json.dumps(pick(rng, ['bbr|cubic', '^[a-z]+$', '^([a-z]+)+$'], PATTERNS, 0.4))}"]
        if rng.random() < 0.3:
            lines += aliases(rng, "  ")
        if rng.random() < 0.3:
            lines.append(f"  other: {yaml_text(rng)}")
    lines.append("rules:")
    for i in range(rng.randint(1, 3)):
        op = pick(rng, ["regex", "regex", "eq", "in", "present"], ["between", "nope"])
        if op == "regex":
            expected = json.dumps(pick(rng, ["bbr|cubic", "^([a-z]+)+$", "^(.*b){40}", "${cc}"], PATTERNS, 0.3))
        else:
            expected = pick(rng, ['"bbr"', '["bbr", "cubic"]'], [yaml_text(rng)])
        where = ""
        if rng.random() < 0.2:
            where = f", where: {{path: x, operator: regex, expected: {json.dumps(pick(rng, ['a+'], PATTERNS, 0.5))}}}"
        rid = pick(rng, [f"SITE-R{i}"], ["bad id", f"SITE-R{i}\n", "NET-TCP-SACK"])
        severity = pick(rng, ["low", "high"], ["x", "9" * 30])
        lines.append(f"  - {{id: {json.dumps(rid)}, title: t, probe: network.sysctl, "
                     f"fact: 'sysctls.\"net.ipv4.tcp_congestion_control\".runtime', operator: {op}, "
                     f"expected: {expected}, severity: {severity}, rationale: r{where}}}")
    text = "\n".join(lines) + "\n"
    if rng.random() < 0.05:  # cut somewhere
        text = text[:rng.randint(0, len(text))]
    return text


def fuzz_rule_packs(cases: int, rng: random.Random, case_seconds: float) -> Tally:
    from advisor.rules.comparisons import compare
    from advisor.rules.lint import lint
    from advisor.rules.rule_regex import MatchBudget
    from advisor.rules.specs import load_catalog, substitute_vars

    t = Tally("rule_packs", case_seconds)
    with tempfile.TemporaryDirectory() as tmp:
        for n in range(cases):
            d = Path(tmp) / f"r{n}"
            d.mkdir()
            text = _pack(rng)
            (d / "local.yml").write_text(text)
            started = time.monotonic()
            t.cases += 1
            try:
                try:
                    catalog = load_catalog(site_dirs=[d])
                except StoradviseError as exc:
                    if "\n" in str(exc):
                        t.fail(f"a multi-line error: {exc!r}")
                    continue
                t.accepted += 1
                if n % 5 == 0:
                    problems, _warnings = lint(site_dirs=[d])
                    if any("\n" in p for p in problems):
                        t.fail(f"a multi-line lint problem: {problems}")
                for rule in catalog.rules.values():
                    if rule.operator != "regex" or not str(rule.pack).startswith(str(d)):
                        continue
                    try:  # a ${var} without a default: the scan stops with this one-line error (lint names it)
                        pattern = substitute_vars(rule.expected, catalog.pack_vars)
                    except StoradviseError:
                        continue
                    budget = MatchBudget()
                    for value in LONG_VALUES:
                        try:
                            compare("regex", value, pattern, budget)
                        except ValueError:
                            pass
            except Exception:  # noqa: BLE001 (what the fuzz run is looking for)
                t.fail(f"{traceback.format_exc()}\n--- pack:\n{text[:2000]}")
            finally:
                t.timed(started, f"pack {text[:300]!r}")
                shutil.rmtree(d, ignore_errors=True)
    return t


# ------------------------------------------------------------------------------------ site files


def _site(rng: random.Random) -> str:
    lines = ["name: fz"]
    legal = {"user": ["scanner", "root"], "key": ["~/.ssh/id_ed25519", "/etc/storadvise/key"],
             "known_hosts": ["/etc/ssh/ssh_known_hosts"], "port": [22, 2222], "sudo": [True, False]}
    if rng.random() < 0.8:
        lines.append("defaults:")
        for field, good in legal.items():
            if rng.random() < 0.5:
                lines.append(f"  {field}: {json.dumps(pick(rng, good, HOSTILE + [70000]))}")
    lines.append("vars:")
    paths = {"probe_helper": [True, False, "/usr/local/sbin/storadvise-probe", "/opt/sa/bin/storadvise-probe"],
             "firewall_nftables_conf": ["/etc/nftables.conf", "/etc/nftables/main.nft"],
             "xcache_log": ["/var/log/xrootd/cache/xrootd.log"],
             "firewall_iptables_files": [{"ip": ["/etc/iptables/rules.v4"]}],
             "mesh_address": ["10.0.0.1", "wn1.example.org"]}
    for var, good in paths.items():
        if rng.random() < 0.4:
            lines.append(f"  {var}: {json.dumps(pick(rng, good, HOSTILE + [{'ip': [rng.choice(HOSTILE)]}], 0.3))}")
    if rng.random() < 0.3:
        lines += aliases(rng, "  ")
    if rng.random() < 0.3:
        lines.append(f"  extra: {yaml_text(rng)}")
    lines.append("hosts:")
    for i in range(rng.randint(1, 3)):
        name = pick(rng, [f"wn{i}"], ["a\n", "-x", "../x"])
        lines.append(f"  - name: {json.dumps(name)}")
        lines.append(f"    roles: [{rng.choice(['storage', 'cache', 'worker'])}]")
        if rng.random() < 0.4:
            lines.append(f"    user: {json.dumps(pick(rng, ['scanner'], HOSTILE))}")
        if rng.random() < 0.4:
            lines.append(f"    vars: {{probe_helper: {json.dumps(pick(rng, paths['probe_helper'], HOSTILE))}, "
                         f"xcache_log: {json.dumps(pick(rng, paths['xcache_log'], HOSTILE, 0.3))}}}")
    text = "\n".join(lines) + "\n"
    if rng.random() < 0.05:
        text = text[:rng.randint(0, len(text))]
    return text


def fuzz_site_files(cases: int, rng: random.Random, case_seconds: float) -> Tally:
    from advisor.collect.ansible import batch_vars
    from advisor.collect.collector import probe_context
    from advisor.collect.probe_helper import helper_text, sudoers_text
    from advisor.collect.probe_plan import root_probes, site_root_probes
    from advisor.site.probe_helper_path import SYSTEM_DIRS, helper_path
    from advisor.site.file import load_site

    t = Tally("site_files", case_seconds)
    with tempfile.TemporaryDirectory() as tmp:
        for n in range(cases):
            path = Path(tmp) / f"s{n}.yml"
            text = _site(rng)
            path.write_text(text)
            started = time.monotonic()
            t.cases += 1
            try:
                try:
                    site = load_site(str(path))
                except StoradviseError as exc:
                    if "\n" in str(exc):
                        t.fail(f"a multi-line error: {exc!r}")
                    continue
                t.accepted += 1
                for h in site.hosts:
                    for value in (h.name, h.user, h.address, str(h.key or ""), str(h.known_hosts or "")):
                        if value and any(ord(c) < 32 or c == "\x7f" for c in value):
                            t.fail(f"host {h.name!r} loaded with a control character: {value!r}")
                    ctx = probe_context(site, h, False, 1.0)
                    helper = helper_path(ctx.vars)
                    if helper is None:
                        continue
                    if not helper.startswith(SYSTEM_DIRS):
                        t.fail(f"a helper outside the system directories loaded: {helper!r}")
                    helper_text(ctx, root_probes(site, h))
                    try:
                        sudoers_text(h.user or "scanner", helper, site_root_probes(site))
                    except ValueError:
                        pass
                json.dumps(batch_vars(site, site.hosts, 1.0))  # collect --ansible-vars: the whole site, walked
            except Exception:  # noqa: BLE001
                t.fail(f"{traceback.format_exc()}\n--- site:\n{text[:2000]}")
            finally:
                t.timed(started, f"site {text[:300]!r}")
    return t


# ------------------------------------------------------------------------------------ saved scans


def real_scan(tmp: Path) -> tuple[str, Path]:
    """A real scan report (schema 2 JSON, as scan --json writes it) and the site file it is of."""
    from advisor.report.outputs import ReportFiles, write_report_files
    from advisor.scan.pipeline import open_scan, run_scan
    from advisor.scan.options import ScanOptions

    cap = tmp / "capture"
    (cap / "hosts" / "gpfs01").mkdir(parents=True)
    (cap / "hosts" / "gpfs01" / "network.sysctl.out").write_text(SYSCTL_OUTPUT.read_text())
    (cap / "manifest.json").write_text(json.dumps({
        "capture_format": 1, "collected_at": "2026-01-10T09:00:00+01:00",
        "site": {"name": "older", "hosts": [{"name": "gpfs01", "roles": ["storage"]}]},
        "hosts": {"gpfs01": {"reachable": True, "errors": []}}}))
    options = ScanOptions(from_capture=cap)
    report = run_scan(open_scan(options), options).report
    out = tmp / "scan.json"
    write_report_files(report, ReportFiles(json=out))
    site = tmp / "older.yml"
    site.write_text("name: older\nhosts:\n  - name: gpfs01\n    roles: [storage]\n  - name: gpfs02\n    roles: [storage]\n")
    return out.read_text(), site


def _edit_scan(rng: random.Random, doc: dict) -> str:
    failed = [f for f in doc["findings"] if f.get("changes")]
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(7)
        if op == 0 and failed:  # a change of another key, adapter, host or target
            c = rng.choice(rng.choice(failed)["changes"])
            field = rng.choice(["key", "adapter", "host", "target", "runtime"])
            c[field] = rng.choice(HOSTILE + ["sysctl", "block", "gpfs", "firewall", "gpfs02", 7, None, [1]])
        elif op == 1 and failed:  # a finding of another rule, or subject
            f = rng.choice(failed)
            f[rng.choice(["rule_id", "subject"])] = rng.choice(HOSTILE + ["NET-SYSCTL-NOT-PERSISTED", "BLOCK-READ-AHEAD"])
        elif op == 2:  # deep nesting somewhere
            n = rng.choice([65, 1000, 100_000])
            where = rng.choice(["mesh", "efficiency", "causes"])
            doc[where] = json.loads("[" * min(n, 500) + "]" * min(n, 500)) if n <= 500 else "@@DEEP%d@@" % n
        elif op == 3:  # a number with many digits
            doc["duration_s"] = "@@DIGITS@@"
        elif op == 4 and failed:
            rng.choice(rng.choice(failed)["changes"])["target"] = "@@DIGITS@@"
        elif op == 5:
            doc["profiles"] = [rng.choice(HOSTILE + ["generic", "/etc/shadow.yml"])]
        else:
            doc.pop(rng.choice(list(doc)), None)
    text = json.dumps(doc)
    text = text.replace('"@@DIGITS@@"', "9" * rng.choice([25, 400, 5001]))
    for n in (1000, 100_000):
        text = text.replace(f'"@@DEEP{n}@@"', "[" * n + "]" * n)
    if rng.random() < 0.1:
        b = bytearray(text.encode())
        for _ in range(rng.randint(1, 5)):
            b[rng.randrange(len(b))] = rng.getrandbits(8)
        text = b.decode("utf-8", "replace")
    if rng.random() < 0.05:
        text = text[:rng.randint(0, len(text))]
    return text


def fuzz_saved_scans(cases: int, rng: random.Random, case_seconds: float) -> Tally:
    from advisor.adapters import adapters
    from advisor.apply.declared_changes import declared_changes
    from advisor.apply.plan_input import load_plan_scan
    from advisor.apply.planner import build_plan
    from advisor.report.model import load_report
    from advisor.site.file import load_site

    t = Tally("saved_scans", case_seconds)
    with tempfile.TemporaryDirectory() as tmp:
        text, site_path = real_scan(Path(tmp))
        site = load_site(str(site_path))
        base = json.loads(text)
        declared = declared_changes(base, site)
        registry = adapters()
        for n in range(cases):
            hostile = _edit_scan(rng, copy.deepcopy(base))
            path = Path(tmp) / "hostile.json"
            path.write_text(hostile, errors="surrogatepass")
            started = time.monotonic()
            t.cases += 1
            try:
                for read in (load_report, lambda p: build_plan(load_plan_scan(p), site, str(p), declared=declared)):
                    try:
                        result = read(path)
                    except StoradviseError as exc:
                        if "\n" in str(exc):
                            t.fail(f"a multi-line error: {exc!r}")
                        continue
                    if not hasattr(result, "changes") or not hasattr(result, "cannot_apply"):
                        continue
                    t.accepted += 1
                    for planned in result.changes:
                        c = planned.change
                        if c.adapter == "sysctl" and not c.key.startswith(("net.", "vm.")):
                            t.fail(f"planned sysctl {c.key!r}")
                        if ".." in c.key.replace("\\", "/").split("/"):
                            t.fail(f"planned a path-like key {c.key!r}")
                        adapter = registry.get(c.adapter)
                        if adapter is None or adapter.key_problem(c.key):
                            t.fail(f"planned a key its adapter refuses: {c.adapter} {c.key!r}")
                        for rid in planned.rule_ids:
                            rule = declared.catalog.rules.get(rid)
                            if rule is None or c.adapter not in {tm.adapter for tm in rule.remediation.changes}:
                                t.fail(f"planned a change {rid} does not declare: {c.adapter} {c.key!r}")
            except Exception:  # noqa: BLE001
                t.fail(f"{traceback.format_exc()}\n--- scan (start):\n{hostile[:1500]}")
            finally:
                t.timed(started, "saved scan")
    return t


TARGETS = {"rule_packs": fuzz_rule_packs, "site_files": fuzz_site_files, "saved_scans": fuzz_saved_scans}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=36)
    ap.add_argument("--case-seconds", type=float, default=10.0)
    ap.add_argument("--target", choices=sorted(TARGETS), action="append")
    args = ap.parse_args(argv)
    failed = 0
    for name in args.target or sorted(TARGETS):
        tally = TARGETS[name](args.cases, random.Random(args.seed), args.case_seconds)
        print(tally.line(), flush=True)
        for what in tally.first[:3]:
            print("  " + what.replace("\n", "\n  ")[:3000])
        failed += tally.failures
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MiB")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
