"""Generic CSV transfer log: one read per row, columns mapped by header name.

Columns (names are options): ``timestamp`` (epoch seconds, integer or decimal, or ISO 8601
``YYYY-MM-DD[T ]HH:MM:SS[.fff][Z]`` in UTC), ``file``, ``size`` (bytes), ``server`` (optional:
one server for all rows when the header has none), ``bytes`` (optional: bytes read; default the
file size) and ``op`` (optional: rows whose op is not a read -- ``read``, ``r``, ``get`` or empty --
are counted and skipped). Fields may be double-quoted (no newline inside). The file is read in
blocks of 16 MiB and each block parsed by a compiled loop (numba) that also hashes the names
into the trace's key table, so memory holds one block plus the distinct names. A row with too
few fields, a field that is not a number or an empty file name is a bad line, counted with its
line number.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from typing import Iterator

import numpy as np
from advisor.cache.jit import njit

from advisor.cache.csv_fields import _int, _is_read, _time
from advisor.cache.keytable import fnv1a, lookup_or_insert
from advisor.cache.trace import CacheInputError, InputIssues, RequestBatch, Trace
from advisor.report.safe_text import terminal_text

BAD_REASONS = {1: "too few fields", 2: "timestamp: not a number or ISO 8601 time", 3: "size: not a byte count (0 to 2^63-1)",
               4: "bytes: not a byte count (0 to 2^63-1)", 5: "file: empty name"}
_OPS_READ = (b"read", b"r", b"get", b"rd", b"")


@dataclass
class CsvColumns:
    time: str = "timestamp"
    file: str = "file"
    size: str = "size"
    server: str | None = "server"
    nbytes: str | None = None
    op: str | None = None
    delimiter: str = ","


@njit(cache=True)
def parse_block(buf, n, delim, cols, line0, ktab, kcount, stab, scount, dtab, dcount, dir_type, key_type,
                out_t, out_k, out_s, out_b, out_v, new_off, new_len, new_dir, new_key, snew_off, snew_len,
                dnew_off, dnew_len, bad_line, bad_code, ops, op_off):
    """Parse complete lines of ``buf[:n]``. ``cols``: field index of time, file, size, server,
    bytes, op (-1 absent) and the number of fields needed. A new file's type is its directory's
    when that is known (``dir_type`` >= 0), else the file is listed (new_*) for Python to type;
    new directories are listed (dnew_*). Returns (rows, new keys listed, new servers, new
    directories, bad lines, skipped not-reads)."""
    ncol = cols[6]
    starts = np.empty(ncol + 1, dtype=np.int64)
    ends = np.empty(ncol + 1, dtype=np.int64)
    nrow = 0
    nnew = 0
    snew = 0
    dnew = 0
    nbad = 0
    nskip = 0
    line = line0
    p = 0
    while p < n:
        q = p
        f = 0
        # split one line into fields
        while True:
            if q < n and buf[q] == 34:  # quoted field
                q += 1
                fa = q
                while q < n and buf[q] != 34 and buf[q] != 10:
                    q += 1
                fb = q
                if q < n and buf[q] == 34:
                    q += 1
                while q < n and buf[q] != delim and buf[q] != 10:
                    q += 1
            else:
                fa = q
                while q < n and buf[q] != delim and buf[q] != 10:
                    q += 1
                fb = q
            if f <= ncol:
                starts[f] = fa
                ends[f] = fb
            f += 1
            if q >= n or buf[q] == 10:
                break
            q += 1
        eol = q
        empty = eol - p == 0 or (eol - p == 1 and buf[p] == 13)
        if not empty:
            code = 0
            if f < ncol:
                code = 1
            t = 0.0
            s = 0
            nb = 0
            if code == 0:
                t = _time(buf, starts[cols[0]], ends[cols[0]])
                if np.isnan(t):
                    code = 2
            if code == 0:
                s = _int(buf, starts[cols[2]], ends[cols[2]])
                if s < 0:
                    code = 3
            if code == 0:
                if cols[4] >= 0:
                    nb = _int(buf, starts[cols[4]], ends[cols[4]])
                    if nb < 0:
                        code = 4
                else:
                    nb = s
            fa, fb = starts[cols[1]], ends[cols[1]]
            if code == 0:
                while fa < fb and (buf[fa] == 32 or buf[fa] == 9):
                    fa += 1
                while fb > fa and (buf[fb - 1] == 32 or buf[fb - 1] == 9 or buf[fb - 1] == 13):
                    fb -= 1
                if fa == fb:
                    code = 5
            if code != 0:
                bad_line[nbad] = line
                bad_code[nbad] = code
                nbad += 1
            elif cols[5] >= 0 and not _is_read(buf, starts[cols[5]], ends[cols[5]], ops, op_off):
                nskip += 1
            else:
                k, new = lookup_or_insert(ktab, kcount, fnv1a(buf, fa, fb))
                if new:
                    sl = fb - 1
                    while sl >= fa and buf[sl] != 47:
                        sl -= 1
                    d, dn = lookup_or_insert(dtab, dcount, fnv1a(buf, fa, sl + 1))
                    if dn:
                        dir_type[d] = -2  # typed by Python after this block
                        dnew_off[dnew] = fa
                        dnew_len[dnew] = sl + 1 - fa
                        dnew += 1
                    if dir_type[d] >= 0:
                        key_type[k] = dir_type[d]
                    else:
                        new_off[nnew] = fa
                        new_len[nnew] = fb - fa
                        new_dir[nnew] = d
                        new_key[nnew] = k
                        nnew += 1
                sv = 0
                if cols[3] >= 0:
                    sa, sb = starts[cols[3]], ends[cols[3]]
                    while sb > sa and buf[sb - 1] == 13:
                        sb -= 1
                    sv, snw = lookup_or_insert(stab, scount, fnv1a(buf, sa, sb))
                    if snw:
                        snew_off[snew] = sa
                        snew_len[snew] = sb - sa
                        snew += 1
                out_t[nrow] = t
                out_k[nrow] = k
                out_s[nrow] = s
                out_b[nrow] = nb
                out_v[nrow] = sv
                nrow += 1
        line += 1
        p = eol + 1
    return nrow, nnew, snew, dnew, nbad, nskip


def _type_new(trace: Trace, data: bytes, d0: int, doff: np.ndarray, dlen: np.ndarray, off: np.ndarray,
              ln: np.ndarray, ndir: np.ndarray, nkey: np.ndarray) -> None:
    """Type the block's new directories (one search each), then the block's new files whose
    directory was new or types nothing (one search each, on the whole path when needed)."""
    types = trace.types
    for i, (o, n) in enumerate(zip(doff.tolist(), dlen.tolist())):
        trace.dir_type[d0 + i] = types.dir_index(data[o:o + n].decode("utf-8", "surrogateescape"))
    if not len(off):
        return
    dtyp = trace.dir_type[ndir]
    typed = dtyp >= 0
    trace.key_type[nkey[typed]] = dtyp[typed]
    for i in np.flatnonzero(~typed).tolist():
        o, n = int(off[i]), int(ln[i])
        trace.key_type[nkey[i]] = types.path_index(data[o:o + n].decode("utf-8", "surrogateescape"))


def _op_table() -> tuple[np.ndarray, np.ndarray]:
    off = np.zeros(len(_OPS_READ) + 1, dtype=np.int64)
    for i, o in enumerate(_OPS_READ):
        off[i + 1] = off[i] + len(o)
    return np.frombuffer(b"".join(_OPS_READ), dtype=np.uint8).copy(), off


def _header(path: str, cols: CsvColumns) -> tuple[list[str], int]:
    try:
        with open(path, "rb") as fh:
            first = fh.readline()
    except FileNotFoundError:
        raise CacheInputError(path, "no such file") from None
    except IsADirectoryError:
        raise CacheInputError(path, "is a directory, not a CSV log") from None
    except OSError as e:
        raise CacheInputError(path, e.strerror or "cannot be read") from None
    text = first.decode("utf-8", "replace").rstrip("\r\n")
    try:
        header = [h.strip() for h in next(csv.reader(io.StringIO(text), delimiter=cols.delimiter), [])]
    except csv.Error as e:  # a NUL or a lone CR in the first line: a binary file, not a CSV log
        raise CacheInputError(path, f"not a CSV header row ({e})", line=1) from None
    if not header or header == [""]:
        raise CacheInputError(path, "empty: no header row", line=1)
    return header, len(first)


def read_csv_log(path: str, trace: Trace, cols: CsvColumns, issues: InputIssues,
                 block_bytes: int = 16 << 20) -> Iterator[RequestBatch]:
    header, skip = _header(path, cols)
    want = [cols.time, cols.file, cols.size]
    missing = [c for c in want + [c for c in (cols.nbytes, cols.op) if c] if c not in header]
    if cols.server and cols.server not in header and cols.server != "server":
        missing.append(cols.server)
    if missing:
        shown = terminal_text(", ".join(header))
        shown = shown if len(shown) <= 200 else shown[:199] + "…"
        raise CacheInputError(path, f"no column {', '.join(map(repr, missing))} in the header "
                                    f"({shown}); map columns with --csv-* options", line=1)
    idx = [header.index(c) for c in want]
    idx.append(header.index(cols.server) if cols.server and cols.server in header else -1)
    idx.append(header.index(cols.nbytes) if cols.nbytes else -1)
    idx.append(header.index(cols.op) if cols.op else -1)
    need = max(idx) + 1
    colarr = np.asarray(idx + [need], dtype=np.int64)
    if idx[3] < 0:
        trace.server_of("")
    delim = ord(cols.delimiter)
    ops, op_off = _op_table()
    line = 2
    carry = b""
    with open(path, "rb") as fh:
        fh.seek(skip)
        while True:
            chunk = fh.read(block_bytes)
            data = carry + chunk
            if not data:
                break
            if chunk:
                cut = data.rfind(b"\n") + 1
                if cut == 0:
                    carry = data
                    continue
                carry, data = data[cut:], data[:cut]
            else:
                carry = b""
            buf = np.frombuffer(data, dtype=np.uint8)
            newlines = data.count(b"\n")
            rows = newlines + 1
            kt, st, dt = trace.key_table, trace.server_table, trace.dir_table
            kt.reserve(rows)
            st.reserve(rows if idx[3] >= 0 else 0)
            trace.reserve_keys(rows)
            s0 = len(st)
            out_t = np.empty(rows, np.float64)
            out_k, out_s, out_b, out_v = (np.empty(rows, np.int64) for _ in range(4))
            new_off, new_len, new_dir, new_key = (np.empty(rows, np.int64) for _ in range(4))
            dnew_off, dnew_len = np.empty(rows, np.int64), np.empty(rows, np.int64)
            d0 = len(dt)
            snew_off, snew_len = np.empty(rows, np.int64), np.empty(rows, np.int64)
            bad_line, bad_code = np.empty(rows, np.int64), np.empty(rows, np.int64)
            nrow, nnew, snew, dnew, nbad, nskip = parse_block(
                buf, len(buf), delim, colarr, line, kt.slots, kt.count, st.slots, st.count, dt.slots, dt.count,
                trace.dir_type, trace.key_type, out_t, out_k, out_s, out_b, out_v, new_off, new_len, new_dir, new_key,
                snew_off, snew_len, dnew_off, dnew_len, bad_line, bad_code, ops, op_off)
            line += newlines
            _type_new(trace, data, d0, dnew_off[:dnew], dnew_len[:dnew], new_off[:nnew], new_len[:nnew],
                      new_dir[:nnew], new_key[:nnew])
            for o, n in zip(snew_off[:snew].tolist(), snew_len[:snew].tolist()):
                trace.server_names.append(data[o:o + n].decode("utf-8", "surrogateescape"))
            assert len(st) == s0 + snew
            for ln, code in zip(bad_line[:nbad].tolist(), bad_code[:nbad].tolist()):
                issues.bad(ln, BAD_REASONS[code])
            issues.skip("not a read (op column)", int(nskip))
            if nrow:
                issues.records += nrow
                keys = out_k[:nrow]
                yield RequestBatch(out_t[:nrow], keys, out_s[:nrow], out_b[:nrow], out_v[:nrow],
                                   trace.types_of(keys))
            if not chunk:
                break
