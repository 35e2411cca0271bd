"""``storadvise plan`` and ``storadvise verify`` (mounted on the root app by ``register``)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

from advisor.util.atomic_files import check_output_paths
from advisor.util.errors import UsageError
from advisor.model.fail_on import EXIT_FAILED, check_fail_on, fail_on_option
from advisor.model.findings import SEVERITY_ORDER
from advisor.util.option_aliases import ALIAS_HELP, one_of_aliases
from advisor.report.safe_text import markup_text as m_
from advisor.scan.options import ScanOptions
from advisor.scan.flags import scan_options

out = Console(emoji=False)  # host text such as ":skull:" is shown as written
err = Console(stderr=True, emoji=False)


def _scan(target, options, quiet: bool, label: str, mesh_wanted=None):
    """The scan pipeline (advisor/scan/pipeline.py) with a progress bar."""
    from advisor.report.progress import ScanProgress
    from advisor.scan.pipeline import run_scan

    with ScanProgress(len(target.hosts), f"{label} {target.site.name}", enabled=not quiet, console=err) as bar:
        return run_scan(target, options, progress=bar.host_done, quiet=quiet, console=err,
                        mesh_wanted=mesh_wanted).report


def plan(
    site: Optional[str] = typer.Option(None, "--site", "-s", help="Site name or site file path; none = the local host (as scan)."),
    inventory: Optional[Path] = typer.Option(None, "--inventory", "-i", help="An Ansible inventory (INI or YAML) instead of a site file."),
    role_map: list[str] = typer.Option([], "--role-map", help="GROUP=ROLE for --inventory (repeatable)."),
    scan: Optional[Path] = typer.Option(None, "--scan", help="A scan JSON ('storadvise scan --json') of this site; none = scan now."),
    out_dir: Optional[Path] = typer.Option(None, "--out-dir", help="Directory to write the Ansible project into (required)."),
    out_dir_old: Optional[Path] = typer.Option(None, "--out", "--output", "-o", hidden=True,
                                               help=ALIAS_HELP.format(new="--out-dir")),
    json_out: bool = typer.Option(False, "--json", help="Print the plan summary as JSON."),
    min_severity: str = typer.Option("low", "--min-severity", help=f"Plan only findings at or above this severity ({', '.join(SEVERITY_ORDER)}); PLAN.md lists what was left out."),
    *,
    options: ScanOptions,
) -> None:
    """Write an Ansible project that fixes the scan's failed findings (waived ones are left alone).

    Then: cd DIR && ansible-playbook apply-tuning.yml  (--check --diff first to review).
    The scan options (--hosts, --profile, --from, ...) go with a scan made now, not with --scan.
    Settings the hosts cannot change (read-only, immutable, waived) are listed under "Cannot apply
    here" and never reach Ansible. Exit 0 when written, 3 when hosts were left out (unreachable at
    scan time), 1 on errors.
    """
    from advisor.apply.plan_input import load_plan_scan
    from advisor.apply.planner import build_plan
    from advisor.apply.project import write_project
    from advisor.scan.pipeline import open_scan
    from advisor.site.file import resolve_site

    out_dir = one_of_aliases(out_dir, out_dir_old, "--out-dir", "--out")
    if out_dir is None:
        raise UsageError("say where to write the Ansible project: --out-dir DIR")
    check_output_paths({"--out-dir": None if out_dir.is_dir() else out_dir})
    if min_severity not in SEVERITY_ORDER:
        raise UsageError(f"--min-severity {min_severity!r}: one of {', '.join(SEVERITY_ORDER)}")
    the_site = resolve_site(site, inventory, role_map)  # none: the local host, as scan
    if scan is not None:
        changed = options.changed()
        if changed:
            raise UsageError(f"{', '.join(changed)} go(es) with a scan made now; --scan gives a scan already made")
        report = load_plan_scan(scan)  # only what the plan reads: a 10,000-host scan is ~400 MB
        source = str(scan)
        _site_given(site, inventory, the_site, report.site, f"--scan {scan}")
    else:
        target = open_scan(options, the_site)
        report = _scan(target, options, json_out, "scanning")
        source = "the scan just made"
    the_plan = build_plan(report, the_site, source, min_severity=min_severity)
    summary = write_project(the_plan, the_site, out_dir)
    if scan is None:
        from advisor.report.outputs import ReportFiles, write_report_files

        # streamed a host at a time, as scan --output writes it (schema 2)
        write_report_files(report, ReportFiles(json=Path(out_dir) / "scan-before.json"))
        summary["scan"] = str(Path(out_dir) / "scan-before.json")
    else:
        summary["scan"] = str(scan)
    summary["directory"] = str(out_dir)
    if json_out:
        import msgspec  # json's indenting encoder is pure Python: seconds for a 10,000-host plan

        print(msgspec.json.format(msgspec.json.encode(summary, enc_hook=str), indent=2).decode())
    else:
        from advisor.apply.next_steps import verify_after_plan

        _render_plan(the_plan, out_dir)
        _render_next(the_plan, out_dir, verify_after_plan(
            site, inventory, role_map, Path(summary["scan"]), out_dir, options if scan is None else None))
    raise typer.Exit(3 if the_plan.refused else 0)


def _site_given(site, inventory, the_site, scanned: str, source: str) -> None:
    """Without --site/--inventory the command is about the local host (as scan is): a scan of another
    site says which --site to give, instead of a mismatch."""
    if site is None and inventory is None and scanned != the_site.name:
        raise UsageError(f"{source} is a scan of site {scanned!r}: give --site {scanned} (none means the local host)")


def _render_plan_causes(the_plan) -> None:
    """The causes the plan acts on, worst first, with what each is predicted to buy."""

    from advisor.diagnosis.report_types import Predicted
    from advisor.report.console_causes import calibration_line, prediction_line

    for i, c in enumerate(the_plan.causes, 1):
        preds = [Predicted.model_validate(p) for p in c["predicted"]]
        if c["kind"] == "change":
            how = f"{len(c['planned'])} change(s) planned" + (f", {c['not_planned']} left out (below)"
                                                              if c.get("not_planned") else "")
            line = prediction_line(preds)
        else:
            how, line = "by hand", "after the plan: " + prediction_line(preds, after_key="after_plan")
        out.print(f"{i:>2}. [bold]{m_(c['title'])}[/bold] ({how}): {m_(line)}", highlight=False)


def _render_plan(the_plan, out_dir: Path) -> None:
    """The plan on the console, identical changes across hosts folded as in PLAN.md; the causes first."""
    from rich.table import Table

    from advisor.apply.plan_causes import order_by_cause
    from advisor.apply.plan_markdown import UNKNOWN_VALUE, group_changes
    from advisor.util.host_ranges import hosts_text
    from advisor.report.whole_values import Column, print_whole_table

    _render_plan_causes(the_plan)

    def cell(v) -> str:
        return "?" if v is None else m_(v)

    if the_plan.changes:
        columns = [Column(c) for c in ("hosts", "role", "setting", "runtime", "persisted", "target", "changes", "why")]
        rows = [[m_(hosts_text(g.hosts, limit=6)), m_(g.role), m_(", ".join(g.settings)), cell(g.runtime),
                 cell(g.persisted), cell(g.target), g.scope.value, m_(", ".join(g.rule_ids))]
                for g in order_by_cause(the_plan, group_changes(the_plan))]
        # every cell is a value people copy (a setting, a number, a rule id): never split
        print_whole_table(out, columns, rows, title=f"plan for site {m_(the_plan.site)}")
        if any("?" in (r[3], r[4]) for r in rows):
            out.print(f"?: {UNKNOWN_VALUE}", highlight=False)
    else:
        out.print("nothing to apply: no failed finding names a change this site can make")
    for (setting, target, reason), hosts in _hosts_of(the_plan.cannot_apply, ("setting", "target", "reason")):
        out.print(f"[yellow]cannot apply here:[/yellow] {m_(hosts_text(hosts, limit=6))} {m_(setting)} -> {m_(target)}: "
                  f"{m_(reason)}")
    if the_plan.below_min_severity:
        out.print(f"left out below --min-severity {the_plan.min_severity}: "
                  + m_(", ".join(sorted({b['rule'] for b in the_plan.below_min_severity}))))
    for (rule, text), hosts in _hosts_of(the_plan.manual, ("rule", "text")):
        out.print(f"[yellow]by hand:[/yellow] {m_(rule)} on {m_(hosts_text(hosts, limit=6))}: {m_(text)}")
    for n in the_plan.notices:
        if n.startswith("not checked"):  # probes left out by --probes/--skip-probes
            out.print(f"[yellow]{m_(n)}[/yellow]")
    for (reason,), hosts in _hosts_of(the_plan.refused, ("reason",)):
        err.print(f"[red]left out:[/red] {m_(hosts_text(hosts, limit=6))}: {m_(reason)}")


def _render_next(the_plan, out_dir: Path, verify_line: str) -> None:
    """What to run next, each a command line that runs as printed (advisor.apply.next_steps)."""
    from advisor.apply.next_steps import apply_steps

    out.print(f"wrote {m_(out_dir)} (PLAN.md says what it changes and why)", highlight=False)
    if not the_plan.changes:
        return
    review, apply = apply_steps(out_dir)
    for what, line in (("review what would change", review), ("apply", apply), ("after applying, measure the outcome", verify_line)):
        out.print(f"next, {what}:", highlight=False)
        out.print("  " + line, markup=False, highlight=False, soft_wrap=True)


def _hosts_of(entries: list[dict], fields: tuple[str, ...]) -> list[tuple[tuple, list[str]]]:
    """Entries (with ``host`` or ``hosts``) that say the same ``fields``, once each with their hosts."""
    out: dict[tuple, list[str]] = {}
    for e in entries:
        out.setdefault(tuple(e.get(f) for f in fields), []).extend(e["hosts"] if "hosts" in e else [e["host"]])
    return list(out.items())


def verify(
    site: Optional[str] = typer.Option(None, "--site", "-s", help="Site name or site file path; none = the local host (as scan)."),
    inventory: Optional[Path] = typer.Option(None, "--inventory", "-i", help="An Ansible inventory (INI or YAML) instead of a site file."),
    role_map: list[str] = typer.Option([], "--role-map", help="GROUP=ROLE for --inventory (repeatable)."),
    before: Optional[Path] = typer.Option(None, "--before", help="The scan JSON taken before the change (plan's scan); none = the site's last scan in the history."),
    json_out: bool = typer.Option(False, "--json", help="Print {findings, paths, summary} as JSON."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Also write the new scan JSON to FILE."),
    html: Optional[Path] = typer.Option(None, "--html", help="Write the new scan and its before -> after as a self-contained HTML report."),
    history: Optional[Path] = typer.Option(None, "--history", help="Scan history database (default $STORADVISE_HISTORY, else $XDG_DATA_HOME/storadvise/history.db)."),
    no_history: bool = typer.Option(False, "--no-history", help="Neither read 'before' from nor store the new scan in the history."),
    fail_on: str = fail_on_option(what="a finding still failing or new"),
    plan_dir: Optional[Path] = typer.Option(None, "--plan", help="The plan directory ('storadvise plan --out DIR'): check its prediction for exactly the changes it planned (default: the before scan's, every proposed change)."),
    *,
    options: ScanOptions,
) -> None:
    """Scan again (and the mesh, when the site has one and network settings were touched) and show
    per finding before -> after (fixed, still failing, new) and per path the throughput before -> after.

    The new scan takes every scan option; its profiles default to the before scan's.

    Without --before, the site's last scan in the history is the "before".
    """
    from advisor.apply.planner import check_report_matches
    from advisor.apply.verify import network_touched, verify_result
    from advisor.history.store import store_scan
    from advisor.report.outputs import ReportFiles, write_report_files
    from advisor.scan.pipeline import open_scan
    from advisor.site.file import resolve_site

    check_fail_on(fail_on)
    check_output_paths({"--output": output, "--html": html})
    the_site = resolve_site(site, inventory, role_map)  # none: the local host, as scan
    prediction = None
    if plan_dir is not None:
        from advisor.apply.verify_predictions import load_plan_prediction

        prediction = load_plan_prediction(plan_dir)
    before_report, before_source = _before_scan(the_site.name, before, history, no_history)
    _site_given(site, inventory, the_site, before_report.site, f"--before {before_source}")
    check_report_matches(before_report, the_site, before_source)
    if not options.profiles:
        options = dataclasses.replace(options, profiles=tuple(before_report.profiles))
    if the_site.transport == "local" and not options.roles and before_report.hosts:
        # the local host as the before scan saw it (scan --role R): the same rules apply again
        options = dataclasses.replace(options, roles=tuple(before_report.hosts[0].roles))
    target = open_scan(options, the_site)
    touched = network_touched(before_report) or bool(before_report.mesh)
    after = _scan(target, options, json_out, "re-scanning", mesh_wanted=lambda _t: touched)
    result = verify_result(before_report, after, fail_on,
                           hosts={h.name for h in target.hosts} if options.hosts else None, prediction=prediction)
    result["before_source"] = before_source
    write_report_files(after, ReportFiles(json=output, html=html), verify=result)
    store_scan(after, history, no_history, None, warn=err.print, written=output)
    if json_out:
        print(json.dumps(result, indent=2, default=str))
    else:
        _render_verify(result)
    raise typer.Exit(EXIT_FAILED if result["summary"]["failing_at_or_above_fail_on"] else 0)


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

    from advisor.report.whole_values import Column, print_whole_table

    s = result["summary"]
    colour = {"fixed": "green", "still_failing": "red", "new": "red", "not_checked": "yellow"}
    if result["findings"]:
        columns = [Column(c) for c in ("outcome", "rule", "host", "subject", "severity", "before", "after")]
        rows = [[f"[{colour[r['outcome']]}]{r['outcome'].replace('_', ' ')}[/]", m_(r["rule_id"]), m_(r["host"]),
                 m_(r["subject"] or ""), r["severity"],
                 "-" if r["before"] is None else f"{r['before']['status']} ({m_(r['before']['observed'])})",
                 "-" if r["after"] is None else f"{r['after']['status']} ({m_(r['after']['observed'])})"]
                for r in result["findings"]]
        print_whole_table(out, columns, rows, title=f"site {m_(result['site'])}: findings before -> after")
    if result["paths"]:
        t = Table(header_style="bold", title="throughput before -> after")
        for c in ("path", "before", "after", "after/before", "after/expected", "limited by (after)"):
            t.add_column(c)
        for p in result["paths"]:
            via = " (flows)" if p.get("source") == "flows" else ""
            t.add_row(m_(f"{p['src']} -> {p['dst']}{via}"), _fmt_bps((p["before"] or {}).get("measured_bps")),
                      _fmt_bps((p["after"] or {}).get("measured_bps")),
                      "-" if p["ratio_after_before"] is None else f"{p['ratio_after_before']:.2f}",
                      "-" if p["after_of_expected"] is None else f"{p['after_of_expected']:.0%}",
                      m_(str((p["after"] or {}).get("limited_by") or "-")))
        out.print(t)
    eff = result.get("efficiency")
    if eff:
        ratio = "-" if eff.get("ratio") is None else f"{eff['ratio']:.2f}x"
        fmt = lambda v: "-" if v is None else f"{v:.0%}"  # noqa: E731
        out.print(f"CPU efficiency (active test, mean of workers): {fmt(eff.get('before'))} -> "
                  f"{fmt(eff.get('after'))} ({ratio})")
    _render_causes(result)
    out.print(f"fixed {s['fixed']}, still failing {s['still_failing']}, new {s['new']}; "
              f"{s['failing_at_or_above_fail_on']} at or above {result['fail_on']}"
              + (f"; not checked {s['not_checked']} (probes left out by --probes/--skip-probes)"
                 if s.get("not_checked") else ""))


def _render_causes(result: dict) -> None:

    from advisor.diagnosis.report_types import Predicted
    from advisor.report.console_causes import calibration_line, prediction_line

    for i, c in enumerate(result.get("causes") or [], 1):
        preds = [Predicted.model_validate(p) for p in c["predicted"]]
        got = {(m["metric"], m["subject"]): m["value"] for m in c["measured"] if not m.get("not_compared")}
        apart = sum(1 for m in c["measured"] if m.get("not_compared"))
        measured = [p.model_copy(update={"now": p.after if p.after is not None else p.now,
                                         "after": got.get((p.metric, p.subject))})
                    for p in preds if got.get((p.metric, p.subject)) is not None]
        out.print(f"{i:>2}. [bold]{m_(c['title'])}[/bold] — {m_(c['verdict'])}", highlight=False)
        if preds:
            out.print(f"    predicted {m_(prediction_line(preds))}", highlight=False)
        if measured:
            out.print(f"    predicted -> measured: {m_(prediction_line(measured))}", highlight=False)
        if apart:
            out.print(f"    not compared: {apart} measurement(s) whose pace the CPU, other traffic or the "
                      "application set", highlight=False)
    line = calibration_line(result)
    if line:
        out.print(line, highlight=False)


def register(app: typer.Typer) -> None:
    """Add ``plan`` and ``verify`` to the root ``storadvise`` app."""
    app.command("plan", epilog="Examples:\n\n  storadvise plan --site ifca --scan scan.json --out-dir ifca-plan\n\n"
                "  storadvise plan --site ifca --out-dir ifca-plan --min-severity medium   # scans first\n\n"
                "  storadvise plan --scan scan.json --out-dir fix      # the local host's scan\n\n"
                "  cd ifca-plan && ansible-playbook apply-tuning.yml")(scan_options()(plan))
    app.command("verify", epilog="Examples:\n\n  storadvise verify --site ifca --before ifca-plan/scan-before.json "
                "--plan ifca-plan\n\n"
                "  storadvise verify --site ifca --before scan.json --hosts storage --no-mesh")(scan_options()(verify))
