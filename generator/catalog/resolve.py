"""Stage 3, resolve: a query (criteria or a leaf name) + scale profile + user overrides → RecipeResult.

Upstream AICR's rules (`pkg/recipe/metadata_store.go`, `metadata.go`, `adapter.go`): a recipe's
wildcard matches any query value, a query's wildcard matches only recipe wildcards, an overlay
without criteria never matches; the matching overlays are taken in ascending upstream specificity
and each is applied with its `base` chain, root first, every overlay once, after `base`. Fields
merge as upstream merges them (constraints and componentRefs by name; scalar fields: the later
non-empty one; `overrides`: top-level keys replaced; `dependencyRefs`: replaced; `manifestFiles`:
appended; validation phases: replaced whole), then mixins, then registry defaults. A component's
values are `components/<name>/values.yaml` → its `valuesFile` → its `overrides`. This project then
applies the selected scale profile's owned values and finally the user's `--set` overrides, which
may not contradict an owned value. `enabled: false` (in overrides or `--set`) leaves a component
out of the recipe and its order.

Entry: `resolve(catalog, query, profile=, overrides=, nodes=) -> RecipeResult` (raises
ResolveError, its subclass DependencyCycleError, or ScaleError); `_resolve` reads as its steps.
`check_resolves` asks the same without the digest (for `validate`; `with_digest` completes its
result), `resolve_all` resolves every
leaf at every profile that applies to it, `recipe_document` is the result's canonical document.
The merge, path and ordering helpers (`deep_merge`, `set_path`, `deployment_order`,
`component_values`, …) are shared with `aicr_format`, which reads upstream's RecipeResult files.
"""

from __future__ import annotations

import copy
import difflib
import heapq
import itertools
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from generator.catalog.criteria import check_known, known_to, unfamiliar
from generator.catalog.rules import DEFAULT_RULES, UpstreamRules, rules_of
from generator.core.canonical import check_canonical, sha256_digest
from generator.core.errors import (
    DependencyCycleError,
    Diagnostic,
    ResolveError,
    ScaleError,
    UsageError,
)
from generator.core.records import (
    DEFAULT_PROFILE,
    DIMENSIONS,
    Catalog,
    ComponentRef,
    ConfigProfile,
    Constraint,
    Criteria,
    Overlay,
    Override,
    OwnedValue,
    RecipeResult,
    ResolvedComponent,
    ScaleProfile,
    SelectedProfile,
)

API_VERSION = "aicr.run/v1"


# ---------------------------------------------------------------- matching and selection


def matches(recipe: Criteria, query: Criteria) -> bool:
    """Asymmetric wildcard match (upstream semantics)."""
    for d in DIMENSIONS:
        r, q = recipe.get(d), query.get(d)
        if r is None:
            continue
        if q is None or r != q:
            return False
    return True


def chain(catalog: Catalog, name: str) -> tuple[Overlay, ...]:
    """The base chain of overlay `name`, root first. Raises on a missing base or a cycle.

    A cycle is located at `name` only when `name` is part of it: overlays that merely sit below
    a cycle raise without a diagnostic of their own (no knock-on noise).
    """
    out: list[Overlay] = []
    seen: list[str] = []
    seen_set: set[str] = set()
    current: str | None = name
    while current is not None:
        if current in seen_set:
            members = seen[seen.index(current) :]
            cycle = " → ".join([*members, current])
            diags = []
            if name in members:
                ov = catalog.overlays[name]
                line, col = ov.doc.locate("$.spec.base")
                msg = f"base chain has a cycle: {cycle}"
                diags.append(Diagnostic(ov.doc.rel, line, col, "$.spec.base", msg, "base.cycle"))
            raise ResolveError(f"base chain of '{name}' has a cycle: {cycle}", diags)
        seen_set.add(current)
        seen.append(current)
        overlay = catalog.overlays.get(current)
        if overlay is None:
            child = catalog.overlays[seen[-2]] if len(seen) > 1 else None
            diags = []
            if child is not None:
                line, col = child.doc.locate("$.spec.base")
                diags.append(
                    Diagnostic(
                        child.doc.rel,
                        line,
                        col,
                        "$.spec.base",
                        f"base overlay '{current}' does not exist",
                        "base.missing",
                    )
                )
            raise ResolveError(f"overlay '{current}' does not exist", diags)
        out.append(overlay)
        current = overlay.base
    return tuple(reversed(out))


# The overlays of the catalogs resolved last, indexed by criteria: id(catalog.overlays) -> (its
# overlays, criteria values -> [(position, overlay)]). Checked against the mapping's current
# overlays on every use (a quick comparison of object identities), so it never serves an index of
# anything but exactly these overlays.
_IndexEntry = tuple[list[Overlay], dict[tuple[str | None, ...], list[tuple[int, Overlay]]]]
_INDEXES: dict[int, _IndexEntry] = {}
_INDEXES_KEPT = 4


def _criteria_index(
    overlays: Mapping[str, Overlay],
) -> dict[tuple[str | None, ...], list[tuple[int, Overlay]]]:
    values = list(overlays.values())
    entry = _INDEXES.get(id(overlays))
    if entry is not None and entry[0] == values:
        return entry[1]
    index: dict[tuple[str | None, ...], list[tuple[int, Overlay]]] = {}
    for i, o in enumerate(values):
        index.setdefault(tuple(v for _, v in o.criteria.items()), []).append((i, o))
    _INDEXES.pop(id(overlays), None)
    while len(_INDEXES) >= _INDEXES_KEPT:
        del _INDEXES[next(iter(_INDEXES))]
    _INDEXES[id(overlays)] = (values, index)
    return index


def _matching(catalog: Catalog, query: Criteria) -> list[Overlay]:
    """The overlays whose criteria match `query`, in catalog order: those whose every dimension
    is the wildcard or the query's value, looked up by criteria (at most 2**5 of them) rather
    than by comparing the query with every overlay. Upstream never matches an overlay without
    criteria, nor one stating `criteria.nodes` (queries here carry no node count)."""
    nodes_select = rules_of(catalog).nodes_select  # August 2026: nodes is metadata only
    index = _criteria_index(catalog.overlays)
    options = [(None,) if q is None else (None, q) for _, q in query.items()]
    found = [hit for key in itertools.product(*options) for hit in index.get(key, ())]
    return [
        o
        for _, o in sorted(found, key=lambda hit: hit[0])
        if o.has_criteria and (not o.nodes or not nodes_select) and o.name != "base"
    ]


def select(catalog: Catalog, query: Criteria) -> tuple[Overlay, ...]:
    """Overlays applied for `query`, in merge order (base first).

    As upstream: the matching overlays sorted by upstream specificity, ascending (ties, which
    upstream leaves to Go's map order, broken by the number of stated dimensions, then name),
    each followed by its base chain root first, every overlay applied once."""
    matched = sorted(
        _matching(catalog, query),
        key=lambda o: (o.upstream_specificity, o.criteria.specificity(), o.name),
    )
    order: list[Overlay] = []
    applied: set[str] = set()
    if "base" in catalog.overlays:
        order.append(catalog.overlays["base"])
        applied.add("base")
    for overlay in matched:
        for o in chain(catalog, overlay.name):
            if o.name not in applied:
                applied.add(o.name)
                order.append(o)
    return tuple(order)


def _completions(catalog: Catalog, query: Criteria) -> tuple[str, ...]:
    """Leaf recipes compatible with every dimension the query states."""
    out = []
    for name in catalog.leaves():
        crit = catalog.overlays[name].criteria
        if all(q is None or crit.get(d) in (None, q) for d, q in query.items()):
            out.append(f"{name} ({_format_criteria(crit)})")
    return tuple(out)


def _format_criteria(c: Criteria) -> str:
    return " ".join(f"{d}={v}" for d, v in c.items() if v is not None) or "(any)"


# ---------------------------------------------------------------- merging


def deep_merge(
    base: Mapping[str, Any], over: Mapping[str, Any], *, null_deletes: bool = False
) -> dict[str, Any]:
    """Recursive merge: mappings merge, anything else (lists included) is replaced by `over`;
    with `null_deletes` (Helm's rule, upstream's since August 2026) a null in `over` deletes."""
    out: dict[str, Any] = copy.deepcopy(dict(base))
    for k, v in over.items():
        if v is None and null_deletes:
            out.pop(k, None)
        elif isinstance(v, Mapping) and isinstance(out.get(k), Mapping):
            out[k] = deep_merge(out[k], v, null_deletes=null_deletes)
        else:
            out[k] = copy.deepcopy(v)
    return out


def _union(a: Sequence[str], b: Sequence[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys([*a, *b]))


@dataclass(slots=True)
class _Acc:
    """Mutable accumulator private to one resolution; frozen into records at the end."""

    refs: dict[str, ComponentRef] = field(default_factory=dict)
    origin: dict[str, str] = field(
        default_factory=dict
    )  # component -> file of its latest declaration
    constraints: dict[str, Constraint] = field(default_factory=dict)
    validation: dict[str, dict[str, Any]] = field(default_factory=dict)
    # (component, dependency) -> (file, JSON path) of the dependencyRefs entry that first declared it
    dep_origin: dict[tuple[str, str], tuple[str, str]] = field(default_factory=dict)
    # the upstream rules merged under (generator.catalog.rules)
    rules: UpstreamRules = DEFAULT_RULES

    def add_ref(self, ref: ComponentRef, rel: str) -> None:
        """Merge one componentRefs entry as upstream's `mergeComponentRef` does."""
        prev = self.refs.get(ref.name)
        for k, dep in enumerate(ref.dependency_refs):
            self.dep_origin[(ref.name, dep)] = (rel, f"{ref.json_path}.dependencyRefs[{k}]")
        self.origin[ref.name] = rel  # the file of the latest declaration, for diagnostics
        if prev is None:
            self.refs[ref.name] = ref
            return
        overrides: Mapping[str, Any] | None = prev.overrides
        if ref.overrides:
            # upstream: maps.Copy, so a top-level key replaces the earlier one whole
            overrides = {**(prev.overrides or {}), **ref.overrides}
        self.refs[ref.name] = ComponentRef(
            name=ref.name,
            type=ref.type or prev.type,
            source=ref.source or prev.source,
            version=ref.version or prev.version,
            namespace=ref.namespace or prev.namespace,
            chart=ref.chart or prev.chart,
            values_file=ref.values_file or prev.values_file,
            overrides=overrides,
            manifest_files=_union(prev.manifest_files, ref.manifest_files),
            pre_manifest_files=_union(prev.pre_manifest_files, ref.pre_manifest_files),
            dependency_refs=_merged_dependencies(self.rules, prev, ref),
            enabled=ref.enabled if ref.enabled is not None else prev.enabled,
            json_path=ref.json_path,
            expected_resources=ref.expected_resources or prev.expected_resources,
        )

    def add(self, overlay: Overlay) -> None:
        for c in overlay.constraints:
            self.constraints[c.name] = c
        for ref in overlay.component_refs:
            self.add_ref(ref, overlay.doc.rel)
        for phase, raw in overlay.validation.items():
            if self.rules.validation_merge == "field" and phase in self.validation:
                self.validation[phase] = merge_phase(self.validation[phase], raw)
            else:  # v0.11.1: a phase an overlay states replaces the earlier one whole
                self.validation[phase] = copy.deepcopy(dict(raw))


def _merged_dependencies(
    rules: UpstreamRules, prev: ComponentRef, ref: ComponentRef
) -> tuple[str, ...]:
    """v0.11.1: a non-empty list replaces the earlier one; August 2026: added to it (the
    earlier entries first, no duplicates)."""
    if rules.dependency_refs == "append":
        return _union(prev.dependency_refs, ref.dependency_refs)
    return ref.dependency_refs or prev.dependency_refs


def merge_phase(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """A validation phase merged field by field (upstream's August 2026 rule): `checks` and
    `constraints` absent inherit, an explicit empty list clears, else they are added to the
    inherited ones (constraints by name, the later value winning in place); `nodeSelection`
    replaces when given; other fields (`timeout`, `infrastructure`): the later non-empty one."""
    out: dict[str, Any] = copy.deepcopy(dict(base))
    for key, value in over.items():
        if key in ("checks", "constraints") and isinstance(value, list):
            earlier = out.get(key) or []
            if not value:
                out[key] = []
            elif key == "checks":
                out[key] = list(_union(earlier, value))
            else:
                by_name = {c.get("name"): c for c in earlier if isinstance(c, Mapping)}
                merged = [by_name.get(c.get("name"), c) for c in earlier if isinstance(c, Mapping)]
                names = [c.get("name") for c in merged]
                for c in value:
                    if c.get("name") in names:
                        merged[names.index(c.get("name"))] = copy.deepcopy(c)
                    else:
                        merged.append(copy.deepcopy(c))
                        names.append(c.get("name"))
                out[key] = merged
        elif key == "nodeSelection" and value is not None:
            out[key] = copy.deepcopy(value)
        elif value not in (None, ""):
            out[key] = copy.deepcopy(value)
    return out


# ---------------------------------------------------------------- dotted paths


def get_path(values: Mapping[str, Any], path: str) -> tuple[bool, Any]:
    cur: Any = values
    for part in path.split("."):
        if not isinstance(cur, Mapping) or part not in cur:
            return False, None
        cur = cur[part]
    return True, cur


def _non_mapping_prefix(values: Mapping[str, Any], path: str) -> str | None:
    """The first proper prefix of dotted `path` that holds something other than a mapping (a
    `--set` through it would have to replace it), or None."""
    cur: Any = values
    parts = path.split(".") if path else []
    for i, part in enumerate(parts[:-1]):
        if not isinstance(cur, Mapping) or part not in cur:
            return None
        cur = cur[part]
        if cur is not None and not isinstance(cur, Mapping):
            return ".".join(parts[: i + 1])
    return None


def set_path(values: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of `values` with `path` set (intermediate mappings created)."""
    if path == "":
        return deep_merge(values, value) if isinstance(value, Mapping) else values
    return _set_path_in_place(copy.deepcopy(values), path, value)


def _set_path_in_place(out: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """`set_path` on values this resolution owns (made by it, shared with nothing): `set_path`
    without its copy, which would be isomorphic to them (a deep copy keeps shared objects
    shared), so the result is the same."""
    if path == "":
        return deep_merge(out, value) if isinstance(value, Mapping) else out
    cur = out
    parts = path.split(".")
    for part in parts[:-1]:
        nxt = cur.get(part)
        if not isinstance(nxt, dict):
            nxt = {}
            cur[part] = nxt
        cur = nxt
    last = parts[-1]
    if isinstance(value, Mapping) and isinstance(cur.get(last), Mapping):
        cur[last] = deep_merge(cur[last], value)
    else:
        cur[last] = copy.deepcopy(value)
    return out


# ---------------------------------------------------------------- ordering


def deployment_order(deps: Mapping[str, Sequence[str]]) -> tuple[tuple[str, ...], dict[str, int]]:
    """Topological order (alphabetical tie-break) and dependency depth. Raises
    DependencyCycleError, naming one cycle, when there is no order."""
    indeg = {n: 0 for n in deps}
    users: dict[str, list[str]] = {n: [] for n in deps}
    for n, ds in deps.items():
        for d in ds:
            indeg[n] += 1
            users[d].append(n)
    ready = [n for n, k in indeg.items() if k == 0]
    heapq.heapify(ready)
    order: list[str] = []
    while ready:
        n = heapq.heappop(ready)
        order.append(n)
        for u in users[n]:
            indeg[u] -= 1
            if indeg[u] == 0:
                heapq.heappush(ready, u)
    if len(order) != len(deps):
        remaining = {n for n in deps if n not in order}
        raise DependencyCycleError(
            _find_cycle({n: [d for d in deps[n] if d in remaining] for n in remaining})
        )
    depth: dict[str, int] = {}
    for n in order:
        depth[n] = 1 + max((depth[d] for d in deps[n]), default=-1)
    return tuple(order), depth


def _find_cycle(graph: Mapping[str, Sequence[str]]) -> list[str]:
    """One cycle in `graph` (every node has an edge inside it), smallest name first, closed."""
    start = min(graph)
    path: list[str] = []
    node = start
    while node not in path:
        path.append(node)
        node = sorted(graph[node])[0]
    cyc = path[path.index(node) :]
    i = cyc.index(min(cyc))
    cyc = cyc[i:] + cyc[:i]
    return [*cyc, cyc[0]]


# ---------------------------------------------------------------- profiles


def profile_applies(profile: ScaleProfile, criteria: Criteria) -> bool:
    if not profile.applies_to:
        return True
    return any(matches(pattern, criteria) for pattern in profile.applies_to)


def select_profile(
    catalog: Catalog, name: str, criteria: Criteria, nodes: int | None
) -> ScaleProfile:
    if name == DEFAULT_PROFILE and name not in catalog.profiles:
        profile = ScaleProfile(
            name=DEFAULT_PROFILE,
            version="0.0.0",
            nodes_min=1,
            nodes_max=36,
            description="built-in default: the recipe as written",
            applies_to=(),
            owned_values=(),
            prerequisites=(),
            ladder=(),
            doc=None,
        )
    elif name not in catalog.profiles:
        known = ", ".join(sorted(catalog.profiles)) or "none"
        raise ScaleError(f"unknown scale profile '{name}'; known profiles: {known}")
    else:
        profile = catalog.profiles[name]
    if not profile_applies(profile, criteria):
        allowed = "; ".join(_format_criteria(c) for c in profile.applies_to)
        raise ScaleError(
            f"scale profile '{profile.name}' does not apply to {_format_criteria(criteria)}; it applies to: {allowed}"
        )
    if nodes is not None and not profile.covers(nodes):
        covering = sorted(
            p.name
            for p in catalog.profiles.values()
            if p.covers(nodes) and profile_applies(p, criteria)
        )
        hint = (
            (
                f"profiles covering {nodes} nodes for these criteria: {', '.join(covering)} "
                f"(select one with --scale-profile)"
            )
            if covering
            else f"no scale profile covers {nodes} nodes for these criteria"
        )
        raise ScaleError(
            f"--nodes {nodes} is outside scale profile '{profile.name}' "
            f"({profile.nodes_min}–{profile.nodes_max} nodes); {hint}. "
            "--nodes never selects a profile."
        )
    return profile


# ---------------------------------------------------------------- resolution


def canonical_component(catalog: Catalog, name: str) -> str | None:
    """The registry's name for a `--set` component key: the name itself, or the component one of
    whose `valueOverrideKeys` it is (upstream's spellings such as `gpuoperator`); None if
    neither."""
    if name in catalog.registry.components:
        return name
    for comp in catalog.registry.components.values():
        if name in comp.value_override_keys:
            return comp.name
    return None


def _registry_chart(chart: str | None) -> str | None:
    """upstream's `ApplyRegistryDefaults`: a registry `defaultChart` loses its repository prefix
    (`nvidia/gpu-operator` -> `gpu-operator`), whatever the repository; a chart an overlay
    names is kept as written."""
    if not chart:
        return None
    return chart.rsplit("/", 1)[-1]


def _base_values_file(component: str) -> str:
    """The component's base values file, the first layer of its values (upstream)."""
    return f"components/{component}/values.yaml"


def _file_mapping(catalog: Catalog, rel: str, *, required: bool) -> dict[str, Any] | None:
    doc = catalog.files.get(rel)
    if doc is None:
        if required:
            raise ResolveError(f"values file '{rel}' is not in the catalog")
        return None
    if doc.data is not None and not isinstance(doc.data, dict):
        raise ResolveError(f"values file '{rel}' does not hold a mapping")
    return doc.data if doc.data is not None else {}


def component_values(
    catalog: Catalog,
    name: str,
    values_file: str | None,
    overrides: Mapping[str, Any] | None,
) -> tuple[dict[str, Any], tuple[str, ...]]:
    """A new copy of a component's values, and the files that contributed, as upstream's
    `GetValuesForComponent` builds them: with a `valuesFile`, the component's base
    `components/<name>/values.yaml` (when it exists and is not the valuesFile itself), then the
    valuesFile; then the `overrides`. Without a valuesFile only the overrides count."""
    data: dict[str, Any] = {}
    used: list[str] = []
    nulls = rules_of(catalog).null_deletes
    if values_file is not None:
        base_rel = _base_values_file(name)
        if values_file != base_rel:
            base = _file_mapping(catalog, base_rel, required=False)
            if base is not None:
                data = copy.deepcopy(base)
                used.append(base_rel)
        layer = _file_mapping(catalog, values_file, required=True) or {}
        data = deep_merge(data, layer, null_deletes=nulls) if used else copy.deepcopy(layer)
        used.append(values_file)
    if overrides:
        data = deep_merge(data, overrides, null_deletes=nulls)
    return data, tuple(used)


def _file_digest(catalog: Catalog, rel: str) -> str:
    doc = catalog.files.get(rel)
    return doc.sha256 if doc is not None else ""


def _query_of(catalog: Catalog, query: Criteria | str) -> tuple[Criteria, str | None]:
    if isinstance(query, Criteria):
        # the tree's own values are valid queries; its criteria.yaml aliases map to values
        return check_known(query, known_to(catalog), catalog.criteria_aliases), None
    if query in catalog.overlays and query != "base":
        return catalog.overlays[query].criteria, query
    close = difflib.get_close_matches(query, catalog.leaves(), n=3)
    hint = (
        f"; did you mean {', '.join(close)}?" if close else "; list them with `aicr-catalog list`"
    )
    raise ResolveError(f"no recipe named '{query}'{hint}")


# upstream's strconv.ParseBool, which `--set component:enabled=…` goes through
_BOOL_TEXT = {
    **dict.fromkeys(("1", "t", "T", "TRUE", "true", "True"), True),
    **dict.fromkeys(("0", "f", "F", "FALSE", "false", "False"), False),
}


def enabled_override(o: Override) -> bool | None:
    """The state a `--set component:enabled=VALUE` asks for (None: not such an override)."""
    if o.path != "enabled":
        return None
    if isinstance(o.value, bool):
        return o.value
    text = str(o.value)
    if text not in _BOOL_TEXT:
        raise ResolveError(
            f"override {o.origin}: 'enabled' takes true or false (as upstream parses it), "
            f"got {text!r}"
        )
    return _BOOL_TEXT[text]


def ref_enabled(ref: ComponentRef, keys: Sequence[str] = ("enabled",)) -> bool:
    """upstream's `ComponentRef.IsEnabled`: `overrides.enabled: false` disables a component (a
    non-boolean value leaves it enabled), and under August 2026's rules `overrides.install:
    false` too (`UpstreamRules.enabled_keys`); this project's `enabled: false` field does too."""
    if ref.enabled is False:
        return False
    return all((ref.overrides or {}).get(k, True) is not False for k in keys)


# ---------------------------------------------------------------- configuration profiles (ADR-015)

_PROFILE_IDENT = re.compile(r"[A-Za-z0-9._-]+")


def _usage(message: str, where: str, rule: str) -> UsageError:
    return UsageError(message, [Diagnostic(where, 0, 0, "$", message, rule)])


def parse_choice(raw: str) -> tuple[str, str]:
    """`--profile name=value` in upstream's exact form (one `=`, no spaces, `[A-Za-z0-9._-]+`)."""
    name, sep, value = raw.partition("=")
    if raw.strip() != raw or not sep or "=" in value:
        raise _usage("--profile takes the exact form name=value", "--profile", "profile.form")
    if not (_PROFILE_IDENT.fullmatch(name) and _PROFILE_IDENT.fullmatch(value)):
        msg = "--profile name and value must match [A-Za-z0-9._-]+"
        raise _usage(msg, "--profile", "profile.form")
    return name, value


def declared_profile(applied: Sequence[Overlay]) -> ConfigProfile | None:
    """The configuration profile of the applied overlays: the last applied overlay that
    declares one (every AKS and GKE-COS leaf inherits its service overlay's declaration)."""
    found = [o.profile for o in applied if o.profile is not None and o.name != "base"]
    return found[-1] if found else None


def apply_config_profile(
    acc: _Acc, applied: Sequence[Overlay], choice: str | None
) -> SelectedProfile | None:
    """Upstream's `applyEffectiveProfile`, after the overlays and mixins are merged: the chosen
    value (or the default) has its overrides deep-merged into the components' overrides, its
    constraints joined by name, its readiness constraints added to the readiness phase. Every
    component it names must be in the recipe and enabled. A choice without a declaration, or
    naming another profile or an undeclared value, is an invalid request (exit 2)."""
    decl = declared_profile(applied) if acc.rules.profiles else None
    picked = parse_choice(choice) if choice is not None else None
    if decl is None:
        if picked is not None:
            why = "" if acc.rules.profiles else f" (the tree is read under {acc.rules.name} rules)"
            msg = f"profile '{picked[0]}' was selected, but the recipe declares no profile{why}"
            raise _usage(msg, "--profile", "profile.none")
        return None
    value_name = decl.default
    if picked is not None:
        if picked[0] != decl.name:
            msg = f"the recipe declares profile '{decl.name}', not '{picked[0]}'"
            raise _usage(msg, "--profile", "profile.name")
        value_name = picked[1]
    value = decl.values.get(value_name)
    if value is None:
        msg = (
            f"profile '{decl.name}' has no value '{value_name}'; valid values: "
            f"{', '.join(sorted(decl.values))}"
        )
        raise _usage(msg, "--profile", "profile.value")
    owned = decl.owned_paths()
    keys = acc.rules.enabled_keys
    for comp in owned:
        ref = acc.refs.get(comp)
        if ref is None or not ref_enabled(ref, keys):
            raise ResolveError(
                f"profile '{decl.name}' (overlay {decl.declared_in}) names component '{comp}', "
                "which is not enabled in the recipe"
            )
    for c in value.constraints:
        acc.constraints[c.name] = c
    if value.readiness_constraints:
        phase = dict(acc.validation.get("readiness") or {})
        phase["constraints"] = [
            *(phase.get("constraints") or []),
            *(_constraint_json(c) for c in value.readiness_constraints),
        ]
        acc.validation["readiness"] = phase
    for comp, frag in value.component_refs:
        ref = acc.refs[comp]
        acc.refs[comp] = replace(ref, overrides=deep_merge(ref.overrides or {}, frag))
    return SelectedProfile(
        name=decl.name,
        value=value_name,
        owned_paths=owned,
        advertiser=value.advertiser,
        choices=tuple(sorted(decl.values)),
        default=decl.default,
        description=decl.description,
    )


def apply_configuration(acc: _Acc, criteria: Criteria) -> dict[str, Any] | None:
    """Upstream's generation-time configuration (`UpstreamRules.slurm_accounting`): a Slurm
    recipe records its accounting mode, and the components that mode owns get its overrides."""
    rule = acc.rules.slurm_accounting
    if rule is None or criteria.platform != rule.platform:
        return None
    enabled = rule.default_mode != "disabled"
    effects: list[tuple[str, dict[str, Any]]] = [
        (rule.cluster, {"accounting": {"enabled": enabled}})
    ]
    effects += [(c, {"install": rule.default_mode == "aicr-provided"}) for c in rule.database]
    for comp, frag in effects:
        ref = acc.refs.get(comp)
        if ref is None:
            raise ResolveError(f"a Slurm recipe needs component '{comp}' (Slurm accounting)")
        acc.refs[comp] = replace(ref, overrides=deep_merge(ref.overrides or {}, frag))
    return {"slurm": {"accounting": {"mode": rule.default_mode}}}


# ---------------------------------------------------------------- coverage (August 2026 rules)

_COVERAGE_ORDER = ("service", "accelerator", "intent", "os", "platform")


def _criteria_text(c: Criteria) -> str:
    stated = [f"{d}={c.get(d)}" for d in _COVERAGE_ORDER if c.get(d) is not None]
    return f"criteria({', '.join(stated)})"


def _completion(query: Criteria, overlay: Overlay, dim: str, want: str) -> dict[str, str] | None:
    """What else a query must state for `overlay` to provide `dim=want` (None: it cannot)."""
    if overlay.criteria.get(dim) != want:
        return None
    extra: dict[str, str] = {}
    for d in _COVERAGE_ORDER:
        have = overlay.criteria.get(d)
        if d == dim or have is None:
            continue
        if query.get(d) is not None:
            if query.get(d) != have:
                return None
        else:
            extra[d] = have
    return extra


def _tuple_text(t: Mapping[str, str]) -> str:
    return ", ".join(f"{d}={t[d]}" for d in _COVERAGE_ORDER if d in t)


def coverage_refusal(
    catalog: Catalog, criteria: Criteria, applied: Sequence[Overlay]
) -> UsageError:
    """The invalid request upstream (August 2026) answers when a stated dimension is stated by
    no applied overlay: per dimension, the minimal further criteria under which an overlay
    would provide it, or that no recipe provides it."""
    clauses = []
    stated = _criteria_text(criteria)
    for dim in _COVERAGE_ORDER:
        want = criteria.get(dim)
        if want is None or any(o.criteria.get(dim) == want for o in applied):
            continue
        found = {
            _tuple_text(t): t
            for o in catalog.overlays.values()
            if o.has_criteria
            for t in [_completion(criteria, o, dim, want)]
            if t
        }
        minimal = [
            t
            for t in found.values()
            if not any(len(u) < len(t) and u.items() <= t.items() for u in found.values())
        ]
        minimal.sort(key=lambda t: (len(t), _tuple_text(t)))
        if not minimal:
            clauses.append(f"no recipe provides {dim} '{want}' for {stated}")
        elif all(len(t) == 1 for t in minimal) and len({next(iter(t)) for t in minimal}) == 1:
            key = next(iter(minimal[0]))
            valid = ", ".join(sorted(t[key] for t in minimal))
            clauses.append(f"{dim} '{want}' for {stated} requires {key} (valid: {valid})")
        else:
            combos = ", ".join(f"({_tuple_text(t)})" for t in minimal)
            clauses.append(
                f"{dim} '{want}' requires additional criteria; supported combinations: {combos}"
            )
    message = "; ".join(clauses)
    return UsageError(message, [Diagnostic("criteria", 0, 0, "$", message, "criteria.uncovered")])


def resolve(
    catalog: Catalog,
    query: Criteria | str,
    *,
    profile: str = DEFAULT_PROFILE,
    overrides: Sequence[Override] = (),
    nodes: int | None = None,
    choice: str | None = None,
) -> RecipeResult:
    """Resolve a leaf name or criteria into a concrete recipe. Raises ResolveError / ScaleError,
    and UsageError for a criteria value no set knows (exit 2, as upstream's invalid request).
    `choice` is upstream's configuration profile selection `name=value` (`--profile`); without
    it the declared profile's default applies."""
    return _resolve(catalog, query, profile, overrides, nodes, digest=True, choice=choice)


def check_resolves(
    catalog: Catalog, query: Criteria | str, *, profile: str = DEFAULT_PROFILE
) -> RecipeResult:
    """Raise what `resolve` raises, if anything, without computing the recipe's digest: for
    `validate`, which asks whether a recipe resolves, not what its digest is. Returns the
    result without its digest (`digest` ""), which `with_digest` completes into exactly what
    `resolve(catalog, query, profile=profile)` returns: the catalog stage takes the leaves
    validation resolved from it rather than resolving them again (`pipeline.resolve_catalog`)."""
    return _resolve(catalog, query, profile, (), None, digest=False)


def with_digest(result: RecipeResult) -> RecipeResult:
    """`result` with its digest: the sha256 of its canonical document without one."""
    return replace(result, digest=sha256_digest(_document(result, with_digest=False)))


def _unhonoured(criteria: Criteria, applied: Sequence[Overlay]) -> tuple[str, ...]:
    """The query's stated dimensions no applied overlay states (upstream answers regardless)."""
    return tuple(
        f"{d}={q}"
        for d, q in criteria.items()
        if q is not None and not any(o.criteria.get(d) == q for o in applied)
    )


def _resolve(
    catalog: Catalog,
    query: Criteria | str,
    profile: str,
    overrides: Sequence[Override],
    nodes: int | None,
    *,
    digest: bool,
    choice: str | None = None,
) -> RecipeResult:
    """The resolution, step by step; each step raises what the query or the catalog breaks, in
    this order: the query, the overlays, the mixins, the profile, the overrides, the values, the
    dependencies."""
    criteria, wanted = _query_of(catalog, query)
    applied, name, notes = _applied(catalog, criteria, wanted)
    acc, mixin_names = _accumulate(catalog, applied, name)
    selected = apply_config_profile(acc, applied, choice)
    configuration = apply_configuration(acc, criteria)
    scale = select_profile(catalog, profile, criteria, nodes)
    wanted_state, value_overrides = _split_overrides(catalog, acc, overrides, name)
    keys = acc.rules.enabled_keys
    refs = {n: r for n, r in acc.refs.items() if wanted_state.get(n, ref_enabled(r, keys))}
    disabled = {n for n in acc.refs if n not in refs}
    values, used_files = _values(catalog, refs, scale, value_overrides, disabled, name)
    order, deps, depth, declared_order = _order(catalog, acc, refs, name)
    kept_off = _disabled_components(catalog, acc, wanted_state, declared_order)
    shown = {*refs, *(c.name for c in kept_off)}  # what upstream's RecipeResult lists
    components = tuple(
        _component(catalog, refs[n], i, values[n], used_files[n], deps[n], depth[n], shown)
        for i, n in enumerate(order)
    )
    result = RecipeResult(
        name=name,
        criteria=criteria,
        applied_overlays=tuple(o.name for o in applied),
        mixins=mixin_names,
        constraints=tuple(acc.constraints[k] for k in sorted(acc.constraints)),
        components=components,
        validation={k: acc.validation[k] for k in sorted(acc.validation)},
        scale_profile=scale.name,
        scale_profile_version=scale.version,
        overrides=tuple(overrides),
        digest="",
        file_digests={
            p: _file_digest(catalog, p)
            for c in components
            for p in sorted({*c.values_files, *c.manifest_files, *c.pre_manifest_files})
        },
        disabled=tuple(sorted(disabled)),
        disabled_components=kept_off,
        declared_order=declared_order,
        notes=notes,
        selected_profile=selected,
        configuration=configuration,
    )
    if not digest:
        check_canonical(_document(result, with_digest=False))  # what the digest would raise
        return result
    return with_digest(result)


def _applied(
    catalog: Catalog, criteria: Criteria, wanted: str | None
) -> tuple[tuple[Overlay, ...], str, tuple[str, ...]]:
    """The overlays applied for `criteria` in merge order, the recipe's name (the leaf asked
    for, else the most specific applied overlay), and the notes to print with the recipe."""
    applied = select(catalog, criteria)
    if wanted is not None and wanted not in {o.name for o in applied}:
        raise ResolveError(
            f"recipe '{wanted}' is shadowed by another overlay with the same criteria"
        )
    notes: list[str] = []
    strange = unfamiliar(criteria, catalog)
    if strange:
        notes.append(
            f"{', '.join(strange)} is known only from this tree's overlays (neither "
            "this project's criteria values nor the tree's criteria.yaml name it): answered as "
            "upstream answers a value its code defines"
        )
    missing_dims = _unhonoured(criteria, applied)
    if missing_dims and wanted is None and rules_of(catalog).coverage_refusal:
        raise coverage_refusal(catalog, criteria, applied)
    if missing_dims:
        # upstream answers with the overlays that match; it does not refuse the query
        options = _completions(catalog, criteria)
        listed = "; ".join(options) if options else "none"
        notes.append(
            f"no overlay states {', '.join(missing_dims)}: the recipe is built from the "
            f"overlays that match ({', '.join(o.name for o in applied) or 'none'}), as upstream "
            f"does; complete recipes for these criteria: {listed}"
        )
    chosen = max(
        (o for o in applied if o.name != "base"),
        key=lambda o: (o.criteria.specificity(), o.name),
        default=None,
    )
    return applied, wanted or (chosen.name if chosen else "base"), tuple(notes)


def _accumulate(
    catalog: Catalog, applied: Sequence[Overlay], name: str
) -> tuple[_Acc, tuple[str, ...]]:
    """The applied overlays merged in order, then their mixins; and the mixins' names."""
    acc = _Acc(rules=rules_of(catalog))
    for overlay in applied:
        acc.add(overlay)
    mixin_names = _union([], [m for o in applied for m in o.mixins])
    for m in mixin_names:
        mixin = catalog.mixins.get(m)
        if mixin is None:
            raise ResolveError(f"mixin '{m}' does not exist (used by {name})")
        acc.add(mixin)
    return acc, mixin_names


def _split_overrides(
    catalog: Catalog, acc: _Acc, overrides: Sequence[Override], name: str
) -> tuple[dict[str, bool], list[tuple[str, Override]]]:
    """The user's overrides checked against the recipe's components: the enabled states they ask
    for (`--set component:enabled=…` wins over the recipe's, as upstream), and the value
    overrides, each with its component's canonical name."""
    wanted_state: dict[str, bool] = {}
    value_overrides: list[tuple[str, Override]] = []
    for o in overrides:
        comp = canonical_component(catalog, o.component) or (
            o.component if o.component in acc.refs else None
        )
        if comp is None:
            raise ResolveError(f"override {o.origin}: unknown component '{o.component}'")
        if comp not in acc.refs:
            raise ResolveError(
                f"override {o.origin}: component '{comp}' is not part of recipe '{name}'"
            )
        state = enabled_override(o)
        if state is not None:
            wanted_state[comp] = state
        else:
            value_overrides.append((comp, o))
    return wanted_state, value_overrides


def _values(
    catalog: Catalog,
    refs: Mapping[str, ComponentRef],
    scale: ScaleProfile,
    value_overrides: Sequence[tuple[str, Override]],
    disabled: set[str],
    name: str,
) -> tuple[dict[str, dict[str, Any]], dict[str, tuple[str, ...]]]:
    """Each enabled component's values (its files and overrides, then the scale profile's owned
    values, then the user's overrides) and the files they came from."""
    values: dict[str, dict[str, Any]] = {}
    used_files: dict[str, tuple[str, ...]] = {}
    for n, r in refs.items():
        values[n], used_files[n] = component_values(catalog, n, r.values_file, r.overrides)
    # the scale profile's owned values (set in place: these values are this resolution's own)
    owned = {(ov.component, ov.path): ov for ov in scale.owned_values if ov.component in refs}
    for (owner, path), ov in sorted(owned.items()):
        values[owner] = _set_path_in_place(values[owner], path, ov.value)
    for comp, o in value_overrides:
        if comp in disabled:
            raise ResolveError(
                f"override {o.origin}: component '{comp}' is disabled in recipe '{name}'"
            )
        values[comp] = _user_override(values[comp], comp, o, owned, scale)
    return values, used_files


def _user_override(
    current: dict[str, Any],
    comp: str,
    o: Override,
    owned: Mapping[tuple[str, str], OwnedValue],
    scale: ScaleProfile,
) -> dict[str, Any]:
    """`current` with one user override applied, which may not contradict an owned value."""
    blocked = _non_mapping_prefix(current, o.path)
    if blocked:
        raise ResolveError(
            f"override {o.origin}: '{blocked}' of component '{comp}' is not a mapping, so "
            f"'{o.path}' cannot be set inside it"
        )
    new = set_path(current, o.path, o.value)
    for (oc, opath), ov in sorted(owned.items()):
        if oc != comp:
            continue
        found, now = get_path(new, opath)
        if not found or now != ov.value:
            raise ScaleError(
                f"override {o.origin} contradicts {comp}:{opath}={ov.value!r}, owned by scale profile "
                f"'{scale.name}' {scale.version} ({ov.rationale.strip()}); drop the override or choose "
                "another profile"
            )
    return new


def _disabled_components(
    catalog: Catalog, acc: _Acc, wanted_state: Mapping[str, bool], declared: Sequence[str]
) -> tuple[ResolvedComponent, ...]:
    """The components the recipe itself disables (not those `--set …:enabled=false` leaves out),
    resolved as upstream's RecipeResult shows them: values from their files and overrides
    (`enabled: false` among them), dependencies as written, in declared order."""
    out = []
    for i, n in enumerate(declared):
        r = acc.refs[n]
        if ref_enabled(r, acc.rules.enabled_keys) or n in wanted_state:
            continue
        values, used = component_values(catalog, n, r.values_file, r.overrides)
        out.append(_component(catalog, r, i, values, used, r.dependency_refs, 0))
    return tuple(out)


def _order(
    catalog: Catalog, acc: _Acc, refs: Mapping[str, ComponentRef], name: str
) -> tuple[tuple[str, ...], dict[str, tuple[str, ...]], dict[str, int], tuple[str, ...]]:
    """The enabled components' deployment order, their dependencies among themselves and their
    depth. Upstream orders every declared component, then leaves the disabled out of the order,
    so an unknown dependency or a cycle is refused even through a disabled component."""
    for n, r in acc.refs.items():
        unknown = [d for d in r.dependency_refs if d not in acc.refs]
        if unknown:
            msg = f"component '{n}' depends on '{unknown[0]}', which the recipe does not declare"
            raise ResolveError(
                f"recipe '{name}': {msg}",
                [_dep_diag(catalog, acc, n, unknown[0], msg, "dependency.unknown")],
            )
    try:
        full_order, _ = deployment_order({n: r.dependency_refs for n, r in acc.refs.items()})
    except DependencyCycleError as e:
        raise DependencyCycleError(
            e.cycle,
            f"recipe '{name}': {e.message}",
            [_dep_diag(catalog, acc, e.cycle[0], e.cycle[1], e.message, "dependency.cycle")],
        ) from e
    deps = {n: tuple(d for d in r.dependency_refs if d in refs) for n, r in refs.items()}
    _, depth = deployment_order(deps)
    return tuple(n for n in full_order if n in refs), deps, depth, full_order


def _component(
    catalog: Catalog,
    r: ComponentRef,
    order: int,
    values: dict[str, Any],
    values_files: tuple[str, ...],
    deps: tuple[str, ...],
    depth: int,
    shown: Collection[str] | None = None,
) -> ResolvedComponent:
    """One resolved component: the merged reference, registry defaults for what it leaves out.
    `shown`: the components the RecipeResult lists (its written dependencies on them are kept,
    as upstream keeps them); None: every dependency as written."""
    reg = catalog.registry.components.get(r.name)
    repo = r.source or (reg.repository if reg else None)
    chart = r.chart or _registry_chart(reg.chart if reg else None)
    return ResolvedComponent(
        name=r.name,
        type=r.type or (reg.kind if reg else "Helm"),
        repository=repo,
        chart=(chart or r.name) if repo else None,
        version=r.version or (reg.version if reg else None),
        namespace=r.namespace or (reg.namespace if reg and reg.namespace else ""),
        values=values,
        manifest_files=r.manifest_files,
        pre_manifest_files=r.pre_manifest_files,
        dependency_refs=deps,  # as the overlays list them (upstream keeps that order)
        order=order,
        depth=depth,
        values_files=values_files,
        values_file=r.values_file,
        overrides=r.overrides,
        expected_resources=r.expected_resources,
        owns_crds=reg.owns_crds if reg else False,
        self_ref_crds=reg.self_ref_crds if reg else False,
        manifests_use_chart_crds=reg.manifests_use_chart_crds if reg else False,
        written_dependency_refs=tuple(d for d in r.dependency_refs if shown is None or d in shown),
    )


def _dep_diag(catalog: Catalog, acc: _Acc, comp: str, dep: str, msg: str, rule: str) -> Diagnostic:
    """Located at the dependencyRefs entry that declares comp → dep."""
    rel, json_path = acc.dep_origin[(comp, dep)]
    doc = next(
        (o.doc for o in (*catalog.overlays.values(), *catalog.mixins.values()) if o.doc.rel == rel),
        None,
    )
    line, col = doc.locate(json_path) if doc is not None else (0, 0)
    return Diagnostic(rel, line, col, json_path, msg, rule)


def _constraint_json(c: Constraint) -> dict[str, Any]:
    out: dict[str, Any] = {"name": c.name, "value": c.value}
    if c.severity:
        out["severity"] = c.severity
    if c.remediation:
        out["remediation"] = c.remediation
    return out


def _document(r: RecipeResult, *, with_digest: bool) -> dict[str, Any]:
    def files(paths: Sequence[str]) -> list[dict[str, str]]:
        return [{"path": p, "sha256": r.file_digests.get(p, "")} for p in paths]

    meta: dict[str, Any] = {
        "name": r.name,
        "appliedOverlays": list(r.applied_overlays),
        "mixins": list(r.mixins),
        "scaleProfile": {"name": r.scale_profile, "version": r.scale_profile_version},
    }
    if r.selected_profile is not None:  # upstream's configuration profile (absent: unchanged)
        sel = r.selected_profile
        meta["selectedProfile"] = {"name": sel.name, "value": sel.value}
    if with_digest:
        meta["digest"] = r.digest
    comps = []
    for c in r.components:
        entry: dict[str, Any] = {
            "name": c.name,
            "type": c.type,
            "namespace": c.namespace,
            "order": c.order,
            "depth": c.depth,
            # a set: the deployment order is computed from it, so the canonical document (and
            # the digest evidence names) does not depend on the order the overlays list them in;
            # `query --format aicr` keeps that order, as upstream's RecipeResult does
            "dependencyRefs": sorted(c.dependency_refs),
            "values": c.values,
        }
        for key, val in (("source", c.repository), ("chart", c.chart), ("version", c.version)):
            if val is not None:
                entry[key] = val
        if c.values_files:
            entry["valuesFiles"] = list(c.values_files)
        if c.manifest_files:
            entry["manifestFiles"] = files(c.manifest_files)
        if c.pre_manifest_files:
            entry["preManifestFiles"] = files(c.pre_manifest_files)
        comps.append(entry)
    return {
        "apiVersion": API_VERSION,
        "kind": "RecipeResult",
        "metadata": meta,
        "spec": {
            "criteria": r.criteria.to_json(),
            "constraints": [_constraint_json(c) for c in r.constraints],
            "componentRefs": comps,
            "deploymentOrder": [c.name for c in r.components],
            "validation": {k: dict(v) for k, v in r.validation.items()},
            **({"configuration": dict(r.configuration)} if r.configuration else {}),
            "overrides": [
                {"component": o.component, "path": o.path, "value": o.value} for o in r.overrides
            ],
        },
    }


def document_without_digest(result: RecipeResult) -> dict[str, Any]:
    """The canonical document the digest is the sha256 of."""
    return _document(result, with_digest=False)


def recipe_document(result: RecipeResult) -> dict[str, Any]:
    """The canonical RecipeResult document (apiVersion aicr.run/v1), digest included."""
    return _document(result, with_digest=True)


def _applicable_profiles(catalog: Catalog, leaf: str) -> tuple[str, ...]:
    """The scale profiles that apply to a leaf recipe (`standard` always), sorted."""
    crit = catalog.overlays[leaf].criteria
    names = {DEFAULT_PROFILE} | {
        p.name for p in catalog.profiles.values() if profile_applies(p, crit)
    }
    return tuple(sorted(names))


def resolve_all(catalog: Catalog) -> dict[tuple[str, str], RecipeResult]:
    """Every leaf × applicable profile that resolves (validate reports the ones that do not)."""
    out: dict[tuple[str, str], RecipeResult] = {}
    for leaf in catalog.leaves():
        for prof in _applicable_profiles(catalog, leaf):
            try:
                out[(leaf, prof)] = resolve(catalog, leaf, profile=prof)
            except (ResolveError, ScaleError):
                continue
    return out


def current_digests(results: Mapping[tuple[str, str], RecipeResult]) -> dict[str, str]:
    """`<recipe>@<profile>` → digest, the form evidence verification compares against."""
    return {f"{leaf}@{prof}": r.digest for (leaf, prof), r in sorted(results.items())}
