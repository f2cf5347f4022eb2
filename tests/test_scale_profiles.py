"""The scale profiles and shared checks as data: schemas, owned values, coverage, documentation."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from generator.catalog import schemas
from generator.catalog.load import load_catalog
from generator.catalog.resolve import get_path, resolve
from generator.core.records import Catalog, Criteria
from generator.scale.checkexpr import compile_expr
from generator.scale.preflight import (
    NON_OWNED_AREAS,
    OPERATORS,
    Owner,
    checkset_from,
    constraint_check,
    measurement_paths,
    profile_checks,
    scale_diagnostics,
)
from generator.scale.snapshot import scale_measurement_keys
from tests.conftest import CATALOG, REPO

PROFILES = CATALOG / "scale" / "profiles"
DOC = REPO / "docs" / "scale-contract.md"
SLURM_LEAF = "gb300-eks-ubuntu-training-slurm"


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    cat, diags = load_catalog(CATALOG)
    assert [d for d in diags if d.path.startswith("scale/")] == []
    return cat


def _raw(name: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((PROFILES / f"{name}.yaml").read_text())
    return data


def _validator(name: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(schemas.schema(name))


@pytest.mark.parametrize("path", sorted(PROFILES.glob("*.yaml")), ids=lambda p: p.stem)
def test_profile_files_validate_and_are_named_after_their_file(path: Path) -> None:
    data = yaml.safe_load(path.read_text())
    assert list(_validator("scale-profile").iter_errors(data)) == []
    assert data["metadata"]["name"] == path.stem


def test_scale_data_has_no_semantic_problems(catalog: Catalog) -> None:
    assert scale_diagnostics(catalog) == ()
    assert set(catalog.profiles) == {"standard", "nvl72-2304"}


def test_the_check_definition_is_the_same_in_both_schemas() -> None:
    a = schemas.schema("scale-profile")["$defs"]["check"]
    b = schemas.schema("scale-checks")["$defs"]["check"]
    assert a == b
    assert set(a["properties"]["area"]["enum"]) == set(NON_OWNED_AREAS)
    assert tuple(a["properties"]["operator"]["enum"]) == OPERATORS


def test_standard_is_the_recipe_as_written(catalog: Catalog) -> None:
    p = catalog.profiles["standard"]
    assert (p.nodes_min, p.nodes_max) == (1, 36)
    assert p.owned_values == () and p.prerequisites == () and p.applies_to == ()
    assert p.ladder == ("lane-36",)


def test_large_profile_band_criteria_and_ladder(catalog: Catalog) -> None:
    p = catalog.profiles["nvl72-2304"]
    assert (p.nodes_min, p.nodes_max) == (36, 2304)
    assert set(p.applies_to) == {
        Criteria(service="eks", accelerator="gb300"),
        Criteria(service="eks", accelerator="gb200"),
    }
    sizes = [int(lane.removeprefix("lane-")) for lane in p.ladder]
    assert sizes == sorted(sizes) and sizes[-1] == p.nodes_max
    assert all(s % 18 == 0 for s in sizes)  # whole NVL72 racks


def test_ladders_name_lanes_that_exist(catalog: Catalog) -> None:
    lanes_path = CATALOG / "scale" / "lanes.yaml"
    if not lanes_path.exists():
        pytest.skip("catalog/scale/lanes.yaml is not written yet")
    text = lanes_path.read_text()
    lanes = set(re.findall(r"^\s*-\s*name:\s*(lane-[0-9]+)\s*$", text, re.M))
    for p in catalog.profiles.values():
        assert set(p.ladder) <= lanes, p.name


def test_every_owned_value_is_proposed_with_a_rationale_and_a_registry_component(
    catalog: Catalog,
) -> None:
    p = catalog.profiles["nvl72-2304"]
    assert p.owned_values
    for ov in p.owned_values:
        assert ov.status == "proposed", ov
        assert len(ov.rationale.split()) >= 10, ov
        assert ov.component in catalog.registry.components, ov


# The settings the issue lists for the large profile, as (component, path).
REQUIRED = {
    ("gpu-operator", "daemonsets.rollingUpdate.maxUnavailable"),
    ("gpu-operator", "driver.upgradePolicy.maxParallelUpgrades"),
    ("gpu-operator", "driver.upgradePolicy.maxUnavailable"),
    ("gpu-operator", "dcgmExporter.serviceMonitor.interval"),
    ("nfd", "worker.updateStrategy.rollingUpdate.maxUnavailable"),
    ("nfd", "master.config.nfdApiParallelism"),
    ("nodewright-operator", "controllerManager.manager.resources.requests.cpu"),
    ("nodewright-operator", "controllerManager.manager.resources.requests.memory"),
    ("nodewright-operator", "tuning.interruptionBudget.count"),
    ("nvsentinel", "platformConnector.maxUnavailable"),
    ("nvsentinel", "faultQuarantine.circuitBreaker.enabled"),
    ("nvidia-dra-driver-gpu", "kubeletPlugin.priorityClassName"),
    ("nvidia-dra-driver-gpu", "controller.priorityClassName"),
    ("nvidia-dra-driver-gpu", "controller.apiClient.qps"),
    ("nvidia-dra-driver-gpu", "controller.apiClient.burst"),
    ("kube-prometheus-stack", "prometheus.prometheusSpec.resources.requests.memory"),
    ("kube-prometheus-stack", "prometheus.prometheusSpec.retention"),
    ("kube-prometheus-stack", "prometheus.prometheusSpec.shards"),
    (
        "kube-prometheus-stack",
        "prometheus.prometheusSpec.storageSpec.volumeClaimTemplate.spec.resources.requests.storage",
    ),
    ("kube-prometheus-stack", "kube-state-metrics.autosharding.enabled"),
    ("slinky-slurm", "nodesets.slinky.scalingMode"),
    ("slinky-slurm", "controller.extraConfMap.TreeWidth"),
    ("slinky-slurm", "controller.extraConfMap.SlurmdTimeout"),
}


def test_large_profile_owns_every_setting_the_issue_lists(catalog: Catalog) -> None:
    owned = {
        (ov.component, ov.path): ov.value for ov in catalog.profiles["nvl72-2304"].owned_values
    }
    assert set(owned) >= REQUIRED
    mu = owned[("gpu-operator", "daemonsets.rollingUpdate.maxUnavailable")]
    assert isinstance(mu, str) and mu.endswith("%")  # a percentage, not a node count
    rack = 18
    assert owned[("gpu-operator", "driver.upgradePolicy.maxParallelUpgrades")] == rack
    assert owned[("gpu-operator", "driver.upgradePolicy.maxUnavailable")] == rack
    assert owned[("nodewright-operator", "tuning.interruptionBudget.count")] == rack
    assert owned[("slinky-slurm", "nodesets.slinky.scalingMode")] == "DaemonSet"
    # a value that must equal the node count cannot be owned (it would be right at one size of
    # the band only); the nodeset follows the nodes through its scaling mode instead
    assert ("slinky-slurm", "nodesets.slinky.replicas") not in owned


def _values_read_by_checks(catalog: Catalog) -> set[tuple[str, str]]:
    cs = checkset_from(catalog.documents["scale/checks.yaml"])
    read: set[tuple[str, str]] = set()
    for c in cs.checks:
        for text in (c.observed, c.expected, c.when):
            if text is None:
                continue
            for n in ast.walk(compile_expr(text)):
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "v":
                    comp, path = n.args[0], n.args[1]
                    assert isinstance(comp, ast.Constant) and isinstance(path, ast.Constant)
                    read.add((str(comp.value), str(path.value)))
    return read


def test_every_owned_value_is_examined_by_a_preflight_check(catalog: Catalog) -> None:
    read = _values_read_by_checks(catalog)
    for p in catalog.profiles.values():
        unchecked = {(ov.component, ov.path) for ov in p.owned_values} - read
        assert unchecked == set(), f"{p.name}: owned values no check reads: {sorted(unchecked)}"


def test_owned_values_land_in_the_resolved_recipe(catalog: Catalog) -> None:
    result = resolve(catalog, SLURM_LEAF, profile="nvl72-2304", nodes=2304)
    for ov in catalog.profiles["nvl72-2304"].owned_values:
        comp = result.component(ov.component)
        assert comp is not None, ov.component
        assert get_path(comp.values, ov.path) == (True, ov.value), ov


def test_every_measurement_the_checks_read_is_documented(catalog: Catalog) -> None:
    cs = checkset_from(catalog.documents["scale/checks.yaml"])
    checks = list(cs.checks)
    for p in catalog.profiles.values():
        checks.extend(profile_checks(p, cs))
    documented = set(scale_measurement_keys())
    pattern = re.compile(r"^K8s\.(daemonset|nodeset)\.[a-z0-9-]+/[a-z0-9-]+\.(desired|ready)$")
    undocumented = [
        p for p in measurement_paths(checks) if p not in documented and not pattern.match(p)
    ]
    assert undocumented == []


def test_at_least_twenty_checks_with_both_owners(catalog: Catalog) -> None:
    cs = checkset_from(catalog.documents["scale/checks.yaml"])
    assert len(cs.checks) >= 20
    assert {c.owner for c in cs.checks} == {Owner.CATALOG, Owner.INFRASTRUCTURE}


# ---------------------------------------------------------------------------------------------
# negative schema cases


def _mutated(mutate: Any) -> list[str]:
    data = json.loads(json.dumps(_raw("nvl72-2304")))
    mutate(data)
    return [e.message for e in _validator("scale-profile").iter_errors(data)]


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d["metadata"].update(version="1.0"),
        lambda d: d["spec"]["ownedValues"]["gpu-operator"][
            "driver.upgradePolicy.maxUnavailable"
        ].pop("rationale"),
        lambda d: d["spec"]["ownedValues"]["gpu-operator"][
            "driver.upgradePolicy.maxUnavailable"
        ].update(status="approved"),
        lambda d: d["spec"]["prerequisites"][0].pop("area"),
        lambda d: d["spec"]["prerequisites"][0].update(owner="someone"),
        lambda d: d["spec"]["prerequisites"][0].update(expected="1"),  # value and expected both
        lambda d: d["spec"].update(ladder=["lane-x"]),
        lambda d: d["spec"]["appliesTo"].append({"colour": "blue"}),
        lambda d: d["spec"].pop("nodes"),
    ],
)
def test_profile_schema_rejects(mutate: Any) -> None:
    assert _mutated(mutate) != []


# ---------------------------------------------------------------------------------------------
# the documentation page


def _doc() -> str:
    return DOC.read_text(encoding="utf-8")


def test_doc_lists_exactly_the_non_owned_areas_of_the_code() -> None:
    section = (
        _doc().split("<!-- non-owned-areas: start -->")[1].split("<!-- non-owned-areas: end -->")[0]
    )
    listed = dict(re.findall(r"^- \*\*(.+?)\*\* \(`([a-z-]+)`\)", section, re.M))
    assert {tag: title for title, tag in listed.items()} == dict(NON_OWNED_AREAS)


def test_owner_tags_in_the_data_are_the_documented_areas(catalog: Catalog) -> None:
    cs = checkset_from(catalog.documents["scale/checks.yaml"])
    checks = list(cs.checks)
    for p in catalog.profiles.values():
        checks.extend(profile_checks(p, cs))
    for overlay in catalog.overlays.values():
        checks.extend(constraint_check(c) for c in overlay.constraints)
    infra_areas = {c.area for c in checks if c.owner is Owner.INFRASTRUCTURE}
    assert None not in infra_areas
    assert infra_areas == set(NON_OWNED_AREAS)  # every area is checked, no other area exists
    assert {c.area for c in checks if c.owner is Owner.CATALOG} == {None}


def test_doc_table_lists_every_owned_value_of_the_large_profile(catalog: Catalog) -> None:
    rows = re.findall(r"^\| ([a-z0-9-]+) \| `([^`:]+): ([^`]+)` \|", _doc(), re.M)
    documented = {(c, p): v for c, p, v in rows}
    owned = {
        (ov.component, ov.path): ov.value for ov in catalog.profiles["nvl72-2304"].owned_values
    }
    assert set(documented) == set(owned)
    for key, value in owned.items():
        shown = "true" if value is True else str(value)
        assert documented[key] == shown, key


def test_doc_covers_precedence_selection_and_qualification() -> None:
    text = _doc()
    for heading in (
        "## Scale profiles",
        "## Selection: one profile, chosen by name",
        "## Precedence",
        "## The ownership boundary",
        "### What the catalog does not own",
        "## Preflight",
        "## Qualifying a profile",
    ):
        assert heading in text
    assert "**Why node count never selects.**" in text
    order = [text.index(s) for s in ("the `base` overlay", "overlays, root to leaf", "its mixins",
                                       "owned values", "user overrides")]  # fmt: skip
    assert order == sorted(order)


# ---------------------------------------------------------------------------------------------
# scale_diagnostics on broken data


def test_scale_diagnostics_finds_unknown_components_duplicate_ids_and_empty_bands(
    catalog: Catalog,
) -> None:
    from dataclasses import replace

    from generator.core.records import OwnedValue

    big = catalog.profiles["nvl72-2304"]
    broken = replace(
        big,
        nodes_min=3000,
        owned_values=(*big.owned_values, OwnedValue("no-such-component", "a.b", 1, "r" * 30)),
        prerequisites=(*big.prerequisites, {**big.prerequisites[0], "id": "coredns-replicas"}),
    )
    cat = replace(catalog, profiles={**catalog.profiles, "nvl72-2304": broken})
    rules = sorted(d.rule for d in scale_diagnostics(cat))
    assert rules == ["scale.band-empty", "scale.check-duplicate", "scale.owned-unknown-component"]
    assert all(d.path == "scale/profiles/nvl72-2304.yaml" for d in scale_diagnostics(cat))


def test_scale_diagnostics_requires_the_checks_file(catalog: Catalog) -> None:
    from dataclasses import replace

    docs = {k: v for k, v in catalog.documents.items() if k != "scale/checks.yaml"}
    (d,) = scale_diagnostics(replace(catalog, documents=docs))
    assert d.rule == "scale.checks-missing"


def test_catalog_checks_lists_shared_then_profile_checks(catalog: Catalog) -> None:
    from generator.scale.preflight import catalog_checks

    rows = catalog_checks(catalog)
    shared = [c.id for p, c in rows if p is None]
    assert shared == sorted(shared) and "coredns-replicas" in shared
    assert [c.id for p, c in rows if p == "nvl72-2304"] == sorted(
        str(x["id"]) for x in catalog.profiles["nvl72-2304"].prerequisites
    )
    assert [p for p, _ in rows] == sorted(
        [p for p, _ in rows], key=lambda p: (p is not None, p or "")
    )
