"""The status model: structural health, consensus, lane verdicts, scale ceiling, components."""

from __future__ import annotations

import base64
import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from random import Random

import jsonschema
import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from generator.aggregate import (
    CONFIRMED,
    CONTESTED,
    FAILING,
    PARTIAL,
    SINGLE,
    UNTESTED,
)
from generator.aggregate_tables import StatusTables as Status
from generator.aggregate_tables import rollup, status_records
from generator.aggregate_tables import status_tables as aggregate
from generator.catalog.lanes import Lanes
from generator.cli import main
from generator.commands.status import status_document
from generator.core.records import Constraint, Criteria, RecipeResult, ResolvedComponent
from generator.core.yamlio import parse_yaml
from generator.evidence.model import (
    SCALE_QUALIFICATION_V1,
    CheckResult,
    Evidence,
    FailureClass,
    Kpi,
    RejectedEvidence,
    SignerClass,
    Statement,
    VerifiedEvidence,
)
from generator.scale.qualify import parse_lanes

REPO = Path(__file__).resolve().parent.parent
LADDER = ("lane-36", "lane-72", "lane-144", "lane-288", "lane-576", "lane-1152", "lane-2304")
LADDERS = {"nvl72-2304": LADDER, "standard": ("lane-36",)}
LARGE, STANDARD = "nvl72-2304", "standard"
STATUS_SCHEMA = json.loads((REPO / "catalog/schemas/status.schema.json").read_text())
LANES: Lanes = parse_lanes(
    parse_yaml((REPO / "catalog/scale/lanes.yaml").read_bytes(), "scale/lanes.yaml")
)
SIGNERS = {
    "a": ("id-a@lab.example", "Lab A", SignerClass.FIRST_PARTY),
    "b": ("id-b@lab.example", "Lab B", SignerClass.PARTNER),
    "c": ("id-c@lab.example", "Lab C", SignerClass.COMMUNITY),
}
ISSUER = "https://issuer.example"


def _component(name: str, version: str | None) -> ResolvedComponent:
    return ResolvedComponent(
        name=name,
        type="Helm",
        repository="https://charts.example",
        chart=name,
        version=version,
        namespace=name,
        values={},
        manifest_files=(),
        pre_manifest_files=(),
        dependency_refs=(),
        order=0,
        depth=0,
        values_files=(),
    )


def recipe(
    name: str = "r1",
    profile: str = LARGE,
    gpu_operator: str | None = "v26.7.0",
    constraints: tuple[Constraint, ...] = (),
    checks: int = 2,
) -> RecipeResult:
    """A recipe whose digest follows from what it pins (a pin bump changes it)."""
    digest = "sha256:" + hashlib.sha256(f"{name}|{profile}|{gpu_operator}".encode()).hexdigest()
    return RecipeResult(
        name=name,
        criteria=Criteria("eks", "gb300", "ubuntu", "training", "kubeflow"),
        applied_overlays=("base", name),
        mixins=(),
        constraints=constraints,
        components=(_component("gpu-operator", gpu_operator), _component("nfd", "0.19.0")),
        validation={"deployment": {"checks": [f"c{i}" for i in range(checks)]}},
        scale_profile=profile,
        scale_profile_version="1.0.0",
        overrides=(),
        digest=digest,
    )


_COUNTER = iter(range(10**9))


def _kpi_value(operator: str, threshold: float, passed: bool) -> float:
    """A value that meets the threshold (or, for a failed KPI, misses it)."""
    meets = {"<=": threshold, ">=": threshold, "==": threshold, "<": threshold - 1}
    meets |= {">": threshold + 1, "!=": threshold + 1}
    misses = {"<=": threshold + 1, "<": threshold, ">=": threshold - 1, ">": threshold}
    misses |= {"==": threshold + 1, "!=": threshold}
    return (meets if passed else misses)[operator]


def run(
    r: RecipeResult,
    lane: str,
    signer: str = "a",
    *,
    verdict: str | None = None,
    day: int = 1,
    statuses: dict[str, str] | None = None,
    targets: dict[str, int] | None = None,
    observed: int | None = None,
    digest: str | None = None,
    criteria_version: str = "1.0.0",
    sample: bool = False,
    kpi_status: dict[str, str] | None = None,
) -> VerifiedEvidence:
    """A verified scale-qualification run of `r` on `lane` by a signer, built as verify would."""
    spec = LANES.lane(lane)
    assert spec is not None
    statuses, targets, kpi_status = statuses or {}, targets or {}, kpi_status or {}
    phases = {
        ph: tuple(
            CheckResult(s.id, statuses.get(s.id, "passed"), targets.get(s.id, spec.nodes))
            for s in LANES.required_scenarios(spec, r.criteria)
            if s.phase == ph
        )
        for ph in spec.phases
    }
    kpis = tuple(
        Kpi(
            k.id,
            _kpi_value(t.operator, t.value, kpi_status.get(k.id, "passed") == "passed"),
            k.unit,
            t.operator,
            t.value,
            kpi_status.get(k.id, "passed"),
            spec.required_targets(k.min_targets),
        )
        for k, t in LANES.required_kpis(spec, r.criteria)
    )
    if verdict is None:  # what the raw results give, as qualify (and the recomputation) judge
        honest = (
            all(c.status == "passed" and c.targets for cs in phases.values() for c in cs)
            and all(k.status == "passed" for k in kpis)
            and (spec.nodes if observed is None else observed) >= spec.nodes
        )
        verdict = "pass" if honest else "fail"
    recipe_digest = digest or r.digest
    stmt = Statement(
        predicate_type=SCALE_QUALIFICATION_V1,
        recipe=r.name,
        recipe_digest=recipe_digest,
        subjects=((f"recipe:{r.name}", {"sha256": recipe_digest[7:]}),),
        # a run is bound to a passing preflight of its cluster (generator.scale.qualify)
        predicate={"preflight": {"digest": "sha256:" + "f" * 64, "exitCode": 0}},
        scale_profile=r.scale_profile,
        scale_profile_version="1.0.0",
        lane=lane,
        lane_nodes=spec.nodes,
        criteria_version=criteria_version,
        observed_nodes=spec.nodes if observed is None else observed,
        observed_gpus=(spec.nodes if observed is None else observed) * 4,
        bundle_digest="sha256:" + "0" * 64,
        component_versions={c.name: c.version or "" for c in r.components},
        phases=phases,
        kpis=kpis,
        verdict=verdict,
        reasons=() if verdict == "pass" else ("something failed",),
        attested_at=f"2026-11-{day:02d}T08:00:00Z",
        sample=sample,
        generator="aicr-catalog test",
    )
    identity, label, klass = SIGNERS[signer]
    n = next(_COUNTER)
    source = hashlib.sha256(f"{ISSUER}\n{identity}".encode()).hexdigest()[:32]
    return VerifiedEvidence(
        path=f"evidence/{r.name}/{source}/{n:064x}.sigstore.json",
        statement_digest=f"sha256:{n:064x}",
        statement=stmt,
        signer_identity=identity,
        signer_issuer=ISSUER,
        signer_label=label,
        signer_class=klass,
        source=source,
        trust_root="test",
        log_index=n,
        integrated_time=int(datetime(2026, 11, day, 8, tzinfo=UTC).timestamp()),
        sample=sample,
        stale=recipe_digest != r.digest,
        current_digest=r.digest,
    )


def status_of(
    recipes: list[RecipeResult], evidence: list[Evidence], *, demo: bool = False
) -> Status:
    return aggregate(recipes, evidence, LANES, LADDERS, demo=demo)


def one(df: pd.DataFrame, **where: object) -> pd.Series:
    mask = pd.Series(True, index=df.index)
    for k, v in where.items():
        mask &= df[k] == v
    rows = df[mask]
    assert len(rows) == 1, (where, rows)
    return rows.iloc[0]


def check_state(s: Status, lane: str, check: str, profile: str = LARGE) -> str:
    return str(one(s.checks, recipe="r1", profile=profile, lane=lane, check=check)["state"])


def summary(s: Status, profile: str = LARGE) -> pd.Series:
    return one(s.recipes, recipe="r1", profile=profile)


# ---------------------------------------------------------------- consensus states


def test_confirmed_needs_two_distinct_passing_signers() -> None:
    r = recipe(profile=STANDARD)
    s = status_of([r], [run(r, "lane-36", "a"), run(r, "lane-36", "b")])
    assert set(s.checks["state"]) == {CONFIRMED}
    assert check_state(s, "lane-36", "node-reboot", STANDARD) == CONFIRMED
    assert one(s.checks, check="node-reboot")[["passed", "failed"]].tolist() == [2, 0]
    assert summary(s, STANDARD)["consensus"] == CONFIRMED
    assert one(s.lanes, lane="lane-36")["state"] == CONFIRMED


def test_single_is_one_passing_signer_even_with_several_runs() -> None:
    r = recipe(profile=STANDARD)
    s = status_of([r], [run(r, "lane-36", "a", day=1), run(r, "lane-36", "a", day=2)])
    assert check_state(s, "lane-36", "initial-deploy", STANDARD) == SINGLE
    assert summary(s, STANDARD)["consensus"] == SINGLE
    assert summary(s, STANDARD)[["runs", "signers"]].tolist() == [2, 1]


def test_contested_is_pass_and_fail_from_different_signers() -> None:
    r = recipe(profile=STANDARD)
    s = status_of(
        [r],
        [
            run(r, "lane-36", "a"),
            run(r, "lane-36", "b", verdict="fail", statuses={"node-reboot": "failed"}),
        ],
    )
    assert check_state(s, "lane-36", "node-reboot", STANDARD) == CONTESTED
    assert check_state(s, "lane-36", "initial-deploy", STANDARD) == CONFIRMED
    assert one(s.phases, lane="lane-36", phase="conformance")["state"] == CONTESTED
    assert one(s.phases, lane="lane-36", phase="deployment")["state"] == CONFIRMED
    assert one(s.lanes, lane="lane-36")["state"] == CONTESTED
    assert summary(s, STANDARD)["consensus"] == CONTESTED


def test_failing_is_fail_without_any_pass() -> None:
    r = recipe(profile=STANDARD)
    s = status_of([r], [run(r, "lane-36", "a", verdict="fail", statuses={"node-reboot": "failed"})])
    assert check_state(s, "lane-36", "node-reboot", STANDARD) == FAILING
    assert summary(s, STANDARD)["consensus"] == FAILING
    assert one(s.lanes, lane="lane-36")["state"] == FAILING


def test_untested_without_evidence() -> None:
    r = recipe()
    s = status_of([r], [])
    assert set(s.checks["state"]) == {UNTESTED}
    # every rung, every row: lanes 36 and 72 require 12 scenarios (no api-throttling, no Slurm for
    # kubeflow) and 13 KPIs (no Slurm KPIs); lanes 144 … 2304 add api-throttling: 2×25 + 5×26
    assert s.checks["required"].all() and len(s.checks) == 180
    assert summary(s)["consensus"] == UNTESTED
    assert summary(s)["ceiling_lane"] is None and summary(s)["ceiling_nodes"] == 0


def test_partial_when_some_rows_are_untested() -> None:
    r = recipe()
    s = status_of(
        [r], [run(r, "lane-36", "a"), run(r, "lane-36", "b", statuses={"node-reboot": "skipped"})]
    )
    assert check_state(s, "lane-36", "node-reboot") == SINGLE  # the skip does not count
    assert summary(s)["consensus"] == PARTIAL  # lane-72 … lane-2304 untested
    s = status_of([r], [run(r, "lane-36", "a", statuses={"node-reboot": "pending"})])
    assert check_state(s, "lane-36", "node-reboot") == UNTESTED
    assert one(s.phases, lane="lane-36", phase="conformance")["state"] == PARTIAL


def test_latest_run_per_signer_replaces_its_earlier_runs() -> None:
    r = recipe(profile=STANDARD)
    failed_then_passed = [
        run(r, "lane-36", "a", day=1, verdict="fail", statuses={"node-reboot": "failed"}),
        run(r, "lane-36", "a", day=5),
    ]
    s = status_of([r], failed_then_passed)
    assert check_state(s, "lane-36", "node-reboot", STANDARD) == SINGLE
    s = status_of([r], list(reversed(failed_then_passed)))  # order of input does not matter
    assert check_state(s, "lane-36", "node-reboot", STANDARD) == SINGLE
    passed_then_failed = [
        run(r, "lane-36", "a", day=1),
        run(r, "lane-36", "a", day=5, verdict="fail", statuses={"node-reboot": "failed"}),
    ]
    s = status_of([r], passed_then_failed)
    assert check_state(s, "lane-36", "node-reboot", STANDARD) == FAILING
    assert int(s.runs["latest"].sum()) == 1


def test_unknown_statuses_count_as_failures_and_skips_never_count() -> None:
    r = recipe(profile=STANDARD)
    s = status_of(
        [r],
        [
            run(r, "lane-36", "a", statuses={"node-reboot": "other", "steady-state": "skipped"}),
            run(r, "lane-36", "b", statuses={"node-reboot": "weird", "steady-state": "pending"}),
        ],
    )
    assert check_state(s, "lane-36", "node-reboot", STANDARD) == FAILING
    assert check_state(s, "lane-36", "steady-state", STANDARD) == UNTESTED


def test_kpis_are_consensus_rows_too() -> None:
    r = recipe(profile=STANDARD)
    s = status_of(
        [r],
        [
            run(r, "lane-36", "a", verdict="fail", kpi_status={"daemonset-rollout": "failed"}),
            run(r, "lane-36", "b"),
        ],
    )
    row = one(s.checks, check="kpi:daemonset-rollout")
    assert (row["phase"], row["state"]) == ("deployment", CONTESTED)


@pytest.mark.parametrize(
    ("states", "expected"),
    [
        ([CONFIRMED, CONFIRMED], CONFIRMED),
        ([CONFIRMED, SINGLE], SINGLE),
        ([CONFIRMED, UNTESTED], PARTIAL),
        ([UNTESTED, UNTESTED], UNTESTED),
        ([CONFIRMED, PARTIAL], PARTIAL),
        ([CONTESTED, UNTESTED, CONFIRMED], CONTESTED),
        ([CONTESTED, FAILING, CONFIRMED], FAILING),
        ([FAILING, UNTESTED], FAILING),
    ],
)
def test_rollup_is_worst_first(states: list[str], expected: str) -> None:
    df = pd.DataFrame({"k": ["x"] * len(states), "state": states})
    assert rollup(df, ["k"])["state"].tolist() == [expected]


# ---------------------------------------------------------------- scale ceiling


def climb(r: RecipeResult, lanes: tuple[str, ...], signer: str = "a") -> list[Evidence]:
    return [run(r, lane, signer, day=i + 1) for i, lane in enumerate(lanes)]


def test_ceiling_is_the_top_of_a_fully_qualified_ladder() -> None:
    r = recipe()
    s = status_of([r], climb(r, LADDER) + climb(r, LADDER, "b"))
    row = summary(s)
    assert (row["ceiling_lane"], row["ceiling_nodes"]) == ("lane-2304", 2304)
    assert pd.isna(row["blocked_lane"])
    assert row["consensus"] == CONFIRMED
    assert s.lanes["qualified"].all()


def test_a_gap_in_the_ladder_caps_the_ceiling_below_it() -> None:
    r = recipe()
    s = status_of([r], climb(r, ("lane-36", "lane-144", "lane-288")))
    row = summary(s)
    assert (row["ceiling_lane"], row["ceiling_nodes"]) == ("lane-36", 36)
    assert (row["blocked_lane"], row["blocked_state"]) == ("lane-72", UNTESTED)
    assert bool(one(s.lanes, lane="lane-144")["qualified"])  # qualified, but above the gap


def test_a_stale_lane_is_listed_and_not_counted() -> None:
    r = recipe()
    before_bump = recipe(gpu_operator="v26.3.1")
    evidence = [run(r, "lane-36"), run(before_bump, "lane-72", digest=before_bump.digest)]
    s = status_of([r], evidence)
    row = summary(s)
    assert (row["ceiling_lane"], row["blocked_lane"], row["blocked_state"]) == (
        "lane-36",
        "lane-72",
        UNTESTED,
    )
    stale = one(s.excluded, lane="lane-72")
    assert stale["exclusion"] == "stale" and not stale["counted"]
    assert row["excluded"] == 1


def test_a_failing_lane_caps_the_ceiling() -> None:
    r = recipe()
    failed = run(r, "lane-72", verdict="fail", kpi_status={"recovery-time": "failed"})
    evidence = [*climb(r, ("lane-36", "lane-144")), failed]
    row = summary(status_of([r], evidence))
    assert (row["ceiling_lane"], row["blocked_lane"], row["blocked_state"]) == (
        "lane-36",
        "lane-72",
        FAILING,
    )


def test_a_contested_lane_caps_the_ceiling() -> None:
    r = recipe()
    evidence = [
        *climb(r, ("lane-36", "lane-72")),
        run(r, "lane-72", "b", verdict="fail", statuses={"controller-failover": "failed"}),
    ]
    row = summary(status_of([r], evidence))
    assert (row["ceiling_lane"], row["blocked_state"]) == ("lane-36", CONTESTED)


def test_a_zero_target_run_claiming_pass_is_invalid() -> None:
    r = recipe()
    forged = run(r, "lane-72", targets={"monitoring-convergence": 0}, verdict="pass")
    s = status_of([r], [run(r, "lane-36"), forged])
    row = summary(s)
    assert (row["ceiling_lane"], row["blocked_lane"], row["blocked_state"]) == (
        "lane-36",
        "lane-72",
        UNTESTED,
    )
    judged = one(s.runs, lane="lane-72")
    assert (judged["verdict"], judged["recomputed"], judged["exclusion"]) == (
        "pass",
        "fail",
        "verdict-mismatch",
    )
    assert judged["downgraded"] == (
        "verdict-mismatch: signed verdict pass, recomputed fail: "
        "conformance/monitoring-convergence: ran on 0 targets"
    )
    assert not judged["counted"]
    # the zero-target "pass" is not a pass of that check either
    assert check_state(s, "lane-72", "monitoring-convergence") == UNTESTED


def test_an_undersized_run_claiming_pass_is_invalid() -> None:
    r = recipe()
    s = status_of([r], [run(r, "lane-36"), run(r, "lane-72", observed=54, verdict="pass")])
    assert summary(s)["ceiling_lane"] == "lane-36"
    judged = one(s.runs, lane="lane-72")
    assert judged["exclusion"] == "verdict-mismatch"
    assert judged["downgraded"].startswith(
        "verdict-mismatch: signed verdict pass, recomputed fail: observed 54 nodes, below the "
        "lane's 72; observed 216 GPUs, below the lane's 288"
    )
    # an honest failing run of the same size counts, as a failure
    s = status_of([r], [run(r, "lane-36"), run(r, "lane-72", observed=54)])
    assert (one(s.runs, lane="lane-72")["exclusion"], summary(s)["blocked_state"]) == ("", FAILING)


def test_unverified_unallowlisted_and_foreign_sample_evidence_never_counts() -> None:
    r = recipe(profile=STANDARD)
    rejected = [
        RejectedEvidence(
            path=f"evidence/r1/{'1' * 32}/{'2' * 64}.sigstore.json",
            klass=FailureClass.SIGNER_NOT_ALLOWED,
            message="signed by x via y; allowed: nobody",
        ),
        RejectedEvidence(
            path=f"evidence/r1/{'3' * 32}/{'4' * 64}.sigstore.json",
            klass=FailureClass.SIGNATURE_INVALID,
            message="signature does not verify",
        ),
    ]
    sample = run(r, "lane-36", "b", sample=True)
    old_criteria = run(r, "lane-36", "c", criteria_version="0.9.0")
    s = status_of([r], [*rejected, sample, old_criteria], demo=False)
    assert summary(s, STANDARD)["consensus"] == UNTESTED
    assert summary(s, STANDARD)["ceiling_lane"] is None
    assert sorted(s.excluded["exclusion"]) == [
        "sample-outside-demo",
        "stale-criteria",
        "unallowlisted",
        "unverified",
    ]
    assert set(s.excluded["recipe"]) == {"r1"}  # unreadable statements: recipe from the path
    assert summary(s, STANDARD)["excluded"] == 4
    # under the demo root, the sample run counts (and is flagged sample)
    s = status_of([r], [sample], demo=True)
    assert summary(s, STANDARD)[["consensus", "ceiling_lane", "sample"]].tolist() == [
        SINGLE,
        "lane-36",
        True,
    ]


def test_evidence_on_a_lane_off_the_ladder_is_shown_but_not_a_rung() -> None:
    r = recipe(profile=STANDARD)
    s = status_of([r], [run(r, "lane-36"), run(r, "lane-72")])
    off = one(s.lanes, lane="lane-72")
    assert pd.isna(off["rung"]) and off["state"] == SINGLE
    assert summary(s, STANDARD)["ceiling_lane"] == "lane-36"


def test_upstream_recipe_evidence_counts_for_consensus_but_never_for_a_lane() -> None:
    r = recipe(profile=STANDARD)
    upstream = replace(
        run(r, "lane-36", "a"),
        statement=Statement(
            predicate_type="https://aicr.run/recipe-evidence/v3",
            recipe="r1",
            recipe_digest=r.digest,
            subjects=(),
            predicate={},
            phases={"deployment": (CheckResult("deployment (summary)", "passed"),)},
            verdict="pass",
            attested_at="2026-11-01T00:00:00Z",
        ),
    )
    s = status_of([r], [upstream])
    row = one(s.checks, check="deployment (summary)")
    assert (row["lane"], row["state"], bool(row["required"])) == ("", SINGLE, False)
    assert summary(s, STANDARD)["ceiling_lane"] is None  # a recipe-evidence run is no lane run


# ---------------------------------------------------------------- components and health


def test_a_pin_bump_reads_not_yet_qualified_until_a_lane_is_rerun() -> None:
    old = recipe(gpu_operator="v26.7.0")
    evidence = climb(old, LADDER[:3])
    s = status_of([old, recipe("r2", STANDARD, gpu_operator="v26.7.0")], evidence)
    gpu = one(s.components, component="gpu-operator")
    assert (gpu["version"], gpu["lane"], gpu["nodes"], gpu["profiles"]) == (
        "v26.7.0",
        "lane-144",
        144,
        (LARGE,),
    )
    assert gpu["recipes"] == 2 and gpu["qualified_by"] == ("r1",)
    bumped = recipe(gpu_operator="v26.9.0")
    s = status_of([bumped], evidence)  # the same evidence, now for an older digest
    gpu = one(s.components, component="gpu-operator")
    assert (gpu["version"], gpu["lane"], gpu["nodes"]) == ("v26.9.0", None, 0)
    assert set(s.excluded["exclusion"]) == {"stale"}


def test_structural_health_pass_warn_fail_and_coverage_as_list_shows_them() -> None:
    good = recipe("good", checks=3)
    unpinned = recipe("unpinned", gpu_operator=None)
    malformed = recipe("malformed", constraints=(Constraint("not-a-measurement", ">= 1"),))
    prerelease = recipe("prerelease", gpu_operator="v26.7.0-rc.1")
    s = aggregate(
        [good, unpinned, malformed, prerelease],
        [],
        LANES,
        LADDERS,
        failures={"broken": "cycle a → b → a"},
    )
    health = s.health.set_index("recipe")
    assert health.loc["good", "health"] == "pass"
    assert health.loc["good", "coverage"] == "R:0 D:3 P:0 C:0"
    assert health.loc["unpinned", "health"] == "warn"
    assert health.loc["unpinned", "problems"] == ("gpu-operator has no pinned chart version",)
    assert health.loc["malformed", "health"] == "warn"
    assert health.loc["malformed", "problems"] == ("constraint not-a-measurement is malformed",)
    assert health.loc["prerelease", "problems"] == (
        "gpu-operator is pinned to a pre-release (v26.7.0-rc.1)",
    )
    assert health.loc["broken", "health"] == "fail"
    assert health.loc["broken", "problems"] == ("does not resolve: cycle a → b → a",)


def test_the_status_document_validates_against_its_schema() -> None:
    r = recipe()
    evidence = [
        *climb(r, LADDER[:2]),
        run(r, "lane-144", "b", statuses={"node-reboot": "failed"}),
    ]
    s = status_of([r, recipe(profile=STANDARD)], evidence)
    for detail in (False, True):
        doc = status_document(status_records(s), evidence, LANES, "test", detail=detail)
        jsonschema.validate(doc, STATUS_SCHEMA)
    entry = next(x for x in doc["recipes"] if x["profile"] == LARGE)
    assert entry["ceiling"] == {"lane": "lane-72", "nodes": 72}
    assert entry["blockedAt"] == {"lane": "lane-144", "state": FAILING}
    lane144 = next(x for x in entry["lanes"] if x["lane"] == "lane-144")
    assert [(x["signer"]["label"], x["effectiveVerdict"]) for x in lane144["runs"]] == [
        ("Lab B", "fail")
    ]


# ---------------------------------------------------------------- the sample evidence, end to end


@pytest.fixture(scope="module")
def sample_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample evidence, regenerated for the current catalog by `samples generate`."""
    root = tmp_path_factory.mktemp("samples")
    res = CliRunner().invoke(
        main, ["samples", "generate", "--catalog", str(REPO / "catalog"), "--root", str(root)]
    )
    assert res.exit_code == 0, res.output
    assert "27 sample runs (24 pass, 3 fail): 27 written, 0 removed" in res.stderr
    return root


@pytest.fixture
def status_cli(sample_root: Path) -> Callable[..., tuple[int, str]]:
    def invoke(*args: str) -> tuple[int, str]:
        res = CliRunner().invoke(
            main,
            [
                "status",
                *args,
                "--catalog",
                str(REPO / "catalog"),
                "--evidence",
                str(sample_root / "evidence"),
            ],
        )
        return res.exit_code, res.output

    return invoke


def test_status_of_the_gb300_slurm_ladder_on_the_sample_evidence(
    status_cli: Callable[..., tuple[int, str]],
) -> None:
    code, text = status_cli(
        "gb300-eks-ubuntu-training-slurm", "--scale-profile", LARGE, "--trust-root", "demo"
    )
    assert code == 0, text
    assert text.startswith("*** SAMPLE: evidence verified with the demo trust root is sample data")
    assert "  ceiling    SAMPLE lane-2304 (2,304 nodes)\n" in text
    assert "  consensus  SAMPLE CONFIRMED  (14 counted runs, 2 signers, 2 not counted)\n" in text
    for lane, nodes in (("lane-36", "36"), ("lane-1152", "1,152"), ("lane-2304", "2,304")):
        assert f"    {lane:10} {nodes:>5} nodes  CONFIRMED qualified" in text
    assert "      SAMPLE pass  Demo partner lab (sample) [partner]  2026-12-01T08:00:00Z\n" in text
    assert (
        "      SAMPLE pass  Demo qualification lab (sample) [first-party]  2026-11-30T08:00:00Z\n"
        in text
    )
    assert "    unallowlisted -          signed by https://github.com/unlisted-demo/" in text
    assert "    stale         lane-36    stale: signed for recipe digest sha256:" in text

    code, out = status_cli(
        "gb300-eks-ubuntu-training-slurm",
        "--scale-profile",
        LARGE,
        "--trust-root",
        "demo",
        "--format",
        "json",
    )
    doc = json.loads(out)
    jsonschema.validate(doc, STATUS_SCHEMA)
    (entry,) = doc["recipes"]
    assert doc["sample"] is True and entry["sample"] is True
    assert entry["ceiling"] == {"lane": "lane-2304", "nodes": 2304}
    assert [ln["lane"] for ln in entry["lanes"]] == list(LADDER)
    assert all(ln["state"] == CONFIRMED and len(ln["runs"]) == 2 for ln in entry["lanes"])
    assert sorted(x["exclusion"] for x in entry["excludedEvidence"]) == ["stale", "unallowlisted"]


def test_the_sample_set_covers_every_status(status_cli: Callable[..., tuple[int, str]]) -> None:
    code, out = status_cli("--trust-root", "demo", "--format", "json")
    assert code == 0
    doc = json.loads(out)
    jsonschema.validate(doc, STATUS_SCHEMA)
    rows = {(r["recipe"], r["profile"]): r for r in doc["recipes"]}
    slurm = rows[("gb300-eks-ubuntu-training-slurm", LARGE)]
    assert (slurm["consensus"], slurm["ceiling"]["lane"]) == (CONFIRMED, "lane-2304")
    contested = rows[("gb300-eks-ubuntu-inference-dynamo", LARGE)]
    assert (contested["consensus"], contested["ceiling"]["lane"], contested["blockedAt"]) == (
        CONTESTED,
        "lane-36",
        {"lane": "lane-72", "state": CONTESTED},
    )
    failing = rows[("gb200-eks-ubuntu-training-kubeflow", LARGE)]
    assert (failing["consensus"], failing["ceiling"]["lane"], failing["blockedAt"]) == (
        FAILING,
        "lane-72",
        {"lane": "lane-144", "state": FAILING},
    )
    single = rows[("gb200-eks-ubuntu-training-slurm", STANDARD)]
    assert (single["consensus"], single["ceiling"]["lane"]) == (SINGLE, "lane-36")
    assert rows[("gb300-eks-ubuntu-training-slurm", STANDARD)]["ceiling"]["lane"] == "lane-36"
    assert {r["consensus"] for r in doc["recipes"]} >= {
        CONFIRMED,
        SINGLE,
        CONTESTED,
        FAILING,
        UNTESTED,
    }
    gpu = [c for c in doc["components"] if c["component"] == "slinky-slurm"]
    assert gpu and gpu[0]["lane"] == "lane-2304" and gpu[0]["profiles"] == [LARGE]


def test_sample_evidence_counts_only_under_the_demo_root(
    status_cli: Callable[..., tuple[int, str]],
) -> None:
    code, out = status_cli("gb300-eks-ubuntu-training-slurm", "--format", "json")  # public-good
    assert code == 0
    (entry, *_) = json.loads(out)["recipes"]
    assert json.loads(out)["sample"] is False
    assert entry["ceiling"] == {"lane": None, "nodes": 0} and entry["runs"] == 0
    assert {x["exclusion"] for x in entry["excludedEvidence"]} == {"unverified"}


def _payload(bundle: bytes) -> dict[str, object]:
    envelope = json.loads(bundle)["dsseEnvelope"]
    result: dict[str, object] = json.loads(base64.b64decode(envelope["payload"]))
    return result


def test_sample_evidence_is_regenerated_byte_for_byte_and_says_it_is_sample(
    sample_root: Path,
) -> None:
    """The committed sample evidence is what `samples generate` writes for the current catalog
    (`sample_root`: the same generation, made once for the module), and `--check` agrees."""
    samples = {
        p.relative_to(sample_root).as_posix(): p.read_bytes()
        for p in (sample_root / "evidence").rglob("*.sigstore.json")
    }
    refresh = "after a catalog change, refresh it with `aicr-catalog samples generate`"
    committed = {
        p.relative_to(REPO).as_posix() for p in (REPO / "evidence").rglob("*.sigstore.json")
    }
    assert set(samples) == committed, "sample evidence out of date; " + refresh
    assert 20 <= len(committed) <= 60  # tens of files
    for path, bundle in samples.items():
        assert (REPO / path).read_bytes() == bundle, f"{path} is out of date; {refresh}"
        predicate = _payload(bundle)["predicate"]
        assert isinstance(predicate, dict) and predicate["sample"] is True
    res = CliRunner().invoke(
        main,
        ["samples", "generate", "--check", "--catalog", str(REPO / "catalog"), "--root", str(REPO)],
    )
    assert res.exit_code == 0, res.output


# ---------------------------------------------------------------- performance


@pytest.mark.bench
@pytest.mark.perf
def test_aggregating_20000_records_over_1000_recipes_takes_under_5_seconds() -> None:
    recipes = [recipe(f"r{i:04d}", LARGE if i % 2 else STANDARD) for i in range(1000)]
    templates = {
        (lane, signer, verdict): run(
            recipes[1],
            lane,
            signer,
            statuses={"node-reboot": "failed"} if verdict == "fail" else None,
        )
        for lane in LADDER
        for signer in SIGNERS
        for verdict in ("pass", "fail")
    }
    evidence: list[Evidence] = []
    i = 0
    while len(evidence) < 20_000:
        r = recipes[i % 1000]
        ladder = LADDERS[r.scale_profile]
        lane = ladder[(i // 1000) % len(ladder)]
        signer = "abc"[(i // 7) % 3]
        t = templates[(lane, signer, "fail" if i % 17 == 0 else "pass")]
        stmt = replace(
            t.statement, recipe=r.name, recipe_digest=r.digest, scale_profile=r.scale_profile
        )
        evidence.append(
            replace(
                t,
                statement=stmt,
                path=f"evidence/{r.name}/{t.source}/{i:064x}.sigstore.json",
                statement_digest=f"sha256:{i:064x}",
            )
        )
        i += 1
    start = time.perf_counter()
    s = aggregate(recipes, evidence, LANES, LADDERS)
    elapsed = time.perf_counter() - start
    print(
        f"\naggregate: {len(evidence)} evidence records over {len(recipes)} recipes: {elapsed:.2f} s"
    )
    assert len(s.recipes) == 1000 and s.runs["counted"].all()
    assert elapsed < 5.0


def test_status_usage_errors_exit_2(status_cli: Callable[..., tuple[int, str]]) -> None:
    code, out = status_cli("no-such-recipe", "--trust-root", "demo")
    assert code == 2 and "no recipe named 'no-such-recipe'" in out
    code, out = status_cli(
        "gb300-eks-ubuntu-training-slurm", "--trust-root", "/nonexistent/root.json"
    )
    assert code == 2 and "trust root '/nonexistent/root.json'" in out
    code, out = status_cli("h100-eks-ubuntu-training-slurm", "--scale-profile", LARGE)
    assert code == 2 and "scale profile 'nvl72-2304' does not apply" in out


def test_samples_generate_replaces_only_sample_bundles(tmp_path: Path) -> None:
    evidence = tmp_path / "evidence" / "some-recipe" / ("0" * 32)
    evidence.mkdir(parents=True)
    statement = {"predicate": {"sample": True}}
    envelope = {"payload": base64.b64encode(json.dumps(statement).encode()).decode()}
    old_sample = evidence / f"{'1' * 64}.sigstore.json"
    old_sample.write_text(json.dumps({"dsseEnvelope": envelope}))
    real = evidence / f"{'2' * 64}.sigstore.json"
    real.write_text(
        json.dumps(
            {
                "dsseEnvelope": {
                    "payload": base64.b64encode(b'{"predicate": {"sample": false}}').decode()
                }
            }
        )
    )
    args = ["samples", "generate", "--catalog", str(REPO / "catalog"), "--root", str(tmp_path)]
    res = CliRunner().invoke(main, [*args, "--check"])
    assert res.exit_code == 1 and "obsolete: evidence/some-recipe/" in res.stderr
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0 and "27 written, 1 removed" in res.stderr
    assert not old_sample.exists() and real.exists()
    assert CliRunner().invoke(main, [*args, "--check"]).exit_code == 0


def test_status_health_agrees_with_validate_leaf_health() -> None:
    from generator.catalog.load import load_catalog
    from generator.catalog.resolve import resolve
    from generator.validate import leaf_health

    catalog, _ = load_catalog(REPO / "catalog")
    leaves = catalog.leaves()
    s = aggregate([resolve(catalog, leaf) for leaf in leaves], [], LANES, LADDERS)
    mine = {r.recipe: (r.health, r.coverage, r.problems) for r in s.health.itertuples()}
    theirs = {
        leaf: (h.health, h.coverage_text(), h.reasons)
        for leaf in leaves
        for h in [leaf_health(catalog, leaf)]
    }
    assert mine == theirs


# ---------------------------------------------------------------- properties

_R = recipe()
_POOL: list[Evidence] = [
    run(_R, lane, signer, day=day, verdict=verdict, statuses=statuses)
    for lane in LADDER[:3]
    for signer in ("a", "b")
    for day, verdict, statuses in (
        (1, "pass", {}),
        (2, "fail", {"node-reboot": "failed"}),
        (3, "pass", {"steady-state": "skipped"}),
    )
]
_NOISE: list[Evidence] = [
    run(recipe(gpu_operator="v0.0.1"), "lane-36", "c", digest=recipe(gpu_operator="v0.0.1").digest),
    RejectedEvidence(
        path=f"evidence/r1/{'5' * 32}/{'6' * 64}.sigstore.json",
        klass=FailureClass.SIGNER_NOT_ALLOWED,
        message="signed by x via y",
    ),
]
_TABLES = ("checks", "phases", "lanes", "recipes", "components", "health")


def _tables(s: Status) -> dict[str, pd.DataFrame]:
    return {name: getattr(s, name) for name in _TABLES}


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(range(len(_POOL))), unique=True), st.randoms())
def test_status_does_not_depend_on_evidence_order(picked: list[int], rnd: Random) -> None:
    evidence = [_POOL[i] for i in picked]
    shuffled = list(evidence)
    rnd.shuffle(shuffled)
    first, second = _tables(status_of([_R], evidence)), _tables(status_of([_R], shuffled))
    for name in _TABLES:
        pd.testing.assert_frame_equal(first[name], second[name], obj=name)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from(range(len(_POOL))), unique=True))
def test_stale_and_rejected_evidence_never_changes_the_counted_status(picked: list[int]) -> None:
    evidence = [_POOL[i] for i in picked]
    clean = _tables(status_of([_R], evidence))
    noisy = _tables(status_of([_R], [*evidence, *_NOISE]))
    for name in ("checks", "phases", "lanes", "components"):
        pd.testing.assert_frame_equal(clean[name], noisy[name], obj=name)
    keep = ["consensus", "ceiling_lane", "ceiling_nodes", "runs", "signers"]
    pd.testing.assert_frame_equal(clean["recipes"][keep], noisy["recipes"][keep])


def test_status_of_every_recipe_is_a_table_with_sample_marks(
    status_cli: Callable[..., tuple[int, str]],
) -> None:
    code, text = status_cli("--trust-root", "demo")
    assert code == 0
    lines = text.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("recipe "))
    assert lines[header].split() == [
        "recipe",
        "profile",
        "health",
        "coverage",
        "consensus",
        "ceiling",
        "runs",
        "signers",
        "excluded",
    ]
    row = next(
        line
        for line in lines
        if line.startswith("gb300-eks-ubuntu-training-slurm ") and " nvl72-2304 " in line
    )
    assert row.split()[7:] == ["CONFIRMED", "lane-2304", "14", "2", "2", "SAMPLE"]
    untested = next(line for line in lines if line.startswith("h100-eks-ubuntu-training-slurm "))
    assert untested.split()[7:] == [
        "UNTESTED",
        "-",
        "0",
        "0",
        "0",
    ]  # no SAMPLE mark: nothing counted
    assert any(line.startswith("consensus over distinct verified signers") for line in lines)


def test_with_several_roots_a_sample_counts_only_if_a_demo_root_verified_it() -> None:
    r = recipe(profile=STANDARD)
    by_demo = replace(run(r, "lane-36", "a", sample=True), trust_root="demo")
    by_other = replace(run(r, "lane-36", "b", sample=True), trust_root="public-good")
    real = replace(run(r, "lane-36", "c"), trust_root="public-good")
    s = aggregate([r], [by_demo, by_other, real], LANES, LADDERS, demo_roots={"demo"})
    assert s.demo is True
    assert summary(s, STANDARD)[["consensus", "signers", "sample"]].tolist() == [CONFIRMED, 2, True]
    (excluded,) = s.excluded.itertuples()
    assert (excluded.signer_label, excluded.exclusion) == ("Lab B", "sample-outside-demo")


def test_status_accepts_several_trust_roots(status_cli: Callable[..., tuple[int, str]]) -> None:
    code, out = status_cli(
        "gb300-eks-ubuntu-training-slurm",
        "--scale-profile",
        LARGE,
        "--trust-root",
        "public-good",
        "--trust-root",
        "demo",
        "--format",
        "json",
    )
    assert code == 0
    doc = json.loads(out)
    jsonschema.validate(doc, STATUS_SCHEMA)
    assert doc["trustRoot"] == "public-good, demo" and doc["sample"] is True
    assert doc["recipes"][0]["ceiling"] == {"lane": "lane-2304", "nodes": 2304}


def test_records_judged_by_verify_paths_keep_their_named_exclusion() -> None:
    r = recipe(profile=STANDARD)
    judged = [
        RejectedEvidence(
            path=f"evidence/r1/{'7' * 32}/{'8' * 64}.sigstore.json",
            klass=klass,
            message=f"{klass}: named",
            statement=run(r, "lane-36").statement,
        )
        for klass in (FailureClass.VERDICT_MISMATCH, FailureClass.ATTESTED_AFTER_LOGGED)
    ]
    s = status_of([r], judged)
    assert sorted(s.excluded["exclusion"]) == ["attested-after-logged", "verdict-mismatch"]
    doc = status_document(status_records(s), judged, LANES, "test", detail=True)
    jsonschema.validate(doc, STATUS_SCHEMA)
    (row,) = [x for x in doc["recipes"] if x["profile"] == STANDARD]
    assert sorted(x["reason"] for x in row["excludedEvidence"]) == [
        "attested-after-logged: named",
        "verdict-mismatch: named",
    ]
