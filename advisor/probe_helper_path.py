"""Where a host's probe helper is installed: its ``probe_helper`` variable, validated (the path names
a command sudo runs as root; advisor.probe_helper writes the helper and the sudoers rule for it).
The site model checks every host's value with this, before any transport or probe is involved."""

from __future__ import annotations

import re

#: the host variable naming the installed helper; unset: root probes run as scripts through sudo
HELPER_VAR = "probe_helper"
DEFAULT_HELPER_PATH = "/usr/local/sbin/storadvise-probe"
_PATH_RE = re.compile(r"^/[A-Za-z0-9_./+-]+$")


def helper_path(vars_: dict) -> str | None:
    """The helper a host's variables name (``probe_helper: true`` means the default path), or None."""
    v = vars_.get(HELPER_VAR)
    if v in (None, False, ""):
        return None
    path = DEFAULT_HELPER_PATH if v is True else v
    if not isinstance(path, str) or not _PATH_RE.match(path) or "/../" in path:
        raise ValueError(f"{HELPER_VAR} {v!r}: an absolute path of letters, digits and ._+-/ (or true for "
                         f"{DEFAULT_HELPER_PATH})")
    return path
