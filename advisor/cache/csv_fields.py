"""Field parsers of the compiled CSV reader: byte counts, epoch or ISO 8601 times, read ops."""

from __future__ import annotations

import numpy as np
from advisor.cache.jit import njit


#: the largest byte count a CSV field may hold: the simulator keeps sizes as signed 64-bit
#: integers, so a larger number (or one of 400 digits) is a bad line, never a wrapped value
MAX_BYTE_COUNT = (1 << 63) - 1


@njit(cache=True)
def _int(buf, a, b):
    """A decimal byte count in ``buf[a:b]`` (blanks around it allowed); -1 when it is not one or is
    above MAX_BYTE_COUNT."""
    while a < b and (buf[a] == 32 or buf[a] == 9):
        a += 1
    while b > a and (buf[b - 1] == 32 or buf[b - 1] == 9 or buf[b - 1] == 13):
        b -= 1
    if a == b:
        return -1
    v = 0
    for i in range(a, b):
        c = np.int64(buf[i]) - 48  # a byte as a signed number (also when run interpreted)
        if c < 0 or c > 9:
            return -1
        if v > (MAX_BYTE_COUNT - c) // 10:
            return -1
        v = v * 10 + c
    return v


@njit(cache=True)
def _days_from_civil(y, m, d):
    y -= m <= 2
    era = (y if y >= 0 else y - 399) // 400
    yoe = y - era * 400
    doy = (153 * (m + (-3 if m > 2 else 9)) + 2) // 5 + d - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


@njit(cache=True)
def _dig(buf, a, n):
    v = 0
    for i in range(a, a + n):
        c = np.int64(buf[i]) - 48  # a byte as a signed number (also when run interpreted)
        if c < 0 or c > 9:
            return -1
        v = v * 10 + c
    return v


@njit(cache=True)
def _time(buf, a, b):
    """Epoch seconds from a decimal number or an ISO 8601 UTC time; NaN when neither."""
    while a < b and (buf[a] == 32 or buf[a] == 9):
        a += 1
    while b > a and (buf[b - 1] == 32 or buf[b - 1] == 9 or buf[b - 1] == 13 or buf[b - 1] == 90):
        b -= 1
    if a == b:
        return np.nan
    if b - a >= 19 and buf[a + 4] == 45 and buf[a + 7] == 45 and buf[a + 13] == 58:
        y, mo, d = _dig(buf, a, 4), _dig(buf, a + 5, 2), _dig(buf, a + 8, 2)
        h, mi, s = _dig(buf, a + 11, 2), _dig(buf, a + 14, 2), _dig(buf, a + 17, 2)
        if y < 0 or mo < 1 or mo > 12 or d < 1 or d > 31 or h < 0 or h > 23 or mi < 0 or mi > 59 or s < 0 or s > 60:
            return np.nan
        frac, scale = 0.0, 0.1
        if b - a > 19:
            if buf[a + 19] != 46:
                return np.nan
            for i in range(a + 20, b):
                c = np.int64(buf[i]) - 48  # a byte as a signed number (also when run interpreted)
                if c < 0 or c > 9:
                    return np.nan
                frac += c * scale
                scale /= 10
        return _days_from_civil(y, mo, d) * 86400.0 + h * 3600 + mi * 60 + s + frac
    v, seen, dot, scale = 0.0, False, False, 0.1
    for i in range(a, b):
        c = np.int64(buf[i])
        if c == 46 and not dot:
            dot = True
            continue
        c -= 48
        if c < 0 or c > 9:
            return np.nan
        seen = True
        if dot:
            v += c * scale
            scale /= 10
        else:
            v = v * 10 + c
    return v if seen else np.nan


@njit(cache=True)
def _is_read(buf, a, b, ops, op_off):
    while a < b and (buf[a] == 32 or buf[a] == 9):
        a += 1
    while b > a and (buf[b - 1] == 32 or buf[b - 1] == 9 or buf[b - 1] == 13):
        b -= 1
    for j in range(len(op_off) - 1):
        lo, hi = op_off[j], op_off[j + 1]
        if hi - lo != b - a:
            continue
        same = True
        for i in range(b - a):
            c = buf[a + i]
            if 65 <= c <= 90:
                c += 32
            if c != ops[lo + i]:
                same = False
                break
        if same:
            return True
    return False
