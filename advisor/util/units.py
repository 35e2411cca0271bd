"""Parsing of the rate and size notations that appear in site files and tool output."""

from __future__ import annotations

import re
from decimal import Decimal

#: the longest number (digits and point) a rate or size may have: 10**24 bit/s or bytes is far past any
#: real link or disk, and the bound keeps a hostile 400-digit value from overflowing a float or reaching
#: Python's int digit limit
MAX_NUMBER_CHARS = 24
_NUM = r"(?P<num>\d+(?:\.\d+)?)"


class UnitError(ValueError):
    """A rate or size that is not one (bad notation, not positive, absurdly large)."""


def _decimal(num: str, value: object) -> Decimal:
    if len(num) > MAX_NUMBER_CHARS:
        raise UnitError(f"number too long in {str(value)[:40]!r} (at most {MAX_NUMBER_CHARS} characters)")
    return Decimal(num)


_RATE_RE = re.compile(
    r"^\s*" + _NUM + r"\s*(?P<prefix>[kKmMgGtT]?)(?P<unit>bit|bps|b/s|bit/s|b)?\s*$"
)
_RATE_MULT = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}


def parse_rate_bps(value: str | int | float) -> int:
    """A link or throughput rate in bits per second.

    Accepts a number (bits/s) or strings like ``1gbit``, ``10G``, ``940mbit``, ``1Gb/s``,
    ``100Mbps``. Decimal prefixes, as for network rates (tc, iperf3, NIC speeds).
    """
    if isinstance(value, bool):
        raise UnitError(f"not a rate: {value!r}")
    if isinstance(value, (int, float)):
        if value != value or value in (float("inf"), float("-inf")):
            raise UnitError(f"not a rate: {value!r}")
        if value <= 0:
            raise UnitError(f"rate must be positive, got {value!r}")
        if abs(value) >= 10**MAX_NUMBER_CHARS:
            raise UnitError("rate too large: more than %d digits" % MAX_NUMBER_CHARS)
        return int(value)
    m = _RATE_RE.match(str(value))
    if not m:
        raise UnitError(f"not a rate: {str(value)[:60]!r} (use e.g. 1gbit, 10G, 940mbit)")
    bps = int(_decimal(m.group("num"), value) * _RATE_MULT[m.group("prefix").lower()])
    if bps <= 0:
        raise UnitError(f"rate must be positive, got {value!r}")
    return bps


_SIZE_RE = re.compile(r"^\s*" + _NUM + r"\s*(?P<suffix>[kKmMgGtTpP]?)(?:i?[bB])?\s*$")
_SIZE_MULT = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40, "p": 2**50}


def parse_size_bytes(value: str | int) -> int:
    """A memory/storage size in bytes: ``512M``, ``1G``, ``8K``, ``1073741824``, ``1g``, ``512k``.

    Binary multiples (GPFS pagepool, XCache pfc.ram and pfc.blocksize use 2**10 steps).
    """
    if isinstance(value, bool):
        raise UnitError(f"not a size: {value!r}")
    if isinstance(value, int):
        if abs(value) >= 10**MAX_NUMBER_CHARS:
            raise UnitError("size too large: more than %d digits" % MAX_NUMBER_CHARS)
        return value
    m = _SIZE_RE.match(str(value))
    if not m:
        raise UnitError(f"not a size: {str(value)[:60]!r}")
    return int(_decimal(m.group("num"), value) * _SIZE_MULT[m.group("suffix").lower()])


def format_bps(bps: float | None) -> str:
    """Human rate: ``941 Mb/s``, ``4.50 Gb/s``."""
    if bps is None:
        return "-"
    if bps >= 10**9:
        return f"{bps / 1e9:.2f} Gb/s"
    if bps >= 10**6:
        return f"{bps / 1e6:.0f} Mb/s"
    if bps >= 10**3:
        return f"{bps / 1e3:.0f} kb/s"
    return f"{bps:.0f} b/s"
