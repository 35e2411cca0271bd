"""The HTML report: one self-contained file (inline CSS, inline SVG, a few lines of inline script).

Read top-down the way a site administrator looks at a site: the summary by severity, then the
failing findings (visible without scrolling past the summary), the before -> after of a verify,
the throughput heatmap, the efficiency distribution, the hosts (identical hosts grouped) and
the rest of the findings. Nothing is fetched: it opens from a file on a machine without network.
"""

from __future__ import annotations

import json
from html import escape as _html_escape
from typing import Any

from advisor.model.findings import SEVERITY_ORDER, Finding, FindingStatus
from advisor.report.finding_text import expected_text, headline, observed_text
from advisor.report.html_causes import causes_section, verify_causes_section
from advisor.report.html_style import PAGE_SCRIPT, PAGE_STYLE
from advisor.report.model import ScanReport
from advisor.report.safe_text import xml_text
from advisor.report.svg import distribution, heatmap, heatmap_legend, line_plot


def escape(v: object) -> str:
    """HTML-escaped, with control characters a host printed shown as ``\\xNN``."""
    return _html_escape(xml_text(v))


def _text(v: Any) -> str:
    if v is None:
        return "-"
    return escape(v if isinstance(v, str) else json.dumps(v, default=str))


def _summary(report: ScanReport) -> str:
    s = report.summary
    cards = "".join(
        f'<div class="card sev-{sev}"><span class="n">{s.failed_by_severity.get(sev, 0)}</span>'
        f'<span class="what">{sev}</span></div>' for sev in reversed(SEVERITY_ORDER))
    facts = (f"{s.hosts} host(s), {s.unreachable} unreachable, {s.probe_errors} probe error(s); "
             f"{s.by_status.get('pass', 0)} passed, {s.by_status.get('waived', 0)} waived"
             + ("; <b>incomplete</b>" if s.incomplete else ""))
    return (f'<section id="summary"><h2>Failed findings by severity</h2><div class="cards">{cards}</div>'
            f'<p class="facts">{facts}</p></section>')


def _finding(f: Finding, open_: bool = False) -> str:
    hosts = ", ".join(f.hosts) or "site"
    refs = "".join(f"<li>{escape(r)}</li>" for r in f.references)
    rem = escape(f.remediation.text) + (f" <span class='role'>(Ansible role {escape(f.remediation.role)})</span>"
                                         if f.remediation.role else "")
    body = [f'<p><b>observed</b> {escape(observed_text(f))} · <b>expected</b> {escape(expected_text(f))}</p>']
    if f.status in (FindingStatus.fail, FindingStatus.waived):
        body.insert(0, f"<p class='rule-title'><b>rule</b> {escape(f.title)}</p>")
    if f.evidence:
        body.append("<pre class='evidence'>" + escape("\n".join(f.evidence)) + "</pre>")
    if f.rationale:
        body.append(f"<p class='rationale'><b>why</b> {escape(f.rationale)}</p>")
    if refs:
        body.append(f"<ul class='refs'>{refs}</ul>")
    if f.remediation.text or f.remediation.role:
        body.append(f"<p class='remediation'><b>fix</b> {rem}</p>")
    if f.message:
        body.append(f"<p class='message'>{escape(f.message)}</p>")
    subject = f" <code>{escape(f.subject)}</code>" if f.subject else ""
    return (f'<details class="finding status-{f.status.value} sev-{f.severity.value}"{" open" if open_ else ""}>'
            f'<summary><span class="badge sev-{f.severity.value}">{f.severity.value}</span> '
            f'<b>{escape(f.rule_id)}</b>{subject} — {escape(headline(f))} <span class="hosts">({escape(hosts)})</span>'
            f'</summary>{"".join(body)}</details>')


def _failing(report: ScanReport) -> str:
    failed = sorted((f for f in report.findings if f.status == FindingStatus.fail),
                    key=lambda f: -f.severity.rank)
    if not failed:
        return '<section id="failing"><h2>Failing findings</h2><p class="ok">No rule fails.</p></section>'
    items = "".join(_finding(f, open_=i == 0) for i, f in enumerate(failed))
    return f'<section id="failing"><h2>Failing findings ({len(failed)})</h2>{items}</section>'


def host_groups(report: ScanReport) -> list[list[str]]:
    """Hosts that look the same (roles, reachability, probe statuses, what every rule said of them), grouped."""
    said: dict[str, list[tuple]] = {h.name: [] for h in report.hosts}
    for f in report.findings:
        for h in f.hosts:
            if h in said:
                said[h].append((f.rule_id, f.subject or "", f.status.value, json.dumps(f.observed, default=str)))
    groups: dict[tuple, list[str]] = {}
    for h in report.hosts:
        key = (tuple(h.roles), h.reachable, tuple(sorted(h.probes.items())), tuple(sorted(said[h.name])))
        groups.setdefault(key, []).append(h.name)
    return list(groups.values())


def _hosts(report: ScanReport) -> str:
    by_name = {h.name: h for h in report.hosts}
    failed: dict[str, dict[str, int]] = {}
    for f in report.findings:
        if f.status == FindingStatus.fail:
            for h in f.hosts:
                failed.setdefault(h, {}).setdefault(f.severity.value, 0)
                failed[h][f.severity.value] += 1
    rows = []
    for names in host_groups(report):
        h = by_name[names[0]]
        probes = {k: sum(1 for v in h.probes.values() if v == k) for k in ("ok", "not_applicable", "error")}
        fb = failed.get(h.name, {})
        reach = "yes" if h.reachable else "<span class='bad'>no: " + escape("; ".join(h.errors)) + "</span>"
        who = escape(", ".join(names)) if len(names) <= 8 else escape(", ".join(names[:8])) + f" … (+{len(names) - 8})"
        rows.append(f"<tr class='host-group' data-hosts='{len(names)}'><td>{len(names)}</td><td>{who}</td>"
                    f"<td>{escape(', '.join(h.roles) or '-')}</td><td>{reach}</td>"
                    f"<td>{probes['ok']} / {probes['not_applicable']} / {probes['error']}</td>"
                    f"<td>{' / '.join(str(fb.get(s, 0)) for s in ('critical', 'high', 'medium', 'low'))}</td></tr>")
    return ("<section id='hosts'><h2>Hosts</h2><p class='note'>Hosts with the same roles, probe results and findings "
            "share a row.</p><table><thead><tr><th>n</th><th>hosts</th><th>roles</th><th>reachable</th>"
            "<th>probes ok / n.a. / error</th><th>failed crit / high / med / low</th></tr></thead><tbody>"
            + "".join(rows) + "</tbody></table></section>")


def _mesh(report: ScanReport) -> str:
    paths = (report.mesh or {}).get("paths") or []
    if not paths:
        return ""
    return ("<section id='mesh'><h2>Throughput: measured / expected</h2><p class='note'>Rows send, columns receive; "
            "hover a cell for the values.</p>" + heatmap_legend() + "<div class='plot'>" + heatmap(paths)
            + "</div></section>")


def _efficiency(report: ScanReport) -> str:
    hosts = (report.efficiency or {}).get("hosts") or {}
    values = {n: float(r["efficiency"]) for n, r in hosts.items()
              if isinstance(r, dict) and isinstance(r.get("efficiency"), (int, float))}
    if not values:
        return ""
    mean = (report.efficiency or {}).get("mean")
    head = f"mean {mean:.0%} over {len(values)} worker(s)" if isinstance(mean, (int, float)) else f"{len(values)} worker(s)"
    return (f"<section id='efficiency'><h2>CPU efficiency of the active test</h2><p class='note'>{head}; "
            "hover a bar for the hosts.</p>" + distribution(values) + "</section>")


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            return f"{n:.3g} {unit}"
        n /= 1024
    return str(n)


def _cache(sim: dict[str, Any] | None) -> str:
    """Hit and transfer efficiency vs capacity per policy, from a 'storadvise cache simulate' result."""
    if not sim:
        return ""
    plots = []
    for metric, title in (("hit_efficiency", "hit efficiency (hits / accesses)"),
                          ("transfer_efficiency", "transfer efficiency (bytes from cache / bytes read)")):
        series: dict[str, list[tuple[float, float]]] = {}
        for c in sim.get("configurations") or []:
            name = "XCache purge" if c["policy"] == "xcache" else str(c["policy"]).upper()
            series.setdefault(name, []).append((float(c["capacity_bytes"]), float(c[metric])))
        curve = sim.get("curve")
        if curve and curve.get(metric):
            series["LRU, one pass"] = list(zip(map(float, curve["capacities_bytes"]), map(float, curve[metric])))
        plots.append(line_plot(series, title=title, x_label=f"capacity per cache area ({sim.get('areas', 'shared')})",
                               x_format=_size, lines_only=("LRU, one pass",)))
    head = (f"{int(sim.get('requests', 0)):,} reads of {int(sim.get('distinct_files', 0)):,} files"
            if sim.get("requests") is not None else "")
    return ("<section id='cache'><h2>Cache simulation</h2><p class='note'>" + escape(head)
            + "; hover a point for its value.</p><div class='plot'>" + "".join(plots) + "</div></section>")


def _others(report: ScanReport) -> str:
    rest = [f for f in report.findings if f.status != FindingStatus.fail]
    if not rest:
        return ""
    order = {"error": 0, "waived": 1, "pass": 2, "not_applicable": 3}
    rest.sort(key=lambda f: (order[f.status.value], -f.severity.rank))
    rows = "".join(
        f"<tr class='status-{f.status.value}'><td>{f.status.value.replace('_', ' ')}</td><td>{escape(f.rule_id)}</td>"
        f"<td>{escape(f.subject or '')}</td><td>{escape(', '.join(f.hosts))}</td><td>{f.severity.value}</td>"
        f"<td>{escape(f.message or f.title)}</td></tr>" for f in rest)
    return ("<section id='others'><h2>Other findings</h2><table><thead><tr><th>status</th><th>rule</th><th>subject</th>"
            "<th>hosts</th><th>severity</th><th>note</th></tr></thead><tbody>" + rows + "</tbody></table></section>")


def _verify(result: dict[str, Any]) -> str:
    s = result["summary"]
    rows = []
    for r in result.get("findings") or []:
        b, a = r.get("before"), r.get("after")
        rows.append(f"<tr class='outcome-{escape(r['outcome'])}'><td>{escape(r['outcome'].replace('_', ' '))}</td>"
                    f"<td>{escape(r['rule_id'])}</td><td>{escape(str(r.get('host') or ''))}</td>"
                    f"<td>{escape(str(r.get('subject') or ''))}</td><td>{escape(r['severity'])}</td>"
                    f"<td>{'-' if b is None else escape(str(b.get('status'))) + ' (' + _text(b.get('observed')) + ')'}</td>"
                    f"<td>{'-' if a is None else escape(str(a.get('status'))) + ' (' + _text(a.get('observed')) + ')'}</td></tr>")
    paths = []
    for p in result.get("paths") or []:
        mb = (p.get("before") or {}).get("measured_bps")
        ma = (p.get("after") or {}).get("measured_bps")
        fmt = lambda v: "-" if v is None else f"{v / 1e6:,.0f} Mb/s"  # noqa: E731
        paths.append(f"<tr><td>{escape(str(p['src']))} → {escape(str(p['dst']))}</td><td>{fmt(mb)}</td><td>{fmt(ma)}</td>"
                     f"<td>{'-' if p.get('ratio_after_before') is None else format(p['ratio_after_before'], '.2f')}</td>"
                     f"<td>{'-' if p.get('after_of_expected') is None else format(p['after_of_expected'], '.0%')}</td>"
                     f"<td>{escape(str((p.get('after') or {}).get('limited_by') or '-'))}</td></tr>")
    html = (f"<section id='verify'><h2>Before → after</h2><p class='facts'>fixed {s['fixed']}, still failing "
            f"{s['still_failing']}, new {s['new']}; {s['failing_at_or_above_fail_on']} at or above "
            f"{escape(result['fail_on'])} (before: {escape(str(result.get('before_started_at')))})"
            + (f"; not checked {s['not_checked']} (probes left out by --probes/--skip-probes)" if s.get("not_checked")
               else "") + "</p>")
    if rows:
        html += ("<table><thead><tr><th>outcome</th><th>rule</th><th>host</th><th>subject</th><th>severity</th>"
                 "<th>before</th><th>after</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>")
    if paths:
        html += ("<h3>Throughput</h3><table><thead><tr><th>path</th><th>before</th><th>after</th><th>after/before</th>"
                 "<th>after/expected</th><th>limited by (after)</th></tr></thead><tbody>" + "".join(paths) + "</tbody></table>")
    return html + verify_causes_section(result) + "</section>"


def _audit(items: list) -> str:
    failed = [i for i in items if not i.passed]
    verdict = ("<p class='bad'>NOT ACCEPTED: " + f"{len(failed)} of {len(items)} checks fail</p>" if failed
               else f"<p class='ok'>ACCEPTED: all {len(items)} checks pass</p>")
    rows = "".join(f"<tr class='{'bad' if not i.passed else ''}'><td>{'FAIL' if not i.passed else 'pass'}</td>"
                   f"<td>{escape(i.check)}</td><td>{escape(i.subject)}</td><td>{escape(i.message)}</td></tr>"
                   for i in sorted(items, key=lambda i: i.passed))
    return (f"<section id='audit'><h2>Acceptance checklist</h2>{verdict}<table><thead><tr><th>result</th><th>check</th>"
            f"<th>subject</th><th>detail</th></tr></thead><tbody>{rows}</tbody></table></section>")


def scan_html(report: ScanReport, verify: dict[str, Any] | None = None, audit: list | None = None,
              cache: dict[str, Any] | None = None) -> str:
    """The whole page for a scan (the scan after the change, and its comparison, for a verify;
    the acceptance checklist, for an audit; ``cache``: a 'storadvise cache simulate' result to plot)."""
    title = f"storadvise — {report.site}"
    head = (f"<header><h1>{escape(title)}</h1><p class='meta'>{'verify' if verify else 'audit' if audit is not None else 'scan'} started "
            f"{escape(report.started_at)} · {report.duration_s:.1f} s · profiles {escape(', '.join(report.profiles))}"
            f" · storadvise {escape(report.tool_version)}</p></header>")
    body = [head, _audit(audit) if audit is not None else "", _summary(report), causes_section(report), _failing(report),
            _verify(verify) if verify else "", _mesh(report),
            _efficiency(report), _cache(cache), _hosts(report), _others(report)]
    return ("<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; style-src 'unsafe-inline'; "
            "script-src 'unsafe-inline'; img-src data:\">"
            f"<meta name='viewport' content='width=device-width'><title>{escape(title)}</title>"
            f"<style>{PAGE_STYLE}</style></head><body>{''.join(body)}<div id='tip' hidden></div>"
            f"<script>{PAGE_SCRIPT}</script></body></html>\n")
