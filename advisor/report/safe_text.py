"""Text read from hosts, made safe to put into XML and HTML reports."""

from __future__ import annotations

import re

_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffe\uffff\ud800-\udfff]")


def xml_text(value: object) -> str:
    """``value`` as text XML 1.0 (and HTML) can carry: control characters become ``\\xNN``."""
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", str(value))
