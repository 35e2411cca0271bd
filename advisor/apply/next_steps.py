"""The "next step" lines commands print, each a command line that runs as printed.

``scan`` ends with the ``plan`` that writes its fix; ``plan`` with the ``ansible-playbook`` runs and
the ``verify`` that checks them; ``collect`` with the ``scan --from`` that analyses what it saved.
Each is built from the options the command itself was given (the site, the inventory and its role
map, the scan options that were changed: ``--role``, ``--hosts``, ``--profile``, ``--from``, ...), so
that it means the same site and the same hosts, and quoted for a POSIX shell.
tests/core/test_next_steps.py runs every such line as printed.
"""

from __future__ import annotations

import dataclasses
import shlex
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from advisor.scan.options import ScanOptions


def _program(name: str) -> str:
    """``name`` as this machine runs it: by name when it is on PATH, else the one installed beside this
    storadvise's Python (a virtualenv's bin/ that is not on PATH)."""
    if shutil.which(name):
        return name
    beside = Path(sys.executable).parent / name
    return shlex.quote(str(beside)) if beside.exists() else name


def command_line(*argv: Any) -> str:
    """``storadvise ARG...`` quoted for a POSIX shell."""
    return " ".join([_program("storadvise"), *(shlex.quote(str(a)) for a in argv)])


def site_args(site: str | None, inventory: Path | None = None, role_map: Sequence[str] = ()) -> list[str]:
    """The arguments that name the same site: ``--site S``, or ``--inventory F --role-map G=R ...``,
    or none (the local host)."""
    if inventory is not None:
        return ["--inventory", str(inventory), *[a for m in role_map for a in ("--role-map", m)]]
    return ["--site", site] if site is not None else []


def scan_option_args(options: ScanOptions, exclude: Sequence[str] = ()) -> list[str]:
    """The flags that give a scan the same ``options`` (only those changed from their defaults)."""
    args: list[str] = []
    for f in dataclasses.fields(options):
        cli = f.metadata.get("cli")
        if not cli or f.name in exclude:
            continue
        value = getattr(options, f.name)
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        if value == default:
            continue
        decl = cli["decls"][0]
        if "/" in decl:  # --mesh/--no-mesh
            on, off = decl.split("/")
            args.append(on if value else off)
        elif isinstance(value, tuple):
            args += [a for v in value for a in (decl, str(v))]
        elif isinstance(value, bool):
            args.append(decl)
        else:
            args += [decl, str(value)]
    return args


def free_plan_dir(site: str, cwd: Path | None = None) -> str:
    """A directory name for a plan of ``site`` that ``plan --out-dir`` will take here: new, empty, or
    an earlier plan (which it replaces)."""
    from advisor.apply.project import PROJECT_MARK

    here = cwd or Path.cwd()
    base = f"{site}-plan"
    for n in range(1, 100):
        name = base if n == 1 else f"{base}-{n}"
        p = here / name
        if not p.exists() or (p.is_dir() and (not any(p.iterdir()) or (p / PROJECT_MARK).exists())):
            return name
    return f"{base}-new"


def plan_after_scan(site: str | None, inventory: Path | None, role_map: Sequence[str], options: ScanOptions,
                    site_name: str, scan_file: Path | None, min_severity: str = "low") -> str:
    """The ``plan`` that writes the fix of the scan just made: of its saved report when it was
    written (``--output``), else a new scan with the same options. ``min_severity``: the plan's
    ``--min-severity`` (given only when it is not plan's default, ``low``)."""
    where = site_args(site, inventory, role_map)
    scanned = ["--scan", scan_file] if scan_file is not None else scan_option_args(options)
    severity = ["--min-severity", min_severity] if min_severity != "low" else []
    return command_line("plan", *where, *scanned, *severity, "--out-dir", free_plan_dir(site_name))


def verify_after_plan(site: str | None, inventory: Path | None, role_map: Sequence[str], before: Path,
                      plan_dir: Path, options: ScanOptions | None = None) -> str:
    """The ``verify`` that checks an applied plan against the scan it was made from."""
    extra = scan_option_args(options, exclude=("from_capture", "profiles")) if options else []
    return command_line("verify", *site_args(site, inventory, role_map), *extra, "--before", before,
                        "--plan", plan_dir)


def apply_steps(plan_dir: Path) -> list[str]:
    """Review, then apply, a plan's Ansible project."""
    where, play = shlex.quote(str(plan_dir)), _program("ansible-playbook")
    return [f"cd {where} && {play} apply-tuning.yml --check --diff", f"cd {where} && {play} apply-tuning.yml"]
