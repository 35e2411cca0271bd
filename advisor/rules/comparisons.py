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
