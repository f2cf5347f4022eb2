"""mkdocs' output in the build cache as an index and one entry per file: a build that reuses it
reads the index and the few files it publishes anew, not the whole output.

The engine's output for a docs tree (`build.run_engine`) was one entry: every built file's bytes,
47.5 MB at 1,000 recipes x 20,000 runs (2,083 files), read, authenticated and unpickled by every
rebuild that found it, though a one-file rebuild finishes a handful of pages and keeps the rest
(`publish.Publisher.put_derived`: a page whose source, made from its built HTML's sha256, is the
one recorded is not made). Now the entry under the docs tree's key (`ENGINE_STAGE`) is the index:
each file's path and sha256 (~0.2 MB). Each file's bytes are an entry of their own under their
sha256 (`FILES_STAGE`: content-addressed, so one entry serves every build whose output holds the
same bytes, and an index never names bytes it did not store). A reuse (`reused`) asks the store
only whether every file's entry is there (one query, no entry read, `Cache.stored`) and hands out
the sha256s; the publisher derives every source from them and `EngineOutput.read` reads the
bytes of the files it makes (a page to finish, an asset the last build did not publish).

Nothing is trusted that the reference would not: each entry is authenticated as every memo entry
is (`Cache.get_or_make_many`), and its key names its bytes' sha256. An entry found bad or gone
when it is read makes the engine run again, once, into a directory of its own (`rerun`: the
publisher's tree is not touched); its output must hold the bytes the index names, or the build
fails (a `SiteError`): no file is published from an output whose index it disagrees with.
tests/test_engine_output.py holds both recoveries to a build from scratch.

Measured at 1,000 recipes x 20,000 runs (one evidence file removed, then added back; CPU-s
in-process, interleaved with the code before, two cycles each): `build.run_engine` 0.171-0.185
-> 0.014-0.015 (47.5 MB read -> the 0.25 MB index; the built pages of the 14 pages finished
again, 0.26 MB, read by `finish_pages`), `build.finish_pages` 0.137-0.177 -> 0.092-0.117 (no
built page hashed: their sha256 are the index's).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

from generator.core.cache import Cache, fingerprint
from generator.core.errors import SiteError

ENGINE_STAGE = "mkdocs"  # the engine's output for one docs tree: its index (`Index`)
FILES_STAGE = "mkdocs-files"  # each file of such an output, under its bytes' sha256
INDEX_FORMAT = "engine-index 1"  # a key part of the index entry: the entry's shape

Index = tuple[tuple[str, str], ...]  # (site-relative path, sha256) per file, sorted by path


def _parts(sha: str) -> tuple[str, str]:
    """The key parts of a file's entry: its bytes' sha256 (and this module's code)."""
    return (fingerprint("site/engine.py"), sha)


def store(cache: Cache, files: Mapping[str, bytes]) -> Index:
    """The index of the engine's output `files`, each file's bytes stored under its sha256
    unless the store holds them already (those are counted as served, unread)."""
    index = tuple(sorted((rel, hashlib.sha256(data).hexdigest()) for rel, data in files.items()))
    by_sha = {sha: files[rel] for rel, sha in index}
    shas = sorted(by_sha)
    held = cache.stored(FILES_STAGE, [_parts(s) for s in shas], sweep=True)
    missing = [sha for sha, (_, there) in zip(shas, held, strict=True) if not there]
    if missing:
        cache.get_or_make_many(
            FILES_STAGE,
            [_parts(s) for s in missing],
            lambda todo: [by_sha[missing[i]] for i in todo],
        )
    return index


@dataclass(frozen=True, slots=True)
class EngineOutput:
    """The engine's output reused from the cache: each file's sha256 by site-relative path;
    `read(paths)` gives their bytes (read from the store, or made again when an entry is bad)."""

    shas: Mapping[str, str]
    read: Callable[[Sequence[str]], dict[str, bytes]]

    def without(self, rels: Collection[str]) -> EngineOutput:
        """This output without the files at `rels`."""
        return EngineOutput({r: s for r, s in self.shas.items() if r not in rels}, self.read)


def reused(
    cache: Cache, index: Iterable[tuple[str, str]], rerun: Callable[[], Mapping[str, bytes]]
) -> EngineOutput | None:
    """The output `index` names, when the store holds an entry for each of its files (None:
    one is gone, the engine must run). `rerun` makes the whole output again (the engine run
    into a directory of its own): called, once, only if an entry turns out bad when read."""
    shas = dict(index)
    unique = sorted(set(shas.values()))
    held = cache.stored(FILES_STAGE, [_parts(s) for s in unique], sweep=True)
    if not all(there for _, there in held):
        return None
    again: dict[str, bytes] = {}

    def remade(wanted: Sequence[str]) -> list[bytes]:
        if not again:
            for data in rerun().values():
                again[hashlib.sha256(data).hexdigest()] = data
        lost = [sha for sha in wanted if sha not in again]
        if lost:
            raise SiteError(
                f"mkdocs built other bytes than the cached output of the same docs tree "
                f"({len(lost)} files differ): remove the build cache and build again"
            )
        return [again[sha] for sha in wanted]

    def read(rels: Sequence[str]) -> dict[str, bytes]:
        want = sorted({shas[rel] for rel in rels})
        got = cache.get_or_make_many(
            FILES_STAGE, [_parts(s) for s in want], lambda todo: remade([want[i] for i in todo])
        )
        by_sha = dict(zip(want, got, strict=True))
        return {rel: by_sha[shas[rel]] for rel in rels}

    return EngineOutput(shas, read)


class BuiltPages:
    """The engine's built pages (site-relative .html) as `finish_pages` uses them: each one's
    sha256 (`shas`), its bytes fetched when first asked for (`prefetch` many in one batch).
    Not a record: it holds what it fetched."""

    def __init__(self, shas: Mapping[str, str], read: Callable[[Sequence[str]], dict[str, bytes]]):
        self.shas = shas
        self._read = read
        self._held: dict[str, bytes] = {}

    @staticmethod
    def of(files: Mapping[str, bytes]) -> BuiltPages:
        """Pages held in memory already (the engine ran): each hashed once."""
        shas = {rel: hashlib.sha256(data).hexdigest() for rel, data in files.items()}
        pages = BuiltPages(shas, lambda rels: {rel: files[rel] for rel in rels})
        pages._held = dict(files)
        return pages

    def prefetch(self, rels: Iterable[str]) -> None:
        missing = sorted({rel for rel in rels if rel not in self._held})
        if missing:
            self._held.update(self._read(missing))

    def __getitem__(self, rel: str) -> bytes:
        if rel not in self._held:
            self.prefetch([rel])
        return self._held[rel]

    def __contains__(self, rel: str) -> bool:
        return rel in self.shas


__all__ = [
    "ENGINE_STAGE",
    "FILES_STAGE",
    "INDEX_FORMAT",
    "BuiltPages",
    "EngineOutput",
    "Index",
    "reused",
    "store",
]
