"""HTCondor job ads: ``condor_history -json`` / ``-jsonl`` / ``-af:h`` (and ``condor_q -json``).

CPU and wall time must come from the same set of run attempts (HTCondor manual, Job ClassAd Attributes): after an
eviction ``RemoteUserCpu`` covers only the last attempt while ``RemoteWallClockTime`` covers
all of them. We pair

1. ``CumulativeRemoteUserCpu + CumulativeRemoteSysCpu`` with
   ``RemoteWallClockTime - CumulativeSuspensionTime`` (all attempts), else
2. ``RemoteUserCpu + RemoteSysCpu`` with ``CommittedTime - CommittedSuspensionTime``
   (attempts that were not evicted), else
3. ``RemoteUserCpu + RemoteSysCpu`` with ``RemoteWallClockTime`` only when the job started
   once (``NumJobStarts``/``JobRunCount`` <= 1), where the two are the same attempt.

A running job (``JobStatus`` 2) has not yet had its current attempt added to
``RemoteWallClockTime`` while its cumulative CPU already includes it (the real condor_q
sample: 38735 s CPU over 37327 s wall on one core), so we add ``ServerTime -
JobCurrentStartDate`` to its wall time when both are present (our derivation from that sample).

Cores: ``CpusProvisioned`` (what the slot really had) else ``RequestCpus`` else 1. CMS's
monitoring divides by ``RequestCpus``; the two differ only when a dynamic slot's minimum is
larger than the request.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from advisor.efficiency.cms_chirp import CHIRP_ATTRIBUTES, RUN_SITE_ATTRIBUTES, cms_io
from advisor.efficiency.records import JobRecord, RowError, machine_name

JOB_STATUS = {1: "idle", 2: "running", 3: "removed", 5: "held", 6: "transferring_output", 7: "suspended"}

#: the attributes the record is built from (``-attributes`` for condor_history)
ATTRIBUTES = (
    "ClusterId", "ProcId", "GlobalJobId", "JobStatus", "ExitCode", "ExitBySignal", "ExitSignal",
    "LastRemoteHost", "RemoteHost", "RequestCpus", "CpusProvisioned",
    "RemoteUserCpu", "RemoteSysCpu", "CumulativeRemoteUserCpu", "CumulativeRemoteSysCpu",
    "RemoteWallClockTime", "CumulativeSuspensionTime", "CommittedTime", "CommittedSuspensionTime",
    "NumJobStarts", "JobRunCount", "JobCurrentStartDate", "ServerTime",
) + CHIRP_ATTRIBUTES + RUN_SITE_ATTRIBUTES


def _num(v: Any) -> float | None:
    """A ClassAd number; expressions (``"/Expr(...)/"``), undefined and junk are unknown."""
    if v is None or isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        try:
            f = float(v)
        except OverflowError:  # an int beyond the float range
            return None
        return f if f == f and abs(f) != float("inf") else None
    if isinstance(v, str):
        try:
            f = float(v)
        except ValueError:
            return None
        return f if f == f and abs(f) != float("inf") else None
    return None


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) and v and not v.startswith("/Expr(") else None


def _int(v: Any) -> int | None:
    f = _num(v)
    return None if f is None else int(f)


def build_record(
    cluster, proc, gjid, status, exit_code, by_signal, exit_signal, lrh, rh, req_cpus, cpus_prov,
    ruser, rsys, cuser, csys, rwall, csusp, committed, committed_susp, nstarts, run_count,
    cur_start, server_time, source, line,
) -> JobRecord:
    """The one place where the pairing rules above are applied (numbers already coerced)."""
    if cluster is not None and proc is not None:
        job_id = f"{int(cluster)}.{int(proc)}"
    elif gjid:
        job_id = gjid
    else:
        raise RowError("ad has neither ClusterId/ProcId nor GlobalJobId")

    cpu = wall = None
    if (cuser is not None or csys is not None) and rwall is not None:
        cpu = (cuser or 0.0) + (csys or 0.0)
        wall = rwall - (csusp or 0.0)
        if status == 2 and cur_start and server_time and server_time >= cur_start:
            wall += server_time - cur_start
    elif (ruser is not None or rsys is not None) and committed:
        cpu = (ruser or 0.0) + (rsys or 0.0)
        wall = committed - (committed_susp or 0.0)
    elif (ruser is not None or rsys is not None) and rwall is not None:
        starts = nstarts if nstarts is not None else run_count
        if starts is not None and starts <= 1:
            cpu = (ruser or 0.0) + (rsys or 0.0)
            wall = rwall - (csusp or 0.0)
    if wall is not None and wall < 0:
        raise RowError(f"negative wall time {wall:g} s")

    cores = cpus_prov if cpus_prov else (req_cpus if req_cpus else 1.0)

    if status == 4:
        if by_signal:
            st = "failed"
        elif exit_code is not None and exit_code != 0:
            st = "failed"
        else:
            st = "completed"
    elif status is None:
        st = "unknown"
    else:
        st = JOB_STATUS.get(int(status), "unknown")
    code = None if exit_code is None else int(exit_code)
    if by_signal and exit_signal is not None:
        code = -int(exit_signal)
    host = machine_name(lrh) or machine_name(rh)
    return JobRecord(
        job_id=job_id,
        host=host,
        cores=cores,
        cpu_seconds=cpu,
        wall_seconds=wall,
        status=st,
        exit_code=code,
        source=source,
        line=line,
    )


def record_from_ad(ad: Any, source: str | None = None, line: int | None = None) -> JobRecord:
    """A record from one decoded job ad (a dict of ClassAd attributes)."""
    if not isinstance(ad, dict):
        raise RowError(f"a job ad is a JSON object, got {type(ad).__name__}")
    g = ad.get
    by_signal = g("ExitBySignal")
    return add_cms_io(build_record(
        _num(g("ClusterId")), _num(g("ProcId")), _str(g("GlobalJobId")), _num(g("JobStatus")),
        _num(g("ExitCode")), by_signal is True or (isinstance(by_signal, str) and by_signal.lower() == "true"),
        _num(g("ExitSignal")), _str(g("LastRemoteHost")), _str(g("RemoteHost")),
        _num(g("RequestCpus")), _num(g("CpusProvisioned")),
        _num(g("RemoteUserCpu")), _num(g("RemoteSysCpu")),
        _num(g("CumulativeRemoteUserCpu")), _num(g("CumulativeRemoteSysCpu")),
        _num(g("RemoteWallClockTime")), _num(g("CumulativeSuspensionTime")),
        _num(g("CommittedTime")), _num(g("CommittedSuspensionTime")),
        _num(g("NumJobStarts")), _num(g("JobRunCount")),
        _num(g("JobCurrentStartDate")), _num(g("ServerTime")),
        source, line,
    ), g)


def add_cms_io(rec: JobRecord, get: Callable[[str], Any]) -> JobRecord:
    """The CMS Chirp facts of the ad (events, read volume, time and operations, the storage read)
    into the record (advisor.efficiency.cms_chirp)."""
    io = cms_io(get, _num)
    if io.empty and io.read_ops is None:
        return rec
    rec.events = io.events
    if io.read_bytes is not None:
        rec.read_mb = io.read_bytes / 1e6
    rec.read_seconds = io.read_seconds
    rec.read_ops = io.read_ops
    rec.storage = io.storage
    extra = {k: v for k, v in (("storage_from", io.storage_from), ("cmssw_done", io.done),
                                            ("cmssw_last_update", io.last_update), ("cmssw_files", io.files))
             if v is not None}
    if extra:
        rec.extra = {**(rec.extra or {}), **extra}
    return rec
