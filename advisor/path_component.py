"""A file or directory named after data (a host name, a key of a vars file, a capture key) is
named by one path component, checked here by every writer: no ``/``, no ``..``, no leading dot,
no control character, not empty, at most 255 characters."""

from __future__ import annotations

import re

from advisor.errors import StoradviseError

_COMPONENT = re.compile(r"^[A-Za-z0-9_@:+-][A-Za-z0-9._@:+-]{0,254}$")


class PathComponentError(StoradviseError):
    """A name from data that would not be one plain path component (one line)."""


def path_component(value: object, what: str) -> str:
    """``value`` if it is one safe path component; else :class:`PathComponentError` naming ``what``
    (e.g. "host name in vars file x.yml")."""
    if isinstance(value, str) and _COMPONENT.match(value):
        return value
    shown = repr(value) if len(repr(value)) <= 80 else repr(value)[:77] + "..."
    raise PathComponentError(f"{what} {shown}: not usable as a file name (letters, digits and . _ - @ : + only, "
                             "not starting with '.', at most 255)")
