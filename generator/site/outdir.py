"""The output directory: one build at a time (a lock), and what a killed build left behind.

A build writes its site into a temporary sibling tree, then either `swap_in` exchanges it
with the output directory in one atomic step, or (the output being exactly what the last
build wrote) `commit_delta` journals the changed files and renames them into place
(`generator.core.outputs`). `remove_leftovers`, run first by every build, completes a
journalled delta and removes the temporary trees.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path

from generator.core import safeio
from generator.core.atomic import LockHeld, exclusive_lock, make_dirs
from generator.core.errors import SiteError
from generator.core.outputs import complete_delta, discard, restore, staging_prefix, swap_in

PROGRESS = logging.getLogger("aicr_catalog.build")


@contextlib.contextmanager
def build_lock(out: Path) -> Iterator[None]:
    """An exclusive lock per output directory; a second build fails at once instead of racing."""
    lock_dir = out.parent / ".cache"
    make_dirs(lock_dir)
    with contextlib.ExitStack() as held:
        try:
            held.enter_context(exclusive_lock(lock_dir / f"{out.name}.build.lock"))
        except LockHeld as e:
            raise SiteError(
                f"another build of {out.name}/ is running; try again when it ends"
            ) from e
        yield


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
    if safeio.exists(old) and not safeio.exists(out):
        restore(old, out)  # killed between the two renames of the fallback swap
    elif safeio.exists(old):
        discard(old, ignore_errors=True)
