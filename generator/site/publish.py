"""Writing a finished build's files, reusing what the previous build wrote: as a whole new tree
beside the output, or, when the output is exactly what the last build wrote, as a delta.

`Publisher.put` writes a file, or reuses the previous build's copy when that build published
the very same bytes at the same path and the file is still as recorded.
`Publisher.put_derived` goes one step further for a file made from a source whose digest is
known before the file is made (a run's signed statement, made from its bundle): when the
previous build published that path from the same source, and the file is still as recorded, it
is reused without being made or hashed at all. The previous build's file table (path → size,
mtime, inode, sha256, source) is kept in the build cache (`site/incremental.py`).

Two ways to reuse, one interface:

- a new tree (`delta=False`, the reference): every file of the new build is in the new tree,
  a reused one hard-linked from the previous tree; the tree is then swapped in whole
  (`generator.core.outputs.swap_in`). Costs a link per file and the removal of the old tree:
  at 1,000 recipes × 20,000 runs (75,715 files) 4.1 s of links and 2.4 s of removal, after
  one evidence file was removed.
- a delta (`delta=True`: the output's listing is exactly the one the last build recorded, so
  every file in it holds the bytes its table says): a reused file is left where it is and not
  touched at all; only the changed and new files are written, into the staging tree, and
  `delta` names them with the files gone (`generator.core.outputs.Delta`), which
  `commit_delta` journals and applies. Costs what changed, plus one walk of the output to
  check it is as recorded (`incremental.as_recorded`) and a pass over the file table.

Both give the same files (tests/test_pipeline.py compares each with a build from scratch, and
checks that every rebuild after a change was a delta). Measured (cProfile, profiled seconds,
machine loaded 5-8, one evidence file removed, then rebuilt): at 200 recipes × 4,000 runs
(15,208 files) publishing went from about 3.7 s (links 0.9, swap and removal of the old tree
1.7, record 0.7, record parsed twice 0.4) to about 1.9 s (the walk 0.7, record read 0.3 and
written 0.3, the per-file loop 0.3, 10 renames 0.03); at 1,000 × 20,000 (75,712 files) the
delta's renames and removals took 0.08 s (18 renames, 3 removals) where the links took 4.1 s and
the old tree's removal 2.4 s; what is left is linear in files, not in changes: the walk
(`tree_listing`, 3.0 s profiled there), the record read (1.0) and written (0.7), the loop
putting every file (0.9).

The file table is handled once (`FileTable`: rows, not an object per file; a kept file's row
carried over; only the staged files' rows made in `Publisher.table`). Measured on a delta of
75,715 files (10 changed, 5 new, 3 gone; CPU-s, min of 3, collector off, load 2.6-4): the
record read 0.15-0.18 -> 0.08-0.10, the publish loop and table 0.22-0.30 -> 0.13-0.14, the
record written 0.18-0.27 -> 0.15-0.16; the walk (`as_recorded`, 0.41-0.47) is left, most of
it the kernel's `lstat` (0.24 of it for a bare scandir-and-lstat walk). A whole one-file
rebuild at 1,000 recipes × 20,000 runs (one evidence file removed, then added back; four of
each, interleaved with the code before, load 3.3-4.1; CPU-s in-process): `write_site` with
`record_build`, median 2.24 (1.96-3.22) -> 1.84 (1.62-2.34); `_publish` 0.91 -> 0.71,
`record_build` 0.28 -> 0.20.

Blocks (`Block`, `Publisher.put_block`): each recipe's archives and each recipe name's runs
(raw files and signed statements) come as one block (`site/build.py` `_blocks`), keyed by a
digest of every file's path, the digests its source is made of and the code that makes them.
A delta whose previous build published a block of the same key carries the block's rows over
as they are, without its items being made, listed or put: work per changed block, not per
file. The blocks are kept in the file table (`FileTable.blocks`) and the build record (16.0 ->
16.4 MB at 1,000 recipes; encoded and decoded within 5-25 ms of before). At 1,000 recipes x
20,000 runs, one evidence file removed or added back: items put 53,632 -> 8,016 (2,000 of them
blocks), `put_derived` calls 75,646 -> 28,067, `derived_source` 61,646 -> 22,067; `_publish`
0.53-0.57 -> 0.46-0.50 CPU-s in-process (`time.process_time`, four rebuilds each, interleaved
with the code before, load 8-13); the whole rebuild 6.4-6.8 CPU-s either way (the saving is
within its noise). tests/test_publish_blocks.py holds that a one-run rebuild lists the items
of the changed name's block alone and gives the files of a build from scratch. What is left
of `_publish` is made afresh on any change because it is site-wide: the API's recipe index
and evidence index (a summary per recipe, `api.recipes_index`, `api.recipe_files`) and the
Atom feed (`changelog.entries` over every run). The two indexes are now spliced from each
recipe's part kept under its source (`api.Reuse.texts`): only a changed recipe's part is
made (`api.iter_api_files` 0.18-0.19 -> 0.10 CPU-s at 1,000 x 20,000, one file removed).

Measured and not taken: a recipe name's API files and a recipe's badges as one block each
(2,000 blocks more). Their iteration went 0.154-0.161 -> 0.126-0.130 CPU-s, but the blocks'
paths in the record (read 0.094-0.102 -> 0.122-0.131), the heads' difference over twice the
blocks (`record_build` 0.094-0.097 -> 0.109-0.124) and the carrying cost as much: no gain
(one-file cycles at 1,000 x 20,000, two each, interleaved). A block pays where it holds many
files (a name's runs: 40 a name) or costly ones (archives), not two JSON files.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from generator.core import safeio
from generator.core.atomic import TreeWriter
from generator.core.outputs import Delta


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


# a file table's row: a `Published` as a tuple (size, mtime_ns, inode, sha256, source)
Row = tuple[int, int, int, str, str]
_SHA: Final = 3  # a row's sha256
_SOURCE: Final = 4  # a row's source


class FileTable(Mapping[str, Published]):
    """A file table (relative path → `Published`) held as one `Row` tuple per file: the record
    of the last build decodes into it without making an object per file, the walk that checks
    the output (`incremental.as_recorded`) and the publisher compare rows, and a delta's new
    table is the old one's rows, the files kept carried over as they are (`Publisher.table`).
    A `Published` is made only for a row asked for by path. Not a record: a view of `rows`,
    which its owner does not change once it is handed out.

    `blocks`: the files published as one `Block` each, by the block's key (the paths it gave):
    a later build given a block of the same key carries its rows over as they are
    (`Publisher.put_block`). Every path a block names is a row of the table.

    Measured on a 75,715-row table (CPU-s, `time.process_time`, load ~1.5): the table as a dict
    of `Published` 0.14 to build from the record's columns, as rows 0.05."""

    __slots__ = ("blocks", "rows")

    def __init__(
        self, rows: dict[str, Row], blocks: Mapping[str, tuple[str, ...]] | None = None
    ) -> None:
        self.rows = rows
        self.blocks: Mapping[str, tuple[str, ...]] = blocks if blocks is not None else {}

    @staticmethod
    def of(files: Mapping[str, Published]) -> FileTable:
        """`files` as a table (itself when it is one)."""
        if isinstance(files, FileTable):
            return files
        return FileTable({rel: _row(p) for rel, p in files.items()})

    def __getitem__(self, rel: str) -> Published:
        return Published(*self.rows[rel])

    def __contains__(self, rel: object) -> bool:
        return rel in self.rows

    def __iter__(self) -> Iterator[str]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FileTable):
            return self.rows == other.rows
        return Mapping.__eq__(self, other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"FileTable({len(self.rows)} files)"


def _row(p: Published) -> Row:
    return (p.size, p.mtime_ns, p.inode, p.sha256, p.source)


class _Column(Mapping[str, str]):
    """One column of a publisher's table as it grows (sha256: 3, source: 4), by path; the
    source column names only the files made from a source (not "")."""

    __slots__ = ("_at", "_rows")

    def __init__(self, rows: dict[str, Row], at: Literal[3, 4]) -> None:
        self._rows, self._at = rows, at

    def __getitem__(self, rel: str) -> str:
        value = self._rows[rel][self._at]
        if self._at == _SOURCE and not value:
            raise KeyError(rel)
        return value

    def get(self, rel: str, default: str | None = None) -> str | None:  # type: ignore[override]
        row = self._rows.get(rel)
        if row is None or (self._at == _SOURCE and not row[_SOURCE]):
            return default
        return row[self._at]

    def __iter__(self) -> Iterator[str]:
        if self._at != _SOURCE:
            return iter(self._rows)
        return (rel for rel, row in self._rows.items() if row[_SOURCE])

    def __len__(self) -> int:
        if self._at != _SOURCE:
            return len(self._rows)
        return sum(1 for row in self._rows.values() if row[_SOURCE])


@dataclass(frozen=True, slots=True)
class Derived:
    """A file's content not made yet: `make()` (None: no file), a function of `source`, a
    digest naming everything `make` reads (its code included)."""

    source: str
    make: Callable[[], bytes | None]


@dataclass(frozen=True, slots=True)
class Block:
    """Files published together (`items()`: the same (path, bytes or `Derived`) pairs a
    publisher takes one by one), all made from the inputs `key` names: a digest of every input
    of every file the block gives (their paths, the digests their sources are made of and the
    code that makes them). A delta whose previous build published a block of the same key
    carries that block's rows over as they are, without `items` being called
    (`Publisher.put_block`): work per changed block, not per file. A key of "" names nothing:
    its items are always put."""

    key: str
    items: Callable[[], Iterable[tuple[str, bytes | Derived]]]


def derived_source(kind: str, *digests: str) -> str:
    """The source identity of a derived file: what made it (`kind`, with the code's
    fingerprint) and the digests of its inputs."""
    return hashlib.sha256("\0".join((kind, *digests)).encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class PublishCounts:
    """What a publisher did: files written (made by this build), linked from the previous tree,
    files made from a source (`put_derived`) because the previous build had no copy, and, for
    a delta, files left in place (the previous build's, the same) and files removed."""

    written: int
    linked: int
    derived_made: int
    kept: int = 0
    removed: int = 0


class Publisher:
    """Writes the finished files of a build into `root`, a new directory beside the output.

    Without `delta`, `root` becomes the whole new tree: a file whose bytes the previous build
    of the same output already published (same path, same sha256, and that file still as
    recorded: size, mtime and inode) is hard-linked from the previous tree instead of written
    again. The previous tree is never modified; every file of the new tree is a new name, so
    nothing is written through a link.

    With `delta` (the caller checked that the previous tree `previous` is exactly the one
    `known` records), a file whose recorded bytes (or source) are the same is kept where it is
    and nothing is written for it; `root` receives only the files that changed, and `delta()`
    names them and the files gone. Not a record: it counts what it did.

    The new file table is built once, as the files are put (`files`, by path: a kept file's
    row is the previous table's row itself); `sums` and `sources` are views of it, and a
    delta's `table()` only fills in the stat of the files it staged."""

    def __init__(
        self,
        root: Path,
        previous: Path | None = None,
        known: Mapping[str, Published] | None = None,
        *,
        delta: bool = False,
    ) -> None:
        self.root = root
        self.previous = previous
        # the previous tree as a path prefix: a str join per file, not a Path (a tenth of the
        # link loop's time went to building Path objects)
        self._prefix = os.path.join(os.fspath(previous), "") if previous is not None else ""
        self.known = FileTable.of(known or {})
        self._old = self.known.rows
        self.is_delta = delta and previous is not None
        # the new table: each file's row, its stat that of the file kept ((0, 0, 0) until a
        # delta's `table()` reads the stat of a file it staged, or a new tree is listed)
        self.files: dict[str, Row] = {}
        self.sums: Mapping[str, str] = _Column(self.files, _SHA)
        self.sources: Mapping[str, str] = _Column(self.files, _SOURCE)
        self.linked = self.written = self.derived_made = self.kept = 0
        self.carried = 0  # blocks carried over whole (`put_block`)
        # the blocks of the new table: each block's key → the paths it gave
        self.blocks: dict[str, tuple[str, ...]] = {}
        self._old_blocks = self.known.blocks
        self.hashed = 0  # files whose bytes were hashed (`put`, `take_rest`)
        self._tree: TreeWriter | None = None
        self._present: set[str] = set()  # files in the tree before this publisher wrote any
        self._staged: set[str] = set()  # a delta's files written into `root`
        self._table: FileTable | None = None

    def _open(self) -> TreeWriter:
        if self._tree is None:  # opened on first use, closed with the process
            self._present = _listing(self.root)  # what the engine wrote there, if anything
            self._tree = TreeWriter(self.root)
        return self._tree

    def put(self, rel: str, data: bytes, *, source: str = "") -> None:
        """Publish `data` at `rel` (`source`: what it was made from, "" for none)."""
        tree = self._tree or self._open()
        sha = hashlib.sha256(data).hexdigest()
        self.hashed += 1
        if self.is_delta and self._keep(rel, sha, source):
            return
        self._clear(tree, rel)
        self.files[rel] = (0, 0, 0, sha, source)
        if self._link(rel, tree, sha, len(data)):
            return
        tree.put(rel, data)
        self.written += 1
        self._staged.add(rel)

    def put_derived(self, rel: str, source: str, make: Callable[[], bytes | None]) -> None:
        """Publish `make()` at `rel` (nothing when it gives None), a function of `source` (a
        digest naming every input of `make`, its code included). When the previous build
        published `rel` from the same source and that file is still as recorded, it is reused
        (kept or linked) and `make` is not called."""
        tree = self._tree or self._open()
        old = self._old.get(rel)
        # "" names no source (a file published as given records ""): never reused by source
        if old is not None and source and old[_SOURCE] == source:
            if self.is_delta:  # kept (`_keep`, its bytes those recorded): the row carried over
                self._staged.discard(rel)
                self.kept += 1
                self.files[rel] = old
                return
            self._clear(tree, rel)
            if self._link(rel, tree, old[_SHA], old[0]):
                self.files[rel] = (0, 0, 0, old[_SHA], source)
                return
        data = make()
        self.derived_made += 1
        if data is not None:
            self.put(rel, data, source=source)

    def put_block(self, block: Block) -> None:
        """Publish the files of `block`. A delta whose previous build published a block of
        the same key (and none of whose paths was put yet) keeps every one of them where it
        is, its row carried over, without the block's items being made or even listed: its
        key names everything they are made from, and the previous tree is as recorded (the
        caller checked, `incremental.as_recorded`). Otherwise each item is put (`put_all`),
        and the block records the paths that hold a file."""
        if self.is_delta and block.key and self._carry(block.key):
            return
        rels: list[str] = []
        for rel, data in block.items():
            self._put_item(rel, data)
            rels.append(rel)
        if block.key:
            files = self.files
            self.blocks[block.key] = tuple(rel for rel in rels if rel in files)

    def _carry(self, key: str) -> bool:
        rels = self._old_blocks.get(key)
        if rels is None or not self.files.keys().isdisjoint(rels):
            return False
        old = self._old
        try:
            rows = {rel: old[rel] for rel in rels}
        except KeyError:  # never so in a recorded table (`FileTable.blocks`)
            return False
        self.files.update(rows)
        self.kept += len(rows)
        self.carried += 1
        self.blocks[key] = rels
        return True

    def recorded_source(self, rel: str) -> str | None:
        """The source the previous build recorded for `rel` (None: it published no `rel`)."""
        old = self._old.get(rel)
        return old[_SOURCE] if old is not None else None

    def _keep(self, rel: str, sha: str, source: str) -> bool:
        """A delta's file whose bytes the previous tree holds at `rel` already: left there
        (and a copy staged for it before, when it was put twice, is not moved). Its row is the
        previous one, unless this build names another source for it."""
        old = self._old.get(rel)
        if old is None or old[_SHA] != sha:
            return False
        self._staged.discard(rel)
        self.kept += 1
        self.files[rel] = old if old[_SOURCE] == source else (old[0], old[1], old[2], sha, source)
        return True

    def drop(self, rel: str) -> None:
        """The file the engine wrote at `rel` removed from `root` and never published (a stamp
        page: `generator.site.stamping`)."""
        tree = self._tree or self._open()
        tree.remove(rel)
        self._present.discard(rel)

    def _clear(self, tree: TreeWriter, rel: str) -> None:
        """A file already at `rel` is replaced (e.g. a page the engine wrote before its blocks
        went in); only a path known to be taken costs a system call."""
        if rel in self._present or rel in self.files:
            tree.remove(rel)
            self._present.discard(rel)

    def take_rest(self, source: Callable[[str], str] | None = None) -> None:
        """Account for the files in `root` that were not put (the engine's own output, when it
        ran: its assets, its search index): each hashed, so the file table records them, with
        the source `source` names for its sha256 (none: ""), as `put_derived` would have put
        it; a delta keeps one whose bytes the previous tree holds, and moves the others."""
        self._open()
        for rel in sorted(self._present - self.files.keys()):
            sha = safeio.sha256(self.root / rel, root=self.root, where="the built site")
            self.hashed += 1
            origin = source(sha) if source is not None else ""
            if self.is_delta and self._keep(rel, sha, origin):
                continue
            self.files[rel] = (0, 0, 0, sha, origin)
            if self.is_delta:
                self._staged.add(rel)

    def _gone(self) -> set[str]:
        return self._old.keys() - self.files.keys()

    def counts(self) -> PublishCounts:
        removed = len(self._gone()) if self.is_delta else 0
        return PublishCounts(self.written, self.linked, self.derived_made, self.kept, removed)

    def delta(self) -> Delta:
        """A delta's changes to the previous tree (call once every file is put, and
        `take_rest`): the files staged in `root`, to be moved into place, and the files the
        previous build published that this one did not, to be removed."""
        assert self.is_delta, "a publisher of a new tree has no delta"
        return Delta(self.root, tuple(sorted(self._staged)), tuple(sorted(self._gone())))

    def table(self) -> FileTable:
        """A delta's file table once it is applied (call once every file is put): the
        previous build's row of each file kept, the staged file's stat for each one moved (a
        rename keeps size, mtime and inode). Only the staged files' rows are made here: the
        rest were carried over as they were put. `table_reference` makes every row."""
        assert self.is_delta, "a new tree's table is taken from the tree once swapped in"
        if self._table is None:
            prefix = os.path.join(os.fspath(self.root), "")
            rows = self.files
            for rel in self._staged:
                st = safeio.lstat(prefix + rel)
                _, _, _, sha, source = rows[rel]
                rows[rel] = (st.st_size, st.st_mtime_ns, st.st_ino, sha, source)
            self._table = FileTable(rows, self.blocks)
        return self._table

    def tree_table(self, listing: Iterable[tuple[str, int, int, int]]) -> FileTable:
        """A new tree's file table once it is swapped in, from its listing (`tree_listing`:
        path, size, mtime, inode): each file's stat, with the sha256 and source it was put
        with ("" for a file this publisher did not put), and the blocks it published."""
        files = self.files
        rows: dict[str, Row] = {}
        for rel, size, mtime, inode in listing:
            put = files.get(rel)
            sha, source = (put[_SHA], put[_SOURCE]) if put is not None else ("", "")
            rows[rel] = (size, mtime, inode, sha, source)
        blocks = {k: v for k, v in self.blocks.items() if all(rel in rows for rel in v)}
        return FileTable(rows, blocks)

    def table_reference(self) -> dict[str, Published]:
        """`table` as a row made for every file from its sha256 and source (the reference:
        the previous build's entry of a file kept, the staged file's stat for a moved one).
        Measured at 1,000 recipes × 20,000 runs (75,715 files, one evidence file removed,
        cProfile): 0.115 profiled s, where `table` makes the 18 rows of the files staged."""
        assert self.is_delta, "a new tree's table is taken from the tree once swapped in"
        prefix = os.path.join(os.fspath(self.root), "")
        out: dict[str, Published] = {}
        for rel, sha in self.sums.items():
            source = self.sources.get(rel, "") or ""
            if rel in self._staged:
                st = safeio.lstat(prefix + rel)
                out[rel] = Published(st.st_size, st.st_mtime_ns, st.st_ino, sha, source)
            else:  # kept: its entry, unless this build names another source for it
                old = self.known[rel]
                same = old.source == source and old.sha256 == sha
                out[rel] = (
                    old if same else Published(old.size, old.mtime_ns, old.inode, sha, source)
                )
        return out

    def close(self) -> None:
        if self._tree is not None:
            self._tree.close()
            self._tree = None

    def _link(self, rel: str, tree: TreeWriter, sha: str, size: int) -> bool:
        old = self._old.get(rel)
        if (
            self.is_delta
            or self.previous is None
            or old is None
            or old[_SHA] != sha
            or old[0] != size
        ):
            return False
        source = self._prefix + rel
        try:
            st = safeio.lstat(source)
            if (st.st_size, st.st_mtime_ns, st.st_ino) != old[:3]:
                return False
            if not stat.S_ISREG(st.st_mode):
                return False
            tree.link_from(source, rel)
        except OSError:
            return False
        self.linked += 1
        return True

    def put_all(self, files: Iterable[tuple[str, bytes | Derived] | Block]) -> None:
        for item in files:
            if isinstance(item, Block):
                self.put_block(item)
            else:
                self._put_item(*item)

    def _put_item(self, rel: str, data: bytes | Derived) -> None:
        if isinstance(data, Derived):
            self.put_derived(rel, data.source, data.make)
        else:
            self.put(rel, data)


def _listing(root: Path) -> set[str]:
    """The relative paths of the files under `root` (none when it does not exist)."""
    top = os.fspath(root)
    found: set[str] = set()
    for dirpath, _dirnames, filenames in safeio.walk_dirs(top):
        below = safeio.relpath(dirpath, top)
        prefix = "" if below == "." else below.replace(os.sep, "/") + "/"
        found.update(prefix + name for name in filenames)
    return found
