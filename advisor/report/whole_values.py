"""Tables that never split a value a user copies (a setting name, a number, a rule id, a timestamp, a
host), whatever the width: on a terminal, in a pipe or a log at 80 columns.

The columns that hold such values are ``whole``: each is as wide as its widest value, never wrapped;
the other columns fold. When the whole columns do not fit beside each other, the table becomes one
record per block, a field per line (``name: value``), each line printed as it is (a value longer than
the terminal runs on; the program never breaks it). Used by ``plan``, ``verify``, ``history diff`` and
``history list`` (tests/core/test_whole_values.py reads them back at 80 columns).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.console import Console
from rich.table import Table
from rich.text import Text

#: the narrowest a folding column is drawn (below this a word of prose folds every few letters)
FOLD_MIN = 10


@dataclass(frozen=True)
class Column:
    name: str
    #: holds values users copy: never split (False: prose that may fold)
    whole: bool = True


def _width(cell: str) -> int:
    return Text.from_markup(cell).cell_len


def table_fits(columns: Sequence[Column], rows: Sequence[Sequence[str]], width: int) -> bool:
    """Whether a boxed table with every whole column at its widest value fits ``width``."""
    need = len(columns) + 1  # the vertical rules
    for i, col in enumerate(columns):
        widest = max([_width(col.name)] + [_width(r[i]) for r in rows])
        need += 2 + (widest if col.whole else min(widest, max(FOLD_MIN, _width(col.name))))
    return need <= width


def print_whole_table(console: Console, columns: Sequence[Column], rows: Sequence[Sequence[str]],
                      title: str | None = None) -> None:
    """``rows`` (cells as console markup) as a table when it fits, else one record per block."""
    if table_fits(columns, rows, console.width):
        t = Table(header_style="bold", title=title)
        for i, col in enumerate(columns):
            if col.whole:
                widest = max([_width(col.name)] + [_width(r[i]) for r in rows])
                t.add_column(col.name, no_wrap=True, min_width=widest)
            else:
                t.add_column(col.name, overflow="fold", min_width=min(FOLD_MIN, _width(col.name)))
        for r in rows:
            t.add_row(*r)
        console.print(t)
        return
    if title:
        console.print(Text(f"{Text.from_markup(title).plain} (one per block: the table is wider than "
                           f"{console.width} columns)", style="bold"), soft_wrap=True)
    label = max(_width(c.name) for c in columns)
    for n, r in enumerate(rows):
        if n:
            console.print()
        for i, col in enumerate(columns):
            lead = "- " if i == 0 else "  "
            line = Text(f"{lead}{col.name + ':':<{label + 1}} ")
            line.append_text(Text.from_markup(r[i]))
            console.print(line, soft_wrap=True, highlight=False)
