"""The ``storadvise rules`` commands: list the rules a profile selects, check rule packs, profiles and waivers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

from advisor.util.errors import UsageError
from advisor.util.help_format import HELP_FORMAT
from advisor.util.option_aliases import ALIAS_HELP, one_of_aliases

app = typer.Typer(**HELP_FORMAT, help="Rule packs, profiles and waivers.\n\nExample: storadvise rules lint --site ifca",
                  no_args_is_help=True)
out = Console(emoji=False)  # host text such as ":skull:" is shown as written
err = Console(stderr=True, emoji=False)


RULES_DIR_HELP = "A site-local rules directory (data rule packs, profiles/) loaded with the shipped packs; repeatable."


@app.command("list", epilog="Examples:\n\n  storadvise rules list --profile pre-deployment\n\n  storadvise rules list --wide")
def rules_list(
    profile: list[str] = typer.Option([], "--profile", "-p", help="Only rules these profiles select."),
    wide: bool = typer.Option(False, "--wide", help="Use 200 columns whatever the terminal's width (no wrapping)."),
    rules_dirs: list[Path] = typer.Option([], "--rules", help=RULES_DIR_HELP),
    json_out: bool = typer.Option(False, "--json", help="Print the rules as JSON."),
) -> None:
    """List rules with id, severity, roles and title (rule ids are never cut; other columns wrap).

    A profile for some storage systems (gpfs-site: gpfs and san) lists the rules a site with those
    storage_systems loads: their packs and the generic ones."""
    from advisor.rules.specs import load_catalog, profile_storage_systems, resolve_profiles, site_rule_dirs

    systems = profile_storage_systems(profile, site_dirs=site_rule_dirs(rules_dirs)) if profile else []
    catalog = load_catalog(site_dirs=rules_dirs, storage_systems=systems)
    resolved = resolve_profiles(profile or ["generic"], catalog)
    rows = [
        {"id": r.id, "severity": resolved.severity.get(r.id, r.severity).value, "roles": r.roles, "kind": r.kind,
         "probe": r.probe, "title": r.title, "pack": r.pack}
        for rid, r in sorted(catalog.rules.items()) if rid in resolved.rule_ids
    ]
    if json_out:
        print(json.dumps(rows, indent=2))
        return
    from rich.table import Table

    from rich.markup import escape

    # the rule id is what people copy into waivers and --profile files: never cut, the other columns wrap
    t = Table(header_style="bold")
    t.add_column("rule", no_wrap=True, min_width=max((len(r["id"]) for r in rows), default=4))
    t.add_column("severity", no_wrap=True)
    t.add_column("roles", overflow="fold")
    t.add_column("title", overflow="fold", ratio=1)
    for r in rows:
        t.add_row(escape(r["id"]), r["severity"], ",".join(r["roles"]) or "all", escape(r["title"]))
    (Console(width=max(out.width, 200)) if wide else out).print(t)


@app.command("lint", epilog="Example: storadvise rules lint --site ifca")
def rules_lint(
    site: Optional[str] = typer.Option(None, "--site", "-s", help="Also check this site's profiles, variables, waivers and rules_dirs."),
    rules_dirs: list[Path] = typer.Option([], "--rules", help=RULES_DIR_HELP),
    rules_dir: Optional[Path] = typer.Option(None, "--instead-of-shipped", help="Check the rule packs (*.yml) and "
                                             "profiles (profiles/*.yml) in DIR instead of the shipped ones (--rules DIR "
                                             "adds a directory to them)."),
    rules_dir_old: Optional[Path] = typer.Option(None, "--rules-dir", hidden=True,
                                                 help=ALIAS_HELP.format(new="--instead-of-shipped")),
    json_out: bool = typer.Option(False, "--json", help="Print {problems, warnings} as JSON."),
) -> None:
    """Check rule packs (the shipped ones, --rules DIR and the site's rules_dirs), profiles and (with
    --site) waivers; exit 1 on any problem."""
    from rich.markup import escape

    from advisor.rules.lint import lint

    rules_dir = one_of_aliases(rules_dir, rules_dir_old, "--instead-of-shipped", "--rules-dir")
    if rules_dir is not None and not rules_dir.is_dir():
        raise UsageError(f"--instead-of-shipped {rules_dir}: not a directory")
    problems, warnings = lint(site, directory=rules_dir, site_dirs=rules_dirs)
    if json_out:
        print(json.dumps({"problems": problems, "warnings": warnings}, indent=2))
    else:
        for w in warnings:  # one line each, never wrapped (a path names where)
            err.print(f"[yellow]warning:[/yellow] {escape(w)}", soft_wrap=True)
        for p in problems:
            err.print(f"[red]problem:[/red] {escape(p)}", soft_wrap=True)
        if not problems:
            out.print("rules, profiles" + (" and waivers" if site else "") + " are valid")
    raise typer.Exit(1 if problems else 0)
