"""Resolution at catalog scale: the quick paths give exactly what the plain ones gave.

The criteria index must select what comparing the query with every overlay selects (same overlays,
same order, same errors); `set_path` keeps shared values shared as `copy.deepcopy` does. (The digest's JSON fast path:
tests/test_fast_jcs.py.)
"""

from __future__ import annotations

import copy
import itertools
from dataclasses import replace
from typing import Any

import pytest
import rfc8785

from generator.catalog import resolve as resolve_mod
from generator.catalog.load import load_catalog
from generator.catalog.resolve import (
    chain,
    check_resolves,
    matches,
    resolve,
    select,
    set_path,
)
from generator.core.errors import CatalogError
from generator.core.records import DIMENSIONS, Catalog, Criteria, Overlay
from tests.conftest import CATALOG


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    cat, diags = load_catalog(CATALOG)
    assert diags == ()
    return cat


def _select_by_scan(catalog: Catalog, query: Criteria) -> tuple[Overlay, ...]:
    """`select` as it was: the query compared with every overlay."""
    matched = [o for o in catalog.overlays.values() if matches(o.criteria, query)]
    ancestors: set[str] = set()
    for o in matched:
        ancestors |= {a.name for a in chain(catalog, o.name)[:-1]}
    leaves = sorted(
        (o for o in matched if o.name not in ancestors),
        key=lambda o: (o.criteria.specificity(), o.name),
    )
    order = [catalog.overlays["base"]] if "base" in catalog.overlays else []
    applied = {o.name for o in order}
    for leaf in leaves:
        for o in chain(catalog, leaf.name):
            if o.name not in applied:
                applied.add(o.name)
                order.append(o)
    return tuple(order)


def _queries(catalog: Catalog) -> list[Criteria]:
    """Every generalisation of every overlay's criteria, plus values no overlay names."""
    out = []
    for ov in catalog.overlays.values():
        values = [ov.criteria.get(d) for d in DIMENSIONS]
        for mask in itertools.product((False, True), repeat=len(DIMENSIONS)):
            out.append(
                Criteria(*(v if keep else None for v, keep in zip(values, mask, strict=True)))
            )
    out.append(Criteria(service="nosuch", accelerator="gb300"))
    out.append(Criteria(os="ubuntu"))
    return out


def test_the_index_selects_what_a_scan_selects(catalog: Catalog) -> None:
    queries = _queries(catalog)
    assert len(queries) > 500
    for q in queries:
        assert select(catalog, q) == _select_by_scan(catalog, q), q


def test_the_index_keeps_catalog_order_for_overlays_with_the_same_criteria(
    catalog: Catalog,
) -> None:
    leaf = "gb300-eks-ubuntu-training-slurm"
    twin = replace(catalog.overlays[leaf], name="aaa-twin")  # same criteria, sorts first
    overlays = {**catalog.overlays, "aaa-twin": twin}
    cat = replace(catalog, overlays=overlays)
    q = catalog.overlays[leaf].criteria
    assert select(cat, q) == _select_by_scan(cat, q)
    assert "aaa-twin" in {o.name for o in select(cat, q)}
    r = resolve(cat, leaf)
    assert r.applied_overlays == tuple(o.name for o in _select_by_scan(cat, q))
    assert r.applied_overlays.index("aaa-twin") < r.applied_overlays.index(leaf)


def test_the_index_follows_the_catalog_it_is_given(catalog: Catalog) -> None:
    leaf = "gb300-eks-ubuntu-training-slurm"
    q = catalog.overlays[leaf].criteria
    assert leaf in {o.name for o in select(catalog, q)}
    without = replace(catalog, overlays={n: o for n, o in catalog.overlays.items() if n != leaf})
    assert leaf not in {o.name for o in select(without, q)}
    # a mapping changed in place (records are read-only, but the index must not go stale)
    overlays = dict(catalog.overlays)
    cat = replace(catalog, overlays=overlays)
    assert leaf in {o.name for o in select(cat, q)}
    del overlays[leaf]
    assert select(cat, q) == _select_by_scan(cat, q)
    assert leaf not in {o.name for o in select(cat, q)}
    # and the first catalog is still answered from its own overlays
    assert select(catalog, q) == _select_by_scan(catalog, q)


def test_the_index_cache_stays_small(catalog: Catalog) -> None:
    for _ in range(10):
        select(replace(catalog, overlays=dict(catalog.overlays)), Criteria(service="eks"))
    assert len(resolve_mod._INDEXES) <= resolve_mod._INDEXES_KEPT


# ---------------------------------------------------------------- copies


def test_set_path_keeps_shared_objects_shared() -> None:
    shared = {"x": [1, 2]}
    values = {"a": shared, "b": shared, "c": [shared, {"d": "e"}]}
    # set_path on shared values changes what it changed before (both places, not the input)
    before = _set_path_by_deepcopy(values, "a.x", [3])
    after = set_path(values, "a.x", [3])
    assert after == before and after["b"]["x"] == [3]
    assert values["a"]["x"] == [1, 2]


def _set_path_by_deepcopy(values: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """`set_path` as it was, for comparison."""
    out = copy.deepcopy(values)
    cur = out
    parts = path.split(".")
    for part in parts[:-1]:
        nxt = cur.get(part)
        if not isinstance(nxt, dict):
            nxt = {}
            cur[part] = nxt
        cur = nxt
    cur[parts[-1]] = copy.deepcopy(value)
    return out


def _containers(obj: Any) -> set[int]:
    out: set[int] = set()
    stack = [obj]
    while stack:
        o = stack.pop()
        if isinstance(o, dict):
            out.add(id(o))
            stack.extend(o.values())
        elif isinstance(o, list):
            out.add(id(o))
            stack.extend(o)
    return out


def test_resolution_never_shares_values_with_the_catalog(catalog: Catalog) -> None:
    catalog_ids = set().union(*(_containers(d.data) for d in catalog.files.values()))
    for profile in ("standard", "nvl72-2304"):
        r = resolve(catalog, "gb300-eks-ubuntu-training-slurm", profile=profile)
        ids = set().union(*(_containers(c.values) for c in r.components))
        assert ids and not ids & catalog_ids


def test_check_resolves_raises_what_resolve_raises(catalog: Catalog) -> None:
    leaf = "gb300-eks-ubuntu-training-slurm"
    assert check_resolves(catalog, leaf) == replace(resolve(catalog, leaf), digest="")
    for profile in ("standard", "nvl72-2304", "no-such-profile"):
        assert _outcome_of(lambda p=profile: check_resolves(catalog, leaf, profile=p)) == (
            _outcome_of(lambda p=profile: resolve(catalog, leaf, profile=p))
        )
    # a values file whose data has no canonical form: both raise rfc8785's error
    r = resolve(catalog, leaf)
    rel = next(c.values_files[0] for c in r.components if c.values_files)
    doc = catalog.files[rel]
    broken = replace(doc, data={**doc.data, "huge": 2**60})
    cat = replace(catalog, files={**catalog.files, rel: broken})
    with pytest.raises(rfc8785.IntegerDomainError):
        resolve(cat, leaf)
    with pytest.raises(rfc8785.IntegerDomainError):
        check_resolves(cat, leaf)


def _outcome_of(f: Any, result: Any = None) -> Any:
    try:
        f()
    except CatalogError as e:
        return (type(e), e.message, e.diagnostics)
    return result
