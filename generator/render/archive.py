"""Reproducible `.tar.gz` of a bundle tree.

The bytes depend only on the tree and `SOURCE_DATE_EPOCH`: entries sorted, every directory
listed, mtime fixed (SOURCE_DATE_EPOCH or 0), uid/gid 0 with no user or group names, modes
normalized to 0644 (files), 0755 (scripts and directories), PAX-free ustar/GNU headers, and a gzip
header with mtime 0, no file name and a fixed OS byte.
"""

from __future__ import annotations

from collections.abc import Mapping

from generator.core import timeutil
from generator.core.archive import Member, tar_gz
from generator.core.errors import RenderError
from generator.core.records import RecipeResult
from generator.render.common import (
    MODE_EXEC,
    MODE_FILE,
    BundleTree,
    Deployer,
    check_paths,
    deployer_of,
)


def archive_name(result: RecipeResult, deployer: Deployer | str) -> str:
    """`<recipe>-<profile>-<deployer>.tar.gz`."""
    return f"{result.name}-{result.scale_profile}-{deployer_of(deployer)}.tar.gz"


def source_date_epoch(environ: Mapping[str, str] | None = None) -> int:
    """An archive's mtime: SOURCE_DATE_EPOCH (`timeutil`'s policy), 0 when unset."""
    return timeutil.source_date_epoch(environ, error=RenderError) or 0


def archive_bytes(tree: BundleTree, prefix: str, *, mtime: int | None = None) -> bytes:
    """The tree as gzip-compressed tar, every entry under `prefix/`."""
    check_paths(tuple(tree))
    top = prefix
    if not top or "/" in top or top in (".", ".."):
        raise RenderError(f"archive prefix {prefix!r} is not a single path segment")
    when = source_date_epoch() if mtime is None else mtime
    dirs = {top}
    for rel in tree:
        parts = rel.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            dirs.add(f"{top}/{'/'.join(parts[:i])}")
    entries: list[tuple[str, str | None]] = [(d, None) for d in dirs]
    entries += [(f"{top}/{p}", p) for p in tree]
    entries.sort(key=lambda e: e[0])
    members: list[Member] = []
    for name, member in entries:
        if member is None:
            members.append((name, None, 0o755))
            continue
        f = tree[member]
        members.append((name, f.data, MODE_EXEC if f.mode & 0o111 else MODE_FILE))
    return tar_gz(members, when)
