"""``${var}``: a profile variable in a rule pack (docs/rules.md), its one grammar and substitution.

A value that is one whole ``${var}`` takes the variable's value with its type (a number stays a
number, a list a list); inside a longer text ``${var}`` is replaced by the value as text. Rule
expectations (advisor.rules.specs), change templates (advisor.rules.change_templates), remediation texts
(advisor.rules.engine) and ``rules lint`` all read variables through this module.
"""

from __future__ import annotations

import re
from typing import Any

from advisor.util.errors import RuleDefinitionError

#: ``${name}``
PROFILE_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
#: splits a text into plain pieces and ``${name}`` pieces (odd indexes)
_SPLIT = re.compile(r"(\$\{[A-Za-z_][A-Za-z0-9_]*\})")


def whole_var(value: Any) -> str | None:
    """The name when ``value`` is a string that is exactly one ``${name}`` (blanks around allowed)."""
    if not isinstance(value, str):
        return None
    m = PROFILE_VAR.fullmatch(value.strip())
    return m.group(1) if m else None


def whole_vars_in(value: Any) -> set[str]:
    """Names of the whole-value variables of a value or of the items of a list."""
    if isinstance(value, (list, tuple)):
        return {n for v in value for n in whole_vars_in(v)}
    name = whole_var(value)
    return {name} if name else set()


def vars_in_text(text: Any) -> list[str]:
    """Every ``${name}`` in a text, in order."""
    return PROFILE_VAR.findall(text) if isinstance(text, str) else []


def lookup(name: str, variables: dict[str, Any], error: type[Exception] = RuleDefinitionError) -> Any:
    if name not in variables:
        raise error(f"profile variable {name!r} is not defined")
    return variables[name]


def substitute_vars(value: Any, variables: dict[str, Any]) -> Any:
    """Replace a whole-value ``${var}`` with the variable's value, recursively in lists."""
    name = whole_var(value)
    if name:
        return lookup(name, variables)
    if isinstance(value, list):
        return [substitute_vars(v, variables) for v in value]
    return value


def interpolate(text: str | None, variables: dict[str, Any]) -> str:
    """``${var}`` inside a sentence becomes the variable's value (unknown names stay as written)."""
    return PROFILE_VAR.sub(lambda m: str(variables.get(m.group(1), m.group(0))), text or "")


def split_vars(template: str) -> list[tuple[str, str | None]]:
    """A template as ``(text, None)`` plain pieces and ``("${name}", name)`` variable pieces."""
    return [(piece, piece[2:-1] if i % 2 else None) for i, piece in enumerate(_SPLIT.split(template))]
