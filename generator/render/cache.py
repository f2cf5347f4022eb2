"""Content-addressed cache of bundle archives, so an unchanged recipe costs nothing on the next
build (DESIGN §3).

The key is sha256 over everything an archive depends on: the recipe digest (which covers the
merged values and the sha256 of every manifest file), the deployer, the GitOps target, the
archive mtime, and the renderer itself (generator version plus the source of
`generator/render/`, the bundle templates and `generator/catalog/rules.py`, whose bundler rules
are not all in the digest), so a change to the code invalidates the cache.

Each archive is stored with its sealed digest (`<entry>.digest`: the archive's sha256 and size,
with an HMAC-SHA256 of the key, sha256 and size under this machine's cache key,
`generator.core.cache.machine_key`, kept outside the cache directory): the site publishes these
archives as downloads, so an entry written by anyone else (a restored CI cache, a pull request's
job) is not trusted, whatever checksum it comes with. An archive is taken from the cache only
when its digest's HMAC is this machine's for its key and its bytes have that sha256 and size
(`_sealed_bytes`); a corrupted, truncated or foreign entry, or one without a digest, is
rendered again and replaced. A build that links the previous site's copy of an unchanged
archive needs its sha256 and size (the download records show them), not its bytes, so
`sealed_archive` gives them from the digest alone; the bytes are read (and checked against the
digest) only when they are published anew (`SealedArchive.content`).

Issue 29 (cold build): the digest is the archive's only seal. Until then a second file beside
it (`<entry>.hmac`, an HMAC of the key and the archive's bytes) sealed the bytes and the digest
sealed their sum: an HMAC over (key, sha256, size) checked against the bytes' sha256 is as
strong as one over the bytes (forging either needs the machine's key, or bytes with a given
sha256), and a file fewer an archive is 8,000 files fewer created by a cold build at 1,000
recipes. Measured: writing 1,600 archives' files (10 KB archives) in one process, five
interleaved rounds on the loaded 2-core machine: archive + seal + digest 1.29 s (median, user +
sys; sys 0.99-1.24), archive + digest 0.95 s (sys 0.72-0.97): about 0.2 ms an archive, most of
it the system time of creating a file, so about 1.7 CPU-s at 1,000 recipes. Since then a new
entry's two files are written under their own names (`atomic.write_new_group`: no temporary
created and renamed; an existing file is still replaced atomically): a reader takes neither
unchecked (a partly written archive fails its digest's sha256 and size, a partly written
digest its HMAC, and the digest is written after the archive), so a killed build leaves an
entry that is rendered again. Measured in `write_new_group`'s docstring (0.2 ms an archive
under load -> 0.15; about 0.3 to 1 CPU-s at 8,000 archives).
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import os
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from generator import __version__
from generator.core import safeio
from generator.core.atomic import remove, write_new_group
from generator.core.errors import RenderError
from generator.core.records import RecipeResult
from generator.render.common import TEMPLATES, Deployer, GitOpsTarget, deployer_of

_HERE = safeio.resolve(Path(__file__)).parent
_FAST = _HERE.parent / "fast"  # the YAML writer the renderer calls
_ARCHIVE = _HERE.parent / "core" / "archive.py"  # and the tar writer
# the upstream rules bundled.py applies without changing the recipe's digest (which releases
# wait for readiness): a change to them changes the bundles
_RULES = _HERE.parent / "catalog" / "rules.py"
DIGEST = ".digest"  # beside an archive: its sealed sha256 and size


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
    cache_dir: Path | None,
    target: GitOpsTarget | None = None,
    mtime: int = 0,
    looked: bool = False,
) -> bytes:
    """The archive of (result, deployer), from `cache_dir` when an identical one was built.

    `looked`: the caller has just found no entry under this machine's seal (`sealed_archive`,
    as the render stage does before it hands the archive to a worker), so the cache is not
    asked again: the archive is rendered and stored. (Should another build have stored it
    since, the same bytes are rendered and replace it.) Measured: `stored_archive` of the
    1,600 archives of 200 x 4,000 in an empty cache directory, one process, process_time:
    0.024-0.029 CPU-s (about 0.13 at 8,000 archives, more when the disk is busy)."""
    from generator.render import archive_bytes, archive_name, render_bundle

    tgt = target or GitOpsTarget()
    name = archive_name(result, deployer).removesuffix(".tar.gz")
    if cache_dir is None:
        return archive_bytes(
            render_bundle(result, deployer, manifests, target=tgt), name, mtime=mtime
        )
    key = render_key(result, deployer, tgt, mtime)
    if not looked:
        stored = _sealed_bytes(Path(cache_dir) / _entry_name(key, result, deployer), key, cache_dir)
        if stored is not None:
            return stored
    entry = _entry_name(key, result, deployer)
    data = archive_bytes(render_bundle(result, deployer, manifests, target=tgt), name, mtime=mtime)
    line, _ = _digest_line(key, data)
    # the archive, then its digest (which seals it), the cache directory opened once for the
    # two; each written under its name when new (a reader checks both: `_sealed_bytes`),
    # else replaced atomically (`write_new_group`)
    write_new_group(cache_dir, ((entry, data), (entry + DIGEST, line)), root=cache_dir)
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
    return _sealed_bytes(Path(cache_dir) / _entry_name(key, result, deployer), key, cache_dir)


@dataclass(frozen=True, slots=True)
class SealedArchive:
    """An archive the cache holds, known by its sealed digest: its sha256 and size, without
    its bytes. `content()` reads them (checked against the archive's seal), or, when the entry
    no longer holds them, calls `again` (which renders the archive again, and stores it); bytes
    whose sha256 or size are not the sealed ones are refused (RenderError), never published."""

    sha256: str
    size: int
    path: Path
    key: str
    cache_dir: Path
    again: Callable[[], bytes] = field(compare=False, repr=False)

    def content(self) -> bytes:
        data = _sealed_bytes(self.path, self.key, self.cache_dir)
        if data is None:
            data = self.again()
        if len(data) != self.size or hashlib.sha256(data).hexdigest() != self.sha256:
            raise RenderError(
                f"{self.path.name}: the archive is not the one its sealed digest names "
                f"(sha256 {self.sha256}, {self.size} bytes); remove the entry and build again"
            )
        return data


def sealed_archive(
    result: RecipeResult,
    deployer: Deployer | str,
    again: Callable[[], bytes],
    *,
    cache_dir: Path,
    target: GitOpsTarget | None = None,
    mtime: int = 0,
) -> SealedArchive | None:
    """The archive of (result, deployer) as `cache_dir` holds it, known by its sealed digest
    (its bytes not read: one small file and a stat), or None when the cache holds no archive
    under this machine's seal (an entry without a digest, or whose digest is not this
    machine's, is not in the cache). `again()` makes the bytes should the entry not hold them
    when `SealedArchive.content` is asked for them."""
    tgt = target or GitOpsTarget()
    key = render_key(result, deployer, tgt, mtime)
    path = Path(cache_dir) / _entry_name(key, result, deployer)
    known = _read_digest(path, key)
    if known is None:
        return None
    sha, size = known
    return SealedArchive(sha, size, path, key, cache_dir, again)


def _sealed_bytes(path: Path, key: str, cache_dir: Path) -> bytes | None:
    """The archive at `path` when its digest (`.digest`) is this machine's for `key` and the
    bytes have the sha256 and size it seals, else None."""
    known = _read_digest(path, key)
    if known is None:
        return None
    try:
        data = safeio.read(path, root=cache_dir, limit=safeio.ARCHIVE_BYTES)
    except safeio.Refusal:
        return None
    sha, size = known
    if len(data) == size and hmac.compare_digest(hashlib.sha256(data).hexdigest(), sha):
        return data
    return None


def _digest_mac(key: str, sha: str, size: int) -> str:
    message = f"digest\0{key}\0{sha}\0{size}".encode()
    return hmac.new(_secret(_key_path()), message, hashlib.sha256).hexdigest()


def _digest_line(key: str, data: bytes) -> tuple[bytes, tuple[str, int]]:
    """The sealed digest of the archive `data` (the `.digest` file's line) and its (sha256,
    size)."""
    sha, size = hashlib.sha256(data).hexdigest(), len(data)
    return f"{sha} {size} {_digest_mac(key, sha, size)}\n".encode(), (sha, size)


def _read_digest(path: Path, key: str) -> tuple[str, int] | None:
    """The sealed (sha256, size) of the archive at `path`, when its digest is this machine's
    for `key` and the archive is still a regular file of that size; else None."""
    try:
        fields = safeio.read_own(path.with_name(path.name + DIGEST), limit=4096).split()
        st = safeio.lstat(path)
    except (OSError, safeio.Refusal):
        return None
    if len(fields) != 3 or not fields[1].isdigit():
        return None
    sha, size, mac = fields[0].decode("ascii", "replace"), int(fields[1]), fields[2]
    if not hmac.compare_digest(_digest_mac(key, sha, size).encode(), mac):
        return None
    if not stat.S_ISREG(st.st_mode) or st.st_size != size:
        return None
    return sha, size


def entry_name(
    result: RecipeResult, deployer: Deployer | str, target: GitOpsTarget, mtime: int
) -> str:
    """The file name of the archive of (result, deployer) in the cache directory."""
    return _entry_name(render_key(result, deployer, target, mtime), result, deployer)


def entry_and_key(
    result: RecipeResult, deployer: Deployer | str, target: GitOpsTarget, mtime: int
) -> tuple[str, str]:
    """The file name of the archive of (result, deployer) in the cache directory, and its
    render key (which its seals are made with)."""
    key = render_key(result, deployer, target, mtime)
    return _entry_name(key, result, deployer), key


def _entry_name(key: str, result: RecipeResult, deployer: Deployer | str) -> str:
    from generator.render import archive_name

    return f"{key}-{archive_name(result, deployer).removesuffix('.tar.gz')}.tar.gz"


@functools.cache
def _secret(path: Path) -> bytes:
    from generator.core.cache import machine_key

    return machine_key(path)


def _key_path() -> Path:
    """`core.cache.key_path()`, made once for each value of the variables it reads: a cold
    build seals 8,000 archives, and making the path (`Path.home()`, three `Path`s) took 0.34
    s of them (py-spy, one process, 1,000 x 20,000)."""
    from generator.core import envvars

    names = ("AICR_CATALOG_CACHE_KEY", "XDG_CACHE_HOME", "HOME")
    return _key_path_for(tuple(envvars.get(n) for n in names))


@functools.lru_cache(maxsize=8)
def _key_path_for(_environment: tuple[str | None, ...]) -> Path:
    from generator.core.cache import key_path

    return key_path()


def sweep(cache_dir: Path, used: set[str]) -> int:
    """Delete archives (and their digests) in `cache_dir` whose file names are not in `used`,
    and the `.hmac` seals written before the digest sealed the archive alone:
    a build keeps the archives it used, so the cache does not grow with every catalog change.
    The names come from `safeio.names` (the names alone, no entry object per name): 0.009
    CPU-s for 15,000 names against 0.011 listing an entry per name, as `safeio.scan` does
    (best of 15)."""
    removed = 0
    listed = safeio.names(cache_dir)  # names only: no Path per entry, no sort
    names = [n for n in listed if ".tar.gz" in n and not n.startswith(".")]
    for name in names:
        base = name.removesuffix(".hmac").removesuffix(DIGEST).removesuffix(".sha256")
        if base not in used or name.endswith(".hmac"):  # a seal no longer written (issue 29)
            remove(os.path.join(cache_dir, name))  # gone already: fine (a concurrent sweep)
            removed += 1
    return removed
