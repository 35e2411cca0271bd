"""The ``storadvise`` command line.

Exit codes: 0 clean; 1 usage, input or tool error; 2 findings at or above ``--fail-on``;
3 incomplete (a host unreachable or a probe errored, and nothing at or above ``--fail-on``).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

from advisor import __version__
from advisor.cli import probe as probe_cli
from advisor.cli import rules as rules_cli

try:  # typer >= 0.20 vendors its own click
    from typer._click import exceptions as click_exceptions
except ImportError:  # pragma: no cover - older typer depends on click
    from click import exceptions as click_exceptions
from advisor.util.atomic_files import check_output_paths
from advisor.util.errors import ERROR_PREFIX, StoradviseError, UsageError
from advisor.model.fail_on import check_fail_on, fail_on_option
from advisor.util.help_format import HELP_FORMAT
from advisor.util.option_aliases import ALIAS_HELP, one_of_aliases
from advisor.scan.options import ScanOptions
from advisor.scan.flags import scan_options

app = typer.Typer(
    **HELP_FORMAT,
    name="storadvise",
    help="Tuning advisor and diagnostics for grid-site storage: scan a site, see the evidence, "
    "get an Ansible fix, prove it.\n\nExample: storadvise scan --site ifca",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(probe_cli.app, name="probe")
app.add_typer(rules_cli.app, name="rules")

#: where the examples write Prometheus metrics: a file in node_exporter's textfile-collector directory
#: (``--collector.textfile.directory=/var/lib/node_exporter/textfile``; README and docs/reports.md say the same)
TEXTFILE_EXAMPLE = "/var/lib/node_exporter/textfile/storadvise.prom"

out = Console(emoji=False)  # host text such as ":skull:" is shown as written
err = Console(stderr=True, emoji=False)


def _version(value: bool) -> None:
    if value:
        print(f"storadvise {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version."),
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks of errors."),
) -> None:
    """storadvise: probe, advise, fix, verify."""


# --------------------------------------------------------------------------- helpers


# --------------------------------------------------------------------------- scan


@app.command(epilog="Examples:\n\n  storadvise scan                      # the local host\n\n"
             "  storadvise scan --site ifca --json > scan.json\n\n"
             "  storadvise scan --inventory hosts.ini --role-map gpfs=storage --role-map wn=worker\n\n"
             f"  storadvise scan --site ifca --html ifca.html --prometheus {TEXTFILE_EXAMPLE}\n\n"
             "  storadvise scan --site ifca --fail-on-new     # CI: fail only on what is new since the last scan\n\n"
             "  storadvise scan --site ifca --dry-run --skip-probes disk.smart   # what would run where; no host contacted")
@scan_options()
def scan(
    site: Optional[str] = typer.Option(None, "--site", "-s", help="Site name (sites/NAME.yml, ~/.config/storadvise/sites, lab) or path; none = the local host."),
    inventory: Optional[Path] = typer.Option(None, "--inventory", "-i", help="An Ansible inventory (INI or YAML) instead of a site file."),
    role_map: list[str] = typer.Option([], "--role-map", help="GROUP=ROLE for --inventory (repeatable)."),
    json_out: bool = typer.Option(False, "--json", help="Print the JSON report to stdout."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write the JSON report to FILE."),
    junit: Optional[Path] = typer.Option(None, "--junit", help="Write findings as JUnit XML to FILE."),
    html: Optional[Path] = typer.Option(None, "--html", help="Write a self-contained HTML report to FILE."),
    prometheus: Optional[Path] = typer.Option(None, "--prometheus", help="Write node_exporter textfile metrics to FILE."),
    fail_on: str = fail_on_option(),
    fail_on_new: bool = typer.Option(False, "--fail-on-new", help="Exit 2 only for failures (at or above --fail-on) absent from the last stored scan of the site."),
    history: Optional[Path] = typer.Option(None, "--history", help="Scan history database (default $STORADVISE_HISTORY, else $XDG_DATA_HOME/storadvise/history.db)."),
    no_history: bool = typer.Option(False, "--no-history", help="Do not store this scan in the history."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Also list passed findings."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print per host the exact commands each probe would run (and the mesh and active test plan); contact no host."),
    *,
    options: ScanOptions,
) -> None:
    """Probe every host of a site, evaluate the rules, report findings with evidence; store the scan in the history."""
    from advisor.history.store import store_scan
    from advisor.report.console import render_scan
    from advisor.report.json_stream import write_report_json
    from advisor.report.model import exit_code
    from advisor.report.outputs import ReportFiles, write_report_files
    from advisor.report.progress import ScanProgress
    from advisor.scan.pipeline import open_scan, run_scan

    check_fail_on(fail_on)
    check_output_paths({"--output": output, "--junit": junit, "--html": html, "--prometheus": prometheus})
    if fail_on_new and no_history:
        raise UsageError("--fail-on-new compares with the stored history; it does not go with --no-history")
    target = open_scan(options, site, inventory, role_map)
    if dry_run:
        from advisor.scan.dry_run import scan_dry_run
        from advisor.report.dry_run import render_dry_run
        from advisor.scan.pipeline import efficiency_settings

        plan = scan_dry_run(target, options, efficiency_settings(target, options) if options.efficiency else None)
        if json_out:
            print(json.dumps(plan, indent=2))
        else:
            render_dry_run(plan, out)
        raise typer.Exit(0)
    with ScanProgress(len(target.hosts), f"scanning {target.site.name}", enabled=not json_out, console=err) as bar:
        run = run_scan(target, options, progress=bar.host_done, quiet=json_out, console=err)
    report = run.report
    write_report_files(report, ReportFiles(json=output, junit=junit, html=html, prometheus=prometheus))
    new = store_scan(report, history, no_history, fail_on if fail_on_new else None, warn=err.print,
                     written=output)
    if json_out:
        write_report_json(report, sys.stdout)
    else:
        render_scan(report, out, verbose=verbose, next_step=_plan_step(report, site, inventory, role_map, options, output))
        if target.site.mesh and run.factset.mesh:
            # the causes name the slow paths; their table is for --verbose
            _render_mesh(run.factset.mesh, slow_paths=verbose or not report.causes)
    if new is not None:
        if not json_out:
            for r in new:
                out.print(f"[red]new since the last stored scan:[/red] {r['rule_id']} {r['host']} {r['subject'] or ''}")
        raise typer.Exit(2 if new else 3 if report.summary.incomplete else 0)
    raise typer.Exit(exit_code(report.summary, fail_on))


def _plan_step(report, site, inventory, role_map, options: ScanOptions, output: Optional[Path]) -> Optional[str]:
    """The ``plan`` that writes the fix of this scan (None: no failed finding names a change)."""
    from advisor.model.findings import FindingStatus, Severity
    from advisor.apply.next_steps import plan_after_scan

    fixable = [f.severity for f in report.findings if f.status == FindingStatus.fail and f.changes]
    if not fixable:
        return None
    worst = max(fixable, key=lambda s: s.rank)
    return plan_after_scan(site, inventory, role_map, options, report.site, output,
                           "info" if worst == Severity.info else "low")


def _render_mesh(mesh: dict, slow_paths: bool = True) -> None:
    from advisor.mesh.render import render_grid

    render_grid(mesh, out, slow_paths=slow_paths)


@app.command("report", epilog="Examples:\n\n  storadvise report scan.json                  # the console summary\n\n"
             "  storadvise report scan.json --html scan.html\n\n"
             f"  storadvise report scan.json --junit scan.xml --prometheus {TEXTFILE_EXAMPLE}\n\n"
             "  storadvise report scan.json --html site.html --cache-simulation sim.json\n\n"
             "  storadvise report scan.json --ndjson scan.ndjson\n\n"
             "  storadvise report old-1.2.json -o scan-2.json   # a report of schema 1.x as schema 2")
def report_cmd(
    scan_json: Path = typer.Argument(..., help="A scan JSON written by 'storadvise scan --json' or '--output'.",
                                     metavar="FILE"),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write the scan as JSON of the current schema "
                                          "(2.x) to FILE: a report of schema 1.x is converted "
                                          "(docs/report-schema.md)."),
    html: Optional[Path] = typer.Option(None, "--html", help="Write a self-contained HTML report to FILE."),
    junit: Optional[Path] = typer.Option(None, "--junit", help="Write findings as JUnit XML to FILE."),
    prometheus: Optional[Path] = typer.Option(None, "--prometheus", help="Write node_exporter textfile metrics to FILE."),
    cache_sim: Optional[Path] = typer.Option(None, "--cache-simulation", help="A 'storadvise cache simulate --output' result: its curves go into the HTML."),
    ndjson: Optional[Path] = typer.Option(None, "--ndjson", help="Write one JSON document per line (the scan, each host, "
                                          "finding, path and cause) to FILE, - for stdout: for Elasticsearch, "
                                          "OpenSearch, Loki (docs/report-schema.md)."),
    json_out: bool = typer.Option(False, "--json", help="Print the files written as JSON."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="With no file to write: also list passed findings."),
) -> None:
    """Show a saved scan: its console summary (as scan printed it), or rendered as HTML, JUnit, Prometheus
    metrics, NDJSON or JSON of the current schema (no host is contacted)."""
    from advisor.report.model import load_report
    from advisor.report.outputs import ReportFiles, load_cache_simulation, write_report_files

    if not (html or junit or prometheus or ndjson or output):
        if json_out or cache_sim:
            raise UsageError("say what to write: --html FILE, --junit FILE, --prometheus FILE, --ndjson FILE "
                             "and/or --output FILE (with none, report prints the console summary)")
        from advisor.report.console import render_scan

        render_scan(load_report(scan_json), out, verbose=verbose)
        return
    check_output_paths({"--output": output, "--html": html, "--junit": junit, "--prometheus": prometheus,
                        "--ndjson": ndjson})
    if ndjson is not None and str(ndjson) == "-" and json_out:
        raise UsageError("--ndjson - writes to stdout: leave out --json")
    if cache_sim and not html:
        raise UsageError("--cache-simulation goes into the HTML report: add --html FILE")
    rep = load_report(scan_json)
    sim = load_cache_simulation(cache_sim) if cache_sim else None
    write_report_files(rep, ReportFiles(json=output, junit=junit, html=html, prometheus=prometheus), cache=sim)
    written = {k: str(v) for k, v in (("json", output), ("html", html), ("junit", junit), ("prometheus", prometheus))
               if v}
    if ndjson is not None:
        from advisor.report.ndjson import write_ndjson

        n = write_ndjson(rep, ndjson)
        if str(ndjson) == "-":
            return
        written["ndjson"] = f"{ndjson} ({n} documents)"
    if json_out:
        print(json.dumps({"scan": str(scan_json), "written": written}, indent=2))
    else:
        out.print("wrote " + ", ".join(written.values()))


# --------------------------------------------------------------------------- collect


@app.command(epilog="Examples:\n\n  storadvise collect --site ifca --out-dir ifca-outputs/ && storadvise scan --from ifca-outputs/\n\n"
             "  storadvise collect --site ifca --export ifca-files/   # a readable file per host and probe\n\n"
             "  storadvise collect --site ifca --ansible-vars v.yml   # then playbooks/collect.yml (docs/collect.md)")
@scan_options(exclude=("profiles", "mesh", "efficiency", "from_capture"))
def collect(
    site: Optional[str] = typer.Option(None, "--site", "-s", help="Site name or path; none = the local host."),
    out_dir: Optional[Path] = typer.Option(None, "--out-dir", help="Directory to save every probe's raw output into."),
    out_dir_old: Optional[Path] = typer.Option(None, "--out", hidden=True, help=ALIAS_HELP.format(new="--out-dir")),
    export: Optional[Path] = typer.Option(None, "--export", help="Also (or only) write every probe's output as a "
                                          "readable file, one per host and probe, into directory DIR "
                                          "(DIR/HOST/PROBE.txt: what 'probe parse' reads; for a ticket)."),
    ansible_vars: Optional[Path] = typer.Option(
        None, "--ansible-vars",
        help="With --site: write the vars file playbooks/collect.yml runs (each host's batch number; the script "
             "NAME.batch.sh and the batches NAME.batches.json go beside it) and stop. "
             "With --from-ansible: the vars file the playbook ran."),
    from_ansible: Optional[Path] = typer.Option(
        None, "--from-ansible", help="Finish a capture collect.yml ran: decode the outputs it saved in DIR."),
    inventory: Optional[Path] = typer.Option(None, "--inventory", "-i", help="An Ansible inventory (INI or YAML) instead of a site file."),
    role_map: list[str] = typer.Option([], "--role-map", help="GROUP=ROLE for --inventory (repeatable)."),
    json_out: bool = typer.Option(False, "--json", help="Print a JSON summary."),
    *,
    options: ScanOptions,
) -> None:
    """Save every probe's raw output per host, for offline analysis with 'scan --from DIR' (--out-dir), or as
    readable files, one per host and probe (--export)."""
    out_dir = one_of_aliases(out_dir, out_dir_old, "--out-dir", "--out")
    from advisor.collect.collector import now_iso, write_manifest
    from advisor.report.progress import ScanProgress
    from advisor.scan.pipeline import open_scan, run_scan
    from advisor.transport.capture_objects import CaptureObjects
    from advisor.transport.captured import write_capture

    if from_ansible is not None or ansible_vars is not None:
        if export is not None:
            raise UsageError("--export writes the outputs collect runs itself; collect.yml writes its capture "
                             "(scan --from) without it")
        _collect_ansible(site, inventory, role_map, options, ansible_vars, from_ansible, out_dir, json_out)
        return
    if out_dir is None and export is None:
        raise UsageError("say where to save the outputs: --out-dir DIR (for scan --from), --export DIR (readable "
                         "files), or --ansible-vars FILE for collect.yml")
    check_output_paths({"--out-dir": out_dir if out_dir is None or not out_dir.is_dir() else None,
                        "--export": export if export is None or not export.is_dir() else None})
    for d in (out_dir, export):
        if d is not None and d.exists() and not d.is_dir():
            raise StoradviseError(f"{d}: exists and is not a directory")
        if d is not None and d.is_dir() and any(d.iterdir()):
            raise StoradviseError(f"{d}: directory is not empty; choose a new one (nothing was overwritten)")
    target = open_scan(options, site, inventory, role_map)
    started = now_iso()

    objects = CaptureObjects(out_dir) if out_dir is not None else None
    if export is not None:
        from advisor.transport.export_files import export_host, start_export

        start_export(export)

    def sink(host, commands, results):
        if out_dir is not None:
            write_capture(out_dir, host.name, commands, results, objects)
        if export is not None:
            export_host(export, host.name, commands, results)

    with ScanProgress(len(target.hosts), f"collecting {target.site.name}", enabled=not json_out, console=err) as bar:
        factset = run_scan(target, options, stages=("collect",), progress=bar.host_done, sink=sink).factset
    if out_dir is not None:
        write_manifest(out_dir, target.site, started, factset.hosts)
    if export is not None:
        from advisor.transport.export_files import export_unreachable

        for name, h in factset.hosts.items():
            if not h.reachable:
                export_unreachable(export, name, h.errors)
    summary = {
        "site": target.site.name, "directory": None if out_dir is None else str(out_dir),
        "export": None if export is None else str(export),
        "hosts": {n: {"reachable": h.reachable, "errors": h.errors, "probes": len(h.probes)} for n, h in factset.hosts.items()},
    }
    if json_out:
        print(json.dumps(summary, indent=2))
    else:
        from advisor.apply.next_steps import command_line

        unreachable = [n for n, h in factset.hosts.items() if not h.reachable]
        where = " and ".join(f"{d}{' (one file per host and probe)' if d is export else ''}"
                             for d in (out_dir, export) if d is not None)
        out.print(f"saved outputs of {len(factset.hosts) - len(unreachable)} host(s) to {where}"
                  + (f"; unreachable: {', '.join(unreachable)}" if unreachable else ""), highlight=False, markup=False)
        if out_dir is not None:
            out.print("next, analyse them here or on any machine with storadvise:", highlight=False)
            out.print("  " + command_line("scan", "--from", out_dir), highlight=False, soft_wrap=True, markup=False)
    raise typer.Exit(3 if any(not h.reachable for h in factset.hosts.values()) else 0)


def _collect_ansible(site, inventory, role_map, options, ansible_vars, from_ansible, out_dir, json_out) -> None:
    """collect.yml's two ends: the vars file it runs, and the capture from what it saved."""
    from advisor.collect.ansible import batch_vars, import_frames, write_vars_file
    from advisor.scan.pipeline import open_scan

    if ansible_vars is None:
        raise UsageError("--from-ansible DIR needs the vars file the playbook ran: --ansible-vars FILE")
    if from_ansible is not None:
        if out_dir is not None or site is not None:
            raise UsageError("--from-ansible finishes a capture in its own DIR: no --out-dir or --site")
        hosts = import_frames(from_ansible, ansible_vars)
        unreachable = [n for n, h in hosts.items() if not h.reachable]
        if json_out:
            print(json.dumps({"directory": str(from_ansible),
                              "hosts": {n: {"reachable": h.reachable, "errors": h.errors} for n, h in hosts.items()}},
                             indent=2))
        else:
            out.print(f"saved outputs of {len(hosts) - len(unreachable)} host(s) to {from_ansible}"
                      + (f"; unreachable: {', '.join(unreachable)}" if unreachable else ""))
        raise typer.Exit(3 if unreachable else 0)
    if out_dir is not None:
        raise UsageError("--ansible-vars FILE writes the playbook's vars; collect.yml writes the capture (no --out-dir)")
    target = open_scan(options, site, inventory, role_map)
    data = batch_vars(target.site, target.hosts, options.sample_seconds,
                      None if target.probes is None else sorted(target.probes), requested=target.requested)
    written = write_vars_file(ansible_vars, data)
    if json_out:
        print(json.dumps({"site": target.site.name, "vars": str(ansible_vars), "files": [str(p) for p in written],
                          "hosts": list(data["hosts"])}, indent=2))
    else:
        out.print(f"wrote the probe batches of {len(data['hosts'])} host(s) to {ansible_vars} "
                  f"(with {written[1].name} and {written[2].name} beside it)")


# --------------------------------------------------------------------------- sub-apps


def _mount_subapps() -> None:
    for module, name in (("advisor.cli.history", "history"), ("advisor.lab.cli", "lab"), ("advisor.mesh.cli", "mesh"),
                         ("advisor.efficiency.cli", "efficiency"), ("advisor.apply.cli", None), ("advisor.cache.cli", "cache"),
                         ("advisor.audit.cli", None), ("advisor.cli.privileges", None)):
        try:
            mod = __import__(module, fromlist=["app"])
        except ModuleNotFoundError as exc:
            if exc.name and module.startswith(exc.name):
                continue
            raise
        if name:
            app.add_typer(mod.app, name=name)
        else:
            mod.register(app)
        if module == "advisor.efficiency.cli":
            # ``efficiency test`` runs the scan's measure stage: it lives above the scan, not in the
            # efficiency package the scan imports
            from advisor.cli.efficiency_active import register_active

            register_active(mod.app)


_mount_subapps()


# --------------------------------------------------------------------------- entry point


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the program is so that cleanup runs as on Ctrl-C (the servers a scan
    started on hosts are stopped, temporary files removed)."""


#: after SIGTERM has unwound the main thread (its cleanup done), how long worker threads get to
#: finish before the process exits anyway: a worker blocked in a read must not keep it alive
TERMINATE_GRACE_S = 4.0


#: set by SIGTERM: typer turns the interrupt into a plain exit status 130, which says nothing of it
_terminated = threading.Event()


def _on_sigterm(_signum, _frame) -> None:
    _terminated.set()
    raise Terminated()


def _exit_after_grace(code: int) -> None:
    def _exit() -> None:
        time.sleep(TERMINATE_GRACE_S)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)

    threading.Thread(target=_exit, name="storadvise-terminate", daemon=True).start()


def _end_terminated() -> int:
    err.print("terminated")
    _exit_after_grace(143)
    return 143


def _end_interrupted() -> int:
    """Ctrl-C: the main thread's cleanup has run; a worker blocked in a read (a job's output over
    ssh) must not keep the process alive either, as after SIGTERM."""
    err.print("interrupted")
    _exit_after_grace(130)
    return 130


def usage_error_line(exc: "click_exceptions.UsageError") -> str:
    """A command-line error in the one style of every storadvise error: one line, ``storadvise: error:``,
    then what was wrong and the command's help (click's own format is three lines and another style)."""
    message = " ".join(exc.format_message().split())
    where = exc.ctx.command_path if exc.ctx is not None else "storadvise"
    return f"{ERROR_PREFIX}{message} (see '{where} --help')"


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        result = app(args=args, prog_name="storadvise", standalone_mode=False)
        if _terminated.is_set():
            return _end_terminated()
        return int(result or 0)
    except typer.Exit as exc:
        return exc.exit_code
    except click_exceptions.UsageError as exc:
        print(usage_error_line(exc), file=sys.stderr)
        return 1
    except typer.Abort as exc:
        if isinstance(exc.__cause__, Terminated) or _terminated.is_set():  # click turns an interrupt into Abort
            return _end_terminated()
        if isinstance(exc.__cause__, KeyboardInterrupt):
            return _end_interrupted()
        err.print("aborted")  # a prompt that got no answer (end of input)
        return 130
    except KeyboardInterrupt:
        if _terminated.is_set():  # Terminated, or an interrupt while it unwound
            return _end_terminated()
        return _end_interrupted()
    except Exception as exc:
        # SIGTERM raises where the main thread is, possibly inside a lock's bookkeeping: what
        # fails while that unwinds is the termination, not an error
        if _terminated.is_set() and not debug:
            return _end_terminated()
        if isinstance(exc, StoradviseError):
            if debug:
                raise
            print(f"{ERROR_PREFIX}{exc}", file=sys.stderr)
            return exc.exit_code
        # an unexpected failure: one line, traceback only with --debug
        if debug:
            raise
        line = str(exc).splitlines()[0] if str(exc) else ""
        print(f"storadvise: internal error: {type(exc).__name__}: {line} (rerun with --debug for the traceback)",
              file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
