"""``storadvise collect --export DIR``: every probe's output as a file a person can read and attach to a
ticket, one per host and probe, beside (or instead of) the content-addressed capture ``--out-dir``
writes for ``scan --from``.

::

    DIR/README.txt                 what is here and how to read it again
    DIR/<host>/<probe>.txt         the probe's output, as ``storadvise probe parse <probe> FILE`` reads it
    DIR/<host>/<probe>.stderr.txt  what it printed on stderr, when anything
    DIR/<host>/probes.txt          per probe: exit status, seconds, cut or not
    DIR/<host>/unreachable.txt     why the host could not be reached (then nothing else)

Files are the owner's only (0600 in 0700 directories): outputs name firewall rules, addresses and
paths. Host names are checked as path components before anything is written.
"""

from __future__ import annotations

from pathlib import Path

from advisor.util.atomic_files import write_atomic
from advisor.util.path_component import path_component
from advisor.transport.base import Command, CommandResult

README = """\
Outputs collected by storadvise (collect --export), one file per host and probe.

<host>/<probe>.txt         the probe's output: storadvise probe parse <probe> <host>/<probe>.txt
<host>/<probe>.stderr.txt  its stderr, when it printed any
<host>/probes.txt          per probe: exit status, seconds, cut (longer than storadvise keeps) or not
<host>/unreachable.txt     why the host could not be reached

A probe's output is its script's stdout: several reads framed by '@@section NAME' lines.
"""


def _host_dir(directory: Path, host: str) -> Path:
    d = directory / path_component(host, "host name")
    d.mkdir(mode=0o700, parents=True, exist_ok=True)
    return d


def start_export(directory: Path) -> None:
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    write_atomic(directory / "README.txt", README, mode=0o600)


def export_host(directory: Path, host: str, commands: list[Command], results: list[CommandResult]) -> Path:
    """One host's outputs (the collector's sink: commands and results pair by key)."""
    d = _host_dir(directory, host)
    lines = []
    for r in results:
        name = path_component(r.key, "probe name")
        write_atomic(d / f"{name}.txt", r.stdout, mode=0o600)
        if r.stderr.strip():
            write_atomic(d / f"{name}.stderr.txt", r.stderr, mode=0o600)
        status = "timed out" if r.timed_out else f"exit {r.rc}" if r.rc is not None else "no exit status"
        lines.append(f"{r.key}\t{status}\t{r.duration_s:.2f} s" + ("\tcut" if r.truncated else ""))
    write_atomic(d / "probes.txt", "\n".join(lines) + "\n", mode=0o600)
    return d


def export_unreachable(directory: Path, host: str, errors: list[str]) -> None:
    write_atomic(_host_dir(directory, host) / "unreachable.txt", "\n".join(errors or ["unreachable"]) + "\n",
                 mode=0o600)
