"""Where a host's probe helper is installed: its ``probe_helper`` variable, validated (the path names
a command sudo runs as root; advisor.collect.probe_helper writes the helper and the sudoers rule for it).
The site model checks every host's value with this, before any transport or probe is involved.

The helper runs as root for whoever may call it through sudo, so whoever may write it, or rename
anything in a directory above it, is root on that host. Its path must therefore lie in a system
directory only root writes (``SYSTEM_DIRS``); the scan also checks, on the host and before sudo,
that the helper and every directory above it are owned by root and not group- or world-writable
(advisor.collect.probe_helper)."""

from __future__ import annotations

import re

#: the host variable naming the installed helper; unset: root probes run as scripts through sudo
HELPER_VAR = "probe_helper"
DEFAULT_HELPER_PATH = "/usr/local/sbin/storadvise-probe"
#: directories a helper may be installed in: root-owned system directories (``/opt/NAME/...``: a
#: package's own tree, below /opt itself)
SYSTEM_DIRS = ("/usr/local/sbin/", "/usr/local/libexec/", "/usr/sbin/", "/usr/libexec/", "/opt/")
_PATH_RE = re.compile(r"/[A-Za-z0-9_./+-]+")


def helper_path(vars_: dict) -> str | None:
    """The helper a host's variables name (``probe_helper: true`` means the default path), or None."""
    v = vars_.get(HELPER_VAR)
    if v in (None, False, ""):
        return None
    path = DEFAULT_HELPER_PATH if v is True else v
    if not isinstance(path, str) or not _PATH_RE.fullmatch(path) or path.endswith("/") \
            or any(part in ("", ".", "..") for part in path.split("/")[1:]):
        raise ValueError(f"{HELPER_VAR} {str(v)[:80]!r}: an absolute path of letters, digits and ._+-/ (or true for "
                         f"{DEFAULT_HELPER_PATH})")
    if not _in_system_dir(path):
        raise ValueError(f"{HELPER_VAR} {path!r}: the helper runs as root through sudo, so anyone who can write its "
                         f"directory is root: install it in a root-owned system directory ("
                         f"{', '.join(d.rstrip('/') for d in SYSTEM_DIRS[:-1])} or /opt/NAME/)")
    return path


def _in_system_dir(path: str) -> bool:
    for d in SYSTEM_DIRS:
        if path.startswith(d):
            return d != "/opt/" or "/" in path[len(d):]  # /opt/NAME/storadvise-probe, not /opt/storadvise-probe
    return False


def helper_read_problem(vars_: dict) -> str | None:
    """Why a host with these variables cannot have a probe helper: a root probe's path variable names
    a location outside what that probe documents (``Probe.root_paths``); None when none does."""
    from probes import all_probes
    from probes.probe import root_path_problem

    for probe in sorted(all_probes().values(), key=lambda p: p.name):
        problem = root_path_problem(probe, vars_) if probe.needs_root else None
        if problem:
            return problem
    return None
