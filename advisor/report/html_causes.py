"""The HTML report's causes (docs/diagnosis.md): worst first, each with what to change, what it is
predicted to buy and the symptoms it explains; then hygiene and unexplained symptoms. In a verify,
each cause's prediction against what was measured, and the calibration."""

from __future__ import annotations

from collections import Counter
from typing import Any

from advisor.diagnosis.report_types import Cause, FindingRef, Predicted
from advisor.report.console_causes import calibration_line, grouped_refs, held_by_line
from advisor.util.host_ranges import hosts_text
from advisor.report.model import ScanReport
from advisor.report.safe_text import xml_text
from html import escape as _html_escape


def _e(v: object) -> str:
    return _html_escape(xml_text(v))


def _pred(p: Predicted) -> str:
    if p.now is None or p.after is None:
        return f"{_e(p.subject)}: unquantified"
    if p.unit == "bps":
        exp = p.inputs.get("expected_bps")
        rel = f" ({p.now / exp:.2f} → {p.after / exp:.2f} of expected)" if exp else ""
        return f"{_e(p.subject)}: {p.now / 1e6:,.0f} → {p.after / 1e6:,.0f} Mb/s{rel} <i>{_e(p.model)}</i>"
    return f"{_e(p.subject)}: {p.now:.2f} → {p.after:.2f} <i>{_e(p.model)}</i>"


def _refs(refs: list[FindingRef]) -> str:
    counts = Counter(r.rule_id for r in refs)
    return ", ".join(f"{_e(r)}" + (f" ×{n}" if n > 1 else "") for r, n in counts.most_common())


def _cause(i: int, c: Cause, order: dict[str, tuple[int, str]]) -> str:
    change = "".join(f"<li><code>{_e(ch.host)}</code> {_e(ch.key)}: {_e(ch.runtime)} → {_e(ch.target)}</li>"
                     for ch in c.changes[:12])
    more = f"<li>… {len(c.changes) - 12} more</li>" if len(c.changes) > 12 else ""
    what = (f"<ul class='changes'>{change}{more}</ul>" if c.changes else
            f"<p class='remediation'><b>by hand</b> {_e(c.action or '')}</p>")
    preds = "".join(f"<li>{_pred(p)}</li>" for p in c.predicted[:10])
    gain = "unquantified" if c.gain is None else f"gain {c.gain:.2f}"
    held = held_by_line(c.predicted, order)
    rest = f"<p class='held-by'>{_e(held)}</p>" if held else ""
    return (f"<details class='cause sev-{_e(c.severity)}'{' open' if i == 1 else ''}><summary><b>{i}. {_e(c.title)}</b> "
            f"<span class='hosts'>({_e(hosts_text(c.hosts, limit=8))})</span> <span class='badge sev-{_e(c.severity)}'>"
            f"{_e(c.severity)}</span> {_e(c.kind.replace('_', ' '))} · confidence {c.confidence:.2f} · {gain}</summary>"
            f"{what}<ul class='predicted'>{preds}</ul>{rest}<p class='facts'>explains {len(c.explains)}: "
            f"{_refs(c.explains)}</p></details>")


def causes_section(report: ScanReport) -> str:
    if not (report.causes or report.hygiene or report.unexplained or report.inconclusive):
        return ""
    html = [f"<section id='causes'><h2>What to change first ({len(report.causes)} causes)</h2>"]
    order = {c.id: (n, c.title) for n, c in enumerate(report.causes, 1)}
    html += [_cause(i, c, order) for i, c in enumerate(report.causes, 1)]
    for label, refs in (("Hygiene: failed settings with no measured symptom", report.hygiene),
                        ("Unexplained symptoms", report.unexplained),
                        ("Not concluded: symptoms of paths measured while an end was short of CPU or its NIC busy",
                         report.inconclusive)):
        if refs:
            items = "; ".join(_e(line) for line in grouped_refs(refs))
            html.append(f"<p class='facts'><b>{label}</b> ({len(refs)}): {items}</p>")
    return "".join(html) + "</section>"


def verify_causes_section(result: dict[str, Any]) -> str:
    causes = result.get("causes") or []
    if not causes and not calibration_line(result):
        return ""
    rows = []
    for c in causes:
        measured = c.get("measured") or []
        got = {(m["metric"], m["subject"]): m["value"] for m in measured if not m.get("not_compared")}
        apart = sum(1 for m in measured if m.get("not_compared"))
        pairs = []
        for p in c.get("predicted") or []:
            v = got.get((p["metric"], p["subject"]))
            if v is None or p.get("after") is None:
                continue
            scale = 1e6 if p["unit"] == "bps" else 1
            pairs.append(f"{_e(p['subject'])} {p['after'] / scale:,.2f} → {v / scale:,.2f}")
        rows.append(f"<tr><td>{_e(c['title'])}</td><td>{_e(c.get('verdict') or '')}</td>"
                    f"<td>{'; '.join(pairs[:6])}{' …' if len(pairs) > 6 else ''}"
                    f"{f' ({apart} not compared: paced by the CPU, other traffic or the application)' if apart else ''}"
                    "</td></tr>")
    text = calibration_line(result)
    line = f"<p class='facts'>{_e(text)}</p>" if text else ""
    return ("<h3>Causes: predicted → measured</h3>" + line + "<table><thead><tr><th>cause</th><th>verdict</th>"
            "<th>predicted → measured (Mb/s or ratio)</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>")
