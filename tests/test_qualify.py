"""Lanes (catalog/scale/lanes.yaml) and `qualify`: raw results → the unsigned statement."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml
from click.testing import CliRunner

from generator.catalog.lanes import Lanes
from generator.catalog.load import load_catalog
from generator.catalog.resolve import resolve
from generator.cli import main
from generator.core.errors import LoadError, UsageError, ValidationError
from generator.core.records import Criteria, RecipeResult, ResolvedComponent
from generator.core.yamlio import parse_yaml
from generator.evidence.model import IN_TOTO_PAYLOAD_TYPE, SCALE_QUALIFICATION_V1
from generator.evidence.statement import parse_statement
from generator.scale.qualify import (
    CTRF_SUFFIX,
    BundleBinding,
    RunResults,
    attested_at_from,
    lanes_of,
    parse_lanes,
    parse_run,
    qualify,
)
from generator.scale.samples import SampleRun, catalog_preflight, raw_results

REPO = Path(__file__).resolve().parent.parent
LANES_YAML = REPO / "catalog" / "scale" / "lanes.yaml"
RUNS = Path(__file__).resolve().parent / "fixtures" / "runs"
LADDER = ("lane-36", "lane-72", "lane-144", "lane-288", "lane-576", "lane-1152", "lane-2304")
WHEN = "2026-11-03T08:00:00Z"


def _component(name: str, version: str, order: int) -> ResolvedComponent:
    return ResolvedComponent(
        name=name,
        type="Helm",
        repository="https://helm.ngc.nvidia.com/nvidia",
        chart=name,
        version=version,
        namespace=name,
        values={},
        manifest_files=(),
        pre_manifest_files=(),
        dependency_refs=(),
        order=order,
        depth=0,
        values_files=(),
    )


def fixture_recipe(platform: str | None = "slurm") -> RecipeResult:
    """The synthetic recipe the fixture runs were made for."""
    return RecipeResult(
        name="fixture-gb300-slurm",
        criteria=Criteria("eks", "gb300", "ubuntu", "training", platform),
        applied_overlays=("base",),
        mixins=(),
        constraints=(),
        components=(
            _component("gpu-operator", "v26.7.0", 0),
            _component("slinky-slurm", "1.2.0", 1),
        ),
        validation={},
        scale_profile="nvl72-2304",
        scale_profile_version="1.0.0",
        overrides=(),
        digest="sha256:" + "ab" * 32,
    )


@pytest.fixture(scope="module")
def lanes() -> Lanes:
    return parse_lanes(parse_yaml(LANES_YAML.read_bytes(), "scale/lanes.yaml"))


def load_run(case: str, lanes: Lanes) -> RunResults:
    files = {p.name: p.read_bytes() for p in (RUNS / case).iterdir()}
    return parse_run(files, lanes.phases)


BUNDLE = BundleBinding(
    digest="sha256:b5bafd097d5f22e5e195b33408eff0358690e1af13b8a70a36cf9ee37118ecd2"
)


def judge(lanes: Lanes, case: str, lane: str, recipe: RecipeResult | None = None):  # type: ignore[no-untyped-def]
    return qualify(
        lanes, lane, recipe or fixture_recipe(), LADDER, load_run(case, lanes), bundle=BUNDLE,
        attested_at=WHEN,
    )  # fmt: skip


# ---------------------------------------------------------------- the ladder


def test_the_ladder_is_36_to_2304_nodes_of_nvl72_racks(lanes: Lanes) -> None:
    assert [ln.nodes for ln in lanes.lanes] == [36, 72, 144, 288, 576, 1152, 2304]
    assert [ln.name for ln in lanes.lanes] == list(LADDER)
    assert (lanes.gpus_per_node, lanes.nodes_per_rack) == (4, 18)
    top = lanes.lanes[-1]
    assert (top.racks, top.gpus) == (128, 9216)
    for ln in lanes.lanes:
        assert ln.racks * 18 == ln.nodes and ln.gpus == ln.nodes * 4
        assert ln.phases == ("deployment", "conformance", "performance")
        assert ln.criteria_version == "1.0.0"


def test_every_lane_states_thresholds_with_units_and_the_kubernetes_slos(lanes: Lanes) -> None:
    units = {k.id: k.unit for k in lanes.kpis}
    assert units["api-mutating-p99"] == "s" and units["nvls-allreduce-busbw"] == "GB/s"
    for ln in lanes.lanes:
        assert {k for k, _ in ln.thresholds} == set(units)
        slo = {k: (t.operator, t.value, t.status) for k, t in ln.thresholds}
        assert slo["api-mutating-p99"] == ("<=", 1.0, "adopted")
        assert slo["api-read-p99"] == ("<=", 1.0, "adopted")
        assert slo["api-list-p99"] == ("<=", 30.0, "adopted")
        assert slo["pod-startup-p99"] == ("<=", 5.0, "adopted")
        assert slo["install-to-gpu-ready"][2] == "proposed"  # not calibrated on hardware yet
    # install time grows with the lane; rollout too
    installs = [ln.threshold("install-to-gpu-ready").value for ln in lanes.lanes]  # type: ignore[union-attr]
    assert installs == sorted(installs) and installs[0] < installs[-1]


def test_scenarios_cover_the_required_kinds_and_slurm_only_for_slurm(lanes: Lanes) -> None:
    ids = {s.id for s in lanes.scenarios}
    for needed in (
        "initial-deploy",
        "steady-state",
        "slurm-job-launch",
        "slurm-job-completion",
        "topology-convergence",
        "monitoring-convergence",
        "controller-failover",
        "node-reboot",
        "component-restart",
        "remediation-after-disruption",
        "api-throttling",
        "partial-rollout",
    ):
        assert needed in ids
    top = lanes.lanes[-1]
    slurm = {s.id for s in lanes.required_scenarios(top, fixture_recipe().criteria)}
    other = {s.id for s in lanes.required_scenarios(top, fixture_recipe("dynamo").criteria)}
    assert slurm - other == {"slurm-job-launch", "slurm-job-completion"}
    assert "api-throttling" not in {
        s.id for s in lanes.required_scenarios(lanes.lanes[0], fixture_recipe().criteria)
    }


def test_every_profile_ladder_names_lanes_that_exist() -> None:
    catalog, _ = load_catalog(REPO / "catalog")
    lanes = lanes_of(catalog.documents)
    names = [ln.name for ln in lanes.lanes]
    assert catalog.profiles, "the catalog has scale profiles"
    for profile in catalog.profiles.values():
        assert profile.ladder, profile.name
        assert all(lane in names for lane in profile.ladder), profile.name
        # a ladder climbs: its lanes in ascending order
        assert sorted(profile.ladder, key=names.index) == list(profile.ladder)
    assert catalog.profiles["nvl72-2304"].ladder == LADDER


@pytest.mark.parametrize(
    ("old", "new", "rule", "message"),
    [
        (
            "racks: 128",
            "racks: 127",
            "lanes.racks",
            "2304 nodes at 18 nodes per rack is 128 racks, not 127",
        ),
        (
            "gpus: 9216",
            "gpus: 9215",
            "lanes.gpus",
            "2304 nodes at 4 GPUs per node is 9216 GPUs, not 9215",
        ),
        (
            "- api-throttling",
            "- api-throttlin",
            "lanes.reference",
            "unknown scenario 'api-throttlin'",
        ),
    ],
)
def test_lane_arithmetic_and_references_are_checked_with_locations(
    old: str, new: str, rule: str, message: str
) -> None:
    head, tail = LANES_YAML.read_text().rsplit(old, 1)  # in lane-2304, the last lane
    with pytest.raises(ValidationError) as info:
        parse_lanes(parse_yaml(head + new + tail, "scale/lanes.yaml"))
    (diag,) = info.value.diagnostics
    assert (diag.rule, diag.message) == (rule, message)
    assert diag.path == "scale/lanes.yaml" and diag.line > 400


def test_lanes_must_ascend_and_follow_the_schema() -> None:
    text = LANES_YAML.read_text().replace("nodes: 72\n", "nodes: 30\n", 1)
    with pytest.raises(ValidationError) as info:
        parse_lanes(parse_yaml(text, "scale/lanes.yaml"))
    rules = {d.rule for d in info.value.diagnostics}
    assert "lanes.order" in rules
    bad = LANES_YAML.read_text().replace("status: proposed}", "status: guessed}", 1)
    with pytest.raises(ValidationError) as info:
        parse_lanes(parse_yaml(bad, "scale/lanes.yaml"))
    assert all(d.rule.startswith("schema.") for d in info.value.diagnostics)


# ---------------------------------------------------------------- qualify


def test_a_passing_run_gives_a_pass_statement_the_verifier_accepts(lanes: Lanes) -> None:
    result = judge(lanes, "lane-36-pass", "lane-36")
    assert (result.verdict, result.reasons) == ("pass", ())
    pred = result.predicate
    assert pred["lane"] == {"name": "lane-36", "nodes": 36, "criteriaVersion": "1.0.0"}
    assert pred["observed"] == {"nodes": 36, "gpus": 144}
    assert pred["recipe"] == {"name": "fixture-gb300-slurm", "digest": "sha256:" + "ab" * 32}
    assert pred["sample"] is True  # run.yaml says so
    kpis = {k["id"]: k for k in pred["kpis"]}
    assert len(kpis) == 15 and all(k["status"] == "passed" for k in kpis.values())
    assert kpis["api-list-p99"]["threshold"] == {"operator": "<=", "value": 30.0}
    assert kpis["workloads-ready"]["value"] == 1.0
    checks = {c["name"]: c for p in pred["phases"].values() for c in p["checks"]}
    assert checks["nvls-allreduce"]["targets"] == 2  # racks
    assert checks["slurm-job-launch"]["status"] == "passed"
    jsonschema.validate(
        pred, json.loads((REPO / "catalog/schemas/scale-qualification-v1.schema.json").read_text())
    )
    statement = parse_statement(IN_TOTO_PAYLOAD_TYPE, result.statement)
    assert statement.predicate_type == SCALE_QUALIFICATION_V1 and statement.verdict == "pass"
    assert statement.lane == "lane-36" and statement.observed_nodes == 36


def test_an_undersized_cluster_cannot_pass_and_says_why(lanes: Lanes) -> None:
    result = judge(lanes, "lane-144-undersized", "lane-144")
    assert result.verdict == "fail"
    assert result.reasons[:2] == (
        "observed 126 nodes, below the lane's 144",
        "observed 504 GPUs, below the lane's 576",
    )
    assert (
        "KPI nvls-allreduce-busbw: measured on 7 target(s), the lane needs 8 (racks)"
        in result.reasons
    )
    assert result.predicate["observed"] == {"nodes": 126, "gpus": 504}


def test_a_check_on_zero_targets_cannot_pass(lanes: Lanes) -> None:
    result = judge(lanes, "lane-72-zero-targets", "lane-72")
    assert (result.verdict, result.reasons) == (
        "fail",
        ("conformance/monitoring-convergence: ran on 0 targets",),
    )
    checks = result.predicate["phases"]["conformance"]["checks"]
    assert {"name": "monitoring-convergence", "status": "passed", "targets": 0} in [
        {k: c[k] for k in ("name", "status", "targets")} for c in checks
    ]


def test_checks_not_executed_fail_the_run_with_one_reason_each(lanes: Lanes) -> None:
    result = judge(lanes, "lane-36-not-executed", "lane-36")
    assert result.verdict == "fail"
    reasons = set(result.reasons)
    assert "phase performance: no results (performance.ctrf.json is missing)" in reasons
    assert "conformance/node-reboot: not executed (skipped)" in reasons
    assert "conformance/partial-rollout: not executed (absent from the report)" in reasons
    assert "KPI recovery-time: not measured" in reasons
    assert result.predicate["phases"]["performance"] == {"checks": []}


def test_zero_over_zero_and_unknown_statuses_fail(lanes: Lanes) -> None:
    result = judge(lanes, "lane-36-zero-denominator", "lane-36")
    assert result.verdict == "fail"
    assert "KPI workloads-ready: 0/0 — nothing was measured, cannot pass" in result.reasons
    assert "deployment/steady-state: status 'flaky' counts as a failure" in result.reasons
    steady = [
        c for c in result.predicate["phases"]["deployment"]["checks"] if c["name"] == "steady-state"
    ]
    assert steady[0]["status"] == "other" and steady[0]["message"] == "reported status 'flaky'"


def test_a_kpi_outside_its_threshold_fails_even_when_proposed(lanes: Lanes) -> None:
    run = load_run("lane-36-pass", lanes)
    from dataclasses import replace

    slow = tuple(
        replace(k, value=2400.0) if k.id == "install-to-gpu-ready" else k for k in run.kpis
    )
    result = qualify(
        lanes,
        "lane-36",
        fixture_recipe(),
        LADDER,
        replace(run, kpis=slow),
        bundle=BUNDLE,
        attested_at=WHEN,
    )
    assert result.reasons == (
        "KPI install-to-gpu-ready: 2400 s is not <= 1800 (proposed threshold)",
    )
    kpi = next(k for k in result.predicate["kpis"] if k["id"] == "install-to-gpu-ready")
    assert (kpi["value"], kpi["status"]) == (2400.0, "failed")


def test_running_versions_must_be_the_recipes_pins(lanes: Lanes) -> None:
    recipe = fixture_recipe()
    from dataclasses import replace

    bumped = replace(
        recipe, components=(_component("gpu-operator", "v26.9.0", 0), recipe.components[1])
    )
    result = judge(lanes, "lane-36-pass", "lane-36", bumped)
    assert result.reasons == ("component gpu-operator: running v26.7.0, the recipe pins v26.9.0",)


def test_slurm_scenarios_are_not_required_of_other_platforms(lanes: Lanes) -> None:
    run = load_run("lane-36-pass", lanes)
    from dataclasses import replace

    without = {
        p: tuple(c for c in cs if not c.name.startswith("slurm-")) for p, cs in run.phases.items()
    }
    kpis = tuple(k for k in run.kpis if not k.id.startswith("slurm-"))
    run = replace(run, phases=without, kpis=kpis)
    assert (
        qualify(
            lanes,
            "lane-36",
            fixture_recipe("kubeflow"),
            LADDER,
            run,
            bundle=BUNDLE,
            attested_at=WHEN,
        ).verdict
        == "pass"
    )
    result = qualify(
        lanes, "lane-36", fixture_recipe("slurm"), LADDER, run, bundle=BUNDLE, attested_at=WHEN
    )
    assert "conformance/slurm-job-launch: not executed (absent from the report)" in result.reasons
    assert "KPI slurm-job-success: not measured" in result.reasons


def test_a_failure_outside_the_required_checks_still_fails_the_run(lanes: Lanes) -> None:
    run = load_run("lane-36-pass", lanes)
    from dataclasses import replace

    from generator.scale.qualify import RawCheck

    extra = (
        RawCheck(
            "api-throttling", "failed", 36, "429 storm"
        ),  # a scenario lane-36 does not require
        RawCheck("nccl-smoke", "other", 36),  # not a lane scenario at all
        RawCheck("gpu-burn", "skipped", None),  # skipped extras do not matter
    )
    phases = {**run.phases, "conformance": run.phases["conformance"] + extra}
    result = qualify(
        lanes,
        "lane-36",
        fixture_recipe(),
        LADDER,
        replace(run, phases=phases),
        bundle=BUNDLE,
        attested_at=WHEN,
    )
    assert result.reasons == (
        "conformance/api-throttling: failed (not required by the lane, still counted)",
        "conformance/nccl-smoke: other (not required by the lane, still counted)",
    )


def test_unknown_lanes_and_lanes_off_the_ladder_are_usage_errors(lanes: Lanes) -> None:
    run = load_run("lane-36-pass", lanes)
    with pytest.raises(UsageError, match="unknown lane 'lane-4608'"):
        qualify(lanes, "lane-4608", fixture_recipe(), LADDER, run, bundle=BUNDLE, attested_at=WHEN)
    with pytest.raises(
        UsageError,
        match=r"lane 'lane-72' is not on the ladder of scale profile 'nvl72-2304' \(lane-36\)",
    ):
        qualify(
            lanes, "lane-72", fixture_recipe(), ("lane-36",), run, bundle=BUNDLE, attested_at=WHEN
        )


def test_the_attestation_date_never_comes_from_the_clock(lanes: Lanes) -> None:
    run = load_run("lane-36-pass", lanes)
    from dataclasses import replace

    assert attested_at_from("1", run, "2026-01-02T03:04:05Z") == "2026-01-02T03:04:05Z"
    assert attested_at_from("1", run, None) == "2026-11-03T08:00:00Z"  # run.yaml finishedAt
    undated = replace(run, finished_at=None)
    assert attested_at_from("1764633600", undated, None) == "2025-12-02T00:00:00Z"
    with pytest.raises(UsageError, match="no attestation date"):
        attested_at_from(None, undated, None)
    with pytest.raises(UsageError, match="not RFC 3339"):
        attested_at_from(None, run, "yesterday")


def test_unreadable_results_are_load_errors(lanes: Lanes) -> None:
    files = {p.name: p.read_bytes() for p in (RUNS / "lane-36-pass").iterdir()}
    with pytest.raises(LoadError, match=r"the results have no run\.yaml"):
        parse_run({k: v for k, v in files.items() if k != "run.yaml"}, lanes.phases)
    with pytest.raises(LoadError, match="not a CTRF report"):
        parse_run({**files, "deployment" + CTRF_SUFFIX: b'{"results": {}}'}, lanes.phases)


# ---------------------------------------------------------------- the command


def _results_dir(tmp_path: Path, lane: str, **kw: object) -> Path:
    catalog, _ = load_catalog(REPO / "catalog")
    lanes = lanes_of(catalog.documents)
    recipe = resolve(catalog, "gb300-eks-ubuntu-training-slurm", profile="nvl72-2304")
    run = SampleRun(recipe.name, "nvl72-2304", lane, "lab-a", 3, "cli test", **kw)  # type: ignore[arg-type]
    out = tmp_path / "results"
    out.mkdir(parents=True)
    files = raw_results(
        lanes, lanes.lane(lane), recipe, run, catalog_preflight(catalog), BUNDLE.digest
    )  # type: ignore[arg-type]
    for name, data in files.items():
        (out / name).write_bytes(data)
    return out


def test_qualify_command_writes_the_statement_and_exits_by_verdict(tmp_path: Path) -> None:
    runner = CliRunner()
    results = _results_dir(tmp_path, "lane-288")
    out = tmp_path / "statement.json"
    args = [
        "qualify",
        "--lane",
        "lane-288",
        "--recipe",
        "gb300-eks-ubuntu-training-slurm",
        "--scale-profile",
        "nvl72-2304",
        "--results",
        str(results),
        "--bundle",
        BUNDLE.digest,
        "--catalog",
        str(REPO / "catalog"),
        "-o",
        str(out),
    ]
    res = runner.invoke(main, args)
    assert res.exit_code == 0, res.output
    assert "verdict: pass (gb300-eks-ubuntu-training-slurm × nvl72-2304 on lane-288)" in res.stderr
    statement = json.loads(out.read_bytes())
    assert statement["predicateType"] == SCALE_QUALIFICATION_V1
    assert statement["predicate"]["attestedAt"] == "2026-11-05T08:00:00Z"

    failing = _results_dir(tmp_path / "f", "lane-288", zero_targets=("node-reboot",))
    res = runner.invoke(main, [*args[:-2], "--results", str(failing)])
    assert res.exit_code == 1
    assert "  - conformance/node-reboot: ran on 0 targets" in res.stderr
    assert json.loads(res.stdout)["predicate"]["verdict"] == "fail"

    res = runner.invoke(
        main,
        [
            "qualify",
            "--lane",
            "lane-72",
            "--recipe",
            "gb300-eks-ubuntu-training-slurm",
            "--results",
            str(results),
            "--bundle",
            BUNDLE.digest,
            "--catalog",
            str(REPO / "catalog"),
        ],
    )
    assert res.exit_code == 2
    assert "lane 'lane-72' is not on the ladder of scale profile 'standard' (lane-36)" in res.stderr


def test_sample_evidence_is_what_qualify_then_evidence_sign_produce(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """samples generate == its raw results → `qualify` → `evidence sign --trust-root demo`."""
    from generator.scale.samples import SIGNERS

    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    runner = CliRunner()
    catalog = str(REPO / "catalog")
    res = runner.invoke(
        main,
        [
            "samples",
            "generate",
            "--catalog",
            catalog,
            "--root",
            str(tmp_path / "gen"),
            "--raw",
            str(tmp_path / "raw"),
        ],
    )
    assert res.exit_code == 0, res.output
    recipe = "gb300-eks-ubuntu-training-slurm"
    for lane, signer, day, verdict in (("lane-2304", "lab-b", 29, 0), ("lane-36", "lab-a", 5, 0)):
        profile = "nvl72-2304" if lane == "lane-2304" else "standard"
        results = tmp_path / "raw" / recipe / profile / lane / f"{signer}-{day}"
        statement = tmp_path / f"{lane}.json"
        res = runner.invoke(
            main,
            [
                "qualify",
                "--lane",
                lane,
                "--recipe",
                recipe,
                "--scale-profile",
                profile,
                "--results",
                str(results),
                "--bundle",
                yaml.safe_load((results / "run.yaml").read_text())["bundleDigest"],
                "--sample",
                "--catalog",
                catalog,
                "-o",
                str(statement),
            ],
        )
        assert res.exit_code == verdict, res.output
        issuer, identity = SIGNERS[signer]
        res = runner.invoke(
            main,
            [
                "evidence",
                "sign",
                str(statement),
                "--trust-root",
                "demo",
                "--identity",
                identity,
                "--issuer",
                issuer,
                "--into",
                str(tmp_path / "cli"),
                "--catalog",
                catalog,
            ],
        )
        assert res.exit_code == 0, res.output
    made = sorted(
        p.relative_to(tmp_path / "cli") for p in (tmp_path / "cli").rglob("*.sigstore.json")
    )
    assert len(made) == 2
    for rel in made:
        assert (tmp_path / "cli" / rel).read_bytes() == (tmp_path / "gen" / rel).read_bytes()


def test_check_lanes_locates_ladder_problems_in_the_profile() -> None:
    from dataclasses import replace

    from generator.scale.qualify import check_lanes

    catalog, _ = load_catalog(REPO / "catalog")
    assert check_lanes(catalog.documents, catalog.profiles) == ()
    std = catalog.profiles["standard"]
    broken = replace(std, ladder=("lane-72", "lane-36", "lane-4608"))
    diags = check_lanes(catalog.documents, {"standard": broken})
    assert sorted((d.path, d.json_path, d.rule, d.message) for d in diags) == [
        (
            "scale/profiles/standard.yaml",
            "$.spec.ladder[0]",
            "ladder.above-band",
            "'lane-72' needs 72 nodes, above the profile's band (1–36)",
        ),
        (
            "scale/profiles/standard.yaml",
            "$.spec.ladder[1]",
            "ladder.order",
            "ladder must climb: 'lane-36' comes after a larger lane",
        ),
        (
            "scale/profiles/standard.yaml",
            "$.spec.ladder[2]",
            "ladder.unknown-lane",
            "unknown lane 'lane-4608'; lanes: " + ", ".join(LADDER),
        ),
    ]
    assert all(d.line > 0 for d in diags)
    missing = {k: v for k, v in catalog.documents.items() if k != "scale/lanes.yaml"}
    (d,) = check_lanes(missing, catalog.profiles)
    assert (d.path, d.rule) == ("scale/lanes.yaml", "lanes.missing")


def test_check_lanes_keeps_the_ladder_and_the_band_in_step() -> None:
    """Issue 18 item 4: a ladder lane below the band, and a band above the ladder's top lane."""
    from dataclasses import replace

    from generator.scale.qualify import check_lanes

    catalog, _ = load_catalog(REPO / "catalog")
    large = catalog.profiles["nvl72-2304"]
    assert (large.nodes_min, large.nodes_max, large.ladder[0]) == (36, 2304, "lane-36")
    below = replace(large, nodes_min=37)  # the band of nvl72-2304 1.1.0 with its own ladder
    diags = check_lanes(catalog.documents, {"nvl72-2304": below})
    assert [(d.json_path, d.rule, d.message) for d in diags] == [
        (
            "$.spec.ladder[0]",
            "ladder.below-band",
            "'lane-36' runs on 36 nodes, below the profile's band (37–2304): lower "
            "spec.nodes.min to 36 or drop the lane",
        )
    ]
    short = replace(large, ladder=large.ladder[:-1])
    (d,) = check_lanes(catalog.documents, {"nvl72-2304": short})
    assert (d.path, d.json_path, d.rule) == (
        "scale/profiles/nvl72-2304.yaml",
        "$.spec.nodes",
        "ladder.band-uncovered",
    )
    assert "top lane runs on 1152" in d.message and d.line > 0


def test_the_statement_binds_the_preflight_report_and_the_bundle(lanes: Lanes) -> None:
    """Issue 18 item 5: both digests are in the statement; without a passing preflight of the
    same recipe, profile version and snapshot, or with another bundle, the run cannot pass."""
    import hashlib
    from dataclasses import replace

    run = load_run("lane-36-pass", lanes)
    ok = judge(lanes, "lane-36-pass", "lane-36")
    assert ok.verdict == "pass", ok.reasons
    raw = (RUNS / "lane-36-pass" / "preflight.json").read_bytes()
    assert ok.predicate["preflight"] == {
        "digest": "sha256:" + hashlib.sha256(raw).hexdigest(),
        "exitCode": 0,
        "snapshotDigest": run.snapshot_digest,
    }
    assert ok.predicate["bundleDigest"] == BUNDLE.digest
    assert run.preflight is not None

    def reasons(r: RunResults, bundle: BundleBinding = BUNDLE) -> tuple[str, ...]:
        q = qualify(lanes, "lane-36", fixture_recipe(), LADDER, r, bundle=bundle, attested_at=WHEN)
        assert q.verdict == "fail"
        return q.reasons

    assert reasons(replace(run, preflight=None)) == (
        "no preflight report (preflight.json): run `aicr-catalog preflight --format json` on "
        "the run's snapshot.yaml",
    )
    assert reasons(replace(run, preflight=replace(run.preflight, exit_code=3))) == (
        "preflight did not pass (exit 3)",
    )
    other = replace(run.preflight, recipe_digest="sha256:" + "cd" * 32, profile_version="0.9.0")
    assert reasons(replace(run, preflight=other)) == (
        f"the preflight report is for recipe digest sha256:{'cd' * 32}, not sha256:{'ab' * 32}",
        "the preflight report is for scale profile nvl72-2304 0.9.0, not nvl72-2304 1.0.0",
    )
    assert reasons(replace(run, snapshot_digest="sha256:" + "00" * 32))[0].startswith(
        "the preflight report was not run on the run's snapshot.yaml"
    )
    stranger = BundleBinding("sha256:" + "11" * 32, "sha256:" + "22" * 32, "standard", "1.0.0")
    assert reasons(run, stranger) == (
        f"run.yaml says bundle {BUNDLE.digest}, qualify was given sha256:{'11' * 32}",
        f"the bundle was rendered from recipe digest sha256:{'22' * 32}, not sha256:{'ab' * 32}",
        "the bundle was rendered with scale profile standard 1.0.0",
    )


def test_bundle_binding_reads_the_archive_it_is_given(tmp_path: Path) -> None:
    import hashlib

    from generator.catalog.manifests import read_manifests
    from generator.render import render_bundle
    from generator.render.archive import archive_bytes
    from generator.scale.qualify import bundle_binding

    catalog, _ = load_catalog(REPO / "catalog")
    recipe = resolve(catalog, "gb300-eks-ubuntu-training-slurm", profile="nvl72-2304")
    data = archive_bytes(render_bundle(recipe, "helm", read_manifests(catalog, recipe)), "b")
    path = tmp_path / "b.tar.gz"
    path.write_bytes(data)
    b = bundle_binding(str(path), lambda p: Path(p).read_bytes())
    assert b == BundleBinding("sha256:" + hashlib.sha256(data).hexdigest(), recipe.digest,
                              "nvl72-2304", recipe.scale_profile_version)  # fmt: skip
    assert bundle_binding("sha256:" + "ef" * 32, lambda p: b"") == BundleBinding(
        "sha256:" + "ef" * 32
    )
    with pytest.raises(UsageError, match="not sha256"):
        bundle_binding("sha256:xyz", lambda p: b"")
    (tmp_path / "junk.tar.gz").write_bytes(b"junk")
    with pytest.raises(UsageError, match="not a bundle archive"):
        bundle_binding(str(tmp_path / "junk.tar.gz"), lambda p: Path(p).read_bytes())


def _sample_statements() -> dict[tuple[str, str, str, str, str], str]:
    """(recipe, profile, version, lane, verdict) -> evidence path relative to evidence/."""
    import base64

    out = {}
    for f in sorted((REPO / "evidence").rglob("*.sigstore.json")):
        payload = json.loads(f.read_bytes())["dsseEnvelope"]["payload"]
        p = json.loads(base64.b64decode(payload))["predicate"]
        key = (p["recipe"]["name"], p["scaleProfile"]["name"], p["scaleProfile"]["version"],
               p["lane"]["name"], p["verdict"])  # fmt: skip
        out.setdefault(key, f.relative_to(REPO / "evidence").as_posix())
    return out


def _qualified_catalog(tmp_path: Path, evidence: list[str] | None) -> Path:
    import shutil

    root = tmp_path / "repo"
    shutil.copytree(REPO / "catalog", root / "catalog")
    shutil.copytree(REPO / "evidence", root / "evidence")
    prof = root / "catalog" / "scale" / "profiles" / "nvl72-2304.yaml"
    text = prof.read_text()
    old = "      driver.upgradePolicy.maxParallelUpgrades:\n        value: 18\n"
    assert old in text
    block = "        status: qualified\n"
    if evidence is not None:
        block += "        evidence:\n" + "".join(f"          - {e}\n" for e in evidence)
    text = text.replace(old, old + block, 1)
    # the rationale's own `status: proposed` of that value follows; drop it
    head, sep, tail = text.partition(old + block)
    tail = tail.replace("        status: proposed\n", "", 1)
    prof.write_text(head + sep + tail)
    return root


def _validate(root: Path, *extra: str) -> tuple[int, str]:
    res = CliRunner().invoke(main, ["validate", "--catalog", str(root / "catalog"), *extra])
    return res.exit_code, res.output


def test_a_qualified_owned_value_needs_counted_evidence_at_its_profile_version(
    tmp_path: Path,
) -> None:
    """Issue 18 item 5: `status: qualified` requires a reference to counted evidence, which
    validate verifies against the evidence directory."""
    st = _sample_statements()
    good = st[("gb300-eks-ubuntu-training-slurm", "nvl72-2304", "1.2.0", "lane-36", "pass")]
    standard = st[("gb300-eks-ubuntu-training-slurm", "standard", "1.0.0", "lane-36", "pass")]
    failing = st[("gb200-eks-ubuntu-training-kubeflow", "nvl72-2304", "1.2.0", "lane-144", "fail")]

    code, out = _validate(_qualified_catalog(tmp_path / "none", None), "--trust-root", "demo")
    assert code == 1
    assert "nvl72-2304.yaml" in out and "evidence" in out  # the schema's if/then: evidence required

    root = _qualified_catalog(tmp_path / "good", [good])
    code, out = _validate(root, "--trust-root", "demo")
    assert code == 0, out
    code, out = _validate(root)  # the public-good root does not verify demo-signed samples
    assert code == 1 and "[scale.qualified-evidence]" in out and "not verified" in out

    missing = "gb300-eks-ubuntu-training-slurm/" + "0" * 32 + "/" + "1" * 64 + ".sigstore.json"
    root = _qualified_catalog(tmp_path / "bad", [standard, failing, missing])
    code, out = _validate(root, "--trust-root", "demo")
    assert code == 1
    lines = [ln for ln in out.splitlines() if "[scale.qualified-evidence]" in ln]
    assert len(lines) == 3, out
    assert any("it qualifies scale profile standard 1.0.0" in ln for ln in lines)
    assert any("its verdict is fail" in ln for ln in lines)
    assert any("no such evidence file" in ln for ln in lines)
    assert all(ln.startswith("scale/profiles/nvl72-2304.yaml:") for ln in lines)
    assert all("['driver.upgradePolicy.maxParallelUpgrades'].evidence[" in ln for ln in lines)
    assert all(not ln.startswith("scale/profiles/nvl72-2304.yaml:0:") for ln in lines)

    no_dir = _qualified_catalog(tmp_path / "nodir", [good])
    import shutil

    shutil.rmtree(no_dir / "evidence")
    code, out = _validate(no_dir, "--trust-root", "demo")
    assert code == 1 and "cannot be checked without the evidence directory" in out
