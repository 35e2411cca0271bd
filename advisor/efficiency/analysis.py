"""Streaming aggregates of job records: distributions per node group, host and job-length bin.

Memory is bounded by the number of distinct hosts and bins, never by the number of jobs:
every distribution is a sparse histogram (efficiency in steps of 0.005; CPU and wall per event
on a log scale, 0.5% steps), from which mean, median, p10 and p90 are read; a group of up to 1,000
jobs (of at most 64 per host and length bin) keeps their values and its quantiles are exact
(advisor.efficiency.histogram).

Hosts are named as the site files name them, whatever source a record came from: a name's first DNS
label, lowercase (``WN01.example.org`` and ``wn01`` are one host); an IP address stays as it is
(:func:`host_key`).
"""

from __future__ import annotations

import ipaddress
from array import array
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from advisor.efficiency.histogram import CELL_EXACT_LIMIT, Histogram
from advisor.efficiency.records import FAILED_STATUSES, JobRecord, host_prefix, short_host
from advisor.efficiency.storage_groups import StorageGroups

EVENT_EDGES = (100, 1000, 10000, 100000)
EVENT_LABELS = ("<=100", "101-1000", "1001-10000", "10001-100000", ">100000")
WALL_EDGES = (600, 3600, 4 * 3600, 12 * 3600, 24 * 3600)
WALL_LABELS = ("<10m", "10m-1h", "1h-4h", "4h-12h", "12h-24h", ">24h")


def event_bin(events: int) -> int:
    """0 for <= 100 events, ... 4 for > 100000 (IFCA's table)."""
    return bisect_left(EVENT_EDGES, events)


def wall_bin(wall: float) -> int:
    return bisect_right(WALL_EDGES, wall)


# a cell is the aggregate of the jobs of one (host, length bin):
# [jobs, cpu, core_wall, eff_sum, eff_bins, exact efficiencies (None beyond CELL_EXACT_LIMIT)]
_JOBS, _CPU, _CORE_WALL, _EFF_SUM, _BINS, _EXACT = range(6)


def host_key(name: str) -> str:
    """One name per host across sources: the first DNS label, lowercase; an IP address as it is."""
    try:
        return str(ipaddress.ip_address(name))
    except ValueError:
        return short_host(name).lower() or name
NO_BIN = -1       # jobs that did not complete (not in the length table)
WALL_BIN0 = 10    # wall-time bins are 10.., event bins 0..


class Group:
    """Efficiency of a set of jobs (merged cells), plus totals for the core-weighted efficiency."""

    __slots__ = ("eff", "cpu", "core_wall")

    def __init__(self) -> None:
        self.eff = Histogram()
        self.cpu = 0.0
        self.core_wall = 0.0

    @property
    def jobs(self) -> int:
        return self.eff.count

    def merge_cell(self, c: list) -> None:
        self.eff.merge_bins(c[_BINS], c[_JOBS], c[_EFF_SUM], c[_EXACT])
        self.cpu += c[_CPU]
        self.core_wall += c[_CORE_WALL]

    def stats(self) -> dict[str, Any]:
        d = self.eff.stats()
        d["weighted"] = round(self.cpu / self.core_wall, 4) if self.core_wall > 0 else None
        return d


class Summary:
    """Running aggregates over records; nothing per job is kept.

    Jobs are aggregated into cells keyed by (host, length bin); per-host, per-group,
    per-bin and overall distributions are merges of cells, computed when asked for.
    """

    def __init__(self, group_of: Callable[[str], list[str]] | None = None):
        self.records = 0
        self.by_status: dict[str, int] = {}
        self.no_efficiency = 0
        self.zero_cpu = 0
        self.cells: dict[tuple[str, int], list] = {}
        self.cpu_per_event = [Histogram(log=True) for _ in EVENT_LABELS]
        self.wall_per_event = [Histogram(log=True) for _ in EVENT_LABELS]
        self.with_events = 0
        self.wasted_core_seconds = 0.0
        self.total_core_seconds = 0.0
        self.failed_jobs = 0
        self.wasted_by_host: Counter[str] = Counter()
        self._group_of = group_of or (lambda h: [host_prefix(h)])
        #: the names seen -> their host key (a host's name is normalised once)
        self._host_keys: dict[str, str] = {}
        #: jobs whose accounting carries their read volume, by the storage they read
        self.storage = StorageGroups()
        #: relative efficiency fall that marks a storage group I/O-bound (``--io-drop``)
        self.io_drop = 0.2

    def add(self, rec: JobRecord) -> None:
        self.add_values(rec.host, rec.cores, rec.cpu_seconds, rec.wall_seconds, rec.status, rec.events)
        if rec.read_mb is not None:
            self.storage.add(rec)

    def add_values(self, host: str | None, cores: float | None, cpu: float | None, wall: float | None,
                   status: str, events: int | None) -> None:
        self.records += 1
        bs = self.by_status
        bs[status] = bs.get(status, 0) + 1
        if wall is None or not cores or wall <= 0:
            self.no_efficiency += 1
            return
        host = "(unknown)" if host is None else self._host_key(host)
        cw = wall * cores
        self.total_core_seconds += cw
        if status in FAILED_STATUSES:
            self.failed_jobs += 1
            self.wasted_core_seconds += cw
            self.wasted_by_host[host] += cw
        if cpu is None or cw <= 0:
            self.no_efficiency += 1
            return
        eff = cpu / cw
        try:
            k = int(eff * 200 + 0.5)
        except (OverflowError, ValueError):  # CPU or core-wall time at the float range's end
            self.no_efficiency += 1
            return
        if status == "completed" or status == "running":
            if events:
                b = bisect_left(EVENT_EDGES, events)
                self.with_events += 1
                self.cpu_per_event[b].add(cpu / events)
                self.wall_per_event[b].add(wall / events)
            else:
                b = WALL_BIN0 + bisect_right(WALL_EDGES, wall)
        else:
            b = NO_BIN
        c = self.cells.get((host, b))
        if c is None:
            c = self.cells[(host, b)] = [0, 0.0, 0.0, 0.0, {}, array("d")]
        c[0] += 1
        c[1] += cpu
        c[2] += cw
        c[3] += eff
        h = c[4]
        h[k] = h.get(k, 0) + 1
        exact = c[5]
        if exact is not None:
            if len(exact) < CELL_EXACT_LIMIT:
                exact.append(eff)
            else:
                c[5] = None
        if cpu == 0:
            self.zero_cpu += 1

    def _host_key(self, name: str) -> str:
        key = self._host_keys.get(name)
        if key is None:
            key = self._host_keys[name] = host_key(name)
        return key

    def extend(self, recs: Iterable[JobRecord]) -> "Summary":
        for r in recs:
            self.add(r)
        return self

    # ---- views (merges of cells) ---------------------------------------------------------

    @property
    def overall(self) -> Group:
        g = Group()
        for c in self.cells.values():
            g.merge_cell(c)
        return g

    @property
    def hosts(self) -> dict[str, Group]:
        out: dict[str, Group] = {}
        for (h, _b), c in self.cells.items():
            out.setdefault(h, Group()).merge_cell(c)
        return out

    @property
    def groups(self) -> dict[str, Group]:
        return self._groups(self.hosts)

    def _groups(self, hosts: dict[str, Group]) -> dict[str, Group]:
        out: dict[str, Group] = {}
        for h, g in hosts.items():
            for name in (self._group_of(h) if h != "(unknown)" else ["(unknown)"]):
                gg = out.setdefault(name, Group())
                gg.eff.merge(g.eff)
                gg.cpu += g.cpu
                gg.core_wall += g.core_wall
        return out

    def bin_group(self, b: int) -> Group:
        g = Group()
        for (_h, bb), c in self.cells.items():
            if bb == b:
                g.merge_cell(c)
        return g

    def bin_hosts(self, b: int) -> dict[str, Histogram]:
        out: dict[str, Histogram] = {}
        for (h, bb), c in self.cells.items():
            if bb == b:
                out.setdefault(h, Histogram()).merge_bins(c[_BINS], c[_JOBS], c[_EFF_SUM], c[_EXACT])
        return out

    @property
    def event_bins(self) -> list[Group]:
        return [self.bin_group(i) for i in range(len(EVENT_LABELS))]

    @property
    def length_kind(self) -> str:
        return "events" if self.with_events else "wall"

    def length_table(self) -> list[dict[str, Any]]:
        if self.length_kind == "events":
            labels, b0 = EVENT_LABELS, 0
        else:
            labels, b0 = WALL_LABELS, WALL_BIN0
        out = []
        for i, label in enumerate(labels):
            g = self.bin_group(b0 + i)
            if not g.jobs:
                continue
            d = {"bin": label, **g.stats()}
            if self.length_kind == "events":
                d["cpu_per_event_median"] = _round(self.cpu_per_event[i].quantile(0.5))
                d["wall_per_event_median"] = _round(self.wall_per_event[i].quantile(0.5))
            out.append(d)
        return out

    def to_dict(self, by: tuple[str, ...] = ("host", "group", "length", "storage")) -> dict[str, Any]:
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
        hosts = self.hosts if "group" in by or "host" in by else {}
        if "group" in by:
            d["by_group"] = {k: v.stats() for k, v in sorted(self._groups(hosts).items())}
        if "host" in by:
            d["by_host"] = {k: v.stats() for k, v in sorted(hosts.items())}
        if "length" in by:
            d["length_kind"] = self.length_kind
            d["by_length"] = self.length_table()
        if "storage" in by:
            d["by_storage"] = self.storage.to_dict(self.io_drop)
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
