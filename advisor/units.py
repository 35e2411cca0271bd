"""Parsing of the rate and size notations that appear in site files and tool output."""

from __future__ import annotations

import re

_RATE_RE = re.compile(
    r"^\s*(?P<num>\d+(?:\.\d+)?)\s*(?P<prefix>[kKmMgGtT]?)(?P<unit>bit|bps|b/s|bit/s|b)?\s*$"
)
_RATE_MULT = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}


def parse_rate_bps(value: str | int | float) -> int:
    """A link or throughput rate in bits per second.

    Accepts a number (bits/s) or strings like ``1gbit``, ``10G``, ``940mbit``, ``1Gb/s``,
    ``100Mbps``. Decimal prefixes, as for network rates (tc, iperf3, NIC speeds).
    """
    if isinstance(value, bool):
        raise ValueError(f"not a rate: {value!r}")
    if isinstance(value, (int, float)):
        if value <= 0:
            raise ValueError(f"rate must be positive, got {value!r}")
        return int(value)
    m = _RATE_RE.match(str(value))
    if not m:
        raise ValueError(f"not a rate: {value!r} (use e.g. 1gbit, 10G, 940mbit)")
    bps = float(m.group("num")) * _RATE_MULT[m.group("prefix").lower()]
    if bps <= 0:
        raise ValueError(f"rate must be positive, got {value!r}")
    return int(bps)


_SIZE_RE = re.compile(r"^\s*(?P<num>\d+(?:\.\d+)?)\s*(?P<suffix>[kKmMgGtTpP]?)(?:i?[bB])?\s*$")
_SIZE_MULT = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40, "p": 2**50}


def parse_size_bytes(value: str | int) -> int:
    """A memory/storage size in bytes: ``512M``, ``1G``, ``8K``, ``1073741824``, ``1g``, ``512k``.

    Binary multiples (GPFS pagepool, XCache pfc.ram and pfc.blocksize use 2**10 steps).
    """
    if isinstance(value, bool):
        raise ValueError(f"not a size: {value!r}")
    if isinstance(value, int):
        return value
    m = _SIZE_RE.match(str(value))
    if not m:
        raise ValueError(f"not a size: {value!r}")
    return int(float(m.group("num")) * _SIZE_MULT[m.group("suffix").lower()])


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
