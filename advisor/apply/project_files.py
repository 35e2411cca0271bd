"""What a plan directory carries of the shipped playbooks: the roles its changes use (and apply_summary,
which every playbook ends with), and of ``module_utils/`` only the files those roles import, directly or
through another module_utils file. A plan of four sysctl changes carries network_tuning and the two
module_utils it reads, not every role of every storage system.

A storage kind registered from outside (advisor.storage_kinds) brings its role directory: copied in when
the plan uses it, as a shipped one is.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from advisor.apply.plan_model import Plan
from advisor.util.resources import playbooks_dir

#: the role every plan's playbooks end with (advisor/apply/playbooks_gen.py)
SUMMARY_ROLE = "apply_summary"
_IMPORT = re.compile(r"module_utils\.(storadvise_\w+)")
_IGNORE = shutil.ignore_patterns("__pycache__", "*.pyc")


def roles_in_use(plan: Plan) -> list[str]:
    """The roles the plan's hosts get variables for, in the registry's order."""
    used = {r for h in plan.hosts for r in plan.roles_of(h)}
    return [r for r in plan.role_order if r in used]


def role_sources() -> dict[str, Path]:
    """Role name -> its directory: the shipped roles, then those of registered storage kinds."""
    from advisor.storage_kinds import storage_kinds

    found = {p.name: p for p in (playbooks_dir() / "roles").iterdir() if p.is_dir()}
    for kind in storage_kinds().values():
        if kind.role and Path(kind.role).is_dir():
            found.setdefault(Path(kind.role).name, Path(kind.role))
    return found


def module_utils_of(role_dirs: list[Path], library: Path) -> list[str]:
    """The ``module_utils`` file names (``storadvise_state``) the roles import, and those they import."""
    todo = [p for d in role_dirs for p in d.rglob("*") if p.is_file() and p.suffix in (".py", ".yml", ".yaml")]
    needed: set[str] = set()
    while todo:
        text = todo.pop().read_text(errors="replace")
        for name in _IMPORT.findall(text):
            if name not in needed and (library / f"{name}.py").is_file():
                needed.add(name)
                todo.append(library / f"{name}.py")
    return sorted(needed)


def copy_roles(out: Path, roles: list[str]) -> list[str]:
    """Copy ``roles`` (and apply_summary) into ``out/roles`` and the module_utils they import into
    ``out/module_utils``; returns the module_utils copied."""
    sources = role_sources()
    wanted = [*roles, SUMMARY_ROLE]
    missing = [r for r in wanted if r not in sources]
    if missing:
        raise FileNotFoundError(f"no role directory for {', '.join(missing)}")
    (out / "roles").mkdir()
    for r in wanted:
        shutil.copytree(sources[r], out / "roles" / r, ignore=_IGNORE)
    library = playbooks_dir() / "module_utils"
    used = module_utils_of([sources[r] for r in wanted], library)
    (out / "module_utils").mkdir()
    for name in used:
        shutil.copy2(library / f"{name}.py", out / "module_utils" / f"{name}.py")
    return used
