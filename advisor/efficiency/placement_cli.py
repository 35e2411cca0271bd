"""``storadvise efficiency what-if``: the placement what-if from a scan report's mesh RTTs."""

from __future__ import annotations

import json
from typing import Optional

import typer

from advisor.errors import StoradviseError, UsageError


def register_placement(app: typer.Typer) -> None:
    @app.command("what-if")
    def what_if_cmd(
        scan: str = typer.Option(..., "--scan", help="A scan report (storadvise scan --json) with a mesh."),
        source: list[str] = typer.Option([], "--source", help="Only these data sources (host names; repeatable)."),
        profile: Optional[str] = typer.Option(None, "--profile", help="A CMSSW framework job report: its remote reads/s."),
        ops_per_second: Optional[float] = typer.Option(None, "--ops-per-second", min=0.0, help="Synchronous reads per wall second."),
        threshold: float = typer.Option(0.05, "--threshold", min=0.0, max=1.0, help="Loss at which a cache pays off."),
        as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
    ) -> None:
        """Efficiency loss per data source from the scan's measured RTTs; where a cache pays off.

        The job's I/O profile: --profile or --ops-per-second, else the scan's active efficiency
        test, else PIC/CIEMAT's reference MiniAOD job.

        Example: storadvise efficiency what-if --scan scan.json --json
        """
        from advisor.efficiency import latency
        from advisor.efficiency.placement import PlacementInputError, profile_from_active, what_if

        try:
            if profile and ops_per_second is not None:
                raise UsageError("give one of --profile, --ops-per-second")
            try:
                with open(scan, encoding="utf-8") as f:
                    report = json.load(f)
            except OSError as e:
                raise StoradviseError(f"{scan}: {e.strerror or 'cannot be read'}") from None
            except (json.JSONDecodeError, UnicodeDecodeError) as e:
                raise StoradviseError(f"{scan}: not a scan report (JSON): {e}") from None
            if not isinstance(report, dict):
                raise StoradviseError(f"{scan}: not a scan report (a JSON object expected)")
            if profile:
                from advisor.efficiency import fjr

                try:
                    with open(profile, "rb") as f:
                        prof = latency.profile_from_fjr(fjr.parse_fjr(f, profile), profile)
                except OSError as e:
                    raise StoradviseError(f"{profile}: {e.strerror or 'cannot be read'}") from None
                except ValueError as e:
                    raise StoradviseError(f"{profile}: {e}") from None
            elif ops_per_second is not None:
                prof = latency.IOProfile(ops_per_second, "ops_per_second", {})
            else:
                prof = profile_from_active(report) or latency.reference_profile()
            eff = (report.get("efficiency") or {}).get("mean")
            result = what_if(report, prof, threshold, source or None,
                             eff if isinstance(eff, (int, float)) else None)
        except PlacementInputError as e:
            typer.echo(f"error: {scan}: {e}", err=True)
            raise typer.Exit(1) from None
        except StoradviseError as e:
            typer.echo(f"error: {e}", err=True)
            raise typer.Exit(e.exit_code) from None
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
