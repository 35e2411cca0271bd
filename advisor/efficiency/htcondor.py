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

from advisor.efficiency.records import FAILED_STATUSES, JobRecord, ParseIssue, RowError, machine_name

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
#
# With msgspec, -jsonl is read in blocks of whole lines (about _BLOCK bytes: small buffers are
# reused, large ones cost page faults). A block is decoded with one call when that cannot
# change what a line means (:func:`_decode_block`), into typed structs holding only the
# attributes we read; any other block is decoded line by line. A line that msgspec does not
# take as it is (a value of another type, such as an ``/Expr(...)/`` string, a number out of
# range, bad JSON, a comment) goes to the json module and :func:`record_from_ad`, which
# decide. The fast path only accepts lines the json module reads to the same values, so both
# give the same records (tests/efficiency/test_jsonl_paths.py).

_BLOCK = 1 << 16

if msgspec is not None:
    # msgspec reads a JSON int into a float as float() does (one beyond the float range is
    # refused: the json module decides), so numbers come out as record_from_ad's _num makes them
    _Num = float | None

    class _FastAd(msgspec.Struct, gc=False):
        """Every attribute :func:`record_from_ad` reads (the per-job record path)."""

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

    class _SumAd(msgspec.Struct, gc=False):
        """The attributes the summary's common case depends on (:func:`summarize_jsonl`): a
        finished ad with ClusterId/ProcId, cumulative CPU, RemoteWallClockTime and a named
        LastRemoteHost. Every other ad is decoded again as a whole (:func:`_record_from_line`)."""

        ClusterId: _Num = None
        ProcId: _Num = None
        JobStatus: _Num = None
        ExitCode: _Num = None
        ExitBySignal: bool | None = None
        LastRemoteHost: str | None = None
        RequestCpus: _Num = None
        CpusProvisioned: _Num = None
        CumulativeRemoteUserCpu: _Num = None
        CumulativeRemoteSysCpu: _Num = None
        RemoteWallClockTime: _Num = None
        CumulativeSuspensionTime: _Num = None

    #: (one ad, a block of ads) decoders
    _FAST = (msgspec.json.Decoder(_FastAd), msgspec.json.Decoder(list[tuple[_FastAd]]))
    _SUM = (msgspec.json.Decoder(_SumAd), msgspec.json.Decoder(list[tuple[_SumAd]]))
    _fast_decode = _FAST[0].decode
    # RecursionError: msgspec's own nesting limit (the json module then reports the line)
    _FAST_ERRORS: tuple[type[BaseException], ...] = (msgspec.ValidationError, msgspec.DecodeError, RecursionError)
else:  # pragma: no cover
    _FAST = _SUM = None
    _fast_decode = None
    _FAST_ERRORS = ()


def _utf8_ok(b: bytes) -> bool:
    """Valid UTF-8: msgspec skips unread strings without checking them, the json module does not."""
    if b.isascii():
        return True
    try:
        b.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _line_blocks(f: IO[bytes], size: int | None = None) -> Iterator[tuple[bytes, int]]:
    """Whole lines of ``f`` in blocks of about ``size`` bytes: ``(data, end)``, the lines being
    ``data[:end]`` (without the newline that ends the last one); ``data`` may go on after
    ``end`` with the start of the next line, which the next block reads again (a seekable
    ``f`` seeks back to it, within its buffer). Memory: one block, or one line when longer."""
    size = size or _BLOCK
    seekable = f.seekable()
    pending: list[bytes] = []  # a line longer than size, in pieces (or the carried tail)
    while True:
        data = f.read(size)
        if not data:
            if pending:
                data = b"".join(pending)
                yield data, len(data)
            return
        end = data.rfind(b"\n")
        if end < 0:
            pending.append(data)
            continue
        if pending:
            before = sum(map(len, pending))
            pending.append(data)
            data = b"".join(pending)
            pending = []
            end += before
        yield data, end
        rest = len(data) - end - 1
        if rest:
            if seekable:
                f.seek(-rest, 1)
            else:
                pending.append(data[end + 1:])


def _decode_block(data: bytes, end: int, decoders: Any) -> tuple[list[Any], list[bytes] | None]:
    """One struct per line of ``data[:end]``, None where msgspec does not take the line as it
    is; and the lines, when the block had to be split (else None: split them when needed).

    The one-call path decodes ``[[line1],\\n[line2],\\n...]`` as a list of 1-tuples. It is
    taken only when the block has no ``]``: then no line can close a bracket we added, so the
    only element boundaries are ours, one per newline; and it is checked that there are as
    many elements as lines. A raw newline cannot be inside a JSON string, a tuple of one
    refuses a blank line or two values on a line, and bad JSON anywhere fails the block. So
    each element is exactly one line, decoded as it would be alone. Anything else (a ``]``
    in a block is common enough in full ads: lists, strings) goes line by line."""
    if data.find(b"]", 0, end) < 0 and (data.isascii() or _utf8_ok(data[:end])):
        rep = data.replace(b"\n", b"],\n[")
        newlines = (len(rep) - len(data)) // 3  # in all of data
        if end < len(data):  # data[end] is the newline after the block
            newlines -= 1
            stop = end + 3 * newlines
        else:
            stop = len(rep)
        try:
            ads = decoders[1].decode(b"".join((b"[[", memoryview(rep)[:stop], b"]]")))
        except _FAST_ERRORS:
            pass
        else:
            if len(ads) == newlines + 1:
                return ads, None
    lines = data[:end].split(b"\n")
    out: list[Any] = []
    dec = decoders[0].decode
    for line in lines:
        a = None
        if _utf8_ok(line):
            try:
                a = (dec(line),)
            except _FAST_ERRORS:
                pass
        out.append(a)
    return out, lines


def _record_from_fast(a: Any, source: str | None, line: int | None) -> JobRecord:
    """:func:`record_from_ad` for a decoded ``_FastAd`` (numbers already floats, so the same record)."""
    return build_record(
        a.ClusterId, a.ProcId, _str(a.GlobalJobId), a.JobStatus, a.ExitCode, a.ExitBySignal is True,
        a.ExitSignal, _str(a.LastRemoteHost), _str(a.RemoteHost), a.RequestCpus, a.CpusProvisioned,
        a.RemoteUserCpu, a.RemoteSysCpu, a.CumulativeRemoteUserCpu, a.CumulativeRemoteSysCpu,
        a.RemoteWallClockTime, a.CumulativeSuspensionTime, a.CommittedTime, a.CommittedSuspensionTime,
        a.NumJobStarts, a.JobRunCount, a.JobCurrentStartDate, a.ServerTime, a.ChirpCMSSWReadBytes,
        source, line,
    )


def _record_from_line(raw: bytes, source: str, lineno: int) -> JobRecord:
    """One stripped, non-empty line: msgspec where it takes the line, else the json module."""
    if _fast_decode is not None and _utf8_ok(raw):
        try:
            a = _fast_decode(raw)
        except _FAST_ERRORS:
            pass  # a value of another type (an /Expr()/ string, ...) or bad JSON: slow path decides
        else:
            return _record_from_fast(a, source, lineno)
    return _record_from_json(raw, source, lineno)


def _record_from_json(raw: bytes, source: str, lineno: int) -> JobRecord:
    """The reference path: the json module and :func:`record_from_ad`."""
    try:
        ad = json.loads(raw)
    except (ValueError, RecursionError) as e:
        raise RowError(f"not a JSON object: {str(e)[:80]}") from None
    return record_from_ad(ad, source, lineno)


def iter_jsonl(f: IO[bytes], source: str, first_line: int = 1) -> Iterator[JobRecord | ParseIssue]:
    """``condor_history -jsonl``: one ad per line. Blank lines and ``#`` lines are skipped."""
    if _FAST is None:
        yield from iter_jsonl_json(f, source, first_line)
        return
    line0 = first_line
    for data, end in _line_blocks(f):
        ads, lines = _decode_block(data, end, _FAST)
        for i, t in enumerate(ads):
            item: JobRecord | ParseIssue
            if t is not None:
                try:
                    item = _record_from_fast(t[0], source, line0 + i)
                except RowError as e:
                    item = ParseIssue(source, line0 + i, str(e))
                yield item
                continue
            if lines is None:
                lines = data[:end].split(b"\n")
            s = lines[i].strip()
            if not s or s[:1] == b"#":
                continue
            try:
                item = _record_from_json(s, source, line0 + i)
            except RowError as e:
                item = ParseIssue(source, line0 + i, str(e))
            yield item
        line0 += len(ads)


def iter_jsonl_json(f: IO[bytes], source: str, first_line: int = 1) -> Iterator[JobRecord | ParseIssue]:
    """:func:`iter_jsonl` on the json module alone (the reference the fast path is tested against)."""
    lineno = first_line - 1
    for raw in f:
        lineno += 1
        s = raw.strip()
        if not s or s[:1] == b"#":
            continue
        try:
            yield _record_from_json(s, source, lineno)
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


#: JobStatus -> the status of the ads summarize_jsonl folds inline (not 2: a running job's wall
#: time needs ServerTime and JobCurrentStartDate; 4 is decided by the exit)
_INLINE_STATUS: dict[Any, str] = {k: v for k, v in {**JOB_STATUS, None: "unknown"}.items() if k != 2}
#: efficiency histogram bins (steps of 0.005) 0 .. 2**_DENSE_BITS - 1 (efficiency up to 1.2775)
#: a local cell counts in a list; others in a dict
_DENSE_BITS = 8


def summarize_jsonl(f: IO[bytes], source: str, summary: Any, add_issue: Any) -> None:
    """The hot path for ``-jsonl`` when no per-job record is wanted (the summary only).

    Gives the same aggregates as :func:`iter_jsonl` feeding ``Summary.add``, without a record
    per job. Blocks of lines are decoded at once (:func:`_decode_block`) into ``_SumAd``;
    the common case (ClusterId/ProcId, cumulative CPU with RemoteWallClockTime, a named
    LastRemoteHost, positive wall time and core-wall time, not running) is folded inline, with
    the rules of :func:`build_record` and ``Summary.add_values``, into local cells per host and
    length bin (CPU, core-wall and efficiency sums and an efficiency histogram, whose total is
    the job count) that are added to the summary's at the end; every other line goes through
    :func:`_record_from_line` and ``Summary.add``, or is reported with its line number.
    Kept in step by tests/efficiency/test_hot_path.py.
    """
    if _SUM is None:
        for item in iter_jsonl(f, source):
            if isinstance(item, ParseIssue):
                add_issue(item)
            else:
                summary.add(item)
        return
    from bisect import bisect_right
    from collections import defaultdict
    from itertools import compress

    from advisor.efficiency.analysis import NO_BIN, WALL_BIN0, WALL_EDGES

    inline_status = _INLINE_STATUS
    failed_statuses = FAILED_STATUSES
    wasted_by_host = summary.wasted_by_host
    edges = tuple(map(float, WALL_EDGES))
    dense_bits = _DENSE_BITS
    dense = 1 << dense_bits
    #: local cells by index: length bin WALL_BIN0 + i, and NO_BIN last
    bins = [WALL_BIN0 + i for i in range(len(edges) + 1)] + [NO_BIN]
    #: host (the part of LastRemoteHost after the last @, checked once) -> its local cells:
    #: [cpu, core_wall, eff_sum, [jobs by eff bin < dense], {eff bin: jobs} for the others]
    by_host: dict[str, list[list[Any]]] = {}
    other_status: defaultdict[str, int] = defaultdict(int)  # all but completed
    wasted = 0.0
    zero_cpu = 0
    line0 = 1
    for data, end in _line_blocks(f):
        ads, lines = _decode_block(data, end, _SUM)
        if lines is not None:  # decoded line by line: None where msgspec did not take the line
            ads = [(_SumAd(),) if t is None else t for t in ads]
        odd = []  # not folded inline; each ad is a distinct object, found again by id below
        # every number is a float (_Num): float constants keep CPython on its fast float paths
        for (a,) in ads:
            try:
                lrh = a.LastRemoteHost
                if lrh[0] == "/" or a.ClusterId is None or a.ProcId is None:  # "/Expr(": no string
                    odd.append(a)
                    continue
                wall = a.RemoteWallClockTime - (a.CumulativeSuspensionTime or 0.0)
                cpu = a.CumulativeRemoteUserCpu + (a.CumulativeRemoteSysCpu or 0.0)
                cw = wall * (a.CpusProvisioned or a.RequestCpus or 1.0)
                if not (wall > 0.0 and cw > 0.0):
                    odd.append(a)
                    continue
                eff = cpu / cw
                k = int(eff * 200.0 + 0.5)
            except (TypeError, IndexError, OverflowError, ValueError):  # None; ""; efficiency inf, nan
                odd.append(a)
                continue
            host = lrh.rpartition("@")[2]
            try:
                hc = by_host[host]
            except KeyError:
                if not host or host[0] == "<" or host.strip() != host:
                    odd.append(a)
                    continue
                hc = by_host[host] = [[0.0, 0.0, 0.0, [0] * dense, {}] for _ in bins]
            st = a.JobStatus
            if st == 4.0 and not (a.ExitBySignal or a.ExitCode):
                c = hc[bisect_right(edges, wall)]
            else:
                if st == 4.0:
                    name = "failed"
                else:
                    name = inline_status.get(st)
                    if name is None:  # running, or a number that is no status
                        odd.append(a)
                        continue
                other_status[name] += 1
                if name in failed_statuses:
                    wasted += cw
                    wasted_by_host[host] += cw
                c = hc[-1]
            c[0] += cpu
            c[1] += cw
            c[2] += eff
            if k >> dense_bits:  # k < 0 or k >= dense
                c[4][k] = c[4].get(k, 0) + 1
            else:
                c[3][k] += 1
            if cpu == 0.0:
                zero_cpu += 1
        if odd:
            if lines is None:
                lines = data[:end].split(b"\n")
            index = {id(t[0]): i for i, t in enumerate(ads)}
            for a in odd:
                i = index[id(a)]
                text = lines[i].strip()
                if not text or text[:1] == b"#":
                    continue
                try:
                    rec = _record_from_line(text, source, line0 + i)
                except RowError as e:
                    add_issue(ParseIssue(source, line0 + i, str(e)))
                    continue
                summary.add(rec)
        line0 += len(ads)
    # the local cells and counts into the summary
    cells = summary.cells
    jobs = completed = 0
    total_cw = 0.0
    for host, hc in by_host.items():
        for b, (cpu, cw, eff_sum, counts, extra) in zip(bins, hc):
            n = sum(counts) + sum(extra.values())
            if not n:
                continue
            c = cells.get((host, b))
            if c is None:
                c = cells[(host, b)] = [0, 0.0, 0.0, 0.0, {}]
            c[0] += n
            c[1] += cpu
            c[2] += cw
            c[3] += eff_sum
            h = c[4]
            for k in compress(range(dense), counts):
                h[k] = h.get(k, 0) + counts[k]
            for k, v in extra.items():
                h[k] = h.get(k, 0) + v
            jobs += n
            total_cw += cw
            if b != NO_BIN:
                completed += n
    bs = summary.by_status
    if completed:
        bs["completed"] = bs.get("completed", 0) + completed
    for name, n in other_status.items():
        bs[name] = bs.get(name, 0) + n
        if name in failed_statuses:
            summary.failed_jobs += n
    summary.records += jobs
    summary.total_core_seconds += total_cw
    summary.wasted_core_seconds += wasted
    summary.zero_cpu += zero_cpu
