"""Writing a finished build's files into its new tree, reusing what the previous build wrote.

`Publisher.put` writes a file, or hard-links it from the previous build's tree when that build
published the very same bytes at the same path and the file is still as recorded.
`Publisher.put_derived` goes one step further for a file made from a source whose digest is
known before the file is made (a run's signed statement, made from its bundle): when the
previous build published that path from the same source, and the file is still as recorded, it
is linked without being made or hashed at all. The previous build's file table (path → size,
mtime, inode, sha256, source) is kept in the build cache (`site/incremental.py`).
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from generator.core.atomic import TreeWriter


@dataclass(frozen=True, slots=True)
class Published:
    """One file of a finished build, as its file table records it: enough to tell it is still
    the file that build wrote (size, mtime, inode), its bytes' sha256, and, for a file made from
    a source (`put_derived`), the source's identity ("" for a file published as given)."""

    size: int
    mtime_ns: int
    inode: int
    sha256: str
    source: str = ""


@dataclass(frozen=True, slots=True)
class Derived:
    """A file's content not made yet: `make()` (None: no file), a function of `source`, a
    digest naming everything `make` reads (its code included)."""

    source: str
    make: Callable[[], bytes | None]


def derived_source(kind: str, *digests: str) -> str:
    """The source identity of a derived file: what made it (`kind`, with the code's
    fingerprint) and the digests of its inputs."""
    return hashlib.sha256("\0".join((kind, *digests)).encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class PublishCounts:
    """What a publisher did: files written (made by this build), linked from the previous tree,
    and files made from a source (`put_derived`) because the previous build had no copy."""

    written: int
    linked: int
    derived_made: int


class Publisher:
    """Writes the finished files of a build into its new tree; a file whose bytes the previous
    build of the same output already published (same path, same sha256, and that file still
    as recorded: size, mtime and inode) is hard-linked from the previous tree instead of
    written again. The previous tree is never modified; every file of the new tree is a new
    name, so nothing is written through a link. Not a record: it collects the sha256 sums and
    sources, and counts what it did."""

    def __init__(
        self,
        root: Path,
        previous: Path | None = None,
        known: Mapping[str, Published] | None = None,
    ) -> None:
        self.root = root
        self.previous = previous
        # the previous tree as a path prefix: a str join per file, not a Path (a tenth of the
        # link loop's time went to building Path objects)
        self._prefix = os.path.join(os.fspath(previous), "") if previous is not None else ""
        self.known = known or {}
        self.sums: dict[str, str] = {}
        self.sources: dict[str, str] = {}
        self.linked = self.written = self.derived_made = 0
        self._tree: TreeWriter | None = None
        self._present: set[str] = set()  # files in the tree before this publisher wrote any

    def _open(self) -> TreeWriter:
        if self._tree is None:  # opened on first use, closed with the process
            self._present = _listing(self.root)  # what the engine wrote there, if anything
            self._tree = TreeWriter(self.root)
        return self._tree

    def put(self, rel: str, data: bytes) -> None:
        tree = self._open()
        sha = hashlib.sha256(data).hexdigest()
        self._clear(tree, rel)
        self.sums[rel] = sha
        if self._link(rel, tree, sha, len(data)):
            return
        tree.put(rel, data)
        self.written += 1

    def put_derived(self, rel: str, source: str, make: Callable[[], bytes | None]) -> None:
        """Publish `make()` at `rel` (nothing when it gives None), a function of `source` (a
        digest naming every input of `make`, its code included). When the previous build
        published `rel` from the same source and that file is still as recorded, it is linked
        and `make` is not called."""
        tree = self._open()
        old = self.known.get(rel)
        # "" names no source (a file published as given records ""): never linked by source
        if old is not None and source and old.source == source:
            self._clear(tree, rel)
            if self._link(rel, tree, old.sha256, old.size):
                self.sums[rel], self.sources[rel] = old.sha256, source
                return
        data = make()
        self.derived_made += 1
        if data is not None:
            self.put(rel, data)
            self.sources[rel] = source

    def _clear(self, tree: TreeWriter, rel: str) -> None:
        """A file already at `rel` is replaced (e.g. a page the engine wrote before its blocks
        went in); only a path known to be taken costs a system call."""
        if rel in self._present or rel in self.sums:
            tree.remove(rel)
            self._present.discard(rel)

    def counts(self) -> PublishCounts:
        return PublishCounts(self.written, self.linked, self.derived_made)

    def close(self) -> None:
        if self._tree is not None:
            self._tree.close()
            self._tree = None

    def _link(self, rel: str, tree: TreeWriter, sha: str, size: int) -> bool:
        old = self.known.get(rel)
        if self.previous is None or old is None or old.sha256 != sha or old.size != size:
            return False
        source = self._prefix + rel
        try:
            st = os.lstat(source)
            if (st.st_size, st.st_mtime_ns, st.st_ino) != (old.size, old.mtime_ns, old.inode):
                return False
            if not stat.S_ISREG(st.st_mode):
                return False
            tree.link_from(source, rel)
        except OSError:
            return False
        self.linked += 1
        return True

    def put_all(self, files: Iterable[tuple[str, bytes | Derived]]) -> None:
        for rel, data in files:
            if isinstance(data, Derived):
                self.put_derived(rel, data.source, data.make)
            else:
                self.put(rel, data)


def _listing(root: Path) -> set[str]:
    """The relative paths of the files under `root` (none when it does not exist)."""
    top = os.fspath(root)
    found: set[str] = set()
    for dirpath, _dirnames, filenames in os.walk(top):
        below = os.path.relpath(dirpath, top)
        prefix = "" if below == "." else below.replace(os.sep, "/") + "/"
        found.update(prefix + name for name in filenames)
    return found
