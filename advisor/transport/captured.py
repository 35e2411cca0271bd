"""Captured outputs: write a host's results to a directory, and replay them offline.

Layout written by ``storadvise collect`` (capture format 2; the collector also writes
``DIR/manifest.json`` and ``DIR/hosts/<host>/host.json``)::

    DIR/objects/<2 hex>/<62 hex>        every distinct text once, named by its SHA-256
                                        (advisor.transport.capture_objects)
    DIR/hosts/<host>/outputs.json       {"capture_format": 2, "outputs": {KEY: {"rc", "duration_s",
                                        "timed_out", "sudo", "script", "stdout", "stderr"}}}
                                        (script, stdout and stderr are object ids)

Also read (format 1, and outputs gathered by other means, e.g. by hand)::

    DIR/hosts/<host>/<key>.out    stdout, UTF-8 (alone: replayed as exit status 0)
    DIR/hosts/<host>/<key>.err    stderr, UTF-8
    DIR/hosts/<host>/<key>.json   {"key", "rc", "duration_s", "timed_out", "script", "sudo"}

Every file is read as live output is (advisor.transport.capture_files): regular files only, no
symlink below the capture root, at most 8 MiB per stream (more is marked truncated), 10 s per file.

A key is used as the file name as is when it is made of letters, digits and ``. _ - + @ :``
(``network.sysctl``); any other key is percent-encoded (``/`` becomes ``%2F``), so a key can
never name a path outside the host's directory.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from advisor.util.path_component import path_component
from advisor.util.shipped_code import module_utils
from advisor.transport.base import Command, CommandResult, HostUnreachable, Transport
from advisor.transport.capture_files import read_captured
from advisor.transport.capture_objects import CaptureObjectError, CaptureObjects
from advisor.util.trusted_models import trusted

#: the layout is written by the shipped module_utils (also the collect playbook's module, without storadvise)
layout = module_utils("storadvise_capture_layout")
#: the per-host index of a format-2 capture
INDEX = layout.INDEX
INDEX_FORMAT = layout.CAPTURE_FORMAT
#: the most bytes of a per-host index read (it names objects; the texts are capped separately)
MAX_INDEX_BYTES = 64 << 20

#: the file-name stem for a command key (safe keys unchanged, others percent-encoded)
key_filename = layout.key_filename


def host_dir(directory: str | os.PathLike, host_name: str) -> Path:
    return Path(directory) / "hosts" / key_filename(host_name)


def write_capture(
    directory: str | os.PathLike,
    host_name: str,
    commands: list[Command],
    results: list[CommandResult],
    objects: CaptureObjects | None = None,
) -> Path:
    """Write the results of ``host_name``: texts into ``DIR/objects/`` (each distinct text once),
    the index into ``DIR/hosts/<host>/outputs.json``; returns the host's directory.

    ``commands`` and ``results`` pair by key (a result without its command is written with an
    empty script).
    """
    objects = objects or CaptureObjects(directory)
    path_component(host_name, "host name")
    return Path(layout.write_host_outputs(
        directory, host_name, [{"key": c.key, "script": c.script, "sudo": c.sudo} for c in commands],
        [r.model_dump() for r in results], put=objects.put))


def _read(root: Path, parts: tuple[str, ...], limit: int | None = None) -> tuple[str | None, bool]:
    """A captured file's text (undecodable bytes replaced; None when it is absent) and whether it
    was cut at the limit; a refused file and other OSErrors are raised."""
    got = read_captured(root, parts) if limit is None else read_captured(root, parts, limit=limit)
    if got is None:
        return None, False
    return got.data.decode("utf-8", "replace"), got.truncated


class CapturedTransport(Transport):
    """Replays ``DIR/hosts/<host>/``: each command's captured result, looked up by key."""

    is_local = False
    replays_outputs = True

    def __init__(self, directory: str | os.PathLike, host_name: str, objects: CaptureObjects | None = None):
        self.directory = Path(directory)
        self.host_name = host_name
        self.host_dir = host_dir(self.directory, host_name)
        #: shared by the transports of one capture, so every host naming a text gets one string
        self.objects = objects or CaptureObjects(self.directory)

    def _one(self, cmd: Command) -> CommandResult:
        stem = key_filename(cmd.key)
        meta_path = self.host_dir / (stem + ".json")
        here = ("hosts", self.host_dir.name)
        try:
            meta_text, _cut = _read(self.directory, (*here, stem + ".json"), limit=MAX_INDEX_BYTES)
            stdout, out_cut = _read(self.directory, (*here, stem + ".out"))
            stderr, err_cut = _read(self.directory, (*here, stem + ".err"))
        except OSError as e:
            return CommandResult(key=cmd.key, rc=None, stderr=f"captured output of {cmd.key} unreadable: {e}")
        if meta_text is None and stdout is None:
            return CommandResult(key=cmd.key, rc=None, stderr="not captured")
        meta: dict = {}
        if meta_text is not None:
            try:
                meta = json.loads(meta_text)
                if not isinstance(meta, dict):
                    raise ValueError("not a JSON object")
            except ValueError as e:
                return CommandResult(key=cmd.key, rc=None, stderr=f"captured metadata {meta_path} unreadable: {e}")
        rc = meta.get("rc", 0 if meta_text is None else None)
        try:
            duration = float(meta.get("duration_s") or 0.0)
        except (TypeError, ValueError):
            duration = 0.0
        return CommandResult.model_construct(
            key=cmd.key,
            rc=rc if isinstance(rc, int) and not isinstance(rc, bool) else None,
            stdout=stdout or "",
            stderr=stderr or "",
            duration_s=duration,
            timed_out=bool(meta.get("timed_out", False)),
            truncated=out_cut or err_cut or meta.get("truncated") is True,
        )

    def _indexed(self, cmd: Command, outputs: dict) -> CommandResult:
        entry = outputs.get(cmd.key)
        if entry is None:
            return CommandResult(key=cmd.key, rc=None, stderr="not captured")
        if not isinstance(entry, dict):
            return CommandResult(key=cmd.key, rc=None, stderr=f"{self.host_dir / INDEX}: output {cmd.key!r}: not a JSON object")
        try:
            stdout, out_cut = self.objects.read(entry.get("stdout"))
            stderr, err_cut = self.objects.read(entry.get("stderr"))
        except CaptureObjectError as exc:
            return CommandResult(key=cmd.key, rc=None, stderr=f"{self.host_dir / INDEX}: output {cmd.key!r}: {exc}")
        rc = entry.get("rc")
        duration = entry.get("duration_s")
        return trusted(CommandResult, {  # every field set here: no second validation per host and probe
            "key": cmd.key,
            "rc": rc if isinstance(rc, int) and not isinstance(rc, bool) else None,
            "stdout": stdout,
            "stderr": stderr,
            "duration_s": float(duration) if isinstance(duration, (int, float)) and not isinstance(duration, bool) else 0.0,
            "timed_out": entry.get("timed_out") is True,
            "truncated": entry.get("truncated") is True or out_cut or err_cut,
        })

    def run_batch(self, commands: list[Command]) -> list[CommandResult]:
        try:
            index_text, _cut = _read(self.directory, ("hosts", self.host_dir.name, INDEX), limit=MAX_INDEX_BYTES)
        except OSError as exc:
            raise HostUnreachable(f"{self.host_name}: captured index unreadable: {exc.strerror or exc}") from None
        if index_text is not None:
            try:
                index = json.loads(index_text)
                outputs = index["outputs"] if isinstance(index, dict) else None
                if not isinstance(outputs, dict):
                    raise ValueError("no 'outputs' object")
            except (ValueError, KeyError) as exc:
                msg = f"{self.host_dir / INDEX}: not a capture index: {str(exc).splitlines()[0] if str(exc) else exc!r}"
                return [CommandResult(key=c.key, rc=None, stderr=msg) for c in commands]
            return [self._indexed(c, outputs) for c in commands]
        if not self.host_dir.is_dir():
            raise HostUnreachable(f"{self.host_name}: no captured outputs in {self.directory}")
        return [self._one(c) for c in commands]
