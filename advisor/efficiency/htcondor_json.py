"""``condor_history -json`` / ``condor_q -json``: a JSON array of ads (or concatenated ad objects),
streamed ad by ad."""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterator
from typing import IO

from advisor.efficiency.htcondor import record_from_ad
from advisor.efficiency.records import JobRecord, ParseIssue, RowError

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
