"""YAML loading that remembers where every value came from.

A site file, rule pack or scenario that fails validation must be reported as one line naming
file, line and field. PyYAML's composed node tree carries marks; we walk it once and keep a
map from the value's path (``("hosts", 2, "port")``) to its 1-based line.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from advisor.util.errors import SiteFileError
from advisor.util.yaml_shape import MAX_DEPTH, check_shape, deep_line

PathKey = tuple[Any, ...]


def _walk(node: yaml.Node, path: PathKey, lines: dict[PathKey, int]) -> None:
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = key_node.value
            lines[path + (key,)] = key_node.start_mark.line + 1
            _walk(value_node, path + (key,), lines)
            # keep the key's own line for the field itself
            lines[path + (key,)] = key_node.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _walk(item, path + (index,), lines)


class LocatedYaml:
    """Parsed YAML plus the line of each value (``lines``: found from ``text`` when first asked,
    i.e. when something is wrong; a valid 10,000-host site file is parsed once)."""

    def __init__(self, path: Path, data: Any, lines: dict[PathKey, int] | None = None, text: str | None = None):
        self.path = path
        self.data = data
        self._lines = lines
        self._text = text

    @property
    def lines(self) -> dict[PathKey, int]:
        if self._lines is None:
            self._lines = {}
            node = _parse(self._text or "", yaml.compose)
            if node is not None:
                _walk(node, (), self._lines)
        return self._lines

    def line_of(self, loc: PathKey) -> int | None:
        loc = tuple(loc)
        while loc:
            if loc in self.lines:
                return self.lines[loc]
            loc = loc[:-1]
        return self.lines.get((), None)

    def validate(self, model: type[BaseModel], data: Any | None = None, what: str | None = None) -> Any:
        """Validate ``data`` (default: the whole document) against ``model``.

        Raises SiteFileError naming file, line and field of the first problem.
        """
        try:
            return model.model_validate(self.data if data is None else data)
        except ValidationError as exc:
            raise self.error_from_validation(exc) from None

    def error_from_validation(self, exc: ValidationError, prefix: PathKey = ()) -> SiteFileError:
        first = exc.errors()[0]
        loc = prefix + tuple(p for p in first.get("loc", ()) if not _is_union_tag(p))
        field = ".".join(str(p) for p in loc) or None
        msg = first.get("msg", "invalid value")
        inp = first.get("input")
        if first.get("type") not in ("missing",) and isinstance(inp, (str, int, float, bool)):
            msg = f"{msg} (got {inp!r})"
        return SiteFileError(str(self.path), msg, line=self.line_of(loc), field=field)


def _is_union_tag(part: Any) -> bool:
    # pydantic inserts the union member's type name into loc (e.g. 'int', 'str');
    # those are not fields of the document.
    return isinstance(part, str) and part in {"int", "str", "float", "bool", "list[str]", "function-after"}


def _read_regular(p: Path, what: str) -> str:
    """The text of ``p`` if it is a regular file itself (no symlink, FIFO, device or directory), opened
    so (``O_NOFOLLOW``, ``O_NONBLOCK``, then ``fstat``) that nothing else is read in its place."""
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK):
            raise SiteFileError(str(p), f"{what} is a symlink: not read (only regular files of the directory are)") from None
        raise
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise SiteFileError(str(p), f"{what} is not a regular file: not read")
        return fh.read().decode("utf-8")


def load_located_yaml(path: str | Path, what: str = "file", regular_only: bool = False) -> LocatedYaml:
    """Read and parse a YAML file; any I/O or syntax problem becomes a one-line SiteFileError.
    ``regular_only``: a symlink or anything but a regular file is refused unread (a site's rules
    directory: what it holds is read with the reader's privileges, and echoed in errors)."""
    p = Path(path)
    try:
        text = _read_regular(p, what) if regular_only else p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SiteFileError(str(p), f"{what} not found") from None
    except IsADirectoryError:
        raise SiteFileError(str(p), f"{what} is a directory") from None
    except PermissionError:
        raise SiteFileError(str(p), f"permission denied reading {what}") from None
    except UnicodeDecodeError as exc:
        raise SiteFileError(str(p), f"{what} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    return parse_located_yaml(text, p)


#: libyaml's parser where PyYAML was built with it: a 10,000-host site file in seconds, not minutes
_FAST_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _parse(text: str, how: Any) -> Any:
    """``how(text, Loader=...)`` with libyaml; on an error, again with the pure-Python parser, whose
    error says what is wrong, and where, in its own words. A document nested past the parser's
    recursion is a YAMLError."""
    try:
        try:
            return how(text, Loader=_FAST_LOADER)
        except yaml.YAMLError:
            return how(text, Loader=yaml.SafeLoader)
    except RecursionError:
        raise yaml.YAMLError(f"nested more than {MAX_DEPTH} deep") from None


def parse_located_yaml(text: str, path: str | Path = "<string>") -> LocatedYaml:
    p = Path(path)
    try:
        data = _parse(text, yaml.load)  # noqa: S506 (both loaders are safe loaders)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        problem = exc.problem or exc.context or "invalid YAML"
        raise SiteFileError(str(p), f"invalid YAML: {problem}", line=line) from None
    except yaml.YAMLError as exc:
        line = deep_line(text) if "deep" in str(exc) else None
        raise SiteFileError(str(p), f"invalid YAML: {exc}", line=line) from None
    check_shape(data, text, p)  # aliases that expand past a bound, nesting, a value holding itself
    return LocatedYaml(p, data, text=text)
