"""Which upstream AICR's rules a recipe tree is read under: one frozen record per upstream version.

Upstream changed rules between its v0.11.1 release (March 2026) and its `main` at 9793720d
(August 2026). A tree says which it was written for by its overlays' `apiVersion`s:
`aicr.nvidia.com/v1alpha1` is v0.11.1's, `aicr.run/v1alpha2` and `aicr.run/v1alpha3` (ADR-015
profiles) are August's. This project's own catalog (`aicr.run/v1beta1`) is read under v0.11.1's
rules, which it was moved to (docs/upstream-compatibility.md). `--upstream-rules` states it.

Every rule that differs between the two is a field of `UpstreamRules`; the code that applies a
rule reads the field, never a version string (tests/test_upstream_rules.py checks that no module
but this one names a version). docs/upstream-compatibility.md has the same table in prose.

Entry: `RULES` (name -> record), `rules_of(catalog)`, `detect(api_versions)`, `rules_named(name)`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

from generator.core.errors import Diagnostic, UsageError
from generator.core.records import Catalog


@dataclass(frozen=True, slots=True)
class SlurmAccounting:
    """Upstream's Slurm accounting configuration (August 2026, `pkg/recipe/accounting.go`): a
    recipe for `platform` gets `configuration.slurm.accounting.mode`; in the default mode
    `disabled` the cluster component's `accounting.enabled` is false and the database
    components are kept in the recipe but not installed (`install: false`)."""

    platform: str
    default_mode: str
    cluster: str  # its overrides get accounting.enabled
    database: tuple[str, ...]  # their overrides get install


SLURM_ACCOUNTING_2026_08 = SlurmAccounting(
    platform="slurm",
    default_mode="disabled",
    cluster="slinky-slurm",
    database=("mariadb-operator-crds", "mariadb-operator", "slurm-accounting-mariadb"),
)


@dataclass(frozen=True, slots=True)
class AsyncInstall:
    """Components upstream's bundler installs without waiting for readiness (its "async
    components", named in its code, not in the registry): operators whose custom resources
    reconcile after the release is installed, so Helm's `--wait` can time out although every
    pod starts. Such a release is installed with `--wait` off and a longer `--timeout`, which
    still bounds its hooks. At 9793720d: kai-scheduler, 20 minutes (helm's `deploy.sh`:
    no `--wait`, `--timeout 20m`; helmfile: `wait: false`, `timeout: 1200`). Argo CD and Flux
    bundles are unchanged (Argo CD never waits on Helm; upstream's HelmRelease keeps Flux's
    wait)."""

    components: tuple[str, ...]
    timeout_seconds: int


ASYNC_INSTALL_2026_08 = AsyncInstall(components=("kai-scheduler",), timeout_seconds=1200)


@dataclass(frozen=True, slots=True)
class UpstreamRules:
    """The rules of one upstream version, as this project applies them."""

    name: str  # the `--upstream-rules` value
    upstream: str  # the upstream version the rules were read from
    # RecipeMetadata headers written under these rules (the detection keys)
    overlay_api_versions: tuple[str, ...]
    # merging overlays
    dependency_refs: Literal["replace", "append"]  # a later non-empty list replaces / is added
    validation_merge: Literal["phase", "field"]  # a stated phase replaces / merges field by field
    # queries
    coverage_refusal: bool  # a stated dimension no applied overlay states is refused (exit 2)
    nodes_select: bool  # `criteria.nodes` takes part in matching (False: metadata only)
    # components
    enabled_keys: tuple[str, ...]  # `overrides.<key>: false` leaves a component out
    order_lists_disabled: bool  # the RecipeResult's deploymentOrder names disabled components
    null_deletes: bool  # a null in a later values layer deletes the key (Helm's rule)
    # `--set` for a component the recipe lacks: upstream's invalid request (exit 2) when True;
    # v0.11.1 ignored it, this project refuses it as bad data (exit 1)
    unknown_set_invalid: bool
    # generation-time configuration (`configuration` block): the Slurm accounting mode a Slurm
    # recipe gets when none is chosen, None: no such configuration
    slurm_accounting: SlurmAccounting | None
    # overlays
    profiles: bool  # `spec.profile` (ADR-015) is read, `--profile name=value` selects
    registry_versions: bool  # a Helm chart without a version takes the registry's defaultVersion
    # the RecipeResult written (`query --format aicr`) and read (`bundle --recipe`)
    recipe_api_version: str
    profiled_api_version: str  # when a profile applies
    recipe_api_versions_read: tuple[str, ...]
    health_check_asserts: bool  # componentRefs carry the registry's health-check text inline
    configuration_block: bool  # the RecipeResult has a `configuration` block
    recipe_metadata_version: str | None  # `metadata.version` of the RecipeResult, None: absent
    # bundling, what upstream's bundler injects: the DRA driver's pods carry the gpu-operator
    # chart version as an annotation, so a gpu-operator chart bump re-rolls them (#973); an empty
    # agentgateway `allowedSourceRanges` becomes the private RFC 1918 ranges (#1373)
    dra_chart_annotation: bool = False
    gateway_private_ranges: bool = False
    # node-scheduling tolerations are appended to those the recipe's `overrides` list at the
    # registry's paths (each once), not written over them (BCM's control-plane tolerations stay)
    tolerations_append: bool = False
    # the components the helm and helmfile deployers install without waiting for readiness,
    # with a longer timeout (None: every release waits, with the deployer's default timeout)
    async_install: AsyncInstall | None = None


V0_11_1 = UpstreamRules(
    name="v0.11.1",
    upstream="v0.11.1 (2026-03)",
    overlay_api_versions=("aicr.nvidia.com/v1alpha1", "aicr.run/v1beta1", "aicr.run/v1beta2"),
    dependency_refs="replace",
    validation_merge="phase",
    coverage_refusal=False,
    nodes_select=True,
    enabled_keys=("enabled",),
    order_lists_disabled=True,
    null_deletes=False,
    unknown_set_invalid=False,
    slurm_accounting=None,
    profiles=False,
    registry_versions=False,
    recipe_api_version="aicr.nvidia.com/v1alpha1",
    profiled_api_version="aicr.nvidia.com/v1alpha1",
    recipe_api_versions_read=("aicr.nvidia.com/v1alpha1",),
    health_check_asserts=False,
    configuration_block=False,
    recipe_metadata_version=None,
)

MAIN_2026_08 = UpstreamRules(
    name="2026-08",
    upstream="main 9793720d (2026-08-21)",
    overlay_api_versions=("aicr.run/v1alpha2", "aicr.run/v1alpha3"),
    dependency_refs="append",
    validation_merge="field",
    coverage_refusal=True,
    nodes_select=False,
    enabled_keys=("enabled", "install"),
    order_lists_disabled=False,
    null_deletes=True,
    unknown_set_invalid=True,
    slurm_accounting=SLURM_ACCOUNTING_2026_08,
    profiles=True,
    registry_versions=True,
    recipe_api_version="aicr.run/v1alpha2",
    profiled_api_version="aicr.run/v1alpha3",
    # upstream at 9793720d rejects aicr.nvidia.com/v1alpha1; this project reads both
    recipe_api_versions_read=("aicr.run/v1alpha2", "aicr.run/v1alpha3", "aicr.nvidia.com/v1alpha1"),
    health_check_asserts=True,
    configuration_block=True,
    recipe_metadata_version="main-9793720d",
    dra_chart_annotation=True,
    gateway_private_ranges=True,
    tolerations_append=True,
    async_install=ASYNC_INSTALL_2026_08,
)

RULES: Mapping[str, UpstreamRules] = MappingProxyType({r.name: r for r in (V0_11_1, MAIN_2026_08)})
DEFAULT_RULES = V0_11_1


def rules_named(name: str) -> UpstreamRules:
    """The record named `name` (`--upstream-rules`); UsageError (exit 2) for an unknown name."""
    found = RULES.get(name)
    if found is None:
        msg = f"unknown upstream rules '{name}'; known: {', '.join(RULES)}"
        raise UsageError(msg, [Diagnostic("--upstream-rules", 0, 0, "$", msg, "rules.unknown")])
    return found


def rules_of(catalog: Catalog) -> UpstreamRules:
    """The rules `catalog` is read under (`Catalog.rules`, set when it was loaded; a catalog
    made in code without it is read under the default rules)."""
    return rules_named(catalog.rules) if catalog.rules else DEFAULT_RULES


def detect(api_versions: Iterable[str]) -> UpstreamRules:
    """The rules a tree's overlay headers call for: August's when any overlay is written for
    them, else v0.11.1's (this project's own catalog included)."""
    seen = set(api_versions)
    for rules in (MAIN_2026_08,):
        if seen & set(rules.overlay_api_versions):
            return rules
    return DEFAULT_RULES
