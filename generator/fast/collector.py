"""`collector_paused`: Python's cyclic garbage collector off while many long-lived objects are
built.

Reference: the same block with the collector on (the default). Every collection of the oldest
generation walks every object alive, so while the build allocates millions of long-lived objects
(records, verified statements, runs, pages) and frees almost none, the collections it sets off
grow with what is already built and the stages grow faster than linearly. The data holds no
reference cycles worth collecting; objects are still freed by reference counting, and the
collector is back (as it was found) when the block ends, whatever ends it.

Measured gain: at 2,000 statements none measurable (`evidence verify --jobs 1`, paused vs on:
median 6.2 s vs 6.3 s CPU, three paired runs); it grows with what is alive: docs/performance.md
measured about half of `aggregate` and a third of verification's parent at 20,000 evidence
files, which is why it is kept.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic collector off for the block, then as it was."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
