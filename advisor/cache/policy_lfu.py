"""LFU with O(1) frequency nodes: evict the least frequently used file, ties by the oldest
last access; a re-admitted file starts at 1 (as libCacheSim's LFU)."""

from __future__ import annotations

from advisor.cache.jit import njit

from advisor.cache.lists import push_tail, unlink


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
