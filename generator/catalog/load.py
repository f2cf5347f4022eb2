"""Stage 1, load: read every catalog file into located documents and typed records.

Entry: `load_catalog(root) -> (Catalog, diagnostics)`, one step per kind of file. `check_header`
is shared with `validate`, which checks the headers of the lanes and signer policy loaded here.

Reads the AICR recipe-data layout (`registry.yaml`, `overlays/`, `mixins/`, `components/`) plus the
project's own kinds (`scale/`, `signers.yaml`, `criteria.yaml`); a tree without the project's own
files (upstream AICR's `recipes/`) gets built-in defaults, listed in `Catalog.defaulted`. Files that
are not recipe data (`data.go`, READMEs, upstream's `checks/` and `validators/`) are not read, as
upstream skips them. Manifests are kept as bytes and classified (`generator.catalog.manifests`).
Each file is parsed safely (`yamlio`), its header checked, and its schema validated here at the
boundary, so records built from it can be trusted by later stages. Problems are collected, never
raised one at a time.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from generator.catalog import rules as upstream_rules
from generator.catalog import schemas
from generator.catalog.criteria import tree_criteria
from generator.catalog.manifests import check_manifest
from generator.core import safeio
from generator.core.errors import Diagnostic, LoadError
from generator.core.records import (
    DIMENSIONS,
    WILDCARD,
    Catalog,
    ComponentRef,
    ConfigProfile,
    Constraint,
    Criteria,
    Document,
    ManifestFile,
    Overlay,
    OwnedValue,
    ProfileValue,
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


def _parse_file(
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
        seen = type(data).__name__ if data is not None else "nothing"
        return (_header_diag(doc, "$", f"expected a {kind} mapping, found {seen}", "missing"),)
    api = data.get("apiVersion")
    seen_kind = data.get("kind")
    if api is None or seen_kind is None:
        missing = " and ".join(
            k for k, v in (("apiVersion", api), ("kind", seen_kind)) if v is None
        )
        msg = (
            f"missing {missing}: expected kind {kind} with apiVersion one of {', '.join(accepted)}"
        )
        return (_header_diag(doc, "$", msg, "missing"),)
    out: list[Diagnostic] = []
    if seen_kind != kind:
        msg = f"kind is '{seen_kind}', expected '{kind}' here"
        out.append(_header_diag(doc, "$.kind", msg, "kind"))
    if api not in accepted:
        msg = f"unknown apiVersion '{api}' for {kind}; accepted: {', '.join(accepted)}"
        out.append(_header_diag(doc, "$.apiVersion", msg, "api-version"))
    return tuple(out)


def _header_diag(doc: Document, json_path: str, message: str, rule: str) -> Diagnostic:
    line, col = doc.locate(json_path)
    return Diagnostic(doc.rel, line, col, json_path, message, f"header.{rule}")


def _criteria(raw: Any) -> Criteria:
    """Criteria as written: upstream compares overlay values verbatim (no case folding)."""
    raw = raw if isinstance(raw, dict) else {}
    values: dict[str, str | None] = {}
    for d in DIMENSIONS:
        v = raw.get(d)
        values[d] = None if v in (None, "", WILDCARD) else str(v)
    return Criteria(**values)


def _upstream_specificity(raw: Any) -> int:
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
                expected_resources=tuple(r.get("expectedResources") or ()),
            )
        )
    return tuple(out)


def _overlay_from(doc: Document) -> Overlay:
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
        upstream_specificity=_upstream_specificity(raw_criteria),
        nodes=_nodes(raw_criteria),
        profile=_config_profile(spec.get("profile"), name),
    )


def _config_profile(raw: Any, overlay: str) -> ConfigProfile | None:
    """Upstream's `spec.profile` (ADR-015), its values in the order written."""
    if not isinstance(raw, dict):
        return None
    values: dict[str, ProfileValue] = {}
    for value_name, frag in (raw.get("values") or {}).items():
        frag = frag or {}
        values[str(value_name)] = ProfileValue(
            name=str(value_name),
            component_refs=tuple(
                (str(r["name"]), dict(r.get("overrides") or {}))
                for r in frag.get("componentRefs") or ()
            ),
            constraints=_constraints(frag.get("constraints")),
            readiness_constraints=_constraints(frag.get("readinessConstraints")),
            advertiser=frag.get("advertiser") or None,
        )
    return ConfigProfile(
        name=str(raw["name"]),
        description=str(raw.get("description") or "").strip(),
        default=str(raw["default"]),
        values=values,
        declared_in=overlay,
    )


def _registry_from(doc: Document) -> Registry:
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
                health_check_file=(c.get("healthCheck") or {}).get("assertFile") or None,
                owns_crds=c.get("ownsCRDs") is True,
                self_ref_crds=c.get("hasSelfRefCRDs") is True,
                manifests_use_chart_crds=c.get("manifestsUseChartCRDs") is True,
            ),
        )
    return Registry(components=comps, doc=doc)


def _profile_from(doc: Document) -> ScaleProfile:
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
    real = Path(safeio.real_path(directory))
    if safeio.is_dir(directory) and not real.is_relative_to(Path(safeio.real_path(root))):
        msg = "symbolic link points outside the catalog"
        return Diagnostic(_rel(root, directory), 0, 0, "$", msg, "file.symlink-escape")
    return None


def _yaml_files(directory: Path) -> list[Path]:
    if not safeio.is_dir(directory):
        return []
    # a directory named like a YAML file is listed too: read_file refuses it by name ("not a
    # regular file"), instead of the recipe of that name silently disappearing
    listed = safeio.listdir(directory)
    return [directory / e.name for e in listed if e.name.endswith(YAML_SUFFIXES)]


def _kind_doc(
    root: Path,
    path: Path,
    kind: str,
    accepted: Iterable[str],
    schema_name: str | None,
    diags: list[Diagnostic],
) -> Document | None:
    doc, d = _parse_file(root, path)
    diags.extend(d)
    if doc is None:
        return None
    head = check_header(doc, kind, accepted)
    if head:
        diags.extend(head)
        return None
    if schema_name is not None and safeio.is_file(
        schemas.SCHEMA_DIR / f"{schema_name}.schema.json"
    ):
        found = schemas.check(doc, schema_name)
        if found:
            diags.extend(found)
            return None
    return doc


def load_catalog(root: Path, rules: str | None = None) -> tuple[Catalog, tuple[Diagnostic, ...]]:
    """Read the catalog at `root`. Returns the catalog (what could be loaded) and every load problem.

    The stage's entry: each kind of file is read by its own step below, in this order, every
    problem appended to one list. `rules` names the upstream rules to read it under
    (`generator.catalog.rules`); by default its overlays' apiVersions say."""
    root = Path(root)
    if not safeio.is_dir(root):
        raise LoadError(
            f"catalog directory not found: {root}",
            [Diagnostic(str(root), 0, 0, "$", "catalog directory not found", "catalog.missing")],
        )
    diags: list[Diagnostic] = list(_not_directories(root))
    registry = _load_registry(root, diags)
    unloadable: set[str] = set()
    overlays = _load_overlays(root, "overlays", "RecipeMetadata", unloadable, diags)
    mixins = _load_overlays(root, "mixins", "RecipeMixin", unloadable, diags)
    files, manifests = _load_components(root, diags)
    profiles = _load_profiles(root, diags)
    documents = _load_documents(root, diags)
    extra, aliases = _load_criteria(root, diags)
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
        criteria_aliases=aliases,
        documents=documents,
        unloadable=frozenset(unloadable),
        manifests=dict(sorted(manifests.items())),
        defaulted=tuple(
            rel
            for rel, present in (
                ("signers.yaml", safeio.exists(root / "signers.yaml")),
                ("scale/", safeio.is_dir(root / "scale")),
            )
            if not present
        ),
        rules=(
            upstream_rules.rules_named(rules)
            if rules
            else upstream_rules.detect(o.api_version for o in overlays.values())
        ).name,
    )
    return catalog, tuple(diags)


def _not_directories(root: Path) -> Iterator[Diagnostic]:
    """A file (or a pipe, or a link to one) where a directory of recipe data is expected would
    silently hide every recipe in it."""
    for sub in ("overlays", "mixins", "components", "scale/profiles"):
        if safeio.lexists(root / sub) and not safeio.is_dir(root / sub):
            msg = "expected a directory of catalog files here, found a file"
            yield Diagnostic(sub, 0, 0, "$", msg, "file.not-directory")


def _load_registry(root: Path, diags: list[Diagnostic]) -> Registry:
    reg_path = root / "registry.yaml"
    if not (safeio.exists(reg_path) or safeio.is_link(reg_path)):
        msg = "the catalog has no registry.yaml"
        diags.append(Diagnostic("registry.yaml", 0, 0, "$", msg, "catalog.registry-missing"))
        return Registry(components={}, doc=None)
    kind = "ComponentRegistry"
    doc = _kind_doc(root, reg_path, kind, AICR_API_VERSIONS, kind, diags)
    return _registry_from(doc) if doc is not None else Registry(components={}, doc=None)


def _load_overlays(
    root: Path, sub: str, kind: str, unloadable: set[str], diags: list[Diagnostic]
) -> dict[str, Overlay]:
    """The overlays (or mixins) of directory `sub`, by name. The stem of every file that could
    not be loaded is added to `unloadable` (shared by overlays and mixins)."""
    escape = _dir_escapes(root, root / sub)
    if escape is not None:
        diags.append(escape)
        return {}
    parsed: list[tuple[str, Path, Overlay]] = []
    for path in _yaml_files(root / sub):
        doc = _kind_doc(root, path, kind, AICR_API_VERSIONS, kind, diags)
        stem = path.name.rsplit(".", 1)[0]
        if doc is None:
            unloadable.add(stem)
            continue
        parsed.append((stem, path, _overlay_from(doc)))
    # the file whose name matches metadata.name keeps the name; the others are the duplicates
    parsed.sort(key=lambda t: (t[2].name != t[0], t[1].name))
    target: dict[str, Overlay] = {}
    for stem, path, item in parsed:
        diags.extend(_name_problems(item, stem, path, kind, target, unloadable))
        if item.name not in target and item.name not in unloadable:
            target[item.name] = item
    return target


def _name_problems(
    item: Overlay,
    stem: str,
    path: Path,
    kind: str,
    target: dict[str, Overlay],
    unloadable: set[str],
) -> Iterator[Diagnostic]:
    """An overlay whose metadata.name differs from its file name, or is already taken."""
    doc = item.doc
    line, col = doc.locate("$.metadata.name")
    if item.name != stem:
        msg = f"metadata.name '{item.name}' does not match the file name '{path.name}'"
        yield Diagnostic(doc.rel, line, col, "$.metadata.name", msg, "overlay.name-mismatch")
    if item.name in target or item.name in unloadable:
        other = target[item.name].doc.rel if item.name in target else "another file"
        msg = f"{kind} '{item.name}' is already defined in {other}"
        yield Diagnostic(doc.rel, line, col, "$.metadata.name", msg, "overlay.duplicate-name")


def _load_components(
    root: Path, diags: list[Diagnostic]
) -> tuple[dict[str, Document], dict[str, ManifestFile]]:
    """Every YAML file under `components/`: values files parsed, manifests kept as bytes and
    classified (their documents carry no data, only their digest)."""
    files: dict[str, Document] = {}
    manifests: dict[str, ManifestFile] = {}
    comp_dir = root / "components"
    comp_escape = _dir_escapes(root, comp_dir)
    if comp_escape is not None:
        diags.append(comp_escape)
        return files, manifests
    if not safeio.is_dir(comp_dir):
        return files, manifests
    for dirpath, _dirnames, filenames in safeio.walk_dirs(comp_dir):
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
            doc, d = _parse_file(root, path, allow_empty=True)
            diags.extend(d)
            if doc is not None:
                files[doc.rel] = doc
    return files, manifests


def _load_profiles(root: Path, diags: list[Diagnostic]) -> dict[str, ScaleProfile]:
    profiles: dict[str, ScaleProfile] = {}
    prof_escape = _dir_escapes(root, root / "scale" / "profiles")
    if prof_escape is not None:
        diags.append(prof_escape)
        return profiles
    for path in _yaml_files(root / "scale" / "profiles"):
        doc = _kind_doc(root, path, "ScaleProfile", CATALOG_API_VERSIONS, "scale-profile", diags)
        if doc is not None:
            prof = _profile_from(doc)
            profiles.setdefault(prof.name, prof)
    return profiles


def _load_documents(root: Path, diags: list[Diagnostic]) -> dict[str, Document]:
    """The project's own files read by later stages (lanes, signer policy, shared checks),
    parsed here; their headers and contents are checked by `validate`."""
    documents: dict[str, Document] = {}
    for rel in ("scale/lanes.yaml", "signers.yaml", "scale/checks.yaml"):
        path = root / rel
        if safeio.exists(path):
            doc, d = _parse_file(root, path)
            diags.extend(d)
            if doc is not None:
                documents[rel] = doc
    return documents


def _load_criteria(
    root: Path, diags: list[Diagnostic]
) -> tuple[dict[str, tuple[str, ...]], dict[str, dict[str, str]]]:
    """The criteria values and aliases `criteria.yaml` (beside registry.yaml) adds to the known
    sets (`criteria.tree_criteria` checks them)."""
    crit_path = root / "criteria.yaml"
    if not safeio.exists(crit_path):
        return {}, {}
    kind = "CriteriaValues"
    doc = _kind_doc(root, crit_path, kind, CATALOG_API_VERSIONS, kind, diags)
    if doc is None:
        return {}, {}
    values, aliases, found = tree_criteria(doc)
    diags.extend(found)
    return values, aliases
