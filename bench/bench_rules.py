"""Benchmark: rule evaluation over N hosts against a plain Python loop doing the same comparisons.

The facts are those of a real collected site (a directory written by ``storadvise collect``,
e.g. of ``storadvise lab up --scenario ifca``): every host of the capture is parsed once, then
the worker hosts are copied until the site has N hosts (``wn00001`` ...), the other hosts kept
as they are. Three things are timed in the same process, each the best of --repeat runs:

  * ``loop``: a plain Python loop over the same host dicts doing each check rule's comparison
    (the fact read by its pre-split path, compared with the profile's expected value); nothing
    else: no findings, no evidence, no grouping;
  * ``checks``: ``advisor.rules.engine.evaluate`` restricted to the same check rules (findings
    with evidence, grouped by key, waivers, sorted);
  * ``all``: ``evaluate`` with every rule of the profile (analytic rules included),

and the ratios checks/loop (issue 14: <= 3) and, with --hosts-small, the growth of ``all``
from the small to the large site against the growth of the host count (1.0 = linear).

  .venv/bin/python bench/bench_rules.py --capture DIR --hosts 10000 --hosts-small 1000
"""

from __future__ import annotations

import argparse
import gc
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from advisor.collect.collector import collect_site_facts  # noqa: E402
from advisor.model.facts import FactSet, ProbeStatus  # noqa: E402
from advisor.rules.fact_paths import MISSING, get_path, split_path  # noqa: E402
from advisor.rules.engine import evaluate  # noqa: E402
from advisor.rules.specs import load_catalog, resolve_profiles, substitute_vars  # noqa: E402


def load_capture_facts(directory: Path) -> tuple:
    from advisor.scan.pipeline import captured_transports, load_capture

    site, manifest = load_capture(directory)
    facts = collect_site_facts(site, captured_transports(directory, manifest), parallel=4, sample_seconds=1)
    return site, facts


def grow(site, facts: FactSet, n: int, role: str) -> tuple:
    """A site and fact set of ``n`` hosts: the capture's hosts without ``role`` as they are, then
    copies of its ``role`` hosts (round robin) named wn00001..."""
    templates = [h for h in facts.hosts.values() if role in h.roles]
    keep = [h for h in facts.hosts.values() if role not in h.roles]
    if not templates:
        raise SystemExit(f"the capture has no host with role {role}")
    site_hosts = {h.name: h for h in site.hosts}
    hosts = {h.name: h for h in keep}
    new_site_hosts = [site_hosts[h.name] for h in keep]
    width = len(str(n))
    for i in range(max(0, n - len(keep))):
        t = templates[i % len(templates)]
        name = f"wn{i + 1:0{width}d}"
        hosts[name] = t.model_copy(update={"name": name})  # shares the (read-only) facts dicts
        new_site_hosts.append(site_hosts[t.name].model_copy(update={"name": name}))
    big_site = site.model_copy(update={"hosts": new_site_hosts})
    return big_site, FactSet(site=site.name, hosts=hosts, context=facts.context)


def plain_loop(factset: FactSet, checks: list, variables: dict) -> int:
    """Each check rule's comparison over the same dicts, written as a plain loop."""
    import operator as op

    ops = {"eq": op.eq, "ne": op.ne, "lt": op.lt, "le": op.le, "gt": op.gt, "ge": op.ge}
    failed = 0
    for rule in checks:
        roles = set(rule.roles)
        fact = split_path(rule.fact)
        each = split_path(rule.for_each) if rule.for_each else None
        expected = substitute_vars(rule.expected, variables)
        cmp = ops.get(rule.operator)
        for h in factset.hosts.values():
            if roles and not roles.intersection(h.roles):
                continue
            r = h.probes.get(rule.probe)
            if r is None or r.status != ProbeStatus.ok:
                continue
            items = [r.facts]
            if each is not None:
                coll = get_path(r.facts, each)
                items = list(coll.values()) if isinstance(coll, dict) else list(coll or [])
            for item in items:
                v = get_path(item, fact)
                if v is MISSING or v is None:
                    continue
                if cmp is not None:
                    try:
                        ok = cmp(float(v), float(expected))
                    except (TypeError, ValueError):
                        ok = cmp(str(v), str(expected))
                elif rule.operator in ("in", "not_in"):
                    ok = (v in expected) == (rule.operator == "in")
                else:
                    ok = v is not None
                failed += not ok
    return failed


def best_of(repeat: int, fn) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        gc.collect()
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def run(site, facts, n: int, role: str, profiles: list[str] | None, repeat: int) -> dict:
    big_site, big = grow(site, facts, n, role)
    gc.freeze()  # as the scan pipeline does once the facts are collected (advisor.collect.collector)
    catalog = load_catalog()
    names = profiles or big_site.profiles or ["generic"]
    resolved = resolve_profiles(names, catalog, overrides=big_site.vars)
    checks = [catalog.rules[r] for r in resolved.rule_ids if catalog.rules[r].kind != "python"]
    t_loop, _ = best_of(repeat, lambda: plain_loop(big, checks, resolved.vars))
    t_checks, ev = best_of(repeat, lambda: evaluate(big, big_site, profiles=names, catalog=catalog,
                                                     rule_filter=lambda r: r.kind != "python"))
    t_all, ev_all = best_of(repeat, lambda: evaluate(big, big_site, profiles=names, catalog=catalog))
    return {"hosts": len(big.hosts), "check_rules": len(checks), "rules": len(resolved.rule_ids),
            "loop": t_loop, "checks": t_checks, "all": t_all, "findings": len(ev_all.findings)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--capture", type=Path, required=True, help="a directory written by 'storadvise collect'")
    ap.add_argument("--hosts", type=int, default=10000)
    ap.add_argument("--hosts-small", type=int, default=0, help="also run this size and report the growth")
    ap.add_argument("--role", default="worker", help="role of the hosts copied (default worker)")
    ap.add_argument("--profile", action="append", default=[])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    site, facts = load_capture_facts(args.capture)
    print(f"machine: {platform.machine()}, {len(__import__('os').sched_getaffinity(0))} cores, "
          f"Python {platform.python_version()}; capture {args.capture} ({len(facts.hosts)} hosts)")
    results = []
    for n in ([args.hosts_small] if args.hosts_small else []) + [args.hosts]:
        r = run(site, facts, n, args.role, args.profile or None, args.repeat)
        results.append(r)
        print(f"{r['hosts']:>6} hosts, {r['rules']} rules ({r['check_rules']} checks): loop {r['loop']:.3f} s, "
              f"checks {r['checks']:.3f} s ({r['checks'] / r['loop']:.2f}x the loop), all rules {r['all']:.3f} s, "
              f"{r['findings']} findings", flush=True)
    if len(results) == 2:
        a, b = results
        print(f"growth {a['hosts']} -> {b['hosts']} hosts ({b['hosts'] / a['hosts']:.1f}x): all rules "
              f"{b['all'] / a['all']:.1f}x, loop {b['loop'] / a['loop']:.1f}x "
              f"(per-host cost ratio {(b['all'] / b['hosts']) / (a['all'] / a['hosts']):.2f}; 1.0 = linear)")
    worst = max(r["checks"] / r["loop"] for r in results)
    print(f"checks/loop worst {worst:.2f} (target <= 3)")
    return 0 if worst <= 3 else 1


if __name__ == "__main__":
    raise SystemExit(main())
