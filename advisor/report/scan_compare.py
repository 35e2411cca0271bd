"""Two scans of a site compared, finding by finding and path by path: ``verify`` (advisor/apply/verify.py)
and the history (``history diff``, ``scan --fail-on-new``) read the same comparison.

Findings pair by (rule, host, subject): each is ``fixed`` (failed before, not now), ``still_failing``,
``new`` (fails now, did not before), ``not_checked`` (failed before; its probe was left out of the new
scan by ``--probes``/``--skip-probes``, or failed on the host, so it is not known to be fixed) or
``unchanged`` (neither scan fails it, not listed). Mesh paths pair by (src, dst), each with the
throughput before and after and their ratio. With ``hosts`` only those hosts' findings are compared.
"""

from __future__ import annotations

from typing import Any

from advisor.model.findings import SEVERITY_ORDER, FindingStatus
from advisor.collect.probe_selection import is_skipped, skipped_probes_of
from advisor.report.model import ScanReport


def _expand(report: ScanReport, hosts: set[str] | None = None) -> dict[tuple[str, str, str], Any]:
    """Findings per (rule, host, subject): merged findings are split per host so that a fix on
    one host of several shows. ``hosts``: only these hosts' findings."""
    out: dict[tuple[str, str, str], Any] = {}
    for f in report.findings:
        for h in f.hosts or [""]:
            if hosts is not None and h not in hosts:
                continue
            k = (f.rule_id, h, f.subject or "")
            prev = out.get(k)
            if prev is None or (prev.status != FindingStatus.fail and f.status == FindingStatus.fail):
                out[k] = f
    return out


def _brief(f) -> dict[str, Any] | None:
    if f is None:
        return None
    return {"status": f.status.value, "severity": f.severity.value, "observed": f.observed, "expected": f.expected}


def compare_findings(before: ScanReport, after: ScanReport, hosts: set[str] | None = None) -> list[dict[str, Any]]:
    b, a = _expand(before, hosts), _expand(after, hosts)
    # (rule, host) whose probe the new scan left out: one not_applicable finding without the subjects,
    # or (a Python rule that skips a host without facts) no finding at all on a host that had probes left out
    # or whose probe failed on the host this time (an error finding without the subjects: a timeout under load)
    not_checked = {(k[0], k[1]) for k, f in a.items()
                   if f.status == FindingStatus.error
                   or (f.status == FindingStatus.not_applicable and is_skipped(f.message))}
    judged = {(k[0], k[1]) for k in a}
    left_out_on = {h.name for h in after.hosts if skipped_probes_of(h)}
    rows = []
    for k in sorted(set(b) | set(a)):
        fb, fa = b.get(k), a.get(k)
        failed_b = fb is not None and fb.status == FindingStatus.fail
        failed_a = fa is not None and fa.status == FindingStatus.fail
        if failed_b and not failed_a and ((k[0], k[1]) in not_checked
                                          or ((k[0], k[1]) not in judged and k[1] in left_out_on)):
            outcome = "not_checked"
        elif failed_b and not failed_a:
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
    order = {"still_failing": 0, "new": 1, "not_checked": 2, "fixed": 3}
    rows.sort(key=lambda r: (order[r["outcome"]], -SEVERITY_ORDER.index(r["severity"]), r["rule_id"], r["host"]))
    return rows


def _path_brief(p: dict[str, Any] | None) -> dict[str, Any] | None:
    if p is None:
        return None
    return {k: p.get(k) for k in ("measured_bps", "expected_bps", "retransmits", "status", "error", "limited_by") if k in p}


def measured_paths(report: ScanReport) -> dict[tuple[str, str], dict[str, Any]]:
    """(src, dst) -> the path as the report measured it: the mesh's tests, then the production flows
    of the paths no test measured (``source`` says which: the flow path's own dict gains no key)."""
    out = {(p.get("src"), p.get("dst")): {**p, "source": "mesh"}
           for p in (report.mesh or {}).get("paths") or [] if isinstance(p, dict)}
    for p in (report.flows or {}).get("paths") or []:
        if isinstance(p, dict):
            out.setdefault((p.get("src"), p.get("dst")), {**p, "source": "flows"})
    return out


def compare_paths(before: ScanReport, after: ScanReport) -> list[dict[str, Any]]:
    """Each path measured before or after (a mesh test, else production flows: ``source``)."""
    pb, pa = measured_paths(before), measured_paths(after)
    rows = []
    for k in sorted(set(pb) | set(pa), key=lambda x: (str(x[0]), str(x[1]))):
        b, a = pb.get(k), pa.get(k)
        mb, ma = (b or {}).get("measured_bps"), (a or {}).get("measured_bps")
        exp = (a or {}).get("expected_bps") or (b or {}).get("expected_bps")
        rows.append({
            "src": k[0], "dst": k[1], "source": (a or b or {}).get("source"), "before": _path_brief(b),
            "after": _path_brief(a),
            "ratio_after_before": round(ma / mb, 3) if ma and mb else None,
            "after_of_expected": round(ma / exp, 3) if ma and exp else None,
        })
    return rows


def new_failures(previous: ScanReport | None, report: ScanReport, fail_on: str) -> list[dict[str, Any]]:
    """Failures at or above ``fail_on`` that the previous scan of the site did not have (all of them without one)."""
    threshold = SEVERITY_ORDER.index(fail_on)
    if previous is None:
        previous = report.model_copy(update={"findings": []})
    return [r for r in compare_findings(previous, report)
            if r["outcome"] == "new" and SEVERITY_ORDER.index(r["severity"]) >= threshold]
