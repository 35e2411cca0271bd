"""``--fail-on SEVERITY``: one option, one meaning, on every command that has it (scan, verify, audit,
history diff): exit 2 when a failed finding at least this severe remains (docs/cli.md)."""

from __future__ import annotations

from typing import Any

import typer

from advisor.util.errors import UsageError
from advisor.model.findings import SEVERITY_ORDER

#: the exit status of a command whose failures reach --fail-on
EXIT_FAILED = 2


def fail_on_option(default: str = "high", what: str = "a failed finding") -> Any:
    """The typer option; ``what``: what is counted (a failed finding, a finding still failing or new)."""
    return typer.Option(default, "--fail-on", help=f"Exit 2 when {what} is at least this severe: "
                                                   f"{', '.join(SEVERITY_ORDER)}.")


def check_fail_on(value: str, given_as: str = "--fail-on") -> str:
    if value not in SEVERITY_ORDER:
        raise UsageError(f"{given_as} must be one of {', '.join(SEVERITY_ORDER)}, got {value!r}")
    return value
