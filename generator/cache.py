"""A content-addressed build cache under `.cache/`: a rebuild repeats no work for unchanged inputs.

An entry is addressed by a key: sha256 over the stage name, the generator's fingerprint (its
version plus the source of the modules whose output is cached) and the digests of every input of
that piece of work. It is stored at `.cache/<stage>/<key[:2]>/<key>` as

    AICR-CACHE 1\\n{"key": ..., "stage": ..., "fingerprint": ..., "sha256": ..., "mac": ...}\\n<payload>

and read back only if the header names the same key, stage and fingerprint and the payload's
sha256 matches: a truncated, corrupted, renamed or foreign entry (another key, another generator)
is detected, deleted and recomputed, never used. `Cache(enabled=False)` (`--no-cache`) reads
nothing and writes nothing.

Entries that are trusted results rather than reproducible bytes (a verified signature) are also
authenticated: `put(..., authenticated=True)` adds an HMAC-SHA256 under a key kept *outside* the
cache directory (`$AICR_CATALOG_CACHE_KEY`, else `$XDG_CACHE_HOME/aicr-catalog/cache.key`, else
`~/.cache/aicr-catalog/cache.key`, created 0600 on first use). Whoever can write `.cache/` (a
restored CI cache, a pull request's job) cannot forge a verification result: without this
machine's key the entry is foreign and the file is verified again. Authenticated payloads are
Python pickles, and are unpickled only after the HMAC matched.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
import os
import pickle
import secrets
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from generator import __version__

MAGIC = b"AICR-CACHE 1\n"
DEFAULT_DIR = Path(".cache")
PACKAGE = Path(__file__).resolve().parent


@functools.cache
def fingerprint(*modules: str) -> str:
    """sha256 over the generator version and the source of `modules` (package-relative paths of
    files or directories, e.g. "evidence", "render", "site"); "" means the whole package."""
    h = hashlib.sha256(__version__.encode() + b"\0")
    roots = [PACKAGE / m for m in (modules or ("",))]
    for root in roots:
        paths = [root] if root.is_file() else sorted(root.rglob("*.py"))
        for p in paths:
            h.update(p.relative_to(PACKAGE).as_posix().encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def digest(*parts: str | bytes) -> str:
    """sha256 hex over parts, each length-prefixed (so no two part lists collide)."""
    h = hashlib.sha256()
    for p in parts:
        raw = p.encode() if isinstance(p, str) else p
        h.update(len(raw).to_bytes(8, "big") + raw)
    return h.hexdigest()


def tree_digest(root: Path, suffixes: tuple[str, ...] = ()) -> str:
    """sha256 over every regular file under `root` (relative path + bytes), sorted; "" if absent."""
    if not root.exists():
        return ""
    h = hashlib.sha256()
    files: list[tuple[str, Path]] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in filenames:
            if not suffixes or name.endswith(suffixes):
                path = Path(dirpath) / name
                files.append((path.relative_to(root).as_posix(), path))
    for rel, path in sorted(files):
        data = path.read_bytes()
        h.update(f"{rel}\0{len(data)}\0".encode() + data)
    return h.hexdigest()


def key_path() -> Path:
    explicit = os.environ.get("AICR_CATALOG_CACHE_KEY")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "aicr-catalog" / "cache.key"


def machine_key(path: Path | None = None) -> bytes:
    """The HMAC key of authenticated entries, created (0600) on first use."""
    path = path or key_path()
    try:
        data = path.read_bytes()
        if len(data) >= 32:
            return data
    except OSError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
    with os.fdopen(fd, "wb") as f:
        f.write(secrets.token_bytes(32))
    os.chmod(tmp, 0o600)
    try:  # another process may have created it meanwhile: keep the first one
        os.link(tmp, path)
    except FileExistsError:
        pass
    finally:
        os.unlink(tmp)
    return path.read_bytes()


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


class Cache:
    """One cache directory. Not a record: it counts what it did in `stats`."""

    def __init__(
        self, root: Path = DEFAULT_DIR, *, enabled: bool = True, secret: bytes | None = None
    ) -> None:
        self.root = Path(root)
        self.enabled = enabled
        self._secret = secret
        self.stats = CacheStats()

    # --- keys and paths
    def key(self, stage: str, fingerprint_: str, *inputs: str | bytes) -> str:
        return digest("stage", stage, fingerprint_, *inputs)

    def path(self, stage: str, key: str) -> Path:
        return self.root / stage / key[:2] / key

    def _mac(self, header: bytes, payload: bytes) -> str:
        if self._secret is None:
            self._secret = machine_key()
        return hmac.new(self._secret, header + b"\0" + payload, hashlib.sha256).hexdigest()

    # --- bytes
    def get(
        self, stage: str, key: str, fingerprint_: str, *, authenticated: bool = False
    ) -> bytes | None:
        """The payload stored under `key`, or None (absent, disabled, or a bad entry)."""
        if not self.enabled:
            return None
        path = self.path(stage, key)
        try:
            raw = path.read_bytes()
        except OSError:
            self.stats.count(self.stats.misses, stage)
            return None
        payload = self._check(raw, stage, key, fingerprint_, authenticated)
        if payload is None:
            self.stats.count(self.stats.rejected, stage)
            self.stats.count(self.stats.misses, stage)
            path.unlink(missing_ok=True)
            return None
        self.stats.count(self.stats.hits, stage)
        return payload

    def _check(
        self, raw: bytes, stage: str, key: str, fingerprint_: str, authenticated: bool
    ) -> bytes | None:
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
            bare = _header(key, stage, fingerprint_, payload)
            mac = header.get("mac")
            if not isinstance(mac, str) or not hmac.compare_digest(mac, self._mac(bare, payload)):
                return None
        return payload

    def put(
        self,
        stage: str,
        key: str,
        fingerprint_: str,
        payload: bytes,
        *,
        authenticated: bool = False,
    ) -> None:
        """Store `payload` atomically (a reader never sees half an entry)."""
        if not self.enabled:
            return
        bare = _header(key, stage, fingerprint_, payload)
        header = json.loads(bare)
        if authenticated:
            header["mac"] = self._mac(bare, payload)
        data = MAGIC + json.dumps(header, sort_keys=True).encode() + b"\n" + payload
        path = self.path(stage, key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    # --- objects (authenticated pickles)
    def get_object(self, stage: str, key: str, fingerprint_: str) -> Any | None:
        payload = self.get(stage, key, fingerprint_, authenticated=True)
        return None if payload is None else pickle.loads(payload)  # HMAC checked first

    def put_object(self, stage: str, key: str, fingerprint_: str, value: Any) -> None:
        if self.enabled:
            data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
            self.put(stage, key, fingerprint_, data, authenticated=True)


def _header(key: str, stage: str, fingerprint_: str, payload: bytes) -> bytes:
    doc = {
        "fingerprint": fingerprint_,
        "key": key,
        "sha256": hashlib.sha256(payload).hexdigest(),
        "stage": stage,
    }
    return json.dumps(doc, sort_keys=True).encode()


# --- the output tree of a finished build --------------------------------------------------------


def tree_listing(root: Path) -> list[list[Any]]:
    """[relative path, size, mtime_ns] of every file under `root`, sorted: cheap to compare."""
    out: list[list[Any]] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in filenames:
            st = os.stat(os.path.join(dirpath, name))
            rel = os.path.relpath(os.path.join(dirpath, name), root)
            out.append([rel.replace(os.sep, "/"), st.st_size, st.st_mtime_ns])
    return sorted(out)


def digests_of(paths: Iterable[tuple[str, bytes]]) -> list[str]:
    """`<path>\\0<sha256>` for (path, bytes) pairs, in the given order."""
    return [f"{p}\0{hashlib.sha256(b).hexdigest()}" for p, b in paths]


__all__ = ["Cache", "CacheStats", "digest", "fingerprint", "machine_key", "tree_digest"]
