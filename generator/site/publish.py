"""Writing a finished build's files into its new tree, reusing what the previous build wrote.

`Publisher.put` writes a file, or hard-links it from the previous build's tree when that build
published the very same bytes at the same path and the file is still as recorded.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path

from generator.core.atomic import TreeWriter


class Publisher:
    """Writes the finished files of a build into its new tree; a file whose bytes the previous
    build of the same output already published (same path, same sha256, and that file still
    as recorded: size, mtime and inode) is hard-linked from the previous tree instead of
    written again. The previous tree is never modified; every file of the new tree is a new
    name, so nothing is written through a link. Not a record: it collects the sha256 sums."""

    def __init__(
        self,
        root: Path,
        previous: Path | None = None,
        known: Mapping[str, tuple[int, int, int, str]] | None = None,
    ) -> None:
        self.root = root
        self.previous = previous
        self.known = known or {}
        self.sums: dict[str, str] = {}
        self.linked = 0
        self._tree: TreeWriter | None = None

    def put(self, rel: str, data: bytes) -> None:
        if self._tree is None:  # opened on first use, closed with the process
            self._tree = TreeWriter(self.root)
        sha = hashlib.sha256(data).hexdigest()
        self.sums[rel] = sha
        self._tree.remove(rel)  # e.g. a page the engine wrote before its blocks went in
        if self._link(rel, self._tree, sha, len(data)):
            return
        self._tree.put(rel, data)

    def close(self) -> None:
        if self._tree is not None:
            self._tree.close()
            self._tree = None

    def _link(self, rel: str, tree: TreeWriter, sha: str, size: int) -> bool:
        old = self.known.get(rel)
        if self.previous is None or old is None or old[3] != sha or old[0] != size:
            return False
        source = self.previous / rel
        try:
            st = os.lstat(source)
            if (st.st_size, st.st_mtime_ns, st.st_ino) != old[:3] or not stat.S_ISREG(st.st_mode):
                return False
            tree.link_from(source, rel)
        except OSError:
            return False
        self.linked += 1
        return True

    def put_all(self, files: Iterable[tuple[str, bytes]]) -> None:
        for rel, data in files:
            self.put(rel, data)
