"""Streaming aggregates of job records: distributions per node group, host and job-length bin.

Memory is bounded by the number of distinct hosts and bins, never by the number of jobs:
every distribution is a sparse histogram (efficiency in steps of 0.001; CPU and wall per event
on a log scale, 0.5% steps), from which mean, median, p10 and p90 are read.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from advisor.efficiency.records import FAILED_STATUSES, JobRecord, host_prefix, short_host

EVENT_EDGES = (100, 1000, 10000, 100000)
EVENT_LABELS = ("<=100", "101-1000", "1001-10000", "10001-100000", ">100000")
WALL_EDGES = (600, 3600, 4 * 3600, 12 * 3600, 24 * 3600)
WALL_LABELS = ("<10m", "10m-1h", "1h-4h", "4h-12h", "12h-24h", ">24h")


def event_bin(events: int) -> int:
    for i, e in enumerate(EVENT_EDGES):
        if events <= e:
            return i
    return len(EVENT_EDGES)


def wall_bin(wall: float) -> int:
    for i, e in enumerate(WALL_EDGES):
        if wall < e:
            return i
    return len(WALL_EDGES)


class Histogram:
    """A sparse histogram: ``linear`` in steps of ``step``, or ``log`` (relative steps)."""

    __slots__ = ("bins", "count", "total", "log", "step")

    def __init__(self, log: bool = False, step: float = 0.001):
        self.bins: Counter[int] = Counter()
        self.count = 0
        self.total = 0.0
        self.log = log
        self.step = step

    def add(self, x: float) -> None:
        self.count += 1
        self.total += x
        if self.log:
            k = -100000 if x <= 0 else int(math.floor(math.log(x) / 0.005))
        else:
            k = int(x / self.step + 0.5)
        self.bins[k] += 1

    def merge(self, other: "Histogram") -> None:
        self.bins.update(other.bins)
        self.count += other.count
        self.total += other.total

    def _value(self, k: int) -> float:
        if self.log:
            return 0.0 if k == -100000 else math.exp((k + 0.5) * 0.005)
        return k * self.step

    def quantile(self, q: float) -> float | None:
        if not self.count:
            return None
        target = q * (self.count - 1)
        seen = 0
        for k in sorted(self.bins):
            seen += self.bins[k]
            if seen > target:
                return self._value(k)
        return self._value(max(self.bins))

    @property
    def mean(self) -> float | None:
        return self.total / self.count if self.count else None

    def stats(self, digits: int = 4) -> dict[str, Any]:
        r = (lambda v: None if v is None else round(v, digits))
        return {
            "count": self.count,
            "mean": r(self.mean),
            "median": r(self.quantile(0.5)),
            "p10": r(self.quantile(0.1)),
            "p90": r(self.quantile(0.9)),
        }


class Group:
    """Efficiency of a set of jobs, plus the totals that give the core-weighted efficiency."""

    __slots__ = ("eff", "cpu", "core_wall", "jobs")

    def __init__(self) -> None:
        self.eff = Histogram()
        self.cpu = 0.0
        self.core_wall = 0.0
        self.jobs = 0

    def add(self, eff: float, cpu: float, core_wall: float) -> None:
        self.jobs += 1
        self.eff.add(eff)
        self.cpu += cpu
        self.core_wall += core_wall

    def stats(self) -> dict[str, Any]:
        d = self.eff.stats()
        d["weighted"] = round(self.cpu / self.core_wall, 4) if self.core_wall > 0 else None
        return d


class LengthBin(Group):
    __slots__ = ("cpu_per_event", "wall_per_event", "hosts")

    def __init__(self) -> None:
        super().__init__()
        self.cpu_per_event = Histogram(log=True)
        self.wall_per_event = Histogram(log=True)
        self.hosts: dict[str, Histogram] = {}


class Summary:
    """Running aggregates over records (``add`` one at a time; nothing per job is kept)."""

    def __init__(self, group_of: Callable[[str], list[str]] | None = None):
        self.records = 0
        self.by_status: Counter[str] = Counter()
        self.no_efficiency = 0
        self.zero_cpu = 0
        self.overall = Group()
        self.hosts: dict[str, Group] = {}
        self.groups: dict[str, Group] = {}
        self.event_bins = [LengthBin() for _ in EVENT_LABELS]
        self.wall_bins = [LengthBin() for _ in WALL_LABELS]
        self.with_events = 0
        self.wasted_core_seconds = 0.0
        self.total_core_seconds = 0.0
        self.failed_jobs = 0
        self.wasted_by_host: Counter[str] = Counter()
        self._group_of = group_of or (lambda h: [host_prefix(h)])
        self._groups_cache: dict[str, list[str]] = {}

    def add(self, rec: JobRecord) -> None:
        self.records += 1
        self.by_status[rec.status] += 1
        cpu, wall, cores = rec.cpu_seconds, rec.wall_seconds, rec.cores
        host = rec.host or "(unknown)"
        core_wall = wall * cores if (wall is not None and cores) else None
        if core_wall is not None:
            self.total_core_seconds += core_wall
            if rec.status in FAILED_STATUSES:
                self.failed_jobs += 1
                self.wasted_core_seconds += core_wall
                self.wasted_by_host[host] += core_wall
        if cpu is None or core_wall is None or core_wall <= 0:
            self.no_efficiency += 1
            return
        if cpu == 0:
            self.zero_cpu += 1
        eff = cpu / core_wall
        self.overall.add(eff, cpu, core_wall)
        g = self.hosts.get(host)
        if g is None:
            g = self.hosts[host] = Group()
        g.add(eff, cpu, core_wall)
        groups = self._groups_cache.get(host)
        if groups is None:
            groups = self._groups_cache[host] = self._group_of(host) if rec.host else ["(unknown)"]
        for name in groups:
            gg = self.groups.get(name)
            if gg is None:
                gg = self.groups[name] = Group()
            gg.add(eff, cpu, core_wall)
        if rec.status not in ("completed", "running"):
            return  # length bins compare jobs that did their work
        if rec.events:
            self.with_events += 1
            b = self.event_bins[event_bin(rec.events)]
            b.cpu_per_event.add(cpu / rec.events)
            b.wall_per_event.add(wall / rec.events)
        else:
            b = self.wall_bins[wall_bin(wall)]
        b.add(eff, cpu, core_wall)
        hh = b.hosts.get(host)
        if hh is None:
            hh = b.hosts[host] = Histogram()
        hh.add(eff)

    def extend(self, recs: Iterable[JobRecord]) -> "Summary":
        for r in recs:
            self.add(r)
        return self

    # ---- views --------------------------------------------------------------------------

    @property
    def length_kind(self) -> str:
        return "events" if self.with_events else "wall"

    def length_table(self) -> list[dict[str, Any]]:
        if self.length_kind == "events":
            labels, bins = EVENT_LABELS, self.event_bins
        else:
            labels, bins = WALL_LABELS, self.wall_bins
        out = []
        for label, b in zip(labels, bins):
            if not b.jobs:
                continue
            d = {"bin": label, **b.stats()}
            if self.length_kind == "events":
                d["cpu_per_event_median"] = _round(b.cpu_per_event.quantile(0.5))
                d["wall_per_event_median"] = _round(b.wall_per_event.quantile(0.5))
            out.append(d)
        return out

    def to_dict(self, by: tuple[str, ...] = ("host", "group", "length")) -> dict[str, Any]:
        d: dict[str, Any] = {
            "records": self.records,
            "by_status": dict(sorted(self.by_status.items())),
            "efficiency": self.overall.stats(),
            "no_efficiency": self.no_efficiency,
            "zero_cpu": self.zero_cpu,
            "failed_jobs": self.failed_jobs,
            "wasted_core_hours": round(self.wasted_core_seconds / 3600, 3),
            "total_core_hours": round(self.total_core_seconds / 3600, 3),
            "wasted_share": round(self.wasted_core_seconds / self.total_core_seconds, 4) if self.total_core_seconds else None,
        }
        if "group" in by:
            d["by_group"] = {k: v.stats() for k, v in sorted(self.groups.items())}
        if "host" in by:
            d["by_host"] = {k: v.stats() for k, v in sorted(self.hosts.items())}
        if "length" in by:
            d["length_kind"] = self.length_kind
            d["by_length"] = self.length_table()
        return d


def _round(v: float | None, digits: int = 4) -> float | None:
    if v is None:
        return None
    return float(f"{v:.{digits}g}")


def site_group_mapper(site: Any) -> Callable[[str], list[str]]:
    """Host -> its groups from a site file (matched by full or short name)."""
    table: dict[str, list[str]] = {}
    for h in site.hosts:
        groups = list(h.groups) or [r.value for r in h.roles] or ["(no group)"]
        table[h.name] = groups
        table.setdefault(short_host(h.name), groups)
        if h.address:
            table.setdefault(h.address, groups)

    def group_of(host: str) -> list[str]:
        return table.get(host) or table.get(short_host(host)) or ["(not in site)"]

    return group_of
