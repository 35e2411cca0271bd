"""The ``storadvise probe`` commands: list the probes, parse a saved output."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer
from rich.console import Console

from advisor.util.errors import StoradviseError
from advisor.util.help_format import HELP_FORMAT

app = typer.Typer(**HELP_FORMAT, help="Inspect probes: list them, parse a saved output.\n\nExample: storadvise probe list",
                  no_args_is_help=True)
out = Console(emoji=False)  # host text such as ":skull:" is shown as written


@app.command("list", epilog="Example: storadvise probe list --json")
def probe_list(json_out: bool = typer.Option(False, "--json", help="Print the probes as JSON.")) -> None:
    """List the probes, the roles they apply to and whether they need root."""
    from probes import all_probes

    from probes.pasted import PASTED

    rows = [{"name": p.name, "title": p.title, "roles": sorted(p.roles), "needs_root": p.needs_root,
             "pasted": PASTED[p.name][0] if p.name in PASTED else None}
            for p in all_probes().values()]
    if json_out:
        print(json.dumps(rows, indent=2))
        return
    from rich.table import Table

    t = Table(header_style="bold")
    for c in ("probe", "what", "roles", "root"):
        t.add_column(c)
    for r in rows:
        t.add_row(r["name"], r["title"], ",".join(r["roles"]) or "all", "yes" if r["needs_root"] else "")
    out.print(t)


@app.command("parse", epilog="Examples:\n\n  storadvise probe parse gpfs.mmlsconfig mmlsconfig.txt\n\n"
             "  sysctl -a | storadvise probe parse network.sysctl -\n\n"
             "  storadvise probe parse firewall outputs/gpfs01/firewall.txt   # from collect --export")
def probe_parse(
    probe: str = typer.Argument(..., help="Probe name (see 'storadvise probe list')."),
    file: Path = typer.Argument(..., help="The probe's output (collect --export writes one per host and probe), "
                                          "or its command's plain output (sysctl -a, ip -s link, iptables-save, "
                                          "dmesg, smartctl --json, mmlsconfig, ...); - for stdin."),
) -> None:
    """Print the facts parsed from a saved output, as JSON.

    Takes the probe's own output, or the plain output of the command behind it where the probe's parser
    can work from it alone (probe list --json: "pasted")."""
    from probes import get_probe
    from probes.pasted import PASTED
    from probes.probe import ProbeParseError, not_applicable_reason

    p = get_probe(probe)
    try:
        text = sys.stdin.read() if str(file) == "-" else file.read_text(errors="replace")
    except OSError as exc:
        raise StoradviseError(f"{file}: cannot read: {exc.strerror or exc}") from None
    reason = not_applicable_reason(text)
    if reason:
        print(json.dumps({"probe": p.name, "status": "not_applicable", "message": reason}, indent=2))
        return
    try:
        facts = p.parse(text)
    except ProbeParseError as exc:
        commands, convert = PASTED.get(p.name, (None, None))
        framed = convert(text) if convert else None
        if framed is None:
            also = (f", nor the output of {commands}" if commands else
                    "; it reads several files at once: save its own output with 'storadvise collect --export DIR'")
            raise StoradviseError(f"{file}: {p.name}: not the probe's own output ({exc}){also}") from None
        try:
            facts = p.parse(framed)
        except ProbeParseError as exc2:
            raise StoradviseError(f"{file}: {p.name}: read as the output of {commands}: {exc2}") from None
    print(json.dumps(facts.model_dump(mode="json"), indent=2))
