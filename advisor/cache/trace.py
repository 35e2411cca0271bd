"""The request stream every input produces, and the bookkeeping they share.

A :class:`RequestBatch` holds parallel numpy arrays for a run of read requests (time in seconds,
dense file key, file size, bytes read, server index, file type index). :class:`Trace` keeps
what grows only with the number of distinct files and servers: the name -> key and server
-> index maps and each key's type. :class:`InputIssues` counts bad lines (with the first line
numbers) and the records that are not reads (writes, failures, internal copies).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable, Iterator

import numpy as np

from advisor.cache.keytable import KeyTable
from advisor.util.errors import StoradviseError

#: default file-type patterns (first match wins), on the logical path
DEFAULT_TYPES: tuple[tuple[str, str], ...] = (
    ("NanoAOD", r"/NANOAOD(SIM)?/|\.NANOAOD|DAOD_PHYSLITE"),
    ("MiniAOD", r"/MINIAOD(SIM)?/|\.DAOD_PHYS\.|\.DAOD_"),
    ("AOD", r"/AOD(SIM)?/|\.AOD\."),
    ("RAW", r"/RAW/|\.RAW\.|\.DRAW"),
    ("HITS", r"/GEN-SIM/|\.HITS\."),
    ("RECO", r"/RECO/|\.ESD\."),
    ("user", r"/store/user/|/user/|/group/"),
)
OTHER_TYPE = "other"
MAX_LISTED_BAD_LINES = 20


class CacheInputError(StoradviseError):
    """An input log that cannot be used at all (missing, unreadable, not of its format)."""

    def __init__(self, path: str, message: str, line: int | None = None):
        where = path if line is None else f"{path}:{line}"
        super().__init__(f"{where}: {message}")


@dataclass
class InputIssues:
    """Per input file: bad lines (counted, first ones listed) and records skipped as not reads."""

    path: str
    records: int = 0
    bad_lines: int = 0
    first_bad: list[dict] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)

    def bad(self, line: int, reason: str) -> None:
        self.bad_lines += 1
        if len(self.first_bad) < MAX_LISTED_BAD_LINES:
            self.first_bad.append({"line": line, "reason": reason})

    def skip(self, why: str, n: int = 1) -> None:
        if n:
            self.skipped[why] = self.skipped.get(why, 0) + n

    def to_dict(self) -> dict:
        return {"path": self.path, "requests": self.records, "bad_lines": self.bad_lines,
                "first_bad_lines": self.first_bad, "skipped": dict(sorted(self.skipped.items()))}


class FileTypes:
    """Path -> type name by regular expressions. The directory (up to and with the last ``/``) is
    matched first: when a pattern matches there, every file of that directory has that type (one
    search per directory, remembered); else the whole path is matched. Within a search the type
    whose pattern matches earliest wins (at the same place, the first listed); no match:
    ``other``. One combined pattern of named alternatives, so a search costs one pass whatever
    the number of types."""

    def __init__(self, patterns: Iterable[tuple[str, str]] = DEFAULT_TYPES):
        self.names: list[str] = []
        parts = []
        for i, (name, rx) in enumerate(patterns):
            try:
                named = re.compile(rx).groupindex
            except re.error as e:
                raise StoradviseError(f"file type {name!r}: bad pattern {rx!r}: {e}") from None
            if named:
                raise StoradviseError(f"file type {name!r}: pattern {rx!r} has named groups: use (...) or (?:...)")
            self.names.append(name)
            parts.append(f"(?P<t{i}>{rx})")
        self.names.append(OTHER_TYPE)
        self._other = len(self.names) - 1
        self._rx = re.compile("|".join(parts)) if parts else None
        self._group = {f"t{i}": i for i in range(len(parts))}
        self._dirs: dict[str, int | None] = {}

    def index(self, path: str) -> int:
        return self.indices([path])[0]

    def dir_index(self, d: str) -> int:
        """The type a directory (ending with ``/``) gives all its files, or -1: match each path."""
        if self._rx is None:
            return self._other
        m = self._rx.search(d)
        return self._group.get(m.lastgroup, self._other) if m else -1

    def path_index(self, p: str) -> int:
        if self._rx is None:
            return self._other
        m = self._rx.search(p)
        return self._group.get(m.lastgroup, self._other) if m else self._other

    def indices(self, paths: list[str]) -> list[int]:
        if self._rx is None:
            return [self._other] * len(paths)
        search, group, other, dirs = self._rx.search, self._group, self._other, self._dirs
        out = []
        for p in paths:
            d = p[: p.rfind("/") + 1]
            t = dirs.get(d, -1)
            if t == -1:
                m = search(d)
                t = dirs[d] = group.get(m.lastgroup, other) if m else None
                if len(dirs) > 1_000_000:
                    dirs.clear()
            if t is None:
                m = search(p)
                t = group.get(m.lastgroup, other) if m else other
            out.append(t)
        return out


@dataclass
class RequestBatch:
    time: np.ndarray     # float64 seconds
    key: np.ndarray      # int64 dense file key
    size: np.ndarray     # int64 file size (what the cache stores)
    nbytes: np.ndarray   # int64 bytes the request read
    server: np.ndarray   # int64 server index
    ftype: np.ndarray    # int64 file type index

    def __len__(self) -> int:
        return len(self.key)

    def select(self, mask: np.ndarray) -> "RequestBatch":
        return RequestBatch(self.time[mask], self.key[mask], self.size[mask], self.nbytes[mask],
                            self.server[mask], self.ftype[mask])


class Trace:
    """Name -> key and server -> index maps, and each key's type: grows with distinct files only."""

    def __init__(self, types: FileTypes | None = None):
        self.types = types or FileTypes()
        self.key_table = KeyTable()
        self.server_table = KeyTable(64)
        self._key_cache: dict[str, int] = {}
        self.key_type = np.zeros(1024, dtype=np.int64)
        self.server_names: list[str] = []
        #: directories seen by the compiled CSV parser: id -> type (-1: match each path)
        self.dir_table = KeyTable()
        self.dir_type = np.zeros(1024, dtype=np.int64)

    @property
    def n_keys(self) -> int:
        return len(self.key_table)

    def _set_type(self, key: int, path: str) -> None:
        if key >= len(self.key_type):
            self.key_type = np.concatenate([self.key_type, np.zeros(max(key + 1, len(self.key_type)), np.int64)])
        self.key_type[key] = self.types.index(path)

    def key_of(self, name: str, path: str | None = None) -> int:
        k = self._key_cache.get(name)
        if k is None:
            k, new = self.key_table.key(name)
            self._key_cache[name] = k
            if new:
                self._set_type(k, path if path is not None else name)
        return k

    def reserve_keys(self, more: int) -> None:
        """Room in ``key_type`` for ``more`` new keys (the compiled parser writes it)."""
        need = len(self.key_table) + more
        if need > len(self.key_type):
            grown = np.zeros(max(need, 2 * len(self.key_type)), np.int64)
            grown[: len(self.key_type)] = self.key_type
            self.key_type = grown
        self.dir_table.reserve(more)
        need = len(self.dir_table) + more
        if need > len(self.dir_type):
            grown = np.full(max(need, 2 * len(self.dir_type)), -1, np.int64)
            grown[: len(self.dir_type)] = self.dir_type
            self.dir_type = grown

    def new_keys(self, first: int, names: list[str]) -> None:
        """Types for keys ``first ..`` that a compiled parser inserted, in key order."""
        if not names:
            return
        end = first + len(names)
        if end > len(self.key_type):
            grown = np.zeros(max(end, 2 * len(self.key_type)), np.int64)
            grown[: len(self.key_type)] = self.key_type
            self.key_type = grown
        self.key_type[first:end] = self.types.indices(names)

    def server_of(self, name: str) -> int:
        s, new = self.server_table.key(name)
        if new:
            self.server_names.append(name)
        return s

    def types_of(self, keys: np.ndarray) -> np.ndarray:
        return self.key_type[keys]


class BatchBuilder:
    """Collects requests one at a time (the line-oriented parsers) and hands out batches."""

    def __init__(self, trace: Trace, batch_size: int = 1 << 16):
        self.trace, self.batch_size = trace, batch_size
        self._t: list[float] = []
        self._k: list[int] = []
        self._s: list[int] = []
        self._b: list[int] = []
        self._v: list[int] = []
        self._y: list[int] = []

    def add(self, time: float, name: str, size: int, nbytes: int, server: str, path: str | None = None) -> None:
        k = self.trace.key_of(name, path)
        self._t.append(time)
        self._k.append(k)
        self._s.append(size)
        self._b.append(nbytes)
        self._v.append(self.trace.server_of(server))
        self._y.append(int(self.trace.key_type[k]))

    def full(self) -> bool:
        return len(self._k) >= self.batch_size

    def take(self) -> RequestBatch | None:
        if not self._k:
            return None
        b = RequestBatch(np.asarray(self._t, np.float64), np.asarray(self._k, np.int64),
                         np.asarray(self._s, np.int64), np.asarray(self._b, np.int64),
                         np.asarray(self._v, np.int64), np.asarray(self._y, np.int64))
        for lst in (self._t, self._k, self._s, self._b, self._v, self._y):
            lst.clear()
        return b


def drain(builder: BatchBuilder, lines: Iterator[None]) -> Iterator[RequestBatch]:
    """Run a parser loop that feeds ``builder`` and yield full batches as they come."""
    for _ in lines:
        if builder.full():
            b = builder.take()
            if b is not None:
                yield b
    b = builder.take()
    if b is not None:
        yield b
