"""Typed, immutable records passed between the pipeline stages.

Mappings inside records (values, overrides, raw documents) are plain dicts/lists produced by the
loader; treat them as read-only. Stages that need to change one copy it first.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

# The criteria dimensions, in their canonical order.
DIMENSIONS: tuple[str, ...] = ("service", "accelerator", "os", "intent", "platform")

WILDCARD = "any"


@dataclass(frozen=True, slots=True)
class Document:
    """One parsed YAML document with a line index.

    `rel` is the path relative to the catalog root, POSIX-style. `lines` maps a JSON path
    (`$`, `$.spec.componentRefs[0].name`) to the 1-based (line, col) of that node.
    """

    rel: str
    data: Any
    lines: Mapping[str, tuple[int, int]]
    sha256: str

    def locate(self, json_path: str) -> tuple[int, int]:
        """The line of `json_path`, or of its closest located ancestor."""
        path = json_path
        while path:
            if path in self.lines:
                return self.lines[path]
            cut = max(path.rfind("."), path.rfind("["))
            if cut <= 0:
                break
            path = path[:cut]
        return self.lines.get("$", (1, 1))


@dataclass(frozen=True, slots=True)
class Criteria:
    """Recipe or query criteria. `None` is the wildcard (absent or `any`)."""

    service: str | None = None
    accelerator: str | None = None
    os: str | None = None
    intent: str | None = None
    platform: str | None = None

    def get(self, dim: str) -> str | None:
        value: str | None = getattr(self, dim)
        return value

    def items(self) -> tuple[tuple[str, str | None], ...]:
        return tuple((d, self.get(d)) for d in DIMENSIONS)

    def specificity(self) -> int:
        return sum(1 for _, v in self.items() if v is not None)

    def to_json(self) -> dict[str, str]:
        return {d: (v if v is not None else WILDCARD) for d, v in self.items()}


@dataclass(frozen=True, slots=True)
class Constraint:
    name: str
    value: str
    severity: str | None = None
    remediation: str | None = None
    unit: str | None = None  # upstream: the unit of a numeric constraint (e.g. GB/s)


@dataclass(frozen=True, slots=True)
class ComponentRef:
    """One `componentRefs` entry as written in an overlay or mixin (fields may be absent)."""

    name: str
    type: str | None = None
    source: str | None = None
    version: str | None = None
    namespace: str | None = None
    chart: str | None = None
    values_file: str | None = None
    overrides: Mapping[str, Any] | None = None
    manifest_files: tuple[str, ...] = ()
    pre_manifest_files: tuple[str, ...] = ()
    dependency_refs: tuple[str, ...] = ()
    enabled: bool | None = None
    # JSON path of this entry inside its document, for diagnostics.
    json_path: str = ""
    # upstream's `expectedResources` (what deployment validation looks for), carried as written
    expected_resources: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True, slots=True)
class Overlay:
    """A `RecipeMetadata` (overlay) or `RecipeMixin` document."""

    kind: str
    api_version: str
    name: str
    base: str | None
    criteria: Criteria
    mixins: tuple[str, ...]
    constraints: tuple[Constraint, ...]
    component_refs: tuple[ComponentRef, ...]
    # phase name -> raw phase mapping (checks, constraints, timeout, ...)
    validation: Mapping[str, Mapping[str, Any]]
    doc: Document
    # False when the document has no `spec.criteria`: upstream never matches such an overlay
    # (it is applied only as the base of another); `criteria` is then all wildcards.
    has_criteria: bool = True
    # upstream's Criteria.Specificity() of the criteria as written: every dimension whose value
    # is not the literal `any` counts, an absent one included (so `{intent: any}` scores 4 and
    # `{service: eks}` 5); upstream applies matching overlays in ascending order of it.
    upstream_specificity: int = 0
    # upstream's `criteria.nodes` (0 = any): an overlay with nodes set matches only a query for
    # exactly that many nodes
    nodes: int = 0
    # upstream's ADR-015 configuration profile (`spec.profile`, August 2026 rules), or None
    profile: ConfigProfile | None = None


@dataclass(frozen=True, slots=True)
class ProfileValue:
    """One value of a configuration profile: the fragment applied when it is selected."""

    name: str
    # (component, overrides) in the order written; merged into the component's overrides
    component_refs: tuple[tuple[str, Mapping[str, Any]], ...]
    constraints: tuple[Constraint, ...]
    readiness_constraints: tuple[Constraint, ...] = ()
    advertiser: str | None = None


@dataclass(frozen=True, slots=True)
class ConfigProfile:
    """Upstream's configuration profile (`spec.profile`, ADR-015): a user's choice among named
    values, each a fragment of overrides and constraints; `default` applies when none is chosen.
    Not a scale profile: that one is this project's (scale-specific settings, owned values)."""

    name: str
    description: str
    default: str
    values: Mapping[str, ProfileValue]
    declared_in: str  # the overlay that declares it

    def owned_paths(self) -> dict[str, tuple[str, ...]]:
        """component -> the dotted leaf paths any value assigns, plus `enabled`, sorted."""
        owned: dict[str, set[str]] = {}
        for value in self.values.values():
            for comp, overrides in value.component_refs:
                paths = owned.setdefault(comp, {"enabled"})
                paths.update(_leaf_paths(overrides, ""))
        return {c: tuple(sorted(p)) for c, p in sorted(owned.items())}


def _leaf_paths(values: Mapping[str, Any], prefix: str) -> list[str]:
    out: list[str] = []
    for k, v in values.items():
        path = f"{prefix}{k}"
        if isinstance(v, Mapping) and v:
            out.extend(_leaf_paths(v, f"{path}."))
        else:
            out.append(path)
    return out


@dataclass(frozen=True, slots=True)
class SelectedProfile:
    """The configuration profile value a recipe was resolved with (`metadata.selectedProfile`)."""

    name: str
    value: str
    owned_paths: Mapping[str, tuple[str, ...]]
    advertiser: str | None = None
    # the declaration it was chosen from: every value, the default, what the choice is about
    choices: tuple[str, ...] = ()
    default: str = ""
    description: str = ""


@dataclass(frozen=True, slots=True)
class ManifestFile:
    """A `components/<name>/manifests/*` file: its bytes are kept as they are, never understood.

    `kind` is `template` when the file holds Helm template actions (`{{ … }}`), rendered by Helm
    with the component's values at deploy time, else `plain` (Kubernetes YAML as it is).
    """

    rel: str
    kind: str  # "plain" | "template"
    sha256: str


@dataclass(frozen=True, slots=True)
class RegistryComponent:
    name: str
    display_name: str
    value_override_keys: tuple[str, ...]
    repository: str | None
    chart: str | None
    version: str | None
    namespace: str | None
    kind: str  # "Helm" or "Kustomize"
    json_path: str = ""
    # upstream's `healthCheck.assertFile` (August 2026): the text a RecipeResult carries inline
    health_check_file: str | None = None
    # upstream's `ownsCRDs` (August 2026): the sole owner of the CRDs its chart ships, so a
    # Flux upgrade may replace them (`upgrade.crds: CreateReplace`)
    owns_crds: bool = False
    # upstream's `hasSelfRefCRDs` (its chart creates objects of CRDs it ships) and
    # `manifestsUseChartCRDs` (its manifests do): helm-diff cannot validate such a release on a
    # fresh cluster, so helmfile skips validation there (`disableValidation: true`)
    self_ref_crds: bool = False
    manifests_use_chart_crds: bool = False


@dataclass(frozen=True, slots=True)
class Registry:
    components: Mapping[str, RegistryComponent]
    doc: Document | None


@dataclass(frozen=True, slots=True)
class OwnedValue:
    component: str
    path: str  # dotted path inside the component's Helm values
    value: Any
    rationale: str
    status: str = "proposed"  # proposed | qualified
    evidence: tuple[
        str, ...
    ] = ()  # qualified: evidence files (`<recipe>/<source>/<sha>.sigstore.json`)


# The scale profile a recipe is resolved, bundled and qualified at unless another is named; a
# catalog without a profile of that name gets a built-in one (the recipe as written).
DEFAULT_PROFILE = "standard"


@dataclass(frozen=True, slots=True)
class ScaleProfile:
    name: str
    version: str
    nodes_min: int
    nodes_max: int
    description: str
    applies_to: tuple[Criteria, ...]  # empty = applies to every recipe
    owned_values: tuple[OwnedValue, ...]
    prerequisites: tuple[Mapping[str, Any], ...]
    ladder: tuple[str, ...]
    doc: Document | None

    def covers(self, nodes: int) -> bool:
        return self.nodes_min <= nodes <= self.nodes_max


@dataclass(frozen=True, slots=True)
class Catalog:
    """Everything `load` read from one catalog directory."""

    root: str  # as given by the user; never printed into outputs
    overlays: Mapping[str, Overlay]
    mixins: Mapping[str, Overlay]
    registry: Registry
    profiles: Mapping[str, ScaleProfile]
    # catalog-relative path -> parsed document of every referenced data file (values, manifests)
    files: Mapping[str, Document]
    # extra criteria values the catalog declares (catalog/criteria.yaml), per dimension
    extra_criteria: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # aliases the catalog declares (criteria.yaml), per dimension: alias -> value
    criteria_aliases: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    # every other loaded document by relative path (lanes, signers, ...)
    documents: Mapping[str, Document] = field(default_factory=dict)
    # names of overlays/mixins whose file exists but could not be loaded (to avoid knock-on errors)
    unloadable: frozenset[str] = frozenset()
    # catalog-relative path -> kind of every manifest (`components/*/manifests/*`)
    manifests: Mapping[str, ManifestFile] = field(default_factory=dict)
    # the project's own files this tree lacks (signers.yaml, scale/), replaced by built-in
    # defaults: an upstream AICR tree has none of them
    defaulted: tuple[str, ...] = ()
    # the upstream rules the tree is read under (`generator.catalog.rules.RULES` key): detected
    # from its overlays' apiVersions, or stated with --upstream-rules
    rules: str = ""  # "" = generator.catalog.rules.DEFAULT_RULES

    def leaves(self) -> tuple[str, ...]:
        """Overlay names that no other overlay uses as its base (excluding `base`, overlays
        without criteria, which no query applies, and overlays whose every criterion is the
        wildcard, such as upstream's `monitoring-hpa`: applied to every query, a layer rather
        than a recipe), sorted."""
        parents = {o.base for o in self.overlays.values() if o.base}
        return tuple(
            sorted(
                n
                for n, o in self.overlays.items()
                if n not in parents
                and n != "base"
                and o.has_criteria
                and o.criteria.specificity() > 0
            )
        )


@dataclass(frozen=True, slots=True)
class Override:
    """A user override: `--set component:path=value` or `--set-file component:path=FILE`."""

    component: str
    path: str  # dotted; "" for the component's whole values (set-file at the root)
    value: Any
    origin: str  # how the user wrote it, for bundle-info and messages


@dataclass(frozen=True, slots=True)
class ResolvedComponent:
    name: str
    type: str
    repository: str | None  # Helm repository URL or oci:// reference
    chart: str | None
    version: str | None
    namespace: str
    values: Mapping[str, Any]  # fully merged Helm values
    manifest_files: tuple[str, ...]
    pre_manifest_files: tuple[str, ...]
    dependency_refs: tuple[str, ...]
    order: int  # 0-based position in the deployment order
    depth: int  # dependency depth (0 = no dependencies): Argo CD sync wave
    values_files: tuple[str, ...]  # the values files that contributed, in merge order
    # the recipe's `valuesFile` and merged `overrides` as upstream's RecipeResult carries them
    # (values = base values.yaml -> valuesFile -> overrides); None when the recipe names none
    values_file: str | None = None
    overrides: Mapping[str, Any] | None = None
    expected_resources: tuple[Mapping[str, Any], ...] = ()  # upstream's, carried as written
    # the dependencies as the overlays write them, those on a component the recipe itself
    # disables included (upstream's RecipeResult keeps them; the deployment order and the
    # bundle use `dependency_refs`, among the deployed); None: the same as `dependency_refs`
    written_dependency_refs: tuple[str, ...] | None = None
    owns_crds: bool = False  # the registry's `ownsCRDs` (see RegistryComponent)
    self_ref_crds: bool = False  # the registry's `hasSelfRefCRDs` (see RegistryComponent)
    manifests_use_chart_crds: bool = False  # the registry's `manifestsUseChartCRDs`
    # how the helm and helmfile deployers install its chart: with Helm's `--wait` (readiness)
    # and their default timeout, or, for the components the catalog's rules install without
    # waiting (`UpstreamRules.async_install`, set by generator/render/bundled.py only), without
    # `--wait` and with this timeout in seconds; not part of the recipe or its digest
    async_install_timeout: int | None = None


@dataclass(frozen=True, slots=True)
class RecipeResult:
    """A resolved, concrete recipe (apiVersion aicr.run/v1)."""

    name: str
    criteria: Criteria
    applied_overlays: tuple[str, ...]
    mixins: tuple[str, ...]
    constraints: tuple[Constraint, ...]
    components: tuple[ResolvedComponent, ...]  # in deployment order
    validation: Mapping[str, Mapping[str, Any]]
    scale_profile: str
    scale_profile_version: str
    overrides: tuple[Override, ...]
    digest: str  # "sha256:<hex>" of the canonical form without the digest itself
    # sha256 hex of every catalog file the recipe uses (values and manifests), by catalog-relative path
    file_digests: Mapping[str, str] = field(default_factory=dict)
    # components the recipe declares but leaves out (`enabled: false` in overrides or `--set`)
    disabled: tuple[str, ...] = ()
    # the components the recipe itself disables, resolved (upstream's RecipeResult keeps them,
    # `enabled: false` in their values; only the bundle leaves them out), and the deployment
    # order over every component the recipe declares; neither is part of the digest
    disabled_components: tuple[ResolvedComponent, ...] = ()
    declared_order: tuple[str, ...] = ()
    # what the user should know about how the query was answered (not part of the digest)
    notes: tuple[str, ...] = ()
    # the configuration profile value applied (upstream's ADR-015), None when none is declared
    selected_profile: SelectedProfile | None = None
    # upstream's generation-time `configuration` block (August 2026: the Slurm accounting mode)
    configuration: Mapping[str, Any] | None = None

    def component(self, name: str) -> ResolvedComponent | None:
        for c in self.components:
            if c.name == name:
                return c
        return None


# The consensus of distinct verified signers (made by `aggregate`, shown by the site and `status`):
# here, below both, so a page or a badge can name a state without importing pandas.
class Consensus(StrEnum):
    """Agreement of distinct verified signers on a check, phase, lane or recipe × profile."""

    CONFIRMED = "CONFIRMED"  # ≥ 2 pass, none fail
    SINGLE = "SINGLE"  # 1 pass, none fail
    CONTESTED = "CONTESTED"  # pass and fail
    FAILING = "FAILING"  # fail only
    UNTESTED = "UNTESTED"  # no run
    PARTIAL = "PARTIAL"  # a roll-up: some rows untested, none failing or contested
