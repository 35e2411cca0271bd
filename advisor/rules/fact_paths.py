"""Fact paths: ``sysctls."net.ipv4.tcp_sack".runtime`` into plain facts data."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

MISSING = object()


@lru_cache(maxsize=1024)
def split_path(path: str) -> tuple[str, ...]:
    """Split a dotted path; double-quoted segments may contain dots.

    >>> split_path('sysctls."net.ipv4.tcp_sack".runtime')
    ('sysctls', 'net.ipv4.tcp_sack', 'runtime')
    """
    parts: list[str] = []
    buf: list[str] = []
    quoted = False
    i = 0
    while i < len(path):
        c = path[i]
        if c == '"':
            quoted = not quoted
        elif c == "." and not quoted:
            parts.append("".join(buf))
            buf = []
        else:
            buf.append(c)
        i += 1
    if quoted:
        raise ValueError(f"unbalanced quote in fact path {path!r}")
    parts.append("".join(buf))
    if any(p == "" for p in parts):
        raise ValueError(f"empty segment in fact path {path!r}")
    return tuple(parts)


def get_path(data: Any, path: str | tuple[str, ...]) -> Any:
    """The value at ``path`` or ``MISSING``; list items are addressed by index."""
    parts = split_path(path) if isinstance(path, str) else path
    cur = data
    for part in parts:
        if isinstance(cur, dict):
            if part not in cur:
                return MISSING
            cur = cur[part]
        elif isinstance(cur, list):
            try:
                cur = cur[int(part)]
            except (ValueError, IndexError):
                return MISSING
        else:
            return MISSING
    return cur
