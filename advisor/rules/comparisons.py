"""The comparison operators of check rules and conditions: ``observed <operator> expected``."""

from __future__ import annotations

import math
from typing import Any

from advisor.rules.fact_paths import MISSING
from advisor.rules.rule_regex import MatchBudget, regex_search


def _number(v: Any) -> float | None:
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, str):
        try:
            f = float(v.strip())
        except ValueError:
            return None
        return f if math.isfinite(f) else None
    return None


def _equal(a: Any, b: Any) -> bool:
    na, nb = _number(a), _number(b)
    if na is not None and nb is not None:  # booleans compare as 0/1
        return na == nb
    if isinstance(a, str) and isinstance(b, str):
        return " ".join(a.split()).lower() == " ".join(b.split()).lower()
    return a == b


def compare(operator: str, observed: Any, expected: Any, budget: MatchBudget | None = None) -> bool:
    """Evaluate ``observed <operator> expected``; raises ValueError when not comparable (a regex:
    also when RE2 refuses it or the match is past its budget, advisor.rules.rule_regex; ``budget``:
    the steps the rule's matches on this host have left)."""
    if operator == "present":
        return observed is not MISSING and observed is not None
    if operator == "absent":
        return observed is MISSING or observed is None
    if operator == "eq":
        return _equal(observed, expected)
    if operator == "ne":
        return not _equal(observed, expected)
    if operator in ("lt", "le", "gt", "ge"):
        a, b = _number(observed), _number(expected)
        if a is None or b is None:
            raise ValueError(f"cannot compare {observed!r} {operator} {expected!r} as numbers")
        return {"lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b}[operator]
    if operator in ("in", "not_in"):
        if not isinstance(expected, (list, tuple, set)):
            raise ValueError(f"'{operator}' needs a list, got {expected!r}")
        found = any(_equal(observed, e) for e in expected)
        return found if operator == "in" else not found
    if operator == "regex":
        return regex_search(expected, str(observed), budget)
    if operator == "between":
        if not isinstance(expected, (list, tuple)) or len(expected) != 2:
            raise ValueError(f"'between' needs [low, high], got {expected!r}")
        a, lo, hi = _number(observed), _number(expected[0]), _number(expected[1])
        if a is None or lo is None or hi is None:
            raise ValueError(f"cannot compare {observed!r} between {expected!r} as numbers")
        return lo <= a <= hi
    raise ValueError(f"unknown operator {operator!r}")


# --------------------------------------------------------------------------- as people read them

#: how each operator reads in a report: ``!= 0``, ``< 75 %``, ``one of fq, fq_codel``
OPERATOR_WORDS = {"ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_BINARY = ((1 << 40, "TiB"), (1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB"))


def _number_text(v: float | int) -> str:
    """A number as written, never in exponent form (a user copies it)."""
    if isinstance(v, float):
        if v.is_integer() and abs(v) < 1e15:
            return str(int(v))
        text = f"{v:.6g}"
        return text if "e" not in text else f"{v:f}".rstrip("0").rstrip(".")
    return str(v)


def value_text(value: Any, unit: str | None = None) -> str:
    """A value as a report shows it: numbers whole (``bytes`` also in binary units:
    ``1073741824 bytes (1 GiB)``), booleans ``true``/``false``, lists comma-separated, mappings
    ``key value`` pairs; ``unit`` after a number (``%`` without a space)."""
    if value is None or value is MISSING:
        return "unknown"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ", ".join(value_text(v, unit) for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k} {value_text(v, unit)}" for k, v in value.items())
    n = _number(value) if not isinstance(value, str) or unit else None
    if n is None:
        return str(value)
    text = _number_text(value if isinstance(value, (int, float)) else n)
    if not unit:
        return text
    if unit == "bytes":
        size = next(((n / m, u) for m, u in _BINARY if abs(n) >= m), None)
        return f"{text} bytes" + (f" ({_number_text(round(size[0], 2))} {size[1]})" if size else "")
    return f"{text}{unit}" if unit == "%" else f"{text} {unit}"


def comparison_text(operator: str | None, expected: Any, unit: str | None = None) -> str:
    """What a rule expects, as it states it: ``1`` (equal to), ``!= 0``, ``< 75%``, ``one of fq,
    fq_codel``, ``between 1 and 3``; an analytic rule's expectation (``operator`` ``analytic`` or None) as the
    rule wrote it."""
    if operator == "eq":
        return value_text(expected, unit)
    if operator in OPERATOR_WORDS:
        return f"{OPERATOR_WORDS[operator]} {value_text(expected, unit)}"
    if operator in ("in", "not_in") and isinstance(expected, (list, tuple, set)):
        items = ", ".join(value_text(e, unit) for e in expected)
        return ("one of " if operator == "in" else "none of ") + items
    if operator == "regex":
        return f"matching /{expected}/"
    if operator == "between" and isinstance(expected, (list, tuple)) and len(expected) == 2:
        return f"between {value_text(expected[0], unit)} and {value_text(expected[1], unit)}"
    if operator == "present":
        return "set"
    if operator == "absent":
        return "not set"
    return value_text(expected, unit if not isinstance(expected, str) else None)
