"""Reproducible `.tar.gz` of a bundle tree.

The bytes depend only on the tree and `SOURCE_DATE_EPOCH`: entries sorted, every directory
listed, mtime fixed (SOURCE_DATE_EPOCH or 0), uid/gid 0 with no user or group names, modes
normalized to 0644 (files), 0755 (scripts and directories), PAX-free ustar/GNU headers, and a gzip
header with mtime 0, no file name and a fixed OS byte.
"""

from __future__ import annotations

import struct
import tarfile
import zlib
from collections.abc import Mapping

from generator.core import timeutil
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


def _info(name: str, mtime: int, *, directory: bool, mode: int, size: int = 0) -> tarfile.TarInfo:
    ti = tarfile.TarInfo(name)
    ti.type = tarfile.DIRTYPE if directory else tarfile.REGTYPE
    ti.mode = mode
    ti.size = size
    ti.mtime = mtime
    ti.uid = ti.gid = 0
    ti.uname = ti.gname = ""
    return ti


_ENCODING = tarfile.ENCODING  # what tarfile.open() encodes names with
_ERRORS = "surrogateescape"
_BLOCK = tarfile.BLOCKSIZE
_RECORD = tarfile.RECORDSIZE
_OCTAL_11 = 8**11  # the largest size or mtime an 11-digit octal field holds, plus one
# the fixed middle of a GNU header: linkname, magic, uname, gname, devmajor, devminor, prefix
_FIXED = bytes(100) + tarfile.GNU_MAGIC + bytes(32 + 32 + 8 + 8 + 155)
_TAIL = bytes(_BLOCK - 500)


def _block(raw: bytes, mode: int, size: int, mtime: int, kind: bytes) -> bytes:
    """One 512-byte header as `TarInfo._create_header` builds it for a GNU archive: `raw` is the
    encoded name (cut to 100 bytes), uid and gid 0, no link, user or group name."""
    block = b"".join(
        (
            raw[:100],
            bytes(100 - len(raw[:100])),
            b"%07o\x00" % (mode & 0o7777),
            b"0000000\x00" * 2,  # uid, gid
            b"%011o\x00" % size,
            b"%011o\x00" % mtime,
            b"        ",  # the checksum field counts as spaces while summing
            kind,
            _FIXED,
            _TAIL,
        )
    )
    return b"%s%06o\x00%s" % (block[:148], sum(block), block[155:])


def _header(name: str, mtime: int, *, directory: bool, mode: int, size: int = 0) -> bytes:
    """The header `tarfile` writes for `_info(...)` in GNU format, built directly: a name longer
    than 100 bytes is preceded by a `././@LongLink` record holding it. Numbers beyond 11 octal
    digits (base-256 fields) are left to `TarInfo.tobuf` itself."""
    if not (0 <= size < _OCTAL_11 and 0 <= mtime < _OCTAL_11):
        info = _info(name, mtime, directory=directory, mode=mode, size=size)
        return info.tobuf(tarfile.GNU_FORMAT, _ENCODING, _ERRORS)
    if directory and not name.endswith("/"):
        name += "/"
    raw = name.encode(_ENCODING, _ERRORS)
    kind = tarfile.DIRTYPE if directory else tarfile.REGTYPE
    if len(raw) <= 100:
        return _block(raw, mode, size, mtime, kind)
    long = raw + b"\x00"
    return b"".join(
        (
            _block(b"././@LongLink", 0, len(long), 0, tarfile.GNUTYPE_LONGNAME),
            long,
            bytes(-len(long) % _BLOCK),
            _block(raw, mode, size, mtime, kind),
        )
    )


def _gzip(raw: bytes) -> bytes:
    """What `gzip.GzipFile(filename="", mtime=0, compresslevel=6)` writes for `raw`, with the
    OS byte set to 255 ("unknown", the same on every platform): one deflate stream, then CRC-32
    and size."""
    z = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS, zlib.DEF_MEM_LEVEL, 0)
    body = z.compress(raw) + z.flush()
    trailer = struct.pack("<LL", zlib.crc32(raw), len(raw) & 0xFFFFFFFF)
    return b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + body + trailer


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
    out: list[bytes] = []
    offset = 0
    for name, member in entries:
        if member is None:
            head = _header(name, when, directory=True, mode=0o755)
            out.append(head)
            offset += len(head)
            continue
        f = tree[member]
        mode = MODE_EXEC if f.mode & 0o111 else MODE_FILE
        head = _header(name, when, directory=False, mode=mode, size=len(f.data))
        pad = -len(f.data) % _BLOCK
        out += (head, f.data, bytes(pad))
        offset += len(head) + len(f.data) + pad
    # two zero blocks end the archive, then zeros up to a whole record (as `tar -b20` does)
    offset += 2 * _BLOCK
    out.append(bytes(2 * _BLOCK + (-offset % _RECORD)))
    return _gzip(b"".join(out))
