"""Reading one file of a capture directory under the limits live output is read under.

A capture is data from hosts, and may have been edited or assembled by hand. So, below the
capture root (which may itself be a symlink the user gave):

- every component is opened relative to its parent with ``O_NOFOLLOW`` after an ``lstat``: a
  symlink, FIFO, device or socket at any depth is refused as "not a captured output", never
  followed or opened (a FIFO would block ``open()``, ``/dev/zero`` would never end);
- at most ``limit`` bytes are kept (8 MiB per stream, as over SSH); the rest is counted as
  truncated, never held in memory;
- a read that takes longer than ``MAX_READ_SECONDS`` is abandoned.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from dataclasses import dataclass

from advisor.transport.base import MAX_OUTPUT_BYTES

#: the longest one captured file may take to read
MAX_READ_SECONDS = 10.0
_CHUNK = 1 << 20
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_KINDS = ((stat.S_ISLNK, "a symlink"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a directory"))


class CaptureFileRefused(OSError):
    """A path below the capture root that is not a regular file (or directory on the way), or a
    read over the time limit: one line naming the path."""


@dataclass(frozen=True)
class CapturedBytes:
    data: bytes
    #: the file held more than the limit: ``data`` is its first ``limit`` bytes
    truncated: bool
    size: int


def _kind(mode: int) -> str:
    return next((what for test, what in _KINDS if test(mode)), "not a regular file")


def _check(st: os.stat_result, want_dir: bool, shown: str) -> None:
    ok = stat.S_ISDIR(st.st_mode) if want_dir else stat.S_ISREG(st.st_mode)
    if not ok:
        raise CaptureFileRefused(f"{shown}: not a captured output ({_kind(st.st_mode)})")


def read_captured(root: str | os.PathLike, parts: tuple[str, ...] | list[str], *, limit: int = MAX_OUTPUT_BYTES,
                  hasher=None, timeout: float = MAX_READ_SECONDS) -> CapturedBytes | None:
    """The bytes of ``root/parts[0]/.../parts[-1]``, None when a component is absent.

    ``hasher`` (a hashlib object), when given, is fed the whole file, also past ``limit``.
    Raises :class:`CaptureFileRefused` for a symlink or non-regular file below ``root``, and
    other ``OSError`` as the system reports them."""
    shown = os.path.join(os.fspath(root), *parts)
    for p in parts:
        if not p or p in (".", "..") or "/" in p or "\0" in p:
            raise CaptureFileRefused(f"{shown}: not a captured output (component {p!r})")
    fds: list[int] = []
    try:
        try:
            fds.append(os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC))
            for i, name in enumerate(parts):
                last = i == len(parts) - 1
                _check(os.stat(name, dir_fd=fds[-1], follow_symlinks=False), not last, shown)
                fds.append(os.open(name, _FILE_FLAGS if last else _DIR_FLAGS, dir_fd=fds[-1]))
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as exc:
            if isinstance(exc, CaptureFileRefused):
                raise
            if exc.errno == errno.ELOOP:  # ELOOP: replaced by a symlink between lstat and open
                raise CaptureFileRefused(f"{shown}: not a captured output (a symlink)") from None
            raise
        fd = fds[-1]
        _check(os.fstat(fd), False, shown)  # what was opened is what was checked
        return _read_fd(fd, limit, hasher, timeout, shown)
    finally:
        for fd in fds:
            os.close(fd)


def _read_fd(fd: int, limit: int, hasher, timeout: float, shown: str) -> CapturedBytes:
    kept = bytearray()
    size = 0
    deadline = time.monotonic() + timeout
    while True:
        chunk = os.read(fd, _CHUNK)
        if not chunk:
            break
        size += len(chunk)
        if hasher is not None:
            hasher.update(chunk)
        if len(kept) < limit:
            kept += chunk[: limit - len(kept)]
        elif hasher is None:
            break  # past the limit and nothing needs the rest
        if time.monotonic() > deadline:
            raise CaptureFileRefused(f"{shown}: read took longer than {timeout:.0f} s")
    return CapturedBytes(bytes(kept), size > limit, size)
