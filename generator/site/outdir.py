"""The output directory: one build at a time (a lock), and what a killed build left behind.

A build writes its site into a temporary sibling tree, then either `swap_in` exchanges it
with the output directory in one atomic step, or (the output being exactly what the last
build wrote) `commit_delta` journals the changed files and renames them into place
(`generator.core.outputs`). `remove_leftovers`, run first by every build, completes a
journalled delta and removes the temporary trees.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
from collections.abc import Iterator
from pathlib import Path

from generator.core import safeio
from generator.core.atomic import make_dirs, open_devnull, open_lock
from generator.core.errors import SiteError
from generator.core.outputs import complete_delta, discard, restore, staging_prefix, swap_in

PROGRESS = logging.getLogger("aicr_catalog.build")
_HELD_LOCKS: set[int] = set()  # descriptors of the build locks this process holds


def _drop_inherited_locks() -> None:
    """In a forked worker: close the inherited descriptors of the parent's build locks.

    A flock belongs to the open file, which a fork shares: a worker still holding the
    descriptor would keep the lock after its parent was killed, and refuse the next build.
    The descriptor is pointed at /dev/null rather than closed, so its number stays taken."""
    if not _HELD_LOCKS:
        return
    null = open_devnull()
    for fd in tuple(_HELD_LOCKS):
        with contextlib.suppress(OSError):
            os.dup2(null, fd)  # the number stays taken: nothing else can be closed by mistake
    os.close(null)
    _HELD_LOCKS.clear()


os.register_at_fork(after_in_child=_drop_inherited_locks)


@contextlib.contextmanager
def build_lock(out: Path) -> Iterator[None]:
    """An exclusive lock per output directory; a second build fails at once instead of racing."""
    lock_dir = out.parent / ".cache"
    make_dirs(lock_dir)
    fd = open_lock(lock_dir / f"{out.name}.build.lock")
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as e:
            raise SiteError(
                f"another build of {out.name}/ is running; try again when it ends"
            ) from e
        _HELD_LOCKS.add(fd)
        try:
            yield
        finally:
            _HELD_LOCKS.discard(fd)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


__all__ = ["build_lock", "remove_leftovers", "swap_in"]


def remove_leftovers(out: Path) -> None:
    """What builds killed before they finished left (we hold the lock): a delta journalled
    but not all applied is completed first (`complete_delta`: its staged files are in one of
    the temporary trees), then the temporary trees are removed."""
    if complete_delta(out):
        PROGRESS.info("completed the last build's changes to %s (it was stopped)", out)
    prefix = staging_prefix(out)
    for e in safeio.listdir(out.parent):
        if e.name.startswith(prefix):
            discard(e.path, ignore_errors=True)  # a link or a file of that name stays
    old = out.parent / f".{out.name}.old"
    if old.exists() and not out.exists():
        restore(old, out)  # killed between the two renames of the fallback swap
    elif old.exists():
        discard(old, ignore_errors=True)
