"""Captured outputs: write a host's results to a directory, and replay them offline.

Layout (the collector also writes ``DIR/manifest.json`` and ``DIR/hosts/<host>/host.json``)::

    DIR/hosts/<host>/<key>.out    stdout, UTF-8
    DIR/hosts/<host>/<key>.err    stderr, UTF-8
    DIR/hosts/<host>/<key>.json   {"key", "rc", "duration_s", "timed_out", "script", "sudo"}

A key is used as the file name as is when it is made of letters, digits and ``. _ - + @ :``
(``network.sysctl``); any other key is percent-encoded (``/`` becomes ``%2F``), so a key can
never name a path outside the host's directory.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from urllib.parse import quote

from advisor.transport.base import Command, CommandResult, HostUnreachable, Transport

_SAFE_KEY = re.compile(r"^[A-Za-z0-9_+@:-][A-Za-z0-9._+@:-]*$")


def key_filename(key: str) -> str:
    """The file-name stem for a command key (safe keys unchanged, others percent-encoded)."""
    if _SAFE_KEY.match(key) and len(key) <= 200:
        return key
    stem = quote(key, safe="")
    if stem.startswith("."):
        stem = "%2E" + stem[1:]
    return stem or "%00empty"


def host_dir(directory: str | os.PathLike, host_name: str) -> Path:
    return Path(directory) / "hosts" / key_filename(host_name)


def _write_text(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(text.encode("utf-8", "surrogateescape"))
    os.replace(tmp, path)


def write_capture(
    directory: str | os.PathLike,
    host_name: str,
    commands: list[Command],
    results: list[CommandResult],
) -> Path:
    """Write each result of ``host_name`` under ``DIR/hosts/<host>/``; returns that directory.

    ``commands`` and ``results`` pair by key (a result without its command is written with an
    empty script).
    """
    d = host_dir(directory, host_name)
    d.mkdir(parents=True, exist_ok=True)
    scripts = {c.key: c for c in commands}
    for r in results:
        stem = key_filename(r.key)
        cmd = scripts.get(r.key)
        _write_text(d / f"{stem}.out", r.stdout)
        _write_text(d / f"{stem}.err", r.stderr)
        meta = {
            "key": r.key,
            "rc": r.rc,
            "duration_s": r.duration_s,
            "timed_out": r.timed_out,
            "script": cmd.script if cmd else "",
            "sudo": cmd.sudo if cmd else False,
        }
        _write_text(d / f"{stem}.json", json.dumps(meta, indent=2, sort_keys=True) + "\n")
    return d


class CapturedTransport(Transport):
    """Replays ``DIR/hosts/<host>/``: each command's captured result, looked up by key."""

    is_local = False

    def __init__(self, directory: str | os.PathLike, host_name: str):
        self.directory = Path(directory)
        self.host_name = host_name
        self.host_dir = host_dir(self.directory, host_name)

    def _one(self, cmd: Command) -> CommandResult:
        stem = key_filename(cmd.key)
        meta_path = self.host_dir / f"{stem}.json"
        out_path = self.host_dir / f"{stem}.out"
        err_path = self.host_dir / f"{stem}.err"
        if not meta_path.is_file() and not out_path.is_file():
            return CommandResult(key=cmd.key, rc=None, stderr="not captured")
        meta: dict = {}
        if meta_path.is_file():
            try:
                meta = json.loads(meta_path.read_text(encoding="utf-8"))
                if not isinstance(meta, dict):
                    raise ValueError("not a JSON object")
            except (ValueError, OSError) as e:
                return CommandResult(key=cmd.key, rc=None, stderr=f"captured metadata {meta_path} unreadable: {e}")

        def read(p: Path) -> str:
            try:
                return p.read_bytes().decode("utf-8", "replace")
            except FileNotFoundError:
                return ""

        rc = meta.get("rc", 0 if not meta_path.is_file() else None)
        return CommandResult(
            key=cmd.key,
            rc=rc if isinstance(rc, int) else None,
            stdout=read(out_path),
            stderr=read(err_path),
            duration_s=float(meta.get("duration_s") or 0.0),
            timed_out=bool(meta.get("timed_out", False)),
        )

    def run_batch(self, commands: list[Command]) -> list[CommandResult]:
        if not self.host_dir.is_dir():
            raise HostUnreachable(f"{self.host_name}: no captured outputs in {self.directory}")
        return [self._one(c) for c in commands]
