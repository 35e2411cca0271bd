"""The console summary: hosts, then failed findings worst first, then what could not be checked."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from advisor.findings import FindingStatus
from advisor.report.model import ScanReport

SEVERITY_STYLE = {"critical": "bold white on red", "high": "bold red", "medium": "yellow", "low": "cyan", "info": "dim"}
STATUS_STYLE = {"fail": "red", "error": "magenta", "waived": "blue", "pass": "green", "not_applicable": "dim"}


def _short(value, width: int = 40) -> str:
    if value is None:
        return "-"
    s = value if isinstance(value, str) else str(value)
    return s if len(s) <= width else s[: width - 1] + "…"


def render_scan(report: ScanReport, console: Console, verbose: bool = False) -> None:
    s = report.summary
    console.print(
        f"[bold]storadvise scan[/bold] of site [bold]{report.site}[/bold] — {s.hosts} host(s), "
        f"profiles {', '.join(report.profiles)}, {report.duration_s:.1f} s"
    )
    hosts = Table(title="Hosts", show_lines=False, header_style="bold")
    for col in ("host", "roles", "reachable", "probes ok / n.a. / error", "failed (crit/high/med/low)"):
        hosts.add_column(col)
    failed_by_host: dict[str, dict[str, int]] = {}
    for f in report.findings:
        if f.status == FindingStatus.fail:
            for h in f.hosts:
                d = failed_by_host.setdefault(h, {})
                d[f.severity.value] = d.get(f.severity.value, 0) + 1
    for h in report.hosts:
        counts = {k: sum(1 for v in h.probes.values() if v == k) for k in ("ok", "not_applicable", "error")}
        fb = failed_by_host.get(h.name, {})
        reach = Text("yes", style="green") if h.reachable else Text("NO: " + _short("; ".join(h.errors), 60), style="bold red")
        hosts.add_row(
            h.name, ",".join(h.roles) or "-", reach,
            f"{counts['ok']} / {counts['not_applicable']} / {counts['error']}",
            " / ".join(str(fb.get(k, 0)) for k in ("critical", "high", "medium", "low")),
        )
    console.print(hosts)

    shown = [f for f in report.findings if f.status in (FindingStatus.fail, FindingStatus.error, FindingStatus.waived)]
    if verbose:
        shown = [f for f in report.findings if f.status != FindingStatus.not_applicable]
    if shown:
        console.rule("Findings, worst first")
    for f in shown:
        render_finding(f, console)
    errors = [(h.name, p, h.probe_messages.get(p, "")) for h in report.hosts for p, st in h.probes.items() if st == "error"]
    if errors:
        console.print("[magenta]Probes that failed:[/magenta]")
        for host, probe, msg in errors:
            console.print(f"  {host}: {probe}: {msg}")
    counts = s.by_status
    console.print(
        f"[bold]{counts.get('fail', 0)} failed[/bold] ("
        + ", ".join(f"{n} {sev}" for sev, n in reversed(list(s.failed_by_severity.items())) if n)
        + f"), {counts.get('error', 0)} error, {counts.get('waived', 0)} waived, {counts.get('pass', 0)} passed, "
        f"{counts.get('not_applicable', 0)} not applicable"
        + (" — [bold magenta]incomplete[/bold magenta]" if s.incomplete else "")
    )


def render_finding(f, console: Console, max_evidence: int = 4) -> None:
    """One finding as a compact block that reads well in 80 columns."""
    head = Text()
    head.append(f"{f.severity.value.upper():<8}", style=SEVERITY_STYLE[f.severity.value])
    head.append(f" {f.status.value:<6} ", style=STATUS_STYLE[f.status.value])
    head.append(f.rule_id, style="bold")
    if f.subject:
        head.append(f" [{f.subject}]")
    head.append(f"  {f.title}", style="dim")
    console.print(head)
    console.print(f"         hosts: {', '.join(f.hosts)}", highlight=False)
    if f.status == FindingStatus.error:
        console.print(f"         [magenta]{f.message}[/magenta]", highlight=False)
        return
    if f.observed is not None or f.expected is not None:
        console.print(f"         observed {_short(f.observed, 60)}, expected {_short(f.expected, 60)}", highlight=False)
    for line in f.evidence[:max_evidence]:
        console.print(Text("         " + line, style="dim"))
    if len(f.evidence) > max_evidence:
        console.print(Text(f"         … {len(f.evidence) - max_evidence} more evidence lines (--json for all)", style="dim"))
    if f.status == FindingStatus.waived:
        console.print(f"         [blue]{f.message}[/blue]", highlight=False)
    elif f.message and f.status == FindingStatus.fail:
        console.print(f"         {f.message}", highlight=False)
    if f.status == FindingStatus.fail and f.remediation.text:
        role = f" (Ansible role {f.remediation.role})" if f.remediation.role else ""
        console.print(f"         [green]→ {f.remediation.text}{role}[/green]", highlight=False)
