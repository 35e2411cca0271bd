"""Every output file is written atomically: a temporary file in the same directory, flushed and
fsynced, then renamed over the target. A reader (a Prometheus scrape, ``ansible-playbook``, a
second storadvise) sees the old file or the new one, never half of one; and a failure at any
point (a full disk, a lone surrogate that UTF-8 cannot encode, an interrupt) removes the
temporary file and leaves the target as it was."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import IO, Iterator


@contextlib.contextmanager
def atomic_writer(path: str | os.PathLike, mode: int = 0o644, binary: bool = False) -> Iterator[IO]:
    """A file object whose content replaces ``path`` when the block ends without an exception.

    ``mode``: the permissions of the result (0o600 for anything that may hold a host variable);
    the temporary file has them from its creation, so no reader ever sees a wider mode."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb" if binary else "w", encoding=None if binary else "utf-8") as fh:
            fd = -1
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if fd != -1:
            os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_atomic(path: str | os.PathLike, data: str | bytes, mode: int = 0o644) -> None:
    """Write ``data`` (text as UTF-8) to ``path`` atomically with permissions ``mode``."""
    with atomic_writer(path, mode, binary=isinstance(data, bytes)) as fh:
        fh.write(data)


def check_output_paths(paths: dict[str, str | os.PathLike | None]) -> None:
    """Refuse, before any work is done, an output file (``{"--output": path, ...}``) whose directory
    does not exist, or that is a directory: storadvise creates no directory for a file it is asked to
    write (a typo in a path is an error, not a new tree). ``-`` (stdout) passes."""
    from advisor.util.errors import UsageError

    for option, value in paths.items():
        if value is None or str(value) == "-":
            continue
        path = Path(value)
        if path.is_dir():
            raise UsageError(f"{option} {path}: is a directory; give a file")
        parent = path.parent
        if not parent.is_dir():
            raise UsageError(f"{option} {path}: directory {parent} does not exist (storadvise creates no "
                             "directory for a file)")
