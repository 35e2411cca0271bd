"""A scenario's ``traffic:`` entries (docs/lab.md): production traffic between lab hosts, with no
iperf3 (advisor/lab/traffic.py runs it; advisor/lab/traffic_lab.py starts it at ``lab up``).

``{from: [workers], to: [servers], port: 1094, rate: 2MB/s, cc: cubic}``: a reader on each ``from``
host reads from each ``to`` host's server in turn, on ``port``; ``rate`` (bytes/s: ``2MB/s``,
``500KB/s``, or a bit rate such as ``16mbit``) makes it an I/O-light job that reads no faster;
``cc`` is the congestion control of the servers' sockets (TCP_CONGESTION); ``chunk`` what a reader
asks of a server per turn.
"""

from __future__ import annotations

import re
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator

from advisor.util.units import UnitError, parse_rate_bps, parse_size_bytes

_BYTES_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmMgG]?)B/s\s*$")
_MULT = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9}
_CC = re.compile(r"[a-z][a-z0-9_]{0,15}")


def parse_bytes_rate(value: Any) -> int:
    """Bytes per second: ``2MB/s`` (decimal prefixes), a bit rate (``16mbit``: / 8), or a number."""
    if isinstance(value, bool):
        raise ValueError(f"not a rate: {value!r}")
    if isinstance(value, (int, float)):
        if not value > 0:
            raise ValueError(f"rate must be positive, got {value!r}")
        return int(value)
    m = _BYTES_RATE.match(str(value))
    if m:
        out = int(float(m.group(1)) * _MULT[m.group(2).lower()])
    else:
        try:
            out = parse_rate_bps(value) // 8
        except UnitError:
            raise ValueError(f"not a rate: {str(value)[:40]!r} (use e.g. 2MB/s or 16mbit)") from None
    if out <= 0:
        raise ValueError(f"rate must be positive, got {value!r}")
    return out


class Traffic(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    #: the readers' hosts (selectors: names, groups, roles)
    src: list[str] = Field(alias="from", min_length=1)
    #: the servers' hosts
    dst: list[str] = Field(alias="to", min_length=1)
    port: int = Field(1094, ge=1, le=65535)
    #: bytes/s a reader reads at (None: as fast as it can)
    rate: int | None = None
    #: the servers' congestion control, per socket
    cc: str | None = None
    chunk: int = Field(8 << 20, ge=4096, le=1 << 34)

    @field_validator("src", "dst", mode="before")
    @classmethod
    def _listify(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else v

    @field_validator("rate", mode="before")
    @classmethod
    def _rate(cls, v: Any) -> int | None:
        return None if v is None else parse_bytes_rate(v)

    @field_validator("chunk", mode="before")
    @classmethod
    def _chunk(cls, v: Any) -> int:
        try:
            return parse_size_bytes(v)
        except UnitError as exc:
            raise ValueError(str(exc)) from None

    @field_validator("cc")
    @classmethod
    def _cc(cls, v: str | None) -> str | None:
        if v is not None and not _CC.fullmatch(v):
            raise ValueError(f"{v!r} is not a congestion control name like cubic")
        return v


class TrafficHosts(Protocol):
    """What the traffic reads of a scenario (advisor.lab.scenario.Scenario): its entries and its
    host selection."""

    traffic: list[Traffic]

    def select(self, selector: str) -> list: ...

    def select_all(self, selectors: list[str]) -> list: ...


def check_traffic(sc: TrafficHosts) -> None:
    """Every selector names a host, group or role; one server (one congestion control) per host and port."""
    served: dict[tuple[str, int], str | None] = {}
    for i, t in enumerate(sc.traffic):
        for sel in t.src + t.dst:
            if not sc.select(sel):
                raise ValueError(f"traffic[{i}]: selector {sel!r} matches no host, group or role")
        for h in sc.select_all(t.dst):
            cc = served.setdefault((h.name, t.port), t.cc)
            if cc != t.cc:
                raise ValueError(f"traffic[{i}]: {h.name}'s server on port {t.port} is given congestion control "
                                 f"{t.cc!r} and {cc!r}: one server per host and port")


def traffic_servers(sc: TrafficHosts) -> dict[tuple[str, int], str | None]:
    """(server host, port) -> its congestion control, for every server the traffic needs."""
    out: dict[tuple[str, int], str | None] = {}
    for t in sc.traffic:
        for h in sc.select_all(t.dst):
            out.setdefault((h.name, t.port), t.cc)
    return out


def traffic_readers(sc: TrafficHosts) -> list[tuple[str, list[str], Traffic]]:
    """(reader host, its servers, the entry) for every reader: a host never reads from itself."""
    out = []
    for t in sc.traffic:
        servers = [h.name for h in sc.select_all(t.dst)]
        for h in sc.select_all(t.src):
            mine = [s for s in servers if s != h.name]
            if mine:
                out.append((h.name, mine, t))
    return out
