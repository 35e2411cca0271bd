"""Shared plumbing of the lab's CLI emulators (stdlib only: they start on every SSH command).

storadvise lab emulator — not IBM software.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

HEADER_COMMENT = "# storadvise lab emulator — not IBM software"


def this_host() -> str:
    return os.environ.get("STORADVISE_LAB_HOST") or socket.gethostname()


@contextmanager
def locked(state_dir: Path) -> Iterator[None]:
    state_dir.mkdir(parents=True, exist_ok=True)
    with open(state_dir / ".lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def read_json(p: Path, default: Any = None) -> Any:
    try:
        return json.loads(p.read_text())
    except FileNotFoundError:
        return default


def write_json(p: Path, data: Any) -> None:
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(data, indent=2))
    os.replace(tmp, p)


def log_invocation(state_dir: Path, tool: str, argv: list[str], rc: int) -> None:
    """One JSON line per invocation: tests assert what commands the lab received."""
    rec = {"time": time.time(), "host": this_host(), "tool": tool, "argv": argv, "rc": rc}
    state_dir.mkdir(parents=True, exist_ok=True)
    with open(state_dir / "invocations.jsonl", "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.write(json.dumps(rec) + "\n")


def read_invocations(state_dir: Path) -> list[dict]:
    try:
        return [json.loads(line) for line in (Path(state_dir) / "invocations.jsonl").read_text().splitlines() if line]
    except FileNotFoundError:
        return []


def write_wrapper(path: Path, python: str, package_root: str, module: str, tool: str, state_dir: Path, note: str,
                  vendor: str | None = None, isolated: bool = False) -> None:
    """A tiny executable that runs ``module.main(tool, argv, state_dir)`` with the given python; its header
    names whose software it is not (``vendor``; default IBM's, HEADER_COMMENT). ``isolated``: python ``-I -S``
    (no site-packages, no environment; one word, ``-IS``, since Linux passes a shebang's arguments as one): a
    stdlib-only emulator a probe runs several times starts in half the time."""
    path.parent.mkdir(parents=True, exist_ok=True)
    header = HEADER_COMMENT if vendor is None else f"# storadvise lab emulator — not {vendor} software"
    path.write_text(
        f"#!{python}{' -IS' if isolated else ''}\n"
        f"{header}\n"
        f"# {note}\n"
        "import sys\n"
        f"sys.path.insert(0, {package_root!r})\n"
        f"from {module} import main\n"
        f"sys.exit(main({tool!r}, sys.argv[1:], {str(state_dir)!r}))\n"
    )
    path.chmod(0o755)
