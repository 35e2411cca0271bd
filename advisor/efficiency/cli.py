"""``storadvise efficiency``: ingest job accounting, analyse it, and the latency what-if."""

from __future__ import annotations

import json
import sys
from functools import wraps
from typing import Any, Callable, Optional

import typer

from advisor.util.errors import ERROR_PREFIX, StoradviseError, UsageError
from advisor.util.help_format import HELP_FORMAT
from advisor.efficiency import aggregate_findings
from advisor.efficiency.analysis import Summary, site_group_mapper
from advisor.efficiency.ingest import FORMATS, IssueLog, detect_format, ingest_into, iter_records
from advisor.efficiency.records import EfficiencyInputError

app = typer.Typer(
    **HELP_FORMAT,
    name="efficiency",
    help="CPU efficiency (CPU time / wall time x cores) from job accounting, tied to storage findings.\n\n"
    "Example: storadvise efficiency ingest history.jsonl --by length",
    no_args_is_help=True,
)

BY_CHOICES = ("host", "group", "length", "storage")


def _user_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """One line on stderr and exit 1 for errors the user can act on; never a traceback."""

    @wraps(fn)
    def run(*a: Any, **kw: Any) -> Any:
        try:
            return fn(*a, **kw)
        except StoradviseError as e:
            typer.echo(f"{ERROR_PREFIX}{e}", err=True)
            raise typer.Exit(e.exit_code) from None
        except BrokenPipeError:
            raise typer.Exit(0) from None

    return run


def _precheck(paths: list[str], fmt: str) -> None:
    """Fail before any output if a file cannot be opened or its format not recognised."""
    if fmt not in FORMATS:
        raise UsageError(f"--format {fmt!r}: use one of {', '.join(FORMATS)}")
    for p in paths:
        try:
            with open(p, "rb") as f:
                if fmt == "auto":
                    detect_format(p, f)  # type: ignore[arg-type]
        except IsADirectoryError:
            raise EfficiencyInputError(p, "is a directory, not an accounting file") from None
        except OSError as e:
            raise EfficiencyInputError(p, e.strerror or "cannot be read") from None


def _dumps(obj: Any) -> str:
    return json.dumps(obj, separators=(",", ":"), default=str)


@app.command()
@_user_errors
def ingest(
    files: list[str] = typer.Argument(..., metavar="FILE...", help="accounting exports (any mix of formats)"),
    format: str = typer.Option("auto", "--format", "-f", help="auto | htcondor | slurm | fjr"),
    as_json: bool = typer.Option(False, "--json", help="print {records, summary, errors, findings} as JSON"),
    baseline: Optional[list[str]] = typer.Option(None, "--baseline", help="exports of a comparable site or period"),
    target: Optional[float] = typer.Option(None, "--target", min=0.0, max=2.0, help="target median efficiency, e.g. 0.75"),
    tolerance: float = typer.Option(0.1, "--tolerance", min=0.0, max=1.0, help="allowed relative shortfall vs baseline/target"),
    by: Optional[list[str]] = typer.Option(None, "--by", help="host | group | length | storage (repeatable; default all)"),
    scan: Optional[str] = typer.Option(None, "--scan", help="a scan JSON whose findings the I/O finding points to"),
    site: Optional[str] = typer.Option(None, "--site", "-s", help="site name or file: node groups from its host groups"),
    limit: Optional[int] = typer.Option(None, "--limit", min=0, help="list at most N records in --json (default all, streamed)"),
    max_errors: int = typer.Option(1000, "--max-errors", min=0, help="unparseable rows listed (all are counted)"),
    io_drop: float = typer.Option(0.2, "--io-drop", min=0.0, max=1.0, help="relative efficiency fall that flags EFF-IO-BOUND"),
    failed_share: float = typer.Option(0.05, "--failed-share", min=0.0, max=1.0, help="wasted core-hour share that flags EFF-FAILED-WALL"),
    max_error_share: float = typer.Option(0.5, "--max-error-share", min=0.0, max=1.0,
                                          help="exit 1 (after printing) when more than this share of rows is unparseable"),
) -> None:
    """Per-job efficiency from HTCondor, Slurm and CMSSW job reports, with distributions and findings.

    Exits 1 when no record was parsed or more than --max-error-share of the rows were not.

    Example: storadvise efficiency ingest history.jsonl --by length --scan scan.json --json
    """
    groups = tuple(by or BY_CHOICES)
    for g in groups:
        if g not in BY_CHOICES:
            raise UsageError(f"--by {g!r}: use host, group, length or storage")
    if baseline and target is not None:
        raise UsageError("give --baseline or --target, not both")
    _precheck(files, format)
    if baseline:
        _precheck(baseline, format)
    scan_findings = aggregate_findings.load_scan(scan) if scan else None
    group_of = None
    if site:
        from advisor.site.file import load_site

        group_of = site_group_mapper(load_site(site))

    issues = IssueLog(keep=max_errors)
    summary = Summary(group_of)
    summary.io_drop = io_drop
    listed = 0
    out = sys.stdout
    if as_json:
        out.write('{"records":[')
        state = {"first": True, "listed": 0}

        def emit(rec: Any) -> None:
            if limit is None or state["listed"] < limit:
                out.write(("\n" if state["first"] else ",\n") + _dumps(rec.to_dict()))
                state["first"] = False
                state["listed"] += 1

        ingest_into(files, format, summary, issues, None if limit == 0 else emit)
        listed = state["listed"]
        out.write("\n],")
    else:
        from advisor.report.progress import InputFilesProgress

        with InputFilesProgress(files, "reading job records", enabled=True):
            ingest_into(files, format, summary, issues)

    base_summary = None
    if baseline:
        base_issues = IssueLog(keep=max_errors)
        base_summary = Summary(group_of).extend(iter_records(baseline, format, base_issues))
        for it in base_issues.items:
            issues.add(it)
    findings = [aggregate_findings.io_bound_finding(summary, scan_findings, drop=io_drop),
                aggregate_findings.storage_io_finding(summary, drop=io_drop),
                aggregate_findings.failed_wall_finding(summary, threshold=failed_share)]
    if base_summary is not None or target is not None:
        findings.append(aggregate_findings.baseline_finding(summary, base_summary, target, tolerance))

    sd = summary.to_dict(groups)
    sd["files"] = len(files)
    sd["records_listed"] = listed if as_json else 0
    sd["errors"] = issues.count
    sd["errors_by_file"] = issues.by_file
    if as_json:
        tail: dict[str, Any] = {
            "summary": sd,
            "errors": [i.to_dict() for i in issues.items],
            "findings": [f.model_dump(mode="json") for f in findings],
        }
        if base_summary is not None:
            tail["baseline"] = base_summary.to_dict(groups)
        out.write(_dumps(tail)[1:] + "\n")
    else:
        _print_human(sd, findings, issues, base_summary)
    _check_parsed_share(files, summary.records, issues.count, max_error_share)


def _check_parsed_share(files: list[str], records: int, errors: int, max_share: float) -> None:
    """The results are printed first (nothing is lost); then a run that read too little is an error."""
    where = files[0] if len(files) == 1 else f"{len(files)} files"
    if records == 0:
        raise EfficiencyIngestShortfall(f"{where}: no job record parsed ({errors} unparseable row(s))")
    share = errors / (records + errors)
    if share > max_share:
        raise EfficiencyIngestShortfall(
            f"{where}: {errors} of {records + errors} rows unparseable ({share:.1%}), more than --max-error-share {max_share:g}")


class EfficiencyIngestShortfall(StoradviseError):
    """Too few rows of the accounting input were read for its summary to stand."""


def _print_human(sd: dict[str, Any], findings: list[Any], issues: IssueLog, base: Summary | None) -> None:
    from rich.console import Console
    from rich.table import Table

    con = Console()
    e = sd["efficiency"]
    pct = (lambda v: "-" if v is None else f"{v:.1%}")
    con.print(f"[bold]{sd['records']}[/] jobs from {sd['files']} file(s); efficiency median {pct(e['median'])} "
              f"(p10 {pct(e['p10'])}, p90 {pct(e['p90'])}, core-weighted {pct(e['weighted'])}); "
              f"{sd['no_efficiency']} without efficiency; {sd['errors']} unparseable row(s)")
    con.print("status: " + ", ".join(f"{k} {v}" for k, v in sd["by_status"].items()))
    for key, title in (("by_group", "node group"), ("by_host", "host")):
        if key in sd and sd[key]:
            t = Table(title=f"efficiency by {title}")
            for c in (title, "jobs", "mean", "median", "p10", "p90", "weighted"):
                t.add_column(c, justify="right" if c != title else "left")
            rows = sorted(sd[key].items(), key=lambda kv: kv[1]["median"] or 0)
            for name, s in rows[:50]:
                t.add_row(name, str(s["count"]), pct(s["mean"]), pct(s["median"]), pct(s["p10"]), pct(s["p90"]), pct(s["weighted"]))
            con.print(t)
    if "by_length" in sd and sd["by_length"]:
        t = Table(title=f"efficiency by job length ({sd['length_kind']})")
        cols = ["bin", "jobs", "median", "p10", "p90"] + (["cpu/event s", "wall/event s"] if sd["length_kind"] == "events" else [])
        for c in cols:
            t.add_column(c, justify="right")
        for r in sd["by_length"]:
            row = [r["bin"], str(r["count"]), pct(r["median"]), pct(r["p10"]), pct(r["p90"])]
            if sd["length_kind"] == "events":
                row += [f"{r['cpu_per_event_median']:.4g}", f"{r['wall_per_event_median']:.4g}"]
            t.add_row(*row)
        con.print(t)
    if sd.get("by_storage"):
        t = Table(title="efficiency by the storage read, against read rate (MB per core-second)")
        for c in ("storage", "jobs", "median", "read GB", "read wait", "median by read rate", "I/O-bound"):
            t.add_column(c, justify="left" if c in ("storage", "median by read rate") else "right")
        for name, s in sd["by_storage"].items():
            curve = ", ".join(f"{r['bin']}: {pct(r['median'])} ({r['count']})" for r in s["by_read_rate"])
            sig = "-" if s["io_bound"] is None else (f"yes (-{s['efficiency_drop']:.0%})" if s["io_bound"]
                                                      else f"no ({-s['efficiency_drop']:+.0%})")
            t.add_row(name, str(s["count"]), pct(s["median"]), f"{s['read_gb']:.1f}", pct(s["read_wait_share"]), curve, sig)
        con.print(t)
    for f in findings:
        colour = {"fail": "red", "pass": "green"}.get(f.status.value, "yellow")
        con.print(f"[{colour}]{f.status.value.upper():>14}[/] {f.rule_id} ({f.severity.value}) {f.title}"
                  + (f" - {f.message}" if f.message else ""))
        if f.status.value == "fail":
            for line in f.evidence:
                con.print(f"                 {line}", highlight=False)
            if f.hosts:
                con.print(f"                 hosts: {', '.join(f.hosts[:20])}" + (" ..." if len(f.hosts) > 20 else ""))
    for it in issues.items[:20]:
        con.print(f"[yellow]{it.file}:{it.line}[/]: {it.message}", highlight=False)
    if issues.count > 20:
        con.print(f"... {issues.count - 20} more unparseable rows (see --json)")


from advisor.efficiency.what_if_cli import register_what_if  # noqa: E402  (`what-if`, old name `whatif`)
register_what_if(app)
