"""`bundle verify DIR`: check a bundle directory against its `checksums.txt`.

Every problem is reported, each naming its file: a changed file, a file listed but missing, a
malformed line, a path that leaves the bundle (`..`, absolute). Fails closed: no `checksums.txt`
is an error, never a pass.

Which files must be listed depends on who made the bundle:
- this project's bundles (`bundle-info.yaml` present or listed) are closed-world: every file but
  `checksums.txt` is listed, so a file present but not listed is an error (`bundle.extra`);
- upstream AICR's bundles (no `bundle-info.yaml`) write `recipe.yaml` and `attestation/` after
  `checksums.txt`, so files present but not listed are reported as not covered, a warning
  (`bundle.not-covered`): they are not verified, and nothing is said to match them.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from pathlib import Path

from generator.core import safeio
from generator.core.errors import Diagnostic, Severity, sort_diagnostics
from generator.render.common import BUNDLE_INFO, CHECKSUMS

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
        if not line.strip():
            continue  # upstream ends an empty list with a blank line
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
    closed = is_closed_world(root, listed)
    for rel in sorted(present - set(listed)):
        if closed:
            diags.append(
                Diagnostic(rel, 0, 0, "$", "extra file (not in checksums.txt)", "bundle.extra")
            )
        else:
            diags.append(
                Diagnostic(
                    rel,
                    0,
                    0,
                    "$",
                    "not covered by checksums.txt, so not verified (an upstream AICR bundle "
                    "leaves recipe.yaml and attestation/ out of it)",
                    "bundle.not-covered",
                    Severity.WARNING,
                )
            )
    return sort_diagnostics(diags)


def is_closed_world(root: Path, listed: Mapping[str, str] | None = None) -> bool:
    """Whether `root` is one of this project's bundles, whose checksums.txt lists every file:
    it has (or its checksums.txt lists) bundle-info.yaml. Upstream AICR bundles have neither."""
    if listed is not None and BUNDLE_INFO in listed:
        return True
    return (Path(root) / BUNDLE_INFO).exists()
