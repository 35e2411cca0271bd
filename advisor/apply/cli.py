"""``storadvise plan`` and ``storadvise verify`` (mounted on the root app by ``register``)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

from advisor.atomic_files import write_atomic
from advisor.errors import UsageError
from advisor.findings import SEVERITY_ORDER
from advisor.report.safe_text import markup_text as m_
from advisor.scan_options import ScanOptions
from advisor.scan_flags import scan_options

out = Console(emoji=False)  # host text such as ":skull:" is shown as written
err = Console(stderr=True, emoji=False)


def _scan(target, options, quiet: bool, label: str, mesh_wanted=None):
    """The scan pipeline (advisor/scan.py) with a progress bar."""
    from advisor.report.progress import ScanProgress
    from advisor.scan import run_scan

    with ScanProgress(len(target.hosts), f"{label} {target.site.name}", enabled=not quiet, console=err) as bar:
        return run_scan(target, options, progress=bar.host_done, quiet=quiet, console=err,
                        mesh_wanted=mesh_wanted).report


def plan(
    site: str = typer.Option(..., "--site", "-s", help="Site name or site file path."),
    scan: Optional[Path] = typer.Option(None, "--scan", help="A scan JSON ('storadvise scan --json') of this site; none = scan now."),
    out_dir: Path = typer.Option(..., "--out", "--output", "-o", help="Directory to write the Ansible project into."),
    json_out: bool = typer.Option(False, "--json", help="Print the plan summary as JSON."),
    min_severity: str = typer.Option("low", "--min-severity", help=f"Plan only findings at or above this severity ({', '.join(SEVERITY_ORDER)}); PLAN.md lists what was left out."),
    *,
    options: ScanOptions,
) -> None:
    """Write an Ansible project that fixes the scan's failed findings (waived ones are left alone).

    Example: storadvise plan --site ifca --scan scan.json --out ifca-plan --min-severity medium

    Then: cd DIR && ansible-playbook apply-tuning.yml  (--check --diff first to review).
    The scan options (--hosts, --profile, --from, ...) go with a scan made now, not with --scan.
    Settings the hosts cannot change (read-only, immutable, waived) are listed under "Cannot apply
    here" and never reach Ansible. Exit 0 when written, 3 when hosts were left out (unreachable at
    scan time), 1 on errors.
    """
    from advisor.apply.planner import build_plan
    from advisor.apply.project import write_project
    from advisor.report.model import load_report
    from advisor.scan import open_scan
    from advisor.site_file import load_site

    if min_severity not in SEVERITY_ORDER:
        raise UsageError(f"--min-severity {min_severity!r}: one of {', '.join(SEVERITY_ORDER)}")
    the_site = load_site(site)
    if scan is not None:
        changed = options.changed()
        if changed:
            raise UsageError(f"{', '.join(changed)} go(es) with a scan made now; --scan gives a scan already made")
        report = load_report(scan)
        source = str(scan)
    else:
        target = open_scan(options, the_site)
        report = _scan(target, options, json_out, "scanning")
        source = "the scan just made"
    the_plan = build_plan(report, the_site, source, min_severity=min_severity)
    summary = write_project(the_plan, the_site, out_dir)
    if scan is None:
        write_atomic(Path(out_dir) / "scan-before.json", report.model_dump_json(indent=2) + "\n")
        summary["scan"] = str(Path(out_dir) / "scan-before.json")
    else:
        summary["scan"] = str(scan)
    summary["directory"] = str(out_dir)
    if json_out:
        print(json.dumps(summary, indent=2, default=str))
    else:
        _render_plan(the_plan, out_dir)
    raise typer.Exit(3 if the_plan.refused else 0)


def _render_plan(the_plan, out_dir: Path) -> None:
    from rich.table import Table

    def cell(v) -> str:
        return "?" if v is None else m_(v)

    if the_plan.changes:
        t = Table(header_style="bold", title=f"plan for site {m_(the_plan.site)}")
        for c in ("host", "role", "setting", "runtime", "persisted", "target", "changes", "why"):
            t.add_column(c)
        for c in the_plan.changes:
            t.add_row(m_(c.host), m_(c.role), m_(c.setting), cell(c.runtime), cell(c.persisted), cell(c.target),
                      c.scope.value, m_(", ".join(c.rule_ids)))
        out.print(t)
    else:
        out.print("nothing to apply: no failed finding names a change this site can make")
    for c in the_plan.cannot_apply:
        out.print(f"[yellow]cannot apply here:[/yellow] {m_(c['host'])} {m_(c['setting'])} -> {m_(c['target'])}: "
                  f"{m_(c['reason'])}")
    if the_plan.below_min_severity:
        out.print(f"left out below --min-severity {the_plan.min_severity}: "
                  + m_(", ".join(sorted({b['rule'] for b in the_plan.below_min_severity}))))
    for m in the_plan.manual:
        out.print(f"[yellow]by hand:[/yellow] {m_(m['rule'])} on {m_(', '.join(m['hosts']))}: {m_(m['text'])}")
    for r in the_plan.refused:
        err.print(f"[red]left out:[/red] {m_(r['host'])}: {m_(r['reason'])}")
    out.print(f"wrote {m_(out_dir)} (PLAN.md). Review: cd {m_(out_dir)} && "
              "ansible-playbook apply-tuning.yml --check --diff ; "
              "apply: ansible-playbook apply-tuning.yml")


def verify(
    site: str = typer.Option(..., "--site", "-s", help="Site name or site file path."),
    before: Optional[Path] = typer.Option(None, "--before", help="The scan JSON taken before the change (plan's scan); none = the site's last scan in the history."),
    json_out: bool = typer.Option(False, "--json", help="Print {findings, paths, summary} as JSON."),
    output: Optional[Path] = typer.Option(None, "--output", help="Also write the new scan JSON to FILE."),
    html: Optional[Path] = typer.Option(None, "--html", help="Write the new scan and its before -> after as a self-contained HTML report."),
    history: Optional[Path] = typer.Option(None, "--history", help="Scan history database (default $STORADVISE_HISTORY, else $XDG_DATA_HOME/storadvise/history.db)."),
    no_history: bool = typer.Option(False, "--no-history", help="Neither read 'before' from nor store the new scan in the history."),
    fail_on: str = typer.Option("high", "--fail-on", help="Exit 2 when a finding at least this severe still fails (or is new)."),
    *,
    options: ScanOptions,
) -> None:
    """Scan again (and the mesh, when the site has one and network settings were touched) and show
    per finding before -> after (fixed, still failing, new) and per path the throughput before -> after.

    The new scan takes every scan option; its profiles default to the before scan's.

    Without --before, the site's last scan in the history is the "before".

    Example: storadvise verify --site ifca --before plan-dir/scan-before.json
    """
    from advisor.apply.planner import check_report_matches
    from advisor.apply.verify import network_touched, verify_result
    from advisor.history.store import store_scan
    from advisor.report.outputs import ReportFiles, write_report_files
    from advisor.scan import open_scan
    from advisor.site_file import load_site

    if fail_on not in SEVERITY_ORDER:
        raise UsageError(f"--fail-on must be one of {', '.join(SEVERITY_ORDER)}, got {fail_on!r}")
    the_site = load_site(site)
    before_report, before_source = _before_scan(the_site.name, before, history, no_history)
    check_report_matches(before_report, the_site, before_source)
    if not options.profiles:
        options = dataclasses.replace(options, profiles=tuple(before_report.profiles))
    target = open_scan(options, the_site)
    touched = network_touched(before_report) or bool(before_report.mesh)
    after = _scan(target, options, json_out, "re-scanning", mesh_wanted=lambda _t: touched)
    result = verify_result(before_report, after, fail_on,
                           hosts={h.name for h in target.hosts} if options.hosts else None)
    result["before_source"] = before_source
    write_report_files(after, ReportFiles(json=output, html=html), verify=result)
    store_scan(after, history, no_history, None, warn=err.print)
    if json_out:
        print(json.dumps(result, indent=2, default=str))
    else:
        _render_verify(result)
    raise typer.Exit(2 if result["summary"]["failing_at_or_above_fail_on"] else 0)


def _before_scan(site: str, before: Optional[Path], history: Optional[Path], no_history: bool):
    """The scan to compare with: ``--before FILE``, else the site's newest scan in the history."""
    from advisor.history.store import HistoryStore, history_path
    from advisor.report.model import load_report

    if before is not None:
        return load_report(before), str(before)
    if no_history:
        raise UsageError("verify needs --before FILE when --no-history is given")
    where = history_path(history)
    if not where.exists():
        raise UsageError(f"no --before and no scan history at {where}: give --before FILE (plan-dir/scan-before.json)")
    with HistoryStore(where) as store:
        report = store.last(site)
        scans = store.scans(site, 1)
    if report is None:
        raise UsageError(f"no --before and no scan of site {site!r} in {where}: give --before FILE")
    return report, f"{where} scan {scans[0]['id']}"


def _fmt_bps(v) -> str:
    return "-" if v is None else f"{v / 1e6:.0f} Mb/s"


def _render_verify(result: dict) -> None:
    from rich.table import Table

    s = result["summary"]
    colour = {"fixed": "green", "still_failing": "red", "new": "red"}
    if result["findings"]:
        t = Table(header_style="bold", title=f"site {m_(result['site'])}: findings before -> after")
        for c in ("outcome", "rule", "host", "subject", "severity", "before", "after"):
            t.add_column(c)
        for r in result["findings"]:
            b, a = r["before"], r["after"]
            t.add_row(f"[{colour[r['outcome']]}]{r['outcome'].replace('_', ' ')}[/]", m_(r["rule_id"]), m_(r["host"]),
                      m_(r["subject"] or ""), r["severity"],
                      "-" if b is None else f"{b['status']} ({m_(b['observed'])})",
                      "-" if a is None else f"{a['status']} ({m_(a['observed'])})")
        out.print(t)
    if result["paths"]:
        t = Table(header_style="bold", title="throughput before -> after")
        for c in ("path", "before", "after", "after/before", "after/expected"):
            t.add_column(c)
        for p in result["paths"]:
            t.add_row(m_(f"{p['src']} -> {p['dst']}"), _fmt_bps((p["before"] or {}).get("measured_bps")),
                      _fmt_bps((p["after"] or {}).get("measured_bps")),
                      "-" if p["ratio_after_before"] is None else f"{p['ratio_after_before']:.2f}",
                      "-" if p["after_of_expected"] is None else f"{p['after_of_expected']:.0%}")
        out.print(t)
    eff = result.get("efficiency")
    if eff:
        ratio = "-" if eff.get("ratio") is None else f"{eff['ratio']:.2f}x"
        fmt = lambda v: "-" if v is None else f"{v:.0%}"  # noqa: E731
        out.print(f"CPU efficiency (active test, mean of workers): {fmt(eff.get('before'))} -> "
                  f"{fmt(eff.get('after'))} ({ratio})")
    out.print(f"fixed {s['fixed']}, still failing {s['still_failing']}, new {s['new']}; "
              f"{s['failing_at_or_above_fail_on']} at or above {result['fail_on']}")


def register(app: typer.Typer) -> None:
    """Add ``plan`` and ``verify`` to the root ``storadvise`` app."""
    app.command("plan", epilog="Examples:\n\n  storadvise plan --site ifca --scan scan.json --out ifca-plan\n\n"
                "  storadvise plan --site ifca --out ifca-plan      # scans first\n\n"
                "  cd ifca-plan && ansible-playbook apply-tuning.yml")(scan_options()(plan))
    app.command("verify", epilog="Example: storadvise verify --site ifca --before ifca-plan/scan-before.json\n\n"
                "  storadvise verify --site ifca --before scan.json --hosts storage --no-mesh")(scan_options()(verify))
