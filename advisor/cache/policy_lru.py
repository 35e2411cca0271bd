"""LRU: evict the least recently used file until the new one fits (as libCacheSim's LRU)."""

from __future__ import annotations

from advisor.cache.jit import njit

from advisor.cache.lists import admit_row, count_read_row, unlink_row


@njit(cache=True)
def _lru(key, area, size, nbytes, ftype, cap, st, head, tail, used, counts):
    for i in range(len(key)):
        k, a, s, b, ty = key[i], area[i], size[i], nbytes[i], ftype[i]
        if count_read_row(k, a, b, ty, st, head, tail, counts) or s > cap:
            continue
        while used[a] + s > cap:
            v = tail[a]
            unlink_row(v, a, st, head, tail)
            st[v, 3] = 0
            used[a] -= st[v, 2]
        admit_row(k, a, s, st, head, tail, used)
