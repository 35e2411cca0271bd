"""A large capture parsed on every core.

``scan --from`` of a capture parses every host's outputs in one thread: with the parsers in Python,
one core. Past ``MIN_PER_PART`` hosts per core, the hosts are split in contiguous parts, one per
core: the scan's process parses the first while forked children parse the others, each sending its
hosts' facts back (pickled) in order. A child inherits the parsers, the site and the capture's
index as they are (fork, copy on write): nothing is loaded twice, nothing but the facts is sent.

A part whose child fails (killed, out of memory, a fact that cannot be pickled) is parsed again in
the scan's process: the result is the same, only slower. Live collection never comes here (its
hosts are probed in threads, waiting on SSH); nor a collection that writes a capture (its sink
writes files in the scan's process).
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")

#: the fewest hosts a core gets: below, forking and sending the facts back costs more than it saves
MIN_PER_PART = 1000

#: (parse, parts) while a split parse runs: what a forked child reads (it is not sent)
_job: tuple[Callable[[Sequence[Any]], list[Any]], list[Sequence[Any]]] | None = None


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def split(items: Sequence[T], parts: int) -> list[Sequence[T]]:
    """``items`` in ``parts`` contiguous slices of nearly equal size, in order."""
    size, extra = divmod(len(items), parts)
    out, start = [], 0
    for i in range(parts):
        end = start + size + (1 if i < extra else 0)
        out.append(items[start:end])
        start = end
    return out


def _parse_part(index: int) -> list[Any]:
    assert _job is not None, "a split parse's part is parsed in a child forked while it runs"
    parse, parts = _job
    return parse(parts[index])


def parse_on_every_core(items: Sequence[T], parse: Callable[[Sequence[T]], list[R]], *,
                        forked: bool = True) -> Iterator[R]:
    """``parse(items)``'s results in the order of ``items``, parts of them parsed in forked children
    when there are cores and items enough (``forked``: allowed at all)."""
    global _job
    parts = min(cores(), len(items) // MIN_PER_PART)
    if not forked or parts < 2 or "fork" not in multiprocessing.get_all_start_methods():
        yield from parse(items)
        return
    chunks = split(items, parts)
    _job = (parse, chunks)
    try:
        with ProcessPoolExecutor(max_workers=parts - 1, mp_context=multiprocessing.get_context("fork")) as pool:
            futures = [pool.submit(_parse_part, i) for i in range(1, parts)]
            mine = parse(chunks[0])
            yield from mine
            for i, fut in enumerate(futures, 1):
                try:
                    theirs = fut.result()
                except (BrokenProcessPool, pickle.PicklingError, OSError, MemoryError, TypeError, AttributeError):
                    theirs = parse(chunks[i])
                yield from theirs
    finally:
        _job = None
