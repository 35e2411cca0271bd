"""Replacement policies, compiled with numba: LRU, LFU, ARC and XCache's purge.

Every policy holds whole files (byte-sized objects) in one or more cache *areas* of ``capacity``
bytes each; a request is ``(key, area, size, bytes read, type)``. A file larger than the
capacity is never admitted. Per type, ``counts[type] = (accesses, hits, bytes read, bytes read
from the cache)``. State is a set of numpy arrays that grow with the number of distinct keys
(never with the number of requests), so a log is replayed batch by batch.

* ``lru``: evict the least recently used file until the new one fits (as libCacheSim's LRU).
* ``lfu``: evict the least frequently used file, ties by the oldest last access; a file's count
  restarts at 1 when it is re-admitted (as libCacheSim's LFU, which keeps O(1) frequency
  buckets: so does this one).
* ``arc``: Megiddo & Modha's ARC on bytes, in the byte generalisation libCacheSim uses (T1/T2
  resident, B1/B2 ghosts, ``p`` adapted by max(|B2|/|B1|, 1) on a B1 ghost hit and the converse
  on B2; case IV trims B1 when |T1|+|B1|+size > c, else B2 when the directory reaches 2c).
* ``xcache``: XrdPfc's disk cache (``Cache::Purge``, ``FPurgeState``): whole files kept by last
  access; a new file is written if the disk has room (else it is served uncached); every
  ``purge_interval`` seconds of log time, when the disk is above the high watermark, the oldest
  files whose sizes just cover (usage - low watermark) are the candidates, and each is removed
  unless it was opened since the previous purge (XrdPfc's purge-protected set), until enough is
  freed; a protected candidate is skipped, not replaced.
"""

from __future__ import annotations

import numpy as np

from advisor.cache.policy_arc import _arc
from advisor.cache.policy_lfu import _lfu
from advisor.cache.policy_lru import _lru
from advisor.cache.policy_xcache import _xcache

POLICIES = ("lru", "lfu", "arc", "xcache")


def _grow(arr: np.ndarray, n: int, fill: int) -> np.ndarray:
    if n <= len(arr):
        return arr
    new = np.full(max(n, 2 * len(arr)), fill, dtype=arr.dtype)
    new[: len(arr)] = arr
    return new


class CacheState:
    """One policy at one capacity over ``areas`` cache areas; ``run(batch arrays)`` replays a batch."""

    PER_KEY = {"lru": (), "xcache": (),
               "lfu": ("prev", "nxt", "node", "inc", "osize"), "arc": ("prev", "nxt", "lst", "osize")}
    PER_KEY["xcache"] = ("opened",)
    FILL = {"prev": -1, "nxt": -1, "node": -1, "inc": 0, "osize": 0, "lst": -1, "opened": -1}

    def __init__(self, policy: str, capacity: int, n_types: int, *, high: float = 0.95, low: float = 0.90,
                 purge_interval: float = 300.0):
        if policy not in POLICIES:
            raise ValueError(policy)
        self.policy, self.capacity = policy, int(capacity)
        self.high, self.low, self.interval = high, low, float(purge_interval)
        self.counts = np.zeros((n_types, 4), dtype=np.int64)
        self.stats = np.zeros(5, dtype=np.int64)
        self.clock = np.full(1, np.nan)
        for name in self.PER_KEY[policy]:
            setattr(self, name, np.full(1024, self.FILL[name], dtype=np.int64))
        #: lru, xcache: per key [prev, next, size, in cache]
        self.st = self._rows(np.zeros((0, 4), np.int64), 1024) if policy in ("lru", "xcache") else None
        self.n_areas = 0
        lists = 4 if policy == "arc" else 1
        self.head = np.full(0, -1, np.int64)
        self.tail = np.full(0, -1, np.int64)
        self.used = np.zeros(0, np.int64)
        self.lsize = np.zeros(0, np.float64)
        self.p = np.zeros(0, np.float64)
        self._lists = lists
        if policy == "lfu":
            self.pool = np.zeros(1, np.int64)
            self.nfreq = np.zeros(0, np.int64)
            for nm in ("nhead", "ntail", "nprev", "nnext"):
                setattr(self, nm, np.zeros(0, np.int64))
            self._grow_pool(1024)

    def _grow_pool(self, n: int) -> None:
        old = len(self.nfreq)
        if n <= old:
            return
        n = max(n, 2 * old)
        self.nfreq = _grow(self.nfreq, n, 0)
        for nm in ("nhead", "ntail", "nprev"):
            setattr(self, nm, _grow(getattr(self, nm), n, -1))
        nn = _grow(self.nnext, n, -1)
        nn[old:n - 1] = np.arange(old + 1, n)  # free list through nnext
        nn[n - 1] = self.pool[0] if old else -1
        self.nnext = nn
        self.pool[0] = old

    @staticmethod
    def _rows(st: np.ndarray, n: int) -> np.ndarray:
        if n <= len(st):
            return st
        new = np.zeros((max(n, 2 * len(st)), 4), np.int64)
        new[:, :2] = -1
        new[: len(st)] = st
        return new

    def reserve(self, n_keys: int, n_areas: int) -> None:
        if self.st is not None:
            self.st = self._rows(self.st, n_keys)
        for name in self.PER_KEY[self.policy]:
            setattr(self, name, _grow(getattr(self, name), n_keys, self.FILL[name]))
        if n_areas > self.n_areas:
            L, m = self._lists, n_areas
            self.head = np.concatenate([self.head, np.full(L * (m - self.n_areas), -1, np.int64)])
            self.tail = np.concatenate([self.tail, np.full(L * (m - self.n_areas), -1, np.int64)])
            self.used = np.concatenate([self.used, np.zeros(m - self.n_areas, np.int64)])
            self.lsize = np.concatenate([self.lsize, np.zeros(L * (m - self.n_areas), np.float64)])
            self.p = np.concatenate([self.p, np.zeros(m - self.n_areas, np.float64)])
            self.n_areas = m
        if self.policy == "lfu":
            # nodes in use <= files in cache + one per area + the one a hit may add
            self._grow_pool(n_keys + n_areas + 2)

    def run(self, time: np.ndarray, key: np.ndarray, area: np.ndarray, size: np.ndarray, nbytes: np.ndarray,
            ftype: np.ndarray) -> None:
        c = self.capacity
        if self.policy == "lru":
            _lru(key, area, size, nbytes, ftype, c, self.st, self.head, self.tail, self.used, self.counts)
        elif self.policy == "xcache":
            if len(time) and np.isnan(self.clock[0]):
                self.clock[0] = time[0] + self.interval
            _xcache(time, key, area, size, nbytes, ftype, c, self.high, self.low, self.interval, self.clock,
                    self.st, self.opened, self.head, self.tail, self.used, self.counts, self.stats)
        elif self.policy == "lfu":
            _lfu(key, area, size, nbytes, ftype, c, self.prev, self.nxt, self.node, self.inc, self.osize,
                 self.head, self.used, self.pool, self.nfreq, self.nhead, self.ntail, self.nprev, self.nnext,
                 self.counts)
        else:
            _arc(key, area, size, nbytes, ftype, c, self.prev, self.nxt, self.lst, self.osize, self.head,
                 self.tail, self.lsize, self.p, self.counts)

    def extra(self) -> dict:
        if self.policy != "xcache":
            return {}
        return {"purges": int(self.stats[0]), "files_purged": int(self.stats[1]),
                "bytes_purged": int(self.stats[2]), "not_written_disk_full": int(self.stats[3]),
                "protected_skipped": int(self.stats[4]),
                "high_watermark": self.high, "low_watermark": self.low, "purge_interval_s": self.interval}
