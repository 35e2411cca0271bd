"""A private sysctl configuration tree for probe tests: the probe's script runs in a mount namespace of its own
(``unshare --mount``) where the sysctl directories are bind mounts of a temporary directory. The root namespace's
/etc is never touched.
"""

from __future__ import annotations

import contextlib
import shlex
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

#: the directories a sysctl sandbox replaces; /run and /usr/local/lib are replaced as a whole
#: because their sysctl.d subdirectories usually do not exist (no mount point to bind onto)
_SANDBOX_MOUNTS = {
    "/etc/sysctl.d": "etc/sysctl.d",
    "/usr/lib/sysctl.d": "usr/lib/sysctl.d",
    "/run": "run",
    "/usr/local/lib": "usr/local/lib",
}


class SymlinkTo(str):
    """A sysctl sandbox entry that is a symlink (to this target) instead of a file."""


@contextlib.contextmanager
def sysctl_sandbox(files: dict[str, str | None]) -> Iterator[Path]:
    """A temporary tree holding ``files`` ({absolute path: content}) for the sysctl directories.

    ``/etc/sysctl.conf`` in ``files`` is bind-mounted over the real one; absent, /dev/null is.
    A value of ``None`` makes a symlink to /dev/null (systemd-style masking), a ``SymlinkTo``
    a symlink to that target (Debian's ``/etc/sysctl.d/99-sysctl.conf -> ../sysctl.conf``).
    """
    root = Path(tempfile.mkdtemp(prefix="sa-sysctl-"))
    try:
        for rel in _SANDBOX_MOUNTS.values():
            (root / rel).mkdir(parents=True, exist_ok=True)
        for d in ("run/sysctl.d", "usr/local/lib/sysctl.d"):
            (root / d).mkdir(parents=True, exist_ok=True)
        for path, content in files.items():
            target = root / path.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            if content is None:
                target.symlink_to("/dev/null")
            elif isinstance(content, SymlinkTo):
                target.symlink_to(str(content))
            else:
                target.write_text(content)
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def sandboxed_script(root: Path, script: str) -> str:
    """Wrap ``script`` so it runs in a private mount namespace that sees ``root`` as its sysctl config."""
    mounts = [f"mount --bind {shlex.quote(str(root / rel))} {shlex.quote(dst)}" for dst, rel in _SANDBOX_MOUNTS.items()]
    conf = root / "etc" / "sysctl.conf"
    mounts.append(f"mount --bind {shlex.quote(str(conf) if conf.exists() else '/dev/null')} /etc/sysctl.conf")
    inner = "set -e\n" + "\n".join(mounts) + "\nset +e\n" + script
    return f"exec unshare --mount --propagation private sh -c {shlex.quote(inner)}"
