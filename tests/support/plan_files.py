"""What a plan directory gives a host: its vars files and their variables (Ansible's order)."""

from __future__ import annotations

from pathlib import Path


def plan_vars_files(plan: Path, host: str) -> list[Path]:
    """The vars files a plan directory gives ``host``: its change-set groups' group_vars, then its
    host_vars (Ansible's order: host_vars win)."""
    from advisor.util.ansible_data import load_data

    inventory = load_data((plan / "inventory.yml").read_text())
    groups = [g for g, v in (inventory["all"].get("children") or {}).items() if host in ((v or {}).get("hosts") or {})]
    files = [plan / "group_vars" / f"{g}.yml" for g in sorted(groups)]
    files.append(plan / "host_vars" / f"{host}.yml")
    return [f for f in files if f.is_file()]


def plan_vars_text(plan: Path, host: str) -> str:
    """The text of every vars file the plan gives ``host``."""
    return "\n".join(f.read_text() for f in plan_vars_files(plan, host))


def plan_vars(plan: Path, host: str) -> dict:
    """The role variables the plan gives ``host`` (group_vars of its change set, then its host_vars)."""
    from advisor.util.ansible_data import load_data

    out: dict = {}
    for f in plan_vars_files(plan, host):
        out.update(load_data(f.read_text()) or {})
    return out
