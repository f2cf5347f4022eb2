"""A dependency cycle travels as a typed error (`DependencyCycleError`) carrying the cycle, from
the ordering through `resolve` and the upstream RecipeResult reader, located as before."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from generator.catalog.aicr_format import recipe_result_from
from generator.catalog.load import load_catalog
from generator.catalog.resolve import deployment_order, resolve
from generator.core.errors import (
    CatalogError,
    DependencyCycleError,
    LoadError,
    ResolveError,
)
from generator.core.records import Document

CASES = Path(__file__).resolve().parent / "cases"
SLURM = "gb300-eks-ubuntu-training-slurm"
H100 = "h100-eks-ubuntu-training"


def test_deployment_order_raises_the_cycle_typed() -> None:
    with pytest.raises(DependencyCycleError) as info:
        deployment_order({"c": ["a"], "b": ["c"], "a": ["b"], "d": ["a"]})
    err = info.value
    assert err.cycle == ("a", "b", "c", "a")  # closed, smallest name first
    assert err.cycle_text() == "a → b → c → a"
    assert err.message == "dependency cycle: a → b → c → a"
    assert isinstance(err, ResolveError) and isinstance(err, CatalogError)
    assert err.exit_code == 1


def test_self_dependency_is_a_cycle_of_one() -> None:
    with pytest.raises(DependencyCycleError) as info:
        deployment_order({"x": ["x"], "y": []})
    assert info.value.cycle == ("x", "x")


@pytest.fixture
def cyclic_catalog(tmp_path: Path) -> Path:
    root = tmp_path / "catalog"
    shutil.copytree(CASES / "minimal", root)
    case = CASES / "invalid" / "dependency-cycle-3" / "catalog"
    shutil.copytree(case, root, dirs_exist_ok=True)
    return root


def test_resolve_raises_the_cycle_located_at_its_first_edge(cyclic_catalog: Path) -> None:
    catalog, _ = load_catalog(cyclic_catalog)
    with pytest.raises(DependencyCycleError) as info:
        resolve(catalog, SLURM)
    err = info.value
    assert err.cycle == (
        "cert-manager",
        "network-operator",
        "slinky-slurm-operator",
        "cert-manager",
    )
    assert err.message == (
        f"recipe '{SLURM}': dependency cycle: "
        "cert-manager → network-operator → slinky-slurm-operator → cert-manager"
    )
    (diag,) = err.diagnostics
    assert (diag.path, diag.rule) == ("overlays/eks-training.yaml", "dependency.cycle")
    assert diag.json_path.endswith(".dependencyRefs[0]") and diag.line > 0
    assert diag.message == err.message.split(": ", 1)[1]
    # the leaf without the mixin that closes the cycle still resolves
    assert resolve(catalog, H100).name == H100


def _recipe_result(refs: list[dict[str, object]]) -> Document:
    data = {
        "kind": "RecipeResult",
        "apiVersion": "aicr.nvidia.com/v1alpha1",
        "metadata": {"appliedOverlays": ["base"]},
        "componentRefs": refs,
    }
    return Document(rel="recipe.yaml", data=data, lines={"$": (1, 1)}, sha256="")


def test_recipe_result_reader_reports_the_cycle_as_a_located_load_error() -> None:
    doc = _recipe_result(
        [
            {"name": "b", "dependencyRefs": ["a"]},
            {"name": "a", "dependencyRefs": ["b"]},
            {"name": "c"},
        ]
    )
    with pytest.raises(LoadError) as info:
        recipe_result_from(doc)
    (diag,) = info.value.diagnostics
    assert (diag.json_path, diag.rule) == ("$.componentRefs", "dependency.cycle")
    assert diag.message == "dependency cycle: a → b → a"
    assert isinstance(info.value.__cause__, DependencyCycleError)
    # disabling one member breaks the cycle, as upstream's bundler leaves it out
    ok = _recipe_result(
        [
            {"name": "b", "dependencyRefs": ["a"], "overrides": {"enabled": False}},
            {"name": "a", "dependencyRefs": ["b"]},
        ]
    )
    result, _ = recipe_result_from(ok)
    assert [c.name for c in result.components] == ["a"] and result.disabled == ("b",)
