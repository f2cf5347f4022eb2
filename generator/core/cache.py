"""A content-addressed build cache under `.cache/`: a rebuild repeats no work for unchanged inputs.

Stages use one memo interface: `Cache.get_or_make(stage, key_parts, make)` returns the value
stored under the key parts or makes, stores and returns it (`get_or_make_many` does a batch in
one call of `make`, so the missing values can be made in parallel); `Cache.finish` sweeps the
stages served with `sweep=True` down to the entries this build used. The cache knows no stage:
each stage names its key parts (its code's `fingerprint` and the digests of its inputs) in its
own module. Values are authenticated pickles (see below).

An entry is addressed by a key: sha256 over the stage name, the generator's fingerprint (its
version plus the source of the modules whose output is cached) and the digests of every input of
that piece of work. Every entry lives in one embedded store, `.cache/store.sqlite3` (SQLite from
the standard library: one file, transactions, no server; a batch of entries is one query, a
build's writes one transaction), as the row (stage, key, bytes), the bytes being

    AICR-CACHE 2\\n{"key": ..., "stage": ..., "fingerprint": ..., "sha256": ..., "mac": ...}\\n<payload>

and read back only if the header names the same key, stage and fingerprint and the payload's
sha256 matches: a truncated, corrupted, renamed or foreign entry (another key, another generator)
is detected, deleted and recomputed, never used. `Cache(enabled=False)` (`--no-cache`) reads
nothing and writes nothing.

Entries that are trusted results rather than reproducible bytes (a verified signature) are also
authenticated: `put(..., authenticated=True)` adds an HMAC-SHA256 of the header (the key, stage,
fingerprint and the payload's sha256: the payload is covered through its digest, and hashed once)
under a key kept *outside* the
cache directory (`$AICR_CATALOG_CACHE_KEY`, else `$XDG_CACHE_HOME/aicr-catalog/cache.key`, else
`~/.cache/aicr-catalog/cache.key`, created 0600 on first use). Whoever can write `.cache/` (a
restored CI cache, a pull request's job) cannot forge a verification result: without this
machine's key the entry is foreign and the file is verified again. Authenticated payloads are
Python pickles, and are unpickled only after the HMAC matched.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import hmac
import json
import logging
import os
import pickle
import secrets
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from json.encoder import encode_basestring_ascii as _json_string  # json.dumps's
from pathlib import Path
from stat import S_ISREG
from typing import Any, TypeVar

from generator import __version__
from generator.core import envvars, safeio
from generator.core.atomic import create_once, make_dirs
from generator.core.blobwrite import insert_parts
from generator.core.errors import Diagnostic, LoadError
from generator.core.outputs import discard

# 2: the MAC covers the header, which names the payload's sha256 (1 hashed the payload a second
# time for it: about 0.4 CPU-s of a cold build at 1,000 x 20,000, its 630 MB of entries at
# 1.35 GB/s). An entry of format 1 is not this format's: rejected, made again.
MAGIC = b"AICR-CACHE 2\n"
DEFAULT_DIR = Path(".cache")
PACKAGE = safeio.resolve(Path(__file__)).parents[1]  # the generator package
T = TypeVar("T")
_ABSENT = object()  # no usable entry (a stored None is a value)
SETTLED_NS = 2_000_000_000  # a file modified this recently is not vouched for by a stat memo


@functools.cache
def fingerprint(*modules: str) -> str:
    """sha256 over the generator version and the source of `modules` (package-relative paths of
    files or directories, e.g. "evidence", "render", "site"); "" means the whole package."""
    return code_fingerprint(PACKAGE, *modules)


def code_fingerprint(package: Path, *modules: str) -> str:
    """`fingerprint` of the package at `package` (a copy of it, in a test)."""
    h = hashlib.sha256(__version__.encode() + b"\0")
    roots = [package / m for m in (modules or ("",))]
    for root in roots:
        paths = [root] if safeio.is_file(root) else safeio.glob_tree(root, "*.py")
        for p in paths:
            data = safeio.read(p, root=package, where="the package", limit=safeio.OTHER_BYTES)
            h.update(p.relative_to(package).as_posix().encode() + b"\0" + data + b"\0")
    return h.hexdigest()


def digest(*parts: str | bytes) -> str:
    """sha256 hex over parts, each length-prefixed (so no two part lists collide)."""
    h = hashlib.sha256()
    for p in parts:
        raw = p.encode() if isinstance(p, str) else p
        h.update(len(raw).to_bytes(8, "big") + raw)
    return h.hexdigest()


_sha256 = hashlib.sha256


def tree_digest(
    root: Path,
    suffixes: tuple[str, ...] = (),
    memo: dict[str, list[Any]] | None = None,
    *,
    shown: str = "",
    where: str = "its directory",
    tree: safeio.Tree | None = None,
) -> str:
    """sha256 over every regular file under `root` (relative path + content digest) and every
    symbolic link's target text, sorted; "" if absent. `tree`: `safeio.walk(root, suffixes=
    suffixes)` when the caller took it already (one walk serves two readers of the tree).

    Files are read through `safeio` (regular files only, inside `root`, size-capped by kind): a
    FIFO, a device, a link leaving the tree or an oversized file is a LoadError naming each
    (`shown` + the path below `root`), the same diagnostics `validate` gives, never a hang.

    With `memo` (relative path -> [size, mtime_ns, inode, ctime_ns, sha256], updated in
    place), a file whose size, mtime, inode and ctime are unchanged is not read again, as
    git's index does. The ctime tells a file rewritten in place with its size kept and its
    mtime put back (`touch -r`): every write and `utime` sets it to the clock, and no call sets
    it to a chosen value. A file modified in the two seconds before it was read is recorded
    without its digest (a second write within the clock's granularity could leave its stat as
    recorded), so the next build reads it again.
    """
    if not safeio.exists(root):
        return ""
    tree = tree if tree is not None else safeio.walk(root, suffixes=suffixes)
    recent = time.time_ns() - SETTLED_NS
    h = hashlib.sha256()
    seen: dict[str, list[Any]] = {}
    problems: list[Diagnostic] = []
    for entry in tree.entries:
        rel = entry.rel
        link = safeio.readlink(entry.path) if entry.kind is not safeio.Kind.FILE else None
        if entry.kind is safeio.Kind.DIR_LINK:
            h.update(f"{rel}\0link\0{link}\n".encode("utf-8", "surrogateescape"))
            continue
        try:
            seen[rel], sha = _file_stamp(tree, entry, memo, recent, where=where)
        except safeio.Refusal as r:
            problems.append(safeio.diagnostic(f"{shown}{rel}", r))
            continue
        h.update(f"{rel}\0{sha}\0{link or ''}\n".encode("utf-8", "surrogateescape"))
    if problems:
        raise LoadError(f"{len(problems)} file(s) of {root} cannot be read", problems)
    if memo is not None:
        memo.clear()
        memo.update(seen)
    return h.hexdigest()


def _tree_files(root: Path, suffixes: tuple[str, ...]) -> list[tuple[str, str]]:
    """(relative path, path) of the files under `root` ending in `suffixes` (any, when empty)
    and of the links to directories (not followed: their target text counts), sorted: the
    reference walk `safeio.walk` replaced in `tree_digest` (kept for the differential test,
    tests/test_fast_walk.py)."""
    files: list[tuple[str, str]] = []
    for dirpath, dirnames, filenames in safeio.walk_dirs(root):
        for name in filenames:
            if not suffixes or name.endswith(suffixes):
                path = os.path.join(dirpath, name)
                files.append((safeio.relpath(path, root).replace(os.sep, "/"), path))
        for name in dirnames:
            path = os.path.join(dirpath, name)
            if safeio.is_link(path, quiet=True):
                files.append((safeio.relpath(path, root).replace(os.sep, "/"), path))
    files.sort()
    return files


def _file_stamp(
    tree: safeio.Tree,
    entry: safeio.Entry,
    memo: dict[str, list[Any]] | None,
    recent: int,
    *,
    where: str,
    keep: Cache | None = None,
) -> tuple[list[Any], str]:
    """(its memo entry, the sha256 of its bytes) of one file: [size, mtime_ns, inode,
    ctime_ns, sha256], the digest taken from `memo` when the stat is the one recorded with a
    digest; an entry for a file modified after `recent` records no digest (""). A file read
    here is kept in `keep` (`Cache.keep_read`) for the next stage that reads it.
    Raises safeio.Refusal."""
    rel, path = entry.rel, entry.path
    limit = safeio.cap_for(rel)
    real, st = safeio.check_entry(tree, entry, where=where, limit=limit)
    stamp = [st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns]
    old = memo.get(rel) if memo is not None else None
    if isinstance(old, list) and len(old) == 5 and old[:4] == stamp and old[4]:
        return old, str(old[4])
    # the stat taken before the read: a write during the read leaves a stat no longer true
    data = safeio.read_checked(real, path, limit=limit)
    sha = hashlib.sha256(data).hexdigest()
    if keep is not None:
        keep.keep_read(real, stamp, data, sha)
    settled = max(st.st_mtime_ns, st.st_ctime_ns) < recent
    return [*stamp, sha if settled else ""], sha


def key_path() -> Path:
    explicit = envvars.get("AICR_CATALOG_CACHE_KEY")
    if explicit:
        return Path(explicit)
    return envvars.cache_home() / "aicr-catalog" / "cache.key"


def machine_key(path: Path | None = None) -> bytes:
    """The HMAC key of authenticated entries, created (0600) on first use."""
    path = path or key_path()
    try:
        data = safeio.read(path, limit=4096)
        if len(data) >= 32:
            return data
    except safeio.Refusal:
        pass
    # another process may create it meanwhile: the first one is kept
    create_once(path, secrets.token_bytes(32), mode=0o600)
    return safeio.read(path, limit=4096)


@dataclass
class CacheStats:
    """What a build's cache did, per stage: hits, misses (computed), rejected (bad entries)."""

    hits: dict[str, int] = field(default_factory=dict)
    misses: dict[str, int] = field(default_factory=dict)
    rejected: dict[str, int] = field(default_factory=dict)

    def count(self, table: dict[str, int], stage: str, n: int = 1) -> None:
        table[stage] = table.get(stage, 0) + n

    def text(self) -> str:
        stages = sorted(set(self.hits) | set(self.misses) | set(self.rejected))
        return ", ".join(
            f"{s} {self.hits.get(s, 0)} reused/{self.misses.get(s, 0)} computed"
            + (f"/{self.rejected[s]} bad entries" if self.rejected.get(s) else "")
            for s in stages
        )


@dataclass(frozen=True, slots=True)
class DerivedKeys:
    """The keys of a stage's entries as `Cache.derive` derived them from their key parts (in
    the parts' order): what `get_or_make_many` reads and writes them under."""

    stage: str
    keys: tuple[str, ...]


STORE = "store.sqlite3"
# what SQLite opens for the store: its rollback journal, and the WAL files of a store made
# before the journal (SQLite opens them to switch such a store to the journal)
STORE_FILES = (STORE, f"{STORE}-journal", f"{STORE}-wal", f"{STORE}-shm")
STORE_RULE = "cache.store-not-regular"


def refuse_planted(root: Path) -> None:
    """Refuse a store whose file, or its -journal, -wal or -shm file, is anything but a
    regular file (a link, a directory, a FIFO): SQLite opens those names itself and follows a link
    (SQLITE_OPEN_NOFOLLOW is not reachable from Python's sqlite3), so a link planted at the
    store's name would have the cache write into whatever it points at. A Refusal (exit 1,
    the file named), never a silent fallback to no cache."""
    import stat

    for name in STORE_FILES:
        path = root / name
        try:
            st = safeio.lstat(path)
        except FileNotFoundError:
            continue
        if not stat.S_ISREG(st.st_mode):
            raise safeio.Refusal(
                STORE_RULE,
                "the build cache's store is not a regular file (a link or something planted "
                "there); remove it, or build with --no-cache",
                path,
            )


# The stored bytes of a batch held before they are written (one transaction each): a cold
# build's batch of pages is 400 MB at 1,000 recipes x 20,000 runs, held whole on top of the
# pages themselves. Measured there: the pages stage's high-water mark 2,129 -> 1,775 MB (the
# build's peak, 2,139 MB, is now publishing's, as before the pages held it).
WRITE_BYTES = 64 * 2**20
# A stored value this large is written alone through `blobwrite` (the engine's output, 45 MB
# at 1,000 x 20,000, whose storing was the cold build's peak there: 1,923 -> 1,790 MB RSS).
LARGE_BYTES = 8 * 2**20
# The bytes of a held walk's files kept from the build key's read for the verify stage's
# (`Cache.keep_read`): the evidence tree of 1,000 x 20,000 is 278 MB.
READS_HELD = 512 * 2**20
_BATCH = 500  # keys per query (below SQLite's bound on a statement's parameters)
_HEAD_BYTES = 1024  # an entry's header lies within its first bytes (`Cache.heads`)
_COMPACT_BYTES = 10 * 2**20  # free pages worth a rewrite
# The page size of a new store (SQLite's default is 4 KiB). Entries are large (a page's Markdown
# and data blocks, tens of KB; the engine's output, MBs): at 4 KiB each is a chain of overflow
# pages. Replaying a cold build's store (200 recipes x 4,000 runs: 140 MB in 8,800 entries,
# each stage's batch in one transaction, then read back by key): 4 KiB pages, keys in the
# batch's order, 1.78 CPU-s and 557,000 reads; 64 KiB pages and each batch sorted (`_write`),
# 0.64 CPU-s and 18,000 reads. A store made before keeps its page size (SQLite fixes it when
# the file is created).
PAGE_SIZE = 65536
# The store's journal: SQLite's rollback journal, which writes a new entry once, into the store
# (the journal holds only the pages a transaction changes, as they were: the few an entry
# replaced or deleted). In WAL mode (issue 29 until its fifteenth round) every entry was written
# twice, into the WAL and then, at each checkpoint, into the store. Measured replaying the 27,000
# entries (830 MB, 28 transactions of up to 64 MB) of a cold build's store at 1,000 x 20,000
# into a new store, three rounds interleaved, user + system CPU-s: WAL (synchronous NORMAL)
# 2.19, 2.08, 1.39; rollback journal (synchronous FULL) 0.60, 0.60, 0.80. A reader waits while
# a transaction commits (in WAL mode it never waited): the connection's timeout (120 s) covers
# that, and a build's transactions are of at most `WRITE_BYTES`.
JOURNAL = "DELETE"


class Cache:
    """One cache directory, its entries in one SQLite file. Not a record: it counts what it did
    in `stats`, and remembers the entries it served so that `finish` can sweep the others.

    Stages use one interface, `get_or_make` (or `get_or_make_many` for a batch made at once):
    the stage names its key parts (its code's fingerprint and the digests of every input), the
    cache returns the value stored under them or makes, stores and returns it. Values are
    authenticated pickles. `get`/`put` are the raw bytes underneath, for records that are not
    a function of their key (the stat memo, the record of the last build); `raw`/`write_raw`
    and `keys` are an entry's stored bytes, for inspection (and for tests that corrupt one).
    """

    def __init__(
        self,
        root: Path = DEFAULT_DIR,
        *,
        enabled: bool = True,
        secret: bytes | None = None,
        scope: str = "",
    ) -> None:
        self.root = Path(root)
        self.enabled = enabled
        self._secret = secret
        # the output this cache's build writes: a sweep keeps what other outputs' last builds
        # used (`kept`); "" is one scope like any other
        self.scope = scope
        self.stats = CacheStats()
        self._served: dict[str, set[str]] = {}  # stage -> keys served, for stages swept
        self._db: sqlite3.Connection | None = None
        self._pid = 0
        # walks of input trees handed from one stage of this build to the next (`hold_walk`)
        self._walks: dict[tuple[str, tuple[str, ...]], safeio.Tree] = {}
        # values made of one walk (`of_walk`: its directories and stat rows, its pointer files),
        # the walk held with them
        self._of_walks: dict[tuple[int, str], tuple[safeio.Tree, Any]] = {}
        # files of a held walk read for its digest, kept for the next stage that reads them
        # (`keep_read`, `take_read`): real path -> (their stat stamp, bytes, sha256)
        self._reads: dict[str, tuple[list[int], bytes, str]] = {}
        self._read_bytes = 0

    # --- the store
    def _store_db(self) -> sqlite3.Connection:
        """The store, opened on first use (and again in a forked process: a connection is
        never shared across a fork). The first open in a process removes the per-stage
        directories of the cache layout before the store (`remove_legacy_dirs`)."""
        if self._db is None or self._pid != os.getpid():
            if self._db is None and self._pid == 0:
                remove_legacy_dirs(self.root)
            make_dirs(self.root)
            refuse_planted(self.root)
            db = sqlite3.connect(self.root / STORE, timeout=120, isolation_level=None)
            db.execute(f"PRAGMA page_size={PAGE_SIZE}")  # a no-op unless the file is new
            db.execute(f"PRAGMA journal_mode={JOURNAL}")  # synchronous: SQLite's FULL
            _create_table(db)
            self._db, self._pid = db, os.getpid()
        return self._db

    def close(self) -> None:
        if self._db is not None and self._pid == os.getpid():
            self._db.close()
        self._db = None

    def raw(self, stage: str, key: str) -> bytes | None:
        """An entry's stored bytes (header and payload), unchecked; None when absent."""
        row = (
            self._store_db()
            .execute("SELECT data FROM entries WHERE stage = ? AND key = ?", (stage, key))
            .fetchone()
        )
        return None if row is None else bytes(row[0])

    def write_raw(self, stage: str, key: str, data: bytes) -> None:
        """Store `data` as the entry's bytes (one transaction: a reader never sees half)."""
        self._write(stage, [(key, data)])

    def keys(self, stage: str) -> list[str]:
        """The keys of the stage's entries, sorted."""
        rows = self._store_db().execute(
            "SELECT key FROM entries WHERE stage = ? ORDER BY key", (stage,)
        )
        return [k for (k,) in rows]

    def _write(self, stage: str, items: Sequence[tuple[str, bytes]]) -> None:
        """Store a batch of entries in one transaction, in key order: rows inserted in the
        table's order fill its pages one after the other, where the keys' own (random) order
        modified pages all over the table and SQLite wrote each many times over (a replay of a
        cold build's store at 200 recipes x 4,000 runs: 557,000 reads of 4 KiB, 2.3 GB, in
        random order; 148,000, 0.6 GB, sorted)."""
        db = self._store_db()
        with _transaction(db):
            db.executemany(
                "INSERT OR REPLACE INTO entries (stage, key, data) VALUES (?, ?, ?)",
                [(stage, k, sqlite3.Binary(d)) for k, d in sorted(items, key=_first)],
            )

    def _write_parts(self, stage: str, key: str, parts: Sequence[bytes]) -> None:
        """One entry stored from its parts, never joined (`blobwrite.insert_parts`)."""
        db = self._store_db()
        with _transaction(db):
            insert_parts(db, "entries", {"stage": stage, "key": key}, "data", parts)

    def _delete(self, stage: str, key: str) -> None:
        db = self._store_db()
        with _transaction(db):
            db.execute("DELETE FROM entries WHERE stage = ? AND key = ?", (stage, key))

    def _read_many(self, stage: str, keys: Sequence[str]) -> dict[str, bytes]:
        return {k: bytes(d) for k, d in self._rows_of(stage, keys, "key, data")}

    def _rows_of(self, stage: str, keys: Sequence[str], columns: str) -> Iterator[Any]:
        """The rows (`columns`, SQL) of the stage's entries under `keys`, one query per batch
        of `_BATCH` keys, in key order."""
        db = self._store_db()
        unique = sorted(set(keys))
        for i in range(0, len(unique), _BATCH):
            chunk = unique[i : i + _BATCH]
            marks = ",".join("?" * len(chunk))
            yield from db.execute(
                f"SELECT {columns} FROM entries WHERE stage = ? AND key IN ({marks})",
                (stage, *chunk),
            ).fetchall()

    # --- one walk of an input tree per build
    def hold_walk(self, tree: safeio.Tree, suffixes: tuple[str, ...]) -> None:
        """Keep `tree` (`safeio.walk(tree.root, suffixes=suffixes)`, just taken) for the next
        stage of this build that walks the same tree (`take_walk`): the build key walks the
        evidence tree, and the verify stage reads the same walk instead of walking it again,
        so both see one state of the tree. Held in memory only, never stored."""
        self._walks[(safeio.abspath(tree.root), suffixes)] = tree

    def take_walk(self, root: Path | str, suffixes: tuple[str, ...]) -> safeio.Tree | None:
        """The walk of `root` with `suffixes` that `hold_walk` kept, handed out once (a later
        caller walks again), else None."""
        return self._walks.pop((safeio.abspath(root), suffixes), None)

    def holds(self, tree: safeio.Tree) -> bool:
        """Whether `tree` is a walk `hold_walk` keeps for a later stage of this build."""
        return any(held is tree for held in self._walks.values())

    def keep_read(self, real: str, stamp: list[int], data: bytes, sha: str) -> None:
        """Keep the bytes of a file of a held walk, read (and hashed) for its digest, for the
        stage after that reads it (`take_read`): a cold build reads each evidence file once,
        not once for the build key and again to verify it. At most `READS_HELD` bytes are
        kept; a file beyond them is read again by whoever needs it."""
        before = self._reads.pop(real, None)  # a path kept again (two links to one file)
        if before is not None:
            self._read_bytes -= len(before[1])
        if self._read_bytes + len(data) <= READS_HELD:
            self._reads[real] = (stamp, data, sha)
            self._read_bytes += len(data)

    def drop_reads(self) -> None:
        """Let go of the bytes `keep_read` kept and no stage took."""
        self._reads.clear()
        self._read_bytes = 0

    def take_read(self, real: str, stamp: list[int]) -> tuple[bytes, str] | None:
        """The bytes and sha256 `keep_read` kept of the file at `real`, handed out once, when
        the file's stat stamp [size, mtime_ns, inode, ctime_ns] is still the one they were read
        under (else None: the caller reads the file)."""
        kept = self._reads.pop(real, None)
        if kept is None:
            return None
        self._read_bytes -= len(kept[1])
        return (kept[1], kept[2]) if kept[0] == stamp else None

    def dir_groups(self, tree: safeio.Tree, settled: int) -> tuple[DirGroup, ...]:
        """`dir_groups(tree, settled)`, computed once per walk in this build: the build key
        and the verify stage read one walk's stat rows (the first caller's `settled`)."""
        return self.of_walk(tree, "dir_groups", lambda: dir_groups(tree, settled))

    def of_walk(self, tree: safeio.Tree, what: str, make: Callable[[], T]) -> T:
        """`make()`, a function of the walk `tree` alone named `what`, made once per walk in
        this build (held in memory with the walk until `finish`, never stored)."""
        held = self._of_walks.get((id(tree), what))
        if held is not None and held[0] is tree:
            return held[1]  # type: ignore[no-any-return]
        value = make()
        self._of_walks[(id(tree), what)] = (tree, value)
        return value

    # --- keys
    def key(self, stage: str, fingerprint_: str, *inputs: str | bytes) -> str:
        return digest("stage", stage, fingerprint_, *inputs)

    def _mac(self, header: bytes) -> str:
        """HMAC-SHA256 of `header` (an entry's header without its MAC: it names the payload's
        sha256, so the MAC covers the payload through it) under this machine's key: one call
        of `hmac.digest` (OpenSSL's one-shot HMAC), the value of `_mac_reference`."""
        if self._secret is None:
            self._secret = machine_key()
        return hmac.digest(self._secret, header, "sha256").hex()

    def _mac_reference(self, header: bytes) -> str:
        if self._secret is None:
            self._secret = machine_key()
        return hmac.new(self._secret, header, hashlib.sha256).hexdigest()

    # --- bytes
    def get(
        self, stage: str, key: str, fingerprint_: str, *, authenticated: bool = False
    ) -> bytes | None:
        """The payload stored under `key`, or None (absent, disabled, or a bad entry)."""
        if not self.enabled:
            return None
        return self._get_many(stage, [key], fingerprint_, authenticated)[key]

    def _get_many(
        self, stage: str, keys: Sequence[str], fingerprint_: str, authenticated: bool
    ) -> dict[str, bytes | None]:
        """The payload of each key (None: absent or bad; a bad entry is deleted), one query
        per batch of keys."""
        stored = self._read_many(stage, keys)
        out: dict[str, bytes | None] = {}
        for key in keys:
            raw = stored.get(key)
            if raw is None:
                self.stats.count(self.stats.misses, stage)
                out[key] = None
                continue
            payload = self._check(raw, stage, key, fingerprint_, authenticated)
            if payload is None:
                self.stats.count(self.stats.rejected, stage)
                self.stats.count(self.stats.misses, stage)
                self._delete(stage, key)
            else:
                self.stats.count(self.stats.hits, stage)
            out[key] = payload
        return out

    def _check(
        self, raw: bytes, stage: str, key: str, fingerprint_: str, authenticated: bool
    ) -> bytes | None:
        """The payload of an entry whose header is, byte for byte, the one `_entry` writes for
        this key, stage, fingerprint and payload (and, `authenticated`, this machine's MAC of
        them); else None.

        The header is compared as bytes, not parsed: the entry's payload is hashed once and
        the expected header assembled (`_header_bytes`, json.dumps's own bytes), where the
        reference (`_check_reference`) parsed the header's JSON, hashed the payload twice (its
        digest and the MAC's header) and made the MAC through `hmac.new`. It accepts exactly
        what the reference accepts from entries `_entry` wrote, intact or damaged
        (tests/test_cache.py); it refuses what `_entry` never writes (a header in another
        layout) and an entry read the other way than written (the reference took an
        authenticated entry read without authentication; no stage does either). Measured on
        the 4,000 verify entries of a 200 x 4,000 store: 29-38 -> 13-14 µs an entry; its 4,400
        pages (17 KB each): 56-73 -> 33-39 µs (min of 15, process CPU, load 9). At 1,000 x
        20,000 (min of 3, load 6): the 20,000 verify entries 0.56 -> 0.29 s, the 1,000 views
        0.12 -> 0.08 s, the 1,000 aggregate parts 0.058 -> 0.036 s, the 22,000 pages 1.19 ->
        0.76 s; a rebuild after one evidence file changed checks about 24,000 of them."""
        if not raw.startswith(MAGIC):
            return None
        end = raw.find(b"\n", len(MAGIC))
        if end < 0:
            return None
        payload = raw[end + 1 :]
        sha = _sha256(payload).hexdigest()
        bare = _header_bytes(key, stage, fingerprint_, sha)
        expected = (
            _header_bytes(key, stage, fingerprint_, sha, self._mac(bare)) if authenticated else bare
        )
        if not hmac.compare_digest(raw[len(MAGIC) : end], expected):
            return None
        return payload

    def _check_reference(
        self, raw: bytes, stage: str, key: str, fingerprint_: str, authenticated: bool
    ) -> bytes | None:
        """`_check` as the header's JSON says it (the reference)."""
        if not raw.startswith(MAGIC):
            return None
        end = raw.find(b"\n", len(MAGIC))
        if end < 0:
            return None
        try:
            header = json.loads(raw[len(MAGIC) : end])
        except ValueError:
            return None
        payload = raw[end + 1 :]
        if not isinstance(header, dict) or (
            header.get("key"),
            header.get("stage"),
            header.get("fingerprint"),
            header.get("sha256"),
        ) != (key, stage, fingerprint_, hashlib.sha256(payload).hexdigest()):
            return None
        if authenticated:
            bare = _header_reference(key, stage, fingerprint_, payload)
            mac = header.get("mac")
            if not isinstance(mac, str) or not hmac.compare_digest(mac, self._mac_reference(bare)):
                return None
        return payload

    def _entry(self, stage: str, key: str, fingerprint_: str, payload: bytes, auth: bool) -> bytes:
        return self._entry_head(stage, key, fingerprint_, payload, auth) + payload

    def _entry_head(
        self, stage: str, key: str, fingerprint_: str, payload: bytes, auth: bool
    ) -> bytes:
        """An entry's bytes before its payload (`_entry` without the payload, which a large
        entry's write streams in after it: `blobwrite`)."""
        sha = _sha256(payload).hexdigest()
        header = bare = _header_bytes(key, stage, fingerprint_, sha)
        if auth:
            header = _header_bytes(key, stage, fingerprint_, sha, self._mac(bare))
        return MAGIC + header + b"\n"

    def _entry_reference(
        self, stage: str, key: str, fingerprint_: str, payload: bytes, auth: bool
    ) -> bytes:
        """`_entry` through json.dumps (the reference)."""
        bare = _header_reference(key, stage, fingerprint_, payload)
        header = json.loads(bare)
        if auth:
            header["mac"] = self._mac_reference(bare)
        return MAGIC + json.dumps(header, sort_keys=True).encode() + b"\n" + payload

    def put(
        self,
        stage: str,
        key: str,
        fingerprint_: str,
        payload: bytes,
        *,
        authenticated: bool = False,
    ) -> None:
        """Store `payload` (one transaction: a reader never sees half an entry)."""
        if not self.enabled:
            return
        self._write(stage, [(key, self._entry(stage, key, fingerprint_, payload, authenticated))])

    # --- objects (authenticated pickles)
    def get_object(self, stage: str, key: str, fingerprint_: str) -> Any | None:
        payload = self.get(stage, key, fingerprint_, authenticated=True)
        return None if payload is None else pickle.loads(payload)  # HMAC checked first

    def put_object(self, stage: str, key: str, fingerprint_: str, value: Any) -> None:
        if self.enabled:
            data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
            self.put(stage, key, fingerprint_, data, authenticated=True)

    # --- the memo interface
    def get_or_make(
        self,
        stage: str,
        key_parts: Sequence[str | bytes],
        make: Callable[[], T],
        *,
        sweep: bool = False,
    ) -> T:
        """The value stored under (`stage`, `key_parts`), else `make()`, stored.

        `key_parts` must name everything the value depends on, the code that makes it
        included (a `fingerprint`). With `sweep`, the stage's entries this cache did not serve
        are deleted by `finish` (for stages whose every current entry a build reads, so the
        cache does not grow with each changed input)."""
        return self.get_or_make_many(stage, [key_parts], lambda _: [make()], sweep=sweep)[0]

    def get_or_make_many(
        self,
        stage: str,
        key_parts: Sequence[Sequence[str | bytes]],
        make: Callable[[list[int]], Sequence[T]],
        *,
        sweep: bool = False,
    ) -> list[T]:
        """`get_or_make` for a batch: the values stored under each of `key_parts` (read in a
        few queries), the missing ones made by one call `make(indices)` (so they can be made in
        parallel) and stored in transactions of about `WRITE_BYTES` each, in order."""
        if not self.enabled:
            return list(make(list(range(len(key_parts)))))
        keys = [self.key(stage, "", *parts) for parts in key_parts]
        if sweep:
            self._served.setdefault(stage, set()).update(keys)
        payloads = self._get_many(stage, keys, "", True)
        found: list[Any] = [
            _ABSENT if (p := payloads[k]) is None else pickle.loads(p)  # HMAC checked first
            for k in keys
        ]
        todo = [i for i, value in enumerate(found) if value is _ABSENT]
        if todo:
            made = list(make(todo))
            items: list[tuple[str, bytes]] = []
            held = 0
            for i, value in zip(todo, made, strict=True):
                found[i] = value
                data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
                if len(data) >= LARGE_BYTES:  # alone, never joined or copied (blobwrite)
                    head = self._entry_head(stage, keys[i], "", data, True)
                    self._write_parts(stage, keys[i], (head, data))
                    continue
                items.append((keys[i], self._entry(stage, keys[i], "", data, True)))
                held += len(items[-1][1])
                if held >= WRITE_BYTES:  # written as they come: not all held at once
                    self._write(stage, items)
                    items, held = [], 0
            if items:
                self._write(stage, items)
        return found

    def held_values(self, stage: str, key_parts: Sequence[Sequence[str | bytes]]) -> dict[int, Any]:
        """The values `get_or_make_many` stored under some of `key_parts`, by their position,
        read as it reads them (authenticated first); none made, none counted as served."""
        if not self.enabled or not key_parts:
            return {}
        keys = [self.key(stage, "", *parts) for parts in key_parts]
        payloads = self._get_many(stage, keys, "", True)
        return {
            i: pickle.loads(p)  # HMAC checked first
            for i, k in enumerate(keys)
            if (p := payloads[k]) is not None
        }

    def get_many(
        self, stage: str, keys: Sequence[str], fingerprint_: str, *, authenticated: bool = False
    ) -> dict[str, bytes | None]:
        """`get` of each of `keys`, in one query per batch of keys."""
        if not self.enabled:
            return dict.fromkeys(keys)
        return self._get_many(stage, keys, fingerprint_, authenticated)

    def put_many(
        self,
        stage: str,
        fingerprint_: str,
        items: Sequence[tuple[str, bytes]],
        *,
        authenticated: bool = False,
    ) -> None:
        """`put` of each (key, payload) of `items`, in one transaction."""
        if self.enabled and items:
            self._write(
                stage,
                [(k, self._entry(stage, k, fingerprint_, p, authenticated)) for k, p in items],
            )

    def stored(
        self, stage: str, key_parts: Sequence[Sequence[str | bytes]], *, sweep: bool = False
    ) -> list[tuple[str, bool]]:
        """The key `get_or_make_many` gives each of `key_parts`, and whether the store holds an
        entry under it, without reading the entries (a bad one is found, and made again, when
        `get_or_make_many` reads it). With `sweep`, every one of these keys counts as served:
        the caller reads or makes it when it needs the value."""
        keys = [self.key(stage, "", *parts) for parts in key_parts]
        if not self.enabled:
            return [(k, False) for k in keys]
        if sweep:
            self._served.setdefault(stage, set()).update(keys)
        held = self.held(stage, keys)
        return [(k, k in held) for k in keys]

    def held(self, stage: str, keys: Sequence[str]) -> set[str]:
        """Which of `keys` (keys as given, not derived from parts) the store holds an entry of
        `stage` under, from the store's index alone (no entry read or checked: a bad one is
        found when it is read)."""
        if not self.enabled or not keys:
            return set()
        return {k for (k,) in self._rows_of(stage, keys, "key")}

    def heads(
        self, stage: str, keys: Sequence[str], fingerprint_: str
    ) -> dict[str, tuple[str, int]]:
        """The payload's sha256 and size of each authenticated entry under `keys` (as given)
        the store holds, read from its header alone: the header is this machine's for its key,
        stage and fingerprint (its MAC checked), the payload is not read. Reading it (`get`,
        authenticated) checks it against that sha256; an entry whose header is not this
        machine's is left out, as if absent (it is replaced when its value is stored again)."""
        if not self.enabled or not keys:
            return {}
        out: dict[str, tuple[str, int]] = {}
        columns = f"key, substr(data, 1, {_HEAD_BYTES}), length(data)"
        for key, head, length in self._rows_of(stage, keys, columns):
            known = self._head(bytes(head), stage, key, fingerprint_)
            if known is not None:
                out[key] = (known[0], length - known[1])
        return out

    def _head(self, head: bytes, stage: str, key: str, fingerprint_: str) -> tuple[str, int] | None:
        """(payload sha256, offset of the payload) of an authenticated entry starting with
        `head`, when its header is the one `_entry` writes for this key, stage and fingerprint
        under this machine's MAC; else None."""
        end = head.find(b"\n", len(MAGIC))
        if not head.startswith(MAGIC) or end < 0:
            return None
        try:
            sha = json.loads(head[len(MAGIC) : end]).get("sha256")
        except (ValueError, AttributeError):
            return None
        if not isinstance(sha, str):
            return None
        bare = _header_bytes(key, stage, fingerprint_, sha)
        expected = _header_bytes(key, stage, fingerprint_, sha, self._mac(bare))
        if not hmac.compare_digest(head[len(MAGIC) : end], expected):
            return None
        return sha, end + 1

    def derive(self, stage: str, key_parts: Sequence[Sequence[str | bytes]]) -> DerivedKeys:
        """The key `get_or_make_many` gives each of `key_parts`, derived once: for a caller that
        hands the keys on and `serve`s them too (the verify stage: each file's verification key
        is its entry's key)."""
        return DerivedKeys(stage, tuple(self.key(stage, "", *parts) for parts in key_parts))

    def serve(self, derived: DerivedKeys) -> None:
        """Count the entries under `derived` as served for its stage's sweep, unread: a build
        that took their values through a coarser entry still needs them (the verify stage's
        entry per file behind its entry per directory). The keys come derived (`derive`), as
        the caller had them: before, `serve` derived each key again from its parts (20,000 at
        1,000 x 20,000: 0.08 CPU-s)."""
        if self.enabled:
            self._served.setdefault(derived.stage, set()).update(derived.keys)

    def finish(self) -> None:
        """Sweep every stage served with `sweep=True` down to the entries served (call once
        the work that used this cache has succeeded)."""
        for stage, keys in sorted(self._served.items()):
            self.sweep(stage, self.kept(stage, keys))
        self._served.clear()
        self._walks.clear()  # a walk is one build's
        self._of_walks.clear()
        self.drop_reads()
        self.compact()

    def kept(self, stage: str, used: Iterable[str]) -> set[str]:
        """What a sweep of `stage` must keep: `used` (this scope's build), recorded as this
        scope's, and what the last build of every other scope used. Two outputs built beside
        each other share the one cache beside them; without this, each build swept the other's
        entries and every build of either was a cold one. A scope (an output directory, as
        `scope_of` names it) that no longer exists keeps nothing and is forgotten."""
        mine = set(used)
        if not self.enabled:
            return mine
        db = self._store_db()
        blob = "\n".join(sorted(mine)).encode()
        keep = set(mine)
        with _transaction(db):
            db.execute(
                "INSERT OR REPLACE INTO served (scope, stage, keys) VALUES (?, ?, ?)",
                (self.scope, stage, sqlite3.Binary(blob)),
            )
            rows = db.execute(
                "SELECT scope, keys FROM served WHERE stage = ? AND scope != ?",
                (stage, self.scope),
            ).fetchall()
            for scope, keys in rows:
                # the output is gone: so are its needs
                if scope and not safeio.is_dir(scope, quiet=True):
                    db.execute("DELETE FROM served WHERE scope = ?", (scope,))
                    continue
                keep.update(k for k in bytes(keys).decode().split("\n") if k)
        return keep

    def compact(self) -> bool:
        """Rewrite the store (SQLite's VACUUM) when a third or more of its pages are free, as
        after a build that replaced most entries (a generator change, a catalog change): the
        entries written next land in the freed pages, scattered over the file, and reading
        them back became two orders of magnitude slower (measured: 200 entries of 20 KB read
        in 3.0 s from such a store, 0.03 s once rewritten; `docs/performance.md`). A build
        that changed one run frees a few pages and does not pay for it. Returns whether it
        rewrote the store."""
        if not self.enabled or self._db is None:
            return False
        db = self._store_db()
        free = int(db.execute("PRAGMA freelist_count").fetchone()[0])
        total = int(db.execute("PRAGMA page_count").fetchone()[0])
        size = int(db.execute("PRAGMA page_size").fetchone()[0])
        if free * size < _COMPACT_BYTES or free * 3 < total:
            return False
        db.execute("VACUUM")
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the rewritten pages into the file
        return True

    def sweep(self, stage: str, keep: Iterable[str]) -> int:
        """Delete the entries of `stage` not in `keep` (the keys the build just used); returns
        how many. For stages whose every entry a build reads or rewrites (pages, the page
        engine's output), so the cache does not grow with each changed catalog."""
        if not self.enabled:
            return 0
        wanted = set(keep)
        gone = [k for k in self.keys(stage) if k not in wanted]
        db = self._store_db()
        with _transaction(db):
            db.executemany(
                "DELETE FROM entries WHERE stage = ? AND key = ?", [(stage, k) for k in gone]
            )
        return len(gone)


LEGACY_KEPT = frozenset({"timeline"})  # a directory of `.cache/` still in use
# the render cache's directory before its archives moved into the store (issue 29, fifteenth
# round): `<64 hex>-<name>.tar.gz` archives and their `.digest` (earlier `.hmac`, `.sha256`)
OLD_ARCHIVES = "bundles"
_OLD_ARCHIVE_ENDS = (".tar.gz", ".tar.gz.digest", ".tar.gz.hmac", ".tar.gz.sha256")
_HEX = frozenset("0123456789abcdef")
PROGRESS = logging.getLogger("aicr_catalog.build")


def _legacy_layout(directory: Path) -> bool:
    """`directory` holds nothing but the per-stage layout before the store:
    `<2 hex>/<64 hex>` entry files (pickles and JSON under an `AICR-CACHE` header)."""
    directory_kind, file_kind = safeio.Kind.DIR, safeio.Kind.FILE
    for name, path, kind in safeio.scan(directory):
        if not (kind is directory_kind and len(name) == 2 and _hexes(name)):
            return False
        if not all(
            entry_kind is file_kind and len(entry) == 64 and _hexes(entry)
            for entry, _, entry_kind in safeio.scan(path)
        ):
            return False
    return True


def _old_archives(directory: Path) -> bool:
    """`directory` holds nothing but the render cache's files before the store: archives
    named by their render key (`<64 hex>-<name>.tar.gz`) and their seals."""
    file_kind = safeio.Kind.FILE
    return all(
        kind is file_kind
        and name[64:65] == "-"
        and _hexes(name[:64])
        and name.endswith(_OLD_ARCHIVE_ENDS)
        for name, _, kind in safeio.scan(directory)
    )


def _hexes(name: str) -> bool:
    return set(name) <= _HEX


def remove_legacy_dirs(root: Path) -> tuple[str, ...]:
    """Remove the per-stage entry directories (`.cache/<stage>/<2 hex>/<64 hex>`) that builds
    made before every entry moved into `store.sqlite3`: nothing reads them any more, and they
    held tens of thousands of pickles. Only a directory in exactly that layout is removed
    (`timeline/` is in use and never touched), and the render cache's directory of archives
    (`bundles/`) when it holds nothing but them (`_old_archives`); one line says so. Returns
    the names removed."""
    if not safeio.is_dir(root):
        return ()
    dirs = [e.name for e in safeio.listdir(root) if e.kind is safeio.Kind.DIR]
    gone = []
    for name in dirs:
        old = _old_archives if name == OLD_ARCHIVES else _legacy_layout
        if name not in LEGACY_KEPT and old(root / name):
            discard(root / name)
            gone.append(name)
    if gone:
        PROGRESS.info(
            "removed the cache's old per-stage directories (now in %s): %s", STORE, ", ".join(gone)
        )
    return tuple(gone)


# The entries: a table of rows by rowid, found by a separate index of (stage, key). The store
# before kept them in a WITHOUT ROWID table keyed by (stage, key), where every row is a key of
# the table's own b-tree: its inner pages carry whole rows, blobs and their overflow pages
# included, and SQLite reads a row's whole payload to compare keys with it. Each lookup and
# each insert read every blob on its way down (the engine's output alone is tens of MB): the
# cold build at 1,000 recipes x 20,000 runs read 13.5 GB from the store while storing its
# 1,000 aggregate parts (tests/test_cache.py: 60 lookups in a store of 18 MB read 143 MB). Here
# the index holds (stage, key, rowid) only, and a blob is read when its row is asked for.
_TABLE = (
    "CREATE TABLE IF NOT EXISTS entries (id INTEGER PRIMARY KEY, stage TEXT NOT NULL, "
    "key TEXT NOT NULL, data BLOB NOT NULL)"
)
_INDEX = "CREATE UNIQUE INDEX IF NOT EXISTS entries_by_key ON entries (stage, key)"
# what each scope's last build used of each swept stage (`Cache.kept`): its keys, one per line
_SERVED = (
    "CREATE TABLE IF NOT EXISTS served (scope TEXT NOT NULL, stage TEXT NOT NULL, "
    "keys BLOB NOT NULL, PRIMARY KEY (scope, stage))"
)


def scope_of(out: Path) -> str:
    """The scope a build into `out` sweeps in (`Cache.kept`): its absolute, resolved path."""
    return str(safeio.resolve(Path(safeio.abspath(out))))


def _create_table(db: sqlite3.Connection) -> None:
    """The entries' table and index; a table in the layout before (WITHOUT ROWID) is dropped
    first: its entries are made again (it is a cache), and `finish` rewrites the freed file."""
    with _transaction(db):
        row = db.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'entries'"
        ).fetchone()
        if row is not None and "WITHOUT ROWID" in str(row[0]).upper():
            db.execute("DROP TABLE entries")
        db.execute(_TABLE)
        db.execute(_INDEX)
        db.execute(_SERVED)


def _first(item: tuple[str, bytes]) -> str:
    return item[0]


@contextlib.contextmanager
def _transaction(db: sqlite3.Connection) -> Iterator[None]:
    """One write transaction: all of it, or (on any error) none of it. SQLite's failure to
    write the store (the disk full, a file size limit, an I/O error) comes out as the OSError
    it is (`_write_failure`), which every command reports in one line, the store named."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
        db.execute("COMMIT")
    except BaseException as e:
        if db.in_transaction:  # (SQLite rolled back itself after some failures)
            db.execute("ROLLBACK")
        failed = _write_failure(db, e)
        if failed is not None:
            raise failed from e
        raise


_SQLITE_IOERR, _SQLITE_FULL = 10, 13  # SQLite's primary result codes


def _write_failure(db: sqlite3.Connection, e: BaseException) -> OSError | None:
    """The OSError a failed write of the store is (SQLITE_FULL: ENOSPC; SQLITE_IOERR and its
    extended codes: EIO), naming the store's file; None for any other error."""
    if not isinstance(e, sqlite3.OperationalError):
        return None
    code = getattr(e, "sqlite_errorcode", 0) & 0xFF
    if code not in (_SQLITE_IOERR, _SQLITE_FULL):
        return None
    files = [row[2] for row in db.execute("PRAGMA database_list") if row[1] == "main"]
    number = errno.ENOSPC if code == _SQLITE_FULL else errno.EIO
    return OSError(number, f"the build cache's store was not written ({e})", *files[:1])


def _header_bytes(
    key: str, stage: str, fingerprint_: str, sha: str, mac: str | None = None
) -> bytes:
    """An entry's header (without `mac`: what the MAC covers, with the payload), its payload's
    sha256 being `sha`: the bytes `json.dumps` gives the header's dict with sorted keys
    (`_header_reference`; tests/test_cache.py holds the two to one answer), assembled from
    json's own string encoder instead of encoding a dict."""
    q = _json_string
    mid = f', "mac": {q(mac)}' if mac is not None else ""
    return (
        f'{{"fingerprint": {q(fingerprint_)}, "key": {q(key)}{mid}, '
        f'"sha256": {q(sha)}, "stage": {q(stage)}}}'
    ).encode()


def _header_reference(
    key: str, stage: str, fingerprint_: str, payload: bytes, mac: str | None = None
) -> bytes:
    doc = {
        "fingerprint": fingerprint_,
        "key": key,
        "sha256": hashlib.sha256(payload).hexdigest(),
        "stage": stage,
    }
    if mac is not None:
        doc["mac"] = mac
    return json.dumps(doc, sort_keys=True).encode()


MEMO_STAGE = "stat"  # the stat memo of one tree, one JSON entry (`stat_tree_digest_reference`)
DIGEST_STAGE = "stat-dirs"  # the content digests of one directory's files, keyed by its stat rows
# what a directory's digests are a function of besides its key's parts: the checks and the read
_DIGEST_CODE = ("core/cache.py", "core/safeio.py")


@dataclass(frozen=True, slots=True)
class DirGroup:
    """The entries of one directory of a walked tree (`name`: the first part of their paths;
    a file or link directly under the root is its own) in the walk's order, and the digest of
    their stat rows (path, mode, device, inode, size, mtime, ctime): "" when the rows cannot
    vouch for the directory (a link, anything but a regular file, an unreadable entry, or a
    file modified less than `SETTLED_NS` before the build), which is then read file by file."""

    name: str
    entries: tuple[safeio.Entry, ...]
    rows: str


def dir_groups(tree: safeio.Tree, settled: int) -> tuple[DirGroup, ...]:
    """The entries of `tree` by directory (`DirGroup`), sorted by name; `settled`: a file
    modified at or after it (mtime or ctime, ns) makes its directory's rows "". One walk's
    groups serve the build key (`stat_tree_digest`) and the verify stage (`Cache.dir_groups`)."""
    by_name: dict[str, list[safeio.Entry]] = {}
    for e in tree.entries:
        by_name.setdefault(e.rel.split("/", 1)[0], []).append(e)
    return tuple(dir_group(name, by_name[name], settled) for name in sorted(by_name))


def dir_group(name: str, entries: Sequence[safeio.Entry], settled: int) -> DirGroup:
    """The `DirGroup` of `entries` (one directory's, in the walk's order)."""
    rows: list[str] = []
    regular = safeio.Kind.FILE
    for e in entries:
        st = e.stat
        if (
            e.kind is not regular
            or st is None
            or not S_ISREG(st.st_mode)
            or st.st_mtime_ns >= settled
            or st.st_ctime_ns >= settled
        ):
            return DirGroup(name, tuple(entries), "")
        rows.append(
            f"{e.rel}\0{st.st_mode}\0{st.st_dev}\0{st.st_ino}\0{st.st_size}"
            f"\0{st.st_mtime_ns}\0{st.st_ctime_ns}\n"
        )
    text = "".join(rows).encode("utf-8", "surrogateescape")
    return DirGroup(name, tuple(entries), hashlib.sha256(text).hexdigest())


def stat_tree_digest(
    cache: Cache | None,
    root: Path,
    suffixes: tuple[str, ...] = (),
    *,
    shown: str = "",
    where: str = "its directory",
    tree: safeio.Tree | None = None,
) -> str:
    """`tree_digest` of `root` (the same value), each directory's content digests kept in
    `cache` under its stat rows (`DIGEST_STAGE`, one authenticated entry per directory of the
    tree, `dir_groups`): a directory whose rows are those of an earlier build is not read
    again, and only the entries of the directories changed are written.

    The contract is `tree_digest`'s memo's, for a whole directory: a file added, removed,
    renamed, rewritten (its ctime moves, even with its size and mtime put back) or replaced
    changes a row, so the key. A directory with a link, anything but a regular file, an
    unreadable entry or a file modified in the last `SETTLED_NS` has no entry: its files are
    read every time, links and refusals judged as `tree_digest` judges them. The checks
    (`safeio.check_entry`: a regular file, inside the root, its name valid, its size within
    its cap) are functions of the rows and the key's other parts (the root, its real path).
    Before, one JSON memo of every file (5.7 MB at 1,000 x 20,000) was read, parsed and
    written whole when anything changed (`stat_tree_digest_reference`)."""
    if cache is None or not cache.enabled:
        return tree_digest(root, suffixes, shown=shown, where=where, tree=tree)
    if not safeio.exists(root):
        return ""
    tree = tree if tree is not None else safeio.walk(root, suffixes=suffixes)
    recent = time.time_ns() - SETTLED_NS
    groups = cache.dir_groups(tree, recent)
    safe = [g for g in groups if g.rows]
    problems: list[tuple[str, Diagnostic]] = []
    keep = cache if cache.holds(tree) else None  # a later stage of the build reads them too
    lines = {
        g.name: _entry_lines(tree, g.entries, recent, shown, where, problems, keep)
        for g in groups
        if not g.rows
    }

    def make(todo: list[int]) -> list[tuple[str, ...]]:
        made = [
            _read_digests(tree, safe[i].entries, recent, shown, where, problems, keep) for i in todo
        ]
        _refuse(root, problems)
        return made

    fixed = (fingerprint(*_DIGEST_CODE), safeio.abspath(tree.root), tree.real_root)
    parts = [(*fixed, g.name, g.rows) for g in safe]
    stored = cache.get_or_make_many(DIGEST_STAGE, parts, make, sweep=True)
    cache.serve(DerivedKeys(MEMO_STAGE, ()))  # the one memo of the tree it replaced: deleted
    _refuse(root, problems)
    for g, shas in zip(safe, stored, strict=True):
        if not isinstance(shas, tuple) or len(shas) != len(g.entries):
            raise AssertionError(f"{g.name}: its stored digests are not its files'")
        lines[g.name] = [f"{e.rel}\0{sha}\0\n" for e, sha in zip(g.entries, shas, strict=True)]
    # in the walk's order, as `tree_digest` hashes them
    at = {name: iter(held) for name, held in lines.items()}
    text = "".join(next(at[e.rel.split("/", 1)[0]]) for e in tree.entries)
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def _read_digests(
    tree: safeio.Tree,
    entries: Sequence[safeio.Entry],
    recent: int,
    shown: str,
    where: str,
    problems: list[tuple[str, Diagnostic]],
    keep: Cache | None = None,
) -> tuple[str, ...]:
    """The sha256 of each of `entries` (regular files), read (their bytes kept in `keep`);
    refusals added to `problems`."""
    shas: list[str] = []
    for e in entries:
        try:
            shas.append(_file_stamp(tree, e, None, recent, where=where, keep=keep)[1])
        except safeio.Refusal as r:
            problems.append((e.rel, safeio.diagnostic(f"{shown}{e.rel}", r)))
    return tuple(shas)


def _entry_lines(
    tree: safeio.Tree,
    entries: Sequence[safeio.Entry],
    recent: int,
    shown: str,
    where: str,
    problems: list[tuple[str, Diagnostic]],
    keep: Cache | None = None,
) -> list[str]:
    """`tree_digest`'s lines of `entries` (each file read, its bytes kept in `keep`), its
    refusals added to `problems`."""
    out: list[str] = []
    for entry in entries:
        rel = entry.rel
        link = safeio.readlink(entry.path) if entry.kind is not safeio.Kind.FILE else None
        if entry.kind is safeio.Kind.DIR_LINK:
            out.append(f"{rel}\0link\0{link}\n")
            continue
        try:
            sha = _file_stamp(tree, entry, None, recent, where=where, keep=keep)[1]
        except safeio.Refusal as r:
            problems.append((rel, safeio.diagnostic(f"{shown}{rel}", r)))
            out.append("")
            continue
        out.append(f"{rel}\0{sha}\0{link or ''}\n")
    return out


def _refuse(root: Path, problems: list[tuple[str, Diagnostic]]) -> None:
    """One LoadError naming every problem, in the walk's order (as `tree_digest` names them)."""
    if problems:
        named = [d for _, d in sorted(problems, key=lambda p: p[0])]
        raise LoadError(f"{len(named)} file(s) of {root} cannot be read", named)


def stat_tree_digest_reference(
    cache: Cache | None,
    root: Path,
    suffixes: tuple[str, ...] = (),
    *,
    shown: str = "",
    where: str = "its directory",
    tree: safeio.Tree | None = None,
) -> str:
    """`stat_tree_digest` with one JSON stat memo of every file of the tree (`MEMO_STAGE`),
    read and parsed whole, and written whole when anything changed (the reference)."""
    if cache is None or not cache.enabled:
        return tree_digest(root, suffixes, shown=shown, where=where, tree=tree)
    key, fp = digest(MEMO_STAGE, str(safeio.resolve(root)), *suffixes), fingerprint("core/cache.py")
    raw = cache.get(MEMO_STAGE, key, fp)
    try:
        memo = json.loads(raw) if raw is not None else {}
    except ValueError:
        memo = {}
    memo = memo if isinstance(memo, dict) else {}
    before = dict(memo)
    result = tree_digest(root, suffixes, memo, shown=shown, where=where, tree=tree)
    if memo != before:
        cache.put(MEMO_STAGE, key, fp, json.dumps(memo, separators=(",", ":")).encode())
    return result


# --- the output tree of a finished build --------------------------------------------------------


def tree_listing(root: Path) -> list[list[Any]]:
    """[relative path, size, mtime_ns, inode] of every file under `root`, sorted: cheap to
    compare, and enough to tell a file was replaced or rewritten since it was listed.

    One `safeio.walk` (an `lstat` per file, from its directory entry): the same list as
    `tree_listing_reference` (`os.walk` and a `stat` by path per file; tests/test_fast_walk.py
    compares them), at about its cost (0.7-0.9 CPU-s either way for the 75,715 files of the
    1,000-recipe site, under load; most of it the kernel's `stat`). A caller that only compares
    listings hashes `listing_rows` (`listing_digest`) and builds no list per file."""
    out: list[list[Any]] = []
    for e in safeio.walk(root).entries:
        if e.kind is safeio.Kind.DIR_LINK:  # os.walk lists it among the directories
            continue
        # a link's target (and a file gone since its directory was read) as `os.stat` says
        st = (
            e.stat
            if e.kind is safeio.Kind.FILE and e.stat is not None
            else safeio.stat_followed(e.path)
        )
        out.append([e.rel, st.st_size, st.st_mtime_ns, st.st_ino])
    return out


def listing_rows(root: Path) -> Iterator[tuple[str, int, int, int]]:
    """The rows of `tree_listing`, in its order, as tuples (for a caller that only hashes them:
    `listing_digest`; tests/test_fast_walk.py holds the two to one answer)."""
    for e in safeio.walk(root).entries:
        if e.kind is not safeio.Kind.DIR_LINK:
            st = (
                e.stat
                if e.kind is safeio.Kind.FILE and e.stat is not None
                else safeio.stat_followed(e.path)
            )
            yield e.rel, st.st_size, st.st_mtime_ns, st.st_ino


def listing_digest(rows: Iterable[Sequence[Any]]) -> str:
    """sha256 over listing rows (path, size, mtime_ns, inode), each as
    `path\\0size\\0mtime\\0inode\\n`
    (a path holds no NUL and a number no NUL or newline, so no two listings share the text)."""
    text = "".join(f"{r[0]}\0{r[1]}\0{r[2]}\0{r[3]}\n" for r in rows)
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def tree_listing_reference(root: Path) -> list[list[Any]]:
    """`tree_listing` as `os.walk` and a `stat` per path give it (the reference)."""
    out: list[list[Any]] = []
    top = os.fspath(root)
    for dirpath, _dirnames, filenames in safeio.walk_dirs(top):
        below = safeio.relpath(dirpath, top)
        prefix = "" if below == "." else below.replace(os.sep, "/") + "/"
        for name in filenames:
            st = safeio.stat_followed(os.path.join(dirpath, name))
            out.append([prefix + name, st.st_size, st.st_mtime_ns, st.st_ino])
    return sorted(out)


def digests_of(paths: Iterable[tuple[str, bytes]]) -> list[str]:
    """`<path>\\0<sha256>` for (path, bytes) pairs, in the given order."""
    return [f"{p}\0{hashlib.sha256(b).hexdigest()}" for p, b in paths]


__all__ = [
    "Cache",
    "CacheStats",
    "DerivedKeys",
    "DirGroup",
    "code_fingerprint",
    "digest",
    "digests_of",
    "dir_group",
    "dir_groups",
    "fingerprint",
    "listing_digest",
    "listing_rows",
    "machine_key",
    "remove_legacy_dirs",
    "scope_of",
    "stat_tree_digest",
    "stat_tree_digest_reference",
    "tree_digest",
    "tree_listing",
    "tree_listing_reference",
]
