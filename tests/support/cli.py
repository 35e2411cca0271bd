"""storadvise as a user runs it: a process of this venv's Python running the console script's ``main``,
its output captured. The caller checks the exit code."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from os import PathLike
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

#: what the ``storadvise`` console script runs
STORADVISE = [sys.executable, "-c", "import sys; from advisor.cli.root import main; sys.exit(main())"]


def storadvise(*args: str | PathLike, cwd: str | PathLike = REPO, env: Mapping[str, str] | None = None,
               timeout: float = 600, input: str | None = None) -> subprocess.CompletedProcess[str]:
    """``storadvise ARGS`` in ``cwd`` (default: this checkout); ``env`` is the whole environment (default: this
    process's)."""
    return subprocess.run([*STORADVISE, *map(str, args)], capture_output=True, text=True, cwd=cwd,
                          env=None if env is None else dict(env), timeout=timeout, input=input)


def every_command():
    """(path, click command, context) for every command, groups included."""
    import typer.main

    from advisor.cli.root import app

    root = typer.main.get_command(app)
    todo = [(("storadvise",), root, None)]
    while todo:
        path, cmd, parent = todo.pop()
        ctx = cmd.make_context(path[-1], [], parent=parent, resilient_parsing=True)
        yield path, cmd, ctx
        for name, sub in sorted(getattr(cmd, "commands", {}).items()):
            todo.append((path + (name,), sub, ctx))


def next_lines(stdout: str) -> dict[str, str]:
    """``next, WHAT:`` followed by the indented command line."""
    lines = stdout.splitlines()
    return {lines[i][len("next, "):].rstrip(":"): lines[i + 1].strip()
            for i in range(len(lines) - 1) if lines[i].startswith("next, ")}
