"""The console's first screen: the causes, worst first, each in a few lines; then hygiene and the
symptoms no cause explains (docs/diagnosis.md). Renders what the report holds; decides nothing."""

from __future__ import annotations

from collections import Counter

from rich.console import Console
from rich.text import Text

from advisor.diagnosis.report_types import Cause, FindingRef, Predicted
from advisor.util.host_ranges import hosts_text
from advisor.report.model import ScanReport
from advisor.report.safe_text import markup_text, terminal_text
from advisor.util.units import format_bps

SEVERITY_STYLE = {"critical": "bold white on red", "high": "bold red", "medium": "yellow", "low": "cyan", "info": "dim"}


def _span(values: list[float], fmt) -> str:
    lo, hi = min(values), max(values)
    return fmt(lo) if fmt(lo) == fmt(hi) else f"{fmt(lo)}-{fmt(hi)}"


def _ratio(p: Predicted, v: float | None) -> float | None:
    exp = p.inputs.get("expected_bps")
    return v / exp if (v is not None and exp) else None


def calibration_line(result: dict) -> str | None:
    """verify's calibration in one line: the predictions it compared (those a by-hand cause still
    holds among them, named apart), and how many missed."""
    cal = result.get("calibration") or {}
    held = cal.get("held") or {}
    if not cal.get("n"):
        return None
    src = "the plan's" if result.get("prediction_source") == "plan" else "the scan's"
    parts = [f"{cal['n']} of {src} predictions compared, measured / predicted median "
             f"{cal['median_ratio']:.2f}, worst {cal['worst_ratio']:.2f}"]
    if cal.get("outside"):
        missed = ", ".join(f"{m['subject']} {m['ratio']:.2f}" for m in (cal.get("misses") or [])[:3])
        parts[0] += f", {cal['outside']} outside 0.75-1.33" + (f" ({missed})" if missed else "")
    if held.get("n"):
        parts.append(f"{held['n']} of them still held by a by-hand cause (median {held['median_ratio']:.2f})")
    if cal.get("inconclusive"):
        parts.append(f"{cal['inconclusive']} inconclusive: the CPU, other traffic or the application set their pace")
    return "calibration: " + "; ".join(parts)


def prediction_line(preds: list[Predicted], *, after_key: str | None = None) -> str:
    """``8 paths 0.02-0.06 -> 0.96 of expected (link); efficiency wn[01-04] 0.20-0.32 -> 0.90-0.94``."""
    parts = []
    together = [p for p in preds if p.metric == "throughput" and "with_the_other_causes" in p.inputs]
    apart = {id(p) for p in together}  # by identity: comparing models field by field is quadratic
    tp = [p for p in preds if p.metric == "throughput" and p.now is not None and p.after is not None
          and id(p) not in apart]
    if together:
        exp = [p.inputs.get("expected_bps") for p in together]
        f2 = lambda v: f"{v:.2f}"  # noqa: E731
        if all(exp):
            parts.append(f"{len(together)} path(s) held by several causes: with the others "
                         f"{_span([p.now / e for p, e in zip(together, exp)], f2)} -> "
                         f"{_span([p.inputs['with_the_other_causes'] / e for p, e in zip(together, exp)], f2)}"
                         f" of expected, without it {_span([p.inputs['without_it'] / e for p, e in zip(together, exp)], f2)}")
    if tp:
        models = ", ".join(sorted({p.model for p in tp}))
        befores = [p.inputs.get(after_key, p.now) if after_key else p.now for p in tp]
        ratios_b = [_ratio(p, b) for p, b in zip(tp, befores)]
        ratios_a = [_ratio(p, p.after) for p in tp]
        n = f"{len(tp)} path{'s' if len(tp) != 1 else ''}"
        if all(r is not None for r in ratios_b + ratios_a):
            f2 = lambda v: f"{v:.2f}"  # noqa: E731
            parts.append(f"{n} {_span(ratios_b, f2)} -> {_span(ratios_a, f2)} of expected ({models})")
        else:
            parts.append(f"{n} {_span(befores, format_bps)} -> {_span([p.after for p in tp], format_bps)} ({models})")
    loose = [p for p in tp if "at_most" in p.inputs]
    if loose:
        parts.append(f"at most, for {len(loose)} of them: the models explain their measured rate poorly "
                     f"({loose[0].inputs.get('basis')})")
    un = [p for p in preds if p.metric == "throughput" and (p.now is None or p.after is None)]
    if un:
        parts.append(f"{len(un)} failed test(s) unblocked (unquantified)")
    ef = [p for p in preds if p.metric == "efficiency" and p.now is not None and p.after is not None]
    if ef:
        f2 = lambda v: f"{v:.2f}"  # noqa: E731
        befores = [p.inputs.get(after_key) if after_key and p.inputs.get(after_key) is not None else p.now
                   for p in ef]
        parts.append(f"efficiency {hosts_text([p.subject for p in ef], limit=4)} "
                     f"{_span(befores, f2)} -> {_span([p.after for p in ef], f2)} (read-wait)")
    return "; ".join(parts) or "unquantified"


#: the other causes a cause's line names as holding the rest, first in the order shown
HELD_BY_NAMED = 3


def held_by_line(predicted: list[Predicted], causes: list[tuple[str, str]] | dict[str, tuple[int, str]]) -> str | None:
    """What still holds the paths a cause leaves slow: ``the rest is held by: 4. packet loss ...``
    (the other causes by their number in ``causes``: (id, title) in the order shown, or id -> (number,
    title)), the first HELD_BY_NAMED of them, then how many more; None when its predictions leave no
    path slow or name no other cause."""
    ids = [i for p in predicted for i in p.inputs.get("then_held_by") or []]
    number = causes if isinstance(causes, dict) else {cid: (n, title) for n, (cid, title) in enumerate(causes, 1)}
    held = sorted(number[i] for i in dict.fromkeys(ids) if i in number)
    if not held:
        return None
    named = "; ".join(f"{n}. {title}" for n, title in held[:HELD_BY_NAMED])
    more = len(held) - HELD_BY_NAMED
    return f"the rest is held by: {named}" + (f"; and {more} more cause(s)" if more > 0 else "")


def _worst(c: Cause, paths: dict[str, dict]) -> str:
    """The cause's worst path, as measured (``paths``: the mesh's, by subject), or its first symptom."""
    tp = [p for p in c.predicted if p.metric == "throughput" and p.now is not None]
    if tp:
        w = min(tp, key=lambda p: (_ratio(p, p.now) or p.now))
        exp = paths.get(w.subject, {}).get("expected_bps")
        return f"worst {w.subject} {format_bps(w.now)}" + (f" of {format_bps(exp)}" if exp else "")
    if c.explains:
        e = c.explains[0]
        return f"{e.rule_id}" + (f" [{e.subject}]" if e.subject else "")
    return ""


#: the causes the console lists, worst first: a site of thousands of hosts may have thousands, and the
#: first screen is what to do first; the report holds them all
CONSOLE_CAUSES = 20


def render_causes(report: ScanReport, console: Console, command: str | None = None) -> None:
    if not (report.causes or report.hygiene or report.unexplained or report.inconclusive):
        return
    n_sym = len({(e.rule_id, e.subject, tuple(e.hosts)) for c in report.causes for e in c.explains})
    if report.causes:  # no empty heading ("0 cause(s) explain 0 symptom(s)")
        console.rule(f"What to change first: {len(report.causes)} cause(s) explain {n_sym} symptom(s)")
    paths = {f"{p.get('src')}->{p.get('dst')}": p for p in (report.mesh or {}).get("paths") or []}
    numbers = {o.id: (n, o.title) for n, o in enumerate(report.causes, 1)}
    for i, c in enumerate(report.causes[:CONSOLE_CAUSES], 1):
        head = Text(f"{i:>2}. ")
        head.append(terminal_text(c.title), style="bold")
        hosts = terminal_text(hosts_text(c.hosts, limit=6))
        head.append(f" on {hosts}" if c.kind == "change" else f" (hosts: {hosts})")
        kind = "by hand" if c.kind == "by_hand" else "change"
        head.append(f"   {kind} · ", style="dim")
        head.append(c.severity, style=SEVERITY_STYLE.get(c.severity, ""))
        head.append(f" · confidence {c.confidence:.2f}", style="dim")
        console.print(head)
        if c.kind == "by_hand" and any("after_plan" in p.inputs for p in c.predicted):
            console.print(Text(terminal_text(f"    after the plan: {prediction_line(c.predicted, after_key='after_plan')}")),
                          highlight=False)
        else:
            console.print(Text(terminal_text(f"    predicts {prediction_line(c.predicted)}")), highlight=False)
        rest = held_by_line(c.predicted, numbers)
        if rest:
            console.print(Text(terminal_text(f"    {rest}")), highlight=False)
        console.print(Text(terminal_text(f"    explains {len(c.explains)}: {_rules(c.explains)} · {_worst(c, paths)}"),
                           style="dim"), highlight=False)
        if c.action:
            console.print(Text(f"    → {terminal_text(c.action)}", style="green"), highlight=False)
    rest = report.causes[CONSOLE_CAUSES:]
    if rest:
        hosts = terminal_text(hosts_text(sorted({h for c in rest for h in c.hosts}), limit=6))
        console.print(Text(f"… {len(rest)} more cause(s), on {hosts}: every cause is in the JSON and HTML "
                           "reports (--output FILE, --html FILE)", style="yellow"), highlight=False)
    if report.hygiene:
        console.rule(f"Hygiene: {len(report.hygiene)} failed setting(s) with no measured symptom")
        for severity, line in hygiene_lines(report):
            text = Text("  ")
            text.append(f"{severity.upper():<8}", style=SEVERITY_STYLE.get(severity, ""))
            text.append(terminal_text(line))
            console.print(text, highlight=False)
    if report.unexplained:
        console.rule(f"Unexplained: {len(report.unexplained)} symptom(s) no cause explains")
        for line in grouped_refs(report.unexplained):
            console.print(Text("  " + terminal_text(line), style="magenta"), highlight=False)
    if report.inconclusive:
        console.rule(f"Not concluded: {len(report.inconclusive)} symptom(s) of paths measured while an end was "
                     "short of CPU or its NIC busy")
        for line in grouped_refs(report.inconclusive):
            console.print(Text("  " + terminal_text(line), style="dim"), highlight=False)
        console.print(Text("  measured again alone and still so: measure them again when the hosts are quieter "
                           "(storadvise mesh run); their limited_by is in --verbose", style="dim"), highlight=False)
    if command:
        console.print(f"[dim]Every finding: --verbose or --json. The fix: {markup_text(command)}[/dim]", highlight=False)


def _rules(refs: list[FindingRef]) -> str:
    counts = Counter(r.rule_id for r in refs)
    return ", ".join(f"{rid}" + (f" ×{n}" if n > 1 else "") for rid, n in counts.most_common())


def hygiene_lines(report: ScanReport) -> list[tuple[str, str]]:
    """(severity, line) per hygiene finding, worst first: each setting's current -> target value
    ("NET-DEFAULT-QDISC on wn[01-04]: net.core.default_qdisc pfifo_fast -> fq"), or, for a fix by hand,
    what is wrong in the rule's words (advisor.report.finding_text); hosts that say the same share a line."""
    from advisor.model.findings import SEVERITY_ORDER
    from advisor.report.finding_text import headline

    by_ref: dict[tuple, list] = {}
    for f in report.findings:
        if f.status.value == "fail":
            by_ref.setdefault((f.rule_id, f.subject), []).append(f)
    lines: dict[tuple[str, str, str], list[str]] = {}
    for ref in report.hygiene:
        wanted = set(ref.hosts)
        for f in by_ref.get((ref.rule_id, ref.subject), []):
            hosts = [h for h in f.hosts if h in wanted]
            if not f.changes:
                lines.setdefault((f.severity.value, f.rule_id, headline(f)), [])
                continue
            by_host: dict[str, list] = {}
            for c in f.changes:  # one pass: a finding on 10,000 hosts holds 10,000 changes
                by_host.setdefault(c.host, []).append(c)
            for host in hosts:
                values = "; ".join(f"{c.key} {c.runtime if c.runtime is not None else '?'} -> {c.target}"
                                   for c in by_host.get(host, ()))
                if values:
                    lines.setdefault((f.severity.value, f.rule_id, values), []).append(host)
    order = {s: i for i, s in enumerate(reversed(SEVERITY_ORDER))}
    return [(sev, f"{rule} on {hosts_text(hosts, limit=6)}: {values}" if hosts else f"{rule}: {values}")
            for (sev, rule, values), hosts in sorted(lines.items(), key=lambda kv: (order[kv[0][0]], kv[0][1]))]


def grouped_refs(refs: list[FindingRef]) -> list[str]:
    """One line per rule: its hosts as ranges and how many subjects."""
    by_rule: dict[str, list[FindingRef]] = {}
    for r in refs:
        by_rule.setdefault(r.rule_id, []).append(r)
    out = []
    for rid, rs in by_rule.items():
        hosts = sorted({h for r in rs for h in r.hosts})
        subjects = [r.subject for r in rs if r.subject]
        sub = ""
        if len(subjects) == 1:
            sub = f" [{subjects[0]}]"
        elif subjects:
            sub = f" ({len(subjects)} subjects)"
        out.append(f"{rid} on {hosts_text(hosts, limit=6)}{sub}")
    return out
