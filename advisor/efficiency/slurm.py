"""Slurm ``sacct -P`` / ``-p`` output (man sacct: --parsable, --parsable2).

One job is an allocation row (``N``, ``N_i`` for an array task, ``N_[0-3]`` for a pending
array) followed by its step rows (``N.batch``, ``N.extern``, ``N.0``, ...). sacct prints a
job's rows together, so rows are grouped while the base id (the part before the first ``.``)
stays the same; a group is turned into one record when the next job starts (bounded memory).

* cores and wall time: the allocation row's ``AllocCPUS``/``NCPUS`` and ``Elapsed``
  (``ElapsedRaw`` when present); steps are used only when the allocation row is missing.
* CPU time: the allocation row's ``TotalCPU`` (sacct sums the steps into it) when non-zero,
  else the sum of the steps' ``TotalCPU`` (or ``UserCPU + SystemCPU``). The real sample has
  ``TotalCPU 00:00:00`` everywhere: such jobs get ``cpu_seconds = 0`` and are counted in the
  summary's ``zero_cpu`` so a site sees that its accounting lacks CPU time.
* times are ``[DD-[HH:]]MM:SS[.fff]``; ``State`` may hold spaces (``CANCELLED by 11111``);
  ``ExitCode`` is ``code:signal``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import IO

from advisor.efficiency.records import JobRecord, ParseIssue, RowError

_TIME = re.compile(r"(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+(?:\.\d+)?)")

_STATE = {
    "COMPLETED": "completed", "FAILED": "failed", "CANCELLED": "cancelled", "TIMEOUT": "timeout",
    "OUT_OF_MEMORY": "out_of_memory", "NODE_FAIL": "node_fail", "PREEMPTED": "preempted",
    "RUNNING": "running", "PENDING": "pending", "REQUEUED": "requeued", "SUSPENDED": "suspended",
    "BOOT_FAIL": "failed", "DEADLINE": "timeout", "REVOKED": "cancelled", "RESIZING": "running",
}


def parse_duration(text: str) -> float | None:
    """``[DD-[HH:]]MM:SS[.fff]`` -> seconds; empty, ``INVALID``, ``UNLIMITED`` -> None.

    >>> parse_duration("1-02:03:04"), parse_duration("26:27.692"), parse_duration("03:00:30")
    (93784.0, 1587.692, 10830.0)
    """
    t = text.strip()
    if not t or t in ("INVALID", "UNLIMITED", "Partition_Limit", "None"):
        return None
    m = _TIME.fullmatch(t)
    if not m:
        raise RowError(f"time {t!r} is not [DD-[HH:]]MM:SS[.fff]")
    d, h, mi, s = m.groups()
    if m.group(1) is not None and h is None:
        raise RowError(f"time {t!r} has days but no hours")
    return int(d or 0) * 86400 + int(h or 0) * 3600 + int(mi) * 60 + float(s)


def _int(text: str, what: str) -> int | None:
    t = text.strip()
    if not t:
        return None
    if not t.isdigit():
        raise RowError(f"{what} {t!r} is not a number")
    return int(t)


def _state(text: str) -> str:
    word = text.strip().split(" ", 1)[0].rstrip("+")
    return _STATE.get(word, "unknown" if not word else word.lower())


def expand_nodelist(text: str) -> list[str]:
    """``wn[01-03,07],gpfs1`` -> the host names (one bracket level, as Slurm prints them)."""
    out: list[str] = []
    for m in re.finditer(r"([^,\[]+)(?:\[([^\]]*)\])?([^,]*)", text.strip()):
        prefix, ranges, suffix = m.group(1), m.group(2), m.group(3)
        if not prefix and not ranges:
            continue
        if ranges is None:
            out.append(prefix + suffix)
            continue
        for part in ranges.split(","):
            a, _, b = part.partition("-")
            if b and a.isdigit() and b.isdigit():
                for i in range(int(a), int(b) + 1):
                    out.append(f"{prefix}{i:0{len(a)}d}{suffix}")
                    if len(out) > 100000:
                        raise RowError("node list expands to too many hosts")
            else:
                out.append(prefix + a + suffix)
    return out


class _Job:
    __slots__ = ("base", "alloc", "steps", "line")

    def __init__(self, base: str, line: int):
        self.base = base
        self.alloc: dict[str, str] | None = None
        self.steps: list[dict[str, str]] = []
        self.line = line


def _cpu_of(row: dict[str, str]) -> float | None:
    if "TotalCPU" in row:
        return parse_duration(row["TotalCPU"])
    if "UserCPU" in row or "SystemCPU" in row:
        u = parse_duration(row.get("UserCPU", ""))
        s = parse_duration(row.get("SystemCPU", ""))
        if u is None and s is None:
            return None
        return (u or 0.0) + (s or 0.0)
    return None


def _elapsed_of(row: dict[str, str]) -> float | None:
    if row.get("ElapsedRaw", "").strip():
        v = _int(row["ElapsedRaw"], "ElapsedRaw")
        return None if v is None else float(v)
    return parse_duration(row.get("Elapsed", ""))


def _cores_of(row: dict[str, str]) -> int | None:
    for k in ("AllocCPUS", "NCPUS"):
        if row.get(k, "").strip():
            return _int(row[k], k)
    return None


def _record(job: _Job, source: str) -> JobRecord:
    main = job.alloc
    if main is None:
        # no allocation row: the longest step stands in for it
        main = max(job.steps, key=lambda r: _elapsed_of(r) or 0.0)
    wall = _elapsed_of(main)
    cores = _cores_of(main)
    alloc_cpu = _cpu_of(job.alloc) if job.alloc is not None else None
    step_cpu = None
    for st in job.steps:
        c = _cpu_of(st)
        if c is not None:
            step_cpu = (step_cpu or 0.0) + c
    # the allocation row's TotalCPU is the sum over steps; when it is empty or zero, sum ourselves
    cpu = alloc_cpu if alloc_cpu else (step_cpu if step_cpu is not None else alloc_cpu)
    status = _state(main.get("State", ""))
    exit_code = None
    ec = main.get("ExitCode", "").strip()
    if ec:
        code, _, sig = ec.partition(":")
        if not code.isdigit() or (sig and not sig.isdigit()):
            raise RowError(f"ExitCode {ec!r} is not code:signal")
        exit_code = int(code) if not (sig and int(sig)) else -int(sig)
    host = None
    nl = main.get("NodeList", "").strip()
    nodes: list[str] = []
    if nl and nl not in ("None assigned", "(null)"):
        nodes = expand_nodelist(nl)
        host = nodes[0] if len(nodes) == 1 else nl
    extra = {"nodes": len(nodes)} if len(nodes) > 1 else None
    if cores == 0:
        cores = None
    return JobRecord(
        job_id=job.base, host=host, cores=None if cores is None else float(cores),
        cpu_seconds=cpu, wall_seconds=wall, status=status, exit_code=exit_code,
        source=source, line=job.line, extra=extra,
    )


def iter_sacct(f: IO[bytes], source: str) -> Iterator[JobRecord | ParseIssue]:
    """Records from ``sacct -P``/``-p`` output with a header line (sacct's default)."""
    cols: list[str] | None = None
    trailing = False
    job: _Job | None = None
    lineno = 0

    def finish(j: _Job) -> JobRecord | ParseIssue:
        try:
            return _record(j, source)
        except RowError as e:
            return ParseIssue(source, j.line, str(e))

    for raw in f:
        lineno += 1
        text = raw.decode("utf-8", "replace").rstrip("\r\n")
        if not text.strip() or text.startswith("#"):
            continue
        if cols is None:
            trailing = text.endswith("|")
            cols = (text[:-1] if trailing else text).split("|")
            if "JobID" not in cols and "JobIDRaw" not in cols:
                yield ParseIssue(source, lineno, "sacct header has no JobID column (run sacct -P without -n)")
                return
            if not any(c in cols for c in ("Elapsed", "ElapsedRaw")):
                yield ParseIssue(source, lineno, "sacct header has no Elapsed/ElapsedRaw column")
                return
            continue
        if trailing:
            if not text.endswith("|"):
                yield ParseIssue(source, lineno, "row lacks the trailing '|' of sacct -p")
                continue
            text = text[:-1]
        vals = text.split("|")
        if len(vals) != len(cols):
            yield ParseIssue(source, lineno, f"{len(vals)} fields where the header has {len(cols)} ('|' inside a field?)")
            continue
        row = dict(zip(cols, vals))
        jid = (row.get("JobID") or row.get("JobIDRaw") or "").strip()
        if not jid or not re.fullmatch(r"\d+(?:_(?:\d+|\[[^\]]*\]))?(?:\+\d+)?(?:\.[A-Za-z0-9_+-]+)?", jid):
            yield ParseIssue(source, lineno, f"JobID {jid!r} is not N, N_i, N_[a-b] or N.step")
            continue
        base, dot, _step = jid.partition(".")
        if job is None or job.base != base:
            if job is not None:
                yield finish(job)
            job = _Job(base, lineno)
        if dot:
            job.steps.append(row)
        elif job.alloc is None:
            job.alloc = row
            job.line = lineno
        else:
            yield ParseIssue(source, lineno, f"second allocation row for job {base}")
    if cols is None:
        yield ParseIssue(source, max(lineno, 1), "no sacct header line")
    if job is not None:
        yield finish(job)
