"""Text read from hosts, made safe to put into a terminal line, an XML or HTML report, or Markdown."""

from __future__ import annotations

import re

from rich.markup import escape

_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ufffe\uffff\ud800-\udfff]")


def xml_text(value: object) -> str:
    """``value`` as text XML 1.0 (and HTML) can carry: control characters become ``\\xNN``."""
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", str(value))


# C0 controls but tab, DEL, C1 controls (0x9b is a CSI on some terminals), the bidi overrides and
# isolates that reorder what a reader sees, and lone surrogates (which no terminal encoding can carry).
_NOT_TERMINAL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _visible(m: re.Match) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_text(value: object) -> str:
    """``value`` with every character that would act on a terminal made visible: ESC becomes the
    four characters ``\\x1b``, a newline ``\\x0a``. For Rich ``Text`` and ``markup=False`` output."""
    return _NOT_TERMINAL.sub(_visible, str(value))


def markup_text(value: object) -> str:
    """``value`` to put inside a Rich markup string: control characters made visible and every
    ``[`` that would open a tag escaped, so host text never styles, links or breaks the line."""
    return escape(terminal_text(value))


# what Markdown (CommonMark, GitHub's tables) would read as syntax inside a line: code, emphasis,
# links and images, inline HTML, entities, strikethrough, a table's cell border, escapes; an
# underscore only between two word characters is literal already (and stays as it is)
_MARKDOWN = re.compile(r"[\\`*\[\]<>|&~]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")


def markdown_text(value: object) -> str:
    """``value`` as literal text on one line of Markdown (a table cell, a list item, a heading):
    control characters and newlines made visible (``\\x0a``), then every character Markdown would
    read as syntax backslash-escaped, so host text never adds a heading, a link or a cell."""
    return _MARKDOWN.sub(lambda m: "\\" + m.group(), terminal_text(value))
