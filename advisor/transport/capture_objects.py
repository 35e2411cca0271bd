"""The content-addressed part of a capture: every distinct text (stdout, stderr, script) stored
once under ``DIR/objects/<2 hex>/<62 hex>``, named by the SHA-256 of its UTF-8 bytes.

Ten thousand workers installed from one image print the same ``sysctl -a``: the capture holds
it once and each host's index names it. Reading verifies every object against its name, so a
capture edited by hand or damaged in transit is reported, never silently analysed. An object is
read as any captured file (advisor.transport.capture_files): a regular file, no symlink on the
way, its first 8 MiB kept (the whole file is hashed), 10 s at most.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from pathlib import Path

from advisor.util.shipped_code import module_utils
from advisor.transport.capture_files import read_captured

_layout = module_utils("storadvise_capture_layout")

OBJECTS = _layout.OBJECTS
_OID = re.compile(r"[0-9a-f]{64}")


class CaptureObjectError(Exception):
    """An object is missing, unreadable, or does not hash to its name (one line)."""


object_id = _layout.object_id


def is_object_id(value: object) -> bool:
    return isinstance(value, str) and _OID.fullmatch(value) is not None


class CaptureObjects:
    """Writes and reads the objects of one capture directory; read texts are cached by id, so
    every host naming an object gets the same string. Thread-safe."""

    def __init__(self, directory: str | os.PathLike):
        self.directory = Path(directory)
        self.root = self.directory / OBJECTS
        self._texts: dict[str, tuple[str, bool]] = {}
        self._lock = threading.Lock()

    def _path(self, oid: str) -> Path:
        return self.root / oid[:2] / oid[2:]

    def put(self, text: str) -> str:
        """Store ``text`` (once) and return its id (the shipped layout writes it)."""
        return _layout.put_object(self.directory, text)

    def get(self, oid: str) -> str:
        """The text of object ``oid`` (undecodable bytes replaced; its first 8 MiB)."""
        return self.read(oid)[0]

    def read(self, oid: str) -> tuple[str, bool]:
        """The text of object ``oid`` (its first 8 MiB, undecodable bytes replaced) and whether
        the object was longer and cut."""
        got = self._texts.get(oid)
        if got is not None:
            return got
        if not is_object_id(oid):
            raise CaptureObjectError(f"{oid!r} is not an object id (64 hex digits)")
        path = self._path(oid)
        hasher = hashlib.sha256()
        try:
            data = read_captured(self.directory, (OBJECTS, oid[:2], oid[2:]), hasher=hasher)
        except OSError as exc:
            raise CaptureObjectError(f"{path}: unreadable: {exc.strerror or exc}") from None
        if data is None:
            raise CaptureObjectError(f"object {oid} missing from {self.root}")
        if hasher.hexdigest() != oid:
            raise CaptureObjectError(f"{path}: content does not match its name (damaged or edited)")
        with self._lock:
            return self._texts.setdefault(oid, (data.data.decode("utf-8", "replace"), data.truncated))
