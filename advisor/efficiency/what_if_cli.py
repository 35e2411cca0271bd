"""``storadvise efficiency what-if``: the efficiency a job loses reading over RTT, and where a cache pays off.

One command, two sources of RTTs: ``--rtt-ms`` (typed by hand, per path) or ``--scan`` (the RTTs a
scan's mesh measured, per data source). ``whatif`` is the old name, kept as a hidden alias; so is
``--profile`` for ``--job-report`` (``--profile`` means a rule profile everywhere else).
"""

from __future__ import annotations

import json
from typing import Any, Optional

import typer

from advisor.efficiency import latency
from advisor.efficiency.records import EfficiencyInputError
from advisor.util.errors import ERROR_PREFIX, StoradviseError, UsageError
from advisor.util.option_aliases import ALIAS_HELP, one_of_aliases

EPILOG = ("Examples:\n\n\b\n"
          "  storadvise efficiency what-if --rtt-ms 9 --rtt-ms fnal=150 --job-report job.fjr.xml\n"
          "  storadvise efficiency what-if --scan scan.json --json")


def parse_rtt(values: list[str]) -> list[tuple[str | None, float]]:
    """``--rtt-ms`` values: ``MS`` or ``PATH=MS``."""
    out = []
    for v in values:
        label, eq, num = v.rpartition("=")
        try:
            rtt = float(num)
        except ValueError:
            raise UsageError(f"--rtt-ms {v!r}: give milliseconds, e.g. 9 or wn01->xcache=9") from None
        if not (0 <= rtt < 100000):
            raise UsageError(f"--rtt-ms {v!r}: RTT must be between 0 and 100000 ms")
        out.append((label if eq else None, rtt))
    return out


def _job_report_profile(path: str) -> tuple[latency.IOProfile, Optional[float]]:
    """The I/O profile of a CMSSW framework job report, and the job's own efficiency where it says."""
    from advisor.efficiency import fjr
    from advisor.efficiency.records import RowError

    try:
        with open(path, "rb") as f:
            report = fjr.parse_fjr(f, path)
        prof = latency.profile_from_fjr(report, path)
    except OSError as e:
        raise EfficiencyInputError(path, e.strerror or "cannot be read") from None
    except (RowError, ValueError) as e:
        raise EfficiencyInputError(path, str(e)) from None
    eff = None
    if report.cpu_seconds and report.wall_seconds:
        eff = report.cpu_seconds / (report.wall_seconds * (report.threads or 1))
    return prof, eff


def _load_scan(scan: str) -> dict[str, Any]:
    try:
        with open(scan, encoding="utf-8") as f:
            report = json.load(f)
    except OSError as e:
        raise StoradviseError(f"{scan}: {e.strerror or 'cannot be read'}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise StoradviseError(f"{scan}: not a scan report (JSON): {e}") from None
    if not isinstance(report, dict):
        raise StoradviseError(f"{scan}: not a scan report (a JSON object expected)")
    return report


def what_if(
    rtt_ms: list[str] = typer.Option([], "--rtt-ms", help="RTT in ms to the data source, or PATH=MS (repeatable). Or --scan."),
    scan: Optional[str] = typer.Option(None, "--scan", help="A scan report (storadvise scan --json) with a mesh: its measured RTTs per data source. Or --rtt-ms."),
    source: list[str] = typer.Option([], "--source", help="With --scan: only these data sources (host names; repeatable)."),
    job_report: Optional[str] = typer.Option(None, "--job-report", help="A CMSSW framework job report (FJR XML): its remote reads per second."),
    job_report_old: Optional[str] = typer.Option(None, "--profile", hidden=True, help=ALIAS_HELP.format(new="--job-report")),
    ops_per_second: Optional[float] = typer.Option(None, "--ops-per-second", min=0.0, help="Synchronous remote reads per wall second."),
    mb_per_cpu_second: Optional[float] = typer.Option(None, "--mb-per-cpu-second", min=0.0, help="MB read per CPU second."),
    mb_per_read: float = typer.Option(latency.DEFAULT_MB_PER_READ, "--mb-per-read", min=1e-6, help="MB per synchronous read (with --mb-per-cpu-second)."),
    cpu_per_wall: float = typer.Option(1.0, "--cpu-per-wall", min=1e-6, help="CPU seconds per wall second (cores x efficiency)."),
    efficiency: Optional[float] = typer.Option(None, "--efficiency", min=0.0, max=2.0, help="The job's efficiency on a local source (default: the job report's, else the scan's active test)."),
    threshold: float = typer.Option(0.05, "--threshold", min=0.0, max=1.0, help="Efficiency loss at which a cache is recommended (a fraction)."),
    as_json: bool = typer.Option(False, "--json", help="Print the estimates (and, with --rtt-ms, the finding) as JSON."),
) -> None:
    """Efficiency loss from reading over RTT, anchored on PIC/CIEMAT (-2% at 9 ms, -15% at 150 ms); where a
    cache pays off.

    The RTTs: --rtt-ms (typed, per path) or --scan (measured by the scan's mesh, per data source).
    The job's I/O profile: --job-report, --ops-per-second or --mb-per-cpu-second; else, with --scan, the
    scan's active efficiency test; else PIC/CIEMAT's reference MiniAOD job.
    """
    try:
        job_report = one_of_aliases(job_report, job_report_old, "--job-report", "--profile")
        if bool(rtt_ms) == (scan is not None):
            raise UsageError("give the RTTs: --rtt-ms MS (typed) or --scan FILE (measured), one of the two")
        if source and scan is None:
            raise UsageError("--source selects data sources of --scan FILE")
        if sum(x is not None for x in (job_report, ops_per_second, mb_per_cpu_second)) > 1:
            raise UsageError("give one of --job-report, --ops-per-second, --mb-per-cpu-second")
        prof = None
        if job_report:
            prof, fjr_eff = _job_report_profile(job_report)
            efficiency = efficiency if efficiency is not None else fjr_eff
        elif ops_per_second is not None:
            prof = latency.IOProfile(ops_per_second, "ops_per_second", {})
        elif mb_per_cpu_second is not None:
            prof = latency.profile_from_mb(mb_per_cpu_second, mb_per_read, cpu_per_wall)
        if scan is not None:
            _from_scan(scan, source, prof, efficiency, threshold, as_json)
        else:
            _from_rtts(parse_rtt(rtt_ms), prof or latency.reference_profile(), efficiency, threshold, as_json)
    except StoradviseError as e:
        typer.echo(f"{ERROR_PREFIX}{e}", err=True)
        raise typer.Exit(e.exit_code) from None
    except BrokenPipeError:
        raise typer.Exit(0) from None


def _from_rtts(rtts, prof: latency.IOProfile, efficiency: Optional[float], threshold: float, as_json: bool) -> None:
    result = latency.estimate(rtts, prof, threshold, efficiency)
    finding = latency.cache_finding(result)
    if as_json:
        result["findings"] = [finding.model_dump(mode="json")]
        typer.echo(json.dumps(result, indent=2))
        return
    typer.echo(f"profile: {prof.ops_per_second:.3f} synchronous reads/s ({prof.origin}); "
               f"model: loss = D/(1+D), D = reads/s x (RTT + {latency.T0_SECONDS * 1000:.2f} ms)")
    for r in result["estimates"]:
        rec = "  -> cache recommended" if r["recommend_cache"] else ""
        eff = f", efficiency {r['efficiency']:.1%}" if "efficiency" in r else ""
        typer.echo(f"  {(r['path'] or 'source'):>20}  RTT {r['rtt_ms']:>7g} ms  loss {r['loss']:6.1%}{eff}{rec}")


def _from_scan(scan: str, source: list[str], prof: Optional[latency.IOProfile], efficiency: Optional[float],
               threshold: float, as_json: bool) -> None:
    from advisor.efficiency.placement import PlacementInputError, profile_from_active
    from advisor.efficiency.placement import what_if as placement_what_if

    report = _load_scan(scan)
    prof = prof or profile_from_active(report) or latency.reference_profile()
    if efficiency is None:
        eff = (report.get("efficiency") or {}).get("mean")
        efficiency = eff if isinstance(eff, (int, float)) else None
    try:
        result = placement_what_if(report, prof, threshold, source or None, efficiency)
    except PlacementInputError as e:
        raise StoradviseError(f"{scan}: {e}") from None
    if as_json:
        typer.echo(json.dumps(result, indent=2))
        return
    p = result["profile"]
    typer.echo(f"profile: {p['ops_per_second']:.3f} synchronous reads/s ({p['origin']})")
    for r in result["sources"]:
        via = r.get("via_cache")
        extra = f"; via {via['cache']} ({via['rtt_ms']:g} ms) loss {via['loss']:.1%}" if via else ""
        rec = "  -> a cache pays off" if r["recommend_cache"] else ""
        typer.echo(f"  {r['source']:>16} [{','.join(r['roles'])}]  RTT {r['rtt_ms']:g} ms over "
                   f"{r['worker_paths']} worker path(s)  loss {r['loss']:.1%}{extra}{rec}")


def register_what_if(app: typer.Typer) -> None:
    """``what-if``, and ``whatif`` (its old name, hidden)."""
    app.command("what-if", epilog=EPILOG)(what_if)
    app.command("whatif", hidden=True, epilog=EPILOG)(what_if)
