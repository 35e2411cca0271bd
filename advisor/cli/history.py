"""``storadvise history list|show|diff|trend|prune``: the stored scans of every site."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

from advisor.util.errors import UsageError
from advisor.model.fail_on import EXIT_FAILED, check_fail_on, fail_on_option
from advisor.util.help_format import HELP_FORMAT

app = typer.Typer(**HELP_FORMAT, help="Stored scans: list, show, diff two, trends per path and host, prune.\n\n"
                  "Example: storadvise history list --site ifca", no_args_is_help=True)
out = Console(emoji=False)  # host text such as ":skull:" is shown as written

HISTORY_HELP = "Scan history database (default $STORADVISE_HISTORY, else $XDG_DATA_HOME/storadvise/history.db)."


def _store(history: Optional[Path]):
    from advisor.history.store import HistoryStore, history_path

    return HistoryStore(history_path(history), create=False)


@app.command("list", epilog="Example: storadvise history list --site ifca --limit 10")
def history_list(
    site: Optional[str] = typer.Option(None, "--site", "-s", help="Only this site's scans."),
    limit: int = typer.Option(50, "--limit", min=1, help="Newest N scans."),
    history: Optional[Path] = typer.Option(None, "--history", help=HISTORY_HELP),
    json_out: bool = typer.Option(False, "--json", help="Print the scans as JSON."),
) -> None:
    """The stored scans, newest first."""
    with _store(history) as store:
        rows = store.scans(site, limit)
    if json_out:
        print(json.dumps(rows, indent=2))
        return
    from rich.markup import escape

    from advisor.report.whole_values import Column, print_whole_table

    # ids, timestamps and counts are copied (history show ID, --older-than): never split
    columns = [Column(c) for c in ("id", "site", "started", "hosts", "unreachable", "failed", "worst", "incomplete",
                                   "paths")]
    print_whole_table(out, columns, [[str(r["id"]), escape(r["site"]), r["started_at"], str(r["hosts"]),
                                      str(r["unreachable"]), str(r["failed"]), r["worst_failed_severity"] or "-",
                                      "yes" if r["incomplete"] else "no", str(r["paths"])] for r in rows])


@app.command("show", epilog="Example: storadvise history show 12 --html scan12.html")
def history_show(
    scan_id: int = typer.Argument(..., help="A scan id from 'storadvise history list'."),
    history: Optional[Path] = typer.Option(None, "--history", help=HISTORY_HELP),
    html: Optional[Path] = typer.Option(None, "--html", help="Also write the scan as a self-contained HTML report."),
    json_out: bool = typer.Option(False, "--json", help="Print the stored scan JSON (as 'scan --json' printed it)."),
) -> None:
    """One stored scan: the console summary, or its JSON."""
    from advisor.util.atomic_files import check_output_paths
    from advisor.report.console import render_scan
    from advisor.report.outputs import ReportFiles, write_report_files

    check_output_paths({"--html": html})
    with _store(history) as store:
        rep = store.report(scan_id)
    if html:
        write_report_files(rep, ReportFiles(html=html))
    if json_out:
        print(rep.model_dump_json(indent=2))
    else:
        render_scan(rep, out)


@app.command("diff", epilog="Example: storadvise history diff 11 12")
def history_diff(
    a: int = typer.Argument(..., help="The older scan id."),
    b: int = typer.Argument(..., help="The newer scan id."),
    history: Optional[Path] = typer.Option(None, "--history", help=HISTORY_HELP),
    fail_on: str = fail_on_option(what="a finding of scan B still failing or new"),
    json_out: bool = typer.Option(False, "--json", help="Print {findings, paths, summary} as JSON."),
) -> None:
    """What changed from scan A to scan B: findings fixed / still failing / new, throughput per path.

    Exit 2 when a finding at or above --fail-on still fails or is new, as verify does."""
    from advisor.apply.cli import _render_verify
    from advisor.apply.verify import verify_result

    check_fail_on(fail_on)
    with _store(history) as store:
        ra, rb = store.report(a), store.report(b)
    if ra.site != rb.site:
        raise UsageError(f"scan {a} is of site {ra.site!r}, scan {b} of {rb.site!r}: diff compares scans of one site")
    result = verify_result(ra, rb, fail_on)  # A -> B as verify shows before -> after
    result.update({"a": a, "b": b})
    if json_out:
        print(json.dumps(result, indent=2, default=str))
    else:
        _render_verify(result)
    raise typer.Exit(EXIT_FAILED if result["summary"]["failing_at_or_above_fail_on"] else 0)


@app.command("trend", epilog="Examples:\n\n  storadvise history trend --site ifca --src gpfs01 --dst wn01\n\n"
             "  storadvise history trend --site ifca --efficiency --host wn01")
def history_trend(
    site: str = typer.Option(..., "--site", "-s", help="The site."),
    src: Optional[str] = typer.Option(None, "--src", help="Only paths from this host."),
    dst: Optional[str] = typer.Option(None, "--dst", help="Only paths to this host."),
    efficiency: bool = typer.Option(False, "--efficiency", help="CPU efficiency per worker instead of throughput."),
    host: Optional[str] = typer.Option(None, "--host", help="With --efficiency: only this host."),
    history: Optional[Path] = typer.Option(None, "--history", help=HISTORY_HELP),
    json_out: bool = typer.Option(False, "--json", help="Print the rows as JSON."),
) -> None:
    """Throughput per path, or efficiency per host, over the stored scans."""
    from rich.table import Table

    with _store(history) as store:
        rows = store.efficiency_trend(site, host) if efficiency else store.path_trend(site, src, dst)
    if json_out:
        print(json.dumps(rows, indent=2))
        return
    t = Table(header_style="bold")
    if efficiency:
        for c in ("host", "scan", "started", "efficiency"):
            t.add_column(c)
        for r in rows:
            t.add_row(r["host"], str(r["scan"]), r["started_at"], "-" if r["efficiency"] is None else f"{r['efficiency']:.0%}")
    else:
        for c in ("path", "scan", "started", "measured", "expected", "ratio"):
            t.add_column(c)
        for r in rows:
            t.add_row(f"{r['src']} -> {r['dst']}", str(r["scan"]), r["started_at"],
                      "failed" if r["measured_bps"] is None else f"{r['measured_bps'] / 1e6:,.0f} Mb/s",
                      "-" if r["expected_bps"] is None else f"{r['expected_bps'] / 1e6:,.0f} Mb/s",
                      "-" if r["ratio"] is None else f"{r['ratio']:.0%}")
    out.print(t)


@app.command("prune", epilog="Examples:\n\n  storadvise history prune --keep 30\n\n"
             "  storadvise history prune --older-than 2026-01-01 --site ifca --dry-run")
def history_prune(
    keep: Optional[int] = typer.Option(None, "--keep", min=0, help="Keep the newest N scans of each site."),
    older_than: Optional[str] = typer.Option(None, "--older-than", help="Delete scans started before this ISO 8601 date."),
    site: Optional[str] = typer.Option(None, "--site", "-s", help="Only this site's scans."),
    history: Optional[Path] = typer.Option(None, "--history", help=HISTORY_HELP),
    dry_run: bool = typer.Option(False, "--dry-run", help="List the scans that would be deleted; delete nothing."),
    json_out: bool = typer.Option(False, "--json", help="Print what was (or would be) deleted as JSON."),
) -> None:
    """Delete old scans (and their findings, paths and efficiency rows)."""
    import datetime

    if older_than:
        try:
            datetime.datetime.fromisoformat(older_than)
        except ValueError:
            raise UsageError(f"--older-than must be an ISO 8601 date, got {older_than!r}") from None
    with _store(history) as store:
        if dry_run:
            doomed = store.prunable(keep=keep, older_than=older_than, site=site)
        else:
            n = store.prune(keep=keep, older_than=older_than, site=site)
    if dry_run:
        if json_out:
            print(json.dumps({"deleted": 0, "dry_run": True, "would_delete": len(doomed), "scans": doomed}, indent=2))
            return
        for d in doomed:
            out.print(f"would delete scan {d['id']} of site {d['site']} started {d['started_at']}", highlight=False)
        out.print(f"would delete {len(doomed)} scan(s) (dry run: nothing deleted)")
        return
    if json_out:
        print(json.dumps({"deleted": n}))
    else:
        out.print(f"deleted {n} scan(s)")
