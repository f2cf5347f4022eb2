"""Upstream AICR's RecipeResult file (`aicr recipe` output), both ways.

The shape is upstream's (`pkg/recipe/metadata.go`, type RecipeResult; examples in upstream's
`examples/recipes/*.yaml`): `kind: RecipeResult`, `apiVersion: aicr.nvidia.com/v1alpha1`,
top-level `metadata.appliedOverlays`, `criteria`, `constraints`, `componentRefs` (each with its
`valuesFile` and `overrides`, not its merged values), `deploymentOrder` and `validation`.

- `recipe_result_document(result, catalog)` / `dump_recipe_result(...)`: this project's resolved
  recipe written in that shape (`query --format aicr`). The values a reader rebuilds from it
  (base values.yaml -> valuesFile -> overrides) are the recipe's values exactly: when a scale
  profile or `--set` changed them, `overrides` carries the whole merged values.
- `load_recipe_result(path, catalog, overrides)` (with its warnings; `read_recipe_result` without):
  such a file (ours or upstream's) read back into a `RecipeResult`, the values built as upstream's
  bundler builds them, `enabled: false` components (in the file's overrides or in `--set`) left
  out, as upstream's bundler leaves them out. `recipe_result_from` reads it in named steps, each
  raising a located LoadError for what it refuses.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import yaml

from generator.catalog.criteria import check_known, known_to, normalise
from generator.catalog.resolve import (
    canonical_component,
    component_values,
    deployment_order,
    document_without_digest,
    enabled_override,
    ref_enabled,
    set_path,
)
from generator.catalog.rules import DEFAULT_RULES, RULES, UpstreamRules, rules_of
from generator.core import safeio
from generator.core.canonical import sha256_digest
from generator.core.errors import (
    CatalogError,
    DependencyCycleError,
    Diagnostic,
    LoadError,
    ResolveError,
    Severity,
    UsageError,
)
from generator.core.records import (
    DEFAULT_PROFILE,
    DIMENSIONS,
    WILDCARD,
    Catalog,
    ComponentRef,
    Constraint,
    Criteria,
    Document,
    Override,
    RecipeResult,
    RegistryComponent,
    ResolvedComponent,
)
from generator.core.yamlio import MAX_FILE_BYTES, parse_yaml

KIND = "RecipeResult"
API_VERSION = DEFAULT_RULES.recipe_api_version  # written under v0.11.1's rules
# every RecipeResult header `bundle --recipe` reads (v0.11.1's and August 2026's)
READ_API_VERSIONS: tuple[str, ...] = tuple(
    dict.fromkeys(v for r in RULES.values() for v in r.recipe_api_versions_read)
)
# upstream's field order (struct order), so the file reads as upstream writes it
_CRITERIA_ORDER = ("service", "accelerator", "intent", "os", "platform")
_PHASES = ("readiness", "deployment", "performance", "conformance")
_PHASE_KEYS = ("timeout", "constraints", "checks", "nodeSelection", "infrastructure")


# ---------------------------------------------------------------- writing


def _constraint(c: Constraint) -> dict[str, Any]:
    out: dict[str, Any] = {"name": c.name, "value": c.value}
    for key, val in (("severity", c.severity), ("remediation", c.remediation), ("unit", c.unit)):
        if val:
            out[key] = val
    return out


def _written_overrides(c: ResolvedComponent, catalog: Catalog | None) -> Mapping[str, Any] | None:
    """The overrides that rebuild `c.values` from its files: the recipe's own when they do,
    else (a scale profile or --set changed the values) the whole values."""
    if catalog is not None:
        try:
            rebuilt, _ = component_values(catalog, c.name, c.values_file, c.overrides)
        except CatalogError:
            rebuilt = None
        if rebuilt == c.values:
            return c.overrides
    elif c.overrides is not None and not c.values_file:
        if dict(c.overrides) == dict(c.values):
            return c.overrides
    return c.values if (c.values or c.overrides) else None


def _phase(raw: Mapping[str, Any], rules: UpstreamRules) -> dict[str, Any]:
    """A validation phase in upstream's field order; under August 2026's rules an empty list
    (a phase an overlay cleared) is left out, as upstream's `omitempty` leaves it."""
    keys = [k for k in _PHASE_KEYS if k in raw] + sorted(k for k in raw if k not in _PHASE_KEYS)
    if rules.validation_merge == "field":
        keys = [k for k in keys if raw[k] not in ([], None, "")]
    return {k: raw[k] for k in keys}


def _health_check(c: ResolvedComponent, catalog: Catalog | None) -> str | None:
    """The registry's `healthCheck.assertFile` text for `c` (August 2026: carried inline)."""
    reg = catalog.registry.components.get(c.name) if catalog is not None else None
    if catalog is None or reg is None or reg.health_check_file is None:
        return None
    root = Path(catalog.root)
    raw = safeio.read(  # a Refusal is a located LoadError
        root / reg.health_check_file, root=root, where="the catalog", limit=MAX_FILE_BYTES
    )
    return raw.decode("utf-8")


def _ref(c: ResolvedComponent, catalog: Catalog | None, rules: UpstreamRules) -> dict[str, Any]:
    """One componentRefs entry, its fields in upstream's order."""
    ref: dict[str, Any] = {"name": c.name}
    if c.namespace:
        ref["namespace"] = c.namespace
    if c.chart:
        ref["chart"] = c.chart
    ref["type"] = c.type
    ref["source"] = c.repository or ""
    if c.version:
        ref["version"] = c.version
    if c.values_file:
        ref["valuesFile"] = c.values_file
    overrides = _written_overrides(c, catalog)
    if overrides:
        ref["overrides"] = dict(overrides)
    written = c.dependency_refs if c.written_dependency_refs is None else c.written_dependency_refs
    if written:  # as written, a dependency on a component the recipe disables included
        ref["dependencyRefs"] = list(written)
    if c.manifest_files:
        ref["manifestFiles"] = list(c.manifest_files)
    if c.pre_manifest_files:  # upstream's field since 2026 (v0.11.1 ignores it)
        ref["preManifestFiles"] = list(c.pre_manifest_files)
    if c.expected_resources:
        ref["expectedResources"] = [dict(e) for e in c.expected_resources]
    if rules.health_check_asserts:
        text = _health_check(c, catalog)
        if text:
            ref["healthCheckAsserts"] = text
    return ref


def recipe_result_document(result: RecipeResult, catalog: Catalog | None = None) -> dict[str, Any]:
    """`result` as upstream's RecipeResult document (`catalog`: the tree it was resolved from,
    to keep the recipe's own `overrides` where they rebuild its values)."""
    rules = rules_of(catalog) if catalog is not None else DEFAULT_RULES
    # upstream keeps the components the recipe disables (the bundle leaves them out)
    every = (*result.components, *result.disabled_components)
    refs = [_ref(c, catalog, rules) for c in sorted(every, key=lambda c: c.name)]
    shown = {c.name for c in every}
    doc: dict[str, Any] = {
        "kind": KIND,
        "apiVersion": (
            rules.profiled_api_version
            if result.selected_profile or result.configuration
            else rules.recipe_api_version
        ),
        "metadata": _metadata(result, rules),
        "criteria": {d: result.criteria.get(d) or WILDCARD for d in _CRITERIA_ORDER},
    }
    if result.configuration:
        doc["configuration"] = dict(result.configuration)
    if result.constraints:
        doc["constraints"] = [_constraint(c) for c in result.constraints]
    doc["componentRefs"] = refs
    # v0.11.1 orders every declared component; August 2026 only the enabled ones
    listed = shown if rules.order_lists_disabled else {c.name for c in result.components}
    doc["deploymentOrder"] = [n for n in result.declared_order if n in listed] or [
        c.name for c in result.components
    ]
    phases = [p for p in _PHASES if p in result.validation] + sorted(
        p for p in result.validation if p not in _PHASES
    )
    if phases:
        doc["validation"] = {p: _phase(result.validation[p], rules) for p in phases}
    return doc


def _metadata(result: RecipeResult, rules: UpstreamRules) -> dict[str, Any]:
    """`metadata`: the generating version (August 2026: upstream's build string), the applied
    overlays and the selected configuration profile."""
    meta: dict[str, Any] = {}
    if rules.recipe_metadata_version:
        meta["version"] = rules.recipe_metadata_version
    meta["appliedOverlays"] = list(result.applied_overlays)
    sel = result.selected_profile
    if sel is not None:
        chosen: dict[str, Any] = {"name": sel.name, "value": sel.value}
        if sel.advertiser:
            chosen["advertiser"] = sel.advertiser
        chosen["ownedPaths"] = {c: list(p) for c, p in sel.owned_paths.items()}
        meta["selectedProfile"] = chosen
    return meta


class _Dumper(yaml.SafeDumper):
    pass


def _str(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _str)


def dump_recipe_result(result: RecipeResult, catalog: Catalog | None = None) -> str:
    """The YAML text of `recipe_result_document`, keys in upstream's order."""
    return yaml.dump(
        recipe_result_document(result, catalog),
        Dumper=_Dumper,
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=True,
        width=100,
    )


# ---------------------------------------------------------------- reading


def _fail(doc: Document, json_path: str, message: str, rule: str) -> LoadError:
    line, col = doc.locate(json_path)
    return LoadError(
        f"{doc.rel}: {message}", [Diagnostic(doc.rel, line, col, json_path, message, rule)]
    )


def _str_list(doc: Document, raw: Any, json_path: str) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
        raise _fail(doc, json_path, "expected a list of strings", "recipe-result.field")
    return tuple(raw)


def _criteria(doc: Document, raw: Any) -> Criteria:
    if raw is None:
        return Criteria()
    if not isinstance(raw, dict):
        raise _fail(doc, "$.criteria", "criteria must be a mapping", "recipe-result.field")
    values: dict[str, str | None] = {}
    for d in DIMENSIONS:
        v = raw.get(d)
        if v is not None and not isinstance(v, str):
            raise _fail(doc, f"$.criteria.{d}", f"{d} must be a string", "recipe-result.field")
        values[d] = normalise(d, v)
    return Criteria(**values)


def _enabled_by_set(overrides: Sequence[Override], name: str) -> bool | None:
    state: bool | None = None
    for o in overrides:
        if o.component == name:
            s = enabled_override(o)
            state = s if s is not None else state
    return state


def recipe_result_from(
    doc: Document,
    catalog: Catalog | None = None,
    overrides: Sequence[Override] = (),
) -> tuple[RecipeResult, tuple[Diagnostic, ...]]:
    """A parsed RecipeResult document as a `RecipeResult`, and the warnings about it.

    Values: `components/<name>/values.yaml` -> `valuesFile` -> `overrides` (read from `catalog`,
    the recipe tree the file came from), then `overrides` (`--set`, by component name); a
    component whose `enabled` is false (file overrides, or `--set NAME:enabled=false`, which
    wins) is left out, as upstream's bundler does. Raises LoadError for a malformed file,
    ResolveError when a values file is missing or the order contradicts the dependencies."""
    data = _header(doc)
    applied = _applied_overlays(doc, data)
    criteria = _known_criteria(doc, data, catalog)
    constraints = _constraints(doc, data)
    refs = _refs(doc, data)
    rules = file_rules(str(data.get("apiVersion")))
    if catalog is not None:  # upstream's valueOverrideKeys name the same component
        overrides = tuple(
            replace(o, component=canonical_component(catalog, o.component) or o.component)
            for o in overrides
        )
    strangers = {o.component for o in overrides} - set(refs)
    if strangers:
        msg = f"override for {', '.join(sorted(strangers))}: not a component of {doc.rel}"
        if rules.unknown_set_invalid:  # upstream (2026): an invalid request, exit 2
            raise UsageError(msg, [Diagnostic("--set", 0, 0, "$", msg, "override.unknown")])
        raise ResolveError(msg)
    enabled = _enabled(refs, overrides, rules.enabled_keys)
    deps, depth = _dependencies(doc, refs, enabled)
    order, warnings = _deployment_order(doc, data, refs, enabled, deps)
    file_digests: dict[str, str] = {}
    components = tuple(
        _component(doc, catalog, overrides, enabled[n], i, deps[n], depth[n], file_digests)
        for i, n in enumerate(order)
    )
    validation = _validation(doc, data)
    result = RecipeResult(
        name=applied[-1] if applied else Path(doc.rel).stem,
        criteria=criteria,
        applied_overlays=applied,
        mixins=(),
        constraints=tuple(constraints[k] for k in sorted(constraints)),
        components=components,
        validation={k: validation[k] for k in sorted(validation)},
        scale_profile=DEFAULT_PROFILE,
        scale_profile_version="0.0.0",
        overrides=tuple(overrides),
        digest="",
        file_digests=dict(sorted(file_digests.items())),
        disabled=tuple(sorted(set(refs) - set(enabled))),
    )
    result = replace(result, digest=sha256_digest(document_without_digest(result)))
    return result, warnings


def _header(doc: Document) -> dict[str, Any]:
    """The document's mapping, once its kind and apiVersion are upstream's RecipeResult."""
    data = doc.data
    if not isinstance(data, dict):
        raise _fail(doc, "$", "expected a RecipeResult mapping", "recipe-result.kind")
    if data.get("kind") != KIND:
        raise _fail(
            doc, "$.kind", f"kind is {data.get('kind')!r}, expected {KIND!r}", "recipe-result.kind"
        )
    if data.get("apiVersion") not in READ_API_VERSIONS:
        raise _fail(
            doc,
            "$.apiVersion",
            f"apiVersion is {data.get('apiVersion')!r}, expected one of "
            f"{', '.join(READ_API_VERSIONS)} (upstream AICR)",
            "recipe-result.api-version",
        )
    return data


def file_rules(api_version: str) -> UpstreamRules:
    """The upstream rules a RecipeResult of `api_version` was written under."""
    for rules in RULES.values():
        if api_version in (rules.recipe_api_version, rules.profiled_api_version):
            return rules
    return DEFAULT_RULES


def _applied_overlays(doc: Document, data: Mapping[str, Any]) -> tuple[str, ...]:
    meta = data.get("metadata") or {}
    if not isinstance(meta, dict):
        raise _fail(doc, "$.metadata", "metadata must be a mapping", "recipe-result.field")
    return _str_list(doc, meta.get("appliedOverlays"), "$.metadata.appliedOverlays")


def _known_criteria(doc: Document, data: Mapping[str, Any], catalog: Catalog | None) -> Criteria:
    """The file's criteria, every value one the catalog (or this project) knows."""
    criteria = _criteria(doc, data.get("criteria"))
    try:
        return check_known(
            criteria,
            known_to(catalog) if catalog else None,
            catalog.criteria_aliases if catalog else None,
        )
    except CatalogError as e:
        raise _fail(doc, "$.criteria", e.message, "criteria.invalid") from e


def _constraints(doc: Document, data: Mapping[str, Any]) -> dict[str, Constraint]:
    """The constraints by name (a later one of the same name replaces the earlier)."""
    constraints: dict[str, Constraint] = {}
    for i, c in enumerate(data.get("constraints") or ()):
        jp = f"$.constraints[{i}]"
        if not isinstance(c, dict) or not isinstance(c.get("name"), str) or "value" not in c:
            raise _fail(doc, jp, "a constraint needs a name and a value", "recipe-result.field")
        value = c["value"]
        constraints[c["name"]] = Constraint(
            name=c["name"],
            value=str(value).lower() if isinstance(value, bool) else str(value),
            severity=c.get("severity") or None,
            remediation=c.get("remediation") or None,
            unit=c.get("unit") or None,
        )
    return constraints


def _refs(doc: Document, data: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The componentRefs by name, each with its JSON path (`_jp`) for diagnostics."""
    raw_refs = data.get("componentRefs") or ()
    if not isinstance(raw_refs, list):
        raise _fail(doc, "$.componentRefs", "componentRefs must be a list", "recipe-result.field")
    refs: dict[str, dict[str, Any]] = {}
    for i, r in enumerate(raw_refs):
        jp = f"$.componentRefs[{i}]"
        if not isinstance(r, dict) or not isinstance(r.get("name"), str):
            raise _fail(doc, jp, "a componentRef needs a name", "recipe-result.field")
        if r["name"] in refs:
            raise _fail(
                doc, f"{jp}.name", f"component '{r['name']}' is listed twice", "recipe-result.field"
            )
        if r.get("overrides") is not None and not isinstance(r["overrides"], dict):
            raise _fail(
                doc, f"{jp}.overrides", "overrides must be a mapping", "recipe-result.field"
            )
        refs[r["name"]] = {**r, "_jp": jp}
    return refs


def _enabled(
    refs: Mapping[str, dict[str, Any]], overrides: Sequence[Override], keys: Sequence[str]
) -> dict[str, dict[str, Any]]:
    """The components left in: `--set NAME:enabled=…` wins over the file's overrides (`keys`:
    the override keys that disable, by the rules the file was written under)."""
    enabled: dict[str, dict[str, Any]] = {}
    for name, r in refs.items():
        state = _enabled_by_set(overrides, name)
        if state is None:
            state = ref_enabled(ComponentRef(name=name, overrides=r.get("overrides")), keys)
        if state:
            enabled[name] = r
    return enabled


def _dependencies(
    doc: Document, refs: Mapping[str, dict[str, Any]], enabled: Mapping[str, dict[str, Any]]
) -> tuple[dict[str, tuple[str, ...]], dict[str, int]]:
    """Each enabled component's dependencies among the enabled, and its dependency depth."""
    deps: dict[str, tuple[str, ...]] = {}
    for name, r in enabled.items():
        listed = _str_list(doc, r.get("dependencyRefs"), f"{r['_jp']}.dependencyRefs")
        unknown = [d for d in listed if d not in refs]
        if unknown:
            raise _fail(
                doc,
                f"{r['_jp']}.dependencyRefs",
                f"component '{name}' depends on '{unknown[0]}', which the recipe does not declare",
                "dependency.unknown",
            )
        deps[name] = tuple(d for d in listed if d in enabled)
    try:
        _, depth = deployment_order(deps)
    except DependencyCycleError as e:
        raise _fail(doc, "$.componentRefs", e.message, "dependency.cycle") from e
    return deps, depth


def _deployment_order(
    doc: Document,
    data: Mapping[str, Any],
    refs: Mapping[str, dict[str, Any]],
    enabled: Mapping[str, dict[str, Any]],
    deps: Mapping[str, tuple[str, ...]],
) -> tuple[list[str], tuple[Diagnostic, ...]]:
    """The file's deploymentOrder over the enabled components (those it leaves out appended by
    name), refused when it puts a component before its dependency; and a warning for each
    entry that names no component (upstream's own examples have such entries)."""
    file_order = _str_list(doc, data.get("deploymentOrder"), "$.deploymentOrder")
    warnings: list[Diagnostic] = []
    for i, n in enumerate(file_order):
        if n not in refs:
            jp = f"$.deploymentOrder[{i}]"
            line, col = doc.locate(jp)
            msg = f"'{n}' is in deploymentOrder but not in componentRefs: ignored"
            warnings.append(
                Diagnostic(doc.rel, line, col, jp, msg, "recipe-result.order", Severity.WARNING)
            )
    order = [n for n in dict.fromkeys(file_order) if n in enabled]
    order += sorted(n for n in enabled if n not in order)
    position = {n: i for i, n in enumerate(order)}
    for n in order:
        for d in deps[n]:
            if position[d] > position[n]:
                raise _fail(
                    doc,
                    "$.deploymentOrder",
                    f"deploymentOrder puts '{n}' before its dependency '{d}'",
                    "recipe-result.order",
                )
    return order, tuple(warnings)


def _component(
    doc: Document,
    catalog: Catalog | None,
    overrides: Sequence[Override],
    r: Mapping[str, Any],
    order: int,
    deps: tuple[str, ...],
    depth: int,
    file_digests: dict[str, str],
) -> ResolvedComponent:
    """One component as upstream's bundler builds it; the digests of the files it reads are
    added to `file_digests`."""
    n = r["name"]
    values_file = r.get("valuesFile") or None
    ref_overrides = r.get("overrides") or None
    values, used = _values(doc, catalog, r, values_file, ref_overrides)
    for o in overrides:
        if o.component == n and o.path != "enabled":
            values = set_path(values, o.path, o.value)
    manifests = _str_list(doc, r.get("manifestFiles"), f"{r['_jp']}.manifestFiles")
    pre = _str_list(doc, r.get("preManifestFiles"), f"{r['_jp']}.preManifestFiles")
    if catalog is not None:
        _check_manifests(doc, catalog, r["_jp"], manifests, pre)
    for rel in (*used, *manifests, *pre):
        found = catalog.files.get(rel) if catalog is not None else None
        file_digests[rel] = found.sha256 if found is not None else ""
    source = r.get("source") or None
    reg = _registry_entry(catalog, n)
    return ResolvedComponent(
        name=n,
        type=str(r.get("type") or "Helm"),
        repository=source,
        chart=(str(r.get("chart") or n)) if source else None,
        version=str(r["version"]) if r.get("version") else None,
        namespace=str(r.get("namespace") or _registry_namespace(catalog, n)),
        values=values,
        manifest_files=manifests,
        pre_manifest_files=pre,
        dependency_refs=deps,  # as the overlays list them (upstream keeps that order)
        order=order,
        depth=depth,
        values_files=used,
        values_file=values_file,
        overrides=ref_overrides,
        # what the registry says of the CRDs the component ships
        owns_crds=bool(reg and reg.owns_crds),
        self_ref_crds=bool(reg and reg.self_ref_crds),
        manifests_use_chart_crds=bool(reg and reg.manifests_use_chart_crds),
    )


def _registry_entry(catalog: Catalog | None, name: str) -> RegistryComponent | None:
    return catalog.registry.components.get(name) if catalog is not None else None


def _registry_namespace(catalog: Catalog | None, name: str) -> str:
    """The namespace a component the file names without one gets: the registry's default (also
    a manifest-only component's `manifest.defaultNamespace`), as `resolve` gives it."""
    reg = catalog.registry.components.get(name) if catalog is not None else None
    return reg.namespace if reg is not None and reg.namespace else ""


def _values(
    doc: Document,
    catalog: Catalog | None,
    r: Mapping[str, Any],
    values_file: str | None,
    ref_overrides: Mapping[str, Any] | None,
) -> tuple[dict[str, Any], tuple[str, ...]]:
    """A component's values from the recipe tree (base values.yaml -> valuesFile -> overrides),
    and the files read; without a tree, only its overrides (it may then name no valuesFile)."""
    if values_file is not None and catalog is None:
        raise _fail(
            doc,
            f"{r['_jp']}.valuesFile",
            f"'{values_file}' is read from the recipe tree this recipe came from: give it "
            "(--catalog)",
            "recipe-result.values-file",
        )
    if catalog is None:
        return dict(ref_overrides or {}), ()
    try:
        return component_values(catalog, r["name"], values_file, ref_overrides)
    except ResolveError as e:
        raise _fail(doc, f"{r['_jp']}.valuesFile", e.message, "recipe-result.values-file") from e


def _check_manifests(
    doc: Document, catalog: Catalog, jp: str, manifests: Sequence[str], pre: Sequence[str]
) -> None:
    """Every manifest a component names is in the recipe tree."""
    for k, rel in [(f"manifestFiles[{k}]", m) for k, m in enumerate(manifests)] + [
        (f"preManifestFiles[{k}]", m) for k, m in enumerate(pre)
    ]:
        if rel not in catalog.files:
            raise _fail(
                doc,
                f"{jp}.{k}",
                f"manifest '{rel}' is not in the recipe tree",
                "recipe-result.manifest-missing",
            )


def _validation(doc: Document, data: Mapping[str, Any]) -> dict[str, Any]:
    validation = data.get("validation") or {}
    if not isinstance(validation, dict) or not all(
        isinstance(v, dict) for v in validation.values()
    ):
        raise _fail(
            doc, "$.validation", "validation must map phases to mappings", "recipe-result.field"
        )
    return validation


def read_recipe_result(
    path: Path | str,
    catalog: Catalog | None = None,
    overrides: Sequence[Override] = (),
) -> RecipeResult:
    """Read an upstream RecipeResult file (`aicr recipe -o recipe.yaml`, or `query --format
    aicr`) into a `RecipeResult`; see `recipe_result_from`. `catalog` is the recipe tree the
    file's `valuesFile`s live in (required when it names any). Raises LoadError (unreadable or
    malformed file), ResolveError (missing values file, bad order, unknown --set component)."""
    return load_recipe_result(path, catalog, overrides)[0]


def load_recipe_result(
    path: Path | str,
    catalog: Catalog | None = None,
    overrides: Sequence[Override] = (),
) -> tuple[RecipeResult, tuple[Diagnostic, ...]]:
    """`read_recipe_result`, and the warnings about the file (e.g. a deploymentOrder entry that
    names no component, as upstream's own examples have), for the caller to print."""
    p = Path(path)
    try:
        raw = safeio.read(p, limit=MAX_FILE_BYTES)
    except safeio.Refusal as e:
        msg = f"cannot read {p.name}: {e.message}"
        raise LoadError(msg, [safeio.diagnostic(str(p), e)]) from None
    return recipe_result_from(parse_yaml(raw, str(p)), catalog, overrides)
