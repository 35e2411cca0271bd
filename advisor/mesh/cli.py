"""``storadvise mesh``: plan and run the pairwise iperf3 throughput mesh of a site."""

from __future__ import annotations

import json
from typing import Optional

import typer
from rich.console import Console

from advisor.errors import StoradviseError, UsageError

app = typer.Typer(
    help="Pairwise iperf3 throughput between host groups, in rounds.\n\n"
    "Example: storadvise mesh plan --site ifca ; storadvise mesh run --site ifca",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

out = Console()
err = Console(stderr=True)


def _site(name: str):
    from advisor.site_file import load_site

    site = load_site(name)
    if site.mesh is None or not site.mesh.pairs:
        raise StoradviseError(f"{site.source or site.name}: the site file has no 'mesh.pairs': nothing to measure")
    return site


@app.command("plan")
def plan(
    site: str = typer.Option(..., "--site", "-s", help="Site name or site file path."),
    json_out: bool = typer.Option(False, "--json", help="Print the rounds as JSON."),
) -> None:
    """Print the rounds the mesh would run (no host is contacted).

    Example: storadvise mesh plan --site ifca
    """
    from advisor.mesh.render import plan_table
    from advisor.mesh.schedule import expand_pairs, mesh_schedule, schedule_method

    the_site = _site(site)
    reqs = expand_pairs(the_site)
    rounds = mesh_schedule(reqs)
    methods = schedule_method(frozenset((r.src, r.dst)) for r in reqs)
    spec = the_site.mesh
    from advisor.mesh.iperf import whole_seconds

    per_round = whole_seconds(spec.duration, 1) + whole_seconds(spec.omit, 0)
    if json_out:
        print(json.dumps({
            "site": the_site.name,
            "rounds": len(rounds),
            "schedule": [[[s, d] for s, d in rnd] for rnd in rounds],
            "paths": [{"src": r.src, "dst": r.dst, "expected_bps": r.expected_bps,
                       "expected_source": r.expected_source} for r in reqs],
            "methods": methods,
            "test_seconds": per_round,
        }, indent=2))
        return
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
) -> None:
    """Run the mesh and print the src x dst grid. Exit 3 when a test failed.

    Example: storadvise mesh run --site ifca --json > mesh.json
    """
    from advisor.mesh.render import render_grid
    from advisor.mesh.results import failed_paths
    from advisor.mesh.runner import run_mesh
    from advisor.transport.factory import SshOptions, transport_for

    if parallel is not None and parallel < 1:
        raise UsageError(f"--parallel must be at least 1, got {parallel}")
    if duration is not None and duration <= 0:
        raise UsageError(f"--duration must be positive, got {duration}")
    the_site = _site(site)
    options = SshOptions(trust_new_hosts=trust_new_hosts, connect_timeout=connect_timeout)
    overrides = {"duration": duration} if duration is not None else {}
    mesh = run_mesh(the_site, lambda h: transport_for(h, the_site, options), bidir=False if no_bidir else None,
                    parallel=parallel, quiet=json_out, console=err, **overrides)
    min_ratio = float(the_site.vars.get("mesh_min_ratio", 0.8))
    if json_out:
        print(json.dumps(mesh, indent=2))
    else:
        render_grid(mesh, out, min_ratio)
    raise typer.Exit(3 if failed_paths(mesh) else 0)
