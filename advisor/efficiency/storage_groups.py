"""Jobs grouped by the storage they read, with efficiency against read rate per group.

A job enters when its accounting carries its read volume (CMS Chirp ``ChirpCMSSWReadBytes``,
the FJR's storage statistics): its read rate is MB read per core-second of wall time
(``read_mb / (wall_seconds x cores)``), binned on ``RATE_EDGES``. The storage is the site it read
most from (``ChirpCMSSW_SiteIO``, the FJR's XrdSiteStatistics) else the site it ran at; jobs
without one are under ``(unknown)``.

The I/O-bound signature of a group: its median efficiency falls from the lowest read-rate bin
to the highest (each with at least ``min_jobs`` jobs) by at least ``io_drop`` (relative). Jobs that
read faster are waiting for that storage. Where the accounting also says how long the job
spent reading (``ChirpCMSSWReadTimeMsecs``), ``read_wait_share`` is read time / wall time over
the group's jobs. Memory: groups x bins histograms, never per job.
"""

from __future__ import annotations

from bisect import bisect_right
from typing import Any

from advisor.efficiency.histogram import Histogram
from advisor.efficiency.records import JobRecord

#: MB per core-second of wall time
RATE_EDGES = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0)
RATE_LABELS = ("<0.05", "0.05-0.1", "0.1-0.25", "0.25-0.5", "0.5-1", "1-2", "2-5", ">5")
UNKNOWN = "(unknown)"


class StorageGroup:
    __slots__ = ("bins", "read_mb", "read_seconds", "timed_wall", "cpu", "core_wall")

    def __init__(self) -> None:
        self.bins: dict[int, Histogram] = {}
        self.read_mb = 0.0
        #: read time and the wall time of the jobs that report it
        self.read_seconds = 0.0
        self.timed_wall = 0.0
        self.cpu = 0.0
        self.core_wall = 0.0

    @property
    def jobs(self) -> int:
        return sum(h.count for h in self.bins.values())


class StorageGroups:
    """Running aggregates per storage (see the module docstring)."""

    def __init__(self) -> None:
        self.groups: dict[str, StorageGroup] = {}

    def add(self, rec: JobRecord) -> None:
        if rec.read_mb is None or rec.status not in ("completed", "running"):
            return
        eff = rec.efficiency
        if eff is None or rec.wall_seconds is None or not rec.cores:
            return
        core_wall = rec.wall_seconds * rec.cores
        g = self.groups.get(rec.storage or UNKNOWN)
        if g is None:
            g = self.groups[rec.storage or UNKNOWN] = StorageGroup()
        b = bisect_right(RATE_EDGES, rec.read_mb / core_wall)
        h = g.bins.get(b)
        if h is None:
            h = g.bins[b] = Histogram()
        h.add(eff)
        g.read_mb += rec.read_mb
        g.cpu += rec.cpu_seconds or 0.0
        g.core_wall += core_wall
        if rec.read_seconds is not None:
            g.read_seconds += rec.read_seconds
            g.timed_wall += rec.wall_seconds

    def signature(self, g: StorageGroup, io_drop: float, min_jobs: int) -> dict[str, Any]:
        """The efficiency drop from the slowest-reading bin to the fastest (bins of >= min_jobs)."""
        full = sorted(b for b, h in g.bins.items() if h.count >= min_jobs)
        if len(full) < 2:
            return {"io_bound": None, "efficiency_drop": None,
                    "why": f"needs two read-rate bins of >= {min_jobs} jobs"}
        lo, hi = g.bins[full[0]].quantile(0.5) or 0.0, g.bins[full[-1]].quantile(0.5) or 0.0
        drop = 1 - hi / lo if lo > 0 else 0.0
        return {"io_bound": drop >= io_drop, "efficiency_drop": round(drop, 4),
                "from_bin": RATE_LABELS[full[0]], "to_bin": RATE_LABELS[full[-1]],
                "from_median": round(lo, 4), "to_median": round(hi, 4)}

    def to_dict(self, io_drop: float = 0.2, min_jobs: int = 5) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in sorted(self.groups):
            g = self.groups[name]
            merged = Histogram()
            for h in g.bins.values():
                merged.merge(h)
            d: dict[str, Any] = {**merged.stats(), "weighted": round(g.cpu / g.core_wall, 4) if g.core_wall else None,
                                 "read_gb": round(g.read_mb / 1e3, 3),
                                 "read_mb_per_core_s": round(g.read_mb / g.core_wall, 4) if g.core_wall else None,
                                 "read_wait_share": round(g.read_seconds / g.timed_wall, 4) if g.timed_wall else None,
                                 "by_read_rate": [{"bin": RATE_LABELS[b], **g.bins[b].stats()} for b in sorted(g.bins)]}
            d.update(self.signature(g, io_drop, min_jobs))
            out[name] = d
        return out
