"""``storadvise mesh``: plan and run the pairwise iperf3 throughput mesh of a site."""

from __future__ import annotations

import json
from typing import Optional

import typer
from rich.console import Console

from advisor.util.errors import StoradviseError, UsageError
from advisor.util.help_format import HELP_FORMAT
from advisor.util.option_aliases import ALIAS_HELP, one_of_aliases

app = typer.Typer(
    **HELP_FORMAT,
    help="Pairwise iperf3 throughput between host groups, in rounds.\n\n"
    "Example: storadvise mesh plan --site ifca ; storadvise mesh run --site ifca",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

out = Console()
err = Console(stderr=True)


def _site(name: str):
    from advisor.site.file import load_site

    site = load_site(name)
    if site.mesh is None or not site.mesh.pairs:
        raise StoradviseError(f"{site.source or site.name}: the site file has no 'mesh.pairs': nothing to measure")
    return site


def _strategy_options():
    return {
        "strategy": typer.Option("full", "--strategy", help="full | bipartite (storage<->worker only) | sample (--partners per worker, rotating with --run) | representative (one host per --group-by value, rotating with --run)."),
        "k": typer.Option(2, "--partners", help="Partners per worker for --strategy sample."),
        "k_old": typer.Option(None, "--k", hidden=True, help=ALIAS_HELP.format(new="--partners")),
        "run_number": typer.Option(0, "--run", help="Run number: which rotation of partners/representatives (0, 1, ...)."),
        "group_by": typer.Option("rack", "--group-by", help="Host variable naming a host's rack or switch, for --strategy representative."),
    }


_SO = _strategy_options()


def _selected(the_site, strategy: str, k: int, run_number: int, group_by: str):
    """(requested paths, the strategy's paths, runs to cover them all)."""
    from advisor.mesh.schedule import expand_pairs
    from advisor.mesh.strategies import runs_to_cover, select_paths

    reqs = expand_pairs(the_site)
    chosen = select_paths(the_site, reqs, strategy, k=k, run=run_number, group_by=group_by)
    return reqs, chosen, runs_to_cover(the_site, reqs, strategy, k, group_by)


def _estimate(the_site, rounds, parallel: Optional[int], duration: Optional[float] = None) -> tuple[float, float]:
    from advisor.mesh.iperf import whole_seconds
    from advisor.mesh.strategies import estimated_wall_seconds

    spec = the_site.mesh
    per_test = whole_seconds(duration or spec.duration, 1) + whole_seconds(spec.omit, 0)
    return per_test, estimated_wall_seconds(rounds, per_test, parallel or spec.parallel)


def _summary_line(reqs, chosen, rounds, per_test, wall, strategy, run_number, cover) -> str:
    rot = f", run {run_number} of {cover} to cover them all" if cover > 1 else ""
    return (f"strategy {strategy}: {len(chosen)} of {len(reqs)} requested paths{rot}; {len(rounds)} rounds of "
            f"~{per_test:g} s per test; estimated wall time ~{_duration(wall)}")


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


@app.command("plan")
def plan(
    site: str = typer.Option(..., "--site", "-s", help="Site name or site file path."),
    json_out: bool = typer.Option(False, "--json", help="Print the rounds as JSON."),
    strategy: str = _SO["strategy"],
    k: int = _SO["k"],
    k_old: Optional[int] = _SO["k_old"],
    run_number: int = _SO["run_number"],
    group_by: str = _SO["group_by"],
    parallel: Optional[int] = typer.Option(None, "--parallel", help="At most this many tests at once, for the estimate (default: the site's, else a whole round)."),
) -> None:
    """Print the rounds the mesh would run and the estimated wall time (no host is contacted).

    Example: storadvise mesh plan --site t1 --strategy sample --partners 2 --run 3
    """
    k = one_of_aliases(k, k_old, "--partners", "--k", default=2)
    from advisor.mesh.render import plan_table
    from advisor.mesh.schedule import mesh_plan

    the_site = _site(site)
    reqs, chosen, cover = _selected(the_site, strategy, k, run_number, group_by)
    rounds, methods = mesh_plan(chosen)
    per_round, wall = _estimate(the_site, rounds, parallel)
    if json_out:
        print(json.dumps({
            "site": the_site.name,
            "strategy": strategy,
            "run": run_number,
            "runs_to_cover": cover,
            "requested_paths": len(reqs),
            "rounds": len(rounds),
            "estimated_wall_s": round(wall, 1),
            "schedule": [[[s, d] for s, d in rnd] for rnd in rounds],
            "paths": [{"src": r.src, "dst": r.dst, "expected_bps": r.expected_bps,
                       "expected_source": r.expected_source} for r in chosen],
            "methods": methods,
            "test_seconds": per_round,
        }, indent=2))
        return
    out.print(_summary_line(reqs, chosen, rounds, per_round, wall, strategy, run_number, cover), highlight=False)
    out.print(plan_table(rounds, methods,
                         f"~{per_round:g} s per test; pairs measured both ways use --bidir where iperf3 >= 3.7"))


@app.command("run")
def run(
    site: str = typer.Option(..., "--site", "-s", help="Site name or site file path."),
    json_out: bool = typer.Option(False, "--json", help="Print the result dict as JSON."),
    parallel: Optional[int] = typer.Option(None, "--parallel", help="At most this many tests at once (default: a whole round)."),
    no_bidir: bool = typer.Option(False, "--no-bidir", help="Measure the two directions one after the other, never with --bidir."),
    duration: Optional[float] = typer.Option(None, "--duration", help="Seconds per test (default: the site file's mesh.duration)."),
    trust_new_hosts: bool = typer.Option(False, "--trust-new-hosts", help="Record unknown SSH host keys."),
    connect_timeout: float = typer.Option(10.0, "--connect-timeout", help="SSH connect timeout, seconds."),
    strategy: str = _SO["strategy"],
    k: int = _SO["k"],
    k_old: Optional[int] = _SO["k_old"],
    run_number: int = _SO["run_number"],
    group_by: str = _SO["group_by"],
) -> None:
    """Run the mesh and print the src x dst grid. Exit 3 when a test failed.

    Example: storadvise mesh run --site ifca --json > mesh.json
    """
    k = one_of_aliases(k, k_old, "--partners", "--k", default=2)
    from advisor.mesh.render import render_grid
    from advisor.mesh.results import failed_paths
    from advisor.mesh.runner import run_mesh
    from advisor.transport.factory import SshOptions, transport_for

    if parallel is not None and parallel < 1:
        raise UsageError(f"--parallel must be at least 1, got {parallel}")
    if duration is not None and duration <= 0:
        raise UsageError(f"--duration must be positive, got {duration}")
    from advisor.mesh.schedule import mesh_schedule

    the_site = _site(site)
    reqs, chosen, cover = _selected(the_site, strategy, k, run_number, group_by)
    rounds = mesh_schedule(chosen)
    per_test, wall = _estimate(the_site, rounds, parallel, duration)
    err.print(_summary_line(reqs, chosen, rounds, per_test, wall, strategy, run_number, cover), highlight=False)
    options = SshOptions(trust_new_hosts=trust_new_hosts, connect_timeout=connect_timeout)
    overrides = {"duration": duration} if duration is not None else {}
    mesh = run_mesh(the_site, lambda h: transport_for(h, the_site, options), bidir=False if no_bidir else None,
                    parallel=parallel, quiet=json_out, console=err, requests=chosen, **overrides)
    min_ratio = float(the_site.vars.get("mesh_min_ratio", 0.8))
    if json_out:
        print(json.dumps(mesh, indent=2))
    else:
        render_grid(mesh, out, min_ratio)
    raise typer.Exit(3 if failed_paths(mesh) else 0)
