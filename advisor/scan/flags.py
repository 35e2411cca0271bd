"""The fields of ``advisor.scan.pipeline.ScanOptions`` as typer flags, generated once for every command.

``@scan_options()`` on a command function whose last parameter is ``options: ScanOptions`` adds
one flag per ``ScanOptions`` field that carries ``flag(...)`` metadata (same name, default and help
everywhere) and calls the function with the flags gathered into one ``ScanOptions``. Adding a
field to ``ScanOptions`` adds the flag to every such command (see advisor/scan/pipeline.py).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from pathlib import Path
from typing import Any, Callable, Optional

import typer

from advisor.scan.options import ScanOptions

#: the typer annotation of a field whose dataclass type typer cannot take as is
_CLI_TYPES: dict[str, Any] = {"profiles": list[str], "roles": list[str], "from_capture": Optional[Path],
                              "hosts": Optional[str], "probes": Optional[str], "skip_probes": Optional[str]}
#: repeatable flags: typer gives a list, the frozen ScanOptions keeps a tuple
_LIST_FIELDS = ("profiles", "roles")
#: ``--rules DIR`` (repeatable): site-local rule directories
_CLI_TYPES["rules_dirs"] = list[Path]
_LIST_FIELDS += ("rules_dirs",)


def _flag_fields(exclude: tuple[str, ...]) -> list[dataclasses.Field]:
    return [f for f in dataclasses.fields(ScanOptions) if f.metadata.get("cli") and f.name not in exclude]


def _parameter(f: dataclasses.Field, hints: dict[str, Any], help_overrides: dict[str, str]) -> inspect.Parameter:
    cli = f.metadata["cli"]
    annotation = _CLI_TYPES.get(f.name, hints[f.name])
    default = f.default
    if f.name in _LIST_FIELDS:
        default = []
    extra = {k: cli[k] for k in ("min", "max") if cli.get(k) is not None}
    option = typer.Option(default, *cli["decls"], help=help_overrides.get(f.name, cli["help"]), **extra)
    return inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=annotation)


def options_from_flags(values: dict[str, Any]) -> ScanOptions:
    values = {**values, **{k: tuple(values[k] or ()) for k in _LIST_FIELDS if k in values}}
    return ScanOptions(**values)


def scan_options(exclude: tuple[str, ...] = (), help: dict[str, str] | None = None) -> Callable:  # noqa: A002
    """Decorate a typer command taking ``options: ScanOptions`` (see the module doc).

    ``exclude``: fields the command does not offer as flags (they keep their default);
    ``help``: per-field help text where the command gives the option a different meaning.
    """
    hints = typing.get_type_hints(ScanOptions)
    fields = _flag_fields(exclude)
    names = [f.name for f in fields]

    def wrap(fn: Callable) -> Callable:
        sig = inspect.signature(fn)
        own = [p for p in sig.parameters.values() if p.name != "options"]
        clash = set(names) & {p.name for p in own}
        if clash:
            raise TypeError(f"{fn.__name__}: parameters {sorted(clash)} are scan options; take them from 'options'")
        fn_hints = typing.get_type_hints(fn)
        own = [p.replace(annotation=fn_hints.get(p.name, p.annotation)) for p in own]
        added = [_parameter(f, hints, help or {}) for f in fields]

        @functools.wraps(fn)
        def command(**kwargs: Any) -> Any:
            values = {n: kwargs.pop(n) for n in names}
            return fn(**kwargs, options=options_from_flags(values))

        command.__signature__ = sig.replace(parameters=own + added)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in own + added}
        del command.__wrapped__  # typer must read the new signature, not the wrapped one
        return command

    return wrap
