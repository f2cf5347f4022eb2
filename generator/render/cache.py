"""Content-addressed cache of bundle archives, so an unchanged recipe costs nothing on the next
build (DESIGN §3).

The key is sha256 over everything an archive depends on: the recipe digest (which covers the
merged values and the sha256 of every manifest file), the deployer, the GitOps target, the
archive mtime, and the renderer itself (generator version plus the source of
`generator/render/`, the bundle templates and `generator/catalog/rules.py`, whose bundler rules
are not all in the digest), so a change to the code invalidates the cache.

The archives are entries of the build cache's store (`generator.core.cache.Cache`, stage
`ARCHIVE_STAGE`, keyed by the render key), stored authenticated: an entry's header names the
archive's sha256 under an HMAC with this machine's cache key (`core.cache.machine_key`, kept
outside the cache directory). The site publishes these archives as downloads, so an entry
written by anyone else (a restored CI cache, a pull request's job) is not trusted, whatever
checksum it comes with: it is rendered again and replaced. A build that links the previous
site's copy of an unchanged archive needs its sha256 and size (the download records show
them), not its bytes, so `held_archives` gives them from the entries' headers alone
(`Cache.heads`); the bytes are read, and checked against the header's sha256, only when they
are published anew (`SealedArchive.content`).

Issue 29, fifteenth round: the archives were files of their own in `.cache/bundles/` (the
archive, and beside it a `.digest` file sealing its sha256 and size), written by the render
workers: 16,000 files created by a cold build at 1,000 recipes, ~2.4 CPU-s of its samples
(py-spy, `--jobs 1`: the files written 2.39, the seals made 0.37). Now the workers render, and the
build's process stores the archives in its store's transactions, which a cold build writes
anyway; the directory is no longer made (`core.cache.remove_legacy_dirs` removes it).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from generator import __version__
from generator.core import safeio
from generator.core.cache import Cache
from generator.core.errors import RenderError
from generator.core.records import RecipeResult
from generator.render.common import TEMPLATES, Deployer, GitOpsTarget, deployer_of

_HERE = safeio.resolve(Path(__file__)).parent
_FAST = _HERE.parent / "fast"  # the YAML writer the renderer calls
_ARCHIVE = _HERE.parent / "core" / "archive.py"  # and the tar writer
# the upstream rules bundled.py applies without changing the recipe's digest (which releases
# wait for readiness): a change to them changes the bundles
_RULES = _HERE.parent / "catalog" / "rules.py"
ARCHIVE_STAGE = "bundle-archives"  # the build cache's stage holding the archives


@functools.cache
def renderer_fingerprint() -> str:
    """sha256 over the renderer's source (with generator/fast and the tar writer,
    core/archive.py) and templates, in sorted path order."""
    h = hashlib.sha256(__version__.encode())
    for base in (_HERE, _FAST, TEMPLATES):
        for rel, data in safeio.files(base, where="the renderer", suffixes=(".py", ".j2")):
            h.update(rel.encode() + b"\0" + data + b"\0")
    for name, path in (("catalog/rules.py", _RULES), ("core/archive.py", _ARCHIVE)):
        data = safeio.read(path, root=path.parent, where="the renderer", limit=safeio.OTHER_BYTES)
        h.update(name.encode() + b"\0" + data + b"\0")
    return h.hexdigest()


def render_key(
    result: RecipeResult, deployer: Deployer | str, target: GitOpsTarget, mtime: int
) -> str:
    parts = (
        result.digest,
        str(deployer_of(deployer)),
        target.repo_url,
        target.revision,
        target.path,
        str(mtime),
        renderer_fingerprint(),
    )
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def cached_archive(
    result: RecipeResult,
    deployer: Deployer | str,
    manifests: Mapping[str, bytes],
    *,
    cache: Cache | None,
    target: GitOpsTarget | None = None,
    mtime: int = 0,
) -> bytes:
    """The archive of (result, deployer), from `cache` when an identical one was stored under
    this machine's key; else rendered (`render_archive`) and stored."""
    tgt = target or GitOpsTarget()
    if cache is None or not cache.enabled:
        return render_archive(result, deployer, manifests, target=tgt, mtime=mtime)
    key = render_key(result, deployer, tgt, mtime)
    stored = cache.get(ARCHIVE_STAGE, key, "", authenticated=True)
    if stored is not None:
        return stored
    data = render_archive(result, deployer, manifests, target=tgt, mtime=mtime)
    store_archives(cache, [(key, data)])
    return data


def render_archive(
    result: RecipeResult,
    deployer: Deployer | str,
    manifests: Mapping[str, bytes],
    *,
    target: GitOpsTarget | None = None,
    mtime: int = 0,
) -> bytes:
    """The archive of (result, deployer), rendered (what a render worker makes)."""
    from generator.render import archive_bytes, archive_name, render_bundle

    name = archive_name(result, deployer).removesuffix(".tar.gz")
    bundle = render_bundle(result, deployer, manifests, target=target or GitOpsTarget())
    return archive_bytes(bundle, name, mtime=mtime)


def held_archives(cache: Cache, keys: Sequence[str]) -> dict[str, tuple[str, int]]:
    """The sha256 and size of each archive under `keys` (render keys) that `cache` holds
    under this machine's key, from the entries' headers alone (`Cache.heads`)."""
    return cache.heads(ARCHIVE_STAGE, keys, "")


def store_archives(cache: Cache, items: Iterable[tuple[str, bytes]]) -> None:
    """Store archives (render key, bytes), authenticated, in transactions of about
    `WRITE_BYTES` each (the entries of one batch are held until it is written)."""
    from generator.core.cache import WRITE_BYTES

    batch: list[tuple[str, bytes]] = []
    held = 0
    for key, data in items:
        batch.append((key, data))
        held += len(data)
        if held >= WRITE_BYTES:
            cache.put_many(ARCHIVE_STAGE, "", batch, authenticated=True)
            batch, held = [], 0
    cache.put_many(ARCHIVE_STAGE, "", batch, authenticated=True)


@dataclass(frozen=True, slots=True)
class SealedArchive:
    """An archive the cache holds, known by its entry's sealed header: its sha256 and size,
    without its bytes. `content()` reads them (checked against the header), or, when the entry
    no longer holds them, calls `again` (which renders the archive again, and stores it); bytes
    whose sha256 or size are not the sealed ones are refused (RenderError), never published."""

    sha256: str
    size: int
    key: str
    cache: Cache = field(compare=False, repr=False)
    again: Callable[[], bytes] = field(compare=False, repr=False)

    def content(self) -> bytes:
        data = self.cache.get(ARCHIVE_STAGE, self.key, "", authenticated=True)
        if data is None:
            data = self.again()
        if len(data) != self.size or hashlib.sha256(data).hexdigest() != self.sha256:
            raise RenderError(
                f"the archive under render key {self.key} is not the one its sealed digest "
                f"names (sha256 {self.sha256}, {self.size} bytes); build again with --no-cache"
            )
        return data
