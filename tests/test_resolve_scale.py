"""Resolution at catalog scale: the quick paths give exactly what the plain ones gave.

The criteria index must select what comparing the query with every overlay selects (same overlays,
same order, same errors); the C `json` digest path must write RFC 8785 bytes or leave the object
to `rfc8785`; the quicker deep copy must copy as `copy.deepcopy` does (shared objects included).
"""

from __future__ import annotations

import copy
import itertools
import math
from dataclasses import replace
from typing import Any

import pytest
import rfc8785
from hypothesis import given, settings
from hypothesis import strategies as st

from generator.catalog import resolve as resolve_mod
from generator.catalog.load import load_catalog
from generator.catalog.resolve import (
    _deepcopy,
    chain,
    check_resolves,
    matches,
    resolve,
    select,
    set_path,
)
from generator.core.canonical import canonical_json, check_canonical
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


# ---------------------------------------------------------------- canonical JSON

_keys = st.one_of(
    st.text(max_size=4),
    st.sampled_from(["a", "B", "é", "\U0001f600", "\uffff", "\ue000", "\U00010000x", "ab"]),
)
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**60), max_value=2**60),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1.0, 0.5, 1e21, 1e-7, 123456789.0, -0.0, 5e-324]),
    st.text(max_size=6),
    st.sampled_from(["\x00\x1f\x7f", '"\\/', "\u2028\u2029", "\ud800", "é€😀"]),
)


def _containers_of(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.lists(inner, max_size=4),
        st.tuples(inner, inner),
        st.dictionaries(_keys, inner, max_size=4),
    )


_json = st.recursive(_scalars, _containers_of, max_leaves=20)


def _outcome(f: Any, obj: Any) -> Any:
    try:
        return f(obj)
    except (ValueError, UnicodeEncodeError) as e:
        return type(e)


@settings(max_examples=400, deadline=None)
@given(_json)
def test_canonical_json_is_rfc8785(obj: Any) -> None:
    assert _outcome(canonical_json, obj) == _outcome(rfc8785.dumps, obj)


def test_canonical_json_leaves_what_json_writes_differently_to_rfc8785() -> None:
    cases: list[Any] = [
        {"x": 1.0},  # json: 1.0, JCS: 1
        {"x": 1e-7},
        {"\U0001f600": 1, "\uffff": 2},  # UTF-16 order differs from code point order
        {"x": [2**53]},
        {1: "non-string key"},
        {"x": math.inf},
        {"x": "\ud800"},
        {"x": b"bytes"},
    ]
    for obj in cases:
        assert _outcome(canonical_json, obj) == _outcome(rfc8785.dumps, obj), obj
    assert canonical_json({"\U0001f600": 1, "\uffff": 2}) == rfc8785.dumps(
        {"\U0001f600": 1, "\uffff": 2}
    )
    itself: list[Any] = []
    itself.append(itself)
    with pytest.raises(RecursionError):
        canonical_json(itself)


# ---------------------------------------------------------------- copies


@settings(max_examples=200, deadline=None)
@given(_json)
def test_quick_deepcopy_copies_as_deepcopy_does(obj: Any) -> None:
    got, want = _deepcopy(obj), copy.deepcopy(obj)
    assert repr(got) == repr(want)
    if isinstance(obj, (dict, list)) and obj:
        assert got is not obj


def test_quick_deepcopy_keeps_shared_objects_shared() -> None:
    shared = {"x": [1, 2]}
    values = {"a": shared, "b": shared, "c": [shared, {"d": "e"}]}
    out = _deepcopy(values)
    assert out == values and out["a"] is not shared
    assert out["a"] is out["b"] is out["c"][0]  # as copy.deepcopy keeps them
    # so set_path on shared values changes what it changed before (both places, not the input)
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


@settings(max_examples=300, deadline=None)
@given(_json)
def test_check_canonical_raises_what_canonical_json_raises(obj: Any) -> None:
    want = _outcome(canonical_json, obj)
    got = _outcome(check_canonical, obj)
    assert got == (want if isinstance(want, type) else None)


def test_check_resolves_raises_what_resolve_raises(catalog: Catalog) -> None:
    leaf = "gb300-eks-ubuntu-training-slurm"
    assert check_resolves(catalog, leaf) is None
    for profile in ("standard", "nvl72-2304", "no-such-profile"):
        assert _outcome_of(lambda p=profile: check_resolves(catalog, leaf, profile=p)) == (
            _outcome_of(lambda p=profile: resolve(catalog, leaf, profile=p), result=None)
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
