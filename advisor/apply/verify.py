"""Scan a site (what ``storadvise scan`` does, as a function) and compare two scans.

``compare_scans(before, after)`` pairs findings by (rule, host, subject) and mesh paths by
(src, dst): each finding is ``fixed`` (failed before, not now), ``still_failing``, ``new``
(fails now, did not before) or ``unchanged`` (neither scan fails it); each path carries the
throughput before and after and their ratio.
"""

from __future__ import annotations

import time
from typing import Any, Callable

from advisor.errors import StoradviseError
from advisor.findings import SEVERITY_ORDER, FindingStatus
from advisor.report.model import ScanReport
from advisor.site import Site


def scan_site(site: Site, *, profiles: list[str] | None = None, with_mesh: bool = True, parallel: int = 16,
              trust_new_hosts: bool = False, connect_timeout: float = 10.0, sample_seconds: float = 1.0,
              quiet: bool = True, console: Any = None, with_efficiency: bool = True,
              progress: Callable[[str, bool, str], None] | None = None) -> ScanReport:
    """Probe every host, run the mesh when asked and the site has one, evaluate the rules."""
    from advisor.collector import collect_site_facts, now_iso
    from advisor.measurements import run_site_measurements
    from advisor.report.model import build_report
    from advisor.rule_engine import evaluate
    from advisor.transport.factory import SshOptions, transport_for

    options = SshOptions(trust_new_hosts=trust_new_hosts, connect_timeout=connect_timeout)

    def factory(host):
        return transport_for(host, site, options)

    started, t0 = now_iso(), time.monotonic()
    factset = collect_site_facts(site, factory, parallel=parallel, sample_seconds=sample_seconds, progress=progress)
    run_site_measurements(site, factory, factset, with_mesh=with_mesh, with_efficiency=with_efficiency,
                          quiet=quiet, console=console)
    evaluation = evaluate(factset, site, profiles=profiles or None)
    return build_report(factset, evaluation.findings, profiles=evaluation.profile.names, started_at=started,
                        finished_at=now_iso(), duration_s=time.monotonic() - t0, site_file=site.source)


# ----------------------------------------------------------------------------- comparison


def _key(f) -> tuple[str, str, str]:
    return f.rule_id, ",".join(sorted(f.hosts)), f.subject or ""


def _expand(report: ScanReport) -> dict[tuple[str, str, str], Any]:
    """Findings per (rule, host, subject): merged findings are split per host so that a fix on
    one host of several shows."""
    out: dict[tuple[str, str, str], Any] = {}
    for f in report.findings:
        for h in f.hosts or [""]:
            k = (f.rule_id, h, f.subject or "")
            prev = out.get(k)
            if prev is None or (prev.status != FindingStatus.fail and f.status == FindingStatus.fail):
                out[k] = f
    return out


def _brief(f) -> dict[str, Any] | None:
    if f is None:
        return None
    return {"status": f.status.value, "severity": f.severity.value, "observed": f.observed, "expected": f.expected}


def compare_findings(before: ScanReport, after: ScanReport) -> list[dict[str, Any]]:
    b, a = _expand(before), _expand(after)
    rows = []
    for k in sorted(set(b) | set(a)):
        fb, fa = b.get(k), a.get(k)
        failed_b = fb is not None and fb.status == FindingStatus.fail
        failed_a = fa is not None and fa.status == FindingStatus.fail
        if failed_b and not failed_a:
            outcome = "fixed"
        elif failed_b and failed_a:
            outcome = "still_failing"
        elif failed_a:
            outcome = "new"
        else:
            continue  # passing (or not applicable) in both scans: not part of the story
        sev = (fa or fb).severity.value
        rows.append({"rule_id": k[0], "host": k[1], "subject": k[2] or None, "severity": sev, "outcome": outcome,
                     "title": (fa or fb).title, "before": _brief(fb), "after": _brief(fa)})
    order = {"still_failing": 0, "new": 1, "fixed": 2}
    rows.sort(key=lambda r: (order[r["outcome"]], -SEVERITY_ORDER.index(r["severity"]), r["rule_id"], r["host"]))
    return rows


def _path_brief(p: dict[str, Any] | None) -> dict[str, Any] | None:
    if p is None:
        return None
    return {k: p.get(k) for k in ("measured_bps", "expected_bps", "retransmits", "status", "error") if k in p}


def compare_paths(before: ScanReport, after: ScanReport) -> list[dict[str, Any]]:
    pb = {(p.get("src"), p.get("dst")): p for p in ((before.mesh or {}).get("paths") or [])}
    pa = {(p.get("src"), p.get("dst")): p for p in ((after.mesh or {}).get("paths") or [])}
    rows = []
    for k in sorted(set(pb) | set(pa), key=lambda x: (str(x[0]), str(x[1]))):
        b, a = pb.get(k), pa.get(k)
        mb, ma = (b or {}).get("measured_bps"), (a or {}).get("measured_bps")
        exp = (a or {}).get("expected_bps") or (b or {}).get("expected_bps")
        rows.append({
            "src": k[0], "dst": k[1], "before": _path_brief(b), "after": _path_brief(a),
            "ratio_after_before": round(ma / mb, 3) if ma and mb else None,
            "after_of_expected": round(ma / exp, 3) if ma and exp else None,
        })
    return rows


def compare_efficiency(before: dict | None, after: dict | None) -> dict[str, Any] | None:
    """Active-test efficiency before -> after (``ratio`` = after mean / before mean)."""
    if not before and not after:
        return None
    from advisor.efficiency.active import compare_efficiency as compare

    return compare(before, after)


def verify_result(before: ScanReport, after: ScanReport, fail_on: str) -> dict[str, Any]:
    if before.site != after.site:
        raise StoradviseError(f"the before scan is of site {before.site!r}, the new one of {after.site!r}")
    findings = compare_findings(before, after)
    paths = compare_paths(before, after)
    threshold = SEVERITY_ORDER.index(fail_on)
    failing = [r for r in findings if r["outcome"] in ("still_failing", "new")
               and SEVERITY_ORDER.index(r["severity"]) >= threshold]
    counts = {o: sum(1 for r in findings if r["outcome"] == o) for o in ("fixed", "still_failing", "new")}
    return {
        "site": after.site, "before_started_at": before.started_at, "after_started_at": after.started_at,
        "fail_on": fail_on, "summary": {**counts, "failing_at_or_above_fail_on": len(failing),
                                        "mesh_ran": bool(after.mesh)},
        "findings": findings, "paths": paths,
        "efficiency": compare_efficiency(before.efficiency, after.efficiency),
    }


def network_touched(before: ScanReport) -> bool:
    """Did the plan (the before scan's failed findings) change network or firewall settings?"""
    return any(f.status == FindingStatus.fail and f.remediation.role in ("network_tuning", "firewall")
               for f in before.findings)
