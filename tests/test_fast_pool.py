"""generator.fast.pool and generator.fast.collector against their references.

`parallel_map` must give what `[fn(x) for x in items]` gives, in order, whatever the number of
processes and the chunk size, and raise what `fn` raises; `collector_paused` must leave the
collector as it found it.
"""

from __future__ import annotations

import gc
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generator.fast import pool as pool_module
from generator.fast.collector import collector_paused
from generator.fast.pool import _SHARED, AHEAD_PER_WORKER, parallel_map, workers_for


def _square_and_pid(x: int) -> tuple[int, int]:
    return x * x, os.getpid()


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(-1000, 1000), max_size=60), st.integers(1, 3), st.integers(1, 25))
def test_parallel_map_is_the_serial_map(items: list[int], jobs: int, chunksize: int) -> None:
    got = list(parallel_map(_square_and_pid, items, jobs=jobs, chunksize=chunksize))
    assert [v for v, _ in got] == [x * x for x in items]
    pids = {pid for _, pid in got}
    if workers_for(jobs, len(items)) == 1:
        assert pids <= {os.getpid()}  # the serial path runs here
    else:
        assert os.getpid() not in pids
    assert _SHARED == {}


def test_a_closure_reaches_the_forked_workers() -> None:
    table = {i: f"v{i}" for i in range(40)}  # read from the memory the workers were forked with
    got = list(parallel_map(lambda i: (table[i], os.getpid()), list(range(40)), jobs=2))
    assert [v for v, _ in got] == [table[i] for i in range(40)]
    assert os.getpid() not in {pid for _, pid in got}


def _fails_on_seven(x: int) -> int:
    if x == 7:
        raise ValueError(f"item {x} refused")
    return x


@pytest.mark.parametrize("jobs", [1, 2])
def test_an_error_in_fn_is_raised_to_the_caller(jobs: int) -> None:
    with pytest.raises(ValueError, match="item 7 refused"):
        list(parallel_map(_fails_on_seven, list(range(20)), jobs=jobs, chunksize=3))
    assert _SHARED == {}


def test_only_a_few_chunks_are_handed_out_ahead_of_the_reader(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A slow reader does not make every result wait in this process: chunks are handed out
    as they are read, at most `AHEAD_PER_WORKER` per worker beyond the one being read."""
    handed: list[int] = []
    submit = pool_module.ProcessPoolExecutor.submit

    def counting(self: object, fn: object, *args: object) -> object:
        handed.append(args[1])  # type: ignore[arg-type]  # (call, start, stop)
        return submit(self, fn, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(pool_module.ProcessPoolExecutor, "submit", counting)
    bound = 2 * AHEAD_PER_WORKER + 1
    results = parallel_map(_square_and_pid, list(range(100)), jobs=2, chunksize=1)
    assert len(handed) == bound  # the first ones, before anything is read
    got = []
    for read, (value, _) in enumerate(results, start=1):
        got.append(value)
        assert len(handed) <= read + bound
    assert got == [x * x for x in range(100)]
    assert handed == list(range(100))  # each chunk handed out once, in order
    assert _SHARED == {}


def test_workers_for() -> None:
    assert workers_for(4, 2) == 2
    assert workers_for(1, 100) == 1
    assert workers_for(3, 0) == 1
    assert workers_for(None, 10_000) == (os.cpu_count() or 1)


def test_collector_is_paused_inside_and_restored_after() -> None:
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("a failure inside")
    assert gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()  # left as it was found
    finally:
        gc.enable()


def test_what_a_paused_block_built_is_frozen_and_the_reference_leaves_it_collectable() -> None:
    gc.unfreeze()
    try:
        with collector_paused(freeze=False):
            kept = [[i] for i in range(1000)]
        assert gc.get_freeze_count() == 0  # the reference: the plain re-enable
        with collector_paused():
            kept += [[i] for i in range(1000)]
        assert gc.get_freeze_count() >= 2000  # every object alive then: none walked again
        assert gc.isenabled() and len(kept) == 2000
    finally:
        gc.unfreeze()  # back to the young generations: the test leaves nothing frozen


def _collector_state(x: int) -> bool:
    return gc.isenabled()


def test_the_workers_are_forked_before_the_caller_pauses_the_collector() -> None:
    results = parallel_map(_collector_state, list(range(8)), jobs=2)
    with collector_paused():
        seen = list(results)
    assert seen == [True] * 8  # forked (with the collector on) when parallel_map returned
    assert _SHARED == {}


def test_an_abandoned_iteration_releases_the_pool() -> None:
    results = parallel_map(_square_and_pid, list(range(50)), jobs=2, chunksize=5)
    assert next(results)[0] == 0
    results.close()  # type: ignore[attr-defined]
    assert _SHARED == {}


def test_workers_collect_nothing_they_inherited() -> None:
    """What is alive when the pool forks is frozen (`gc.freeze`): a worker's collections do not
    walk it (a walk writes to every object's header and copies the parent's heap into the
    worker: a cold build at 1,000 x 20,000 peaked at 2.4 GB over the process tree without it,
    1.6 GB with it)."""
    import gc

    alive = [[i] for i in range(20_000)]  # objects the collector tracks, alive at the fork

    def walked(_: int) -> int:  # how many of them the worker's collector would walk
        tracked = {id(o) for o in gc.get_objects()}  # every generation but the permanent one
        return sum(id(a) in tracked for a in alive)

    assert walked(0) == 20_000  # here, before the pool: in the collector's generations
    assert list(parallel_map(walked, range(4), jobs=2)) == [0, 0, 0, 0]
