"""The console summary: hosts, then failed findings worst first, then what could not be checked."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from advisor.model.findings import FindingStatus
from advisor.collect.probe_selection import skipped_probes_of
from advisor.report.console_causes import render_causes
from advisor.report.finding_text import comparison_line, headline
from advisor.util.host_ranges import hosts_text
from advisor.report.model import ScanReport
from advisor.report.safe_text import markup_text, terminal_text

SEVERITY_STYLE = {"critical": "bold white on red", "high": "bold red", "medium": "yellow", "low": "cyan", "info": "dim"}
STATUS_STYLE = {"fail": "red", "error": "magenta", "waived": "blue", "pass": "green", "not_applicable": "dim"}


def _short(value, width: int = 40) -> str:
    if value is None:
        return "-"
    s = value if isinstance(value, str) else str(value)
    return s if len(s) <= width else s[: width - 1] + "…"


def render_scan(report: ScanReport, console: Console, verbose: bool = False, next_step: str | None = None) -> None:
    """The console summary; ``next_step``: the command that writes the fix (advisor.apply.next_steps), printed
    last, alone on its line, as it runs."""
    s = report.summary
    console.print(
        f"[bold]storadvise scan[/bold] of site [bold]{markup_text(report.site)}[/bold] — {s.hosts} host(s), "
        f"profiles {markup_text(', '.join(report.profiles))}, {report.duration_s:.1f} s"
    )
    render_hosts(report, console, verbose=verbose)
    for line in flows_lines(report):
        console.print(Text(line), highlight=False)

    diagnosed = bool(report.causes or report.hygiene or report.unexplained or report.inconclusive)
    shown = [f for f in report.findings if f.status in (FindingStatus.fail, FindingStatus.error, FindingStatus.waived)]
    if diagnosed and not verbose:
        # the causes stand for the failed findings; errors and waivers are still each shown
        render_causes(report, console)
        shown = [f for f in shown if f.status != FindingStatus.fail]
    if verbose:
        shown = [f for f in report.findings if f.status != FindingStatus.not_applicable]
    shown = _errors_joined(shown)
    if shown:
        console.rule("Findings, worst first" if verbose or not diagnosed else "Errors and waivers")
    for f in shown:
        if diagnosed and not verbose and f.status == FindingStatus.waived:
            console.print(Text(f"waived {f.rule_id}" + (f" [{f.subject}]" if f.subject else "")
                               + f" on {hosts_text(f.hosts, limit=6)}: {_short(f.message, 80)}", style="blue"),
                          highlight=False)
            continue
        render_finding(f, console)
    errors: dict[tuple[str, str], list[str]] = {}
    for h in report.hosts:
        for p, st in h.probes.items():
            if st == "error":
                errors.setdefault((p, h.probe_messages.get(p, "")), []).append(h.name)
    if errors:
        console.print("[magenta]Probes that failed:[/magenta]")
        for (probe, msg), names in errors.items():
            console.print(f"  {markup_text(hosts_text(names))}: {markup_text(probe)}: {markup_text(msg)}", highlight=False)
    console.print(summary_line(report), highlight=False)
    for line in left_out_lines(report):
        console.print(Text(line, style="yellow"), highlight=False)
    if diagnosed and not verbose:
        console.print("[dim]--verbose lists every finding.[/dim]", highlight=False)
    if next_step:
        console.print("next, the fix as an Ansible project (PLAN.md says what it changes):", highlight=False)
        console.print(Text("  " + next_step), soft_wrap=True, highlight=False)


def _errors_joined(findings: list) -> list:
    """The findings with the errors that say the same (rule, subject, message) on several hosts as one,
    their hosts joined, where the first stood: a probe a whole capture lacks is one line, not one per host."""
    joined: dict = {}
    for f in findings:
        key = (f.rule_id, f.subject, f.message, f.severity) if f.status == FindingStatus.error else id(f)
        if key in joined:
            joined[key][1].extend(f.hosts)
        else:
            joined[key] = (f, list(f.hosts))
    return [f if len(hosts) == len(f.hosts) else f.model_copy(update={"hosts": hosts}) for f, hosts in joined.values()]


SEVERITY_COLUMNS = ("critical", "high", "medium", "low")


def flows_lines(report: ScanReport, most: int = 3) -> list[str]:
    """At most two lines on the production flows: what held the paths, and where a mesh test of the
    same path said otherwise (the paths themselves: the JSON report's ``flows``)."""
    flows = report.flows or {}
    paths = flows.get("paths") or []
    if not flows:
        return []
    counts: dict[str, int] = {}
    for p in paths:
        counts[p.get("limited_by") or "unknown"] = counts.get(p.get("limited_by") or "unknown", 0) + 1
    held = ", ".join(f"{k} {n}" for k, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    window = flows.get("window_s")
    lines = [f"production flows over {window:g} s on {flows.get('hosts')} host(s): {len(paths)} path(s)"
             + (f", held by: {held}" if held else "") if window else
             f"production flows on {flows.get('hosts')} host(s): {len(paths)} path(s)"]
    differ = [p for p in paths if (p.get("mesh") or {}).get("agrees") is False]
    if differ:
        named = ", ".join(f"{p['src']}->{p['dst']} (mesh {p['mesh']['limited_by']}, flows {p['limited_by']})"
                          for p in differ[:most])
        lines.append(f"the mesh and the flows disagree on {len(differ)} path(s): {named}"
                     + (f" and {len(differ) - most} more" if len(differ) > most else ""))
    return lines


def host_rows(report: ScanReport) -> list[tuple[tuple, list[str]]]:
    """Hosts grouped by what their row says (roles, reachability, probe counts, failed counts):
    one (row, host names) per distinct row, worst first. Linear in hosts and findings."""
    failed_by_host: dict[str, dict[str, int]] = {}
    for f in report.findings:
        if f.status == FindingStatus.fail:
            for h in f.hosts:
                d = failed_by_host.setdefault(h, {})
                d[f.severity.value] = d.get(f.severity.value, 0) + 1
    groups: dict[tuple, list[str]] = {}
    for h in report.hosts:
        counts = [sum(1 for v in h.probes.values() if v == k) for k in ("ok", "not_applicable", "error")]
        fb = failed_by_host.get(h.name, {})
        row = (",".join(h.roles) or "-", "; ".join(h.errors) if not h.reachable else "",
               tuple(counts), tuple(fb.get(k, 0) for k in SEVERITY_COLUMNS))
        groups.setdefault(row, []).append(h.name)

    def badness(item):
        (roles, unreachable, counts, failed), names = item
        return (not unreachable, tuple(-n for n in failed), -counts[2], roles, min(names))

    return sorted(groups.items(), key=badness)


def render_hosts(report: ScanReport, console: Console, verbose: bool = False) -> None:
    """The hosts table: identical rows folded into one with the hosts as ranges; without
    ``verbose`` only hosts with a failure, an unreachable host or a probe error, and one line
    for the rest."""
    rows = host_rows(report)
    clean = [(row, names) for row, names in rows if not row[1] and not any(row[3]) and not row[2][2]]
    shown = rows if verbose else [r for r in rows if r not in clean]
    if shown:
        table = Table(title="Hosts" if verbose else "Hosts with failures", show_lines=False, header_style="bold")
        for col in ("hosts", "n", "roles", "reachable", "probes ok / n.a. / error", "failed (crit/high/med/low)"):
            table.add_column(col, overflow="fold")  # a narrow terminal folds a long cell, never cuts it
        for (roles, unreachable, counts, failed), names in shown:
            reach = Text("NO: " + terminal_text(_short(unreachable, 60)), style="bold red") if unreachable else Text("yes", style="green")
            table.add_row(markup_text(hosts_text(names, limit=0 if verbose else 8)), str(len(names)), markup_text(roles), reach,
                          " / ".join(map(str, counts)), " / ".join(map(str, failed)))
        console.print(table)
    if clean and not verbose:
        names = [n for _row, group in clean for n in group]
        left_out = {h.name for h in report.hosts if skipped_probes_of(h)}
        ran = ("no probe failed" if left_out & set(names) else
               "every probe that applies ran")
        console.print(f"{markup_text(hosts_text(names, limit=8))}: nothing failed at low or above, {ran} "
                      f"({len(names)} host(s); --verbose lists them)", highlight=False)


def failed_checks(report: ScanReport) -> int:
    """Failed findings at low or above counted per host (a rule on a host, a subject apart): what the
    hosts table sums to and what JUnit counts as failures (docs/reports.md, "Counts")."""
    return sum(max(len(f.hosts), 1) for f in report.findings
               if f.status == FindingStatus.fail and f.severity.value != "info")


def summary_line(report: ScanReport) -> str:
    """``5 failed (1 high, 4 medium) on 7 host checks, 2 info, 0 error, ...``: failed findings at low
    or above (info failures are notes, as in JUnit and the hosts table), then per host when the count
    differs (a finding about several hosts), then the other statuses."""
    s = report.summary
    counts = s.by_status
    info = s.failed_by_severity.get("info", 0)
    failed = counts.get("fail", 0) - info
    by_severity = ", ".join(f"{n} {sev}" for sev, n in reversed(list(s.failed_by_severity.items())) if n and sev != "info")
    checks = failed_checks(report)
    return (f"[bold]{failed} failed[/bold]" + (f" ({by_severity})" if by_severity else "")
            + (f" on {checks} host checks" if checks != failed else "")
            + (f", {info} info" if info else "")
            + f", {counts.get('error', 0)} error, {counts.get('waived', 0)} waived, {counts.get('pass', 0)} passed, "
            f"{counts.get('not_applicable', 0)} not applicable"
            + (" — [bold magenta]incomplete[/bold magenta]" if s.incomplete else ""))


def left_out_lines(report: ScanReport) -> list[str]:
    """What the scan did not check, and why: probes --probes/--skip-probes left out, and the role
    probes of hosts scanned with no role (the local host without --role)."""
    from advisor.collect.probe_selection import skipped_probes
    from probes import all_probes

    out = []
    skipped = skipped_probes(report)
    if skipped:
        out.append(f"not checked: {len(skipped)} probe(s) left out by --probes/--skip-probes ({', '.join(skipped)}); "
                   "their rules are not applicable")
    roleless = [h.name for h in report.hosts if not h.roles]
    if roleless:
        by_role = sorted(n for n, p in all_probes().items() if p.roles)
        out.append(f"not checked: {hosts_text(roleless, limit=4)} scanned with no role, so the {len(by_role)} "
                   f"probes of a role did not run ({', '.join(by_role[:6])}{', ...' if len(by_role) > 6 else ''}); "
                   "scan --role storage|worker|door|cache|san-controller adds them")
    return out


def render_finding(f, console: Console, max_evidence: int = 4) -> None:
    """One finding as a compact block that reads well in 80 columns."""
    head = Text()
    head.append(f"{f.severity.value.upper():<8}", style=SEVERITY_STYLE[f.severity.value])
    head.append(f" {f.status.value:<6} ", style=STATUS_STYLE[f.status.value])
    head.append(terminal_text(f.rule_id), style="bold")
    if f.subject:
        head.append(f" [{terminal_text(f.subject)}]")
    failed = f.status in (FindingStatus.fail, FindingStatus.waived)
    # a failure reads as what is wrong (the rule's words for it), never as the healthy title
    head.append(f"  {terminal_text(headline(f))}", style="bold" if failed else "dim")
    console.print(head)
    console.print(f"         hosts: {markup_text(hosts_text(f.hosts, limit=12))}", highlight=False)
    if f.status == FindingStatus.error:
        console.print(f"         [magenta]{markup_text(f.message)}[/magenta]", highlight=False)
        return
    compared = comparison_line(f)
    if compared:
        console.print(Text("         " + terminal_text(_short(compared, 160))), highlight=False)
    for line in f.evidence[:max_evidence]:
        console.print(Text("         " + terminal_text(line), style="dim"))
    if len(f.evidence) > max_evidence:
        console.print(Text(f"         … {len(f.evidence) - max_evidence} more evidence lines (--json for all)", style="dim"))
    if f.status == FindingStatus.waived:
        console.print(f"         [blue]{markup_text(f.message)}[/blue]", highlight=False)
    elif f.message and f.status == FindingStatus.fail:
        console.print(f"         {markup_text(f.message)}", highlight=False)
    if f.status == FindingStatus.fail and f.remediation.text:
        role = f" (Ansible role {markup_text(f.remediation.role)})" if f.remediation.role else ""
        console.print(f"         [green]→ {markup_text(f.remediation.text)}{role}[/green]", highlight=False)
