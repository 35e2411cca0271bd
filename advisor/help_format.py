"""How every ``--help`` of storadvise is laid out: click's plain format, never cut at 80 columns.

typer's rich panels squeeze option names and help into narrow columns and cut them with an
ellipsis on an 80-column terminal (``--sample-secon…``); click's plain format wraps instead.
Command lists show each command's whole first sentence, wrapped, not cut at the terminal width.
Every ``typer.Typer`` of the CLI is made with ``**HELP_FORMAT``; tests/core/test_cli_grammar.py
walks every ``--help`` at ``COLUMNS=80``.
"""

from __future__ import annotations

from typing import Any

from typer.core import TyperGroup

#: a first sentence longer than this is still cut (a docstring without a full stop)
SUMMARY_LIMIT = 200


def keep_examples_verbatim(text: str | None, only_examples: bool) -> str | None:
    """Mark paragraphs so that click prints them line for line (``\\b``): an example command is never
    re-wrapped into two lines that cannot be pasted. ``only_examples``: only the paragraphs that
    start with "Example" or "storadvise" (a command's description is wrapped as usual)."""
    if not text:
        return text
    paragraphs = []
    for p in text.split("\n\n"):
        first = p.strip()
        if not first.startswith("\b") and (not only_examples or first.startswith(("Example", "storadvise"))):
            p = "\b\n" + p
        paragraphs.append(p)
    return "\n\n".join(paragraphs)


class WholeSummaryGroup(TyperGroup):
    """A command group whose command list wraps each command's first sentence instead of cutting it,
    and whose commands print their examples line for line."""

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        cmd = super().get_command(ctx, cmd_name)
        if cmd is not None and not getattr(cmd, "_examples_verbatim", False):
            cmd.epilog = keep_examples_verbatim(cmd.epilog, only_examples=False)
            if not isinstance(cmd, TyperGroup):
                cmd.help = keep_examples_verbatim(cmd.help, only_examples=True)
            cmd._examples_verbatim = True
        return cmd

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        rows = []
        for name in self.list_commands(ctx):
            cmd = self.get_command(ctx, name)
            if cmd is not None and not cmd.hidden:
                rows.append((name, cmd.get_short_help_str(SUMMARY_LIMIT)))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


#: keyword arguments of every ``typer.Typer`` of the CLI
HELP_FORMAT: dict[str, Any] = {"rich_markup_mode": None, "cls": WholeSummaryGroup}
