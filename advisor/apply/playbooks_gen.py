"""apply-tuning.yml and rollback.yml, generated from the adapter registry (advisor.adapters).

The registry's order is the one order of the roles: apply-tuning.yml runs their plays in it,
rollback.yml in reverse, and both end with the apply_summary play, which is handed the same list
(``apply_summary_roles``), so a plug-in storage system's failures reach apply-summary.json like a
shipped one's. ``storadvise plan`` writes both files into each plan directory from the registry as it
is (plug-ins included); the shipped playbooks/apply-tuning.yml and rollback.yml (the collection's)
are the same generation over the shipped adapters only, and a test keeps them equal to it.

Regenerate the shipped files after adding a shipped adapter:
``python -m advisor.apply.playbooks_gen --write``.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass

from advisor.util.resources import playbooks_dir

APPLY_HEADER = """---
# storadvise: apply the plan. Run from a plan directory written by `storadvise plan`
# (inventory.yml names the hosts of each role's group; host_vars/ holds the values).
# A setting that cannot be applied never stops the others (nor other roles or hosts); a module that
# fails unexpectedly fails its host (kept for the summary; the other hosts go on). The last play
# prints what changed and what failed per host and setting, writes apply-summary.json and fails
# the run when anything failed (docs/apply.md).
# Generated from the adapter registry (advisor/apply/playbooks_gen.py): edit the adapters, not this file.
"""
ROLLBACK_HEADER = """---
# storadvise: restore the values recorded before the plan was applied. Run from a plan directory written by `storadvise plan`
# (inventory.yml names the hosts of each role's group; host_vars/ holds the values).
# Roles are rolled back in the reverse order of apply-tuning.yml.
# Generated from the adapter registry (advisor/apply/playbooks_gen.py): edit the adapters, not this file.
"""
GROUPS_PLAY = """- name: Put the planned hosts into the plan's groups (groups.json; a no-op with the plan's inventory.yml)
  ansible.builtin.import_playbook: plan_groups.yml
"""


@dataclass(frozen=True)
class RolePlay:
    role: str
    title: str


def _q(text: str) -> str:
    """A YAML scalar: plain where that reads the same, else JSON-quoted (a subset of YAML)."""
    plain = text and not any(c in text for c in ":#{}[]&*!|>'\"%@`,") and text == text.strip()
    return text if plain and not text[0] in "-?" else json.dumps(text)


def role_plays(shipped_only: bool = False) -> list[RolePlay]:
    """One play per role, in the registry's order; ``shipped_only``: the roles under playbooks/roles."""
    from advisor.adapters import adapters
    from advisor.storage_kinds import storage_kinds

    kind_titles = {k.role_name: k.play_title for k in storage_kinds().values() if k.role_name and k.play_title}
    shipped = {p.name for p in (playbooks_dir() / "roles").iterdir() if p.is_dir()}
    out: dict[str, RolePlay] = {}
    for a in adapters().values():
        if a.role in out or (shipped_only and a.role not in shipped):
            continue
        out[a.role] = RolePlay(a.role, a.play_title or kind_titles.get(a.role) or f"Apply the {a.role} settings")
    return list(out.values())


def _summary_play(title: str, roles: list[str], run: str | None) -> str:
    extra = f"        apply_summary_run: {run}\n" if run else ""
    listed = "".join(f"          - {r}\n" for r in roles)
    return (f"- name: {_q(title)}\n  hosts: localhost\n  gather_facts: false\n  roles:\n    - role: apply_summary\n"
            f"      vars:\n{extra}        apply_summary_roles:\n{listed}")


def apply_playbook(plays: list[RolePlay]) -> str:
    parts = [APPLY_HEADER + GROUPS_PLAY]
    for p in plays:
        parts.append(f"- name: {_q(p.title)}\n  hosts: storadvise_{p.role}\n  gather_facts: false\n"
                     f"  roles:\n    - role: {p.role}\n")
    parts.append(_summary_play("Summarise what changed and what failed on each host; fail the run if anything failed",
                               [p.role for p in plays], None))
    return "\n".join(parts)


def rollback_playbook(plays: list[RolePlay]) -> str:
    parts = [ROLLBACK_HEADER + GROUPS_PLAY]
    for p in reversed(plays):
        parts.append(f"- name: {_q('Roll back ' + p.role)}\n  hosts: storadvise_{p.role}\n  gather_facts: false\n"
                     f"  roles:\n    - role: {p.role}\n      vars:\n        {p.role}_state: rollback\n")
    parts.append(_summary_play("Summarise what was restored and what failed on each host; fail the run if anything failed",
                               [p.role for p in plays], "rollback"))
    return "\n".join(parts)


def generated(shipped_only: bool = False, roles: list[str] | None = None) -> dict[str, str]:
    """{file name: text} of the two playbooks; ``roles``: only the plays of these roles (a plan's: the
    roles its changes use, so that every play's group is one its inventory declares)."""
    plays = [p for p in role_plays(shipped_only) if roles is None or p.role in roles]
    return {"apply-tuning.yml": apply_playbook(plays), "rollback.yml": rollback_playbook(plays)}


def main(argv: list[str]) -> int:
    """``--write``: regenerate the shipped files; ``--check``: exit 1 when they differ."""
    files = generated(shipped_only=True)
    stale = [n for n, text in files.items() if (playbooks_dir() / n).read_text() != text]
    if "--write" in argv:
        for n in stale:
            (playbooks_dir() / n).write_text(files[n])
        print(f"written: {', '.join(stale) or 'nothing (up to date)'}")
        return 0
    if stale:
        print(f"stale: {', '.join(stale)} (python -m advisor.apply.playbooks_gen --write)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
