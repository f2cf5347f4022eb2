"""The recipe a bundle renders: the one path of `aicr-catalog bundle` and of the site's downloads.

`bundled_recipe` takes the resolved recipe and adds what upstream AICR's bundler adds: the
node-scheduling overrides at the registry's `nodeScheduling.*` paths (default tolerations
`[{operator: Exists}]`), then what the catalog's rules inject on their own (the DRA driver's
gpu-operator version annotation, agentgateway's private source ranges), marks the components
the rules install without waiting for readiness (upstream's "async components": helm and
helmfile install them without `--wait`, with a longer timeout), and refuses the bundle where a
blocking registry validation fails (AKS: the wildcard accelerated toleration). The
command and the site both call it with the same inputs, so a site download is the command's
output with default flags, byte for byte, and the site never publishes a bundle the command
would refuse.

`render_bundled` is the one door to a bundle for every other module (`preflight`, the release
diff, the compatibility gate's layouts, the scale samples): the bundled recipe, rendered.
`rebuild` gives the `Build` of a recipe already resolved. Only this module and the site's
archive worker (`generator/render/cache.py`, which renders the recipes this module returned to
the site) call `render_bundle` (tests/test_architecture.py).
"""

from __future__ import annotations

import dataclasses
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from generator.catalog.overrides import (
    DRA_COMPONENT,
    GATEWAY_COMPONENT,
    NodeScheduling,
    dra_chart_version_overrides,
    gateway_source_range_overrides,
    registry_entries,
    scheduling_overrides,
    selector_warnings,
)
from generator.catalog.registry_checks import check_bundle
from generator.catalog.rules import rules_of
from generator.core.records import Catalog, Override, RecipeResult
from generator.render import BundleTree, Deployer, GitOpsTarget, render_bundle
from generator.render.common import GENERATOR_NAME

# the recipe with extra overrides (scheduling, the bundler's own) applied before the user's
Build = Callable[[tuple[Override, ...]], RecipeResult]

# what makes a refused default work: a keyed accelerated-node toleration (upstream's advice)
KEYED_TOLERATION = "nvidia.com/gpu:NoSchedule"


@dataclass(frozen=True, slots=True)
class Bundled:
    """The recipe to render and the registry's selector warnings (for stderr or a page)."""

    result: RecipeResult
    warnings: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Refusal:
    """A bundle `bundle` refuses with default flags: the rule, the message, and the command
    with the flags that make it work."""

    recipe: str
    profile: str
    deployer: str
    rule: str
    message: str
    command: str


def bundled_recipe(catalog: Catalog, build: Build, scheduling: NodeScheduling) -> Bundled:
    """The recipe `build(())` with the node-scheduling overrides of its enabled components, then
    the bundler's own injections; raises CatalogError (a usage error) for bad scheduling flags
    and UsageError (rule `bundle.wildcard-toleration`) when the registry refuses the bundle."""
    result = build(())
    registry = catalog.registry.doc.data if catalog.registry.doc else None
    entries = registry_entries(registry)
    names = [c.name for c in result.components]
    given = {c.name: c.overrides or {} for c in result.components}
    append = rules_of(catalog).tolerations_append
    placed = scheduling_overrides(entries, names, scheduling, given if append else None)
    warnings = tuple(selector_warnings(entries, names, result.criteria.intent, scheduling))
    placed += injected(catalog, result)
    final = build(placed) if placed else result
    check_bundle(registry, final, scheduling.accelerated_tolerations)
    return Bundled(with_install_policy(catalog, final), warnings)


def render_bundled(
    catalog: Catalog,
    build: Build,
    deployer: Deployer | str,
    *,
    scheduling: NodeScheduling | None = None,
    manifests: Mapping[str, bytes] | None = None,
    target: GitOpsTarget | None = None,
    recipe_file: str | None = None,
) -> tuple[Bundled, BundleTree]:
    """The bundle `aicr-catalog bundle` renders for `build` (default scheduling flags unless
    given): `bundled_recipe`, then `render_bundle` with the catalog's manifests (or
    `manifests`, the bytes of another revision). Raises as both do (a refused bundle: UsageError
    `bundle.wildcard-toleration`)."""
    from generator.catalog.manifests import read_manifests

    bundled = bundled_recipe(catalog, build, scheduling or NodeScheduling())
    files = manifests if manifests is not None else read_manifests(catalog, bundled.result)
    tree = render_bundle(bundled.result, deployer, files, target=target, recipe_file=recipe_file)
    return bundled, tree


def rebuild(catalog: Catalog, result: RecipeResult) -> Build:
    """The `Build` of a recipe already resolved: itself when nothing is added, else resolved
    again by name with its scale profile and configuration-profile choice, the additions before
    its own overrides (as `bundle` places them)."""
    from generator.catalog.resolve import resolve

    chosen = result.selected_profile
    choice = f"{chosen.name}={chosen.value}" if chosen is not None else None

    def build(extra: tuple[Override, ...]) -> RecipeResult:
        if not extra:
            return result
        overrides = (*extra, *result.overrides)
        return resolve(
            catalog, result.name, profile=result.scale_profile, overrides=overrides, choice=choice
        )

    return build


def with_install_policy(catalog: Catalog, result: RecipeResult) -> RecipeResult:
    """`result` with the components the catalog's rules install without waiting for readiness
    (`UpstreamRules.async_install`) marked with their timeout (`async_install_timeout`), which
    the helm and helmfile deployers read. The recipe itself (values, digest) is unchanged."""
    policy = rules_of(catalog).async_install
    if policy is None or not any(c.name in policy.components for c in result.components):
        return result
    components = tuple(
        dataclasses.replace(c, async_install_timeout=policy.timeout_seconds)
        if c.name in policy.components
        else c
        for c in result.components
    )
    return dataclasses.replace(result, components=components)


def injected(catalog: Catalog, result: RecipeResult) -> tuple[Override, ...]:
    """What upstream's bundler adds on its own under the catalog's rules (recorded as overrides
    of origin `bundler:`)."""
    rules = rules_of(catalog)
    out: tuple[Override, ...] = ()
    if rules.dra_chart_annotation:
        dra = result.component(DRA_COMPONENT)
        versions = {c.name: c.version for c in result.components}
        out += dra_chart_version_overrides(versions, dra.values if dra else None)
    if rules.gateway_private_ranges:
        gateway = result.component(GATEWAY_COMPONENT)
        out += gateway_source_range_overrides(gateway.values if gateway else None)
    return out


def workaround_command(recipe: str, profile: str, deployer: str) -> str:
    """The `bundle` command that renders a recipe refused with default flags: a keyed
    accelerated-node toleration instead of the wildcard default."""
    parts = [GENERATOR_NAME, "bundle", "--recipe", recipe, "--deployer", deployer]
    parts += ["--scale-profile", profile, "--accelerated-node-toleration", KEYED_TOLERATION]
    parts += ["-o", "DIR"]
    return " ".join(shlex.quote(p) for p in parts)
