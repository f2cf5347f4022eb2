"""Verification through the build cache: a file verified once is not verified again, and a
file unchanged since an earlier build is not even read again.

The verify stage's key of a file: the file (its path, its location below the evidence root,
its bytes' sha256), the trust root, the signer policy and the verifier's code. That key is
handed downstream (`VerificationRun.keys`: the aggregate stage keys each record by it). A
record is cached as verified *before* staleness is judged (no current digests);
`with_current_digests` then judges every record against this build's recipes, so a changed
recipe never needs a re-verification. The cache authenticates its entries (HMAC with this
machine's key): a cached "verified" cannot be planted by writing to `.cache/`.

One entry per directory. The records of one directory of the tree (`evidence/<recipe>`:
every file of one recipe) are one entry of `DIRS_STAGE`, its key derived from the keys of its
files, in order: a rebuild reads and authenticates one entry per recipe, not one per file. A
directory whose files changed (one added, removed or rewritten) has a new key; its records
come from the entry it had last (a small entry per directory, `LAST_STAGE`, names that
entry's key parts: its files' keys then), each taken for the very key it was stored under,
and only a file with no record there is verified: one changed file re-verifies one file.
Measured on the verify stage alone (`verify_stage`, its collector paused as in a build, warm
cache, nothing changed): see `verify_cached`. Before, every record was stored twice, in its
directory's entry and in one entry per file (`VERIFY_STAGE`) that only a later change read:
see `_DirReader.make`.

A file's verification key is the key its entry per file had (`VERIFY_STAGE`): derived once from its parts
(`Cache.derive`), handed downstream, named in its directory's key and counted as served for
the sweep (`Cache.serve`), where the entry's key was before derived again from it (20,000 more
keys at 1,000 recipes). The verifier (`generator.evidence.verify`, and sigstore with it) is
imported only when a file is verified, and a trust root sigstore parsed in an earlier build is
not parsed again (`parsed_roots`): a build whose every verification is cached imports neither
(0.4-0.5 CPU-s of imports on the 2-core machine under load 3-4.5).

The sha256 of a file comes from its stat memo when the memo vouches for it (`store.FileMemo`:
same device, inode, size, mtime and ctime as when an earlier build read it); the memo is an
authenticated entry too, so a digest cannot be planted for a file either. A file is read only
when the memo cannot vouch for it, or when its verification must be made (`store.load`, which
refuses bytes whose digest is not the one the key was made from).

A build that verifies the whole evidence tree (`verify_stage` given the root, a cache, one
trust root) goes by directory from the start (`verify_tree`): the walk the build key took
(`Cache.take_walk`) gives the bundles and the pointer files, and a directory whose bundles'
stat rows are unchanged gives its found files and keys from one entry (`DIRSTAT_STAGE`), with
no discovery, check, memo lookup or key derivation per file. Measured at 1,000 x 20,000 on
warm caches, interleaved with the code before (4-5 rounds each, load 3-9), `verify_stage`
alone, CPU-s: one file removed 1.50-1.57 -> 0.93-1.14, re-added 1.43-1.62 -> 1.12-1.18,
nothing changed 1.46-1.68 -> 0.86-0.96; with the build key's walk and `stat_tree_digest`
before it, removed 1.85-2.00 -> 1.25-1.51, re-added 1.75-2.00 -> 1.46-1.60. Under cProfile,
in a whole one-file-removed rebuild, pipeline.verify 3.64 -> 2.11 s.

The stat rows are the build key's (`core/cache.dir_groups`, once per walk: `Cache.dir_groups`),
each directory's rows over all its files (bundles and pointer files): the build key keeps each
directory's content digests under the same rows (`core/cache.stat_tree_digest`, one entry per
directory), and the pointer files are found once per walk (`pointer.in_tree`). Measured at
1,000 x 20,000, one evidence file removed or re-added, interleaved with the code before (three
cycles): `build_key` 0.32-0.35 -> 0.24-0.25 CPU-s, `verify_stage` 0.22-0.27 -> 0.16-0.19 removed,
0.41-0.44 -> 0.34-0.40 re-added (with verification of the re-added file).

The records are read when used (`Records`): a directory whose entry (`DIRS_STAGE`) the store
holds is read, authenticated, unpickled and judged current when one of its records is first
used, and what the pipeline reads of every record (its path, the recipe and profile its
statement names, its verification key) is at hand without it: the path and key from the
walk, the recipe and profile from one small entry per directory (`HEADS_STAGE`). Before, every
build read all 1,000 entries (about 110 MB at 1,000 x 20,000) whether a later stage read a
record or not. Measured there, a whole build after one evidence file was removed or re-added,
interleaved with the code before (two cycles each, load 4-5; with the stat memo by directory,
`DIRMEMO_STAGE`): `pipeline.verify` 0.86-1.02 -> 0.23-0.24 CPU-s removed, 0.90-0.95 -> 0.47-0.53
re-added (the re-added file is verified: sigstore is imported); `verify-dirs` read 111.5 MB ->
0 (the heads: 0.16 MB), the stat memo 6.2 MB -> 0.01; the build's user+sys 4.8-5.5 -> 4.5-4.6
CPU-s removed, 5.0-5.3 -> 4.7-4.8 re-added, its peak 637-660 -> 540-564 MB, once the views
stage takes a record's path unread (`Records.path`; `records[i].path` reads every directory,
one query each).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat
from pathlib import Path
from typing import Any

from generator.core import safeio
from generator.core.cache import (
    Cache,
    DerivedKeys,
    digest,
    dir_group,
    dir_groups,
    fingerprint,
)
from generator.evidence import store
from generator.evidence.model import (
    Evidence,
    FoundFile,
    SignerPolicy,
    TrustRoot,
    with_current_digests,
)
from generator.evidence.store import FileMemo, bundle_entries, find_files, load
from generator.fast.loaded import Slices, SliceView

VERIFY_STAGE = "verify"  # the verification keys' stage (no entry stored: `_DirReader.make`)
# the code a verification is a function of (in each file's key): the verifier, its records
# (`evidence/model.py`, whose stored form `fast/packed.py` gives), and what they are made with
VERIFY_CODE = ("evidence", "core/records.py", "core/canonical.py", "fast")
DIRS_STAGE = "verify-dirs"  # one entry per directory of the evidence tree (`evidence/<recipe>`)
FILES_STAGE = "evidence-files"  # the stat memo of the evidence files (one entry per tree)
ROOTS_STAGE = "trust-roots"  # the trust roots sigstore parsed (one entry)


def verify_cached(
    files: Sequence[FoundFile],
    *,
    trust_root: TrustRoot,
    policy: SignerPolicy,
    current_digests: Mapping[str, str],
    cache: Cache,
    jobs: int | None = None,
    sweep: bool = False,
) -> tuple[Records, tuple[str, ...]]:
    """`verify.verify_evidence`, verifying (and reading) only the files the cache has not
    seen; with each record the key of its verification (which later stages key by: equal
    keys, equal records before staleness).

    One entry per directory (see the module, `DIRS_STAGE`), then, for the directories whose
    entry is missing, the records of the entry each had last (`LAST_STAGE`), then
    verification of the files with none. `sweep`: `files` are the whole evidence tree, so the
    directory entries no longer used (the last of a changed directory included, once its
    records are taken) and those of directories gone are deleted when the build finishes
    (`Cache.finish`).

    Measured on `verify_stage` alone (warm cache, nothing changed, collector paused as in a
    build), before -> after: 200 x 4,000, median of 6 (load 4-5), 1.03 -> 0.73 CPU-s;
    1,000 x 20,000, median of 3 and of 6 (load 4.4), 3.47 -> 2.80 CPU-s. Entries read and
    authenticated, and pickles loaded, 20,000 -> 1,000 (one per recipe directory)."""
    parts = file_key_parts(files, trust_root, policy)
    keys = cache.derive(VERIFY_STAGE, parts).keys
    records = _records(
        files, keys, directories(files), trust_root, policy, cache, jobs, sweep, current_digests
    )
    return records, keys


# --- the records, each directory's read when first used ---------------------------------------

HEADS_STAGE = "verify-heads"  # one entry per directory, beside its records (`DIRS_STAGE`)


@dataclass(frozen=True, slots=True)
class Heads:
    """What the pipeline reads of every record without loading it, by position: its path, the
    recipe and scale profile its statement names (None, None: it has none), and the key of its
    verification ("": not verified through the cache, as a pointer file's record)."""

    paths: tuple[str, ...]
    recipes: tuple[str | None, ...]
    profiles: tuple[str | None, ...]
    keys: tuple[str, ...]

    @staticmethod
    def of(records: Sequence[Evidence], keys: Sequence[str] | None = None) -> Heads:
        named = [_head(r) for r in records]
        return Heads(
            tuple(r.path for r in records),
            tuple(h[0] for h in named),
            tuple(h[1] for h in named),
            tuple(keys) if keys is not None else ("",) * len(records),
        )

    def __add__(self, other: Heads) -> Heads:
        return Heads(
            self.paths + other.paths,
            self.recipes + other.recipes,
            self.profiles + other.profiles,
            self.keys + other.keys,
        )


Head = tuple[str | None, str | None]  # a record's (recipe, profile) as its statement names them


def _head(record: Evidence) -> Head:
    st = record.statement
    return (st.recipe, st.scale_profile) if st is not None else (None, None)


class Records(SliceView):
    """The verify stage's records (`VerificationRun.records`), as the tuple of them: each
    directory's records read from the cache (`DIRS_STAGE`: read, authenticated, unpickled and
    judged current) when one of them is first used, and every record's `Heads` (path, recipe,
    profile, verification key) at hand without reading any.

    A rebuild after one evidence file changed used to read all 1,000 directories' records at
    1,000 x 20,000 (111.5 MB, 20,000 records unpickled and judged), though the aggregate
    stage keys a recipe by its records' verification keys and makes the part of the changed
    recipe alone. `select` gives the records at some positions, as records (a recipe's, those
    in scope); `need` reads every directory a view needs in one batch. The reference is the
    tuple: a view read whole equals, value for value, the records read at once
    (tests/test_verify_records.py). Not a record: it loads."""

    __slots__ = ("_heads",)

    def __init__(self, store: Slices, heads: Heads, at: Sequence[int] | None = None) -> None:
        super().__init__(store, at)
        self._heads = heads

    @staticmethod
    def held(records: Sequence[Evidence], keys: Sequence[str] | None = None) -> Records:
        """Records in hand (`keys`: their verification keys; none: "" each)."""
        values = tuple(records)
        store = Slices((range(len(values)),), {0: values}, _nothing_to_load)
        return Records(store, Heads.of(values, keys))

    def path(self, i: int) -> str:
        return self._heads.paths[self._at[i]]

    def recipe(self, i: int) -> str | None:
        """The recipe record `i`'s statement names (None: it has no statement)."""
        return self._heads.recipes[self._at[i]]

    def profile(self, i: int) -> str | None:
        """The scale profile record `i`'s statement names (None: none, or no statement)."""
        return self._heads.profiles[self._at[i]]

    def key(self, i: int) -> str:
        """The key of record `i`'s verification ("": not verified through the cache)."""
        return self._heads.keys[self._at[i]]

    def heads(self) -> Heads:
        """Every record's heads, in order (those of its store, when it is a whole store's)."""
        heads, at = self._heads, self._at
        if at == range(len(heads.paths)):
            return heads
        return Heads(
            tuple(heads.paths[p] for p in at),
            tuple(heads.recipes[p] for p in at),
            tuple(heads.profiles[p] for p in at),
            tuple(heads.keys[p] for p in at),
        )

    def select(self, positions: Sequence[int]) -> Records:
        """The records at `positions` (of these), as records: nothing read."""
        at = self._at
        return Records(self._store, self._heads, [at[p] for p in positions])

    def plus(self, records: Sequence[Evidence], keys: Sequence[str] | None = None) -> Records:
        """These records (every one of their store's, in order), then `records`, in hand."""
        if self._at != range(len(self._store)):
            raise ValueError("only a whole store's records are extended")
        return Records(self._store.plus(tuple(records)), self._heads + Heads.of(records, keys))

    def __reduce__(self) -> tuple[Any, ...]:  # pickled in hand (never as its loader)
        return _records_in_hand, (self._tuple(), self.heads())


def _records_in_hand(values: tuple[Evidence, ...], heads: Heads) -> Records:
    store = Slices((range(len(values)),), {0: values}, _nothing_to_load)
    return Records(store, heads)


def _nothing_to_load(numbers: list[int]) -> list[tuple[Evidence, ...]]:
    raise AssertionError("records in hand are never loaded")


def _records(
    files: Sequence[FoundFile],
    keys: Sequence[str],
    groups: Sequence[tuple[int, ...]],
    trust_root: TrustRoot,
    policy: SignerPolicy,
    cache: Cache,
    jobs: int | None,
    sweep: bool,
    current_digests: Mapping[str, str],
) -> Records:
    """The record of each file (in `files`' order, judged current against `current_digests`),
    `keys` its verification key (`VERIFY_STAGE`), `groups` the positions of each directory's
    files (`directories`): one entry per directory, else the one it had last, else verified.

    A directory whose entry the store holds is read when one of its records is first used
    (`Records`); the others are made now (from their last entries, else verified), so
    verification never waits for a reader. What every record shows without being read (its
    recipe and profile) is one small entry per directory beside its records (`HEADS_STAGE`,
    under the same key parts), read every build."""
    reader = _DirReader(files, keys, groups, trust_root, policy, cache, jobs)
    if sweep:  # no entry per file is used any more (`_DirReader.make`): any left go
        cache.serve(DerivedKeys(VERIFY_STAGE, ()))
        cache.serve(DerivedKeys(LAST_STAGE, tuple(map(reader.last_key, range(len(groups))))))
    held = cache.stored(DIRS_STAGE, reader.parts, sweep=sweep)  # every one served: read or not
    in_hand: dict[int, tuple[Evidence, ...]] = {}
    missing = [g for g, (_, there) in enumerate(held) if not there]
    if missing:
        in_hand.update(zip(missing, reader.read(missing), strict=True))

    def make_heads(todo: list[int]) -> list[tuple[Head, ...]]:
        unread = [g for g in todo if g not in in_hand]
        if unread:
            in_hand.update(zip(unread, reader.read(unread), strict=True))
        return [_dedup_heads(in_hand[g]) for g in todo]

    heads = cache.get_or_make_many(HEADS_STAGE, reader.parts, make_heads, sweep=sweep)
    columns = _columns_of(files, keys, groups, heads)
    current = dict(current_digests)

    def judged(g: int, stored: tuple[Evidence, ...]) -> tuple[Evidence, ...]:
        out = with_current_digests(stored, current)
        for i, r in zip(groups[g], out, strict=True):  # what was shown unread is what is read
            if (r.path, *_head(r)) != (columns.paths[i], columns.recipes[i], columns.profiles[i]):
                raise AssertionError(f"{r.path}: its heads are not its record's")
        return out

    def load_later(numbers: list[int]) -> list[tuple[Evidence, ...]]:
        return [judged(g, stored) for g, stored in zip(numbers, reader.read(numbers), strict=True)]

    store = Slices(groups, {g: judged(g, v) for g, v in in_hand.items()}, load_later)
    return Records(store, columns)


LAST_STAGE = "verify-last"  # one entry per directory: the key parts of its last `DIRS_STAGE` entry
_LAST_CODE = ("evidence/verify_cache.py",)


class _DirReader:
    """The records of each directory (`groups`: the positions of its files): read from its
    entry (`DIRS_STAGE`), else made (`make`): each file's record taken from the directory's
    entry an earlier build stored last (`LAST_STAGE` names it), else verified. Not a record:
    it reads, and the cache stores what it makes."""

    def __init__(
        self,
        files: Sequence[FoundFile],
        keys: Sequence[str],
        groups: Sequence[tuple[int, ...]],
        trust_root: TrustRoot,
        policy: SignerPolicy,
        cache: Cache,
        jobs: int | None,
    ) -> None:
        self.files, self.keys, self.groups, self.cache, self.jobs = files, keys, groups, cache, jobs
        self.trust_root, self.policy = trust_root, policy
        self.parts = [tuple(keys[i] for i in g) for g in groups]  # a directory's key parts
        self._last = (trust_root.sha256, _policy_digest(policy))

    def last_key(self, g: int) -> str:
        """The key of directory `g`'s `LAST_STAGE` entry: its evidence root and name, the
        trust root and the signer policy (not its files: it outlives them)."""
        first = self.files[self.groups[g][0]]
        return digest(LAST_STAGE, first.root, directory(first), *self._last)

    def read(self, numbers: list[int]) -> list[tuple[Evidence, ...]]:
        """The records of the directories `numbers`, as stored (not judged current)."""
        return self.cache.get_or_make_many(
            DIRS_STAGE,
            [self.parts[g] for g in numbers],
            lambda todo: self.make([numbers[t] for t in todo]),
        )

    def make(self, todo: list[int]) -> list[tuple[Evidence, ...]]:
        """The records of the directories `todo`, none stored: each file's from the entry its
        directory last had (`DIRS_STAGE`, as `LAST_STAGE` names its key parts: the keys of its
        files then, so a record is taken for the very key it was stored under), else
        verified; then each directory's `LAST_STAGE` entry names its entry now made.

        `make_reference` (the code before) read each file's entry (`VERIFY_STAGE`) and stored
        one for every file verified: a cold build stored every record twice (20,000 entries
        more at 1,000 x 20,000, each record pickled, hashed, authenticated and written once
        more), for a later build's sake alone. A rebuild after one file changed reads one
        entry (the directory's last) where it read the directory's other files' entries."""
        groups, keys, cache = self.groups, self.keys, self.cache
        fp = fingerprint(*_LAST_CODE)
        last = [self.last_key(g) for g in todo]
        named = cache.get_many(LAST_STAGE, last, fp, authenticated=True)
        before_parts = [
            parts
            for k, g in zip(last, todo, strict=True)
            if (raw := named[k]) and (parts := tuple(raw.decode().split("\n"))) != self.parts[g]
        ]  # (the entry under its own parts now: absent, or refused as bad)
        before: dict[str, Evidence] = {}
        for at, stored in cache.held_values(DIRS_STAGE, before_parts).items():
            if isinstance(stored, tuple) and len(stored) == len(before_parts[at]):
                before.update(zip(before_parts[at], stored, strict=True))
        wanted = [i for g in todo for i in groups[g]]
        missing = [i for i in wanted if keys[i] not in before]
        for table, n in (
            (cache.stats.hits, len(wanted) - len(missing)),
            (cache.stats.misses, len(missing)),
        ):
            if n:  # counted as the entries per file were: reused, computed
                cache.stats.count(table, VERIFY_STAGE, n)
        made = dict(zip(missing, self._verify(missing), strict=True))
        cache.put_many(
            LAST_STAGE,
            fp,
            [(k, "\n".join(self.parts[g]).encode()) for k, g in zip(last, todo, strict=True)],
            authenticated=True,
        )
        return [tuple(made[i] if i in made else before[keys[i]] for i in groups[g]) for g in todo]

    def _verify(self, positions: list[int]) -> tuple[Evidence, ...]:
        """The records of the files at `positions`, verified (read first)."""
        if not positions:
            return ()
        from generator.evidence.verify import verify_evidence  # sigstore: only now

        return verify_evidence(
            [load(self.files[i]) for i in positions],
            trust_roots=self.trust_root,
            policy=self.policy,
            current_digests={},
            jobs=self.jobs,
        )

    def make_reference(self, todo: list[int]) -> list[tuple[Evidence, ...]]:
        """`make` through an entry per file (`VERIFY_STAGE`, under its verification key):
        each read, else verified and stored (the reference)."""
        files, groups = self.files, self.groups
        wanted = [i for g in todo for i in groups[g]]

        def make_files(missing: list[int]) -> tuple[Evidence, ...]:  # positions in `wanted`
            return self._verify([wanted[j] for j in missing])

        # each file's entry is stored under its verification key (`keys`): its parts again
        parts = file_key_parts([files[i] for i in wanted], self.trust_root, self.policy)
        made = self.cache.get_or_make_many(VERIFY_STAGE, parts, make_files)
        by_file = dict(zip(wanted, made, strict=True))
        return [tuple(by_file[i] for i in groups[g]) for g in todo]


def _columns_of(
    files: Sequence[FoundFile],
    keys: Sequence[str],
    groups: Sequence[tuple[int, ...]],
    heads: Sequence[tuple[Head, ...]],
) -> Heads:
    """Every record's `Heads`, from its file, its key and its directory's heads."""
    recipes: list[str | None] = [None] * len(files)
    profiles: list[str | None] = [None] * len(files)
    for g, dir_heads in zip(groups, heads, strict=True):
        if len(dir_heads) != len(g):
            raise AssertionError("a directory's heads are one per record")
        for i, (recipe, profile) in zip(g, dir_heads, strict=True):
            recipes[i], profiles[i] = recipe, profile
    return Heads(tuple(f.path for f in files), tuple(recipes), tuple(profiles), tuple(keys))


def _dedup_heads(records: Sequence[Evidence]) -> tuple[Head, ...]:
    """Each record's head, equal heads one object (a directory's records name one recipe)."""
    seen: dict[Head, Head] = {}
    return tuple(seen.setdefault(h, h) for h in map(_head, records))


# --- the evidence tree at the grain of a directory ----------------------------------------------

DIRSTAT_STAGE = "verify-dirstat"  # one entry per directory, keyed by its files' stat rows
# what a directory's entry is a function of besides its key's inputs: discovery and its checks
# (`store.find_files`: `safeio.check_entry`, `yamlio.MAX_FILE_BYTES`) and the verification keys
DIRSTAT_CODE = (*VERIFY_CODE, "core/safeio.py", "core/yamlio.py", "core/cache.py")


@dataclass(frozen=True, slots=True)
class StatGroup:
    """The bundles of one directory of the evidence tree (`evidence/<name>`, or one file
    directly under the root) as the walk found them, and their stat rows' digest: "" when the
    rows cannot vouch for the directory (a link, not a regular file, unreadable, or modified in
    the last `store.SETTLED_NS`), which is then found again file by file."""

    name: str
    entries: tuple[safeio.Entry, ...]
    rows: str


def stat_groups(tree: safeio.Tree, settled: int, cache: Cache | None = None) -> list[StatGroup]:
    """The bundles of the walk `tree` of the evidence root (`store.bundle_entries`) by
    directory, sorted by name (the order `find_files` gives their files: by path), each with
    the stat rows' digest of its whole directory (`cache.dir_groups`: the rows the build key
    read, computed once per walk; its other files too, so a changed pointer file makes the
    directory's bundles found again, never the reverse). `stat_groups_reference`: the rows of
    the bundles alone, computed here."""
    groups = cache.dir_groups(tree, settled) if cache is not None else dir_groups(tree, settled)
    out: list[StatGroup] = []
    for g in groups:
        bundles = tuple(e for e in g.entries if e.rel.endswith(store.SUFFIX))
        if bundles:
            out.append(StatGroup(g.name, bundles, g.rows))
    return out


def stat_groups_reference(tree: safeio.Tree, settled: int) -> list[StatGroup]:
    """`stat_groups` with rows of the bundles alone (the reference)."""
    by_name: dict[str, list[safeio.Entry]] = {}
    for e in bundle_entries(tree):
        by_name.setdefault(e.rel.split("/", 1)[0], []).append(e)
    return [_stat_group(name, by_name[name], settled) for name in sorted(by_name)]


def _stat_group(name: str, entries: list[safeio.Entry], settled: int) -> StatGroup:
    g = dir_group(name, entries, settled)
    return StatGroup(g.name, g.entries, g.rows)


DirFound = tuple[tuple[FoundFile, ...], tuple[str, ...]]  # a directory's files, their keys


def verify_tree(
    tree: safeio.Tree,
    *,
    root: Path,
    base: Path | None,
    trust_root: TrustRoot,
    policy: SignerPolicy,
    current_digests: Mapping[str, str],
    cache: Cache,
    jobs: int | None = None,
    sweep: bool = False,
) -> tuple[tuple[FoundFile, ...], Records, tuple[str, ...]]:
    """`store.find_files([root], base, root, memo)` then `verify_cached` of the files of `tree`
    (the walk of the evidence root `root`, `store.TREE_SUFFIXES`): the files, their records
    and their verification keys, the very values those give, with no work per file for a
    directory whose files' stat rows are those of an earlier build.

    Each directory's found files and keys are one entry (`DIRSTAT_STAGE`, authenticated),
    keyed by the digest of its bundles' stat rows (path below the root, mode, device, inode,
    size, mtime, ctime, from the walk), the root, the base the paths are shown from, the trust
    root, the signer policy and the code (`DIRSTAT_CODE`). The contract is the stat memo's
    (`store.FileMemo`), for a whole directory: a file added, removed, renamed, rewritten (its
    ctime moves, even when its size and mtime are put back) or replaced (another inode, or the
    same inode number again with another ctime) changes a row, so the key. A directory with a
    link, anything but a regular file, an unreadable entry, or a file modified less than
    `store.SETTLED_NS` before this build began has no entry: it is found file by file every
    time (a second write within the clock's granularity could leave a stat as recorded). The
    checks of `find_files` are functions of the rows and the key's other parts (the name, the
    kind and mode, the size; the real path is the real root joined with the path), so a
    directory whose entry is served passed them as it is now.

    The directories without an entry are found in one `find_files` (the stat memo of those
    directories, one entry each (`DIRMEMO_STAGE`), vouching for their unchanged files; one
    LoadError naming every problem); the records come from the entries per directory and per
    file (`_records`), as `verify_cached` takes them.
    """
    finder = _DirFinder(tree, root, base, trust_root, policy, cache)
    groups = stat_groups(tree, time.time_ns() - store.SETTLED_NS, cache)
    found = finder.served(groups, sweep)
    cache.drop_reads()  # what the build key read and this stage did not take: not held on
    files: list[FoundFile] = []
    keys: list[str] = []
    positions: list[tuple[int, ...]] = []
    for g in groups:
        dir_files, dir_keys = found[g.name]
        positions.append(tuple(range(len(files), len(files) + len(dir_files))))
        files.extend(dir_files)
        keys.extend(dir_keys)
    if sweep:  # each directory's stat memo is kept, read or not: those of directories gone go
        cache.serve(DerivedKeys(DIRMEMO_STAGE, tuple(finder.memo_key(g.name) for g in groups)))
    records = _records(
        files, keys, positions, trust_root, policy, cache, jobs, sweep, current_digests
    )
    return tuple(files), records, tuple(keys)


DIRMEMO_STAGE = "evidence-files-dirs"  # the stat memo of `verify_tree`, one entry per directory


class _DirFinder:
    """The directories of one walk found through their entries (`DIRSTAT_STAGE`), or file by
    file (`find`), with the stat memo of the directories found (`DIRMEMO_STAGE`). Not a
    record: it reads and stores entries."""

    def __init__(
        self,
        tree: safeio.Tree,
        root: Path,
        base: Path | None,
        trust_root: TrustRoot,
        policy: SignerPolicy,
        cache: Cache,
    ) -> None:
        self.tree, self.root, self.base, self.cache = tree, root, base, cache
        self.trust_root, self.policy = trust_root, policy
        self.top = Path(tree.root)
        self.fixed = (
            fingerprint(*DIRSTAT_CODE),
            safeio.abspath(self.top),
            safeio.abspath(root),
            safeio.real_path(root),
            safeio.abspath(base or safeio.cwd()),
            trust_root.sha256,
            _policy_digest(policy),
        )
        self.real_top = safeio.real_path(self.top)

    def served(self, groups: Sequence[StatGroup], sweep: bool) -> dict[str, DirFound]:
        """Each directory's files and keys: from its entry, else found (and stored when its
        rows can vouch for it). Those found are found together: one `find_files`, one
        LoadError naming every problem."""
        safe = [g for g in groups if g.rows]
        unsafe = [g for g in groups if not g.rows]
        found: dict[str, DirFound] = {}

        def make(todo: list[int]) -> list[tuple[Columns, tuple[str, ...]]]:
            got = self.find([*(safe[i] for i in todo), *unsafe])
            found.update(got)
            return [_columns(*got[safe[i].name]) for i in todo]

        parts = [(*self.fixed, g.name, g.rows) for g in safe]
        stored = self.cache.get_or_make_many(DIRSTAT_STAGE, parts, make, sweep=sweep)
        if unsafe and not found:
            found.update(self.find(unsafe))
        for g, value in zip(safe, stored, strict=True):
            if g.name not in found:
                found[g.name] = _found(value)
        return found

    def find(self, todo: Sequence[StatGroup]) -> dict[str, DirFound]:
        """Each directory of `todo` found file by file (with its stat memo), its keys derived."""
        names = sorted({g.name for g in todo})
        told = self._memos(names)
        memo = FileMemo({real: fact for facts in told.values() for real, fact in facts.items()})
        entries = tuple(sorted((e for g in todo for e in g.entries), key=lambda e: e.rel))
        part = safeio.Tree(self.tree.root, self.tree.real_root, entries)
        files = find_files(
            [self.top], self.base, self.root, memo, tree=part, reads=self.cache.take_read
        )
        parts = file_key_parts(files, self.trust_root, self.policy)
        keys = self.cache.derive(VERIFY_STAGE, parts).keys
        out: dict[str, tuple[list[FoundFile], list[str]]] = {}
        facts: dict[str, dict[str, list[Any]]] = {name: {} for name in names}
        for f, k in zip(files, keys, strict=True):
            name = _group_name(f)
            dir_files, dir_keys = out.setdefault(name, ([], []))
            dir_files.append(f)
            dir_keys.append(k)
            fact = memo.after.get(f.real)
            if fact is not None:
                facts.setdefault(name, {})[f.real] = fact
        self._keep_memos({name: now for name, now in facts.items() if now != told.get(name)})
        return {name: (tuple(fs), tuple(ks)) for name, (fs, ks) in out.items()}

    # The stat memo (`store.FileMemo`) by directory: a directory found file by file reads the
    # facts of its own files and stores them again when they changed. One memo for the tree
    # (`file_memo`) was read (6 MB of JSON at 1,000 x 20,000), every served directory's facts
    # carried over, and the whole written again, for one changed file.

    def memo_key(self, name: str) -> str:
        return digest(DIRMEMO_STAGE, self.real_top, name)

    def _memos(self, names: Sequence[str]) -> dict[str, dict[str, list[Any]]]:
        """The facts of each directory's files ({} when none, or not this machine's), read in
        one query per batch of keys (`Cache.get_many`). A cold build finds its 1,000 directories
        at 1,000 x 20,000 at once: one query and one transaction (`_keep_memos`) instead of one
        each per directory (1,000 commits: 0.63 s of py-spy samples in `Cache.put`)."""
        fp = fingerprint(*_MEMO_CODE)
        keys = {name: self.memo_key(name) for name in names}
        raws = self.cache.get_many(DIRMEMO_STAGE, list(keys.values()), fp, authenticated=True)
        out: dict[str, dict[str, list[Any]]] = {}
        for name, key in keys.items():
            raw = raws.get(key)
            try:
                facts = json.loads(raw) if raw is not None else {}
            except ValueError:
                facts = {}
            out[name] = facts if isinstance(facts, dict) else {}
        return out

    def _keep_memos(self, changed: Mapping[str, dict[str, list[Any]]]) -> None:
        """Store the facts of the directories in `changed`, in one transaction."""
        items = [
            (
                self.memo_key(name),
                json.dumps(facts, separators=(",", ":"), sort_keys=True, allow_nan=False).encode(),
            )
            for name, facts in sorted(changed.items())
        ]
        self.cache.put_many(DIRMEMO_STAGE, fingerprint(*_MEMO_CODE), items, authenticated=True)


# a directory's entry: its files' paths, locations, real paths, real root, sha256s and sizes,
# and their verification keys, as columns (no bytes: a file's are read when needed, `load`)
Columns = tuple[
    tuple[str, ...], tuple[str | None, ...], tuple[str, ...], str, tuple[str, ...], tuple[int, ...]
]


def _columns(
    files: tuple[FoundFile, ...], keys: tuple[str, ...]
) -> tuple[Columns, tuple[str, ...]]:
    roots = {f.root for f in files}
    assert len(roots) == 1, "one directory's files stay in one root"
    columns = (
        tuple(f.path for f in files),
        tuple(f.location for f in files),
        tuple(f.real for f in files),
        roots.pop(),
        tuple(f.sha256 for f in files),
        tuple(f.size for f in files),
    )
    return columns, keys


def _found(stored: tuple[Columns, tuple[str, ...]]) -> DirFound:
    (paths, locations, reals, root, shas, sizes), keys = stored
    files = tuple(map(FoundFile, paths, locations, reals, repeat(root), shas, sizes))
    return files, keys


def _group_name(f: FoundFile) -> str:
    """The directory (`StatGroup.name`) of a file found below the evidence root."""
    return (f.location or f.path).split("/", 2)[1]


def file_key_parts(
    files: Sequence[FoundFile], trust_root: TrustRoot, policy: SignerPolicy
) -> list[tuple[str, ...]]:
    """The parts of each file's verification key: the verifier's code, its path, its location
    (the path check judges it), its bytes' sha256, the trust root and the signer policy."""
    fp = fingerprint(*VERIFY_CODE)
    policy_digest = _policy_digest(policy)
    root = trust_root.sha256
    return [(fp, f.path, f.location or "", f.sha256, root, policy_digest) for f in files]


def _policy_digest(policy: SignerPolicy) -> str:
    return hashlib.sha256(repr(policy).encode()).hexdigest()


def directory(found: FoundFile) -> str:
    """The directory a file's verification is stored with: `evidence/<recipe>` of its location
    (its path without one); a file directly under the evidence root is its own."""
    return "/".join((found.location or found.path).split("/", 2)[:2])


def directories(files: Sequence[FoundFile]) -> list[tuple[int, ...]]:
    """The positions of `files` grouped by `directory`, each group in the files' order, the
    groups in the order of their first file."""
    groups: dict[str, list[int]] = {}
    for i, f in enumerate(files):
        groups.setdefault(directory(f), []).append(i)
    return [tuple(g) for g in groups.values()]


def _memo_key(paths: Iterable[Path]) -> str:
    return digest(FILES_STAGE, *sorted(str(safeio.resolve(p)) for p in paths))


_MEMO_CODE = ("evidence/store.py", "evidence/verify_cache.py")


def file_memo(cache: Cache, paths: Iterable[Path]) -> FileMemo:
    """The stat memo of the evidence files under `paths` (empty when there is none, or its
    entry is not this machine's)."""
    raw = cache.get(FILES_STAGE, _memo_key(paths), fingerprint(*_MEMO_CODE), authenticated=True)
    try:
        entries = json.loads(raw) if raw is not None else {}
    except ValueError:
        entries = {}
    return FileMemo(entries if isinstance(entries, dict) else {})


def keep_file_memo(cache: Cache, paths: Iterable[Path], memo: FileMemo) -> None:
    """Store what this build found (the files it vouched for and those it read, settled)."""
    if memo.changed:
        data = json.dumps(
            memo.after, separators=(",", ":"), sort_keys=True, allow_nan=False
        ).encode()
        key, fp = _memo_key(paths), fingerprint(*_MEMO_CODE)
        cache.put(FILES_STAGE, key, fp, data, authenticated=True)


_ROOTS_CODE = ("evidence/trustroot.py",)


def parsed_roots(cache: Cache) -> frozenset[str]:
    """The sha256 of the trust roots that sigstore's model parsed in earlier builds
    (`trustroot.load_trust_root(parsed=...)`): an authenticated entry, so a root cannot be
    planted as parsed; empty when there is none, or its entry is not this machine's or this
    code's (`trustroot.py` is in its key)."""
    key = digest(ROOTS_STAGE)
    raw = cache.get(ROOTS_STAGE, key, fingerprint(*_ROOTS_CODE), authenticated=True)
    try:
        listed = json.loads(raw) if raw is not None else []
    except ValueError:
        listed = []
    if not isinstance(listed, list):
        return frozenset()
    return frozenset(d for d in listed if isinstance(d, str))


def keep_parsed_roots(cache: Cache, before: frozenset[str], roots: Iterable[TrustRoot]) -> None:
    """Record `roots` as parsed (`load_trust_root` parsed each, or it was recorded before)."""
    now = before | {r.sha256 for r in roots}
    if now != before:
        data = json.dumps(sorted(now), separators=(",", ":"), allow_nan=False).encode()
        key = digest(ROOTS_STAGE)
        cache.put(ROOTS_STAGE, key, fingerprint(*_ROOTS_CODE), data, authenticated=True)
