"""Rule references cite public sources, never a file that storadvise does not ship.

A reference names a paper, a vendor guide, an RFC or a man page by name and section. When it names a file of
*this* project (``rules/gpfs.yml``, ``playbooks/roles/...``, ``advisor/...``), that file must ship with the
package; internal notes (``shared/...``, ``FORMATS.md``, ``docs/...``, ``tests/...``) do not, so the reader of a
finding could not open them. Files of other projects are cited after their project's name with a path that
starts in that project (``xrootd src/XrdPfc/XrdPfcConfiguration.cc``, ``Linux Documentation/block/...``).
"""

from __future__ import annotations

import re
from pathlib import Path

from advisor.util.resources import _PKG, playbooks_dir, rules_dir

# First path segments that would name a file of this repository or of the notes beside it.
_LOCAL_ROOTS = frozenset({"shared", "docs", "tests", "bench", "seeds", "reference", "rules", "playbooks",
                          "advisor", "probes"})
# A path-like token: segments joined by '/', or a bare file name with a document suffix.
_TOKEN = re.compile(r"[\w.-]+(?:/[\w.-]+)+|[\w-]+(?:\.[\w-]+)*\.(?:md|txt|ya?ml|rst)\b", re.IGNORECASE)


def _shipped(first: str, rest: str) -> bool:
    roots: dict[str, Path] = {"rules": rules_dir(), "playbooks": playbooks_dir(), "advisor": _PKG,
                              "probes": _PKG.parent / "probes"}
    root = roots.get(first)
    return root is not None and bool(rest) and (root / rest).exists()


def unshipped_files(reference: str) -> list[str]:
    """The files of this project that *reference* cites but that are not shipped (empty when it is clean)."""
    if re.match(r"\s*[a-z][a-z0-9+.-]*://", reference):
        return []
    bad: list[str] = []
    for match in _TOKEN.finditer(reference):
        token = match.group(0).rstrip(".")
        if "/" in token:
            first, _, rest = token.partition("/")
            if first in _LOCAL_ROOTS and not _shipped(first, rest):
                bad.append(token)
        elif not any(_shipped(root, token) for root in ("rules", "playbooks")):
            bad.append(token)  # a bare note name such as FORMATS.md or LAB-TRIAL.md
    return bad
