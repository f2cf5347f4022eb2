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

Memory: the pool freezes what is alive before it forks (`gc.freeze`, as `collector_paused`
leaves what its blocks made), so a worker's full collection walks nothing it inherited: a walk
writes to every object's header and copies the parent's heap page by page into the worker. The
bundle pool forks after verification, with the 20,000 verification records alive in the parent
at 1,000 x 20,000; a cold build (empty cache, PSS summed over the process tree, the bench's
sampler `bench.run.run_process`, two interleaved pairs, 00:43-00:53 UTC on 5 December 2026)
peaked at 2,425.8 and 2,427.7 MB without the freeze, 1,612.2 and 1,630.0 MB with it (CPU 90.4,
107.1 vs 94.7, 110.9 CPU-s: the machine's speed drifted over the four runs, each pair within
4 CPU-s). Objects frozen stay out of the parent's collections too, as after `collector_paused`.
"""

from __future__ import annotations

import gc
import itertools
import multiprocessing
import os
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")

# chunks handed out ahead of the one the caller reads, per worker (`parallel_map`)
AHEAD_PER_WORKER = 4

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

    With more than one process, the workers are forked before this returns (so a
    `collector_paused` block around the iteration does not reach them) and the first chunks are
    handed out; results are yielded as their chunk comes back, so the caller's work on them
    overlaps the workers'. Iterate to the end (or close the iterator) to release the pool.

    At most `AHEAD_PER_WORKER` chunks per worker are handed out beyond the one the caller is
    reading; the next is handed out as one is read. Every chunk was handed out at once before
    (`ProcessPoolExecutor.map`), so when the caller read more slowly than the workers computed
    (the verify stage parses each statement here while two workers check signatures, on two
    cores) the results waited here, as many as the lag: the in-process verify stage at 1,000 x
    20,000 peaked at 901 and 1,381 MB in two runs of the same code and input, and a cold build
    at 1,612-2,295 MB in one `make bench` (PSS summed over the process tree)."""
    workers = workers_for(jobs, len(items))
    if workers <= 1:
        return map(fn, items)
    size = max(1, chunksize)
    starts = range(0, len(items), size)
    call = next(_calls)
    _SHARED[call] = (fn, items)
    # everything alive now to the permanent generation before the fork (as `collector_paused`
    # leaves what its blocks made): a worker's full collection would walk every object it
    # inherited, writing to each one's header, and so copy the parent's heap page by page
    gc.freeze()
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("fork"))
    chunks = ((start, min(start + size, len(items))) for start in starts)
    ahead: deque[Future[list[Any]]] = deque()
    try:  # the first submission forks the workers (all of them: the "fork" context)
        _hand_out(pool, call, chunks, ahead, workers * AHEAD_PER_WORKER + 1)
    except BaseException:
        _release(pool, call)
        raise
    return _results(pool, call, chunks, ahead)


def _hand_out(
    pool: ProcessPoolExecutor,
    call: int,
    chunks: Iterator[tuple[int, int]],
    ahead: deque[Future[list[Any]]],
    count: int,
) -> None:
    for start, stop in itertools.islice(chunks, count):
        ahead.append(pool.submit(_run_chunk, call, start, stop))


def _results(
    pool: ProcessPoolExecutor,
    call: int,
    chunks: Iterator[tuple[int, int]],
    ahead: deque[Future[list[Any]]],
) -> Iterator[Any]:
    try:
        while ahead:
            part = ahead.popleft().result()  # raises what `fn` raised in the worker
            _hand_out(pool, call, chunks, ahead, 1)
            yield from part
    finally:
        _release(pool, call)


def _release(pool: ProcessPoolExecutor, call: int) -> None:
    pool.shutdown(wait=True, cancel_futures=True)
    del _SHARED[call]
