"""`bundle verify DIR`: check a bundle directory against its `checksums.txt`.

Every problem is reported, each naming its file: a changed file, a file listed but missing, a
file present but not listed, a malformed or unsafe line. Fails closed: no `checksums.txt` is an
error, never a pass.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from generator import safeio
from generator.errors import Diagnostic, sort_diagnostics
from generator.render.common import CHECKSUMS

_LINE = re.compile(r"([0-9a-f]{64})  (.+)")


def _unsafe(rel: str) -> bool:
    return rel.startswith("/") or "\\" in rel or any(s in ("", ".", "..") for s in rel.split("/"))


def _digest(path: Path, root: Path) -> str:
    try:
        data = safeio.read(path, root=root, where="the bundle", limit=safeio.OTHER_BYTES)
    except safeio.Refusal:
        return ""  # reported as modified: it cannot be the listed file
    return hashlib.sha256(data).hexdigest()


def verify_bundle(root: Path) -> tuple[Diagnostic, ...]:
    """Diagnostics for every mismatch between `root` and `root/checksums.txt` (empty = intact)."""
    root = Path(root)
    sums = root / CHECKSUMS
    if not os.path.lexists(sums):
        return (
            Diagnostic(
                CHECKSUMS,
                0,
                0,
                "$",
                "checksums.txt is missing: nothing to verify against",
                "bundle.no-checksums",
            ),
        )
    try:
        # a link out of the bundle is refused unread: no line of its target can be printed
        raw = safeio.read(sums, root=root, where="the bundle", limit=safeio.CHECKSUMS_BYTES)
    except safeio.Refusal as r:
        return (Diagnostic(CHECKSUMS, 0, 0, "$", r.message, "bundle.no-checksums"),)
    diags: list[Diagnostic] = []
    listed: dict[str, str] = {}
    text = raw.decode("utf-8", errors="replace")
    for n, line in enumerate(text.splitlines(), start=1):
        m = _LINE.fullmatch(line)
        if not m:
            shown = line if len(line) <= 80 else line[:80] + "..."
            diags.append(
                Diagnostic(CHECKSUMS, n, 1, "$", f"malformed line: {shown!r}", "bundle.malformed")
            )
            continue
        digest, rel = m.group(1), m.group(2)
        if _unsafe(rel) or rel == CHECKSUMS:
            diags.append(
                Diagnostic(
                    CHECKSUMS,
                    n,
                    1,
                    "$",
                    f"unsafe or self-referencing path {rel!r}",
                    "bundle.unsafe-path",
                )
            )
            continue
        if rel in listed:
            diags.append(
                Diagnostic(CHECKSUMS, n, 1, "$", f"{rel} is listed twice", "bundle.duplicate")
            )
            continue
        listed[rel] = digest
    present: set[str] = set()
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            diags.append(Diagnostic(rel, 0, 0, "$", "symbolic link in bundle", "bundle.symlink"))
            continue
        if path.is_file() and rel != CHECKSUMS:
            present.add(rel)
    for rel in sorted(listed):
        path = root / rel
        if rel not in present:
            diags.append(
                Diagnostic(
                    rel, 0, 0, "$", "missing file (listed in checksums.txt)", "bundle.missing"
                )
            )
        elif _digest(path, root) != listed[rel]:
            diags.append(
                Diagnostic(
                    rel,
                    0,
                    0,
                    "$",
                    "modified file (sha256 differs from checksums.txt)",
                    "bundle.modified",
                )
            )
    for rel in sorted(present - set(listed)):
        diags.append(
            Diagnostic(rel, 0, 0, "$", "extra file (not in checksums.txt)", "bundle.extra")
        )
    return sort_diagnostics(diags)
