"""Old option names kept working after a rename (docs/cli.md: "renamed options keep their old names").

A renamed option is declared twice on its command: the new name with its help text, and the old
name(s) as a second parameter with ``hidden=True`` (absent from ``--help``, accepted on the command
line). :func:`one_of_aliases` merges the two values.
"""

from __future__ import annotations

from typing import Any, TypeVar

from advisor.util.errors import UsageError

T = TypeVar("T")

#: the help text of a hidden alias (never shown; kept for completion and introspection)
ALIAS_HELP = "Old name of {new}, kept working."


def one_of_aliases(new: T, old: T, new_name: str, old_name: str, default: Any = None) -> T:
    """The value given under the new name or under the old one; both given and different is an error.

    ``default`` is the value a parameter has when it was not given on the command line.
    """
    if old == default or old is None:
        return new
    if new != default and new is not None and new != old:
        raise UsageError(f"{old_name} is the old name of {new_name}: give one of them")
    return old
