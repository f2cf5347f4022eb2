"""What a site build reuses from the build cache, and the key parts it names for each stage.

The cache (`generator.core.cache`) knows no stage; this module holds the site's side of it:

- `inputs_key`: the derived key (`generator.core.memo`) of `SiteInputs`, everything a build
  reads except the evidence tree: the whole options record, the catalog, docs, templates,
  mkdocs.yml, the pages and assets it copies, the trust root file, the epoch, the generator
  and the engines it calls. Every page that shows no evidence is keyed by it alone.
- `build_key`: `inputs_key` plus the evidence tree: the whole build.
- The record of the last build of an output directory (`unchanged_build`, `record_build`,
  `previous_files`): a rebuild with the same key of an untouched output does nothing, and one
  that changed something links the files whose bytes it published before.
- `RecipeKeys`: the key parts of the files made from one recipe's data (its pages, its API
  documents), and `api_reuse`, the JSON API's per-recipe files as derived files (linked from
  the previous build when their source is unchanged).
- `StoredPage`: a lifted page as the pages stage stores it; `StoredGroup`: the keys of the
  pages made from one recipe's data, stored under one key for the recipe.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pickle
import secrets
import stat
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from generator.core import safeio
from generator.core.cache import (
    Cache,
    digest,
    fingerprint,
    listing_digest,
    listing_rows,
    stat_tree_digest,
)
from generator.core.cache import tree_listing as _tree_listing
from generator.core.memo import Memo, content
from generator.site.publish import FileTable, Published, Row

if TYPE_CHECKING:  # a no-change build imports none of these (`generator.site.entry`)
    from generator.evidence.view import RunFacts
    from generator.site import api
    from generator.site.model import SiteData
    from generator.site.options import BuildOptions

BUILD_STAGE = "build"
PAGES_STAGE = "pages"  # pages and the API's per-recipe parts, made from one recipe's data
# the parts of the API's site-wide files made from one recipe's data (its summary in the
# recipe index, its entry in the evidence index), by their source (`api.Reuse.texts`)
API_TEXTS_STAGE = "api-texts"
GROUPS_STAGE = "page-groups"  # the keys of the pages made from one recipe's data (`StoredGroup`)

# the engines whose output the site publishes: their versions are inputs of every build
ENGINES = ("mkdocs", "mkdocs-material", "plotly", "sigstore", "jinja2", "pandas")


# --- keys ---------------------------------------------------------------------------------------


def _versions(*dists: str) -> list[str]:
    from importlib import metadata

    out = []
    for d in dists:
        try:
            out.append(f"{d}=={metadata.version(d)}")
        except metadata.PackageNotFoundError:
            out.append(f"{d}==absent")
    return out


@dataclass(frozen=True, slots=True)
class SiteInputs:
    """Everything a site build reads except the evidence tree's content: the whole options
    record (its catalog, docs and mkdocs.yml keyed by content, `generator.core.memo`), the
    epoch, the templates, the hand-written pages and assets the site copies (`static_docs`,
    which holds CONTRIBUTING.md and SECURITY.md: the bytes the build publishes, whatever file
    they came from), the trust root file the options name and the engines' versions.
    Pages that show no evidence are keyed by this alone."""

    options: BuildOptions
    epoch: int
    templates: Path = field(metadata=content("the templates"))
    static: Mapping[str, bytes] = field(default_factory=dict)
    trust_root: Path | None = field(default=None, metadata=content("the catalog"))
    engines: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class BuildInputs:
    """Everything a site build reads: its `SiteInputs` key, the evidence tree (stat-memoized),
    the upstream state its pointer records depend on, and the commits checked out in the
    repositories holding the evidence and the catalog (`BuildOptions.evidence_head`,
    `catalog_head`: the git history the run pages and the changelog are read from, keyed here
    and not in `SiteInputs`, so a commit rebuilds the site without re-keying every page)."""

    site: str
    evidence: str
    upstream: str
    heads: tuple[str, str] = ("", "")


SITE_INPUTS_STAGE = "inputs"


def inputs_key(
    inputs: BuildOptions,
    epoch: int,
    templates: Path,
    memo: Memo,
    static: Mapping[str, bytes],
) -> str:
    """The derived key of the build's evidence-independent inputs (`SiteInputs`)."""
    from generator.evidence.trustroot import trust_root_path

    root_file = trust_root_path(inputs.trust_root, Path(inputs.catalog))
    record = SiteInputs(inputs, epoch, templates, static, root_file, tuple(_versions(*ENGINES)))
    return memo.key(SITE_INPUTS_STAGE, (), record)


def build_key(inputs: BuildOptions, memo: Memo, base: str) -> str:
    """The derived key of the whole build: `inputs_key` (`base`), the evidence tree and the
    upstream state. One walk of the evidence tree serves both (`safeio.walk`), and the verify
    stage after them (`Cache.hold_walk`: the build's one walk of the tree)."""
    from generator.evidence.pointer import in_tree
    from generator.evidence.store import TREE_SUFFIXES
    from generator.evidence.upstream import state_key

    # .yaml: upstream pointer files and allowlist.yaml (generator.evidence.upstream), whose
    # records also depend on the OCI cache and the environment (state_key)
    evidence_dir = Path(safeio.abspath(inputs.evidence))
    suffixes = TREE_SUFFIXES
    tree = safeio.walk(evidence_dir, suffixes=suffixes) if safeio.is_dir(evidence_dir) else None
    if tree is not None and memo.cache is not None:  # the verify stage's walk too
        memo.cache.hold_walk(tree, suffixes)
    evidence = stat_tree_digest(
        memo.cache,
        evidence_dir,
        suffixes,
        shown=f"{evidence_dir.name}/",
        where="the evidence directory",
        tree=tree,
    )
    pointers = in_tree(tree, memo.cache) if tree is not None else []
    upstream = state_key(evidence_dir, inputs.online, pointers)
    heads = (inputs.evidence_head, inputs.catalog_head)
    return memo.key(BUILD_STAGE, (), BuildInputs(base, evidence, upstream, heads))


# --- the record of the last build of an output directory --------------------------------------


@dataclass(frozen=True, slots=True)
class BuildRecord:
    """The last build of an output directory: its key, its report (JSON, parsed afresh for
    each reader) and its file table, every file of the output by relative path (`Published`:
    size, mtime, inode, sha256, source; a sha256 of "" when unknown), held as rows
    (`FileTable`), with the blocks it published (`FileTable.blocks`: key → paths)."""

    key: str
    report: bytes
    files: FileTable
    # the stored table this record was read against (`last_record`): a later record of the
    # same output is written as its difference from it (`record_build`); not compared
    base: StoredBase | None = field(default=None, compare=False, repr=False)

    def listing(self) -> RecordedListing:
        """The files as `tree_listing` lists them, to compare with a walk of the output."""
        return RecordedListing(self.files)

    def columns(self) -> Columns:
        """The file table as columns, sorted by path: the paths, then each field."""
        rows = self.files.rows
        rels = tuple(sorted(rows))
        fields = tuple(zip(*map(rows.__getitem__, rels), strict=True))
        sizes, mtimes, inodes, shas, sources = fields if fields else ((),) * 5
        return Columns(rels, sizes, mtimes, inodes, shas, sources)

    def encode(self, columns: Columns | None = None) -> bytes:
        """The record as the cache stores it: one pickle of columns (a tuple of paths and a
        tuple per field), not an object per file. At 75,715 files the JSON document of one
        object per file took 1.6 s to write and was parsed twice per build. `columns`: this
        record's `columns()`, when the caller made them already."""
        c = columns if columns is not None else self.columns()
        fields = (c.rels, c.sizes, c.mtimes, c.inodes, c.shas, c.sources)
        blocks = dict(self.files.blocks)
        return pickle.dumps(
            (_RECORD_FORMAT, self.key, self.report, *fields, blocks),
            protocol=pickle.HIGHEST_PROTOCOL,
        )

    @staticmethod
    def decode(payload: bytes) -> BuildRecord | None:
        """The record `encode` stored (an authenticated entry: unpickled only once its HMAC
        matched), or None when it is of another format."""
        columns = _columns(payload)
        if columns is None:
            return None
        _, key, report, rels, sizes, mtimes, inodes, shas, sources, blocks = columns
        rows = zip(sizes, mtimes, inodes, shas, sources, strict=True)
        return BuildRecord(key, report, FileTable(dict(zip(rels, rows, strict=True)), blocks))

    @staticmethod
    def decode_reference(payload: bytes) -> dict[str, Published] | None:
        """The file table of the record `encode` stored, a `Published` made per file (the
        reference of `decode`'s rows: 0.14 CPU-s for 75,715 files where the rows take 0.05)."""
        columns = _columns(payload)
        if columns is None:
            return None
        rels, *fields = columns[3:9]
        return dict(zip(rels, map(Published, *fields), strict=True))


@dataclass(frozen=True, slots=True)
class StoredBase:
    """A file table as stored in full (`BASE_STAGE`), which the record of each later build of
    the output names by `token` and amends (`record_build`): its rows and blocks, as read or
    written, never changed (a record's own table is a copy). `token` is drawn at random when
    the base is written: a record whose token is not its base's (a build killed between the
    two writes) is no record."""

    token: str
    rows: Mapping[str, Row]
    blocks: Mapping[str, tuple[str, ...]]

    def encode(self) -> bytes:
        """One pickle of columns; each block's paths as the table's own strings, so the pickle
        stores each path once (a block's paths that came from a head are equal strings, not
        the same: 3 MB more of 19 at 1,000 x 20,000, each read and decoded every build)."""
        rels = tuple(sorted(self.rows))
        fields = tuple(zip(*map(self.rows.__getitem__, rels), strict=True))
        columns = fields if fields else ((),) * 5
        own = {rel: rel for rel in rels}
        blocks = {k: tuple(own.get(rel, rel) for rel in v) for k, v in self.blocks.items()}
        return pickle.dumps(
            (_BASE_FORMAT, self.token, rels, *columns, blocks), protocol=pickle.HIGHEST_PROTOCOL
        )

    @staticmethod
    def decode(payload: bytes) -> StoredBase | None:
        """The base `encode` stored (an authenticated entry), or None when of another format."""
        fields = pickle.loads(payload)
        if not isinstance(fields, tuple) or len(fields) != 9 or fields[0] != _BASE_FORMAT:
            return None
        _, token, rels, sizes, mtimes, inodes, shas, sources, blocks = fields
        rows = zip(sizes, mtimes, inodes, shas, sources, strict=True)
        return StoredBase(token, dict(zip(rels, rows, strict=True)), blocks)


@dataclass(frozen=True, slots=True)
class RecordHead:
    """The record of one build as stored under its output (`BUILD_STAGE`) once a base is
    stored (`StoredBase`): the build's key and report, the base's token, and the table's
    difference from the base: the rows changed or added, the paths gone, the blocks added
    (key → paths) and gone."""

    key: str
    report: bytes
    token: str
    changed: Mapping[str, Row]
    gone: tuple[str, ...]
    blocks: Mapping[str, tuple[str, ...]]
    blocks_gone: tuple[str, ...]

    @staticmethod
    def between(key: str, report: bytes, base: StoredBase, files: FileTable) -> RecordHead:
        """The head that amends `base` into `files`."""
        old, rows = base.rows, files.rows
        changed = {rel: row for rel, row in rows.items() if old.get(rel) != row}
        gone = tuple(sorted(old.keys() - rows.keys()))
        old_blocks, blocks = base.blocks, files.blocks
        added = {k: v for k, v in blocks.items() if old_blocks.get(k) != v}
        blocks_gone = tuple(sorted(old_blocks.keys() - blocks.keys()))
        return RecordHead(key, report, base.token, changed, gone, added, blocks_gone)

    def size(self) -> int:
        """How many rows and blocks it amends."""
        return len(self.changed) + len(self.gone) + len(self.blocks) + len(self.blocks_gone)

    def apply(self, base: StoredBase) -> BuildRecord:
        """The record this head makes of `base` (a copy: the base is not changed)."""
        rows = dict(base.rows)
        rows.update(self.changed)
        for rel in self.gone:
            del rows[rel]
        blocks = dict(base.blocks)
        blocks.update(self.blocks)
        for k in self.blocks_gone:
            del blocks[k]
        return BuildRecord(self.key, self.report, FileTable(rows, blocks), base)

    def encode(self) -> bytes:
        fields = (self.key, self.report, self.token, dict(self.changed), self.gone)
        return pickle.dumps(
            (_HEAD_FORMAT, *fields, dict(self.blocks), self.blocks_gone),
            protocol=pickle.HIGHEST_PROTOCOL,
        )

    @staticmethod
    def decode(payload: bytes) -> RecordHead | None:
        fields = pickle.loads(payload)
        if not isinstance(fields, tuple) or len(fields) != 8 or fields[0] != _HEAD_FORMAT:
            return None
        return RecordHead(*fields[1:])


def _columns(payload: bytes) -> tuple[Any, ...] | None:
    """The fields of a stored record (`BuildRecord.encode`), its blocks last: {} for a record
    of the format before blocks (`_LAST_FORMAT`), whose rows read the same; None for a record
    of any other format."""
    columns = pickle.loads(payload)
    if not isinstance(columns, tuple):
        return None
    if len(columns) == 9 and columns[0] == _LAST_FORMAT:
        return (*columns, {})
    if len(columns) == 10 and columns[0] == _RECORD_FORMAT:
        return columns
    return None


@dataclass(frozen=True, slots=True)
class Columns:
    """A file table as columns, sorted by path (`BuildRecord.columns`): what the record
    stores and what the stamp's listing is hashed from."""

    rels: tuple[str, ...]
    sizes: tuple[int, ...]
    mtimes: tuple[int, ...]
    inodes: tuple[int, ...]
    shas: tuple[str, ...]
    sources: tuple[str, ...]

    def listing(self) -> Iterator[tuple[str, int, int, int]]:
        """The rows of the listing this table records (`tree_listing`'s order: by path)."""
        return zip(self.rels, self.sizes, self.mtimes, self.inodes, strict=True)


class RecordedListing:
    """The listing a record holds ([path, size, mtime_ns, inode] per file, as `tree_listing`
    gives it), compared entry by entry with a walk's listing without being built: a record of
    75,715 files made 75,715 lists on every build only to be compared, or not at all when the
    key had changed. Equal to a sequence of the same entries (lists or tuples) in any order."""

    __slots__ = ("_rows",)
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, files: Mapping[str, Published]) -> None:
        self._rows = FileTable.of(files).rows

    def __eq__(self, other: object) -> bool:
        if isinstance(other, RecordedListing):
            return self._rows == other._rows
        if not isinstance(other, Sequence) or len(other) != len(self._rows):
            return False
        rows = self._rows
        for entry in other:  # a walk names each path once: equal lengths, all found, equal
            if not isinstance(entry, Sequence) or len(entry) != 4:
                return False
            old = rows.get(entry[0])
            if old is None or old[:3] != tuple(entry[1:]):
                return False
        return True

    def __iter__(self) -> Iterator[list[Any]]:
        for rel in sorted(self._rows):
            yield [rel, *self._rows[rel][:3]]

    def __len__(self) -> int:
        return len(self._rows)


_RECORD_FORMAT = "build-record 3"  # with the blocks (`FileTable.blocks`)
_LAST_FORMAT = "build-record 2"  # without: read as a table of no blocks
_HEAD_FORMAT = "build-record-head 1"  # a head (`RecordHead`), amending a base
_BASE_FORMAT = "build-record-base 1"  # a base (`StoredBase`)
BASE_STAGE = "build-base"  # the base of each output's record, under the output's key
# a head that amends more than this share of its base's rows is not written: a new base is
REBASE_SHARE = 8
# the record of each output directory, read once per build: by `Cache` (one per build), then
# by the directory's resolved path; `record_build` replaces it
_RECORDS: weakref.WeakKeyDictionary[Cache, dict[str, BuildRecord | None]] = (
    weakref.WeakKeyDictionary()
)


def _record_key(out: Path) -> str:
    return digest(str(safeio.resolve(out)))


def last_record(cache: Cache, out: Path) -> BuildRecord | None:
    """The record of the last build of `out` (None when there is none, or it is unreadable
    or of another generator); read from the cache once per `Cache`."""
    if not cache.enabled or not safeio.is_dir(out):
        return None
    held = _RECORDS.setdefault(cache, {})
    where = _record_key(out)
    if where not in held:
        stored = cache.get(BUILD_STAGE, where, fingerprint(), authenticated=True)
        held[where] = _read_record(cache, where, stored) if stored is not None else None
    return held[where]


def _read_record(cache: Cache, where: str, stored: bytes) -> BuildRecord | None:
    """The record a stored head makes of its base (None: either is missing, bad, or of another
    format, or the base is not the one the head amends); a record in one piece (the format
    before heads) as it is."""
    head = RecordHead.decode(stored)
    if head is None:
        return BuildRecord.decode(stored)
    payload = cache.get(BASE_STAGE, where, fingerprint(), authenticated=True)
    base = StoredBase.decode(payload) if payload is not None else None
    if base is None or base.token != head.token:
        return None
    return head.apply(base)


def _last_build(cache: Cache, out: Path) -> dict[str, Any]:
    """The record of the last build of `out` as a document ({} when there is none): its
    key, its listing (`tree_listing`'s form) and its report (a new dict for each caller)."""
    record = last_record(cache, out)
    if record is None:
        return {}
    return {"key": record.key, "listing": record.listing(), "report": json.loads(record.report)}


STAMP_STAGE = "build-stamp"


def _stamp(
    cache: Cache, out: Path, key: str, report: dict[str, Any], listing: Iterable[Sequence[Any]]
) -> None:
    """The stamp of the build of `out`: its key, the digest of its listing and its report, all
    a no-change rebuild reads (`unchanged_build`), apart from the file table (the record of the
    last build: 75,715 entries and 37 MB at 1,000 recipes, whose authentication and parse a
    no-change rebuild paid for nothing but the listing). Authenticated as the record is."""
    doc = {"key": key, "listing": listing_digest(listing), "report": report}
    cache.put(
        STAMP_STAGE,
        digest(str(safeio.resolve(out))),
        fingerprint(),
        json.dumps(doc, sort_keys=True, allow_nan=False).encode(),
        authenticated=True,  # a planted stamp must not make a build skip
    )


def unchanged_build(cache: Cache, out: Path, key: str) -> dict[str, Any] | None:
    """The report of the build recorded under `key`, if `out` is still exactly what it wrote:
    its stamp names `key` and the digest of the listing `out` has now (`record_build` writes
    the stamp with the record)."""
    if not cache.enabled or not safeio.is_dir(out):
        return None
    stored = cache.get(
        STAMP_STAGE, digest(str(safeio.resolve(out))), fingerprint(), authenticated=True
    )
    try:
        doc = json.loads(stored) if stored is not None else {}
    except ValueError:
        return None
    if (
        not isinstance(doc, dict)
        or doc.get("key") != key
        or not isinstance(doc.get("report"), dict)
    ):
        return None
    if doc.get("listing") != listing_digest(listing_rows(out)):  # no list built per file
        return None
    report: dict[str, Any] = doc["report"]
    return report


def record_build(
    cache: Cache,
    out: Path,
    key: str,
    report: dict[str, Any],
    sums: Mapping[str, str] | None = None,
    sources: Mapping[str, str] | None = None,
    table: Mapping[str, Published] | None = None,
) -> None:
    """Remember that `out` is the build of `key`: its file table (every file's stat, to notice
    edits; the sha256 of the files the build published and, for a file made from a source,
    that source's identity), so the next build can reuse them. `table`: that table, when the
    caller knows it (a delta: `Publisher.table`); else it is taken from the tree, with `sums`
    and `sources`.

    Stored in two entries: a base, the whole table (`StoredBase`, `BASE_STAGE`), and a head
    (`RecordHead`, `BUILD_STAGE`), the build's key and report and the table's difference from
    the base. A build whose previous record was read (`last_record`) writes only a head
    amending that record's base, unless it amends more than one row in `REBASE_SHARE`; then,
    as for a first build, a new base is written, and a head naming it. Measured at 1,000
    recipes x 20,000 runs (75,715 files, one evidence file removed, then added back; CPU-s
    in-process): the whole table encoded and stored (16.4 MB) 0.06 + 0.06 each build; a
    head of the ~30 rows that changed, ~0.002, with its difference found in 0.015."""
    if table is None:
        sums, sources = sums or {}, sources or {}
        rows = {
            rel: (size, mtime, inode, sums.get(rel) or "", sources.get(rel) or "")
            for rel, size, mtime, inode in _tree_listing(out)
        }
        table = FileTable(rows)
    files = FileTable.of(table)
    record = BuildRecord(key, json.dumps(report, sort_keys=True, allow_nan=False).encode(), files)
    columns = record.columns()  # sorted once, for the stamp and the record
    # the stamp a no-change rebuild reads: the listing's digest from the table, in the walk's
    # order (`tree_listing`: sorted by path), as `unchanged_build` hashes the walk
    _stamp(cache, out, key, report, columns.listing())
    if not cache.enabled:
        return
    where = _record_key(out)
    held = _RECORDS.setdefault(cache, {})
    last = held.get(where)
    base = last.base if last is not None else None
    head = RecordHead.between(key, record.report, base, files) if base is not None else None
    if base is None or head is None or head.size() * REBASE_SHARE > len(files):
        # a new base, written before the head that names it (authenticated, as the head)
        rows = dict(files.rows)
        base = StoredBase(secrets.token_hex(16), rows, dict(files.blocks))
        cache.put(BASE_STAGE, where, fingerprint(), base.encode(), authenticated=True)
        head = RecordHead(key, record.report, base.token, {}, (), {}, ())
    # a planted entry must not make a build skip
    cache.put(BUILD_STAGE, where, fingerprint(), head.encode(), authenticated=True)
    held[where] = dataclasses.replace(record, base=base)


def previous_files(cache: Cache, out: Path) -> FileTable:
    """What the last recorded build of `out` published (its file table), by relative path. A
    file whose stat still matches holds those bytes (the record is authenticated, so the table
    cannot be planted); anything else is unknown."""
    record = last_record(cache, out)
    return record.files if record is not None else FileTable({})


def as_recorded(out: Path, files: Mapping[str, Published]) -> bool:
    """Whether `out` holds exactly the files of the table `files`, each with its recorded
    size, mtime and inode: then every file holds the bytes the table says (a file written
    since has another mtime or inode), and a delta can be applied to the tree. One walk.

    Each directory is read once (`safeio.scan`: one listing, each entry's kind from the
    directory itself, no link followed) and each file's `lstat` compared with its row as it
    is read, the first difference ending the walk: no list or sort per file. The
    reference, `as_recorded_reference`, compares `tree_listing` whole; the two give one answer
    (tests/test_as_recorded.py), except that a link of any kind, or a directory that cannot be
    read, is never as recorded here (a build only writes regular files), where the reference
    passes a link whose target is as recorded and skips a link to a directory.
    Measured on the 75,715 files of the 1,000-recipe site (CPU-s, `time.process_time`, three
    runs each, load 6): 1.03-1.15 for the reference, 0.48-0.51 here. Through the `scan` door
    instead of listing the directory directly: 0.437 min / 0.468 median against 0.413 / 0.453 (15 runs
    interleaved, load 4.9).

    What it detects: any file added, removed, renamed or replaced (its path, inode or kind),
    any file rewritten (its size or mtime), a link or an unreadable directory anywhere. What it
    cannot: a file whose bytes were changed in place with its size kept and its mtime set back
    (`touch -r`): its stat is the recorded one. It costs a stat per file, not per change,
    because a hand edit can be anywhere and must be repaired (the delta would keep it).
    A check by stat of what could have changed instead was measured and not taken: each
    recorded file's `lstat` by path and each directory's mtime (for files added) took 0.21
    CPU-s against this walk's 0.31 at 1,000 recipes (three runs, load 12), but a directory's
    mtime moves by the kernel's clock tick (a few ms): a file added within that tick of the
    build's last change to its directory would go unseen, be kept by every later delta and
    make the site differ from a build from scratch."""
    get = FileTable.of(files).rows.get  # rows: (size, mtime_ns, inode, ...)
    found = 0
    pending = [(os.fspath(out), "")]
    directory_kind, file_kind, lstat = safeio.Kind.DIR, safeio.Kind.FILE, safeio.lstat
    while pending:
        directory, prefix = pending.pop()
        try:
            for name, path, kind in safeio.scan(directory):
                if kind is directory_kind:
                    pending.append((path, prefix + name + "/"))
                    continue
                old = get(prefix + name)
                if old is None or kind is not file_kind:  # a link of any kind: never written
                    return False
                try:
                    st = lstat(path)
                except OSError:
                    return False
                if (
                    st.st_mtime_ns != old[1]
                    or st.st_ino != old[2]
                    or st.st_size != old[0]
                    or not stat.S_ISREG(st.st_mode)
                ):
                    return False
                found += 1
        except safeio.Refusal:  # a directory that cannot be read
            return False
    return found == len(files)  # each path is listed once: all of them found


def as_recorded_reference(out: Path, files: Mapping[str, Published]) -> bool:
    """`as_recorded` as the output's whole listing (`tree_listing`) compared with the table."""
    return RecordedListing(files) == _tree_listing(out)


# --- files made from one recipe's data ----------------------------------------------------------


class RecipeKeys:
    """Key parts of the files made from one recipe's data (its pages, its API documents): the
    build's evidence-independent inputs, the site-wide facts those files show (trust root,
    stage notes) and the recipe's runs, each run by its file (path, bytes) and its verdict.
    One per build: a run's digest is computed once however many files show it. Not a record:
    it memoizes."""

    def __init__(self, cache: Cache, site: SiteData, base_key: str) -> None:
        self.cache, self.base_key = cache, base_key
        self.fp = fingerprint("site")
        self.shared = json.dumps(
            [site.trust_root, [dataclasses.asdict(n) for n in site.notes]],
            sort_keys=True,
            allow_nan=False,
        )
        self._added = site.evidence_added
        self._runs: dict[int, str] = {}  # by object identity: the build holds every run alive

    def _run(self, run: RunFacts) -> str:
        """A run's part of a key: its file (path, bytes), id and verdict, and the commit that
        added its file (a run's page shows it: `pages.run_context`; it comes from the git
        history, not the file, so its bytes do not name it)."""
        found = self._runs.get(id(run))
        if found is None:
            sha = run.raw.sha256 if run.raw is not None else ""
            commit, date = self._added.get(run.path, ("", ""))
            found = self._runs[id(run)] = (
                f"{run.path}\0{run.id}\0{run.state}\0{sha}\0{commit}\0{date}"
            )
        return found

    def parts(self, kind: str, name: str, rel: str, runs: Sequence[RunFacts]) -> tuple[str, ...]:
        """The key parts of one file made from `runs`, from their rows (`evidence.view.facts`:
        keying the files of a recipe whose views are not loaded does not load them)."""
        from generator.evidence.view import facts

        return (self.fp, self.base_key, self.shared, kind, name, rel, *map(self._run, facts(runs)))

    def group_parts(self, kind: str, name: str, runs: Sequence[RunFacts]) -> tuple[str, ...]:
        """The key parts of every page made from one recipe name's data (`pages.PageGroup`):
        the parts each of its pages is keyed by (`parts`) but the page's own path, which the
        kind, the name and the runs decide. One key per recipe tells that none of its pages
        changed (`StoredGroup`). Made from the runs' rows, as `parts`."""
        from generator.evidence.view import facts

        rows = facts(runs)
        return (self.fp, self.base_key, self.shared, "group", kind, name, *map(self._run, rows))


@dataclass(frozen=True, slots=True)
class StoredPage:
    """A lifted page (`islands.lift`: the skeleton and its data blocks) as the pages stage
    stores it in the cache: pickled as the UTF-8 bytes it encodes itself, not as str.

    Pickling a str that is not pure ASCII leaves a UTF-8 copy of it cached inside the str
    object for as long as the str lives (CPython keeps what `PyUnicode_AsUTF8AndSize` made),
    and a cold build keeps every rendered page alive until the pages are written: at 1,000
    recipes and 20,000 runs the rendered pages grew the build by 628 MB, 469 MB stored this
    way (in-process, cold cache); the cold build's peak went from 2,222 MB to 2,075 MB with
    this alone (PSS summed over the process tree, two paired runs)."""

    skeleton: str
    blocks: tuple[str, ...]

    def __reduce__(self) -> tuple[Callable[..., StoredPage], tuple[bytes, tuple[bytes, ...]]]:
        return _stored_page, (self.skeleton.encode(), tuple(b.encode() for b in self.blocks))


def _stored_page(skeleton: bytes, blocks: tuple[bytes, ...]) -> StoredPage:
    return StoredPage(skeleton.decode(), tuple(b.decode() for b in blocks))


@dataclass(frozen=True, slots=True)
class StoredGroup:
    """The pages made from one recipe name's data (`pages.PageGroup`) as a build keyed them,
    stored under the group's key (`RecipeKeys.group_parts`, which names every input of every
    page of the group): each page's docs-relative path, its stamp page ("": the engine builds
    it), its key in the pages stage (`PAGES_STAGE`, the key of its content) and, for a page
    the engine builds, its Markdown skeleton and that skeleton's key (`build.SKELETONS_STAGE`;
    "" for a stamped page). A build that finds a group's entry knows its pages from it: no
    page of the group is planned, keyed or looked up, and the entries it names are kept
    (served) without being read. Pickled with its skeletons as UTF-8 bytes (`StoredPage`).

    Measured, one evidence file removed at 1,000 recipes x 20,000 runs (cProfile): 22,025
    page keys derived and looked up in the store took 0.38 profiled s, the parts they were
    derived from 0.22 and the 2,000 skeletons read 0.20; the page plan (22,000 pages) 0.35.
    With the groups (process CPU of `build.make_pages`, one file removed / added back, two
    interleaved cycles, load 7-13): 0.640 / 0.660, 0.644 / 0.618 -> 0.416 / 0.397, 0.427 /
    0.441 s, of which the site-wide pages' inputs (`pages.site_plan`) are 0.17-0.19 and their
    derived keys ~0.09: what is left grows with the site, not with the change."""

    rels: tuple[str, ...]
    stamps: tuple[str, ...]
    keys: tuple[str, ...]
    shells: tuple[str, ...]
    skeletons: tuple[str, ...]
    # a stamped recipe page's entries of the search index (`stamping.search_entries`), "" for
    # the others: the build's search index is made from them without the page being read
    searches: tuple[str, ...] = ()

    def __reduce__(self) -> tuple[Callable[..., StoredGroup], tuple[Any, ...]]:
        skeletons = tuple(s.encode() for s in self.skeletons)
        searches = tuple(s.encode() for s in self.searches)
        return _stored_group, (
            self.rels, self.stamps, self.keys, self.shells, skeletons, searches
        )  # fmt: skip


def _stored_group(
    rels: tuple[str, ...],
    stamps: tuple[str, ...],
    keys: tuple[str, ...],
    shells: tuple[str, ...],
    skeletons: tuple[bytes, ...],
    searches: tuple[bytes, ...] = (),
) -> StoredGroup:
    return StoredGroup(
        rels,
        stamps,
        keys,
        shells,
        tuple(s.decode() for s in skeletons),
        tuple(s.decode() for s in searches),
    )


def api_reuse(recipe_keys: RecipeKeys | None, sums: Mapping[str, str]) -> api.Reuse:
    """The JSON API's files made from one recipe's data (and its badges) as derived files,
    their source the digest of the file's kind ("api-<part>", "badge-<part>") and of the key
    parts of the recipe's runs (`RecipeKeys.parts`, kind "api-runs"), the latter digested once
    per recipe and runs however many files are made from them (`api_source_reference`: all
    the parts digested per file). Without a cache (`recipe_keys` None) there is no previous
    file table to link from, and every source is "": the files are derived (and counted) the
    same, and all made. With it, the parts of the site-wide files made from one recipe's data
    are kept in the cache by their source (`api.Reuse.texts`, `API_TEXTS_STAGE`): a recipe's
    summary in the recipe index, its entry in the evidence index; the index spliced from them.

    Measured at 1,000 recipes × 20,000 runs (one evidence file removed, cProfile): 6,000
    sources, 0.27 profiled s, each digesting ~25 parts; here 2,000 digests of the parts and
    6,000 of two. The runs are told apart by the runs they hold (each run object's identity,
    in order), not by the sequence holding them: a recipe's runs (`RecipeView.evidence`), its
    evidence group's (`api.evidence_groups`) and its published block's (`build._blocks`) are
    three sequences of the same runs, digested once (2,000 digests of the parts -> 1,000).
    Each run is kept alive with its entry, so no identity is ever another run's."""
    held: dict[tuple[str, tuple[int, ...]], tuple[Sequence[RunFacts], str]] = {}

    def source(kind: str, name: str, runs: Sequence[RunFacts]) -> str:
        from generator.evidence.view import facts

        runs = facts(runs)  # the rows: a recipe's views are not loaded to name its files
        if recipe_keys is None:
            return ""
        which = (name, tuple(map(id, runs)))
        found = held.get(which)
        if found is None:
            found = held[which] = (tuple(runs), _runs_key(recipe_keys, name, runs))
        return digest("api-source", kind, found[1])

    from generator.site import api

    if recipe_keys is None:
        return api.Reuse(source, sums)
    cache = recipe_keys.cache

    def texts(kind: str, parts: Sequence[tuple[str, Callable[[], Any]]]) -> list[Any]:
        keys = [(kind, source) for source, _ in parts]
        return cache.get_or_make_many(
            API_TEXTS_STAGE, keys, lambda todo: [parts[i][1]() for i in todo], sweep=True
        )

    return api.Reuse(source, sums, texts)


def _runs_key(recipe_keys: RecipeKeys, name: str, runs: Sequence[RunFacts]) -> str:
    return digest(*recipe_keys.parts("api-runs", name, "", runs))


def api_source_reference(
    recipe_keys: RecipeKeys, kind: str, name: str, runs: Sequence[RunFacts]
) -> str:
    """The source `api_reuse` gives a file, its parts digested afresh (the reference)."""
    return digest("api-source", kind, _runs_key(recipe_keys, name, runs))


__all__ = [
    "API_TEXTS_STAGE",
    "BASE_STAGE",
    "BUILD_STAGE",
    "GROUPS_STAGE",
    "PAGES_STAGE",
    "BuildRecord",
    "Columns",
    "RecipeKeys",
    "RecordedListing",
    "StoredGroup",
    "StoredPage",
    "api_reuse",
    "api_source_reference",
    "as_recorded",
    "as_recorded_reference",
    "build_key",
    "inputs_key",
    "last_record",
    "previous_files",
    "record_build",
    "unchanged_build",
]
