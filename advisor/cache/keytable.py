"""Dense keys for file (and server) names: a 64-bit FNV-1a hash of the name's bytes in an
open-addressing table held in numpy arrays, so the compiled CSV parser and the Python parsers
share one identity. Memory grows with distinct names only (table at most 4x their count).
Two different names collide only if their 64-bit hashes are equal (probability ~n^2/2^65:
~3e-6 for 10 M distinct files).
"""

from __future__ import annotations

import numpy as np
from advisor.cache.jit import njit

FNV_OFFSET = np.uint64(0xCBF29CE484222325)
FNV_PRIME = np.uint64(0x100000001B3)


@njit(cache=True)
def fnv1a(buf, start, end):
    h = np.uint64(0xCBF29CE484222325)
    for i in range(start, end):
        h = (h ^ np.uint64(buf[i])) * np.uint64(0x100000001B3)
    v = np.int64(h)
    return v if v != 0 else np.int64(1)


@njit(cache=True)
def lookup_or_insert(slots, count, h):
    """Dense id of hash ``h``; a new one gets ``count[0]`` (and count is bumped). Returns (id, new).
    ``slots`` is (capacity, 2): hash and id side by side, one cache line per probe."""
    mask = len(slots) - 1
    j = (h ^ (h >> 29)) & mask
    while True:
        cur = slots[j, 0]
        if cur == h:
            return slots[j, 1], False
        if cur == 0:
            slots[j, 0] = h
            slots[j, 1] = count[0]
            count[0] += 1
            return slots[j, 1], True
        j = (j + 1) & mask


@njit(cache=True)
def _rehash(old, new):
    mask = len(new) - 1
    for j in range(len(old)):
        h = old[j, 0]
        if h != 0:
            k = (h ^ (h >> 29)) & mask
            while new[k, 0] != 0:
                k = (k + 1) & mask
            new[k, 0] = h
            new[k, 1] = old[j, 1]


class KeyTable:
    def __init__(self, capacity: int = 1 << 12):
        self.slots = np.zeros((capacity, 2), dtype=np.int64)
        self.count = np.zeros(1, dtype=np.int64)

    def __len__(self) -> int:
        return int(self.count[0])

    def reserve(self, more: int) -> None:
        """Make room for ``more`` new names at a load factor of at most 1/2."""
        need = 2 * (len(self) + more)
        if need <= len(self.slots):
            return
        cap = len(self.slots)
        while cap < need:
            cap *= 2
        new = np.zeros((cap, 2), dtype=np.int64)
        _rehash(self.slots, new)
        self.slots = new

    def key(self, name: str) -> tuple[int, bool]:
        b = np.frombuffer(name.encode("utf-8", "surrogateescape"), dtype=np.uint8)
        self.reserve(1)
        k, new = lookup_or_insert(self.slots, self.count, fnv1a(b, 0, len(b)))
        return int(k), bool(new)
