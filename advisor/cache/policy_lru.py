"""LRU: evict the least recently used file until the new one fits (as libCacheSim's LRU)."""

from __future__ import annotations

from numba import njit

from advisor.cache.lists import push_head_row, unlink_row


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
