"""The one owner of "may this directory be replaced?": every writer asks here before it swaps.

A command's output directory (`build -o`, `bundle -o`, `release -o`) is replaced whole, so a
careless `-o .` or `-o catalog` would delete what the user meant to keep. The rule:

* the directory is replaced only when it is missing, empty, or marked as this tool's previous
  output of the same kind: a site directory carries `MARKER`; a bundle directory is recognised
  by its own header (`bundle-info.yaml` of kind BundleInfo beside `checksums.txt`) and a release
  directory by `release-manifest.json` beside `SHA256SUMS`, so neither gains a file that its
  checksums would not list; a synthetic catalog carries `SYNTH_MARKER`;
* never the current directory or one of its ancestors, an input (the catalog, the evidence
  directory, a template directory), an ancestor of an input or a directory inside one, a
  repository root (a directory holding `.git`), the file-system root, or a symbolic link.

`check_output_dir` raises `UsageError` (exit 2) naming the directory and the rule; it runs
before anything is written, so a refused command leaves every file where it was.

`discard` is the one way the tool removes a directory tree (a staging tree, a temporary build
directory): never through a link.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from generator.core.errors import UsageError

MARKER = ".aicr-catalog-output"  # inside a site or release directory: its kind, one line
BUNDLE_HEADER = "bundle-info.yaml"  # a bundle directory's own header (render/common.py)
_BUNDLE_KIND = "kind: BundleInfo"
RELEASE_FILES = ("release-manifest.json", "SHA256SUMS")  # a release directory's own files


class OutputKind(StrEnum):
    SITE = "site"
    BUNDLE = "bundle"
    RELEASE = "release"
    SYNTH = "synth"  # `aicr-catalog synth` marks its tree with SYNTH_MARKER


SYNTH_MARKER = ".aicr-synth"


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _is_within(inner: Path, outer: Path) -> bool:
    return inner == outer or inner.is_relative_to(outer)


def marked_kind(directory: Path) -> OutputKind | None:
    """The kind of output `directory` holds by its mark, or None when it carries none."""
    from generator.core import safeio

    if (directory / SYNTH_MARKER).is_file() and not (directory / SYNTH_MARKER).is_symlink():
        return OutputKind.SYNTH
    marker = directory / MARKER
    if marker.is_file() and not marker.is_symlink():
        try:
            text = safeio.read_text(marker, limit=4096).strip()
        except safeio.Refusal:
            return None
        return OutputKind(text) if text in set(OutputKind) else None
    header = directory / BUNDLE_HEADER
    if header.is_file() and not header.is_symlink():
        try:
            head = safeio.read(header, limit=safeio.YAML_BYTES).decode("utf-8", "replace")
        except safeio.Refusal:
            return None
        if _BUNDLE_KIND in head.splitlines() and (directory / "checksums.txt").is_file():
            return OutputKind.BUNDLE
    if all((directory / name).is_file() for name in RELEASE_FILES):
        return OutputKind.RELEASE
    return None


def marker_bytes(kind: OutputKind) -> bytes:
    """The mark of a site tree (`MARKER`'s content), for a writer that publishes it as one
    of the tree's files."""
    return f"{kind}\n".encode()


def mark(directory: Path, kind: OutputKind) -> None:
    """Mark a staged site tree as this tool's output (the other kinds carry their own files)."""
    from generator.core.atomic import write_text

    if kind is not OutputKind.SITE:
        return
    write_text(directory / MARKER, f"{kind}\n", root=directory)


DISCARD_RULE = "output.discard"
TEMP_RULE = "output.temp-dir"


def discard(path: Path | str, *, ignore_errors: bool = False) -> bool:
    """Remove the directory tree `path` (a staging tree, a temporary build directory, a cache
    directory of the old layout): the one way the tool removes a tree. True when it was
    removed, False when nothing was there.

    Never follows a link: a link at `path` itself is refused (`output.discard`, naming it) and
    left where it is, so what it points to survives; inside the tree `shutil.rmtree` removes
    each link as a link (its descriptor-based walk opens every directory with `O_NOFOLLOW`),
    never what lies behind it. A path that is no directory is refused the same way. A tree
    that cannot be removed (a permission) raises `Refusal` naming the entry that failed.

    `ignore_errors=True` is what `shutil.rmtree(path, ignore_errors=True)` did for the callers
    that remove their leftovers: every refusal above is then ignored (False; a link at `path`
    is still not followed, and not removed), and a tree removed in part stays in part."""
    from generator.core.safeio import Refusal

    path = Path(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return False
    except OSError as e:
        if ignore_errors:
            return False
        raise Refusal(DISCARD_RULE, f"cannot remove: {e.strerror}", path) from None
    if not stat.S_ISDIR(st.st_mode):
        if ignore_errors:
            return False
        what = "a symbolic link" if stat.S_ISLNK(st.st_mode) else "not a directory"
        raise Refusal(DISCARD_RULE, f"is {what}; not removed, not followed", path)
    if ignore_errors:
        shutil.rmtree(path, ignore_errors=True)
        return not os.path.lexists(path)
    try:
        shutil.rmtree(path)
    except OSError as e:
        raise Refusal(DISCARD_RULE, f"cannot remove: {e.strerror}", e.filename or path) from None
    return True


def make_temp_dir(prefix: str, parent: Path | None = None) -> Path:
    """A new directory of this process's own (`tempfile.mkdtemp`: a fresh unpredictable name,
    created with `mkdir` so an existing entry of that name, a planted link included, is never
    reused, mode 0700) under `parent` (default: the system's temporary directory): the one way
    the tool makes a scratch or staging tree. The caller removes it with `discard` (or takes
    it through `temp_dir`). A directory that cannot be made raises `Refusal` naming `parent`."""
    from generator.core.safeio import Refusal

    try:
        return Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    except OSError as e:
        where = parent if parent is not None else Path(tempfile.gettempdir())
        raise Refusal(
            TEMP_RULE, f"cannot create a temporary directory: {e.strerror}", where
        ) from None


@contextlib.contextmanager
def temp_dir(prefix: str, parent: Path | None = None) -> Iterator[Path]:
    """`make_temp_dir`, discarded when the block ends, however it ends (what
    `tempfile.TemporaryDirectory` did: a tree that cannot be removed in full is left in part,
    never followed through a link)."""
    path = make_temp_dir(prefix, parent)
    try:
        yield path
    finally:
        discard(path, ignore_errors=True)


_RENAME_EXCHANGE = 2  # linux/fs.h


def _exchange(a: Path, b: Path) -> bool:
    """Atomically exchange two paths (Linux renameat2 RENAME_EXCHANGE); False if unsupported."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd = -100
    rc = renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), _RENAME_EXCHANGE)
    return bool(rc == 0)


def swap_in(new: Path, out: Path) -> None:
    """Replace the directory `out` (checked by `check_output_dir`) with the finished tree `new`
    (same file system): the one place a finished output directory is renamed into place.

    With an existing `out` the two directories are exchanged in one atomic step, so a reader (or
    a kill) sees either the old or the new tree, never neither; then the old tree is removed.
    A rename moves the link itself, never what a link points to.
    """
    if out.exists() and _exchange(new, out):
        shutil.rmtree(new)  # `new` now holds the previous tree
        return
    old = out.parent / f".{out.name}.old"
    if old.exists():
        shutil.rmtree(old)
    if out.exists():
        os.replace(out, old)
    os.replace(new, out)
    if old.exists():
        shutil.rmtree(old)


# --- a delta: the changed files renamed into the output, journalled -----------------------------


@dataclass(frozen=True, slots=True)
class Delta:
    """What turns an output directory into the next build of it: the files staged (same
    relative path) under `staging`, a new directory beside the output, to be renamed into
    place, and the files of the output the next build no longer has, to be removed."""

    staging: Path
    moves: tuple[str, ...]
    removals: tuple[str, ...]


JOURNAL_RULE = "output.journal"


def journal_path(out: Path) -> Path:
    """Where the delta being applied to `out` is journalled (beside it: the same file system)."""
    return out.parent / f".{out.name}.journal"


def staging_prefix(out: Path) -> str:
    """The name every temporary tree of a build of `out` starts with (beside it)."""
    return f".{out.name}-build-"


def commit_delta(delta: Delta, out: Path) -> None:
    """Apply `delta` to `out`, journalled: the journal (the whole delta) is written atomically
    first, then each removal and each rename is done, then the journal is removed.

    This is the commit: before the journal exists, `out` is the previous build untouched;
    once it exists, `complete_delta` (run before anything else by the next build) finishes
    it, so `out` ends as the new build whatever was killed. During the renames themselves a
    reader sees a mix of the two builds, file by file (each file whole: a rename)."""
    staging = delta.staging
    if staging.parent.parent != out.parent or not staging.parent.name.startswith(
        staging_prefix(out)
    ):
        raise ValueError(f"{staging} is not a build's staging tree beside {out}")
    from generator.core.atomic import write_atomic
    from generator.core.safeio import Refusal

    if delta.moves and os.stat(staging).st_dev != os.stat(out).st_dev:  # a mount point
        raise Refusal(
            JOURNAL_RULE,
            "is a mount point: its files cannot be renamed into it from beside it; build into "
            "a directory inside it (nothing was changed)",
            out,
        )

    doc = {
        "staging": staging.relative_to(out.parent).as_posix(),
        "moves": list(delta.moves),
        "removals": list(delta.removals),
    }
    journal = journal_path(out)
    write_atomic(journal, json.dumps(doc, allow_nan=False).encode(), root=out.parent)
    _apply_journalled(delta, out, journal)


def complete_delta(out: Path) -> bool:
    """Finish the delta journalled for `out` by a build killed while applying it (call with
    the build lock held, before the staging trees beside `out` are removed). True when there
    was one. A journal that is not one this tool writes is refused (a located error), and
    left for the user to look at."""
    from generator.core import safeio

    journal = journal_path(out)
    if not journal.exists() and not journal.is_symlink():
        return False
    raw = safeio.read_own(journal)  # written by this tool: a link at its name is refused
    delta = _parse_journal(raw, out, journal)
    _apply_journalled(delta, out, journal)
    return True


def _apply_journalled(delta: Delta, out: Path, journal: Path) -> None:
    """`_apply`, then the journal removed; a step the file system refuses leaves the journal
    (the next build tries again) and says how to get out of it."""
    from generator.core.safeio import Refusal

    try:
        _apply(delta, out)
    except Refusal as e:
        raise Refusal(
            e.rule,
            f"{e.message}; {out} is now part the previous site, part the new one: fix the "
            f"cause and build again (the change is completed), or remove {journal} and build "
            "again (the site is then built whole)",
            out,
        ) from e
    journal.unlink()


def _parse_journal(raw: bytes, out: Path, journal: Path) -> Delta:
    from generator.core.safeio import Refusal

    def refuse(why: str) -> Refusal:
        return Refusal(JOURNAL_RULE, f"not a journal of this tool ({why}); remove it", journal)

    try:
        doc = json.loads(raw)
    except ValueError as e:
        raise refuse(f"not JSON: {e}") from None
    if not isinstance(doc, dict) or set(doc) != {"staging", "moves", "removals"}:
        raise refuse("unexpected fields")
    staging = doc["staging"]
    if not isinstance(staging, str) or not _relative(staging) or "/" not in staging:
        raise refuse("its staging tree is not beside the output")
    top = staging.split("/", 1)[0]
    if not top.startswith(staging_prefix(out)):
        raise refuse("its staging tree is not one of this output's builds")
    lists = []
    for name in ("moves", "removals"):
        rels = doc[name]
        if not isinstance(rels, list) or not all(isinstance(r, str) and _relative(r) for r in rels):
            raise refuse(f"{name} must be relative paths inside the output")
        lists.append(tuple(rels))
    return Delta(out.parent / staging, lists[0], lists[1])


def _relative(rel: str) -> bool:
    parts = rel.split("/")
    return bool(rel) and all(p not in ("", ".", "..") for p in parts) and "\\" not in rel


def _apply(delta: Delta, out: Path) -> None:
    """Remove the files gone (and the directories they leave empty), then rename each staged
    file into place. Each step is undone by nothing and may be done twice: a file already
    removed or moved is skipped, so a journal can be completed after any kill."""
    from generator.core.atomic import TreeWriter

    with TreeWriter(out) as tree:
        emptied = set()
        for rel in delta.removals:
            tree.discard(rel)
            emptied.add(rel.rpartition("/")[0])
        for rel in sorted(emptied, key=lambda r: (-r.count("/"), r)):  # deepest first
            tree.prune(rel)
        prefix = os.path.join(os.fspath(delta.staging), "")
        for rel in delta.moves:
            tree.move_in(prefix + rel, rel)


def restore(old: Path, out: Path) -> None:
    """Rename the previous tree `old` back to `out` (a swap killed between its two renames)."""
    os.replace(old, out)


def check_output_dir(out: Path, kind: OutputKind, inputs: Iterable[Path] = ()) -> None:
    """Refuse (UsageError, exit 2) an output directory whose replacement could lose data."""
    shown = str(out)
    if os.path.islink(out):
        raise UsageError(
            f"output {shown} is a symbolic link; give the directory it points to, or a new one"
        )
    real = _real(out)
    if real == Path(real.anchor):
        raise UsageError(f"output {shown} is the file-system root; give a new directory")
    cwd = _real(Path.cwd())
    if _is_within(cwd, real):
        raise UsageError(
            f"output {shown} is the current directory or one of its ancestors; replacing it would "
            "delete the files you are working in: give a new directory such as ./out"
        )
    for given in inputs:
        src = _real(given)
        if _is_within(src, real):
            raise UsageError(
                f"output {shown} is an input ({given}) or holds one; give a directory outside it"
            )
        if _is_within(real, src) and src.is_dir():
            raise UsageError(
                f"output {shown} lies inside the input {given}; give a directory outside it"
            )
    if not out.exists():
        return
    if not out.is_dir():
        raise UsageError(f"output {shown} exists and is not a directory")
    if (out / ".git").exists():
        raise UsageError(
            f"output {shown} is a repository root (it holds .git); give a new directory"
        )
    try:
        with os.scandir(out) as it:
            empty = next(it, None) is None
    except OSError as e:
        raise UsageError(f"output {shown} cannot be read: {e.strerror}") from e
    if empty:
        return
    found = marked_kind(out)
    if found is kind:
        return
    what = (
        f"holds this tool's {found} output"
        if found
        else "holds files not marked as this tool's " + str(kind) + " output"
    )
    raise UsageError(
        f"output {shown} {what} and would be replaced whole; give an empty or new directory "
        f"(or remove {shown} yourself if its contents are not needed)"
    )


__all__ = [
    "DISCARD_RULE",
    "JOURNAL_RULE",
    "MARKER",
    "SYNTH_MARKER",
    "Delta",
    "OutputKind",
    "check_output_dir",
    "commit_delta",
    "complete_delta",
    "discard",
    "journal_path",
    "mark",
    "marked_kind",
    "marker_bytes",
    "restore",
    "staging_prefix",
    "swap_in",
]
