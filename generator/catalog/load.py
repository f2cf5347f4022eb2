"""Stage 1, load: read every catalog file into located documents and typed records.

Reads the AICR recipe-data layout (`registry.yaml`, `overlays/`, `mixins/`, `components/`) plus the
project's own kinds (`scale/`, `signers.yaml`, `criteria.yaml`); a tree without the project's own
files (upstream AICR's `recipes/`) gets built-in defaults, listed in `Catalog.defaulted`. Files that
are not recipe data (`data.go`, READMEs, upstream's `checks/` and `validators/`) are not read, as
upstream skips them. Manifests are kept as bytes and classified (`generator.catalog.manifests`). Each file is parsed safely
(`yamlio`), its header checked, and its schema validated here at the boundary, so records built from
it can be trusted by later stages. Problems are collected, never raised one at a time.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from generator.catalog import schemas
from generator.catalog.manifests import check_manifest
from generator.core import safeio
from generator.core.errors import Diagnostic, LoadError
from generator.core.records import (
    DIMENSIONS,
    WILDCARD,
    Catalog,
    ComponentRef,
    Constraint,
    Criteria,
    Document,
    ManifestFile,
    Overlay,
    OwnedValue,
    Registry,
    RegistryComponent,
    ScaleProfile,
)
from generator.core.yamlio import MAX_FILE_BYTES, parse_yaml

AICR_API_VERSIONS: tuple[str, ...] = (
    "aicr.run/v1beta1",
    "aicr.run/v1alpha2",
    "aicr.run/v1alpha3",
    "aicr.run/v1beta2",
    "aicr.nvidia.com/v1alpha1",
)
CATALOG_API_VERSIONS: tuple[str, ...] = ("catalog.aicr.run/v1alpha1",)
YAML_SUFFIXES = (".yaml", ".yml")


def _rel(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix()


def read_file(root: Path, path: Path) -> tuple[bytes | None, tuple[Diagnostic, ...]]:
    """Bytes of a regular file inside `root` (`safeio.read`: links leaving the root, non-regular
    files and files over the size limit refused, as diagnostics)."""
    rel = _rel(root, path)
    try:
        return safeio.read(path, root=root, where="the catalog", limit=MAX_FILE_BYTES), ()
    except safeio.Refusal as r:
        return None, (safeio.diagnostic(rel, r),)


_HELM_ACTION = re.compile(rb"\{\{.*?\}\}", re.S)


def _blank_actions(raw: bytes) -> bytes:
    """A manifest is a Helm template: its `{{ ... }}` actions are blanked (spaces, newlines kept)
    so the YAML around them is still parsed and located; it is never read for its values."""
    return _HELM_ACTION.sub(lambda m: re.sub(rb"[^\n]", b" ", m.group()), raw)


def parse_file(
    root: Path,
    path: Path,
    *,
    multi: bool = False,
    allow_empty: bool = False,
    template: bool = False,
) -> tuple[Document | None, tuple[Diagnostic, ...]]:
    raw, diags = read_file(root, path)
    if raw is None:
        return None, diags
    if template:
        raw = _blank_actions(raw)
    try:
        return parse_yaml(raw, _rel(root, path), multi=multi, allow_empty=allow_empty), ()
    except LoadError as e:
        return None, e.diagnostics


def check_header(doc: Document, kind: str, accepted: Iterable[str]) -> tuple[Diagnostic, ...]:
    """The apiVersion/kind header: missing, unknown or wrong-kind headers name what was seen and accepted."""
    accepted = tuple(accepted)
    data = doc.data
    if not isinstance(data, dict):
        line, col = doc.locate("$")
        seen = type(data).__name__ if data is not None else "nothing"
        return (
            Diagnostic(
                doc.rel,
                line,
                col,
                "$",
                f"expected a {kind} mapping, found {seen}",
                "header.missing",
            ),
        )
    out: list[Diagnostic] = []
    api = data.get("apiVersion")
    seen_kind = data.get("kind")
    if api is None or seen_kind is None:
        missing = " and ".join(
            k for k, v in (("apiVersion", api), ("kind", seen_kind)) if v is None
        )
        line, col = doc.locate("$")
        out.append(
            Diagnostic(
                doc.rel,
                line,
                col,
                "$",
                f"missing {missing}: expected kind {kind} with apiVersion one of {', '.join(accepted)}",
                "header.missing",
            )
        )
        return tuple(out)
    if seen_kind != kind:
        line, col = doc.locate("$.kind")
        out.append(
            Diagnostic(
                doc.rel,
                line,
                col,
                "$.kind",
                f"kind is '{seen_kind}', expected '{kind}' here",
                "header.kind",
            )
        )
    if api not in accepted:
        line, col = doc.locate("$.apiVersion")
        out.append(
            Diagnostic(
                doc.rel,
                line,
                col,
                "$.apiVersion",
                f"unknown apiVersion '{api}' for {kind}; accepted: {', '.join(accepted)}",
                "header.api-version",
            )
        )
    return tuple(out)


def _criteria(raw: Any) -> Criteria:
    """Criteria as written: upstream compares overlay values verbatim (no case folding)."""
    raw = raw if isinstance(raw, dict) else {}
    values: dict[str, str | None] = {}
    for d in DIMENSIONS:
        v = raw.get(d)
        values[d] = None if v in (None, "", WILDCARD) else str(v)
    return Criteria(**values)


def upstream_specificity(raw: Any) -> int:
    """upstream's `Criteria.Specificity()` of criteria loaded from YAML: a dimension counts unless
    its value is the literal `any` (an absent one is "" there, which counts); nodes count when set."""
    raw = raw if isinstance(raw, dict) else {}
    score = sum(1 for d in DIMENSIONS if raw.get(d) != WILDCARD)
    return score + (1 if _nodes(raw) else 0)


def _nodes(raw: Any) -> int:
    n = raw.get("nodes") if isinstance(raw, dict) else None
    return n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else 0


def _constraints(raw: Any) -> tuple[Constraint, ...]:
    return tuple(
        Constraint(
            name=c["name"],
            value=str(c["value"]).lower() if isinstance(c["value"], bool) else str(c["value"]),
            severity=c.get("severity"),
            remediation=c.get("remediation"),
            unit=c.get("unit"),
        )
        for c in raw or ()
    )


def _component_refs(raw: Any, base_path: str) -> tuple[ComponentRef, ...]:
    out = []
    for i, r in enumerate(raw or ()):
        out.append(
            ComponentRef(
                name=r["name"],
                type=r.get("type"),
                source=r.get("source"),
                version=str(r["version"]) if r.get("version") is not None else None,
                namespace=r.get("namespace"),
                chart=r.get("chart"),
                values_file=r.get("valuesFile"),
                overrides=r.get("overrides"),
                manifest_files=tuple(r.get("manifestFiles") or ()),
                pre_manifest_files=tuple(r.get("preManifestFiles") or ()),
                dependency_refs=tuple(r.get("dependencyRefs") or ()),
                enabled=r.get("enabled"),
                json_path=f"{base_path}[{i}]",
            )
        )
    return tuple(out)


def overlay_from(doc: Document) -> Overlay:
    data = doc.data
    spec = data.get("spec") or {}
    base = spec.get("base")
    name = data["metadata"]["name"]
    if data["kind"] == "RecipeMetadata" and name != "base" and not base:
        base = "base"  # upstream: an empty base means the root overlay
    raw_criteria = spec.get("criteria")
    return Overlay(
        kind=data["kind"],
        api_version=data["apiVersion"],
        name=name,
        base=base or None,
        criteria=_criteria(raw_criteria),
        mixins=tuple(spec.get("mixins") or ()),
        constraints=_constraints(spec.get("constraints")),
        component_refs=_component_refs(spec.get("componentRefs"), "$.spec.componentRefs"),
        validation={k: v for k, v in sorted((spec.get("validation") or {}).items())},
        doc=doc,
        has_criteria=isinstance(raw_criteria, dict),
        upstream_specificity=upstream_specificity(raw_criteria),
        nodes=_nodes(raw_criteria),
    )


def registry_from(doc: Document) -> Registry:
    comps: dict[str, RegistryComponent] = {}
    for i, c in enumerate(doc.data.get("components") or ()):
        helm = c.get("helm") or {}
        kind = "Kustomize" if c.get("kustomize") else "Helm"
        version = helm.get("defaultVersion")
        comps.setdefault(
            c["name"],
            RegistryComponent(
                name=c["name"],
                display_name=c.get("displayName") or c["name"],
                value_override_keys=tuple(c.get("valueOverrideKeys") or ()),
                repository=helm.get("defaultRepository") or None,
                chart=helm.get("defaultChart") or None,
                version=str(version) if version is not None else None,
                # v0.11.1 states a manifest-only component's namespace under `manifest:`; current
                # upstream moved it to `helm.defaultNamespace` (docs/upstream-compatibility.md)
                namespace=helm.get("defaultNamespace")
                or (c.get("manifest") or {}).get("defaultNamespace")
                or None,
                kind=kind,
                json_path=f"$.components[{i}]",
            ),
        )
    return Registry(components=comps, doc=doc)


def profile_from(doc: Document) -> ScaleProfile:
    data = doc.data
    spec = data.get("spec") or {}
    owned: list[OwnedValue] = []
    for comp, paths in sorted((spec.get("ownedValues") or {}).items()):
        for path, entry in sorted((paths or {}).items()):
            owned.append(
                OwnedValue(
                    component=comp,
                    path=path,
                    value=entry.get("value"),
                    rationale=entry.get("rationale", ""),
                    status=entry.get("status", "proposed"),
                    evidence=tuple(entry.get("evidence") or ()),
                )
            )
    nodes = spec.get("nodes") or {}
    return ScaleProfile(
        name=data["metadata"]["name"],
        version=str(data["metadata"].get("version", "0.0.0")),
        nodes_min=int(nodes.get("min", 1)),
        nodes_max=int(nodes.get("max", 1)),
        description=str(data["metadata"].get("description", "")),
        applies_to=tuple(_criteria(c) for c in spec.get("appliesTo") or ()),
        owned_values=tuple(owned),
        prerequisites=tuple(spec.get("prerequisites") or ()),
        ladder=tuple(spec.get("ladder") or ()),
        doc=doc,
    )


def _dir_escapes(root: Path, directory: Path) -> Diagnostic | None:
    """A diagnostic when a catalog directory is a link leading outside the catalog."""
    real = Path(os.path.realpath(directory))
    if directory.is_dir() and not real.is_relative_to(Path(os.path.realpath(root))):
        msg = "symbolic link points outside the catalog"
        return Diagnostic(_rel(root, directory), 0, 0, "$", msg, "file.symlink-escape")
    return None


def _yaml_files(directory: Path) -> list[Path]:
    if not directory.is_dir():
        return []
    # a directory named like a YAML file is listed too: read_file refuses it by name ("not a
    # regular file"), instead of the recipe of that name silently disappearing
    return sorted(p for p in directory.iterdir() if p.name.endswith(YAML_SUFFIXES))


def _kind_doc(
    root: Path,
    path: Path,
    kind: str,
    accepted: Iterable[str],
    schema_name: str | None,
    diags: list[Diagnostic],
) -> Document | None:
    doc, d = parse_file(root, path)
    diags.extend(d)
    if doc is None:
        return None
    head = check_header(doc, kind, accepted)
    if head:
        diags.extend(head)
        return None
    if schema_name is not None and (schemas.SCHEMA_DIR / f"{schema_name}.schema.json").is_file():
        found = schemas.check(doc, schema_name)
        if found:
            diags.extend(found)
            return None
    return doc


def load_catalog(root: Path) -> tuple[Catalog, tuple[Diagnostic, ...]]:
    """Read the catalog at `root`. Returns the catalog (what could be loaded) and every load problem."""
    root = Path(root)
    diags: list[Diagnostic] = []
    if not root.is_dir():
        raise LoadError(
            f"catalog directory not found: {root}",
            [Diagnostic(str(root), 0, 0, "$", "catalog directory not found", "catalog.missing")],
        )

    # a file (or a pipe, or a link to one) where a directory of recipe data is expected would
    # silently hide every recipe in it
    for sub in ("overlays", "mixins", "components", "scale/profiles"):
        if os.path.lexists(root / sub) and not (root / sub).is_dir():
            msg = "expected a directory of catalog files here, found a file"
            diags.append(Diagnostic(sub, 0, 0, "$", msg, "file.not-directory"))

    registry = Registry(components={}, doc=None)
    reg_path = root / "registry.yaml"
    if reg_path.exists() or reg_path.is_symlink():
        doc = _kind_doc(
            root, reg_path, "ComponentRegistry", AICR_API_VERSIONS, "ComponentRegistry", diags
        )
        if doc is not None:
            registry = registry_from(doc)
    else:
        diags.append(
            Diagnostic(
                "registry.yaml",
                0,
                0,
                "$",
                "the catalog has no registry.yaml",
                "catalog.registry-missing",
            )
        )

    overlays: dict[str, Overlay] = {}
    mixins: dict[str, Overlay] = {}
    unloadable: set[str] = set()
    for sub, kind, target in (
        ("overlays", "RecipeMetadata", overlays),
        ("mixins", "RecipeMixin", mixins),
    ):
        escape = _dir_escapes(root, root / sub)
        if escape is not None:
            diags.append(escape)
            continue
        parsed: list[tuple[str, Path, Overlay]] = []
        for path in _yaml_files(root / sub):
            doc = _kind_doc(root, path, kind, AICR_API_VERSIONS, kind, diags)
            stem = path.name.rsplit(".", 1)[0]
            if doc is None:
                unloadable.add(stem)
                continue
            parsed.append((stem, path, overlay_from(doc)))
        # the file whose name matches metadata.name keeps the name; the others are the duplicates
        parsed.sort(key=lambda t: (t[2].name != t[0], t[1].name))
        for stem, path, item in parsed:
            doc = item.doc
            if item.name != stem:
                line, col = doc.locate("$.metadata.name")
                msg = f"metadata.name '{item.name}' does not match the file name '{path.name}'"
                diags.append(
                    Diagnostic(doc.rel, line, col, "$.metadata.name", msg, "overlay.name-mismatch")
                )
            if item.name in target or item.name in unloadable:
                line, col = doc.locate("$.metadata.name")
                other = target[item.name].doc.rel if item.name in target else "another file"
                msg = f"{kind} '{item.name}' is already defined in {other}"
                diags.append(
                    Diagnostic(doc.rel, line, col, "$.metadata.name", msg, "overlay.duplicate-name")
                )
                continue
            target[item.name] = item

    files: dict[str, Document] = {}
    manifests: dict[str, ManifestFile] = {}
    comp_dir = root / "components"
    comp_escape = _dir_escapes(root, comp_dir)
    if comp_escape is not None:
        diags.append(comp_escape)
    elif comp_dir.is_dir():
        for dirpath, dirnames, filenames in os.walk(comp_dir):
            dirnames.sort()
            for fname in sorted(filenames):
                if not fname.endswith(YAML_SUFFIXES):
                    continue
                path = Path(dirpath) / fname
                if "manifests" in path.relative_to(comp_dir).parts:
                    # a Helm template or plain YAML: its bytes are kept, never understood
                    raw, d = read_file(root, path)
                    diags.extend(d)
                    if raw is not None:
                        info, mdoc, d = check_manifest(raw, _rel(root, path))
                        diags.extend(d)
                        manifests[info.rel] = info
                        files[mdoc.rel] = mdoc
                    continue
                doc, d = parse_file(root, path, allow_empty=True)
                diags.extend(d)
                if doc is not None:
                    files[doc.rel] = doc

    profiles: dict[str, ScaleProfile] = {}
    prof_escape = _dir_escapes(root, root / "scale" / "profiles")
    if prof_escape is not None:
        diags.append(prof_escape)
    for path in [] if prof_escape else _yaml_files(root / "scale" / "profiles"):
        doc = _kind_doc(root, path, "ScaleProfile", CATALOG_API_VERSIONS, "scale-profile", diags)
        if doc is not None:
            prof = profile_from(doc)
            profiles.setdefault(prof.name, prof)

    documents: dict[str, Document] = {}
    for rel, _kind in (
        ("scale/lanes.yaml", "QualificationLanes"),
        ("signers.yaml", "SignerPolicy"),
        ("scale/checks.yaml", None),
    ):
        path = root / rel
        if path.exists():
            doc, d = parse_file(root, path)
            diags.extend(d)
            if doc is not None:
                documents[rel] = doc

    extra: dict[str, tuple[str, ...]] = {}
    crit_path = root / "criteria.yaml"
    if crit_path.exists():
        doc = _kind_doc(
            root, crit_path, "CriteriaValues", CATALOG_API_VERSIONS, "CriteriaValues", diags
        )
        if doc is not None:
            extra = {d: tuple(v) for d, v in sorted((doc.data.get("spec") or {}).items())}

    # a build reads every file of the tree (to key its cache): report what it would refuse
    for rel, refusal in safeio.scan_tree(root, where="the catalog"):
        diags.append(safeio.diagnostic(rel, refusal))

    catalog = Catalog(
        root=str(root),
        overlays=dict(sorted(overlays.items())),
        mixins=dict(sorted(mixins.items())),
        registry=registry,
        profiles=dict(sorted(profiles.items())),
        files=dict(sorted(files.items())),
        extra_criteria=extra,
        documents=documents,
        unloadable=frozenset(unloadable),
        manifests=dict(sorted(manifests.items())),
        defaulted=tuple(
            rel
            for rel, present in (
                ("signers.yaml", (root / "signers.yaml").exists()),
                ("scale/", (root / "scale").is_dir()),
            )
            if not present
        ),
    )
    return catalog, tuple(diags)
