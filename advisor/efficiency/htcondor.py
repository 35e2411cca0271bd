"""HTCondor job ads: ``condor_history -json`` / ``-jsonl`` / ``-af:h`` (and ``condor_q -json``).

CPU and wall time must come from the same set of run attempts (FORMATS.md §5.1): after an
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

import codecs
import json
import re
from collections.abc import Iterator
from typing import IO, Any

from advisor.efficiency.records import JobRecord, ParseIssue, RowError, machine_name

try:  # optional accelerator (see docs/efficiency.md): decodes only the attributes we read
    import msgspec
except ImportError:  # pragma: no cover - exercised when msgspec is absent
    msgspec = None

JOB_STATUS = {1: "idle", 2: "running", 3: "removed", 5: "held", 6: "transferring_output", 7: "suspended"}

#: the attributes the record is built from (``-attributes`` for condor_history)
ATTRIBUTES = (
    "ClusterId", "ProcId", "GlobalJobId", "JobStatus", "ExitCode", "ExitBySignal", "ExitSignal",
    "LastRemoteHost", "RemoteHost", "RequestCpus", "CpusProvisioned",
    "RemoteUserCpu", "RemoteSysCpu", "CumulativeRemoteUserCpu", "CumulativeRemoteSysCpu",
    "RemoteWallClockTime", "CumulativeSuspensionTime", "CommittedTime", "CommittedSuspensionTime",
    "NumJobStarts", "JobRunCount", "JobCurrentStartDate", "ServerTime", "ChirpCMSSWReadBytes",
)


def _num(v: Any) -> float | None:
    """A ClassAd number; expressions (``"/Expr(...)/"``), undefined and junk are unknown."""
    if v is None or isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return float(v) if v == v and v not in (float("inf"), float("-inf")) else None
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
    cur_start, server_time, read_bytes, source, line,
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
        read_mb=None if read_bytes is None else read_bytes / 1e6,
    )


def record_from_ad(ad: Any, source: str | None = None, line: int | None = None) -> JobRecord:
    """A record from one decoded job ad (a dict of ClassAd attributes)."""
    if not isinstance(ad, dict):
        raise RowError(f"a job ad is a JSON object, got {type(ad).__name__}")
    g = ad.get
    by_signal = g("ExitBySignal")
    return build_record(
        _num(g("ClusterId")), _num(g("ProcId")), _str(g("GlobalJobId")), _num(g("JobStatus")),
        _num(g("ExitCode")), by_signal is True or (isinstance(by_signal, str) and by_signal.lower() == "true"),
        _num(g("ExitSignal")), _str(g("LastRemoteHost")), _str(g("RemoteHost")),
        _num(g("RequestCpus")), _num(g("CpusProvisioned")),
        _num(g("RemoteUserCpu")), _num(g("RemoteSysCpu")),
        _num(g("CumulativeRemoteUserCpu")), _num(g("CumulativeRemoteSysCpu")),
        _num(g("RemoteWallClockTime")), _num(g("CumulativeSuspensionTime")),
        _num(g("CommittedTime")), _num(g("CommittedSuspensionTime")),
        _num(g("NumJobStarts")), _num(g("JobRunCount")),
        _num(g("JobCurrentStartDate")), _num(g("ServerTime")), _num(g("ChirpCMSSWReadBytes")),
        source, line,
    )


# --- JSON lines: the hot path -------------------------------------------------------------

if msgspec is not None:
    _Num = int | float | None

    class _FastAd(msgspec.Struct, gc=False):
        ClusterId: _Num = None
        ProcId: _Num = None
        GlobalJobId: str | None = None
        JobStatus: _Num = None
        ExitCode: _Num = None
        ExitBySignal: bool | None = None
        ExitSignal: _Num = None
        LastRemoteHost: str | None = None
        RemoteHost: str | None = None
        RequestCpus: _Num = None
        CpusProvisioned: _Num = None
        RemoteUserCpu: _Num = None
        RemoteSysCpu: _Num = None
        CumulativeRemoteUserCpu: _Num = None
        CumulativeRemoteSysCpu: _Num = None
        RemoteWallClockTime: _Num = None
        CumulativeSuspensionTime: _Num = None
        CommittedTime: _Num = None
        CommittedSuspensionTime: _Num = None
        NumJobStarts: _Num = None
        JobRunCount: _Num = None
        JobCurrentStartDate: _Num = None
        ServerTime: _Num = None
        ChirpCMSSWReadBytes: _Num = None

    _fast_decode = msgspec.json.Decoder(_FastAd).decode
    _FAST_ERRORS: tuple[type[Exception], ...] = (msgspec.ValidationError, msgspec.DecodeError)
else:  # pragma: no cover
    _fast_decode = None
    _FAST_ERRORS = ()


def _record_from_line(raw: bytes, source: str, lineno: int) -> JobRecord:
    if _fast_decode is not None:
        try:
            a = _fast_decode(raw)
        except _FAST_ERRORS:
            pass  # a value of another type (an /Expr()/ string, ...) or bad JSON: slow path decides
        else:
            return build_record(
                a.ClusterId, a.ProcId, a.GlobalJobId, a.JobStatus, a.ExitCode, a.ExitBySignal,
                a.ExitSignal, a.LastRemoteHost, a.RemoteHost, a.RequestCpus, a.CpusProvisioned,
                a.RemoteUserCpu, a.RemoteSysCpu, a.CumulativeRemoteUserCpu, a.CumulativeRemoteSysCpu,
                a.RemoteWallClockTime, a.CumulativeSuspensionTime, a.CommittedTime,
                a.CommittedSuspensionTime, a.NumJobStarts, a.JobRunCount, a.JobCurrentStartDate,
                a.ServerTime, a.ChirpCMSSWReadBytes, source, lineno,
            )
    try:
        ad = json.loads(raw)
    except (ValueError, RecursionError) as e:
        raise RowError(f"not a JSON object: {str(e)[:80]}") from None
    return record_from_ad(ad, source, lineno)


def iter_jsonl(f: IO[bytes], source: str, first_line: int = 1) -> Iterator[JobRecord | ParseIssue]:
    """``condor_history -jsonl``: one ad per line. Blank lines and ``#`` lines are skipped."""
    lineno = first_line - 1
    for raw in f:
        lineno += 1
        s = raw.strip()
        if not s or s[:1] == b"#":
            continue
        try:
            yield _record_from_line(s, source, lineno)
        except RowError as e:
            yield ParseIssue(source, lineno, str(e))


# --- JSON array / concatenated objects, streamed --------------------------------------------

_CHUNK = 1 << 20
_MAX_AD = 64 << 20  # one ad larger than this is not a job ad
_RESYNC = re.compile(r"\n,?\{")  # condor prints each ad's '{' at column 0


def iter_json_stream(f: IO[bytes], source: str) -> Iterator[JobRecord | ParseIssue]:
    """``condor_history -json`` (a JSON array of ads) or concatenated ad objects, without
    loading the whole file: one ad at a time is decoded from a sliding buffer. Leading ``#``
    comment lines are skipped. A broken ad is reported at its first line and the reader
    resynchronises at the next ``{`` that starts a line."""
    dec = json.JSONDecoder()
    udec = codecs.getincrementaldecoder("utf-8")("replace")
    buf = ""
    pos = 0
    line = 1
    eof = False
    in_array: bool | None = None
    closed = False

    def more() -> bool:
        nonlocal buf, pos, eof
        if eof:
            return False
        chunk = f.read(_CHUNK)
        if not chunk:
            eof = True
            buf = buf[pos:] + udec.decode(b"", final=True)
            pos = 0
            return False
        buf = buf[pos:] + udec.decode(chunk)
        pos = 0
        return True

    while True:
        # skip whitespace (and commas between array elements, and comment lines before the start)
        while True:
            n = len(buf)
            while pos < n and buf[pos] in " \t\r\n,":
                if buf[pos] == "\n":
                    line += 1
                elif buf[pos] == "," and not in_array:
                    break
                pos += 1
            if pos < n and buf[pos] == "#" and in_array is None:
                nl = buf.find("\n", pos)
                if nl < 0:
                    if more():
                        continue
                    pos = len(buf)
                    continue
                pos = nl
                continue
            if pos >= len(buf):
                if more():
                    continue
            break
        if pos >= len(buf):
            break
        c = buf[pos]
        if in_array is None:
            if c == "[":
                in_array = True
                pos += 1
                continue
            in_array = False
        if in_array and c == "]":
            closed = True
            pos += 1
            rest = buf[pos:]
            while True:
                if rest.strip():
                    yield ParseIssue(source, line, "content after the closing ']' of the ad array")
                    return
                if not more():
                    return
                rest = buf
        try:
            obj, end = dec.raw_decode(buf, pos)
        except json.JSONDecodeError as e:
            if not eof and len(buf) - pos < _MAX_AD and more():
                continue
            yield ParseIssue(source, line, f"malformed job ad: {e.msg} (line {line + buf.count(chr(10), pos, e.pos)})")
            m = _RESYNC.search(buf, max(e.pos, pos + 1))
            while m is None and not eof:
                # keep only a tail that can hold the start of the resync pattern
                line += buf.count("\n", pos, len(buf) - 2)
                pos = len(buf) - 2
                more()
                m = _RESYNC.search(buf, pos)
            if m is None:
                return
            line += buf.count("\n", pos, m.start() + 1)
            pos = m.start() + 1
            continue
        except RecursionError:
            yield ParseIssue(source, line, "malformed job ad: nested too deeply")
            return
        try:
            yield record_from_ad(obj, source, line)
        except RowError as e:
            yield ParseIssue(source, line, str(e))
        line += buf.count("\n", pos, end)
        pos = end
    if in_array and not closed:
        yield ParseIssue(source, line, "the ad array is not closed with ']' (truncated file?)")


# --- condor_history -af:h (autoformat with a header) ---------------------------------------

_UNDEF = {"undefined", "UNDEFINED", "Undefined", "error", "ERROR"}
_JOBID_HEADERS = {"id", "jobid", "job_id"}
_LABEL_PAIR = re.compile(r"(\w+) = (.*?)(?=\s+\w+ = |$)")


def _af_value(tok: str) -> Any:
    tok = tok.strip()
    if tok in _UNDEF or tok == "":
        return None
    if len(tok) >= 2 and tok[0] == tok[-1] == '"':
        return tok[1:-1]
    if tok in ("true", "TRUE", "True"):
        return True
    if tok in ("false", "FALSE", "False"):
        return False
    try:
        return int(tok)
    except ValueError:
        pass
    try:
        return float(tok)
    except ValueError:
        return tok


def _af_split(text: str, sep: str | None) -> list[str]:
    if sep is None:
        return text.split()
    return [t.strip() for t in text.split(sep)]


def _af_row_to_ad(cols: list[str], vals: list[str]) -> dict[str, Any]:
    ad: dict[str, Any] = {}
    for name, tok in zip(cols, vals):
        if name.lower() in _JOBID_HEADERS:
            cid, _, pid = tok.partition(".")
            if not (cid.isdigit() and pid.isdigit()):
                raise RowError(f"job id {tok!r} is not ClusterId.ProcId")
            ad["ClusterId"], ad["ProcId"] = int(cid), int(pid)
        else:
            ad[name] = _af_value(tok)
    return ad


def af_separator(header: str) -> str | None:
    """``-af:t`` tabs, ``-af:,`` commas, default spaces (None = any run of whitespace)."""
    if "\t" in header:
        return "\t"
    if "," in header:
        return ","
    return None


def iter_autoformat(f: IO[bytes], source: str) -> Iterator[JobRecord | ParseIssue]:
    """``condor_history -af:h Attr...`` (also ``:jh``, ``:,h``, ``:th``): a header line of
    attribute names, then one job per line. ``-af:l`` (``Attr = value`` labels, no header) is
    read too. Values: ``undefined`` is unknown; strings are unquoted in -af output, so a string
    value holding the separator makes its row unparseable (reported, not guessed)."""
    cols: list[str] | None = None
    sep: str | None = None
    lineno = 0
    for raw in f:
        lineno += 1
        text = raw.decode("utf-8", "replace").rstrip("\r\n")
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        if " = " in text and _LABEL_PAIR.match(text.strip()):
            pairs = _LABEL_PAIR.findall(text.strip().replace(", ", " ").replace("\t", " "))
            try:
                ad = _af_row_to_ad([k for k, _ in pairs], [v.rstrip(",") for _, v in pairs])
                yield record_from_ad(ad, source, lineno)
            except RowError as e:
                yield ParseIssue(source, lineno, str(e))
            continue
        if cols is None:
            sep = af_separator(text)
            cols = _af_split(text, sep)
            if not all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", c) for c in cols):
                yield ParseIssue(source, lineno, "-af output needs a header of attribute names (use condor_history -af:h)")
                return
            continue
        vals = _af_split(text, sep)
        if len(vals) != len(cols):
            yield ParseIssue(source, lineno, f"{len(vals)} fields where the header has {len(cols)}")
            continue
        try:
            yield record_from_ad(_af_row_to_ad(cols, vals), source, lineno)
        except RowError as e:
            yield ParseIssue(source, lineno, str(e))


def summarize_jsonl(f: IO[bytes], source: str, summary: Any, add_issue: Any) -> None:
    """The hot path for ``-jsonl`` when no per-job record is wanted (the summary only).

    Gives the same aggregates as :func:`iter_jsonl` feeding ``Summary.add``, without a record
    per job: the common case (cumulative CPU with RemoteWallClockTime, a job that is neither
    running nor failed, known cores and host) is folded into the summary's cells inline;
    every other ad goes through :func:`build_record` and ``Summary.add``. Kept in step with
    ``Summary.add_values`` by tests/efficiency/test_hot_path.py.
    """
    if _fast_decode is None:
        for item in iter_jsonl(f, source):
            if isinstance(item, ParseIssue):
                add_issue(item)
            else:
                summary.add(item)
        return
    from bisect import bisect_right

    from advisor.efficiency.analysis import WALL_BIN0, WALL_EDGES

    decode = _fast_decode
    errors = _FAST_ERRORS
    cells = summary.cells
    completed = 0
    total_cw = 0.0
    zero_cpu = 0
    lineno = 0
    for raw in f:
        lineno += 1
        try:
            a = decode(raw)
        except errors:
            a = None
        if a is not None:
            cu = a.CumulativeRemoteUserCpu
            rw = a.RemoteWallClockTime
            lrh = a.LastRemoteHost
            if cu is not None and rw is not None and a.JobStatus == 4 and lrh and a.ClusterId is not None \
                    and a.ProcId is not None and not a.ExitBySignal and not a.ExitCode:
                cores = a.CpusProvisioned or a.RequestCpus or 1.0
                wall = rw - (a.CumulativeSuspensionTime or 0)
                host = lrh.rpartition("@")[2]
                if wall > 0 and cores > 0 and host and host[0] != "<" and host.strip() == host:
                    cpu = cu + (a.CumulativeRemoteSysCpu or 0.0)
                    cw = wall * cores
                    eff = cpu / cw
                    key = (host, WALL_BIN0 + bisect_right(WALL_EDGES, wall))
                    c = cells.get(key)
                    if c is None:
                        c = cells[key] = [0, 0.0, 0.0, 0.0, {}]
                    c[0] += 1
                    c[1] += cpu
                    c[2] += cw
                    c[3] += eff
                    h = c[4]
                    k = int(eff * 200 + 0.5)
                    h[k] = h.get(k, 0) + 1
                    completed += 1
                    total_cw += cw
                    if cpu == 0:
                        zero_cpu += 1
                    continue
        text = raw.strip()
        if not text or text[:1] == b"#":
            continue
        try:
            rec = _record_from_line(text, source, lineno)
        except RowError as e:
            add_issue(ParseIssue(source, lineno, str(e)))
            continue
        summary.add(rec)
    summary.records += completed
    summary.by_status["completed"] = summary.by_status.get("completed", 0) + completed
    summary.total_core_seconds += total_cw
    summary.zero_cpu += zero_cpu
