"""Stream JSON objects from a file: one per line (JSON Lines), pretty-printed objects one after
another, or a JSON array of objects -- with the line each object starts on. A record that is not
valid JSON is reported with its line number and skipped up to the next line; the buffer holds
at most one record plus one read block.
"""

from __future__ import annotations

import json
import re
from typing import Iterator

from advisor.cache.trace import CacheInputError, InputIssues

_SKIP = re.compile(r"[\s,\[\]]*")
BLOCK = 1 << 20


def iter_json_records(path: str, issues: InputIssues) -> Iterator[tuple[int, dict]]:
    dec = json.JSONDecoder()
    try:
        fh = open(path, encoding="utf-8", errors="replace")
    except FileNotFoundError:
        raise CacheInputError(path, "no such file") from None
    except IsADirectoryError:
        raise CacheInputError(path, "is a directory, not a log") from None
    except OSError as e:
        raise CacheInputError(path, e.strerror or "cannot be read") from None
    with fh:
        buf, pos, line, eof = "", 0, 1, False
        while True:
            m = _SKIP.match(buf, pos)
            line += buf.count("\n", pos, m.end())
            pos = m.end()
            if pos >= len(buf) - 1 and not eof:
                more = fh.read(BLOCK)
                if not more:
                    eof = True
                buf, pos = buf[pos:] + more, 0
                if pos < len(buf) or not eof:
                    continue
            if pos >= len(buf):
                return
            try:
                obj, end = dec.raw_decode(buf, pos)
            except json.JSONDecodeError as e:
                if not eof and e.pos >= len(buf) - 2:
                    more = fh.read(BLOCK)
                    if not more:
                        eof = True
                    buf, pos = buf[pos:] + more, 0
                    continue
                issues.bad(line, f"not JSON: {e.msg}")
                nl = buf.find("\n", pos)
                if nl < 0:
                    if eof:
                        return
                    buf, pos = "", 0
                    continue
                pos = nl
                continue
            if isinstance(obj, dict):
                yield line, obj
            else:
                issues.bad(line, "not a JSON object")
            line += buf.count("\n", pos, end)
            pos = end
            if pos > BLOCK:
                buf, pos = buf[pos:], 0
