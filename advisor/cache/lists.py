"""Intrusive doubly-linked lists over numpy arrays, for the compiled policies.

An object ``k`` has ``prev[k]``/``nxt[k]`` (-1 at the ends); a list ``l`` has ``head[l]`` and
``tail[l]``. Policies keep several lists per cache area in one flat head/tail array.
"""

from __future__ import annotations

from advisor.cache.jit import njit


@njit(cache=True, inline="always")
def unlink(k, l, prev, nxt, head, tail):
    p = prev[k]
    n = nxt[k]
    if p >= 0:
        nxt[p] = n
    else:
        head[l] = n
    if n >= 0:
        prev[n] = p
    else:
        tail[l] = p
    prev[k] = -1
    nxt[k] = -1


@njit(cache=True, inline="always")
def push_head(k, l, prev, nxt, head, tail):
    h = head[l]
    prev[k] = -1
    nxt[k] = h
    if h >= 0:
        prev[h] = k
    else:
        tail[l] = k
    head[l] = k


@njit(cache=True, inline="always")
def push_tail(k, l, prev, nxt, head, tail):
    t = tail[l]
    nxt[k] = -1
    prev[k] = t
    if t >= 0:
        nxt[t] = k
    else:
        head[l] = k
    tail[l] = k


# The same over one (n, 4) array per key -- [prev, next, size, in cache] -- so that a key's links
# and state share a cache line (LRU and XCache, the policies a whole log is most often run with).
@njit(cache=True, inline="always")
def unlink_row(k, l, st, head, tail):
    p = st[k, 0]
    n = st[k, 1]
    if p >= 0:
        st[p, 1] = n
    else:
        head[l] = n
    if n >= 0:
        st[n, 0] = p
    else:
        tail[l] = p
    st[k, 0] = -1
    st[k, 1] = -1


@njit(cache=True, inline="always")
def push_head_row(k, l, st, head, tail):
    h = head[l]
    st[k, 0] = -1
    st[k, 1] = h
    if h >= 0:
        st[h, 0] = k
    else:
        tail[l] = k
    head[l] = k


# What LRU and XCache do alike on every read: count it per file type (counts[ty] = requests, hits,
# bytes requested, bytes hit), and on a hit move the file to the head of its area's list.
@njit(cache=True, inline="always")
def count_read_row(k, a, b, ty, st, head, tail, counts):
    """Count a read of ``b`` bytes of file ``k``; True when it was a hit (the file is then most recent)."""
    counts[ty, 0] += 1
    counts[ty, 2] += b
    if not st[k, 3]:
        return False
    counts[ty, 1] += 1
    counts[ty, 3] += b
    if head[a] != k:
        unlink_row(k, a, st, head, tail)
        push_head_row(k, a, st, head, tail)
    return True


@njit(cache=True, inline="always")
def admit_row(k, a, s, st, head, tail, used):
    """Put file ``k`` of ``s`` bytes in area ``a``'s cache as its most recent file."""
    push_head_row(k, a, st, head, tail)
    st[k, 3] = 1
    st[k, 2] = s
    used[a] += s
