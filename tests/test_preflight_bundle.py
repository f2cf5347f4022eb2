"""One source (issue 18 item 2): every owned value of a profile reaches the values every bundle of
that profile renders, and preflight's configuration checks read those rendered values.

Helm itself is not run here (no `helm` binary in the test environment): the tests stop at the
values each bundle hands to Helm (a chart's `values.yaml`, a local manifest chart's nested values,
a Flux HelmRelease's `spec.values`) and at what the tuning templates read from them.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml

from generator.catalog.load import load_catalog
from generator.catalog.manifests import read_manifests
from generator.catalog.resolve import resolve_all
from generator.core.errors import ScaleError
from generator.render import render_bundle
from generator.render.common import BundleFile, Deployer
from generator.scale.preflight import Result, checkset_from, preflight, rendered_values
from generator.scale.snapshot import parse_snapshot
from tests.conftest import CATALOG

SNAPSHOTS = CATALOG / "scale" / "snapshots"
MANIFESTS = CATALOG / "components" / "nodewright-operator" / "manifests"


def _at(values: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        if not isinstance(values, dict) or part not in values:
            return _MISSING
        values = values[part]
    return values


_MISSING = object()


@pytest.fixture(scope="module")
def catalog() -> Any:
    cat, _ = load_catalog(CATALOG)
    return cat


def test_every_owned_value_lands_in_every_bundle_of_its_profile(catalog: Any) -> None:
    results = resolve_all(catalog)
    checked = 0
    for profile in sorted(catalog.profiles.values(), key=lambda p: p.name):
        owned = profile.owned_values
        recipes = [r for (_, p), r in sorted(results.items()) if p == profile.name]
        if owned:
            assert recipes, f"profile {profile.name} owns values but no leaf resolves with it"
        for result in recipes:
            deployed = {c.name for c in result.components}
            manifests = read_manifests(catalog, result)
            for deployer in Deployer:
                rendered = rendered_values(render_bundle(result, deployer, manifests))
                for ov in owned:
                    if ov.component not in deployed:
                        continue
                    releases = rendered.get(ov.component)
                    assert releases, (result.name, deployer, ov.component)
                    for values in releases:
                        got = _at(values, ov.path)
                        assert got == ov.value, (
                            f"{result.name} {profile.name} {deployer}: {ov.component} "
                            f"{ov.path} renders {got!r}, the profile owns {ov.value!r}"
                        )
                        checked += 1
    assert checked > 500  # the nvl72-2304 leaves x 4 deployers x ~30 owned values


def test_the_tuning_manifests_read_the_budget_from_the_values() -> None:
    """The Skyhook budget is no longer a literal: the templates read the component's values
    (`index .Values "nodewright-operator"`), so nvl72-2304's count of 18 reaches the object."""
    training = (MANIFESTS / "tuning-training.yaml").read_text()
    inference = (MANIFESTS / "tuning-inference.yaml").read_text()
    for text in (training, inference):
        assert '{{- $nw := index .Values "nodewright-operator" }}' in text
        budget = text[text.index("interruptionBudget:") :].split("podNonInterruptLabels")[0]
        budget = budget.split("packages:")[0]
        assert not re.search(r"(count|percent): *\d", budget), budget
    assert "{{- $budget := $nw.tuning.interruptionBudget }}" in training
    # printed typed (`| int`): a count or percent is an integer in the object, never a string
    assert '{{- if hasKey $budget "count" }}\n    count: {{ $budget.count | int }}' in training
    assert "percent: {{ $budget.percent | int }}" in training
    assert 'count: {{ dig "tuning" "interruptionBudget" "count" 1 $nw | int }}' in inference
    values = yaml.safe_load((MANIFESTS.parent / "values.yaml").read_text())
    assert values["tuning"]["interruptionBudget"] == {"percent": 10}


def test_preflight_reads_the_values_the_bundle_ships(catalog: Any) -> None:
    """Change a value in the rendered bundle only: the finding follows the bundle."""
    from generator.catalog.resolve import resolve, select_profile

    result = resolve(catalog, "gb300-eks-ubuntu-training-slurm", profile="nvl72-2304")
    profile = select_profile(catalog, "nvl72-2304", result.criteria, None)
    checks = checkset_from(catalog.documents["scale/checks.yaml"])
    name = "gb300-eks-2304-healthy.yaml"
    snap = parse_snapshot((SNAPSHOTS / name).read_bytes(), name)
    tree = dict(render_bundle(result, "helm", read_manifests(catalog, result)))
    values = {c: v[0] for c, v in rendered_values(tree).items()}
    by_id = {f.id: f for f in preflight(result, profile, checks, snap, 2304, values).findings}
    assert by_id["nodewright.interruption-budget"].result is Result.PASS
    assert by_id["nodewright.interruption-budget"].observed == 18
    # a bundle whose tuning budget is the recipe's 10% again (what 1.1.0 bundles shipped)
    path = next(p for p in tree if p.endswith("nodewright-operator/values.yaml"))
    doc = yaml.safe_load(tree[path].data)
    doc["tuning"]["interruptionBudget"] = {"percent": 10}
    tree[path] = BundleFile(yaml.safe_dump(doc).encode())
    values = {c: v[0] for c, v in rendered_values(tree).items()}
    by_id = {f.id: f for f in preflight(result, profile, checks, snap, 2304, values).findings}
    budget = by_id["nodewright.interruption-budget"]
    assert (budget.result, budget.observed) == (Result.FAIL, 231)


def test_rendered_values_refuses_values_of_another_recipe(catalog: Any) -> None:
    from generator.catalog.resolve import resolve, select_profile

    result = resolve(catalog, "gb300-eks-ubuntu-training-slurm")
    other = resolve(catalog, "gb300-eks-ubuntu-training")
    values = {c: v[0] for c, v in rendered_values(
        render_bundle(other, "helm", read_manifests(catalog, other))).items()}  # fmt: skip
    profile = select_profile(catalog, "standard", result.criteria, None)
    checks = checkset_from(catalog.documents["scale/checks.yaml"])
    name = "gb300-eks-36-healthy.yaml"
    snap = parse_snapshot((SNAPSHOTS / name).read_bytes(), name)
    with pytest.raises(ValueError, match="lack component"):
        preflight(result, profile, checks, snap, None, values)


def test_a_profile_that_does_not_apply_is_not_rendered(catalog: Any) -> None:
    from generator.catalog.resolve import resolve

    with pytest.raises(ScaleError):
        resolve(catalog, "h100-eks-ubuntu-training-slurm", profile="nvl72-2304")
