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
from numba import njit

from advisor.cache.lists import push_head, push_head_row, push_tail, unlink, unlink_row

POLICIES = ("lru", "lfu", "arc", "xcache")


@njit(cache=True)
def _lru(key, area, size, nbytes, ftype, cap, st, head, tail, used, counts):
    for i in range(len(key)):
        k, a, s, b, ty = key[i], area[i], size[i], nbytes[i], ftype[i]
        counts[ty, 0] += 1
        counts[ty, 2] += b
        if st[k, 3]:
            counts[ty, 1] += 1
            counts[ty, 3] += b
            if head[a] != k:
                unlink_row(k, a, st, head, tail)
                push_head_row(k, a, st, head, tail)
            continue
        if s > cap:
            continue
        while used[a] + s > cap:
            v = tail[a]
            unlink_row(v, a, st, head, tail)
            st[v, 3] = 0
            used[a] -= st[v, 2]
        push_head_row(k, a, st, head, tail)
        st[k, 3] = 1
        st[k, 2] = s
        used[a] += s


@njit(cache=True)
def _xcache(time, key, area, size, nbytes, ftype, cap, high, low, interval, clock, st, opened, head, tail, used,
            counts, stats):
    """``clock[0]``: time of the next purge; ``opened[k]``: the purge count when k was last read;
    stats: (purges run, files purged, bytes purged, not written: disk full, protected skips)."""
    hi_b = high * cap
    lo_b = low * cap
    for i in range(len(key)):
        t = time[i]
        if t >= clock[0]:
            epoch = stats[0]
            for a in range(len(used)):
                if used[a] > hi_b:
                    need = used[a] - lo_b
                    # candidates: the oldest files whose sizes just cover what must go
                    acc, n, v = 0, 0, tail[a]
                    while v >= 0 and acc < need:
                        acc += st[v, 2]
                        n += 1
                        v = st[v, 0]
                    v = tail[a]
                    for _ in range(n):
                        newer = st[v, 0]
                        if need <= 0:
                            break
                        if opened[v] == epoch:  # read since the last purge: protected, not replaced
                            stats[4] += 1
                        else:
                            unlink_row(v, a, st, head, tail)
                            st[v, 3] = 0
                            used[a] -= st[v, 2]
                            need -= st[v, 2]
                            stats[1] += 1
                            stats[2] += st[v, 2]
                        v = newer
            stats[0] += 1
            clock[0] += interval * (np.floor((t - clock[0]) / interval) + 1)
        k, a, s, b, ty = key[i], area[i], size[i], nbytes[i], ftype[i]
        opened[k] = stats[0]
        counts[ty, 0] += 1
        counts[ty, 2] += b
        if st[k, 3]:
            counts[ty, 1] += 1
            counts[ty, 3] += b
            if head[a] != k:
                unlink_row(k, a, st, head, tail)
                push_head_row(k, a, st, head, tail)
            continue
        if s > cap:
            continue
        if used[a] + s > cap:
            stats[3] += 1
            continue
        push_head_row(k, a, st, head, tail)
        st[k, 3] = 1
        st[k, 2] = s
        used[a] += s


@njit(cache=True)
def _lfu_new_node(freq, pool, nfreq, nhead, ntail, nprev, nnext):
    x = pool[0]
    pool[0] = nnext[x]
    nfreq[x] = freq
    nhead[x] = -1
    ntail[x] = -1
    nprev[x] = -1
    nnext[x] = -1
    return x


@njit(cache=True)
def _lfu_drop_node(x, a, first, pool, nprev, nnext):
    p, n = nprev[x], nnext[x]
    if p >= 0:
        nnext[p] = n
    else:
        first[a] = n
    if n >= 0:
        nprev[n] = p
    nnext[x] = pool[0]
    pool[0] = x


@njit(cache=True)
def _lfu(key, area, size, nbytes, ftype, cap, prev, nxt, node, inc, osize, first, used,
         pool, nfreq, nhead, ntail, nprev, nnext, counts):
    """Frequency nodes (ascending per area from ``first[a]``), each a FIFO of its files."""
    for i in range(len(key)):
        k, a, s, b, ty = key[i], area[i], size[i], nbytes[i], ftype[i]
        counts[ty, 0] += 1
        counts[ty, 2] += b
        if inc[k]:
            counts[ty, 1] += 1
            counts[ty, 3] += b
            x = node[k]
            f = nfreq[x]
            y = nnext[x]
            if y < 0 or nfreq[y] != f + 1:
                z = _lfu_new_node(f + 1, pool, nfreq, nhead, ntail, nprev, nnext)
                nprev[z] = x
                nnext[z] = y
                if y >= 0:
                    nprev[y] = z
                nnext[x] = z
                y = z
            unlink(k, x, prev, nxt, nhead, ntail)
            push_tail(k, y, prev, nxt, nhead, ntail)
            node[k] = y
            if nhead[x] < 0:
                _lfu_drop_node(x, a, first, pool, nprev, nnext)
            continue
        if s > cap:
            continue
        while used[a] + s > cap:
            x = first[a]
            v = nhead[x]
            unlink(v, x, prev, nxt, nhead, ntail)
            inc[v] = 0
            used[a] -= osize[v]
            if nhead[x] < 0:
                _lfu_drop_node(x, a, first, pool, nprev, nnext)
        x = first[a]
        if x < 0 or nfreq[x] != 1:
            z = _lfu_new_node(1, pool, nfreq, nhead, ntail, nprev, nnext)
            nnext[z] = x
            if x >= 0:
                nprev[x] = z
            first[a] = z
            x = z
        push_tail(k, x, prev, nxt, nhead, ntail)
        node[k] = x
        inc[k] = 1
        osize[k] = s
        used[a] += s


# ARC lists per area: 4*a + (0 T1, 1 T2, 2 B1, 3 B2); lst[k] = -1 when absent
@njit(cache=True)
def _arc_move(k, frm, to, lst, prev, nxt, head, tail, lsize, osize):
    unlink(k, frm, prev, nxt, head, tail)
    lsize[frm] -= osize[k]
    push_head(k, to, prev, nxt, head, tail)
    lsize[to] += osize[k]
    lst[k] = to


@njit(cache=True)
def _arc_replace(a, in_b2, p, lst, prev, nxt, head, tail, lsize, osize):
    t1, t2, b1, b2 = 4 * a, 4 * a + 1, 4 * a + 2, 4 * a + 3
    c1 = lsize[t1] > 0
    c2 = lsize[t1] > p[a]
    c3 = lsize[t1] == p[a] and in_b2
    c4 = lsize[t2] == 0
    if (c1 and (c2 or c3)) or c4:
        _arc_move(tail[t1], t1, b1, lst, prev, nxt, head, tail, lsize, osize)
    else:
        _arc_move(tail[t2], t2, b2, lst, prev, nxt, head, tail, lsize, osize)


@njit(cache=True)
def _arc_drop(l, lst, prev, nxt, head, tail, lsize, osize):
    v = tail[l]
    unlink(v, l, prev, nxt, head, tail)
    lsize[l] -= osize[v]
    lst[v] = -1


@njit(cache=True)
def _arc(key, area, size, nbytes, ftype, cap, prev, nxt, lst, osize, head, tail, lsize, p, counts):
    for i in range(len(key)):
        k, a, s, b, ty = key[i], area[i], size[i], nbytes[i], ftype[i]
        t1, t2, b1, b2 = 4 * a, 4 * a + 1, 4 * a + 2, 4 * a + 3
        counts[ty, 0] += 1
        counts[ty, 2] += b
        l = lst[k]
        if l == t1 or l == t2:
            counts[ty, 1] += 1
            counts[ty, 3] += b
            if l == t1:
                _arc_move(k, t1, t2, lst, prev, nxt, head, tail, lsize, osize)
            elif head[t2] != k:
                unlink(k, t2, prev, nxt, head, tail)
                push_head(k, t2, prev, nxt, head, tail)
            continue
        ghost = False
        in_b2 = False
        if l == b1:
            delta = max(lsize[b2] / lsize[b1], 1.0)
            p[a] = min(p[a] + delta, cap)
            unlink(k, b1, prev, nxt, head, tail)
            lsize[b1] -= osize[k]
            ghost = True
        elif l == b2:
            delta = max(lsize[b1] / lsize[b2], 1.0)
            p[a] = max(p[a] - delta, 0.0)
            unlink(k, b2, prev, nxt, head, tail)
            lsize[b2] -= osize[k]
            ghost = True
            in_b2 = True
        lst[k] = -1
        if s > cap:
            continue
        while lsize[t1] + lsize[t2] + s > cap:
            if ghost:
                _arc_replace(a, in_b2, p, lst, prev, nxt, head, tail, lsize, osize)
            elif lsize[t1] + lsize[b1] + s > cap:
                if lsize[b1] > 0:
                    _arc_drop(b1, lst, prev, nxt, head, tail, lsize, osize)
                    _arc_replace(a, False, p, lst, prev, nxt, head, tail, lsize, osize)
                else:
                    _arc_drop(t1, lst, prev, nxt, head, tail, lsize, osize)
            else:
                if lsize[t1] + lsize[b1] + lsize[t2] + lsize[b2] >= 2 * cap and lsize[b2] > 0:
                    _arc_drop(b2, lst, prev, nxt, head, tail, lsize, osize)
                _arc_replace(a, False, p, lst, prev, nxt, head, tail, lsize, osize)
        to = t2 if ghost else t1
        osize[k] = s
        push_head(k, to, prev, nxt, head, tail)
        lsize[to] += s
        lst[k] = to


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
