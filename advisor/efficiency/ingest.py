"""Read accounting files of any supported format as one stream of records and issues.

``--format auto`` looks at the file name and its first non-comment bytes:
``.xml`` or ``<`` -> CMSSW FJR; ``[`` -> ``condor_history -json``; ``{`` -> ``-jsonl`` when the
first line is a whole JSON object, else concatenated/pretty ads (``condor_q -json`` without
the array); a header with ``|`` and ``JobID`` -> ``sacct -P``/``-p``; adjacent single
``Attr = value`` lines -> ``condor_history -l``; a header of ClassAd attribute names ->
``condor_history -af:h``.
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from advisor.efficiency import fjr, htcondor_json, htcondor_jsonl, htcondor_summary, htcondor_text, slurm
from advisor.efficiency.records import EfficiencyInputError, JobRecord, ParseIssue, RowError

FORMATS = ("auto", "htcondor", "slurm", "fjr")
#: what --format auto recognises, as a file it refuses names them
ACCEPTED = ("HTCondor condor_history/condor_q -json, -jsonl, -l or -af:h; Slurm sacct -P or -p (with its "
            "JobID header); a CMSSW framework job report (XML)")


def _peek(f: IO[bytes]) -> tuple[bytes, int]:
    """The first meaningful line and its 1-based number (skipping blank and ``#`` lines)."""
    head = f.peek(65536)[:65536] if hasattr(f, "peek") else b""
    lineno = 0
    for line in head.split(b"\n"):
        lineno += 1
        s = line.strip()
        if s and not s.startswith(b"#"):
            return s, lineno
    return b"", lineno


def detect_format(path: str, f: IO[bytes]) -> str:
    """One of ``fjr``, ``htcondor-json``, ``htcondor-jsonl``, ``htcondor-long``, ``htcondor-af``, ``slurm``."""
    first, _ = _peek(f)
    if path.lower().endswith(".xml") or first.startswith(b"<"):
        return "fjr"
    if first.startswith(b"["):
        return "htcondor-json"
    if first.startswith(b"{"):
        try:
            json.loads(first)
        except ValueError:
            return "htcondor-json"
        return "htcondor-jsonl"
    if b"|" in first and b"JobID" in first:
        return "slurm"
    head = f.peek(65536)[:65536] if hasattr(f, "peek") else b""
    if htcondor_text.looks_like_long_form(head.split(b"\n")[:200]):
        return "htcondor-long"
    if not first:
        raise EfficiencyInputError(path, "empty file: no job records")
    if htcondor_text.looks_like_autoformat(first):
        return "htcondor-af"
    raise EfficiencyInputError(path, f"not a job accounting format storadvise reads (accepted: {ACCEPTED})",
                               line=_peek(f)[1])


def _htcondor_kind(path: str, f: IO[bytes]) -> str:
    try:
        kind = detect_format(path, f)
    except EfficiencyInputError:
        if not _peek(f)[0]:
            raise
        return "htcondor-af"  # --format htcondor: its -af reader says what is wrong with the header
    if kind in ("fjr", "slurm"):
        raise EfficiencyInputError(path, f"--format htcondor, but this looks like {kind} output", line=_peek(f)[1])
    return kind


def iter_file(path: str, fmt: str = "auto") -> Iterator[JobRecord | ParseIssue]:
    """Records and per-row issues of one file; EfficiencyInputError if it cannot be read."""
    if fmt not in FORMATS:
        raise EfficiencyInputError(path, f"unknown format {fmt!r} (use {', '.join(FORMATS)})")
    p = Path(path)
    try:
        raw = open(p, "rb")
    except IsADirectoryError:
        raise EfficiencyInputError(path, "is a directory, not an accounting file") from None
    except OSError as e:
        raise EfficiencyInputError(path, e.strerror or "cannot be read") from None
    with raw:
        f = io.BufferedReader(raw, buffer_size=1 << 20) if not hasattr(raw, "peek") else raw
        if fmt == "auto":
            kind = detect_format(path, f)
        elif fmt == "htcondor":
            kind = _htcondor_kind(path, f)
        else:
            kind = fmt
        if kind == "fjr":
            try:
                report = fjr.parse_fjr(f, path)
                yield fjr.record_from_fjr(report, path)
            except RowError as e:
                yield ParseIssue(path, _line_of(str(e)), str(e))
        elif kind == "slurm":
            yield from slurm.iter_sacct(f, path)
        elif kind == "htcondor-jsonl":
            yield from htcondor_jsonl.iter_jsonl(f, path)
        elif kind == "htcondor-json":
            yield from htcondor_json.iter_json_stream(f, path)
        elif kind == "htcondor-long":
            yield from htcondor_text.iter_long(f, path)
        else:
            yield from htcondor_text.iter_autoformat(f, path)


def _line_of(msg: str) -> int:
    import re

    m = re.search(r"line (\d+)", msg)
    return int(m.group(1)) if m else 1


class IssueLog:
    """Per-row problems: all counted, the first ``keep`` kept with file and line."""

    def __init__(self, keep: int = 1000):
        self.keep = keep
        self.count = 0
        self.items: list[ParseIssue] = []
        self.by_file: dict[str, int] = {}

    def add(self, issue: ParseIssue) -> None:
        self.count += 1
        self.by_file[issue.file] = self.by_file.get(issue.file, 0) + 1
        if len(self.items) < self.keep:
            self.items.append(issue)


def ingest_into(paths: list[str], fmt: str, summary: Any, issues: IssueLog,
                on_record: Callable[[JobRecord], None] | None = None) -> None:
    """Feed all files into ``summary``; ``on_record`` sees every record when given.

    Without ``on_record``, ``-jsonl`` files take the summary-only hot path
    (:func:`advisor.efficiency.htcondor_summary.summarize_jsonl`)."""
    for path in paths:
        if on_record is None:
            kind = _kind_of(path, fmt)
            if kind == "htcondor-jsonl":
                with open(path, "rb", buffering=1 << 20) as f:
                    htcondor_summary.summarize_jsonl(f, path, summary, issues.add)
                continue
        for item in iter_file(path, fmt):
            if isinstance(item, ParseIssue):
                issues.add(item)
            else:
                summary.add(item)
                if on_record is not None:
                    on_record(item)


def _kind_of(path: str, fmt: str) -> str:
    if fmt not in ("auto", "htcondor"):
        return fmt
    try:
        with open(path, "rb") as f:
            return detect_format(path, f) if fmt == "auto" else _htcondor_kind(path, f)  # type: ignore[arg-type]
    except OSError as e:
        raise EfficiencyInputError(path, e.strerror or "cannot be read") from None


def iter_records(paths: list[str], fmt: str, issues: IssueLog) -> Iterator[JobRecord]:
    """All records of all files, in order; issues go to ``issues``."""
    for path in paths:
        for item in iter_file(path, fmt):
            if isinstance(item, ParseIssue):
                issues.add(item)
            else:
                yield item
