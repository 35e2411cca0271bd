"""``condor_history -jsonl``: one ad per line, decoded in blocks with msgspec where it can be
(the hot path), else by the json module; the records are :func:`advisor.efficiency.htcondor.record_from_ad`'s."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import IO, Any

from advisor.efficiency.htcondor import _str, add_cms_io, build_record, record_from_ad
from advisor.efficiency.records import JobRecord, ParseIssue, RowError

try:  # optional accelerator (see docs/efficiency.md): decodes only the attributes we read
    import msgspec
except ImportError:  # pragma: no cover - exercised when msgspec is absent
    msgspec = None

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
        ChirpCMSSWEvents: _Num = None
        ChirpCMSSWReadBytes: _Num = None
        ChirpCMSSWReadTimeMsecs: _Num = None
        ChirpCMSSWReadOps: _Num = None
        ChirpCMSSWReadVOps: _Num = None
        ChirpCMSSW_SiteIO: list[dict[str, Any]] | None = None
        ChirpCMSSWDone: bool | float | None = None
        ChirpCMSSWFiles: _Num = None
        ChirpCMSSWTotalFiles: _Num = None
        ChirpCMSSWLastUpdate: _Num = None
        MATCH_GLIDEIN_CMSSite: str | None = None
        MATCH_EXP_JOB_GLIDEIN_CMSSite: str | None = None
        GLIDEIN_CMSSite: str | None = None
        JOB_CMSSite: str | None = None
        CMSSite: str | None = None
        DESIRED_CMSDataLocations: str | list[str] | None = None

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
        #: a CMS job's events or read volume: its ad goes through a record (cms_chirp)
        ChirpCMSSWEvents: _Num = None
        ChirpCMSSWReadBytes: _Num = None

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
    return add_cms_io(build_record(
        a.ClusterId, a.ProcId, _str(a.GlobalJobId), a.JobStatus, a.ExitCode, a.ExitBySignal is True,
        a.ExitSignal, _str(a.LastRemoteHost), _str(a.RemoteHost), a.RequestCpus, a.CpusProvisioned,
        a.RemoteUserCpu, a.RemoteSysCpu, a.CumulativeRemoteUserCpu, a.CumulativeRemoteSysCpu,
        a.RemoteWallClockTime, a.CumulativeSuspensionTime, a.CommittedTime, a.CommittedSuspensionTime,
        a.NumJobStarts, a.JobRunCount, a.JobCurrentStartDate, a.ServerTime,
        source, line,
    ), lambda k: getattr(a, k, None))


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
