"""``storadvise sudoers`` and ``storadvise probe helper``: what a site installs so that the scan's
root probes run as fixed commands, allowed by a narrow sudoers rule (advisor.collect.probe_helper)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer

from advisor.cli import probe as probe_cli
from advisor.util.errors import UsageError


def _site(site: Optional[str], inventory: Optional[Path], role_map: list[str]):
    from advisor.site.file import required_site

    return required_site(site, inventory, role_map)


def _write(text: str, output: Optional[Path], mode: int) -> None:
    from advisor.util.atomic_files import check_output_paths

    check_output_paths({"--output": output})
    if output is None or str(output) == "-":
        sys.stdout.write(text)
        return
    from advisor.report.outputs import write_text

    write_text(output, text, mode)
    print(f"wrote {output}", file=sys.stderr)


def _host(s, name: str):
    for h in s.hosts:
        if h.name == name:
            return h
    raise UsageError(f"--host {name!r}: no such host in site {s.name!r} ({', '.join(h.name for h in s.hosts[:8])}"
                     + (", ..." if len(s.hosts) > 8 else "") + ")")


def helper(
    host: str = typer.Option(..., "--host", help="The host to generate the helper for (its variables fix the "
                                                 "paths some probes read)."),
    site: Optional[str] = typer.Option(None, "--site", "-s", help="Site file (name or path)."),
    inventory: Optional[Path] = typer.Option(None, "--inventory", "-i", help="An Ansible inventory instead of a site file."),
    role_map: list[str] = typer.Option([], "--role-map", help="GROUP=ROLE for --inventory (repeatable)."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write the helper to FILE (mode 0755); "
                                                                      "default: stdout."),
) -> None:
    """Print the probe helper for one host: a POSIX sh script holding each root probe's fixed script.

    Install it as root:root 0755 at the host's probe_helper path (default /usr/local/sbin/storadvise-probe),
    set probe_helper for the host, and allow it with 'storadvise sudoers'. See docs/privileges.md."""
    from advisor.collect.collector import probe_context
    from advisor.collect.probe_helper import helper_text
    from advisor.collect.probe_plan import root_probes

    s = _site(site, inventory, role_map)
    h = _host(s, host)
    probes = root_probes(s, h)  # what the scan runs as root there (advisor.collect.probe_plan), nothing else
    if not probes:
        raise UsageError(f"no probe the scan runs on {h.name} needs root: the host needs no helper")
    try:
        text = helper_text(probe_context(s, h, False, 5.0), probes)
    except ValueError as exc:
        raise UsageError(f"{s.source or s.name}: {exc}") from None
    _write(text, output, 0o755)


def sudoers(
    site: Optional[str] = typer.Option(None, "--site", "-s", help="Site file (name or path)."),
    inventory: Optional[Path] = typer.Option(None, "--inventory", "-i", help="An Ansible inventory instead of a site file."),
    role_map: list[str] = typer.Option([], "--role-map", help="GROUP=ROLE for --inventory (repeatable)."),
    user: Optional[str] = typer.Option(None, "--user", "-u", help="The user the scan logs in as (default: the "
                                                                  "site's, when all its hosts share one)."),
    hosts: Optional[str] = typer.Option(None, "--hosts", help="Only these hosts (a host pattern: names, globs, "
                                                               "groups, roles, comma lists, !exclusion); default all."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write the snippet to FILE (mode 0440); "
                                                                      "default: stdout."),
) -> None:
    """Print a sudoers snippet that allows the scan's root probes and nothing else.

    It names the probe helper with each root probe as its one argument; hosts need the helper installed
    ('storadvise probe helper') and probe_helper set. Check it with 'visudo -cf FILE' before installing it
    in /etc/sudoers.d. See docs/privileges.md."""
    from advisor.collect.probe_helper import sudoers_text
    from advisor.site.probe_helper_path import DEFAULT_HELPER_PATH, helper_path
    from advisor.collect.probe_plan import site_root_probes
    from advisor.scan.pipeline import select_hosts

    s = _site(site, inventory, role_map)
    hosts = select_hosts(s, hosts)
    paths = {helper_path({**s.vars, **h.vars}) or DEFAULT_HELPER_PATH for h in hosts} or {
        helper_path(s.vars) or DEFAULT_HELPER_PATH}
    if len(paths) > 1:
        raise UsageError(f"the site's hosts name {len(paths)} probe helper paths ({', '.join(sorted(paths))}): "
                         "give them one probe_helper path")
    given = "--user"
    if user is None:
        users = {h.user for h in hosts if h.user}
        if len(users) != 1 or any(not h.user for h in hosts):
            raise UsageError("give --user: the site's hosts do not share one login user")
        user = users.pop()
        given = f"{s.source or s.name}: the hosts' user"
    if user == "root":
        raise UsageError("the scan logs in as root: it needs no sudo (give --user for the account that will scan)")
    probes = site_root_probes(s, hosts)  # the root probes the scan runs on these hosts, nothing else
    if not probes:
        raise UsageError("no probe the scan runs on these hosts needs root: they need no sudoers rule")
    try:
        text = sudoers_text(user, paths.pop(), probes)
    except ValueError as exc:
        raise UsageError(f"{given}: {exc}") from None
    _write(text, output, 0o440)


def register(app: typer.Typer) -> None:
    """Add ``sudoers`` to the root app and ``helper`` to the ``probe`` group (advisor.cli.probe)."""
    app.command("sudoers", epilog="Example: storadvise sudoers --site ifca --user storadvise -o storadvise.sudoers")(sudoers)
    probe_cli.app.command("helper", epilog="Example: storadvise probe helper --site ifca --host gpfs01 -o storadvise-probe")(helper)
