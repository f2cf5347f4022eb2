"""`parallel_map`: one function over many items on forked processes, results in order.

Reference: `[fn(x) for x in items]` in this process (what `jobs=1` runs). The pool forks after
`fn` and `items` are set aside in this module, so a worker reads both from the memory it was
forked with: nothing but chunk bounds goes to a worker (no pickling of the inputs, and `fn` may
be any callable, a closure or a `functools.partial` included); each chunk's results come back
pickled, in order. An exception raised by `fn` in a worker is raised again here, as
`ProcessPoolExecutor.map` raises it.

Measured gain: none measurable on the shared 2-core machine it was moved on (load about 9, so
no core was free): `evidence verify` of 2,000 statements, --jobs 2 vs --jobs 1, median 17.7 s
vs 19.2 s wall, 7.1 s vs 6.7 s CPU (whole process, three paired runs). The pools predate this
module (four of them, now one); their gain on an idle machine is in docs/performance.md.

Memory (cold build, 1,000 recipes x 20,000 evidence files, PSS summed over the process tree):
the bundle pool peaks at 1.26 GB and the verification pool at 1.20 GB, as the pools before
this module did (1.25 GB, 1.21 GB at 99258f7), both below the build's peak, which is reached
later, with no worker alive: it was publishing the JSON API (2,100 MB RSS), and is now the end
of mkdocs, its output stored in the cache (1,790 MB). Nothing to gain here from `gc.freeze`.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")

# what the forked workers compute, (fn, items) per running call, set only while its pool runs
_SHARED: dict[int, tuple[Callable[[Any], Any], Sequence[Any]]] = {}
_calls = itertools.count()


def workers_for(jobs: int | None, items: int) -> int:
    """The number of processes for `items` items: `jobs` (default: every core), at most one per
    item, at least one."""
    return max(1, min(jobs or os.cpu_count() or 1, items))


def _run_chunk(call: int, start: int, stop: int) -> list[Any]:
    fn, items = _SHARED[call]
    return [fn(items[i]) for i in range(start, stop)]


def parallel_map(
    fn: Callable[[T], R], items: Sequence[T], *, jobs: int | None = None, chunksize: int = 1
) -> Iterator[R]:
    """`fn(x) for x in items`, in order, spread over `workers_for(jobs, len(items))` forked
    processes in chunks of `chunksize` items; in this process (lazily) when that is one.

    With more than one process, the workers are forked and every chunk is handed out before
    this returns (so a `collector_paused` block around the iteration does not reach them);
    results are yielded as their chunk comes back, so the caller's work on them overlaps the
    workers'. Iterate to the end (or close the iterator) to release the pool."""
    workers = workers_for(jobs, len(items))
    if workers <= 1:
        return map(fn, items)
    size = max(1, chunksize)
    starts = range(0, len(items), size)
    stops = (min(i + size, len(items)) for i in starts)
    call = next(_calls)
    _SHARED[call] = (fn, items)
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork"))
    try:
        parts = pool.map(_run_chunk, itertools.repeat(call), starts, stops)
    except BaseException:
        _release(pool, call)
        raise
    return _results(pool, call, parts)


def _results(pool: ProcessPoolExecutor, call: int, parts: Iterator[list[Any]]) -> Iterator[Any]:
    try:
        for part in parts:
            yield from part
    finally:
        _release(pool, call)


def _release(pool: ProcessPoolExecutor, call: int) -> None:
    pool.shutdown(wait=True, cancel_futures=True)
    del _SHARED[call]
