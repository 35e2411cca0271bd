"""``storadvise efficiency test``: the active test job on worker nodes, the scan's measure stage alone
(registered on the ``efficiency`` sub-app by advisor/cli/root.py; it imports the scan, which imports the
efficiency package, so it lives above both)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Optional

import typer

from advisor.efficiency.protocols import parse_protocols
from advisor.util.atomic_files import check_output_paths
from advisor.util.errors import ERROR_PREFIX, StoradviseError, UsageError


def _parse_clients(text: str) -> list[int]:
    try:
        out = sorted({int(x) for x in text.split(",") if x.strip()})
    except ValueError:
        raise UsageError(f"--clients {text!r}: give counts like 1,5,15") from None
    if not out or out[0] < 1 or out[-1] > 256:
        raise UsageError(f"--clients {text!r}: counts must be between 1 and 256")
    return out


def _pct(v: Optional[float]) -> str:
    return "-" if v is None else f"{v:.1%}"


def _num(v: Optional[float], fmt: str = "{:.2f}") -> str:
    return "-" if v is None else fmt.format(v)


def render(result: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    con = Console()
    t = Table(title=f"CPU efficiency of the test job (source {result.get('source', {}).get('label', '?')})")
    for c in ("host", "eff.", "cpu s", "wall s", "MiB", "Mb/s", "read wait", "CPU share"):
        t.add_column(c, justify="left" if c == "host" else "right", no_wrap=True)
    for name, s in result["hosts"].items():
        eff = "[red]failed[/]" if s.get("error") else _pct(s.get("efficiency"))
        t.add_row(name, eff, _num(s.get("cpu_seconds")), _num(s.get("wall_seconds")),
                  _num(s.get("mb_read"), "{:.0f}"), _num(s.get("read_mbps"), "{:.0f}"),
                  _pct(s.get("read_wait_share")), _pct(s.get("cpu_share_computing")))
    con.print(t)
    con.print(f"mean efficiency: [bold]{_pct(result.get('mean'))}[/]  (read wait: share of wall time blocked on "
              "reads; CPU share: CPU / wall while computing, below 100% = CPU contention, not I/O)")
    sc = result.get("scaling") or []
    if len(sc) > 1 or len(result.get("protocols") or []) > 1:
        con.print(scaling_table(result))
        for k in result.get("protocols") or []:
            con.print(f"{k['protocol']} ({k['source']}): {knee_text(k['knee'])}")


def knee_text(knee: dict[str, Any]) -> str:
    st = knee.get("status")
    bounds = (f"rate per client below {1 - knee['rate_drop']:.0%} of {knee.get('baseline_clients')} client(s)' "
              f"or efficiency below {knee['min_efficiency']:.0%}")
    if st == "found":
        return (f"knee at {knee['clients']} clients ({knee['first_degraded_clients']} clients degraded: "
                f"{knee['reason']}; degraded = {bounds})")
    if st == "not-reached":
        return f"no knee up to {knee.get('held_up_to')} clients (degraded = {bounds})"
    if st == "degraded-at-start":
        return f"degraded already at {knee['first_degraded_clients']} client(s) ({knee['reason']})"
    return "no measured point"


def scaling_table(result: dict[str, Any]) -> Any:
    """One table: a row per client count and protocol (protocols side by side at each count)."""
    from rich.table import Table

    from advisor.efficiency.scaling_curve import compare_rows, format_rate

    protocols, rows = compare_rows(result.get("scaling") or [])
    knees = {k["protocol"]: (k["knee"] or {}).get("clients") for k in result.get("protocols") or []}
    t = Table(title="runtime and data rate per client vs concurrent clients")
    for c in ("clients", "protocol", "nodes", "s/client", "rate/client", "eff.", "read wait", "CPU share"):
        t.add_column(c, justify="left" if c == "protocol" else "right", no_wrap=True)
    for r in rows:
        for i, p in enumerate(protocols):
            x = r[p]
            if x is None:
                continue
            first = str(r["clients"]) if i == 0 or all(r[q] is None for q in protocols[:i]) else ""
            if x.get("error"):
                t.add_row(first, p, str(x.get("nodes") or "-"), "[red]failed[/]", "", "", "", "")
                continue
            mark = " *" if knees.get(p) == r["clients"] else ""
            t.add_row(first, p, str(x.get("nodes") or "-"), _num(x.get("runtime_per_client_s")) + mark,
                      format_rate(x.get("rate_per_client_bps")), _pct(x.get("efficiency")),
                      _pct(x.get("read_wait_share")), _pct(x.get("cpu_share_computing")))
    t.caption = "* = the knee: the largest count before the rate per client or the efficiency degraded"
    return t


def register_active(app: typer.Typer) -> None:
    @app.command("test")
    def test(
        site: str = typer.Option(..., "--site", "-s", help="Site name or site file path."),
        hosts: Optional[str] = typer.Option(None, "--hosts", help="the hosts to test: a host pattern (names, globs, groups, "
                                                                   "roles, comma lists, !exclusion); default: worker"),
        clients: Optional[str] = typer.Option(None, "--clients", help="concurrent clients per point, e.g. 1,5,15"),
        source: Optional[str] = typer.Option(None, "--source", help="storage HOST (a data server there) or path:PATH"),
        mb: Optional[float] = typer.Option(None, "--mb", min=1.0, help="MiB read per host test (default 64)"),
        cpu_factor: Optional[float] = typer.Option(None, "--cpu-factor", min=0.1, help="compute time / healthy read time per MiB (default 1.5)"),
        readahead: Optional[int] = typer.Option(None, "--readahead", min=0, max=64, help="blocks requested ahead (0: synchronous; default 1)"),
        slots: Optional[int] = typer.Option(None, "--slots", min=1, max=64, help="concurrent jobs per worker, together calibrated to the healthy rate (default 1)"),
        protocol: Optional[str] = typer.Option(None, "--protocol", help="what the clients read through: xrootd, xcache, posix, tcp; several comma-separated are compared (default: the --source's kind)"),
        nodes: Optional[int] = typer.Option(None, "--nodes", min=1, max=1024, help="worker nodes the clients of a scaling point are spread over, round-robin (default 1)"),
        knee_drop: Optional[float] = typer.Option(None, "--knee-drop", help="a point is degraded when its rate per client is more than this fraction below the first point's (default 0.25)"),
        knee_efficiency: Optional[float] = typer.Option(None, "--knee-efficiency", help="... or its efficiency below this (default 0.5)"),
        plot: Optional[Path] = typer.Option(None, "--plot", help="write the scaling plot to this .png or .svg (no suffix: both)"),
        as_json: bool = typer.Option(False, "--json", help="print the result (the scan's 'efficiency' section) as JSON"),
        trust_new_hosts: bool = typer.Option(False, "--trust-new-hosts", help="Record unknown SSH host keys."),
        connect_timeout: float = typer.Option(10.0, "--connect-timeout", help="SSH connect timeout, seconds."),
    ) -> None:
        """Run a calibrated analysis-like job on worker nodes and report its CPU efficiency.

        The job reads from a data server on a storage host (or a path on a mounted filesystem)
        and spends a calibrated amount of CPU per MiB: CPU-bound on a healthy path. Hosts run one
        at a time. Exit 3 when a host's test failed.

        With --clients 1,5,15,30,60 the test job's clients run at each count over --nodes workers
        and read through each --protocol (xrootd: the site's XRootD server; xcache: its XCache;
        posix: a mounted path; tcp: our data server): runtime and data rate per client, the knee
        and one comparison table (and --plot).

        Examples:

          storadvise efficiency test --site ifca --clients 1,5,15 --json

          storadvise efficiency test --site xc --clients 1,2,4,8 --protocol xrootd,xcache --plot scaling.png
        """
        from advisor.efficiency.active import EfficiencyTestError
        from advisor.scan.pipeline import open_scan, run_scan
        from advisor.scan.options import ScanOptions
        from advisor.site.file import load_site

        try:
            counts = _parse_clients(clients) if clients else None
            try:
                protocols = parse_protocols(protocol) if protocol is not None else None
            except StoradviseError as e:
                raise UsageError(f"--protocol: {e}") from None
            for name, v in (("--knee-drop", knee_drop), ("--knee-efficiency", knee_efficiency)):
                if v is not None and not 0 < v < 1:
                    raise UsageError(f"{name} {v:g}: give a fraction between 0 and 1")
            if plot is not None and plot.suffix and plot.suffix.lower() not in (".png", ".svg"):
                raise UsageError(f"--plot {plot}: give a .png or .svg file (or no suffix for both)")
            check_output_paths({"--plot": plot})
            the_site = load_site(site)
            err = (lambda m: print(m, file=sys.stderr)) if not as_json else None
            # every key given (None: the site's setting, else the default): the test runs even
            # when the site has no efficiency section
            settings = dict(hosts=hosts, source=source, clients=counts, mb=mb, cpu_factor=cpu_factor,
                            readahead=readahead, slots=slots, progress=err, protocols=protocols, nodes=nodes,
                            knee_rate_drop=knee_drop, knee_min_efficiency=knee_efficiency)
            options = ScanOptions(trust_new_hosts=trust_new_hosts, connect_timeout=connect_timeout, mesh=False,
                                  efficiency=True, efficiency_settings=settings)
            run = run_scan(open_scan(options, the_site), options, stages=("measure",))
            result = run.factset.efficiency or {}
            if result.get("error") and result.get("failed") is True:
                raise EfficiencyTestError(result["error"])
            if plot is not None:
                from advisor.efficiency.scaling_plot import plot_scaling

                try:
                    result["plot"] = plot_scaling(result, plot)
                except OSError as e:
                    raise UsageError(f"--plot {plot}: {e.strerror or e}") from None
        except StoradviseError as e:
            typer.echo(f"{ERROR_PREFIX}{e}", err=True)
            raise typer.Exit(e.exit_code) from None
        if as_json:
            typer.echo(json.dumps(result, indent=2))
        else:
            render(result)
            for name in result["failed"]:
                typer.echo(f"{ERROR_PREFIX}{result['hosts'][name]['error']}", err=True)
        raise typer.Exit(3 if result["failed"] else 0)
