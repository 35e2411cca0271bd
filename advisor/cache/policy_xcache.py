"""XCache: XrdPfc's disk cache and its purge (``Cache::Purge``, ``FPurgeState``); see policies.py."""

from __future__ import annotations

import numpy as np
from advisor.cache.jit import njit

from advisor.cache.lists import admit_row, count_read_row, unlink_row


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
        if count_read_row(k, a, b, ty, st, head, tail, counts) or s > cap:
            continue
        if used[a] + s > cap:
            stats[3] += 1
            continue
        admit_row(k, a, s, st, head, tail, used)
