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
import re
import stat
from collections.abc import Mapping
from pathlib import Path

from generator.catalog import chartvalues
from generator.core import safeio
from generator.core.errors import Diagnostic, LoadError, Severity, sort_diagnostics
from generator.core.records import Document
from generator.core.yamlio import parse_yaml
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
    if not safeio.lexists(sums):
        message = "checksums.txt is missing: nothing to verify against"
        return (Diagnostic(CHECKSUMS, 0, 0, "$", message, "bundle.no-checksums"),)
    try:
        # a link out of the bundle is refused unread: no line of its target can be printed
        raw = safeio.read(sums, root=root, where="the bundle", limit=safeio.CHECKSUMS_BYTES)
    except safeio.Refusal as r:
        return (Diagnostic(CHECKSUMS, 0, 0, "$", r.message, "bundle.no-checksums"),)
    listed, diags = _parse_checksums(raw.decode("utf-8", errors="replace"))
    present, links = _present(root)
    diags += links
    diags += _listed_problems(root, listed, present)
    diags += _unlisted_problems(present - set(listed), is_closed_world(root, listed))
    diags += _chart_value_problems(root, present)
    return sort_diagnostics(diags)


def _chart_value_problems(root: Path, present: set[str]) -> list[Diagnostic]:
    """The values.yaml of each local chart the bundle ships, against how its templates print
    them (`catalog.chartvalues`): a bundle whose values were edited, checksums and all, to
    inject YAML through a raw print is not called clean."""
    out: list[Diagnostic] = []
    charts = sorted({p.split("/templates/", 1)[0] for p in present if "/templates/" in p})
    for d in charts:
        chart_doc = _yaml_doc(root, f"{d}/Chart.yaml")
        values_doc = _yaml_doc(root, f"{d}/values.yaml")
        if chart_doc is None or values_doc is None or not isinstance(chart_doc.data, dict):
            continue
        component = (chart_doc.data.get("annotations") or {}).get("aicr.run/component")
        if not isinstance(component, str) or not isinstance(values_doc.data, dict):
            continue
        templates = []
        for rel in sorted(p for p in present if p.startswith(f"{d}/templates/")):
            try:
                data = safeio.read(root / rel, root=root, where="the bundle")
            except safeio.Refusal:
                continue  # reported by the checksum comparison
            templates.append((rel, data))
        found = chartvalues.folder_problems(
            component, values_doc.data.get(component), tuple(templates), f"$.{component}"
        )
        for jp, msg, rule in found:
            line, col = values_doc.locate(jp)
            out.append(Diagnostic(values_doc.rel, line, col, jp, msg, rule))
    return out


def _yaml_doc(root: Path, rel: str) -> Document | None:
    try:
        raw = safeio.read(root / rel, root=root, where="the bundle", limit=safeio.YAML_BYTES)
        return parse_yaml(raw, rel)
    except (safeio.Refusal, LoadError):
        return None  # reported by the checksum comparison, or not this check's business


def _parse_checksums(text: str) -> tuple[dict[str, str], list[Diagnostic]]:
    """{relative path: sha256} of a checksums.txt, and its malformed, unsafe and repeated
    lines."""
    diags: list[Diagnostic] = []
    listed: dict[str, str] = {}
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
            message = f"unsafe or self-referencing path {rel!r}"
            diags.append(Diagnostic(CHECKSUMS, n, 1, "$", message, "bundle.unsafe-path"))
            continue
        if rel in listed:
            diags.append(
                Diagnostic(CHECKSUMS, n, 1, "$", f"{rel} is listed twice", "bundle.duplicate")
            )
            continue
        listed[rel] = digest
    return listed, diags


def _present(root: Path) -> tuple[set[str], list[Diagnostic]]:
    """The regular files of the bundle but checksums.txt, and its symbolic links (refused)."""
    present: set[str] = set()
    links: list[Diagnostic] = []
    for e in sorted(safeio.walk(root).entries, key=lambda e: safeio.order_key(e.rel)):
        rel = e.rel
        if e.kind is not safeio.Kind.FILE:  # a link, to a directory or not: never followed
            links.append(Diagnostic(rel, 0, 0, "$", "symbolic link in bundle", "bundle.symlink"))
            continue
        if e.stat is not None and stat.S_ISREG(e.stat.st_mode) and rel != CHECKSUMS:
            present.add(rel)
    return present, links


def _listed_problems(root: Path, listed: Mapping[str, str], present: set[str]) -> list[Diagnostic]:
    """Each listed file missing, or whose bytes are not the listed sha256."""
    diags: list[Diagnostic] = []
    for rel in sorted(listed):
        if rel not in present:
            message = "missing file (listed in checksums.txt)"
            diags.append(Diagnostic(rel, 0, 0, "$", message, "bundle.missing"))
        elif _digest(root / rel, root) != listed[rel]:
            message = "modified file (sha256 differs from checksums.txt)"
            diags.append(Diagnostic(rel, 0, 0, "$", message, "bundle.modified"))
    return diags


def _unlisted_problems(unlisted: set[str], closed: bool) -> list[Diagnostic]:
    """Files checksums.txt does not list: errors in this project's bundles, warnings (not
    verified) in upstream AICR's."""
    if closed:
        return [
            Diagnostic(rel, 0, 0, "$", "extra file (not in checksums.txt)", "bundle.extra")
            for rel in sorted(unlisted)
        ]
    message = (
        "not covered by checksums.txt, so not verified (an upstream AICR bundle "
        "leaves recipe.yaml and attestation/ out of it)"
    )
    return [
        Diagnostic(rel, 0, 0, "$", message, "bundle.not-covered", Severity.WARNING)
        for rel in sorted(unlisted)
    ]


def is_closed_world(root: Path, listed: Mapping[str, str] | None = None) -> bool:
    """Whether `root` is one of this project's bundles, whose checksums.txt lists every file:
    it has (or its checksums.txt lists) bundle-info.yaml. Upstream AICR bundles have neither."""
    if listed is not None and BUNDLE_INFO in listed:
        return True
    return safeio.exists(Path(root) / BUNDLE_INFO)
