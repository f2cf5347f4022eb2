"""Resolution: upstream query semantics, merge laws, deployment order, digests, scale selection."""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from generator.catalog.load import load_catalog
from generator.catalog.resolve import (
    deep_merge,
    deployment_order,
    matches,
    recipe_document,
    resolve,
)
from generator.core.errors import ResolveError, ScaleError
from generator.core.records import Catalog, Criteria, Override
from tests.conftest import CATALOG

LEAF = "gb300-eks-ubuntu-training-slurm"
CHAIN = ("base", "eks", "eks-training", "gb300-eks-training", "gb300-eks-ubuntu-training", LEAF)
QUERY = Criteria(
    service="eks", accelerator="gb300", os="ubuntu", intent="training", platform="slurm"
)


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    cat, diags = load_catalog(CATALOG)
    assert diags == ()
    return cat


def test_query_resolves_exactly_the_slurm_leaf_with_its_chain(catalog: Catalog) -> None:
    r = resolve(catalog, QUERY)
    assert r.name == LEAF
    assert r.applied_overlays == CHAIN
    assert r.scale_profile == "standard"
    assert r.digest.startswith("sha256:") and len(r.digest) == 71


def test_resolving_by_name_equals_resolving_by_criteria(catalog: Catalog) -> None:
    assert resolve(catalog, LEAF) == resolve(catalog, QUERY)


def test_wildcards_are_asymmetric() -> None:
    recipe_any = Criteria(service="eks")
    assert matches(recipe_any, QUERY)  # the recipe's wildcard matches any query value
    assert not matches(
        QUERY, Criteria(service="eks")
    )  # the query's wildcard matches only wildcards


def test_unhonoured_dimension_is_answered_as_upstream_with_a_note(catalog: Catalog) -> None:
    # upstream answers with the overlays that match; the note names what no overlay states
    r = resolve(catalog, Criteria(service="eks", accelerator="gb300", platform="nim"))
    assert r.applied_overlays == ("base", "eks")
    assert len(r.notes) == 1
    assert "no overlay states accelerator=gb300, platform=nim" in r.notes[0]
    assert "complete recipes for these criteria: none" in r.notes[0]
    # a query that stops above the leaves is answered by the intermediate overlay
    r = resolve(
        catalog, Criteria(service="eks", accelerator="gb300", os="ubuntu", intent="training")
    )
    assert r.applied_overlays == CHAIN[:-1]


def test_deployment_order_respects_dependencies_and_is_alphabetical_among_peers(
    catalog: Catalog,
) -> None:
    r = resolve(catalog, LEAF)
    pos = {c.name: c.order for c in r.components}
    for c in r.components:
        for dep in c.dependency_refs:
            assert pos[dep] < pos[c.name], (dep, c.name)
            assert r.component(dep) is not None
            assert c.depth > r.component(dep).depth  # type: ignore[union-attr]
    roots = [c.name for c in r.components if c.depth == 0]
    assert roots == sorted(roots)


def test_dependency_cycle_is_named() -> None:
    with pytest.raises(ValueError, match="a → b → c → a"):
        deployment_order({"a": ["b"], "b": ["c"], "c": ["a"], "d": []})
    order, depth = deployment_order({"z": [], "a": ["z"], "m": []})
    assert order == ("m", "z", "a") and depth == {"m": 0, "z": 0, "a": 1}


def _copy_reordered(src: Path, dst: Path) -> None:
    """Copy every file, newest-name-first, so directory creation order differs from the original."""
    files = sorted((p for p in src.rglob("*") if p.is_file()), reverse=True)
    for p in files:
        target = dst / p.relative_to(src)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(p, target)


def test_digest_is_independent_of_file_order_and_location(tmp_path: Path, catalog: Catalog) -> None:
    other = tmp_path / "elsewhere" / "recipes"
    _copy_reordered(CATALOG, other)
    copy, diags = load_catalog(other)
    assert diags == ()
    for leaf in catalog.leaves():
        a, b = resolve(catalog, leaf), resolve(copy, leaf)
        assert a.digest == b.digest, leaf
        assert recipe_document(a) == recipe_document(b)


def test_values_file_change_changes_digest_of_exactly_its_users(
    tmp_path: Path, catalog: Catalog
) -> None:
    other = tmp_path / "c"
    shutil.copytree(CATALOG, other)
    target = "components/slinky-slurm/values.yaml"
    with (other / target).open("a") as fh:
        fh.write("\n# a comment changes the file bytes\nextraForTest: 1\n")
    copy, _ = load_catalog(other)
    for leaf in catalog.leaves():
        before, after = resolve(catalog, leaf), resolve(copy, leaf)
        uses = any(target in c.values_files for c in before.components)
        assert (before.digest != after.digest) == uses, leaf


def test_profile_name_and_version_change_the_digest(catalog: Catalog) -> None:
    std = resolve(catalog, LEAF)
    big = resolve(catalog, LEAF, profile="nvl72-2304")
    assert (
        big.scale_profile == "nvl72-2304"
        and big.scale_profile_version == catalog.profiles["nvl72-2304"].version
    )
    assert big.digest != std.digest
    gpu = big.component("gpu-operator")
    assert gpu is not None
    assert gpu.values["daemonsets"]["rollingUpdate"]["maxUnavailable"] == "5%"


def test_nodes_is_advisory_within_the_band(catalog: Catalog) -> None:
    a = resolve(catalog, LEAF, profile="nvl72-2304")
    for n in (37, 576, 2304):
        assert resolve(catalog, LEAF, profile="nvl72-2304", nodes=n) == a
    assert resolve(catalog, LEAF, nodes=36) == resolve(catalog, LEAF)


def test_nodes_outside_the_band_names_covering_profiles(catalog: Catalog) -> None:
    with pytest.raises(ScaleError) as e:
        resolve(catalog, LEAF, nodes=2304)
    assert e.value.message == (
        "--nodes 2304 is outside scale profile 'standard' (1–36 nodes); profiles covering 2304 nodes for "
        "these criteria: nvl72-2304 (select one with --scale-profile). --nodes never selects a profile."
    )
    with pytest.raises(ScaleError, match="no scale profile covers 5000 nodes"):
        resolve(catalog, LEAF, profile="nvl72-2304", nodes=5000)


def test_profile_that_does_not_apply_is_an_error(catalog: Catalog) -> None:
    with pytest.raises(
        ScaleError, match="scale profile 'nvl72-2304' does not apply to service=gke"
    ):
        resolve(catalog, "h100-gke-cos-training-slurm", profile="nvl72-2304")
    with pytest.raises(
        ScaleError, match="unknown scale profile 'huge'; known profiles: nvl72-2304, standard"
    ):
        resolve(catalog, LEAF, profile="huge")


def test_override_contradicting_owned_value_is_rejected_same_value_accepted(
    catalog: Catalog,
) -> None:
    path = "daemonsets.rollingUpdate.maxUnavailable"
    bad = Override("gpu-operator", path, "10%", f"gpu-operator:{path}=10%")
    with pytest.raises(ScaleError) as e:
        resolve(catalog, LEAF, profile="nvl72-2304", overrides=[bad])
    assert e.value.message.startswith(
        f"override gpu-operator:{path}=10% contradicts gpu-operator:{path}='5%', owned by scale profile "
        "'nvl72-2304'"
    )
    same = Override("gpu-operator", path, "5%", f"gpu-operator:{path}=5%")
    ok = resolve(catalog, LEAF, profile="nvl72-2304", overrides=[same])
    assert ok.overrides == (same,)
    # the same override is free under the standard profile, and it changes the digest
    free = resolve(catalog, LEAF, overrides=[bad])
    assert free.digest != resolve(catalog, LEAF).digest


def test_override_of_unknown_component_is_rejected(catalog: Catalog) -> None:
    with pytest.raises(ResolveError, match="override nope:a=1: unknown component 'nope'"):
        resolve(catalog, LEAF, overrides=[Override("nope", "a", 1, "nope:a=1")])


def test_override_through_registry_alias(catalog: Catalog) -> None:
    alias = next(iter(catalog.registry.components["gpu-operator"].value_override_keys), None)
    if alias is None:
        pytest.skip("the registry declares no valueOverrideKeys for gpu-operator")
    r = resolve(
        catalog, LEAF, overrides=[Override(alias, "test.flag", True, f"{alias}:test.flag=true")]
    )
    gpu = r.component("gpu-operator")
    assert gpu is not None and gpu.values["test"]["flag"] is True


# ---------------------------------------------------------------- merge laws (hypothesis)

keys = st.text(alphabet="abcdef", min_size=1, max_size=3)
scalars = st.one_of(
    st.integers(-5, 5), st.booleans(), st.text(alphabet="xyz", max_size=3), st.none()
)
values: st.SearchStrategy[Any] = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(keys, children, max_size=3)
    ),
    max_leaves=12,
)
mappings = st.dictionaries(keys, values, max_size=4)


@given(mappings)
def test_merge_with_empty_is_identity(m: dict[str, Any]) -> None:
    assert deep_merge(m, {}) == m
    assert deep_merge({}, m) == m


def _same_kinds(*docs: Mapping[str, Any]) -> bool:
    """No key is a mapping in one document and something else in another (at any depth)."""
    for key in {k for d in docs for k in d}:
        present = [d[key] for d in docs if key in d]
        nested = [v for v in present if isinstance(v, Mapping)]
        if nested and len(nested) != len(present):
            return False
        if nested and not _same_kinds(*nested):
            return False
    return True


@given(mappings, mappings, mappings)
def test_merge_is_associative_while_no_value_changes_kind(
    a: dict[str, Any], b: dict[str, Any], c: dict[str, Any]
) -> None:
    """Grouping does not matter unless a layer replaces a mapping by a scalar (or the
    reverse): then only the order of application holds, which is what resolution uses (each
    layer merged over the result so far)."""
    assume(_same_kinds(a, b, c))
    assert deep_merge(deep_merge(a, b), c) == deep_merge(a, deep_merge(b, c))


def test_a_scalar_between_two_mappings_makes_grouping_matter() -> None:
    a, b, c = {"a": {"a": None}}, {"a": None}, {"a": {}}
    assert deep_merge(deep_merge(a, b), c) == {"a": {}}  # b removed a's mapping, c starts anew
    assert deep_merge(a, deep_merge(b, c)) == {"a": {"a": None}}


@given(mappings, mappings)
def test_unrelated_overlays_commute(a: dict[str, Any], b: dict[str, Any]) -> None:
    b = {f"z{k}": v for k, v in b.items()}  # disjoint keys: unrelated overlays
    assert deep_merge(deep_merge({}, a), b) == deep_merge(deep_merge({}, b), a)


@given(mappings, mappings)
def test_merge_is_idempotent_and_does_not_mutate(a: dict[str, Any], b: dict[str, Any]) -> None:
    a_before, b_before = repr(a), repr(b)
    once = deep_merge(a, b)
    assert deep_merge(once, b) == once
    assert repr(a) == a_before and repr(b) == b_before


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(sorted(load_catalog(CATALOG)[0].leaves())))
def test_resolve_is_deterministic(leaf: str) -> None:
    cat1, _ = load_catalog(CATALOG)
    cat2, _ = load_catalog(CATALOG)
    assert resolve(cat1, leaf) == resolve(cat2, leaf)
