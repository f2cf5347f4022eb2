"""The one way the tool writes a file: no link followed, nothing half-written.

Every file the tool writes (pointers, evidence bundles, statements, bundles, the site, cache
entries, baselines, pins) goes through this module, so each hostile path ends the same way,
as a `Refusal` (a located error, exit 1), never as a write somewhere else:

- `write_atomic` writes beside the target into a new temporary file (`O_CREAT | O_EXCL |
  O_NOFOLLOW`, so nothing planted at its name is opened) and renames it over the target: a
  reader, or a killed process, sees the old file or the complete new one. A target that is a
  symbolic link (or anything but a regular file) is refused, not replaced and not followed.
- With `root` (the directory the tool chose the path in: `--pointers`, an output directory,
  the cache), every directory between `root` and the file is opened one by one with
  `O_NOFOLLOW` relative to the one before (`openat`), and created when missing: a link
  planted anywhere below `root` is refused, and cannot be swapped in between a check and the
  write. Without `root`, the path's directory is the user's to name (links in it are theirs).
- `TreeWriter` writes many files into a directory the tool has just created (a site, a
  bundle), through the same `openat` walk; `append_text` appends to a file the environment
  names (`$GITHUB_STEP_SUMMARY`) without following a link; `extract_tar` unpacks a trusted
  `git archive` into a new directory with tarfile's data filter.
- `make_dirs` creates a directory the tool names (and those above it); `remove` removes one
  file (a link itself, never what it points to). A whole tree goes with `outputs.discard`.

`tests/test_boundaries.py` fails when code outside the doors writes a path another way.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import io
import os
import secrets
import shutil
import stat
import tarfile
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from types import TracebackType

from generator.core.errors import UsageError
from generator.core.safeio import Refusal

WRITE_LINK = "file.write-through-link"
WRITE_NOT_REGULAR = "file.write-not-regular"
WRITE_FAILED = "file.write-failed"

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def _link_refusal(path: Path | str) -> Refusal:
    return Refusal(
        WRITE_LINK,
        "is a symbolic link (or lies below one); refusing to write through it",
        path,
    )


def _open_child(parent: int, name: str, shown: Path, *, create: bool) -> int:
    """The directory `name` inside the open directory `parent`, never through a link."""
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent)
    except FileNotFoundError:
        if not create:
            raise
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENOTDIR):
            raise _link_refusal(shown) from None
        raise Refusal(WRITE_FAILED, f"cannot open directory: {e.strerror}", shown) from None
    with contextlib.suppress(FileExistsError):
        os.mkdir(name, 0o777, dir_fd=parent)
    return _open_child(parent, name, shown, create=False)


def _open_root(root: Path) -> int:
    try:
        root.mkdir(parents=True, exist_ok=True)
        return os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as e:
        raise Refusal(WRITE_FAILED, f"cannot open directory: {e.strerror}", root) from None


def _open_parent(path: Path, root: Path | None) -> tuple[int, str]:
    """(descriptor of the directory the file goes in, its name there)."""
    if root is None:
        return _open_root(path.parent if str(path.parent) else Path(".")), path.name
    try:
        rel = PurePosixPath(os.path.relpath(path, root).replace(os.sep, "/"))
    except ValueError:
        rel = PurePosixPath("..")
    if rel.parts[:1] == ("..",) or not rel.parts or rel.is_absolute():
        raise Refusal(WRITE_FAILED, f"lies outside {root}", path)
    fd = _open_root(root)
    shown = root
    for part in rel.parts[:-1]:
        shown = shown / part
        try:
            child = _open_child(fd, part, shown, create=True)
        finally:
            os.close(fd)
        fd = child
    return fd, rel.parts[-1]


def _check_target(dir_fd: int, name: str, path: Path) -> None:
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(st.st_mode):
        raise _link_refusal(path)
    if not stat.S_ISREG(st.st_mode):
        raise Refusal(WRITE_NOT_REGULAR, "exists and is not a regular file", path)


def write_atomic(
    path: Path | str, data: bytes, *, mode: int | None = None, root: Path | str | None = None
) -> None:
    """Replace `path` with `data` atomically, following no link (see the module's docstring).

    Missing directories are created (below `root`, one `openat` at a time). `mode` is applied
    before the rename; without it the file gets the usual 0666 less the umask. Raises
    `Refusal` (a `LoadError`: a located error, exit 1)."""
    path = Path(path)
    dir_fd, name = _open_parent(path, Path(root) if root is not None else None)
    try:
        _replace_in(dir_fd, name, data, mode, path)
    finally:
        os.close(dir_fd)


def _replace_in(dir_fd: int, name: str, data: bytes, mode: int | None, path: Path) -> None:
    """Replace `name` in the open directory `dir_fd` with `data` (a new temporary file renamed
    over it), `path` naming it in errors."""
    tmp = f".{name}.{secrets.token_hex(6)}.tmp"
    _check_target(dir_fd, name, path)
    try:
        fd = os.open(tmp, _NEW_FILE, 0o600 if mode is not None else 0o666, dir_fd=dir_fd)
    except OSError as e:
        raise Refusal(WRITE_FAILED, f"cannot write: {e.strerror}", path) from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            if mode is not None:
                os.fchmod(fh.fileno(), mode)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise


def make_dirs(path: Path | str, *, exist_ok: bool = True) -> None:
    """Create the directory `path` and any missing above it (`Path.mkdir(parents=True)`): the
    one way the tool makes a directory it names (an output's parent, the cache, a lock's
    directory). The path is the user's or the tool's own to name, so a link on the way is
    followed, as for `write_atomic` without `root`; below a directory the tool writes into,
    `TreeWriter` and `write_atomic(root=)` make directories one `openat` at a time instead.
    An existing directory is fine unless `exist_ok` is false; anything else raises `Refusal`
    naming the path (`file.write-failed`)."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=exist_ok)
    except OSError as e:
        why = "exists already" if isinstance(e, FileExistsError) else e.strerror
        raise Refusal(WRITE_FAILED, f"cannot create directory: {why}", path) from None


def remove(path: Path | str, *, missing_ok: bool = True) -> bool:
    """Remove the file `path` (True) or find nothing there (False; `FileNotFoundError` raised
    as a `Refusal` unless `missing_ok`). A link is removed itself, never followed; a directory
    is refused (`outputs.discard` removes a tree). Any other failure raises `Refusal` naming
    the path (`file.write-failed`)."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        if missing_ok:
            return False
        raise Refusal(WRITE_FAILED, "cannot remove: no such file", path) from None
    except IsADirectoryError:
        raise Refusal(WRITE_NOT_REGULAR, "is a directory, not a file", path) from None
    except OSError as e:
        if e.errno == errno.EPERM and os.path.isdir(path):  # macOS says EPERM
            raise Refusal(WRITE_NOT_REGULAR, "is a directory, not a file", path) from None
        raise Refusal(WRITE_FAILED, f"cannot remove: {e.strerror}", path) from None
    return True


def create_once(path: Path | str, data: bytes, *, mode: int = 0o600) -> bool:
    """Create `path` holding `data` unless something is there already (then False): written
    to a temporary file first and hard-linked into place, so no reader sees it half-written and
    of two processes racing, the first one wins. A link at `path` is never followed."""
    path = Path(path)
    dir_fd, name = _open_parent(path, None)
    tmp = f".{name}.{secrets.token_hex(6)}.tmp"
    try:
        fd = os.open(tmp, _NEW_FILE, 0o600, dir_fd=dir_fd)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            os.fchmod(fh.fileno(), mode)
        try:
            os.link(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd, follow_symlinks=False)
        except FileExistsError:
            return False
        finally:
            os.unlink(tmp, dir_fd=dir_fd)
        return True
    finally:
        os.close(dir_fd)


def write_text(
    path: Path | str, text: str, *, mode: int | None = None, root: Path | str | None = None
) -> None:
    """`write_atomic` of UTF-8 text."""
    write_atomic(path, text.encode("utf-8"), mode=mode, root=root)


def append_text(path: Path | str, text: str) -> None:
    """Append `text` to a regular file (created when missing), never through a link: for a file
    the environment names, such as `$GITHUB_STEP_SUMMARY`."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise _link_refusal(path) from None
        raise Refusal(WRITE_FAILED, f"cannot write: {e.strerror}", path) from None
    with os.fdopen(fd, "ab") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise Refusal(WRITE_NOT_REGULAR, "is not a regular file", path)
        fh.write(text.encode("utf-8"))


def open_lock(path: Path | str) -> int:
    """A descriptor of the lock file `path` (created when missing; a link is refused)."""
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise _link_refusal(path) from None
        raise Refusal(WRITE_FAILED, f"cannot open lock: {e.strerror}", path) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise Refusal(WRITE_NOT_REGULAR, "is not a regular file", path)
    return fd


def open_devnull() -> int:
    """A read-only descriptor of /dev/null (to park a descriptor number on)."""
    return os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)


class LockHeld(Exception):
    """`exclusive_lock`: another process holds the lock."""


_HELD_LOCKS: set[int] = set()  # descriptors of the exclusive locks this process holds


def _drop_inherited_locks() -> None:
    """In a forked worker: park the inherited descriptors of the parent's locks on /dev/null.

    A flock belongs to the open file, which a fork shares: a worker still holding the
    descriptor would keep the lock after its parent was killed, and refuse the next build.
    The descriptor is pointed at /dev/null rather than closed, so its number stays taken."""
    if not _HELD_LOCKS:
        return
    null = open_devnull()
    for fd in tuple(_HELD_LOCKS):
        with contextlib.suppress(OSError):
            os.dup2(null, fd)  # the number stays taken: nothing else can be closed by mistake
    os.close(null)
    _HELD_LOCKS.clear()


os.register_at_fork(after_in_child=_drop_inherited_locks)


@contextlib.contextmanager
def exclusive_lock(path: Path | str) -> Iterator[None]:
    """Hold an exclusive, non-blocking lock on the lock file `path` (`open_lock`: created when
    missing, a link refused) for the block; LockHeld at once when another process holds it.
    Forked workers never keep it (`_drop_inherited_locks`)."""
    fd = open_lock(path)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as e:
            raise LockHeld(str(path)) from e
        _HELD_LOCKS.add(fd)
        try:
            yield
        finally:
            _HELD_LOCKS.discard(fd)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


class TreeWriter:
    """Writes files into `root`, a directory the tool has just made (a staged site, a bundle):
    each directory below `root` is opened with `O_NOFOLLOW` relative to its parent (and kept
    open), each file is created with `O_NOFOLLOW`, so nothing is written through a link, even
    one planted while the tree is written. A context manager: `close` releases the
    directories."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)
        self._dirs: dict[str, int] = {"": _open_root(self.root)}

    def _dir(self, rel: str) -> int:
        found = self._dirs.get(rel)
        if found is not None:
            return found
        parent, _, name = rel.rpartition("/")
        if name in ("", ".", "..") or "\\" in name:
            raise Refusal(WRITE_FAILED, "is not a relative path inside the tree", rel)
        fd = _open_child(self._dir(parent), name, self.root / rel, create=True)
        self._dirs[rel] = fd
        return fd

    def _place(self, rel: str) -> tuple[int, str]:
        parent, _, name = rel.rpartition("/")
        if name in ("", ".", "..") or rel.startswith("/"):
            raise Refusal(WRITE_FAILED, "is not a relative path inside the tree", rel)
        return self._dir(parent), name

    def put(self, rel: str, data: bytes, mode: int | None = None) -> None:
        """Write `data` at `rel` (a POSIX path below the root), replacing a regular file.

        A new file (the usual case: the tree was just made) is created with `O_CREAT |
        O_EXCL | O_NOFOLLOW`, which opens nothing that is there already, a link (dangling or
        not) or a directory included; then no `lstat` is needed beforehand, and the path is
        built as a `Path` only for a message. Anything at `rel` (`EEXIST`) goes the checked way
        of `put_reference`: a regular file is replaced, a link or anything else refused.
        Written with `os.write` on the descriptor, not through a buffered file object.

        Reference: `put_reference` (tests/test_mutants_atomic.py holds the trees and the
        refusals equal). Measured writing the 15,211 files (292 MB) of a cold build's site at
        200 x 4,000 into a new tree (one process, `os.times`, three runs each of three
        interleaved processes, load ~4): user CPU 0.17-0.29 -> 0.04-0.09 s; the system time
        (2.6-3.1 s either way, creating the files and copying their bytes) is within its
        noise, which the `lstat` saved (one a file) is not above."""
        dir_fd, name = self._place(rel)
        try:
            fd = os.open(name, _NEW_FILE, 0o666, dir_fd=dir_fd)
        except FileExistsError:
            self._replace(rel, dir_fd, name, data, mode)
            return
        except OSError as e:
            raise self._refusal(e, rel) from None
        try:
            view = memoryview(data)
            done = os.write(fd, view)
            while done < len(view):
                done += os.write(fd, view[done:])
            if mode is not None:
                os.fchmod(fd, mode)
        finally:
            os.close(fd)

    def _refusal(self, e: OSError, rel: str) -> Refusal:
        if e.errno == errno.ELOOP:
            return _link_refusal(self.root / rel)
        return Refusal(WRITE_FAILED, f"cannot write: {e.strerror}", self.root / rel)

    def put_reference(self, rel: str, data: bytes, mode: int | None = None) -> None:
        """`put` as it was: the target checked with `lstat` (`_check_target`), then opened
        with `O_CREAT | O_TRUNC | O_NOFOLLOW` and written through a file object."""
        dir_fd, name = self._place(rel)
        self._replace(rel, dir_fd, name, data, mode)

    def _replace(self, rel: str, dir_fd: int, name: str, data: bytes, mode: int | None) -> None:
        _check_target(dir_fd, name, self.root / rel)
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(name, flags, 0o666, dir_fd=dir_fd)
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise _link_refusal(self.root / rel) from None
            raise Refusal(WRITE_FAILED, f"cannot write: {e.strerror}", self.root / rel) from None
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            if mode is not None:
                os.fchmod(fd, mode)

    def remove(self, rel: str) -> None:
        """Remove the file at `rel`, if any (a link is removed, never followed)."""
        dir_fd, name = self._place(rel)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name, dir_fd=dir_fd)

    def link_from(self, source: Path | str, rel: str) -> None:
        """Hard-link the regular file `source` (not followed if a link) at `rel`; OSError if
        the file system refuses."""
        dir_fd, name = self._place(rel)
        os.link(source, name, dst_dir_fd=dir_fd, follow_symlinks=False)

    def move_in(self, source: str, rel: str) -> bool:
        """Rename the file `source` (a staged file on the same file system, not followed if
        a link) to `rel`, replacing a regular file there (a link or a directory at `rel` is
        refused, never written through). False when `source` is gone: moved already (a
        journal completed a second time, `generator.core.outputs`)."""
        dir_fd, name = self._place(rel)
        _check_target(dir_fd, name, self.root / rel)
        try:
            os.rename(source, name, dst_dir_fd=dir_fd)
        except FileNotFoundError:
            return False
        except OSError as e:
            raise Refusal(WRITE_FAILED, f"cannot move into place: {e.strerror}", rel) from None
        return True

    def discard(self, rel: str) -> bool:
        """Remove the file at `rel` if there is one (False when it, or a directory above it,
        is missing); no directory is created, and a link on the way is never followed (what
        lies below it is not this tree's)."""
        parent, _, name = rel.rpartition("/")
        if name in ("", ".", "..") or rel.startswith("/"):
            raise Refusal(WRITE_FAILED, "is not a relative path inside the tree", rel)
        dir_fd = self._existing(parent)
        if dir_fd is None:
            return False
        try:
            os.unlink(name, dir_fd=dir_fd)
        except (FileNotFoundError, NotADirectoryError):
            return False
        except IsADirectoryError:
            raise Refusal(WRITE_NOT_REGULAR, "is a directory, not a file", rel) from None
        return True

    def prune(self, rel: str) -> None:
        """Remove the directory `rel` and each directory above it (below the root) while it is
        empty; its descriptor is closed first, so nothing is ever written into it again."""
        while rel:
            parent, _, name = rel.rpartition("/")
            up = self._existing(parent)
            if up is None:
                return
            fd = self._dirs.pop(rel, None)
            if fd is not None:
                os.close(fd)
            try:
                os.rmdir(name, dir_fd=up)
            except OSError:  # not empty (or not there): the directories above it stay too
                return
            rel = parent

    def _existing(self, rel: str) -> int | None:
        """The open directory `rel` below the root, or None when it (or one above it) is
        missing, is no directory, or is a link (never followed)."""
        found = self._dirs.get(rel)
        if found is not None:
            return found
        parent, _, name = rel.rpartition("/")
        if name in ("", ".", "..") or "\\" in name:
            raise Refusal(WRITE_FAILED, "is not a relative path inside the tree", rel)
        up = self._existing(parent)
        if up is None:
            return None
        try:
            fd = os.open(name, _DIR_FLAGS, dir_fd=up)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as e:
            if e.errno == errno.ELOOP:
                return None
            raise Refusal(WRITE_FAILED, f"cannot open directory: {e.strerror}", rel) from None
        self._dirs[rel] = fd
        return fd

    def chmod_dir(self, rel: str, mode: int) -> None:
        os.fchmod(self._dir(rel), mode)

    def chmod_dirs(self, mode: int) -> None:
        """Set `mode` on the root and on every directory opened below it (each one the tree
        made or wrote into), through its open descriptor: no path is looked up again, so no
        link planted meanwhile is followed."""
        for fd in self._dirs.values():
            os.fchmod(fd, mode)

    def close(self) -> None:
        for fd in self._dirs.values():
            with contextlib.suppress(OSError):
                os.close(fd)
        self._dirs.clear()

    def __enter__(self) -> TreeWriter:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def copy_tree(src: Path, dst: Path) -> None:
    """Copy the tree `src` to the new directory `dst`; links are copied as links, never
    followed (reading through them is `safeio`'s to refuse)."""
    shutil.copytree(src, dst, symlinks=True)


def make_link(path: Path, target: Path) -> None:
    """Create the symbolic link `path` -> `target` (in a directory the tool has just made);
    FileExistsError if anything is at `path` already (nothing is replaced)."""
    os.symlink(target, path, target_is_directory=target.is_dir())


def extract_tar(data: bytes, out: Path) -> None:
    """Extract a `git archive` (the user's own repository) into the new directory `out` with
    tarfile's "data" filter, except that a symbolic link the filter refuses (an absolute target,
    or one leaving the tree: git carries both) is created as it is in the commit, *after*
    every other member, so nothing is written through it; reading it is then `safeio`'s to
    refuse, with the same diagnostic as in a working tree."""
    links: list[tarfile.TarInfo] = []

    def keep(member: tarfile.TarInfo, path: str) -> tarfile.TarInfo | None:
        try:
            return tarfile.data_filter(member, path)
        except tarfile.FilterError:
            if not member.issym():
                raise UsageError(
                    f"git archive member {member.name!r} cannot be extracted"
                ) from None
            links.append(member)
            return None

    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(out, filter=keep)
    for member in links:
        name = PurePosixPath(member.name)
        target = out.joinpath(*name.parts)
        if name.is_absolute() or ".." in name.parts or not name.parts:
            raise UsageError(f"git archive member {member.name!r} leaves the snapshot")
        target.parent.mkdir(parents=True, exist_ok=True)
        if not Path(os.path.realpath(target.parent)).is_relative_to(os.path.realpath(out)):
            raise UsageError(f"git archive member {member.name!r} leaves the snapshot")
        os.symlink(member.linkname, target)


__all__ = [
    "WRITE_LINK",
    "WRITE_NOT_REGULAR",
    "LockHeld",
    "TreeWriter",
    "append_text",
    "copy_tree",
    "create_once",
    "exclusive_lock",
    "extract_tar",
    "make_dirs",
    "make_link",
    "open_devnull",
    "open_lock",
    "remove",
    "write_atomic",
    "write_text",
]
