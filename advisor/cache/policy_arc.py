"""ARC (Megiddo & Modha) on bytes, in libCacheSim's byte generalisation; see policies.py."""

from __future__ import annotations

from advisor.cache.jit import njit

from advisor.cache.lists import push_head, unlink


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
