"""``storadvise efficiency test``: the active test job on worker nodes (registered by register_active)."""

from __future__ import annotations

import json
import sys
from typing import Any, Optional

import typer

from advisor.errors import StoradviseError, UsageError


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
    if len(sc) > 1:
        t = Table(title=f"runtime per client vs concurrent clients on {sc[0].get('host')}")
        for c in ("clients", "MiB each", "s/client", "eff.", "total Mb/s", "read wait", "CPU share"):
            t.add_column(c, justify="right", no_wrap=True)
        for p in sc:
            t.add_row(str(p["clients"]), _num(p.get("mb_per_client"), "{:g}"), _num(p.get("runtime_per_client_s")),
                      _pct(p.get("efficiency")), _num(p.get("aggregate_read_mbps"), "{:.0f}"),
                      _pct(p.get("read_wait_share")), _pct(p.get("cpu_share_computing")))
        con.print(t)


def register_active(app: typer.Typer) -> None:
    @app.command("test")
    def test(
        site: str = typer.Option(..., "--site", "-s", help="Site name or site file path."),
        hosts: Optional[str] = typer.Option(None, "--hosts", help="hosts, groups or roles, comma-separated (default: worker)"),
        clients: Optional[str] = typer.Option(None, "--clients", help="concurrent clients per point, e.g. 1,5,15"),
        source: Optional[str] = typer.Option(None, "--source", help="storage HOST (a data server there) or path:PATH"),
        mb: Optional[float] = typer.Option(None, "--mb", min=1.0, help="MiB read per host test (default 64)"),
        cpu_factor: Optional[float] = typer.Option(None, "--cpu-factor", min=0.1, help="compute time / healthy read time per MiB (default 1.5)"),
        readahead: Optional[int] = typer.Option(None, "--readahead", min=0, max=64, help="blocks requested ahead (0: synchronous; default 1)"),
        slots: Optional[int] = typer.Option(None, "--slots", min=1, max=64, help="concurrent jobs per worker, together calibrated to the healthy rate (default 1)"),
        as_json: bool = typer.Option(False, "--json", help="print the result (the scan's 'efficiency' section) as JSON"),
        trust_new_hosts: bool = typer.Option(False, "--trust-new-hosts", help="Record unknown SSH host keys."),
        connect_timeout: float = typer.Option(10.0, "--connect-timeout", help="SSH connect timeout, seconds."),
    ) -> None:
        """Run a calibrated analysis-like job on worker nodes and report its CPU efficiency.

        The job reads from a data server on a storage host (or a path on a mounted filesystem)
        and spends a calibrated amount of CPU per MiB: CPU-bound on a healthy path. Hosts run one
        at a time. Exit 3 when a host's test failed.

        Example: storadvise efficiency test --site ifca --clients 1,5,15 --json
        """
        from advisor.efficiency.active import EfficiencyTestError
        from advisor.scan import open_scan, run_scan
        from advisor.scan_options import ScanOptions
        from advisor.site_file import load_site

        try:
            counts = _parse_clients(clients) if clients else None
            the_site = load_site(site)
            err = (lambda m: print(m, file=sys.stderr)) if not as_json else None
            # every key given (None: the site's setting, else the default): the test runs even
            # when the site has no efficiency section
            settings = dict(hosts=hosts, source=source, clients=counts, mb=mb, cpu_factor=cpu_factor,
                            readahead=readahead, slots=slots, progress=err)
            options = ScanOptions(trust_new_hosts=trust_new_hosts, connect_timeout=connect_timeout, mesh=False,
                                  efficiency=True, efficiency_settings=settings)
            run = run_scan(open_scan(options, the_site), options, stages=("measure",))
            result = run.factset.efficiency or {}
            if result.get("error") and result.get("failed") is True:
                raise EfficiencyTestError(result["error"])
        except StoradviseError as e:
            typer.echo(f"error: {e}", err=True)
            raise typer.Exit(e.exit_code) from None
        if as_json:
            typer.echo(json.dumps(result, indent=2))
        else:
            render(result)
            for name in result["failed"]:
                typer.echo(f"error: {result['hosts'][name]['error']}", err=True)
        raise typer.Exit(3 if result["failed"] else 0)
