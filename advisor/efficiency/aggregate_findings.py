"""Findings from the aggregates: the I/O-bound signature, wasted wall time, below baseline.

EFF-IO-BOUND: among the event bins (IFCA's 100 ... 100000 table) efficiency falls from its
best bin to the longest bin by at least ``drop`` (relative) while the CPU time per event stays
flat (max/min of the bins' medians <= ``flat``): the jobs do the same work per event but wait
longer for data. Wall-time bins cannot show this (a job that waits is longer *because* it
waits), so without event counts the rule is not applicable. With a scan JSON the finding
names the scan's failed findings on the same hosts (or whose subject, e.g. a mesh path
``gpfs01->wn01``, names one of them).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from advisor.efficiency.analysis import EVENT_LABELS, Histogram, Summary
from advisor.efficiency.records import EfficiencyInputError, short_host
from advisor.model.findings import Finding, FindingStatus, Remediation, Severity

REF_IFCA = ("IFCA CMS Tier-2 CPU-efficiency study (Instituto de Fisica de Cantabria, talk: 'Efficiency Comparison Between"
            " IFCA and another T2'): 28-43% -> 73-82% for 100..100000 events; wall ~2x for >1000 events")
REF_CHIRP = "CMSSW FWCore/Services CondorStatusService: ChirpCMSSWReadBytes, ChirpCMSSWReadTimeMsecs, ChirpCMSSW_SiteIO"
REF_CALTECH = ("Balcas et al. (Caltech), 'Job CPU Performance comparison based on MINIAOD reading options: local versus"
               " remote': jobs that fail waste their whole runtime")


def load_scan(path: str) -> list[dict[str, Any]]:
    """The findings of a scan JSON (``{"findings": [{rule_id, hosts, status, severity, ...}]}``)."""
    try:
        with open(path, "rb") as f:
            doc = json.load(f)
    except OSError as e:
        raise EfficiencyInputError(path, e.strerror or "cannot be read") from None
    except ValueError as e:
        line = getattr(e, "lineno", None)
        raise EfficiencyInputError(path, f"not JSON: {getattr(e, 'msg', e)}", line=line) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("findings"), list):
        raise EfficiencyInputError(path, "a scan JSON is an object with a 'findings' list")
    out = []
    for i, f in enumerate(doc["findings"]):
        if not isinstance(f, dict) or "rule_id" not in f:
            raise EfficiencyInputError(path, f"findings[{i}] has no rule_id")
        out.append(f)
    return out


def related_scan_findings(scan: list[dict[str, Any]], hosts: list[str]) -> list[dict[str, Any]]:
    """Failed scan findings on these hosts (full or short names), or whose subject names one."""
    names = set(hosts) | {short_host(h) for h in hosts}
    out = []
    for f in scan:
        if str(f.get("status", "")).lower() != "fail":
            continue
        fh = [str(h) for h in (f.get("hosts") or [])]
        on = [h for h in fh if h in names or short_host(h) in names]
        subject = str(f.get("subject") or "")
        via = [n for n in names if n and n in subject.replace("->", " ").replace(",", " ").split()]
        if on or via:
            out.append({"rule_id": f["rule_id"], "hosts": fh, "severity": f.get("severity"),
                        "subject": f.get("subject"), "title": f.get("title", "")})
    return out


def _fmt(v: float | None, pct: bool = True) -> str:
    if v is None:
        return "-"
    return f"{v * 100:5.1f}%" if pct else f"{v:.4g}"


def length_table_lines(summary: Summary) -> list[str]:
    rows = summary.length_table()
    kind = summary.length_kind
    head = f"{kind:>13} {'jobs':>7} {'median':>7} {'p10':>7} {'p90':>7}"
    if kind == "events":
        head += f" {'cpu/event s':>12} {'wall/event s':>12}"
    lines = [head]
    for r in rows:
        s = f"{r['bin']:>13} {r['count']:>7} {_fmt(r['median']):>7} {_fmt(r['p10']):>7} {_fmt(r['p90']):>7}"
        if kind == "events":
            s += f" {_fmt(r['cpu_per_event_median'], False):>12} {_fmt(r['wall_per_event_median'], False):>12}"
        lines.append(s)
    return lines


def io_bound_finding(
    summary: Summary, scan: list[dict[str, Any]] | None = None, drop: float = 0.2,
    flat: float = 1.3, min_jobs: int = 5,
) -> Finding:
    base = dict(rule_id="EFF-IO-BOUND", title="CPU efficiency falls with job length while CPU per event stays flat",
                references=[REF_IFCA])
    bins = [(i, b) for i, b in enumerate(summary.event_bins) if b.jobs >= min_jobs]
    cpe_of = {i: summary.cpu_per_event[i].quantile(0.5) for i, _ in bins}
    if len(bins) < 2:
        return Finding(**base, status=FindingStatus.not_applicable, severity=Severity.info,
                       message=f"needs event counts in at least two length bins of >= {min_jobs} jobs "
                               f"(have {summary.with_events} jobs with events)",
                       evidence=length_table_lines(summary))
    med = {i: b.eff.quantile(0.5) or 0.0 for i, b in bins}
    peak = max(med, key=lambda i: med[i])
    last = bins[-1][0]
    evidence = length_table_lines(summary)
    site_drop = 1 - med[last] / med[peak] if last != peak and med[peak] > 0 else 0.0
    # the same signature per host: a fault on some paths shows on some hosts only (IFCA)
    host_bins: dict[str, dict[int, float]] = {}
    for i, _b in bins:
        for h, hist in summary.bin_hosts(i).items():
            if hist.count >= min_jobs and h != "(unknown)":
                host_bins.setdefault(h, {})[i] = hist.quantile(0.5) or 0.0
    flagged: list[tuple[float, str, int, int]] = []
    for h, m in host_bins.items():
        if len(m) < 2:
            continue
        hp = max(m, key=lambda i: m[i])
        hl = max(m)
        if hl > hp and m[hp] > 0 and 1 - m[hl] / m[hp] >= drop:
            flagged.append((1 - m[hl] / m[hp], h, hp, hl))
    flagged.sort(reverse=True)
    lo = min(peak, *(f[2] for f in flagged)) if flagged else peak
    cpe = [cpe_of[i] for i, _ in bins if lo <= i <= last]
    cpe = [c for c in cpe if c]
    spread = max(cpe) / min(cpe) if cpe and min(cpe) > 0 else float("inf")
    observed = {"peak_bin": EVENT_LABELS[peak], "peak_median": round(med[peak], 4),
                "longest_bin": EVENT_LABELS[last], "longest_median": round(med[last], 4),
                "relative_drop": round(site_drop, 4), "cpu_per_event_spread": round(spread, 3),
                "hosts_with_drop": [{"host": h, "drop": round(d, 4), "from_bin": EVENT_LABELS[a], "to_bin": EVENT_LABELS[b]}
                                    for d, h, a, b in flagged[:50]]}
    expected = {"relative_drop_below": drop, "cpu_per_event_spread_at_most": flat}
    if (site_drop < drop and not flagged) or spread > flat:
        why = ("efficiency does not fall by the threshold towards the longest jobs" if spread <= flat
               else "CPU per event changes too (a different job mix, not I/O)")
        return Finding(**base, status=FindingStatus.passed, severity=Severity.info, observed=observed,
                       expected=expected, evidence=evidence, message=why)
    rel_drop = max([site_drop] + [f[0] for f in flagged])
    slow: list[tuple[float, str]] = []
    if site_drop >= drop:
        # hosts whose long jobs fall below the threshold
        per_host: dict[str, Histogram] = {}
        for i, _b in bins:
            if i > peak:
                for h, hist in summary.bin_hosts(i).items():
                    per_host.setdefault(h, Histogram()).merge(hist)
        limit = med[peak] * (1 - drop)
        slow = sorted(((hist.quantile(0.5) or 0.0, h) for h, hist in per_host.items()
                       if h != "(unknown)" and (hist.quantile(0.5) or 0.0) <= limit))
    seen = {h for _, h in slow}
    slow += [(0.0, h) for _, h, _, _ in flagged if h not in seen]
    evidence = evidence + [f"{h}: {host_bins[h][a]:.1%} ({EVENT_LABELS[a]} events) -> {host_bins[h][b]:.1%} "
                           f"({EVENT_LABELS[b]} events)" for _, h, a, b in flagged[:20]]
    hosts = [h for _, h in slow]
    related = related_scan_findings(scan, hosts) if scan is not None else []
    observed["hosts_below"] = len(hosts)
    if related:
        observed["related_findings"] = related
        evidence = evidence + [f"scan: {r['rule_id']} failed on {', '.join(r['hosts']) or r.get('subject')}"
                               for r in related]
    elif scan is not None:
        evidence = evidence + ["scan: no failed finding on these hosts; check the data path (servers, network mesh)"]
    text = ("Jobs wait for data: check the storage and network path of these workers "
            "(throughput mesh WN<->storage, TCP settings on storage servers, firewall, file-system "
            "client cache and prefetch, SAN cache).")
    if related:
        text += " The scan already failed: " + ", ".join(sorted({r["rule_id"] for r in related})) + "."
    return Finding(
        **base, hosts=hosts, status=FindingStatus.fail,
        severity=Severity.high if rel_drop >= 0.3 else Severity.medium,
        observed=observed, expected=expected, evidence=evidence,
        rationale="IFCA: the same CPU per event but ~2x the wall time for jobs of more than 1000 events was "
                  "an I/O problem (iptables, tcp_sack=0 on GPFS servers, pagepool); fixing it doubled efficiency.",
        remediation=Remediation(text=text),
    )


def storage_io_finding(summary: Summary, drop: float = 0.2, min_jobs: int = 5) -> Finding:
    """EFF-IO-BOUND-STORAGE: per storage read, efficiency falls with the jobs' read rate."""
    base = dict(rule_id="EFF-IO-BOUND-STORAGE", title="CPU efficiency falls with read rate for the jobs of a storage",
                references=[REF_IFCA, REF_CHIRP])
    groups = summary.storage.to_dict(drop, min_jobs)
    judged = {k: g for k, g in groups.items() if g["io_bound"] is not None}
    if not judged:
        return Finding(**base, status=FindingStatus.not_applicable, severity=Severity.info,
                       message=f"needs jobs with read volume (CMS Chirp, FJR) in two read-rate bins of >= {min_jobs} jobs "
                               f"for one storage ({sum(g['count'] for g in groups.values())} such jobs)")
    evidence = [f"{k}: median {g['from_median']:.1%} at {g['from_bin']} MB/core-s -> {g['to_median']:.1%} at "
                f"{g['to_bin']} MB/core-s ({g['count']} jobs, read wait {_fmt(g['read_wait_share']).strip()})"
                for k, g in judged.items()]
    bound = {k: g for k, g in judged.items() if g["io_bound"]}
    observed = {k: {"efficiency_drop": g["efficiency_drop"], "from_bin": g["from_bin"], "to_bin": g["to_bin"],
                    "read_wait_share": g["read_wait_share"]} for k, g in judged.items()}
    if not bound:
        return Finding(**base, status=FindingStatus.passed, severity=Severity.info, observed=observed,
                       expected={"relative_drop_below": drop}, evidence=evidence)
    worst = max(g["efficiency_drop"] for g in bound.values())
    return Finding(
        **base, subject=", ".join(sorted(bound)), status=FindingStatus.fail,
        severity=Severity.high if worst >= 0.3 else Severity.medium,
        observed=observed, expected={"relative_drop_below": drop}, evidence=evidence,
        message=f"jobs reading from {', '.join(sorted(bound))} lose efficiency as they read faster",
        rationale="Jobs that read faster from one storage wait longer for it: the storage (or the path to it) "
                  "limits them, as IFCA's long jobs were limited by their GPFS servers' network settings.",
        remediation=Remediation(text="Check that storage's servers and the path to it (scan its storage hosts, the "
                                     "throughput mesh to them); consider a cache (XCache) in front of a remote one."),
    )


def failed_wall_finding(summary: Summary, threshold: float = 0.05) -> Finding:
    base = dict(rule_id="EFF-FAILED-WALL", title="Core-hours spent on jobs that failed", references=[REF_CALTECH])
    if not summary.total_core_seconds:
        return Finding(**base, status=FindingStatus.not_applicable, severity=Severity.info,
                       message="no job with wall time and cores")
    share = summary.wasted_core_seconds / summary.total_core_seconds
    top = summary.wasted_by_host.most_common(10)
    evidence = [f"{summary.failed_jobs} failed jobs of {summary.records}: "
                f"{summary.wasted_core_seconds / 3600:.1f} of {summary.total_core_seconds / 3600:.1f} core-hours ({share:.1%})"]
    evidence += [f"{h}: {s / 3600:.1f} core-hours" for h, s in top]
    failed = share >= threshold
    sev = Severity.info if not failed else (Severity.high if share >= 0.2 else Severity.medium)
    return Finding(
        **base, hosts=[h for h, _ in top if h != "(unknown)"] if failed else [],
        status=FindingStatus.fail if failed else FindingStatus.passed, severity=sev,
        observed={"wasted_share": round(share, 4), "wasted_core_hours": round(summary.wasted_core_seconds / 3600, 3),
                  "failed_jobs": summary.failed_jobs},
        expected={"wasted_share_below": threshold}, evidence=evidence,
        rationale="A job that fails wastes its whole runtime; storage errors (a failing disk, an overloaded "
                  "server) show up as failures concentrated on some hosts.",
        remediation=Remediation(text="Look at the hosts with most wasted core-hours and at their storage findings."),
    )


def baseline_finding(summary: Summary, baseline: Summary | None = None, target: float | None = None,
                     tolerance: float = 0.1) -> Finding:
    base = dict(rule_id="EFF-BELOW-BASELINE", title="CPU efficiency below the baseline")
    ours = summary.overall.eff.quantile(0.5)
    if ours is None:
        return Finding(**base, status=FindingStatus.not_applicable, severity=Severity.info,
                       message="no job with a known efficiency")
    evidence = [f"median efficiency {ours:.1%} over {summary.overall.jobs} jobs"]
    if baseline is not None:
        ref = baseline.overall.eff.quantile(0.5)
        if ref is None or ref <= 0:
            return Finding(**base, status=FindingStatus.not_applicable, severity=Severity.info,
                           message="the baseline has no job with a known efficiency")
        evidence.append(f"baseline median {ref:.1%} over {baseline.overall.jobs} jobs")
        ours_rows = {r["bin"]: r for r in summary.length_table()}
        if baseline.length_kind == summary.length_kind:
            for r in baseline.length_table():
                o = ours_rows.get(r["bin"])
                if o and r["median"]:
                    evidence.append(f"{r['bin']:>13}: {_fmt(o['median'])} vs baseline {_fmt(r['median'])} "
                                    f"(x{o['median'] / r['median']:.2f})")
        what = "baseline"
    else:
        ref = float(target)  # type: ignore[arg-type]
        evidence.append(f"target {ref:.1%}")
        what = "target"
    ratio = ours / ref
    failed = ratio < 1 - tolerance
    return Finding(
        **base, status=FindingStatus.fail if failed else FindingStatus.passed,
        severity=(Severity.high if ratio < 0.6 else Severity.medium) if failed else Severity.info,
        observed={"median": round(ours, 4), "ratio": round(ratio, 4)},
        expected={what: round(ref, 4), "ratio_at_least": 1 - tolerance},
        evidence=evidence, references=[REF_IFCA],
        rationale="IFCA ran at 28-43% where a comparable site ran the same job at 54-81%.",
        remediation=Remediation(text="Compare per host group and job length; see EFF-IO-BOUND and the scan's storage findings."),
    )
