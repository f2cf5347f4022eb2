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
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from generator import __version__
from generator.core import safeio
from generator.core.atomic import write_atomic
from generator.core.errors import Diagnostic, LoadError

MAGIC = b"AICR-CACHE 1\n"
DEFAULT_DIR = Path(".cache")
PACKAGE = Path(__file__).resolve().parents[1]  # the generator package


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


def tree_digest(
    root: Path,
    suffixes: tuple[str, ...] = (),
    memo: dict[str, list[Any]] | None = None,
    *,
    shown: str = "",
    where: str = "its directory",
) -> str:
    """sha256 over every regular file under `root` (relative path + content digest) and every
    symbolic link's target text, sorted; "" if absent.

    Files are read through `safeio` (regular files only, inside `root`, size-capped by kind): a
    FIFO, a device, a link leaving the tree or an oversized file is a LoadError naming each
    (`shown` + the path below `root`), the same diagnostics `validate` gives, never a hang.

    With `memo` (relative path -> [size, mtime_ns, inode, sha256], updated in place), a file
    whose size, mtime and inode are unchanged is not read again, as git's index does; files
    modified in the last two seconds are always read (a write within the clock's granularity
    could otherwise go unseen).
    """
    if not root.exists():
        return ""
    real_root = os.path.realpath(root)
    files: list[tuple[str, str]] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in filenames:
            if not suffixes or name.endswith(suffixes):
                path = os.path.join(dirpath, name)
                files.append((os.path.relpath(path, root).replace(os.sep, "/"), path))
        for name in dirnames:  # a link to a directory is not followed: its target text counts
            path = os.path.join(dirpath, name)
            if os.path.islink(path):
                files.append((os.path.relpath(path, root).replace(os.sep, "/"), path))
    files.sort()
    recent = time.time_ns() - 2_000_000_000
    h = hashlib.sha256()
    seen: dict[str, list[Any]] = {}
    problems: list[Diagnostic] = []
    for rel, path in files:
        link = os.readlink(path) if os.path.islink(path) else None
        if link is not None and os.path.isdir(path):
            h.update(f"{rel}\0link\0{link}\n".encode())
            continue
        limit = safeio.cap_for(rel)
        try:
            _, st = safeio.check(path, where=where, limit=limit, real_root=real_root)
            stamp = [st.st_size, st.st_mtime_ns, st.st_ino]
            old = memo.get(rel) if memo is not None else None
            if old is not None and old[:3] == stamp and st.st_mtime_ns < recent:
                sha = str(old[3])
            else:
                data = safeio.read(path, where=where, limit=limit, real_root=real_root)
                sha = hashlib.sha256(data).hexdigest()
        except safeio.Refusal as r:
            problems.append(safeio.diagnostic(f"{shown}{rel}", r))
            continue
        seen[rel] = [*stamp, sha]
        h.update(f"{rel}\0{sha}\0{link or ''}\n".encode())
    if problems:
        raise LoadError(f"{len(problems)} file(s) of {root} cannot be read", problems)
    if memo is not None:
        memo.clear()
        memo.update(seen)
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
        write_atomic(self.path(stage, key), data)

    # --- objects (authenticated pickles)
    def get_object(self, stage: str, key: str, fingerprint_: str) -> Any | None:
        payload = self.get(stage, key, fingerprint_, authenticated=True)
        return None if payload is None else pickle.loads(payload)  # HMAC checked first

    def put_object(self, stage: str, key: str, fingerprint_: str, value: Any) -> None:
        if self.enabled:
            data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
            self.put(stage, key, fingerprint_, data, authenticated=True)

    def sweep(self, stage: str, keep: Iterable[str]) -> int:
        """Delete the entries of `stage` not in `keep` (the keys the build just used); returns
        how many. For stages whose every entry a build reads or rewrites (pages, the page
        engine's output), so the cache does not grow with each changed catalog."""
        if not self.enabled:
            return 0
        wanted = set(keep)
        removed = 0
        for path in sorted((self.root / stage).glob("??/*")):
            if path.is_file() and path.name not in wanted and not path.name.startswith("."):
                path.unlink(missing_ok=True)
                removed += 1
        return removed


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
    """[relative path, size, mtime_ns, inode] of every file under `root`, sorted: cheap to
    compare, and enough to tell a file was replaced or rewritten since it was listed."""
    out: list[list[Any]] = []
    top = os.fspath(root)
    for dirpath, _dirnames, filenames in os.walk(top):
        below = os.path.relpath(dirpath, top)
        prefix = "" if below == "." else below.replace(os.sep, "/") + "/"
        for name in filenames:
            st = os.stat(os.path.join(dirpath, name))
            out.append([prefix + name, st.st_size, st.st_mtime_ns, st.st_ino])
    return sorted(out)


def digests_of(paths: Iterable[tuple[str, bytes]]) -> list[str]:
    """`<path>\\0<sha256>` for (path, bytes) pairs, in the given order."""
    return [f"{p}\0{hashlib.sha256(b).hexdigest()}" for p, b in paths]


# --- stage hooks --------------------------------------------------------------------------------

VERIFY_STAGE = "verify"


def verify_cached(
    files: Any,
    *,
    trust_root: Any,
    policy: Any,
    current_digests: Any,
    cache: Cache,
    jobs: int | None = None,
) -> tuple[Any, ...]:
    """`generator.evidence.verify.verify_evidence`, verifying only files the cache has not seen.

    A record depends on the file (its path and bytes), the trust root, the signer policy and the
    verifier's code; it is cached as verified *before* staleness is judged (no current digests),
    and `with_current_digests` then judges every record against this build's recipes, so a
    changed recipe never needs a re-verification. Entries are authenticated (HMAC with this
    machine's key): a cached "verified" cannot be planted by writing to `.cache/`.
    """
    from generator.evidence import verify

    fp = fingerprint("evidence", "core/records.py", "core/canonical.py", "fast")
    policy_digest = hashlib.sha256(repr(policy).encode()).hexdigest()
    keys = [
        cache.key(
            VERIFY_STAGE,
            fp,
            f.path,
            f.location or "",  # the path check judges the location below the evidence root
            hashlib.sha256(f.data).hexdigest(),
            trust_root.sha256,
            policy_digest,
        )
        for f in files
    ]
    records: list[Any] = [cache.get_object(VERIFY_STAGE, k, fp) for k in keys]
    todo = [i for i, r in enumerate(records) if r is None or r.path != files[i].path]
    if todo:
        fresh = verify.verify_evidence(
            [files[i] for i in todo],
            trust_roots=trust_root,
            policy=policy,
            current_digests={},
            jobs=jobs,
        )
        for i, record in zip(todo, fresh, strict=True):
            records[i] = record
            cache.put_object(VERIFY_STAGE, keys[i], fp, record)
    return verify.with_current_digests(records, current_digests)


BUILD_STAGE = "build"


def _versions(*dists: str) -> list[str]:
    from importlib import metadata

    out = []
    for d in dists:
        try:
            out.append(f"{d}=={metadata.version(d)}")
        except metadata.PackageNotFoundError:
            out.append(f"{d}==absent")
    return out


def inputs_key(inputs: Any, epoch: int, templates: Path, cache: Cache | None = None) -> str:
    """Digest of everything a site build reads except the evidence tree: the catalog, docs,
    templates and mkdocs.yml trees, the trust root file, the build options, the epoch, the
    generator's whole source and the versions of the engines it calls (mkdocs, its theme,
    plotly, sigstore). Pages that depend on no evidence file are keyed by this alone.

    With a cache, the content digests of unchanged catalog files (same size, mtime and inode)
    are taken from the previous build instead of reading every file again."""
    from generator.evidence.trustroot import trust_root_path

    root_file = trust_root_path(inputs.trust_root, Path(inputs.catalog))
    options = {
        "strict": inputs.strict,
        "deployers": list(inputs.deployers),
        "bundles": inputs.bundles,
        "trust_root": inputs.trust_root,
        "epoch": epoch,
    }
    # every path absolute, and part of the key: a cached stage keeps the catalog's root, which
    # must name this catalog whatever the working directory of the next build
    catalog_dir = os.path.abspath(inputs.catalog)
    catalog = _memo_digest(cache, Path(catalog_dir), (), where="the catalog")
    return digest(
        "inputs",
        fingerprint(),
        json.dumps(options, sort_keys=True),
        catalog_dir,
        os.path.abspath(inputs.evidence),
        *_versions("mkdocs", "mkdocs-material", "plotly", "sigstore", "jinja2", "pandas"),
        catalog,
        tree_digest(Path(os.path.abspath(inputs.docs))),
        tree_digest(templates),
        _optional(Path(inputs.config), safeio.OTHER_BYTES),
        _optional(root_file, safeio.TRUST_ROOT_BYTES),
    )


def _optional(path: Path, limit: int) -> bytes:
    """The bytes of an input file the user named, b"" when there is none (`safeio.read`)."""
    if not os.path.lexists(path):
        return b""
    try:
        return safeio.read(path, limit=limit)
    except safeio.Refusal as r:
        raise LoadError(f"cannot read {path}", [safeio.diagnostic(str(path), r)]) from None


def build_key(
    inputs: Any, epoch: int, templates: Path, cache: Cache | None = None, *, without: str = ""
) -> str:
    """Digest of everything a site build reads: `inputs_key` (pass it as `without` when it is
    already known) and the evidence tree (stat-memoized like the catalog)."""
    base = without or inputs_key(inputs, epoch, templates, cache)
    # .yaml: upstream pointer files and allowlist.yaml (generator.evidence.upstream), whose
    # records also depend on the OCI cache and the environment (state_key)
    evidence_dir = Path(os.path.abspath(inputs.evidence))
    evidence = _memo_digest(
        cache,
        evidence_dir,
        (".sigstore.json", ".yaml"),
        shown=f"{evidence_dir.name}/",
        where="the evidence directory",
    )
    from generator.evidence.upstream import state_key

    return digest(BUILD_STAGE, base, evidence, state_key(evidence_dir))


MEMO_STAGE = "stat"


def _memo_digest(
    cache: Cache | None,
    root: Path,
    suffixes: tuple[str, ...],
    *,
    shown: str = "",
    where: str = "its directory",
) -> str:
    """`tree_digest` of `root` with its stat memo kept in the cache (one entry per directory)."""
    if cache is None or not cache.enabled:
        return tree_digest(root, suffixes, shown=shown, where=where)
    key, fp = digest(MEMO_STAGE, str(root.resolve()), *suffixes), fingerprint("core/cache.py")
    raw = cache.get(MEMO_STAGE, key, fp)
    try:
        memo = json.loads(raw) if raw is not None else {}
    except ValueError:
        memo = {}
    memo = memo if isinstance(memo, dict) else {}
    before = dict(memo)
    result = tree_digest(root, suffixes, memo, shown=shown, where=where)
    if memo != before:
        cache.put(MEMO_STAGE, key, fp, json.dumps(memo, separators=(",", ":")).encode())
    return result


def unchanged_build(cache: Cache, out: Path, key: str) -> dict[str, Any] | None:
    """The report of the build recorded under `key`, if `out` is still exactly what it wrote."""
    if not cache.enabled or not out.is_dir():
        return None
    fp = fingerprint()
    stored = cache.get(BUILD_STAGE, digest(str(out.resolve())), fp, authenticated=True)
    if stored is None:
        return None
    try:
        doc = json.loads(stored)
    except ValueError:
        return None
    if doc.get("key") != key or doc.get("listing") != tree_listing(out):
        return None
    report: dict[str, Any] = doc["report"]
    return report


def record_build(
    cache: Cache,
    out: Path,
    key: str,
    report: dict[str, Any],
    sums: dict[str, str] | None = None,
) -> None:
    """Remember that `out` is the build of `key` (with its file listing, to notice edits, and
    the sha256 of the files the build published, so the next build can reuse them)."""
    doc = {"key": key, "listing": tree_listing(out), "report": report, "sha256": sums or {}}
    cache.put(
        BUILD_STAGE,
        digest(str(out.resolve())),
        fingerprint(),
        json.dumps(doc, sort_keys=True).encode(),
        authenticated=True,  # a planted entry must not make a build skip
    )


def previous_files(cache: Cache, out: Path) -> dict[str, tuple[int, int, int, str]]:
    """What the last recorded build of `out` published: relative path -> (size, mtime_ns,
    inode, sha256) as recorded. A file whose stat still matches holds those bytes (the record
    is authenticated, so the list cannot be planted); anything else is unknown."""
    if not cache.enabled or not out.is_dir():
        return {}
    stored = cache.get(BUILD_STAGE, digest(str(out.resolve())), fingerprint(), authenticated=True)
    try:
        doc = json.loads(stored) if stored is not None else {}
    except ValueError:
        return {}
    sums = doc.get("sha256") if isinstance(doc, dict) else None
    listing = doc.get("listing") if isinstance(doc, dict) else None
    if not isinstance(sums, dict) or not isinstance(listing, list):
        return {}
    out_files: dict[str, tuple[int, int, int, str]] = {}
    for entry in listing:
        if isinstance(entry, list) and len(entry) == 4 and isinstance(sums.get(entry[0]), str):
            out_files[entry[0]] = (int(entry[1]), int(entry[2]), int(entry[3]), sums[entry[0]])
    return out_files


__all__ = [
    "Cache",
    "CacheStats",
    "build_key",
    "digest",
    "fingerprint",
    "inputs_key",
    "machine_key",
    "previous_files",
    "record_build",
    "tree_digest",
    "unchanged_build",
    "verify_cached",
]
