"""A saved scan's JSON read under limits: nesting and the digits of a number.

A saved scan is a file anyone who can write it may have edited (docs/security.md). JSON nested
100,000 deep made ``report``, ``verify --before`` and ``plan --scan`` fail with Python's
RecursionError, a 5,001-digit number with its int conversion limit ("Exceeds the limit (4300
digits)"), both as "internal error". Every reader of a saved scan now decodes through this
module: JSON nested deeper than ``MAX_DEPTH`` or an integer of more than ``MAX_INT_DIGITS``
digits is a one-line error naming the file and the place (line and column), the same limits a
host's JSON output has (docs/security.md, guard 7). Finding the place costs a scan of the text,
done only on that error path.
"""

from __future__ import annotations

import json
import re
from typing import Any

from advisor.util.errors import StoradviseError

#: the deepest nesting of objects and arrays a saved scan may have (a real one: about 8)
MAX_DEPTH = 64
#: the most digits an integer may have (2**64 has 20; every count and size fits)
MAX_INT_DIGITS = 24
_INT_LIMIT = 10**MAX_INT_DIGITS


class JsonLimitError(StoradviseError):
    """A saved JSON document past a limit: the message names the file and the place."""


class _TooManyDigits(ValueError):
    pass


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise _TooManyDigits(text)
    return int(text)


def load_json(text: str | bytes, where: Any) -> Any:
    """``json.loads`` of a saved document within the limits; ``StoradviseError`` naming ``where`` (the
    file) and the line for what is not JSON, or is past a limit."""
    try:
        data = json.loads(text, parse_int=_bounded_int)
    except _TooManyDigits:
        raise past_limit(text, where) from None
    except RecursionError:
        raise past_limit(text, where) from None
    except json.JSONDecodeError as exc:
        raise StoradviseError(f"{where}:{exc.lineno}: not JSON: {exc.msg}") from None
    except ValueError as exc:  # a number Python cannot convert, however it is spelled
        raise StoradviseError(f"{where}: not JSON: {str(exc)[:120]}") from None
    check_value(data, text, where, ints=False)  # parse_int saw every integer
    return data


def check_value(value: Any, text: str | bytes | None, where: Any, ints: bool = True) -> None:
    """``value`` (decoded from ``text``, the document it came from, when known) nests at most MAX_DEPTH
    deep and (``ints``) holds no integer of more than MAX_INT_DIGITS digits; else a JsonLimitError.
    Walks the value without recursion."""
    kinds = (dict, list, int) if ints else (dict, list)
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        obj, depth = stack.pop()
        if isinstance(obj, dict):
            children: Any = obj.values()
        elif isinstance(obj, list):
            children = obj
        else:
            if isinstance(obj, int) and not isinstance(obj, bool) and not -_INT_LIMIT < obj < _INT_LIMIT:
                raise past_limit(text, where, f"an integer of more than {MAX_INT_DIGITS} digits")
            continue
        if depth >= MAX_DEPTH:
            raise past_limit(text, where, f"nested more than {MAX_DEPTH} deep")
        stack.extend((c, depth + 1) for c in children if isinstance(c, kinds))


#: a JSON string (the unrolled form: fast on long strings), a bracket, or a number (group 1: a
#: float's fraction or exponent)
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]|-?[0-9]+((?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)')


def past_limit(text: str | bytes | None, where: Any, what: str | None = None) -> JsonLimitError:
    """The error for a document past a limit, naming the line and column where it first is (found by
    scanning ``text``; without text, or when the scan finds nothing, the file alone)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    found = _first_past_limit(text) if text else None
    if found is None:
        return JsonLimitError(f"{where}: {what or 'past the limits of a saved scan'} "
                              f"(at most {MAX_DEPTH} levels of nesting, {MAX_INT_DIGITS}-digit integers)")
    pos, why = found
    line = text.count("\n", 0, pos) + 1
    column = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return JsonLimitError(f"{where}:{line}:{column}: {why}")


def _first_past_limit(text: str) -> tuple[int, str] | None:
    depth = 0
    for m in _TOKEN.finditer(text):
        tok = m.group()
        c = tok[0]
        if c in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return m.start(), f"nested more than {MAX_DEPTH} deep"
        elif c in "]}":
            depth -= 1
        elif c != '"' and not m.group(1):  # an integer (a float's digits are read as a float)
            digits = len(tok.lstrip("-"))
            if digits > MAX_INT_DIGITS:
                return m.start(), f"a number with {digits} digits (at most {MAX_INT_DIGITS})"
    return None
