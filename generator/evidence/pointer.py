"""Upstream AICR's evidence pointer files: `recipes/evidence/<recipe>/<source>/sha256-<hex>.yaml`.

A pointer binds the repository to a signed bundle in an OCI registry by content digest:

    schemaVersion: 1.0.0
    recipe: <recipe name>
    profile: <name=value>            # optional
    attestations:                    # upstream V1 writes exactly one entry
      - bundle: {oci: REGISTRY/REPO[:tag], digest: sha256:<hex>, predicateType: <uri>}
        signer: {identity: ..., issuer: ..., rekorLogIndex: N}   # rekorLogIndex optional
        attestedAt: <RFC 3339>

`<source>` is the first 32 hex of sha256(issuer + "\\n" + identity) of the signer (the same slug as
this catalog's `evidence/<recipe>/<source>/`), and the file name is the bundle digest with `:`
written `-`. `read_pointer` checks the shape (located diagnostics) and that the file sits where
its own content says it belongs; the signer it names is only a claim until the pulled bundle's
certificate says the same (see `generator.evidence.upstream`).
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from generator.core import safeio
from generator.core.errors import Diagnostic, LoadError
from generator.core.records import Document
from generator.core.yamlio import parse_yaml
from generator.evidence.recipedigest import dump_yaml_v3
from generator.evidence.store import is_safe_name, source_id

if TYPE_CHECKING:
    from generator.core.cache import Cache

SCHEMA_VERSION = "1.0.0"
POINTER_GLOB = "sha256-*.yaml"
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
_FILE = re.compile(r"^sha256-[0-9a-f]{64}\.yaml$")
_KEYS = {"schemaVersion", "recipe", "profile", "attestations"}
_ATT_KEYS = {"bundle", "signer", "attestedAt"}
_BUNDLE_KEYS = {"oci", "digest", "predicateType"}
_SIGNER_KEYS = {"identity", "issuer", "rekorLogIndex"}


@dataclass(frozen=True, slots=True)
class Pointer:
    path: str  # as shown (relative to the base)
    recipe: str
    profile: str | None
    oci: str
    digest: str  # sha256:<hex>, the OCI manifest digest
    predicate_type: str
    identity: str
    issuer: str
    rekor_log_index: int | None
    attested_at: str

    @property
    def source(self) -> str:
        return source_id(self.issuer, self.identity)

    @property
    def expected_suffix(self) -> str:
        """`<recipe>/<source>/sha256-<hex>.yaml`: where this pointer belongs under an evidence root."""
        return f"{self.recipe}/{self.source}/{self.digest.replace(':', '-')}.yaml"


def is_pointer_name(name: str) -> bool:
    return _FILE.fullmatch(name) is not None


def discover(paths: list[Path]) -> list[Path]:
    """Pointer files given directly or found under the given directories (sorted, no links):
    regular files named `sha256-<hex>.yaml`, found by one `safeio.walk` of each directory
    (which descends no link), not a recursive glob (a second walk of the evidence tree that
    took a `stat` and an `lstat` per match: `discover_reference`)."""
    out: set[Path] = set()
    for p in paths:
        if safeio.is_file(p) and is_pointer_name(p.name):
            out.add(p)
        elif safeio.is_dir(p):
            out.update(in_tree(safeio.walk(p, suffixes=(".yaml",))))
    return sorted(out)


def in_tree(tree: safeio.Tree, cache: Cache | None = None) -> list[Path]:
    """The pointer files among the entries of a walked tree: regular files (no links) named
    `sha256-<hex>.yaml`. With `cache`, found once per walk in its build (`Cache.of_walk`: the
    build key and the verify stage read the same walk); `in_tree_reference` finds them each
    time."""
    if cache is None:
        return list(_pointers(tree))
    return list(cache.of_walk(tree, "pointers", lambda: _pointers(tree)))


def _pointers(tree: safeio.Tree) -> tuple[Path, ...]:
    """`in_tree_reference`, a name ending in `.yaml` told first (every pointer file's does:
    `_FILE`), before a `basename` and a match per entry (20,000 at 1,000 x 20,000)."""
    regular = safeio.Kind.FILE
    return tuple(
        Path(e.path)
        for e in tree.entries
        if e.rel.endswith(".yaml")
        and e.kind is regular
        and e.stat is not None
        and stat.S_ISREG(e.stat.st_mode)
        and is_pointer_name(os.path.basename(e.path))
    )


def in_tree_reference(tree: safeio.Tree) -> list[Path]:
    """`in_tree` found from the walk's entries (the reference)."""
    return [
        Path(e.path)
        for e in tree.entries
        if e.kind is safeio.Kind.FILE
        and e.stat is not None
        and stat.S_ISREG(e.stat.st_mode)
        and is_pointer_name(os.path.basename(e.path))
    ]


def discover_reference(paths: list[Path]) -> list[Path]:
    """`discover` as a top-down walk gives it (`safeio.walk_dirs`; the reference, for the
    differential test: what the recursive glob of `POINTER_GLOB` found, each checked by its
    path)."""
    out: set[Path] = set()
    for p in paths:
        if safeio.is_file(p) and is_pointer_name(p.name):
            out.add(p)
        elif safeio.is_dir(p):
            for dirpath, _dirnames, filenames in safeio.walk_dirs(p):
                for name in filenames:
                    found = Path(dirpath, name)
                    if (
                        safeio.is_file(found)
                        and not safeio.is_link(found)
                        and is_pointer_name(name)
                    ):
                        out.add(found)
    return sorted(out)


_AT = "$.attestations[0]"


def _diag(doc: Document | None, shown: str, json_path: str, message: str, rule: str) -> Diagnostic:
    line, col = doc.locate(json_path) if doc is not None else (0, 0)
    return Diagnostic(shown, line, col, json_path, message, rule)


def _unknown(
    data: dict[str, Any], allowed: set[str], at: str, doc: Document, shown: str
) -> list[Diagnostic]:
    return [
        _diag(
            doc,
            shown,
            f"{at}.{k}",
            f"unknown key {k!r} (allowed: {', '.join(sorted(allowed))})",
            "pointer.schema",
        )
        for k in sorted(map(str, data))
        if k not in allowed
    ]


def _string(
    data: dict[str, Any], key: str, at: str, doc: Document, shown: str, diags: list[Diagnostic]
) -> str:
    value = data.get(key)
    if isinstance(value, str) and value:
        return value
    if key == "attestedAt" and value is not None and not isinstance(value, str):
        return str(value)  # YAML read an unquoted timestamp as a date-time
    diags.append(
        _diag(doc, shown, f"{at}.{key}", f"{key} must be a non-empty string", "pointer.schema")
    )
    return ""


class _Problems:
    """The diagnostics of one pointer file, located in its document."""

    def __init__(self, doc: Document, shown: str) -> None:
        self.doc, self.shown = doc, shown
        self.diags: list[Diagnostic] = []

    def add(self, json_path: str, message: str, rule: str = "pointer.schema") -> None:
        self.diags.append(_diag(self.doc, self.shown, json_path, message, rule))

    def unknown(self, data: dict[str, Any], allowed: set[str], at: str) -> None:
        self.diags += _unknown(data, allowed, at, self.doc, self.shown)

    def string(self, data: dict[str, Any], key: str, at: str) -> str:
        return _string(data, key, at, self.doc, self.shown, self.diags)


def _header(data: dict[str, Any], p: _Problems) -> tuple[str, str | None]:
    """(recipe, profile) after checking the keys and the schema version."""
    p.unknown(data, _KEYS, "$")
    version = str(data.get("schemaVersion", ""))
    if not (version == "1.0" or version.startswith("1.0.")):
        p.add("$.schemaVersion", f"schemaVersion {version!r} is not supported (1.0.x)")
    recipe = p.string(data, "recipe", "$")
    if recipe and not is_safe_name(recipe):
        p.add("$.recipe", f"{recipe!r} is not a safe path segment")
    profile = data.get("profile")
    if profile is not None and (not isinstance(profile, str) or not profile):
        p.add("$.profile", "profile must be a non-empty string when present")
        profile = None
    return recipe, profile


def _attestation(data: dict[str, Any], p: _Problems) -> dict[str, Any] | None:
    """The one attestation entry, or None (said why)."""
    atts = data.get("attestations")
    if not isinstance(atts, list) or len(atts) != 1:
        p.add(
            "$.attestations",
            "attestations must list exactly one entry (pointer schema 1.0; upstream writes one per file)",
        )
        return None
    if not isinstance(atts[0], dict):
        p.add(_AT, "an attestation is a mapping")
        return None
    p.unknown(atts[0], _ATT_KEYS, _AT)
    return atts[0]


def _parts(att: dict[str, Any], p: _Problems) -> tuple[dict[str, Any], dict[str, Any]]:
    """The attestation's bundle and signer mappings ({} when missing, said why)."""
    bundle, signer = att.get("bundle"), att.get("signer")
    if not isinstance(bundle, dict):
        p.add(f"{_AT}.bundle", "bundle must be a mapping {oci, digest, predicateType}")
        bundle = {}
    if not isinstance(signer, dict):
        p.add(
            f"{_AT}.signer",
            "signer is required: an unsigned pointer has no place under <recipe>/<source>/",
            "pointer.unsigned",
        )
        signer = {}
    p.unknown(bundle, _BUNDLE_KEYS, f"{_AT}.bundle")
    p.unknown(signer, _SIGNER_KEYS, f"{_AT}.signer")
    return bundle, signer


def _bundle(bundle: dict[str, Any], p: _Problems) -> tuple[str, str, str]:
    """(oci reference, digest, predicateType) of the attestation's bundle."""
    oci = p.string(bundle, "oci", f"{_AT}.bundle")
    digest = p.string(bundle, "digest", f"{_AT}.bundle")
    if digest and not _DIGEST.fullmatch(digest):
        p.add(f"{_AT}.bundle.digest", "digest must be sha256:<64 lower-case hex>")
    return oci, digest, p.string(bundle, "predicateType", f"{_AT}.bundle")


def _signer(signer: dict[str, Any], p: _Problems) -> tuple[str, str, int | None]:
    """(identity, issuer, rekorLogIndex) of the attestation's signer."""
    identity = p.string(signer, "identity", f"{_AT}.signer") if signer else ""
    issuer = p.string(signer, "issuer", f"{_AT}.signer") if signer else ""
    index = signer.get("rekorLogIndex")
    if index is not None and (isinstance(index, bool) or not isinstance(index, int) or index < 0):
        p.add(f"{_AT}.signer.rekorLogIndex", "rekorLogIndex must be a whole number")
        index = None
    return identity, issuer, index


def parse_pointer(raw: bytes, shown: str) -> tuple[Pointer | None, tuple[Diagnostic, ...]]:
    """The pointer in `raw`, or None and why not."""
    try:
        doc = parse_yaml(raw, shown)
    except LoadError as e:  # already located
        return None, e.diagnostics or (Diagnostic(shown, 0, 0, "$", e.message, "pointer.yaml"),)
    data = doc.data
    if not isinstance(data, dict):
        return None, (_diag(doc, shown, "$", "a pointer is a mapping", "pointer.schema"),)
    p = _Problems(doc, shown)
    recipe, profile = _header(data, p)
    att = _attestation(data, p)
    if att is None:
        return None, tuple(p.diags)
    bundle, signer = _parts(att, p)
    oci, digest, ptype = _bundle(bundle, p)
    identity, issuer, index = _signer(signer, p)
    attested = p.string(att, "attestedAt", _AT)
    if p.diags:
        return None, tuple(p.diags)
    return (
        Pointer(shown, recipe, profile, oci, digest, ptype, identity, issuer, index, attested),
        (),
    )


def location_problem(pointer: Pointer, stored: str) -> str | None:
    """None when the pointer file's last three path segments are `<recipe>/<source>/<digest>.yaml`."""
    parts = PurePosixPath(stored).parts
    if "/".join(parts[-3:]) == pointer.expected_suffix:
        return None
    return (
        f"pointer is at {stored} but its recipe, signer and bundle digest put it at "
        f".../{pointer.expected_suffix}"
    )


def render_pointer(
    *,
    recipe: str,
    profile: str | None,
    oci: str,
    digest: str,
    predicate_type: str,
    identity: str,
    issuer: str,
    rekor_log_index: int | None,
    attested_at: str,
) -> bytes:
    """Pointer YAML as upstream writes it: keys sorted, 2-space indent, one attestation."""
    signer: dict[str, Any] = {"identity": identity, "issuer": issuer}
    if rekor_log_index is not None:
        signer["rekorLogIndex"] = rekor_log_index
    doc: dict[str, Any] = {
        "schemaVersion": SCHEMA_VERSION,
        "recipe": recipe,
        "attestations": [
            {
                "bundle": {"oci": oci, "digest": digest, "predicateType": predicate_type},
                "signer": signer,
                "attestedAt": attested_at,
            }
        ],
    }
    if profile:
        doc["profile"] = profile
    return dump_yaml_v3(doc, width=2)
