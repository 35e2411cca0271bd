"""The size and depth of a loaded YAML document, bounded: no "billion laughs", no recursion limit.

YAML anchors and aliases (``&a``, ``*a``) load as shared references: nine lines of aliases make a
value that is 10^9 items once anything walks it (``${var}`` substitution, a JSON dump, the Ansible
inventory). A site file, a rule pack, a profile or a scenario may use aliases while the document
they expand to stays small; past ``MAX_EXPANDED_VALUES`` values, or nested deeper than
``MAX_DEPTH``, or an alias that holds itself, it is refused with one line naming the file and the
line where it happens, before anything walks it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from advisor.util.errors import SiteFileError

#: values (scalars and collections, aliases counted at their full size) a document may expand to:
#: a 10,000-host site file is ~300,000
MAX_EXPANDED_VALUES = 2_000_000
#: nesting of mappings and lists (a site file needs 6)
MAX_DEPTH = 64


class _TooLarge(Exception):
    def __init__(self, what: str, at: Any = None) -> None:
        super().__init__(what)
        self.at = at


def _data_children(obj: Any) -> list[Any] | None:
    if isinstance(obj, dict):
        return [*obj.keys(), *obj.values()]
    return list(obj) if isinstance(obj, list) else None


def _node_children(node: Any) -> list[Any] | None:
    if isinstance(node, yaml.MappingNode):
        return [x for pair in node.value for x in pair]
    return list(node.value) if isinstance(node, yaml.SequenceNode) else None


def _measure(root: Any, children_of: Any) -> None:
    """Walks ``root`` once (shared values once) without recursion; raises _TooLarge naming the
    smallest value that is too large. ``children_of(x)``: x's values, None for a scalar."""
    done: dict[int, int] = {}  # id -> expanded values
    on_path: set[int] = set()
    stack: list[tuple[Any, list[Any] | None, bool]] = [(root, children_of(root), False)]
    while stack:
        obj, children, leaving = stack.pop()
        if children is None:
            continue
        key = id(obj)
        if not leaving:
            if key in on_path:
                raise _TooLarge("an alias refers to a value that holds it", obj)
            if key in done:
                continue
            on_path.add(key)
            if len(on_path) > MAX_DEPTH:
                raise _TooLarge(f"nested more than {MAX_DEPTH} deep", obj)
            stack.append((obj, children, True))
            stack.extend((c, children_of(c), False) for c in children)
            continue
        size = 1
        for c in children:
            if id(c) in on_path:
                raise _TooLarge("an alias refers to a value that holds it", obj)
            size += done.get(id(c), 1)
        if size > MAX_EXPANDED_VALUES:
            raise _TooLarge(f"aliases expand it to more than {MAX_EXPANDED_VALUES:,} values", obj)
        on_path.discard(key)
        done[key] = size


def check_shape(data: Any, text: str, path: str | Path) -> None:
    """SiteFileError naming file and line when ``data`` (loaded from ``text``) is too large once its
    aliases are expanded, nested too deep, or holds itself."""
    try:
        _measure(data, _data_children)
    except _TooLarge as exc:
        raise SiteFileError(str(path), f"{exc}: YAML aliases (*name) may only repeat small values"
                            if "alias" in str(exc) else str(exc), line=_line_of(text)) from None


_OPENS = (yaml.BlockMappingStartToken, yaml.BlockSequenceStartToken, yaml.FlowMappingStartToken,
          yaml.FlowSequenceStartToken)
_CLOSES = (yaml.BlockEndToken, yaml.FlowMappingEndToken, yaml.FlowSequenceEndToken)


def deep_line(text: str) -> int | None:
    """The line where the document's tokens (scanned without recursion) first nest past MAX_DEPTH."""
    depth = 0
    try:
        for tok in yaml.scan(text, Loader=yaml.SafeLoader):
            depth += isinstance(tok, _OPENS) - isinstance(tok, _CLOSES)
            if depth > MAX_DEPTH:
                return tok.start_mark.line + 1
    except yaml.YAMLError:
        return None
    return None


def _line_of(text: str) -> int | None:
    """The line of the value that is too large: where the document first nests too deep; else the
    document composed again (only on this error path) into nodes, which carry their lines, and
    measured the same way."""
    line = deep_line(text)
    if line is not None:
        return line
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        _measure(root, _node_children)
    except _TooLarge as exc:
        return exc.at.start_mark.line + 1 if exc.at is not None else None
    except (yaml.YAMLError, RecursionError):
        return None
    return None
