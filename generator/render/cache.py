"""Content-addressed cache of bundle archives, so an unchanged recipe costs nothing on the next
build (DESIGN §3).

The key is sha256 over everything an archive depends on: the recipe digest (which covers the
merged values and the sha256 of every manifest file), the deployer, the GitOps target, the
archive mtime, and the renderer itself (generator version plus the source of
`generator/render/`, the bundle templates and `generator/catalog/rules.py`, whose bundler rules
are not all in the digest), so a change to the code invalidates the cache.

Each archive is stored with an HMAC-SHA256 of its key and bytes (`<entry>.hmac`) under this
machine's cache key (`generator.core.cache.machine_key`, kept outside the cache directory): the
site publishes these archives as downloads, so an entry written by anyone else (a restored CI
cache, a pull request's job) is not trusted, whatever checksum it comes with. A corrupted,
truncated or foreign entry is rendered again and replaced.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
from collections.abc import Mapping
from pathlib import Path

from generator import __version__
from generator.core import safeio
from generator.core.atomic import write_atomic
from generator.core.records import RecipeResult
from generator.render.common import TEMPLATES, Deployer, GitOpsTarget, deployer_of

_HERE = Path(__file__).resolve().parent
_FAST = _HERE.parent / "fast"  # the YAML writer and the tar writer the renderer calls
# the upstream rules bundled.py applies without changing the recipe's digest (which releases
# wait for readiness): a change to them changes the bundles
_RULES = _HERE.parent / "catalog" / "rules.py"


@functools.cache
def renderer_fingerprint() -> str:
    """sha256 over the renderer's source (with generator/fast) and templates, in sorted path
    order."""
    h = hashlib.sha256(__version__.encode())
    for base in (_HERE, _FAST, TEMPLATES):
        for rel, data in safeio.files(base, where="the renderer", suffixes=(".py", ".j2")):
            h.update(rel.encode() + b"\0" + data + b"\0")
    rules = safeio.read(_RULES, root=_RULES.parent, where="the renderer", limit=safeio.OTHER_BYTES)
    h.update(b"catalog/rules.py\0" + rules + b"\0")
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
    cache_dir: Path | None,
    target: GitOpsTarget | None = None,
    mtime: int = 0,
) -> bytes:
    """The archive of (result, deployer), from `cache_dir` when an identical one was built."""
    from generator.render import archive_bytes, archive_name, render_bundle

    tgt = target or GitOpsTarget()
    name = archive_name(result, deployer).removesuffix(".tar.gz")
    if cache_dir is None:
        return archive_bytes(
            render_bundle(result, deployer, manifests, target=tgt), name, mtime=mtime
        )
    stored = stored_archive(result, deployer, cache_dir=cache_dir, target=tgt, mtime=mtime)
    if stored is not None:
        return stored
    key = render_key(result, deployer, tgt, mtime)
    path = Path(cache_dir) / entry_name(result, deployer, tgt, mtime)
    seal = path.with_name(path.name + ".hmac")
    data = archive_bytes(render_bundle(result, deployer, manifests, target=tgt), name, mtime=mtime)
    write_atomic(path, data, root=cache_dir)
    write_atomic(seal, _seal(key, data).encode(), root=cache_dir)
    return data


def stored_archive(
    result: RecipeResult,
    deployer: Deployer | str,
    *,
    cache_dir: Path,
    target: GitOpsTarget | None = None,
    mtime: int = 0,
) -> bytes | None:
    """The archive of (result, deployer) as `cache_dir` holds it under this machine's seal, or
    None (absent, corrupted, truncated or planted: written without this machine's key)."""
    tgt = target or GitOpsTarget()
    key = render_key(result, deployer, tgt, mtime)
    path = Path(cache_dir) / entry_name(result, deployer, tgt, mtime)
    seal = path.with_name(path.name + ".hmac")
    if not (path.is_file() and seal.is_file()):
        return None
    try:
        data = safeio.read(path, root=cache_dir, limit=safeio.ARCHIVE_BYTES)
        sealed = safeio.read(seal, root=cache_dir, limit=4096)
    except safeio.Refusal:
        return None
    if sealed and hmac.compare_digest(_seal(key, data).encode(), sealed.strip()):
        return data
    return None


def entry_name(
    result: RecipeResult, deployer: Deployer | str, target: GitOpsTarget, mtime: int
) -> str:
    """The file name of the archive of (result, deployer) in the cache directory."""
    from generator.render import archive_name

    key = render_key(result, deployer, target, mtime)
    return f"{key}-{archive_name(result, deployer).removesuffix('.tar.gz')}.tar.gz"


@functools.cache
def _secret(path: Path) -> bytes:
    from generator.core.cache import machine_key

    return machine_key(path)


def _seal(key: str, data: bytes) -> str:
    from generator.core.cache import key_path

    mac = hmac.new(_secret(key_path()), key.encode() + b"\0" + data, hashlib.sha256)
    return mac.hexdigest()


def sweep(cache_dir: Path, used: set[str]) -> int:
    """Delete archives (and their seals) in `cache_dir` whose file names are not in `used`:
    a build keeps the archives it used, so the cache does not grow with every catalog change."""
    removed = 0
    for path in sorted(Path(cache_dir).glob("*.tar.gz*")):
        base = path.name.removesuffix(".hmac").removesuffix(".sha256")
        if base not in used:
            path.unlink(missing_ok=True)
            removed += 1
    return removed
