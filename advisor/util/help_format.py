"""How every ``--help`` of storadvise is laid out: click's plain format, never cut at 80 columns.

typer's rich panels squeeze option names and help into narrow columns and cut them with an
ellipsis on an 80-column terminal (``--sample-secon…``); click's plain format wraps instead.
Command lists show each command's whole first sentence, wrapped, not cut at the terminal width.
Every ``typer.Typer`` of the CLI is made with ``**HELP_FORMAT``; tests/core/test_cli_grammar.py
walks every ``--help`` at ``COLUMNS=80``.
"""

from __future__ import annotations

import copy
from typing import Any

from typer.core import TyperGroup

#: a first sentence longer than this is still cut (a docstring without a full stop)
SUMMARY_LIMIT = 200

#: the placeholder of an option's value, by its long name: one word per meaning on every command
#: (an option not named here gets FILE for a path, N for an integer, NUMBER for a number, else its own
#: name in capitals); never a Python type (``<list[str]>``, ``<int range>``)
PLACEHOLDERS = {
    "--site": "SITE", "--inventory": "FILE", "--role-map": "GROUP=ROLE", "--hosts": "HOSTS", "--host": "HOST",
    "--output": "FILE", "--out-dir": "DIR", "--fail-on": "SEVERITY", "--min-severity": "SEVERITY",
    "--profile": "PROFILE", "--role": "ROLE", "--parallel": "N", "--sample-seconds": "SECONDS", "--from": "DIR",
    "--connect-timeout": "SECONDS", "--rules": "DIR", "--rules-dir": "DIR", "--probes": "PROBES",
    "--skip-probes": "PROBES", "--history": "FILE", "--html": "FILE", "--junit": "FILE", "--prometheus": "FILE",
    "--ndjson": "FILE", "--scan": "FILE", "--before": "FILE", "--plan": "DIR", "--plot": "FILE",
    "--ansible-vars": "FILE", "--from-ansible": "DIR", "--cache-simulation": "FILE", "--baseline": "FILE",
    "--job-report": "FILE", "--limit": "N", "--keep": "N", "--max-errors": "N", "--min-hosts": "N",
    "--max-hosts": "N", "--nodes": "N", "--slots": "N", "--seed": "N", "--run": "N", "--representatives": "N",
    "--older-than": "DATE", "--name": "NAME", "--scenario": "SCENARIO", "--user": "USER", "--src": "HOST",
    "--dst": "HOST", "--source": "SOURCE", "--clients": "N,N,...", "--protocol": "PROTOCOL", "--by": "KEY",
    "--group-by": "KEY", "--strategy": "STRATEGY", "--format": "FORMAT", "--capacity": "SIZE",
    "--policy": "POLICY", "--areas": "AREAS", "--type": "NAME=REGEX", "--year": "YEAR", "--rtt-ms": "MS",
    "--duration": "SECONDS", "--purge-interval": "SECONDS", "--readahead": "KIB", "--mb": "MIB",
    "--mb-per-cpu-second": "MB", "--mb-per-read": "MB", "--ops-per-second": "N", "--csv-delimiter": "CHAR",
    "--csv-time": "COLUMN", "--csv-file": "COLUMN", "--csv-size": "COLUMN", "--csv-server": "COLUMN",
    "--csv-bytes": "COLUMN", "--csv-op": "COLUMN", "--sample": "FRACTION", "--high-watermark": "FRACTION",
    "--low-watermark": "FRACTION", "--target": "FRACTION", "--tolerance": "FRACTION", "--io-drop": "FRACTION",
    "--failed-share": "FRACTION", "--max-error-share": "FRACTION", "--threshold": "FRACTION",
    "--efficiency": "FRACTION", "--cpu-per-wall": "FRACTION", "--knee-drop": "FRACTION",
    "--knee-efficiency": "FRACTION", "--cpu-factor": "FACTOR",
}
#: the placeholder of an argument, by its parameter name
ARGUMENT_PLACEHOLDERS = {"scan_json": "FILE", "file": "FILE", "files": "FILE", "logs": "FILE", "probe": "PROBE",
                         "scan_id": "ID", "a": "A", "b": "B", "host": "HOST"}


def _placeholder(param: Any) -> str:
    if param.param_type_name == "argument":
        return ARGUMENT_PLACEHOLDERS.get(param.name, param.name.upper())
    long = next((o for o in param.opts if o.startswith("--")), param.opts[0])
    if long in PLACEHOLDERS:
        return PLACEHOLDERS[long]
    kind = type(getattr(param, "type", None)).__name__.lower()
    if "path" in kind:
        return "DIR" if "dir" in long else "FILE"
    if "int" in kind:
        return "N"
    if "float" in kind:
        return "NUMBER"
    return long.lstrip("-").upper().replace("-", "_")


def _argument_usage(param: Any, placeholder: str) -> Any:
    def usage() -> str:
        name = placeholder + ("..." if param.nargs != 1 else "")
        return name if param.required else f"[{name}]"
    return usage


def plain_placeholders(cmd: Any) -> None:
    """Every value of ``cmd`` shown by a human placeholder (FILE, N, HOSTS: :data:`PLACEHOLDERS`):
    ``--hosts HOSTS``, ``report FILE``, never ``<str>`` or ``{scan_json}``."""
    for p in cmd.params:
        if getattr(p, "is_flag", False) or getattr(p, "count", False):
            continue
        if p.metavar is None:
            p.metavar = _placeholder(p)
        if p.param_type_name == "argument":
            # typer writes an argument as {name} in the usage line and adds its type in the list
            p._usage_display_name = _argument_usage(p, p.metavar.rstrip("."))
            p.display_type_rich = lambda ctx: None


def debug_option(ctx: Any) -> Any | None:
    """``--debug`` on every command (README: ``scan --debug``), as the root command declares it:
    not passed to the command, advisor.cli.root.main reads it wherever it is given and shows the traceback
    of an error."""
    root = ctx.find_root().command
    found = next((p for p in root.params if "--debug" in p.opts), None)
    if found is None:
        return None
    option = copy.copy(found)
    option.expose_value = False
    return option


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
                plain_placeholders(cmd)
                debug = None if any("--debug" in p.opts for p in cmd.params) else debug_option(ctx)
                if debug is not None:
                    cmd.params.append(debug)
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
