"""The cache simulator's compiler: numba's ``njit``, or, for a small input, the plain Python functions.

Compiling the replay kernels (CSV parser, key table, LRU/LFU/ARC/XCache, the LRU curve) takes seconds on
a machine where numba has not cached them yet (a fresh install, or a read-only one: numba's cache goes
beside the sources), while a log of a few thousand reads replays in a fraction of that interpreted. The
choice is made once per process, before the kernels are defined: ``storadvise cache simulate`` calls
:func:`choose` with the size of its inputs before it imports them (advisor/cache/cli.py). The plain
functions are the very ones numba compiles, run by CPython on the same numpy arrays, so the results
are the same (tests/cache/test_engine.py compares the two on every policy); numpy's scalar overflow
warnings (FNV-1a wraps on purpose, as compiled code does) are silenced for the process.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

#: inputs up to this many bytes are replayed interpreted (about 8,000 CSV lines: ~1 s interpreted,
#: against the seconds numba takes to compile the kernels when they are not cached)
INTERPRET_MAX_BYTES = 1 << 20
_MODE: list[str | None] = [None]


#: set to ``interpreted`` or ``compiled`` to choose the engine whatever the input's size (tests, diagnosis)
ENGINE_VARIABLE = "STORADVISE_CACHE_ENGINE"


def choose(input_bytes: int) -> str:
    """Fix the engine for this process ("interpreted" or "compiled") unless a kernel is defined already;
    returns the engine in use."""
    if _MODE[0] is None:
        forced = os.environ.get(ENGINE_VARIABLE)
        if forced in ("interpreted", "compiled"):
            _MODE[0] = forced
        else:
            _MODE[0] = "interpreted" if input_bytes <= INTERPRET_MAX_BYTES else "compiled"
        if _MODE[0] == "interpreted":
            np.seterr(over="ignore")  # 64-bit hashing wraps on purpose, as compiled
            warnings.filterwarnings("ignore", "overflow encountered", RuntimeWarning)
    return _MODE[0]


def engine() -> str:
    return _MODE[0] or "compiled"


def njit(*args: Any, **kwargs: Any) -> Callable:
    """``numba.njit(cache=True, ...)`` in the compiled engine; the function itself in the interpreted one."""
    if _MODE[0] is None:
        _MODE[0] = "compiled"
    if _MODE[0] == "interpreted":
        if args and callable(args[0]):
            return args[0]
        return lambda fn: fn
    import numba

    return numba.njit(*args, **kwargs)
