"""The role lists of the docs, generated from the registry (the adapters' roles, advisor/adapters)
plus ``apply_summary``, the controller-side role apply-tuning.yml runs last.

A doc holds a list between ``<!-- roles -->`` and ``<!-- /roles -->``;
``python -m advisor.apply.role_docs`` rewrites those regions, tests/core/test_docs.py checks them.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

#: the role every plan runs last, on the controller (not an adapter's)
SUMMARY_ROLE = "apply_summary"
#: the role playbooks/collect.yml runs on each host (collection, not a plan's change: not in the lists)
COLLECT_ROLE = "collect_batch"
#: the documents that list the roles
DOCUMENTS = ("docs/collect.md", "playbooks/README.md")
REGION = re.compile(r"(<!-- roles -->)(.*?)(<!-- /roles -->)", re.S)


def role_names() -> list[str]:
    """The roles a plan can run, in apply-tuning.yml's order, then ``apply_summary``."""
    from advisor.apply.plan_model import registered_roles

    return [*registered_roles(), SUMMARY_ROLE]


def role_list_text() -> str:
    names = role_names()
    return f"{len(names)} roles: " + ", ".join(f"`{n}`" for n in names)


def regenerate(text: str) -> str:
    return REGION.sub(lambda m: m.group(1) + role_list_text() + m.group(3), text)


def main(root: Path) -> int:
    for rel in DOCUMENTS:
        path = root / rel
        text = path.read_text()
        new = regenerate(text)
        if new != text:
            path.write_text(new)
            print(f"rewrote the role list of {rel}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path.cwd()))
