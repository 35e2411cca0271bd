"""``storadvise audit``: scan a site under the pre-deployment profile and judge the acceptance checklist."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

from advisor.util.errors import UsageError
from advisor.util.atomic_files import check_output_paths
from advisor.model.fail_on import check_fail_on, fail_on_option
from advisor.util.option_aliases import ALIAS_HELP
from advisor.scan.pipeline import ScanOptions

out = Console(emoji=False)  # host text such as ":skull:" is shown as written
err = Console(stderr=True, emoji=False)


def audit(
    site: Optional[str] = typer.Option(None, "--site", "-s", help="Site name or site file path."),
    inventory: Optional[Path] = typer.Option(None, "--inventory", "-i", help="An Ansible inventory (INI or YAML) instead of a site file."),
    role_map: list[str] = typer.Option([], "--role-map", help="GROUP=ROLE for --inventory (repeatable)."),
    fail_on: str = fail_on_option("medium"),
    threshold: Optional[str] = typer.Option(None, "--threshold", hidden=True, help=ALIAS_HELP.format(new="--fail-on")),
    junit: Optional[Path] = typer.Option(None, "--junit", help="Write the checklist as JUnit XML to FILE."),
    html: Optional[Path] = typer.Option(None, "--html", help="Write the checklist and the scan as a self-contained HTML report."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write the scan JSON to FILE."),
    history: Optional[Path] = typer.Option(None, "--history", help="Scan history database (default $STORADVISE_HISTORY, else $XDG_DATA_HOME/storadvise/history.db)."),
    no_history: bool = typer.Option(False, "--no-history", help="Do not store the audit's scan in the history."),
    json_out: bool = typer.Option(False, "--json", help="Print {site, accepted, checks} as JSON."),
    *,
    options: ScanOptions,
) -> None:
    """The acceptance checklist of a new installation: every host reachable, every mesh path within its expected
    rate, no finding at or above medium, waivers valid and unexpired, the GPFS/XCache settings the profile demands.

    Profile: pre-deployment unless --profile is given. Exit 0 accepted, 2 a check failed, 1 usage or tool error.
    """
    from advisor.audit.checklist import DEFAULT_PROFILE, audit_checklist
    from advisor.history.store import store_scan
    from advisor.report.junit import checklist_junit
    from advisor.report.outputs import ReportFiles, write_report_files
    from advisor.report.progress import ScanProgress
    from advisor.scan.pipeline import open_scan, run_scan
    from advisor.site.file import required_site

    given_as = "--fail-on"
    if threshold is not None:
        if fail_on != "medium" and fail_on != threshold:
            raise UsageError("--threshold is the old name of --fail-on: give one of them")
        fail_on, given_as = threshold, "--threshold"
    check_fail_on(fail_on, given_as)
    check_output_paths({"--junit": junit, "--html": html, "--output": output})
    threshold = fail_on
    if not options.profiles:
        options = dataclasses.replace(options, profiles=(DEFAULT_PROFILE,))
    target = open_scan(options, required_site(site, inventory, role_map))
    with ScanProgress(len(target.hosts), f"auditing {target.site.name}", enabled=not json_out, console=err) as bar:
        run = run_scan(target, options, progress=bar.host_done, quiet=json_out, console=err)
    report = run.report
    items = audit_checklist(report, target.site, target.catalog, threshold=threshold)
    write_report_files(report, ReportFiles(json=output, junit=junit, html=html), audit=items,
                       junit_text=checklist_junit(report.site, items, report.started_at, report.duration_s))
    store_scan(report, history, no_history, None, warn=err.print, written=output)
    accepted = all(i.passed for i in items)
    if json_out:
        print(json.dumps({"site": report.site, "profiles": report.profiles, "accepted": accepted,
                          "checks": [i.as_dict() for i in items]}, indent=2))
    else:
        from rich.markup import escape
        from rich.table import Table

        t = Table(header_style="bold", title=f"acceptance checklist of {report.site} ({', '.join(report.profiles)})")
        for c in ("result", "check", "subject", "detail"):
            t.add_column(c, overflow="fold")
        for i in sorted(items, key=lambda i: i.passed):
            t.add_row("[green]pass[/]" if i.passed else "[red]FAIL[/]", i.check, escape(i.subject), escape(i.message))
        out.print(t)
        failed = sum(1 for i in items if not i.passed)
        out.print("[green]ACCEPTED[/]" if accepted else f"[red]NOT ACCEPTED[/]: {failed} of {len(items)} checks fail")
    raise typer.Exit(0 if accepted else 2)


def register(app: typer.Typer) -> None:
    from advisor.scan.flags import scan_options

    app.command("audit", short_help="The acceptance checklist of a new installation (pre-deployment profile).",
                epilog="Examples:\n\n  storadvise audit --site newsite --junit audit.xml --html audit.html\n\n"
                "  storadvise audit --site newsite --profile pre-deployment --profile gpfs-site")(scan_options()(audit))
