"""One recipe's bundle parts are made once for all its deployers (`render.common.recipe_parts`),
and the bundles are byte for byte those made with every part made every time
(`common.unshared()`, the reference)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generator import render
from generator.catalog.load import load_catalog
from generator.catalog.resolve import recipe_document, resolve
from generator.core.errors import RenderError
from generator.core.records import RecipeResult
from generator.fast import yamlwrite
from generator.fast.yamlwrite import YamlStyle, dump_yaml_reference
from generator.render import Deployer, common, helm, render_bundle
from tests.conftest import CATALOG
from tests.test_render import MANIFESTS, sample_result

CASES = (
    ("gb300-eks-ubuntu-training-slurm", "nvl72-2304"),
    ("h100-gke-cos-inference-dynamo", "standard"),
)

Case = tuple[RecipeResult, Mapping[str, bytes]]


def _catalog_cases() -> list[Case]:
    catalog, _ = load_catalog(CATALOG)
    out: list[Case] = [(sample_result(), MANIFESTS)]
    for recipe, profile in CASES:
        result = resolve(catalog, recipe, profile=profile)
        manifests = {
            rel: (CATALOG / rel).read_bytes()
            for c in result.components
            for rel in (*c.manifest_files, *c.pre_manifest_files)
        }
        out.append((result, manifests))
    return out


@pytest.fixture(autouse=True)
def _empty_memo() -> Iterator[None]:
    common.forget_recipe_parts()
    yield
    common.forget_recipe_parts()


def _files(tree: Any) -> list[tuple[str, bytes, int]]:
    return [(p, f.data, f.mode) for p, f in tree.items()]


def _reference(result: RecipeResult, deployer: Deployer, manifests: Mapping[str, bytes]) -> Any:
    with common.unshared():
        return _files(render_bundle(result, deployer, manifests))


_CASES = _catalog_cases()
_PAIRS = [(i, d) for i in range(len(_CASES)) for d in Deployer]
_REFERENCE = {(i, d): _reference(_CASES[i][0], d, _CASES[i][1]) for i, d in _PAIRS}


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.permutations(_PAIRS), st.integers(0, len(_PAIRS)))
def test_bundles_in_any_order_are_the_references(
    order: list[tuple[int, Deployer]], forget_at: int
) -> None:
    """Recipes and deployers interleaved (a recipe's parts are dropped when another recipe is
    rendered, and made again when it returns), the memo emptied once midway: every bundle is
    its reference, byte for byte, mode for mode."""
    common.forget_recipe_parts()
    for n, (i, deployer) in enumerate(order):
        if n == forget_at:
            common.forget_recipe_parts()
        result, manifests = _CASES[i]
        assert _files(render_bundle(result, deployer, manifests)) == _REFERENCE[(i, deployer)]


def _counting(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    calls = {"folders": 0, "values": 0, "local": 0}
    for module, name, kind in (
        (common, "folders_reference", "folders"),
        (helm, "values_file_reference", "values"),
        (common, "local_chart_files_reference", "local"),
    ):
        original = getattr(module, name)

        def counted(*args: Any, _o: Any = original, _k: str = kind) -> Any:
            calls[_k] += 1
            return _o(*args)

        monkeypatch.setattr(module, name, counted)
    return calls


def test_a_recipes_parts_are_made_once_for_all_its_deployers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    result, manifests = sample_result(), MANIFESTS
    calls = _counting(monkeypatch)
    for deployer in Deployer:
        render_bundle(result, deployer, manifests)
    # sample_result: cert and oci-op charts with values, gpu with pre and post local charts
    # plus its chart, tuning a local chart of manifests only
    assert calls == {"folders": 1, "values": 3, "local": 3}
    once = dict(calls)
    render_bundle(sample_result(), Deployer.HELM, manifests)  # equal, but another object
    assert calls["folders"] == once["folders"] + 1 and calls["values"] > once["values"]


def test_other_manifests_are_another_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    """The folder plan is a function of the manifests too: bytes changed, plan made again,
    and the bundle shows the new bytes."""
    result = sample_result()
    calls = _counting(monkeypatch)
    render_bundle(result, Deployer.HELM, dict(MANIFESTS))
    render_bundle(result, Deployer.HELMFILE, dict(MANIFESTS))  # equal dict, another object
    assert calls["folders"] == 1
    changed = {k: v + b"\n# changed\n" for k, v in MANIFESTS.items()}
    tree = render_bundle(result, Deployer.HELM, changed)
    assert calls["folders"] == 2
    assert _files(tree) == _reference(result, Deployer.HELM, changed)


def test_another_header_is_another_part() -> None:
    """A part is found again only under the same header (the header names the recipe and its
    profile): the same values under two headers are two files."""
    values = {"a": 1}
    common.recipe_parts(sample_result(), MANIFESTS)
    one = helm.values_file(values, "# one\n")
    assert helm.values_file(values, "# one\n") is one  # found again
    two = helm.values_file(values, "# two\n")
    assert one == b"# one\na: 1\n" and two == b"# two\na: 1\n"
    assert helm.values_file(values, "# one\n") == one


def test_the_memo_holds_one_recipe() -> None:
    first, second = sample_result(), replace(sample_result(), name="other-recipe")
    render_bundle(first, Deployer.HELM, MANIFESTS)
    assert common._PARTS is not None and common._PARTS.result is first
    render_bundle(second, Deployer.HELM, MANIFESTS)
    assert common._PARTS.result is second
    assert all(source is not first for source, _, _ in common._PARTS.made.values())


def test_without_a_recipe_nothing_is_kept() -> None:
    common.forget_recipe_parts()
    made = helm.values_file({"a": 1}, "# h\n")
    assert made == helm.values_file_reference({"a": 1}, "# h\n") and common._PARTS is None


def test_unshared_makes_every_part_every_time(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _counting(monkeypatch)
    result = sample_result()
    with common.unshared():
        for deployer in (Deployer.HELM, Deployer.HELMFILE):
            render_bundle(result, deployer, MANIFESTS)
        assert common._PARTS is None
    assert calls == {"folders": 2, "values": 6, "local": 6}
    render_bundle(result, Deployer.HELM, MANIFESTS)
    assert common._PARTS is not None  # sharing again after the block


def test_a_recipe_that_cannot_be_rendered_fails_for_every_deployer() -> None:
    """`check_renderable` runs once a recipe only once it passed: a failure is not kept, so
    each deployer's bundle of the recipe fails, naming its deployer."""
    r = sample_result()
    bad = replace(r, components=(replace(r.components[0], type="Kustomize"), *r.components[1:]))
    for deployer in Deployer:
        with pytest.raises(RenderError) as e:
            render_bundle(bad, deployer, MANIFESTS)
        assert [d.rule for d in e.value.diagnostics] == ["render.unsupported-type"]
        assert f"the {deployer} deployer" in e.value.diagnostics[0].message


@pytest.mark.parametrize("case", range(len(_CASES)))
def test_recipe_yaml_is_its_reference(case: int) -> None:
    """recipe.yaml with its components' values indented from their values.yaml texts is the
    plain dump of the recipe document, with the YAML memo empty and full."""
    result = _CASES[case][0]
    header = common.header_comment(result)
    want = (
        header + dump_yaml_reference(recipe_document(result), YamlStyle.BUNDLE, sort_keys=True)
    ).encode()
    assert render._recipe_file_reference(result, header) == want
    yamlwrite._MEMO.clear()
    assert render._recipe_file(result, header) == want
    assert render._recipe_file(result, header) == want


def test_bundle_info_is_its_reference() -> None:
    """bundle-info.yaml with its releases written once for a recipe's deployers is the plain
    dump, for each deployer in a row, and for other releases of the same recipe."""
    from generator.render.common import Release, bundle_info

    for result, manifests in _CASES:
        header = common.header_comment(result)
        common.recipe_parts(result, manifests)
        for deployer in Deployer:
            rendered = render._deployer_files(result, deployer, manifests, render.GitOpsTarget())
            info = bundle_info(result, deployer, rendered, {})
            want = render._bundle_info_file_reference(result, info, rendered.releases, header)
            assert render._bundle_info_file(result, info, rendered.releases, header) == want
        other = (Release("x", "y", "z", "001-x"),)
        info = bundle_info(result, Deployer.HELM, replace(rendered, releases=other), {})
        want = render._bundle_info_file_reference(result, info, other, header)
        assert render._bundle_info_file(result, info, other, header) == want
        assert b"- name: x\n  component: y\n" in want
