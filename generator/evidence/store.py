"""Where evidence lives: `evidence/<recipe>/<source>/<sha256-of-statement>.sigstore.json`.

`<source>` is the first 32 hex characters of sha256(issuer + "\\n" + identity) of the signer
(the newline is a domain separator, as upstream AICR does), so a signer cannot write into another
signer's directory: the verifier recomputes the path from the verified certificate and the signed
statement, and a file anywhere else is a `path-mismatch`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from generator.errors import Diagnostic, LoadError
from generator.evidence.model import EvidenceFile

EVIDENCE_DIR = "evidence"
SUFFIX = ".sigstore.json"
SOURCE_LENGTH = 32


def source_id(issuer: str, identity: str) -> str:
    """The `<source>` path segment of a signer."""
    return hashlib.sha256(f"{issuer}\n{identity}".encode()).hexdigest()[:SOURCE_LENGTH]


def evidence_path(recipe: str, issuer: str, identity: str, statement: bytes) -> str:
    """Where a bundle of `statement`, signed by (issuer, identity), must be stored."""
    digest = hashlib.sha256(statement).hexdigest()
    return f"{EVIDENCE_DIR}/{recipe}/{source_id(issuer, identity)}/{digest}{SUFFIX}"


def path_problem(path: str, expected: str) -> str | None:
    """None if `path` ends with the expected `evidence/...` location, else why not.

    `path` may be absolute or relative to anything: only its last four segments are compared,
    so a checkout in any directory verifies the same.
    """
    got = PurePosixPath(path.replace("\\", "/")).parts[-4:]
    want = PurePosixPath(expected).parts
    if tuple(got) == tuple(want):
        return None
    return f"file is at {'/'.join(got)} but its content belongs at {expected}"


def discover(paths: Iterable[Path]) -> tuple[Path, ...]:
    """The evidence files named by `paths` (files as given; directories searched), sorted."""
    found: set[Path] = set()
    for p in paths:
        if p.is_dir():
            found.update(q for q in p.rglob(f"*{SUFFIX}") if q.is_file())
        else:
            found.add(p)
    return tuple(sorted(found))


def display_path(path: Path, base: Path | None = None) -> str:
    """A POSIX path relative to `base` (default: the working directory) when inside it."""
    base = (base or Path.cwd()).resolve()
    resolved = path.resolve()
    try:
        return resolved.relative_to(base).as_posix()
    except ValueError:
        return path.as_posix()


def read_files(paths: Iterable[Path], base: Path | None = None) -> tuple[EvidenceFile, ...]:
    """Read every evidence file; an unreadable one is a LoadError naming all of them."""
    files: list[EvidenceFile] = []
    problems: list[Diagnostic] = []
    for p in discover(paths):
        shown = display_path(p, base)
        try:
            files.append(EvidenceFile(path=shown, data=p.read_bytes()))
        except OSError as e:
            problems.append(Diagnostic(shown, 0, 0, "$", f"cannot read: {e.strerror}", "io"))
    if problems:
        raise LoadError("evidence files could not be read", problems)
    return tuple(files)
