"""The one way the tool reads an input file: regular files only, inside their tree, size-capped.

Every catalog, evidence, trust-root, signer-policy and checksums file is read here, so each class
of hostile file ends the same way everywhere, as a refusal the caller turns into a located
diagnostic, never a hang, a crash, unbounded memory or a disclosure:

- a link whose real path leaves its tree (the catalog, the evidence directory, a bundle) is
  refused *before* it is opened: nothing of the target is read, so nothing of it can be printed;
- anything but a regular file (a FIFO, a device such as `/dev/zero`, a socket, a directory) is
  refused by `stat` before it is opened (opening a FIFO for reading blocks until a writer comes;
  opening some devices has side effects), and again by `fstat` on the open descriptor (opened
  with `O_NONBLOCK`), so a file swapped for a FIFO in between cannot block either;
- a file larger than the cap of its kind is refused by its size, and never read past the cap
  (a file growing while it is read is caught by the bounded read).

`check` does the same without reading, so `validate` reports what `build` (which reads every
file of the catalog tree to key its cache) would refuse.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from generator.core.errors import Diagnostic, LoadError

# size caps by kind of file, in bytes
YAML_BYTES = 1024 * 1024  # catalog YAML and evidence bundles (yamlio.MAX_FILE_BYTES)
TRUST_ROOT_BYTES = 4 * 1024 * 1024  # a Sigstore trusted_root.json is ~10 KB
CHECKSUMS_BYTES = 16 * 1024 * 1024  # a bundle's checksums.txt: ~100 bytes per file
OTHER_BYTES = 64 * 1024 * 1024  # any other file of an input tree (read to key the cache)

YAML_SUFFIXES = (".yaml", ".yml")


def cap_for(name: str) -> int:
    """The size cap of a file of an input tree, by its name."""
    if name.endswith(YAML_SUFFIXES) or name.endswith(".sigstore.json"):
        return YAML_BYTES
    return OTHER_BYTES


class Refusal(LoadError):
    """Why a file was not read: a rule id and a message that names nothing outside the tree.

    A LoadError, so a refusal no caller turns into its own diagnostic still ends as a located
    error (the path as it was given) and exit 1, never a traceback."""

    def __init__(self, rule: str, message: str, path: Path | str = "") -> None:
        shown = os.fspath(path)
        super().__init__(
            f"{shown}: {message}" if shown else message,
            [Diagnostic(shown, 0, 0, "$", message, rule)] if shown else [],
        )
        self.rule = rule
        self.message = message


ESCAPE = "file.symlink-escape"
NOT_REGULAR = "file.not-regular"
TOO_LARGE = "file.too-large"
UNREADABLE = "file.unreadable"


def _inside(real: str, real_root: str) -> bool:
    return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)


def check(
    path: Path | str,
    *,
    root: Path | str | None = None,
    where: str = "its directory",
    limit: int = YAML_BYTES,
    real_root: str | None = None,
) -> tuple[str, os.stat_result]:
    """(real path, stat) of a file that `read` would read; raises `Refusal` otherwise.

    `root`: the tree the file must stay in (its real path inside the real path of `root`);
    None for a file the user named on the command line. `where` names that tree in messages
    ("the catalog"). `real_root`: `realpath(root)` when the caller has it already.
    """
    real = os.path.realpath(path)
    if root is not None or real_root is not None:
        if not _inside(real, real_root or os.path.realpath(root or ".")):
            raise Refusal(ESCAPE, f"symbolic link points outside {where}", path)
    try:
        st = os.stat(path)
    except OSError as e:
        raise Refusal(UNREADABLE, f"cannot read file: {e.strerror}", path) from None
    if not stat.S_ISREG(st.st_mode):
        raise Refusal(NOT_REGULAR, "not a regular file", path)
    if st.st_size > limit:
        raise Refusal(TOO_LARGE, f"file is {st.st_size} bytes; the limit is {limit} bytes", path)
    return real, st


def read(
    path: Path | str,
    *,
    root: Path | str | None = None,
    where: str = "its directory",
    limit: int = YAML_BYTES,
    real_root: str | None = None,
) -> bytes:
    """The bytes of a regular file (see `check`); raises `Refusal`."""
    return read_resolved(path, root=root, where=where, limit=limit, real_root=real_root)[1]


def read_resolved(
    path: Path | str,
    *,
    root: Path | str | None = None,
    where: str = "its directory",
    limit: int = YAML_BYTES,
    real_root: str | None = None,
) -> tuple[str, bytes]:
    """`read`, with the real path it resolved the file to (one resolution, not two, for a
    caller that keeps it); raises `Refusal`."""
    real, _ = check(path, root=root, where=where, limit=limit, real_root=real_root)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(real, flags | getattr(os, "O_NOCTTY", 0))
    except OSError as e:
        raise Refusal(UNREADABLE, f"cannot read file: {e.strerror}", path) from None
    with os.fdopen(fd, "rb", buffering=0) as fh:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):  # swapped since the stat
            raise Refusal(NOT_REGULAR, "not a regular file", path)
        chunks: list[bytes] = []
        size = 0
        try:
            while size <= limit:
                chunk = fh.read(limit + 1 - size)
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
        except OSError as e:
            raise Refusal(UNREADABLE, f"cannot read file: {e.strerror}", path) from None
    if size > limit:
        raise Refusal(TOO_LARGE, f"file is larger than the limit of {limit} bytes", path)
    return real, b"".join(chunks)


def diagnostic(rel: str, refusal: Refusal) -> Diagnostic:
    """A refusal as the diagnostic of `rel` (an oversized YAML file keeps its `yaml.too-large`)."""
    rule = refusal.rule
    if rule == TOO_LARGE and rel.endswith(YAML_SUFFIXES):
        rule = "yaml.too-large"
    return Diagnostic(rel, 0, 0, "$", refusal.message, rule)


def scan_tree(
    root: Path, *, where: str = "the catalog", suffixes: tuple[str, ...] = ()
) -> list[tuple[str, Refusal]]:
    """(relative path, refusal) for every file under `root` that `read` would refuse: what a
    build that reads the whole tree stops at. Directories are not followed through links."""
    out: list[tuple[str, Refusal]] = []
    real_root = os.path.realpath(root)
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            if suffixes and not name.endswith(suffixes):
                continue
            path = os.path.join(dirpath, name)
            try:
                check(path, where=where, limit=cap_for(name), real_root=real_root)
            except Refusal as r:
                out.append((os.path.relpath(path, root).replace(os.sep, "/"), r))
    return out


__all__ = [
    "CHECKSUMS_BYTES",
    "OTHER_BYTES",
    "TRUST_ROOT_BYTES",
    "YAML_BYTES",
    "Refusal",
    "cap_for",
    "check",
    "diagnostic",
    "read",
    "read_resolved",
    "scan_tree",
]
