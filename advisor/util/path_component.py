"""A file or directory named after data (a host name, a key of a vars file, a capture key) is
named by one path component, checked here by every writer: no ``/``, no ``..``, no leading dot,
no control character, not empty, at most 255 characters."""

from __future__ import annotations

from advisor.util.errors import StoradviseError
from advisor.util.shipped_code import module_utils

#: the rule itself lives with the capture layout, which the collect playbook's module runs without storadvise
_layout = module_utils("storadvise_capture_layout")


class PathComponentError(StoradviseError):
    """A name from data that would not be one plain path component (one line)."""


def path_component(value: object, what: str) -> str:
    """``value`` if it is one safe path component; else :class:`PathComponentError` naming ``what``
    (e.g. "host name in vars file x.yml")."""
    try:
        return _layout.host_component(value, what)
    except _layout.CaptureLayoutError as exc:
        raise PathComponentError(str(exc)) from None
