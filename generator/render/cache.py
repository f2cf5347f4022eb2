"""Content-addressed cache of bundle archives, so an unchanged recipe costs nothing on the next
build (DESIGN §3).

The key is sha256 over everything an archive depends on: the recipe digest (which covers the
merged values and the sha256 of every manifest file), the deployer, the GitOps target, the
archive mtime, and the renderer itself (generator version plus the source of
`generator/render/` and the bundle templates), so a change to the code invalidates the cache.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping
from pathlib import Path

from generator import __version__
from generator.atomic import write_atomic
from generator.records import RecipeResult
from generator.render.common import TEMPLATES, Deployer, GitOpsTarget, deployer_of

_HERE = Path(__file__).resolve().parent


@functools.cache
def renderer_fingerprint() -> str:
    """sha256 over the renderer's source and templates, in sorted path order."""
    h = hashlib.sha256(__version__.encode())
    for base in (_HERE, TEMPLATES):
        for p in sorted(base.rglob("*")):
            if p.is_file() and p.suffix in (".py", ".j2"):
                h.update(p.relative_to(base).as_posix().encode() + b"\0" + p.read_bytes() + b"\0")
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
    path = Path(cache_dir) / f"{render_key(result, deployer, tgt, mtime)}-{name}.tar.gz"
    sums = path.with_name(path.name + ".sha256")
    if path.is_file() and sums.is_file():
        data = path.read_bytes()
        # a corrupted or planted entry does not match the checksum written with it: rebuild it
        if hashlib.sha256(data).hexdigest() == sums.read_text(encoding="ascii").strip():
            return data
    data = archive_bytes(render_bundle(result, deployer, manifests, target=tgt), name, mtime=mtime)
    write_atomic(path, data)
    write_atomic(sums, hashlib.sha256(data).hexdigest().encode())
    return data
