"""The catalog's pins: every (component, repository, chart, version) it can deploy, where each
is written, and which leaf recipes deploy it.

A pin is written in the registry (`helm.defaultRepository/defaultChart/defaultVersion`) or in an
overlay or mixin `componentRefs` entry that sets `source`, `chart` or `version` (the fields it
leaves out come from the registry). Kustomize components and manifest-only components (no
repository or chart) have nothing to check upstream and are left out.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping

from generator.core.errors import CatalogError
from generator.core.records import Catalog, ComponentRef, Document, RecipeResult
from generator.pins.model import Pin, PinLocation

PinKey = tuple[str, str, str, str]  # component, version, repository, chart


def _norm_repo(repository: str) -> str:
    return repository.strip().rstrip("/")


def chart_name(chart: str | None, repository: str, component: str) -> str:
    """As the resolver names it: the component's name when absent, and a Helm repository alias
    prefix (`nvidia/gpu-operator`) removed for HTTP repositories."""
    if not chart:
        return component
    if "/" in chart and not repository.startswith("oci://"):
        return chart.rsplit("/", 1)[1]
    return chart


def pin_key(component: str, version: str, repository: str, chart: str | None) -> PinKey:
    repo = _norm_repo(repository)
    return (component, version, repo, chart_name(chart, repo, component))


def _where(doc: Document | None, json_path: str, fallback: str) -> PinLocation:
    if doc is None:
        return PinLocation(fallback, 0, 0, json_path)
    line, col = doc.locate(json_path)
    return PinLocation(doc.rel, line, col, json_path)


def collect_pins(catalog: Catalog) -> tuple[Pin, ...]:
    """Every distinct pin, with all the places that write it; sorted, without recipes."""
    places: dict[PinKey, set[PinLocation]] = defaultdict(set)
    registry = catalog.registry
    for name in sorted(registry.components):
        comp = registry.components[name]
        if comp.kind != "Helm" or not comp.repository or not comp.version:
            continue
        key = pin_key(name, comp.version, comp.repository, comp.chart)
        path = f"{comp.json_path}.helm.defaultVersion"
        places[key].add(_where(registry.doc, path, "registry.yaml"))
    for overlay in (*catalog.overlays.values(), *catalog.mixins.values()):
        for ref in overlay.component_refs:
            found = _ref_pin(catalog, ref)
            if found is not None:
                key, field = found
                places[key].add(_where(overlay.doc, f"{ref.json_path}.{field}", overlay.doc.rel))
    return tuple(
        Pin(component=k[0], version=k[1], repository=k[2], chart=k[3], locations=tuple(sorted(v)))
        for k, v in sorted(places.items())
    )


def _ref_pin(catalog: Catalog, ref: ComponentRef) -> tuple[PinKey, str] | None:
    """The pin a componentRef writes, and the field that writes it (version, source, chart)."""
    if ref.type == "Kustomize" or (ref.version, ref.source, ref.chart) == (None, None, None):
        return None
    name = canonical_component(catalog, ref.name)
    reg = catalog.registry.components.get(name)
    if reg is not None and reg.kind != "Helm" and ref.type is None:
        return None
    repository = ref.source or (reg.repository if reg else None)
    chart = ref.chart or (reg.chart if reg else None)
    version = ref.version or (reg.version if reg else None)
    if not repository or not version:
        return None
    field = "version" if ref.version else ("source" if ref.source else "chart")
    return pin_key(name, version, repository, chart), field


def canonical_component(catalog: Catalog, name: str) -> str:
    """A ref may name a component by one of its `valueOverrideKeys`."""
    if name in catalog.registry.components:
        return name
    for comp in sorted(catalog.registry.components.values(), key=lambda c: c.name):
        if name in comp.value_override_keys:
            return comp.name
    return name


def recipe_usage(
    leaves: Iterable[str], resolve_leaf: Callable[[str], RecipeResult]
) -> tuple[Mapping[PinKey, tuple[str, ...]], tuple[str, ...]]:
    """(pin -> leaf recipes that deploy it, leaves that did not resolve with the reason)."""
    usage: dict[PinKey, set[str]] = defaultdict(set)
    failed: list[str] = []
    for leaf in sorted(leaves):
        try:
            result = resolve_leaf(leaf)
        except CatalogError as e:
            failed.append(f"{leaf}: {e.message}")
            continue
        for comp in result.components:
            if comp.repository and comp.version:
                key = pin_key(comp.name, comp.version, comp.repository, comp.chart)
                usage[key].add(leaf)
    return {k: tuple(sorted(v)) for k, v in usage.items()}, tuple(failed)


def with_recipes(pins: Iterable[Pin], usage: Mapping[PinKey, tuple[str, ...]]) -> tuple[Pin, ...]:
    return tuple(
        Pin(p.component, p.repository, p.chart, p.version, p.locations, usage.get(p.key, ()))
        for p in pins
    )


def catalog_pins(
    catalog: Catalog, resolve_leaf: Callable[[str], RecipeResult]
) -> tuple[tuple[Pin, ...], tuple[str, ...]]:
    """Every pin with the leaf recipes that deploy it, and the leaves that did not resolve."""
    usage, failed = recipe_usage(catalog.leaves(), resolve_leaf)
    return with_recipes(collect_pins(catalog), usage), failed
