"""The recomputation (`generator.evidence.judge`) agrees with `qualify` on every run qualify
judges, and finds every conclusion a signer changed afterwards."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generator.catalog.lanes import Lanes
from generator.catalog.load import load_catalog
from generator.catalog.resolve import resolve
from generator.core.records import RecipeResult
from generator.evidence.judge import judge
from generator.evidence.model import IN_TOTO_PAYLOAD_TYPE
from generator.evidence.statement import build_statement, parse_statement
from generator.scale.qualify import (
    CTRF_STATUSES,
    BundleBinding,
    PreflightBinding,
    RawCheck,
    RawKpi,
    RunResults,
    lanes_of,
    qualify,
)
from tests.conftest import CATALOG

RECIPE, PROFILE = "gb300-eks-ubuntu-training-slurm", "nvl72-2304"


@pytest.fixture(scope="module")
def world() -> tuple[RecipeResult, Lanes]:
    catalog, _ = load_catalog(CATALOG)
    return resolve(catalog, RECIPE, profile=PROFILE), lanes_of(catalog.documents)


def _pins(recipe: RecipeResult) -> dict[str, str | None]:
    return {c.name: c.version for c in recipe.components}


@st.composite
def _runs(draw: st.DrawFn, recipe: RecipeResult, lanes: Lanes) -> tuple[str, RunResults]:
    lane = lanes.lane(draw(st.sampled_from(["lane-36", "lane-144", "lane-2304"])))
    assert lane is not None
    good = draw(st.booleans())  # half the runs start from a passing run, rarely changed

    def pick(honest: Any, *others: Any) -> Any:
        if good and draw(st.integers(0, 40)):
            return honest
        return draw(st.sampled_from([honest, honest, *others]))

    statuses = [s for s in CTRF_STATUSES if s != "passed"] + ["weird"]
    phases: dict[str, list[RawCheck]] = {p: [] for p in lane.phases}
    for s in lanes.required_scenarios(lane, recipe.criteria):
        if not pick(True, False):
            continue  # not reported
        status = pick("passed", *statuses)
        phases[s.phase].append(RawCheck(s.id, status, pick(lane.nodes, 0, 1, None)))
    for _ in range(pick(0, 1, 2)):
        phases[draw(st.sampled_from(lane.phases))].append(
            RawCheck(draw(st.sampled_from(["extra-a", "extra-b"])), pick("passed", *statuses), 3)
        )
    if not pick(True, False):
        phases.pop(draw(st.sampled_from(lane.phases)))
    kpis = []
    for spec, threshold in lanes.required_kpis(lane, recipe.criteria):
        for _ in range(pick(1, 0, 2)):
            value = threshold.value + pick(0.0, 1.0, -1.0, 0.5, 1e-7)
            need = lane.required_targets(spec.min_targets)
            targets = pick(need, need - 1, None, 10**7, -3)
            unit = pick(spec.unit, None, "furlongs")
            if spec.measure == "ratio":
                denominator = pick(1.0, 3.0, 0.0)
                kpis.append(RawKpi(spec.id, None, value * denominator, denominator, unit, targets))
            else:
                kpis.append(RawKpi(spec.id, value, None, None, unit, targets))
    nodes = pick(lane.nodes, lane.nodes - 1, lane.nodes * 2, None)
    per_node = pick(lanes.gpus_per_node, 2, None)
    measurements: dict[str, Any] = {}
    if nodes is not None:
        measurements[lanes.observe_nodes] = nodes
    if per_node is not None:
        measurements[lanes.observe_gpus_per_node] = per_node
    versions = {c.name: c.version for c in recipe.components if c.version}
    if versions and not pick(True, False):
        name = draw(st.sampled_from(sorted(versions)))
        if draw(st.booleans()):
            versions[name] = "v0.0.0-other"
        else:
            del versions[name]
    snapshot = "sha256:" + "5" * 64
    exit_code = pick(0, 1, 3, 4)
    preflight = pick(
        PreflightBinding(
            "sha256:" + "f" * 64,
            recipe.name,
            recipe.digest,
            recipe.scale_profile,
            recipe.scale_profile_version,
            exit_code,
            snapshot,
        ),
        None,
    )
    run = RunResults(
        phases={p: tuple(cs) for p, cs in phases.items()},
        kpis=tuple(kpis),
        measurements=measurements,
        bundle_digest=BUNDLE.digest,
        component_versions=versions,
        snapshot_digest=snapshot,
        preflight=preflight,
    )
    return lane.name, run


BUNDLE = BundleBinding("sha256:" + "c" * 64)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_the_recomputation_agrees_with_qualify(
    world: tuple[RecipeResult, Lanes], data: st.DataObject
) -> None:
    recipe, lanes = world
    lane, run = data.draw(_runs(recipe, lanes))
    q = qualify(
        lanes, lane, recipe, (lane,), run, bundle=BUNDLE, attested_at="2026-11-30T10:00:00Z"
    )
    statement = parse_statement(IN_TOTO_PAYLOAD_TYPE, q.statement)
    j = judge(statement, lanes, recipe.criteria, _pins(recipe))
    assert j is not None
    assert j.mismatches == (), (q.reasons, j.reasons)
    assert j.verdict == q.verdict, (q.reasons, j.reasons)
    assert bool(j.reasons) == bool(q.reasons)
    # and every change to what the signer concluded is found
    flipped = dict(q.predicate)
    flipped["verdict"] = "pass" if q.verdict == "fail" else "fail"
    flipped["reasons"] = [] if flipped["verdict"] == "pass" else ["changed"]
    changed = parse_statement(IN_TOTO_PAYLOAD_TYPE, build_statement(flipped))
    j2 = judge(changed, lanes, recipe.criteria, _pins(recipe))
    assert j2 is not None and j2.mismatches and j2.mismatches[0].startswith("signed verdict")
    if q.predicate["kpis"]:
        kpis = [dict(k) for k in q.predicate["kpis"]]
        kpis[0]["status"] = "failed" if kpis[0]["status"] == "passed" else "passed"
        tampered = parse_statement(
            IN_TOTO_PAYLOAD_TYPE, build_statement({**q.predicate, "kpis": kpis})
        )
        j3 = judge(tampered, lanes, recipe.criteria, _pins(recipe))
        assert j3 is not None and any(
            m.startswith(f"KPI {kpis[0]['id']}: signed") for m in j3.mismatches
        )


def test_statements_judged_under_other_criteria_or_lanes_are_not_judged(
    world: tuple[RecipeResult, Lanes],
) -> None:
    recipe, lanes = world
    from tests import evidence_fixtures as fx

    pred = fx.passing_predicate(recipe, lanes, "lane-36")
    for change in (
        {"lane": {**pred["lane"], "criteriaVersion": "0.9.0"}},
        {"lane": {**pred["lane"], "name": "lane-37"}},
    ):
        st_ = parse_statement(IN_TOTO_PAYLOAD_TYPE, build_statement({**pred, **change}))
        assert judge(st_, lanes, recipe.criteria, _pins(recipe)) is None
    ok = parse_statement(IN_TOTO_PAYLOAD_TYPE, build_statement(pred))
    judged = judge(ok, lanes, recipe.criteria, _pins(recipe))
    assert judged is not None and judged.consistent and judged.verdict == "pass"
    assert json.dumps(dict(judged.kpi_status), allow_nan=False)


@pytest.mark.parametrize(
    "preflight",
    [None, {"digest": "sha256:" + "f" * 64, "exitCode": 1, "snapshotDigest": "sha256:" + "5" * 64}],
)
def test_a_signed_pass_without_a_passing_preflight_is_a_mismatch(
    world: tuple[RecipeResult, Lanes], preflight: dict[str, Any] | None
) -> None:
    """A signer who ran on a cluster whose preflight failed (or ran none) and signs "pass"
    anyway: the recomputed verdict is fail, the run is invalid, and the reason is named."""
    from tests.evidence_fixtures import passing_predicate

    recipe, lanes = world
    predicate = passing_predicate(recipe, lanes, "lane-36")
    assert predicate["verdict"] == "pass"
    claimed = parse_statement(
        IN_TOTO_PAYLOAD_TYPE, build_statement({**predicate, "preflight": preflight})
    )
    j = judge(claimed, lanes, recipe.criteria, _pins(recipe))
    assert j is not None and j.verdict == "fail" and not j.consistent
    assert j.mismatches[0].startswith("signed verdict pass, recomputed fail")
    assert "preflight" in j.mismatches[0]
