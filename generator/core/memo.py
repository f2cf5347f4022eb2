"""Derived keys: a stage's memo key is a function of the frozen record the stage receives.

A key is never written out by hand. `derive_key(stage, code, record)` hashes the canonical
form of the stage's *whole* input record: every field of every dataclass in it, recursively,
so a field added to an options record is in every key that record reaches the moment it is
added. What a field contributes is decided by its type, never by a list of names:

- plain values (None, bool, int, str, float, enums), tuples, lists and mappings: themselves;
- `bytes`: their sha256;
- a `Path`: its absolute path *and its content* (a directory: every file under it, through
  the stat memo; a file: its bytes; absent: empty), so an edited input file changes the key;
- a dataclass: its type's name and every field, except fields whose metadata says otherwise:
  `PATH_ONLY` (the path is named, its content enters through finer keys, e.g. the evidence
  tree, keyed per run) and `NOT_KEYED` (how the work is done, never what it makes: processes,
  where the cache lives, where the output goes);
- anything else is a TypeError: an input the key cannot see cannot be passed to a stage.

`Memo` is the memo at the pipeline's stage boundaries: `memo.stage(name, code, record, make)`
returns what `make()` gave for the same record before (from the build cache), or makes it.
`Memo(None)` (`--no-cache`, `status`) always makes. The cache (`core/cache.py`) stores
entries; this module derives their keys. Both know no stage.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path, PurePath
from typing import Any, Final, TypeVar

from generator.core import safeio
from generator.core.cache import Cache, digest, fingerprint, stat_tree_digest

T = TypeVar("T")

KEY: Final = "aicr-key"  # the dataclass field metadata naming how a field enters a key
PATH_ONLY: Final[Mapping[str, str]] = {KEY: "path"}
NOT_KEYED: Final[Mapping[str, str]] = {KEY: "none"}
# left out of the record's content like NOT_KEYED, because a coarser key names the field
# itself: the site build's checked-out commits are in the whole build's key
# (`site.incremental.BuildInputs`), not in the key every page shares
IN_BUILD_KEY: Final[Mapping[str, str]] = {KEY: "none", "keyed-by": "build"}


def content(where: str) -> Mapping[str, str]:
    """Field metadata for a path keyed by its content (the default), with the words that name
    it in a diagnostic when a file under it cannot be read ("the catalog")."""
    return {KEY: "content", "where": where}


Contents = Callable[[Path, str], str]  # (path, where) -> digest of what is there


def canonical(value: Any, contents: Contents, where: str = "its directory") -> Any:
    """The JSON-able canonical form of `value` (see the module). Raises TypeError for a value
    whose content a key cannot see."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, enum.Enum):
        return canonical(value.value, contents)
    if isinstance(value, float):
        return {"float": repr(value)}
    if isinstance(value, bytes):
        return {"sha256": hashlib.sha256(value).hexdigest()}
    if isinstance(value, PurePath):
        path = Path(safeio.abspath(value))
        return {"path": str(path), "content": contents(path, where)}
    if isinstance(value, (tuple, list)):
        return [canonical(v, contents) for v in value]
    if isinstance(value, Mapping):
        items = [[canonical(k, contents), canonical(v, contents)] for k, v in value.items()]
        return {
            "map": sorted(items, key=lambda kv: json.dumps(kv, sort_keys=True, allow_nan=False))
        }
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            "type": f"{type(value).__module__}.{type(value).__qualname__}",
            "fields": {
                f.name: _field(getattr(value, f.name), f, contents)
                for f in dataclasses.fields(value)
                if f.metadata.get(KEY) != "none"
            },
        }
    raise TypeError(
        f"a {type(value).__qualname__} cannot be part of a derived key: pass its digest, a "
        "Path or a frozen record of plain values"
    )


def _field(value: Any, f: dataclasses.Field[Any], contents: Contents) -> Any:
    if f.metadata.get(KEY) == "path":
        return None if value is None else str(safeio.abspath(value))
    return canonical(value, contents, f.metadata.get("where", f"the {f.name} directory"))


def derive_key(stage: str, code: str, record: Any, contents: Contents) -> str:
    """sha256 over the stage's name, the fingerprint of its code and the canonical form of
    its whole input record."""
    text = json.dumps(
        canonical(record, contents), sort_keys=True, separators=(",", ":"), allow_nan=False
    )
    return digest("derived", stage, code, text)


def path_contents(cache: Cache | None) -> Contents:
    """The content digest of a path: a directory's files (stat-memoized in `cache`: an
    unchanged file is not read again), a file's bytes (through `safeio`), "" when absent."""

    def contents(path: Path, where: str) -> str:
        if not safeio.lexists(path):
            return ""
        if safeio.is_dir(path):
            return stat_tree_digest(cache, path, where=where)
        try:
            data = safeio.read(path, where=where, limit=safeio.cap_for(path.name))
        except safeio.Refusal as r:
            from generator.core.errors import LoadError

            raise LoadError(f"cannot read {path}", [safeio.diagnostic(str(path), r)]) from None
        return hashlib.sha256(data).hexdigest()

    return contents


class Memo:
    """The memo at each stage boundary of the pipeline. Not a record: it holds the cache and
    remembers the content digests it computed during one build (each path is read once)."""

    def __init__(self, cache: Cache | None = None) -> None:
        self.cache = cache if cache is not None and cache.enabled else None
        self._contents = path_contents(self.cache)
        self._seen: dict[tuple[Path, str], str] = {}

    def contents(self, path: Path, where: str) -> str:
        found = self._seen.get((path, where))
        if found is None:
            found = self._seen[(path, where)] = self._contents(path, where)
        return found

    def key(self, stage: str, code: tuple[str, ...], record: Any) -> str:
        """The derived key of `record` for `stage`, whose code is the modules `code` (package
        paths, as `fingerprint` takes them; () is the whole generator)."""
        return derive_key(stage, fingerprint(*code), record, self.contents)

    def stage(
        self,
        stage: str,
        code: tuple[str, ...],
        record: Any,
        make: Callable[[], T],
        *,
        reused: Callable[[], None] | None = None,
    ) -> T:
        """What `make()` gave for this very record before, else `make()` (stored). `reused`
        is called when the stored value was taken. Without a cache: `make()`."""
        return self.stage_and_key(stage, code, record, make, reused=reused)[0]

    def stage_and_key(
        self,
        stage: str,
        code: tuple[str, ...],
        record: Any,
        make: Callable[[], T],
        *,
        reused: Callable[[], None] | None = None,
        usable: Callable[[T], bool] | None = None,
    ) -> tuple[T, str]:
        """`stage`, and the record's derived key ("" without a cache), which a later stage's
        record may name for this stage's result (it is a function of that key's record). A
        stored value `usable` refuses (what it names outside the cache is gone, say) is made
        again and stored over it; `reused` is then not called."""
        if self.cache is None:
            return make(), ""
        ran = False

        def made() -> T:
            nonlocal ran
            ran = True
            return make()

        key = self.key(stage, code, record)
        value = self.cache.get_or_make(stage, (key,), made, sweep=True)
        if not ran and usable is not None and not usable(value):
            value = made()  # stored where `get_or_make` stores it: one authenticated pickle
            self.cache.put_object(stage, self.cache.key(stage, "", key), "", value)
        if not ran and reused is not None:
            reused()
        return value, key

    def stage_many(
        self,
        stage: str,
        code: tuple[str, ...],
        records: Sequence[Any],
        make: Callable[[list[int]], Sequence[T]],
    ) -> tuple[list[T], list[str]]:
        """`stage` for a batch of records at a finer grain (one per recipe, say): the values
        made before for the very same records, the others made by one call `make(indices)`
        (so they are made together) and stored. Returns the values and each record's derived
        key ("" without a cache: then every value is made)."""
        if self.cache is None:
            return list(make(list(range(len(records))))), [""] * len(records)
        fp = fingerprint(*code)
        keys = [derive_key(stage, fp, r, self.contents) for r in records]
        values = self.cache.get_or_make_many(stage, [(k,) for k in keys], make, sweep=True)
        return values, keys


__all__ = [
    "NOT_KEYED",
    "PATH_ONLY",
    "Memo",
    "canonical",
    "content",
    "derive_key",
    "path_contents",
]
