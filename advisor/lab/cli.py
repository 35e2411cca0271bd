"""`storadvise lab`: bring a miniature site up in network namespaces, take it down, show it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

from advisor.util.help_format import HELP_FORMAT
from advisor.lab import control, teardown

app = typer.Typer(
    **HELP_FORMAT,
    name="lab",
    help=(
        "A real mini-site in network namespaces (sshd, iperf3, shaped links, injected faults).\n\n"
        "Example: storadvise lab up --scenario ifca && storadvise scan --site ifca && storadvise lab down --name ifca"
    ),
    no_args_is_help=True,
)
err = Console(stderr=True)
out = Console()


@app.command("up")
def up(
    scenario: str = typer.Option("ifca", "--scenario", help="built-in scenario name (ifca, clean, lustre, xcache, cephfs, beegfs, hdfs, eos) or a scenario file"),
    name: Optional[str] = typer.Option(None, "--name", "-n", help="lab name (default: the scenario's name)"),
    recreate: bool = typer.Option(False, "--recreate", help="tear an existing lab of that name down first"),
    as_json: bool = typer.Option(False, "--json", help="print the result as JSON"),
) -> None:
    """Bring a lab up from a scenario and register its site file.

    Example: storadvise lab up --scenario ifca
    """
    with err.status("lab up") as st:
        res = control.lab_up(scenario, name, recreate, progress=lambda m: st.update(m))
    rec = res.record
    if as_json:
        out.print_json(json.dumps({
            "name": rec.name, "reused": res.reused, "scenario": rec.scenario, "subnet": rec.subnet,
            "site_file": rec.site_file, "inventory": str(rec.dir / "inventory.ini"), "state_dir": str(rec.dir),
            "root_ifaces": rec.root_ifaces, "timings": rec.timings,
            "hosts": {h: {"address": i["address"], "roles": i["roles"]} for h, i in rec.hosts.items()},
        }))
        return
    verb = "is up already (reused; --recreate to rebuild)" if res.reused else f"is up in {rec.timings.get('up', 0):.1f}s"
    out.print(f"lab [bold]{rec.name}[/] (scenario {rec.scenario}, {rec.subnet}) {verb}")
    t = Table("host", "address", "roles", "groups")
    for h, i in rec.hosts.items():
        t.add_row(h, i["address"], ",".join(i["roles"]), ",".join(i["groups"]))
    out.print(t)
    out.print(f"site file: {rec.site_file}  (storadvise scan --site {rec.name})")
    out.print(f"inventory: {rec.dir / 'inventory.ini'}")
    first = next(iter(rec.hosts.values()))["address"]
    out.print(f"ssh: ssh -i {rec.dir / 'client_key'} -o UserKnownHostsFile={rec.dir / 'known_hosts'} root@{first}")


@app.command("generate")
def generate(
    seed: int = typer.Option(..., "--seed", help="the same seed always gives the same scenario"),
    out_file: Optional[Path] = typer.Option(None, "--output", "-o", help="write the scenario to FILE (default: stdout)"),
    out_file_old: Optional[Path] = typer.Option(None, "--out", hidden=True, help="old name of --output, kept working"),
    name: Optional[str] = typer.Option(None, "--name", "-n", help="scenario name (default: genSEED)"),
    min_hosts: int = typer.Option(3, "--min-hosts", min=3, max=64, help="fewest hosts the scenario may have"),
    max_hosts: int = typer.Option(8, "--max-hosts", min=3, max=64, help="most hosts the scenario may have"),
    as_json: bool = typer.Option(False, "--json", help="print the scenario as JSON instead of YAML"),
) -> None:
    """Generate a random lab scenario (roles, hosts, faults from the lab's catalogue) with the
    findings it must produce under 'expect:'.

    Example: storadvise lab generate --seed 7 --output gen7.yml && storadvise lab up --scenario gen7.yml
    """
    from advisor.util.errors import StoradviseError, UsageError
    from advisor.lab.generate import generate_scenario, scenario_yaml
    from advisor.lab.scenario import Scenario

    from advisor.util.option_aliases import one_of_aliases

    out_file = one_of_aliases(out_file, out_file_old, "--output", "--out")
    from advisor.util.atomic_files import check_output_paths

    check_output_paths({"--output": out_file})
    if min_hosts > max_hosts:
        raise UsageError(f"--min-hosts {min_hosts} is above --max-hosts {max_hosts}")
    data = generate_scenario(seed, name=name, min_hosts=min_hosts, max_hosts=max_hosts)
    Scenario.model_validate(data)  # a generated scenario is always a valid one
    text = json.dumps(data, indent=2) + "\n" if as_json else scenario_yaml(data)
    if out_file is None:
        print(text, end="")
        return
    try:
        out_file.write_text(text)
    except OSError as exc:
        raise StoradviseError(f"{out_file}: cannot write: {exc.strerror or exc}") from None
    err.print(f"wrote {out_file}: {len(data['hosts'])} hosts; {data['description']}")


@app.command("down")
def down(
    name: Optional[str] = typer.Option(None, "--name", "-n", help="lab to remove"),
    all_labs: bool = typer.Option(False, "--all", help="remove every lab (and leftovers of killed runs)"),
    as_json: bool = typer.Option(False, "--json", help="print what was removed as JSON"),
) -> None:
    """Remove a lab: processes, namespaces, interfaces, files. Works after a crash or a killed up.

    Example: storadvise lab down --name ifca
    """
    if not name and not all_labs:
        labs = teardown.all_lab_names()
        if len(labs) == 1:
            name = labs[0]
        elif not labs:
            control.require_root()
            out.print("no lab is up")
            return
        else:
            from advisor.util.errors import UsageError

            raise UsageError(f"several labs are up ({', '.join(labs)}): give --name LAB or --all")
    with err.status("lab down") as st:
        res = control.lab_down(name, all_labs, progress=lambda m: st.update(m))
    if as_json:
        out.print_json(json.dumps(res))
        return
    for r in res:
        out.print(f"lab {r['name']} removed ({len(r['namespaces'])} namespaces, {len(r['pids'])} processes, "
                  f"{r['seconds']:.1f}s)")


@app.command("reboot", short_help="Reload a host's persisted settings (sysctl.d, firewall, ...) as a reboot would.")
def reboot(
    host: str = typer.Argument(..., help="the lab host to reboot"),
    name: Optional[str] = typer.Option(None, "--name", "-n", help="lab of the host (default: the one lab that has it)"),
    as_json: bool = typer.Option(False, "--json", help="print what was reloaded as JSON"),
) -> None:
    """Restart a host's namespace state from its persisted files, as a reboot would: net.* sysctls
    back to the kernel defaults then the host's sysctl.d files loaded, the firewall flushed then its
    persisted ruleset loaded, emulated storage daemons restarted (GPFS). sshd and iperf3 keep running.

    Example: storadvise lab reboot gpfs02 --name ifca && storadvise scan --site ifca
    """
    res = control.lab_reboot(name, host)
    if as_json:
        out.print_json(json.dumps(res))
        return
    out.print(f"host {res['host']} of lab {res['lab']} rebooted: {res['sysctls_reset']} sysctl(s) back to defaults, "
              f"{len(res['sysctls_loaded'])} net.* value(s) from its sysctl.d, firewall from "
              f"{', '.join(res['firewall_files']) or 'no persisted ruleset (empty)'}")
    for k in res["sysctls_refused"]:
        out.print(f"  {k}: could not be set in the namespace")


@app.command("status")
def status(as_json: bool = typer.Option(False, "--json", help="print as JSON")) -> None:
    """List labs with their hosts and health (sshd alive).

    Example: storadvise lab status --json
    """
    control.require_root()
    labs = control.lab_status()
    if as_json:
        out.print_json(json.dumps(labs))
        return
    if not labs:
        out.print("no lab is up")
        return
    for lab in labs:
        health = "[green]healthy[/]" if lab["healthy"] else "[red]not healthy[/]"
        out.print(f"lab [bold]{lab['name']}[/] scenario {lab.get('scenario', '?')} {lab.get('subnet', '')} "
                  f"phase {lab['phase']} {health}")
        if lab["hosts"]:
            t = Table("host", "address", "roles", "sshd", "iperf3")
            for h in lab["hosts"]:
                t.add_row(h["name"], h["address"], ",".join(h["roles"]),
                          f"{h['sshd_pid']} {'up' if h['sshd_alive'] else 'DOWN'}",
                          f"{h['iperf3_pid']} {'up' if h['iperf3_alive'] else 'DOWN'}")
            out.print(t)
        for f in lab.get("delay_forwarders") or []:
            out.print(f"  delay forwarder on switch {f['switch']}: pid {f['pid']} {'up' if f['alive'] else 'DOWN'}")
