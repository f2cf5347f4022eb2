"""Where evidence lives: `evidence/<recipe>/<source>/<sha256-of-statement>.sigstore.json`.

`<source>` is the first 32 hex characters of sha256(issuer + "\\n" + identity) of the signer
(the newline is a domain separator, as upstream AICR does), so a signer cannot write into another
signer's directory: the verifier recomputes the path from the verified certificate and the signed
statement, and a file anywhere else is a `path-mismatch`.
"""

from __future__ import annotations

import hashlib
import os
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from generator.core import names, safeio
from generator.core.errors import Diagnostic, LoadError
from generator.core.yamlio import MAX_FILE_BYTES
from generator.evidence.model import EvidenceFile, FoundFile

EVIDENCE_DIR = "evidence"
SUFFIX = ".sigstore.json"
SOURCE_LENGTH = 32
# The catalog's name pattern (catalog/schemas/*.schema.json): a recipe name is a path segment.
NAME_RE = "^[a-z0-9]([a-z0-9.-]{0,61}[a-z0-9])?$"
NAME_PATTERN = re.compile(NAME_RE)


def source_id(issuer: str, identity: str) -> str:
    """The `<source>` path segment of a signer."""
    return hashlib.sha256(f"{issuer}\n{identity}".encode()).hexdigest()[:SOURCE_LENGTH]


def evidence_path(recipe: str, issuer: str, identity: str, statement: bytes) -> str:
    """Where a bundle of `statement`, signed by (issuer, identity), must be stored.

    Raises ValueError for a recipe name that is not a safe path segment (`..`, `/`, ...).
    """
    return stored_path(recipe, issuer, identity, hashlib.sha256(statement).hexdigest())


def stored_path(recipe: str, issuer: str, identity: str, statement_sha256: str) -> str:
    """`evidence_path` of a statement whose sha256 (hex) is `statement_sha256`."""
    return (
        f"{EVIDENCE_DIR}/{check_recipe_name(recipe)}/{source_id(issuer, identity)}/"
        f"{statement_sha256}{SUFFIX}"
    )


def check_recipe_name(recipe: str) -> str:
    """`recipe` if it is a safe path segment (the catalog's name pattern), else ValueError."""
    if not is_safe_name(recipe):
        raise ValueError(f"{recipe!r} is not a safe path segment")
    return recipe


def is_safe_name(name: str) -> bool:
    """True for a catalog name: lower-case letters, digits, '.' and '-', at most 63 characters."""
    return names.valid(NAME_PATTERN, name)


def path_problem(path: str, expected: str) -> str | None:
    """None if `path` (relative to the directory holding the evidence root) is `expected`.

    The comparison is exact: a copy of a bundle elsewhere under the evidence root (say
    `evidence/mirror/evidence/<recipe>/...`) is at the wrong place, so one statement cannot be
    counted twice.
    """
    if path == expected:
        return None
    return f"file is at {path} but its content belongs at {expected}"


@dataclass(frozen=True, slots=True)
class Found:
    """A file to read: where it is, the directory it must stay in, and its stored location."""

    path: Path
    root: Path  # its real path must be inside this directory (links may not leave it)
    location: str  # the path the location check compares: `evidence/...` under an evidence root
    # the walk that found it (`safeio.walk` of a directory argument), whose facts `find_files`
    # checks it with; None for a file named explicitly
    walked: tuple[safeio.Tree, safeio.Entry] | None = field(default=None, compare=False, repr=False)


def _candidates(given: Path, absolute: Path) -> tuple[Path, ...]:
    """The folders that may be the evidence root of a file below the argument `given` (the
    last one is the fallback)."""
    start = Path(safeio.abspath(given))
    if start == absolute:  # a file named explicitly
        above = start.parents[:3]
        return (*above, above[-1])
    # ancestors before the child: below `evidence/<recipe>`, a nested `evidence/` folder
    # is a copy (never the root), or it would be counted again when one recipe is read
    return (start, *start.parents[:2], start / EVIDENCE_DIR, start)


def _inside(absolute: str, folder: str) -> bool:
    return absolute == folder or absolute.startswith(folder.rstrip(os.sep) + os.sep)


def _found(
    path: Path,
    given: Path,
    memo: dict[Path, tuple[Path, ...]] | None = None,
    root: Path | None = None,
    walked: tuple[safeio.Tree, safeio.Entry] | None = None,
) -> Found:
    """`path` (found under, or equal to, the argument `given`) with its root and location.

    The evidence root of a directory argument is the argument when it is named `evidence`;
    else the nearest ancestor named `evidence` that the layout allows (the argument is
    `evidence/<recipe>` or `evidence/<recipe>/<source>`); else its `evidence/` subdirectory
    (the argument is a repository root) for the files in it; else the argument itself. A file named
    explicitly is judged against the nearest `evidence` folder above it, else the folder three
    levels up. The location is `evidence/` + the path below the root, so a copy nested deeper
    in the tree (`evidence/mirror/evidence/...`) is misplaced. `root`: the evidence root the
    caller knows (`status --evidence DIR`, whatever DIR is named), for the files inside it.
    """
    absolute = safeio.abspath(path)
    if root is not None and _inside(absolute, safeio.abspath(root)):
        folder = safeio.abspath(root)
        below = absolute[len(folder.rstrip(os.sep)) + 1 :].replace(os.sep, "/")
        return Found(path, root, f"{EVIDENCE_DIR}/{below}", walked)
    if memo is not None and path != given:  # a directory argument: the same candidates
        if given not in memo:
            memo[given] = _candidates(given, Path(absolute))
        candidates = memo[given]
    else:
        candidates = _candidates(given, Path(absolute))
    named = [r for r in candidates[:-1] if r.name == EVIDENCE_DIR and _inside(absolute, str(r))]
    root = named[0] if named else candidates[-1]
    folder = str(root)
    if _inside(absolute, folder) and absolute != folder:
        below = absolute[len(folder.rstrip(os.sep)) + 1 :].replace(os.sep, "/")
    else:
        below = Path(absolute).relative_to(root).as_posix()
    return Found(path, root, f"{EVIDENCE_DIR}/{below}", walked)


def _search(
    directory: Path, tree: safeio.Tree | None = None
) -> list[tuple[Path, safeio.Tree, safeio.Entry]]:
    """Every `*.sigstore.json` below `directory` that is not a directory (links not followed
    into directories; pipes, sockets and links are listed, to be judged when read), with the
    walk that found it: one `safeio.walk` (`_search_reference` is the `safeio.walk_dirs` walk it
    replaced).
    `tree`: the walk of `directory` taken already (with `SUFFIX` among its suffixes: the
    build's one walk of the evidence tree, `TREE_SUFFIXES`)."""
    tree = tree if tree is not None else safeio.walk(directory, suffixes=(SUFFIX,))
    return [(Path(e.path), tree, e) for e in bundle_entries(tree)]


# The suffixes of the build's one walk of the evidence tree: bundles, and pointer files and
# allowlist.yaml (`.yaml`); it serves the build key, the bundles and the pointer files.
TREE_SUFFIXES = (SUFFIX, ".yaml")


def bundle_entries(tree: safeio.Tree) -> list[safeio.Entry]:
    """The entries of a walk (with `SUFFIX` among its suffixes) that `_search` lists: every
    one named `*.sigstore.json` (a walk lists every link to a directory, whatever its name:
    those named otherwise are no bundle), in the walk's order."""
    return [e for e in tree.entries if e.rel.endswith(SUFFIX)]


def _search_reference(directory: Path) -> list[Path]:
    """`_search` as `safeio.walk_dirs` gives it (the reference, for the differential test)."""
    out: list[Path] = []
    for dirpath, dirnames, filenames in safeio.walk_dirs(directory):
        names = filenames + [
            d for d in dirnames if safeio.is_link(os.path.join(dirpath, d), quiet=True)
        ]
        out.extend(Path(dirpath, n) for n in names if n.endswith(SUFFIX))
    return out


def _discover(paths: Iterable[Path], root: Path | None = None) -> dict[Path, Found]:
    return {p: found for p, _, found in _discover_absolute(paths, root)}


def _discover_absolute(
    paths: Iterable[Path], root: Path | None = None, tree: safeio.Tree | None = None
) -> list[tuple[Path, str, Found]]:
    """`_discover_reference`'s files, in its order, each with its absolute path (what
    `os.path.abspath` gives). A file a walk found below a directory argument inside `root`
    takes its absolute path and its location from the walk: the argument's absolute path
    joined with the file's path below it (no `..`, `.` or empty part: a walk's names), where
    the reference took four `abspath`s per file (its own twice, `root`'s twice). Measured on
    the 20,000 files of the 1,000-recipe tree, collector paused, best of 12 in each of three
    interleaved pairs (load 4-5), medians: `_discover` 0.57 -> 0.49 CPU-s, `find_files` (stat
    memo warm) 0.81 -> 0.67 (tests/test_verify_batch.py compares it with the reference).
    `tree`: the walk of the directory argument whose absolute path is its root's, taken
    already (see `find_files`)."""
    found: dict[Path, tuple[str, Found]] = {}
    memo: dict[Path, tuple[Path, ...]] = {}
    top_root = None if root is None else safeio.abspath(root)
    for p in paths:
        if not safeio.is_dir(p):
            if p not in found:
                found[p] = (safeio.abspath(p), _found(p, p, root=root))
            continue
        top = safeio.abspath(p)
        walked = os.sep == "/" and top_root is not None and _inside(top, top_root)
        taken = tree if tree is not None and safeio.abspath(tree.root) == top else None
        for q, tree_, entry in _search(p, taken):
            if q in found:
                continue
            if walked:
                assert root is not None and top_root is not None
                absolute = top.rstrip("/") + "/" + entry.rel
                below = absolute[len(top_root.rstrip("/")) + 1 :]
                found[q] = (absolute, Found(q, root, f"{EVIDENCE_DIR}/{below}", (tree_, entry)))
            else:
                found[q] = (safeio.abspath(q), _found(q, p, memo, root, (tree_, entry)))
    return [(p, absolute, f) for p, (absolute, f) in sorted(found.items())]


def _discover_reference(paths: Iterable[Path], root: Path | None = None) -> dict[Path, Found]:
    """`_discover` as it was (the reference, for the differential test)."""
    found: dict[Path, Found] = {}
    memo: dict[Path, tuple[Path, ...]] = {}
    for p in paths:
        if safeio.is_dir(p):
            for q, tree, entry in _search(p):
                if q not in found:
                    found[q] = _found(q, p, memo, root, (tree, entry))
        else:
            found.setdefault(p, _found(p, p, root=root))
    return dict(sorted(found.items()))


def discover(paths: Iterable[Path]) -> tuple[Path, ...]:
    """The evidence files named by `paths` (files as given; directories searched), sorted.

    Every `*.sigstore.json` that is not a directory is listed, regular or not: `read_files`
    refuses the others by name rather than skipping them silently.
    """
    return tuple(_discover(paths))


def display_path(path: Path, base: Path | None = None) -> str:
    """A POSIX path relative to `base` (default: the working directory) when inside it.

    Only the link-free (absolute, normalized) path is used, never the link's target: a link
    is shown where it is.
    """
    base = Path(safeio.abspath(base or safeio.cwd()))
    absolute = Path(safeio.abspath(path))
    try:
        return absolute.relative_to(base).as_posix()
    except ValueError:
        return path.as_posix()


def _problem(shown: str, message: str, rule: str) -> Diagnostic:
    return Diagnostic(shown, 0, 0, "$", message, rule)


def read_one(
    found: Found, shown: str, real_root: str | None = None
) -> tuple[bytes | None, Diagnostic | None]:
    data, problem, _ = read_real(found, shown, real_root)
    return data, problem


def read_real(
    found: Found, shown: str, real_root: str | None = None
) -> tuple[bytes | None, Diagnostic | None, str]:
    """The bytes of one evidence file, or why it is refused: a link leaving its root, not a
    regular file (never opened, so a pipe cannot block), larger than MAX_FILE_BYTES (never
    read beyond the limit), or unreadable. `real_root` is `realpath(found.root)` when the
    caller has it already (one root serves thousands of files). The file's path is resolved
    once, by the reader."""
    try:
        real, data = safeio.read_resolved(
            found.path,
            root=found.root,
            where="the evidence directory",
            limit=MAX_FILE_BYTES,
            real_root=real_root,
        )
    except safeio.Refusal as r:
        return None, _refused(shown, r), safeio.real_path(found.path)
    return data, None, real


def _refused(shown: str, r: safeio.Refusal) -> Diagnostic:
    shown = safeio.shown_path(shown)  # a name that is not UTF-8, escaped
    if r.rule == safeio.UNREADABLE:  # this module's own wording and rule
        return _problem(shown, r.message.replace("read file:", "read:"), "io")
    return _problem(shown, r.message, r.rule)


def _too_large(shown: str, size: int) -> Diagnostic:
    return _problem(
        shown, f"file is {size} bytes; the limit is {MAX_FILE_BYTES} bytes", "file.too-large"
    )


def read_files(
    paths: Iterable[Path], base: Path | None = None, root: Path | None = None
) -> tuple[EvidenceFile, ...]:
    """Read every evidence file; files that cannot be read are a LoadError naming all of them.

    `path` of each record is relative to `base` (default: the working directory); `location`
    is what the verifier compares with the statement's storage path: `evidence/...` below the
    nearest directory named `evidence` among the argument and its ancestors, else the path
    below the argument (a repository root), so `evidence/` must be directly under it; with
    `root` (the evidence directory the caller was given), the path below `root`.
    """
    files: list[EvidenceFile] = []
    problems: list[Diagnostic] = []
    real_roots: dict[Path, str] = {}
    for p, found in _discover(paths, root).items():
        shown = display_path(p, base)
        if found.root not in real_roots:
            real_roots[found.root] = safeio.real_path(found.root)
        data, problem, real = read_real(found, shown, real_roots[found.root])
        if problem is not None:
            problems.append(problem)
        else:
            assert data is not None
            files.append(EvidenceFile(path=shown, data=data, location=found.location, real=real))
    if problems:
        raise LoadError("evidence files could not be read", problems)
    return tuple(files)


# --- the stat memo: an unchanged file is not read again ------------------------------------------

SETTLED_NS = 2_000_000_000  # a file changed in the last two seconds is read, never vouched for


class FileMemo:
    """What earlier builds read of each evidence file, by the file's stat: its real path ->
    [device, inode, size, mtime_ns, ctime_ns, sha256 of its bytes]. A file whose stat is the
    one recorded is vouched for without being read (`find_files`).

    Why these fields: size, mtime and inode alone do not tell a file rewritten in place with
    its size kept and its mtime put back (`touch -r`): the ctime does, since every write and
    every `utime` sets it to the clock, and no call sets it to a chosen value (only a changed
    system clock could). The device tells the same inode number on another filesystem. An
    entry is recorded from the stat taken *before* the bytes were read, so a write during the
    read leaves the entry with a stat the file no longer has; and only for a file whose mtime
    and ctime were at least `SETTLED_NS` old then, so a second write within the clock's
    granularity cannot leave the recorded stat as it was. Every entry is a fact about one
    state of one file, so a memo written by another build is still true: it is only ever
    missing entries. Not a record: `find_files` consults it and records what it read."""

    def __init__(self, entries: dict[str, list[Any]] | None = None) -> None:
        self.before = entries or {}
        self.after: dict[str, list[Any]] = {}
        self.settled = time.time_ns() - SETTLED_NS
        self.vouched = 0  # files not read, their digest taken from the memo

    def vouch(self, real: str, st: os.stat_result) -> str | None:
        """The sha256 of the file at `real` when its stat is the one recorded, else None."""
        entry = self.before.get(real)
        if not isinstance(entry, list) or len(entry) != 6 or entry[:5] != _stamp(st):
            return None
        self.after[real] = entry
        self.vouched += 1
        return str(entry[5])

    def note(self, real: str, st: os.stat_result, sha256: str) -> None:
        """The file at `real`, stat `st` (taken before it was read), holds bytes of `sha256`."""
        if max(st.st_mtime_ns, st.st_ctime_ns) < self.settled:
            self.after[real] = [*_stamp(st), sha256]

    @property
    def changed(self) -> bool:
        return self.after != self.before


def _stamp(st: os.stat_result) -> list[int]:
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


# the bytes and sha256 of the file at a real path read already under a stat stamp [size,
# mtime_ns, inode, ctime_ns], or None (`generator.core.cache.Cache.take_read`)
Reads = Callable[[str, list[int]], "tuple[bytes, str] | None"]


def _bytes_of(
    real: str, st: os.stat_result, path: Path | str, memo: FileMemo | None, reads: Reads | None
) -> tuple[bytes | None, str]:
    """A found file's bytes (None: `memo` vouches for its digest, they are read when needed)
    and sha256: vouched for by `memo`, else taken from `reads` when this build read them
    already under this stat, else read now. Raises safeio.Refusal."""
    sha = memo.vouch(real, st) if memo is not None else None
    if sha is not None:
        return None, sha
    kept = reads(real, [st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns]) if reads else None
    if kept is None:
        data = safeio.read_checked(real, path, limit=MAX_FILE_BYTES)
        kept = data, hashlib.sha256(data).hexdigest()
    if memo is not None:
        memo.note(real, st, kept[1])
    return kept


def find_files(
    paths: Iterable[Path],
    base: Path | None = None,
    root: Path | None = None,
    memo: FileMemo | None = None,
    tree: safeio.Tree | None = None,
    reads: Reads | None = None,
) -> tuple[FoundFile, ...]:
    """`read_files`, each file's bytes read only when `memo` cannot vouch for their digest
    (see `FileMemo`): every file is still checked as `read_files` checks it (a link leaving
    its root, not a regular file, too large), and one that cannot be read is a LoadError.
    `tree`: the walk of the directory argument at its root (`safeio.walk(p, suffixes=...)`
    with `SUFFIX` among them), taken already: its bundles are the ones found there, no walk
    again (the build's one walk of the evidence tree; or some of its entries, a `Tree` of
    those, for the directories `verify_cache.verify_tree` finds again). `reads`: the bytes
    and sha256 of a file read already in this build under the same stat (`Cache.take_read`:
    the build key's read of the evidence tree), taken instead of reading it again."""
    files: list[FoundFile] = []
    problems: list[Diagnostic] = []
    real_roots: dict[Path, str] = {}
    where = "the evidence directory"
    below = safeio.abspath(base or safeio.cwd()).rstrip(os.sep) + os.sep
    for p, absolute, found in _discover_absolute(paths, root, tree):
        if absolute.startswith(below):  # `display_path`, without a Path per file
            shown = absolute[len(below) :].replace(os.sep, "/")
        else:
            shown = display_path(p, base)
        if found.root not in real_roots:
            real_roots[found.root] = safeio.real_path(found.root)
        real_root = real_roots[found.root]
        try:
            if found.walked is not None:  # `check`'s answer from the walk's facts
                tree, entry = found.walked
                real, st = safeio.check_entry(
                    tree, entry, where=where, limit=MAX_FILE_BYTES, real_root=real_root
                )
            else:
                real, st = safeio.check(
                    found.path, where=where, limit=MAX_FILE_BYTES, real_root=real_root
                )
            data, sha = _bytes_of(real, st, found.path, memo, reads)
        except safeio.Refusal as r:
            problems.append(_refused(shown, r))
            continue
        files.append(FoundFile(shown, found.location, real, real_root, sha, st.st_size, data))
    if problems:
        raise LoadError("evidence files could not be read", problems)
    return tuple(files)


def load(found: FoundFile) -> EvidenceFile:
    """The file's bytes as an `EvidenceFile`: those read while it was found, else read now,
    and then only if their sha256 is still the one the memo vouched for (a file changed
    during the build is a LoadError: verification and publication never see two versions)."""
    data = found.data
    if data is None:
        data = read_vouched(found.real, found.root, found.sha256, found.path)
    return EvidenceFile(found.path, data, found.location, found.real)


def read_vouched(real: str, real_root: str, sha256: str, shown: str) -> bytes:
    """The bytes of the file at `real` (inside `real_root`), which must hash to `sha256`:
    what was verified is what is used. Raises LoadError."""
    try:
        data = safeio.read(
            real, where="the evidence directory", limit=MAX_FILE_BYTES, real_root=real_root
        )
    except safeio.Refusal as r:
        raise LoadError("an evidence file could not be read again", [_refused(shown, r)]) from None
    if hashlib.sha256(data).hexdigest() != sha256:
        message = (
            "the file changed while the build ran (its bytes are not those verified); build again"
        )
        raise LoadError(message, [_problem(shown, message, "file.changed")])
    return data
