"""The whole LRU curve in one pass: byte-weighted stack distances over a Fenwick tree.

For each request of file ``k`` the *stack distance* is the number of bytes of the distinct files
accessed since ``k``'s previous access, ``k`` included. Under LRU a file is in a cache of ``C``
bytes exactly when that distance is at most ``C`` (the cache always holds the longest prefix of
the recency stack that fits, and a prefix sum below a file only grows until it is accessed), so
one pass gives the hits at every capacity. Exact whenever no file is larger than ``C``: a file
larger than the cache is never admitted by the simulator but still occupies the stack here, so
below the largest file size the curve is a lower bound (``exact_from_bytes`` says where it is
exact).

The tree is indexed by *position* (the order of last accesses): each file sits at its last
position with its size as weight and the distance is a suffix sum. Positions are renumbered
(compacted) when they run out, and the tree is doubled only when live files exceed half of it, so
memory is O(distinct files), not O(requests).

``sample_rate`` R < 1 is SHARDS' fixed-rate spatial sampling (Waldspurger et al., FAST '15): only
files whose key hashes below R are replayed and distances are scaled by 1/R.
"""

from __future__ import annotations

import numpy as np
from advisor.cache.jit import njit

P_BITS = 24


@njit(cache=True)
def _splitmix(x):
    z = np.uint64(x) + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit(cache=True)
def sample_mask(key, threshold):
    out = np.empty(len(key), dtype=np.bool_)
    for i in range(len(key)):
        out[i] = (_splitmix(key[i]) & np.uint64((1 << 24) - 1)) < np.uint64(threshold)
    return out


@njit(cache=True)
def _add(tree, i, v):
    n = len(tree)
    i += 1
    while i <= n:
        tree[i - 1] += v
        i += i & (-i)


@njit(cache=True)
def _prefix(tree, i):
    """Sum of positions [0, i)."""
    s = 0
    while i > 0:
        s += tree[i - 1]
        i -= i & (-i)
    return s


@njit(cache=True)
def _compact(owner, used_pos, weight, pos, new_tree, new_owner):
    """Renumber live positions 0..n-1 in order; rebuild the tree in O(M). Returns n."""
    n = 0
    for q in range(used_pos):
        k = owner[q]
        if k >= 0:
            new_owner[n] = k
            pos[k] = n
            n += 1
    for q in range(n, len(new_owner)):
        new_owner[q] = -1
    m = len(new_tree)
    for q in range(m):
        new_tree[q] = 0
    for q in range(n):
        new_tree[q] = weight[new_owner[q]]
    for q in range(1, m + 1):  # linear-time Fenwick build
        r = q + (q & (-q))
        if r <= m:
            new_tree[r - 1] += new_tree[q - 1]
    return n


@njit(cache=True)
def _stack_pass(key, size, nbytes, ftype, scale, caps, tree, owner, pos, weight, state, counts):
    """state: (next position, live files, total bytes). counts[type, j, (requests, bytes)] for the
    first capacity index j with caps[j] >= distance (len(caps) = never a hit). Returns the index
    where it stopped because the tree is full (len(key) when done)."""
    m = len(tree)
    ncap = len(caps)
    for i in range(len(key)):
        if state[0] == m:
            if 2 * state[1] > m:
                return i
            state[0] = _compact(owner.copy(), state[0], weight, pos, tree, owner)
        k, s = key[i], size[i]
        p = pos[k]
        j = ncap
        if p >= 0:
            d = (state[2] - _prefix(tree, p)) * scale
            _add(tree, p, -weight[k])
            owner[p] = -1
            state[2] -= weight[k]
            lo, hi = 0, ncap
            while lo < hi:
                mid = (lo + hi) >> 1
                if caps[mid] >= d:
                    hi = mid
                else:
                    lo = mid + 1
            j = lo
        else:
            state[1] += 1
        q = state[0]
        _add(tree, q, s)
        owner[q] = k
        pos[k] = q
        weight[k] = s
        state[0] = q + 1
        state[2] += s
        counts[ftype[i], j, 0] += 1
        counts[ftype[i], j, 1] += nbytes[i]
    return len(key)


class StackCurve:
    """Hits at every capacity of ``caps`` (ascending, bytes) for one cache area, in one pass."""

    def __init__(self, caps: np.ndarray, n_types: int, sample_rate: float = 1.0):
        self.caps = np.asarray(caps, dtype=np.float64)
        self.rate = float(sample_rate)
        self.threshold = int(round(self.rate * (1 << P_BITS)))
        self.counts = np.zeros((n_types, len(self.caps) + 1, 2), dtype=np.int64)
        self.tree = np.zeros(1 << 12, dtype=np.int64)
        self.owner = np.full(1 << 12, -1, dtype=np.int64)
        self.pos = np.full(1024, -1, dtype=np.int64)
        self.weight = np.zeros(1024, dtype=np.int64)
        self.state = np.zeros(3, dtype=np.int64)
        self.max_size = 0
        self.total = np.zeros((n_types, 2), dtype=np.int64)  # all requests (sampled or not): (requests, bytes)

    def reserve(self, n_keys: int) -> None:
        if n_keys > len(self.pos):
            n = max(n_keys, 2 * len(self.pos))
            pos = np.full(n, -1, np.int64)
            pos[: len(self.pos)] = self.pos
            w = np.zeros(n, np.int64)
            w[: len(self.weight)] = self.weight
            self.pos, self.weight = pos, w

    def run(self, key: np.ndarray, size: np.ndarray, nbytes: np.ndarray, ftype: np.ndarray) -> None:
        if len(size):
            self.max_size = max(self.max_size, int(size.max()))
        np.add.at(self.total, (ftype, 0), 1) if len(ftype) < 64 else None
        if len(ftype) >= 64:
            self.total[:, 0] += np.bincount(ftype, minlength=len(self.total))
            self.total[:, 1] += np.bincount(ftype, weights=nbytes, minlength=len(self.total)).astype(np.int64)
        else:
            np.add.at(self.total[:, 1], ftype, nbytes)
        if self.rate < 1.0:
            m = sample_mask(key, self.threshold)
            key, size, nbytes, ftype = key[m], size[m], nbytes[m], ftype[m]
        scale = 1.0 / self.rate
        i = 0
        while i < len(key):
            done = _stack_pass(key[i:], size[i:], nbytes[i:], ftype[i:], scale, self.caps, self.tree, self.owner,
                               self.pos, self.weight, self.state, self.counts)
            i += done
            if i < len(key):  # tree full of live files: double it
                m2 = 2 * len(self.tree)
                tree, owner = np.zeros(m2, np.int64), np.full(m2, -1, np.int64)
                self.state[0] = _compact(self.owner, self.state[0], self.weight, self.pos, tree, owner)
                self.tree, self.owner = tree, owner

    def hits(self) -> np.ndarray:
        """[type, capacity index, (hits, bytes hit)] estimated for the whole log.

        Unsampled: exact counts. Sampled: SHARDS-adj -- the sampled hits less the excess of
        sampled over expected requests (R x all), scaled by 1/R, clamped to [0, all].
        """
        cum = np.cumsum(self.counts[:, :-1, :], axis=1).astype(np.float64)
        if self.rate >= 1.0:
            return cum
        sampled = self.counts.sum(axis=1).astype(np.float64)  # [type, 2]
        expected = self.rate * self.total.astype(np.float64)
        est = (cum - (sampled - expected)[:, None, :]) / self.rate
        return np.clip(est, 0.0, self.total[:, None, :].astype(np.float64))
