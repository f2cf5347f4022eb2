"""`aicr-catalog preflight` end to end: the real catalog, the sample snapshots, text and JSON."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml
from click.testing import CliRunner, Result

from generator.catalog import schemas
from generator.catalog.load import load_catalog
from generator.catalog.resolve import resolve
from generator.cli import main
from generator.scale.preflight import checkset_from, preflight
from generator.scale.snapshot import parse_snapshot
from tests.conftest import CATALOG

SNAPSHOTS = CATALOG / "scale" / "snapshots"
SMALL = ("gb300-eks-ubuntu-training", "standard", 36)
LARGE = ("gb300-eks-ubuntu-training-slurm", "nvl72-2304", 2304)

# snapshot -> (recipe, profile, nodes), exit code, the failing check ids (exactly)
SAMPLES = {
    "gb300-eks-36-healthy.yaml": (SMALL, 0, set()),
    "gb300-eks-36-catalog-defect.yaml": (SMALL, 1, {"ds.dra-kubelet-plugin"}),
    "gb300-eks-36-infra-defect.yaml": (SMALL, 3, {"conntrack-max"}),
    "gb300-eks-2304-healthy.yaml": (LARGE, 0, set()),
    "gb300-eks-2304-catalog-defect.yaml": (LARGE, 1, {"ds.gpu-driver"}),
    "gb300-eks-2304-infra-defect.yaml": (LARGE, 3, {"coredns-replicas"}),
    "gb300-eks-2304-mixed-defects.yaml": (LARGE, 1, {"ds.gpu-driver", "coredns-replicas"}),
}
OWNERS = {
    "ds.dra-kubelet-plugin": "catalog",
    "ds.gpu-driver": "catalog",
    "conntrack-max": "infrastructure",
    "coredns-replicas": "infrastructure",
}


def run(*args: str) -> Result:
    return CliRunner().invoke(main, ["preflight", "--catalog", str(CATALOG), *args])


def args_for(snapshot: str) -> list[str]:
    (recipe, profile, nodes), _, _ = SAMPLES[snapshot]
    return [
        "--recipe", recipe, "--scale-profile", profile, "--nodes", str(nodes),
        "--snapshot", str(SNAPSHOTS / snapshot),
    ]  # fmt: skip


def test_every_sample_snapshot_is_covered() -> None:
    assert sorted(p.name for p in SNAPSHOTS.glob("*.yaml")) == sorted(SAMPLES)


@pytest.mark.parametrize("snapshot", sorted(SAMPLES))
def test_sample_json_findings_exit_code_and_schema(snapshot: str) -> None:
    _, code, failing = SAMPLES[snapshot]
    res = run(*args_for(snapshot), "--format", "json")
    assert res.exit_code == code, res.output
    doc = json.loads(res.stdout)
    jsonschema.Draft202012Validator(schemas.schema("preflight-report")).validate(doc)
    failed = {f["id"] for f in doc["findings"] if f["result"] == "fail"}
    assert failed == failing
    assert {f["id"]: f["owner"] for f in doc["findings"] if f["id"] in failed} == {
        i: OWNERS[i] for i in failing
    }
    assert not [f["id"] for f in doc["findings"] if f["result"] == "unavailable"]
    assert doc["summary"]["exitCode"] == code
    assert doc["snapshot"] == snapshot
    assert doc["summary"]["checks"] >= 20


@pytest.mark.parametrize("snapshot", sorted(SAMPLES))
def test_sample_text_reports_the_same_findings(snapshot: str) -> None:
    _, code, failing = SAMPLES[snapshot]
    res = run(*args_for(snapshot))
    assert res.exit_code == code
    lines = res.stdout.splitlines()
    failed = {line.split()[3] for line in lines if line.startswith("FAIL ")}
    assert failed == failing
    assert lines[-1].startswith(f"exit {code}: ")
    assert not any(line.startswith("UNAVAILABLE") for line in lines)


def test_large_healthy_cluster_runs_every_check() -> None:
    res = run(*args_for("gb300-eks-2304-healthy.yaml"), "--format", "json")
    doc = json.loads(res.stdout)
    assert doc["summary"]["skipped"] == 0
    assert {f["source"] for f in doc["findings"]} == {"recipe", "profile", "catalog"}
    assert doc["scaleProfile"] == {"name": "nvl72-2304", "version": "1.2.0"}
    assert doc["nodes"] == {"declared": 2304, "observed": 2304}


def _readings(name: str) -> dict[str, object]:
    return dict(parse_snapshot((SNAPSHOTS / name).read_bytes(), name).readings)


@pytest.mark.parametrize("size", ["36", "2304"])
@pytest.mark.parametrize("variant", ["catalog-defect", "infra-defect"])
def test_each_variant_differs_from_its_healthy_cluster_in_one_reading_group(
    size: str, variant: str
) -> None:
    healthy = _readings(f"gb300-eks-{size}-healthy.yaml")
    other = _readings(f"gb300-eks-{size}-{variant}.yaml")
    changed = {k for k in healthy.keys() | other.keys() if healthy.get(k) != other.get(k)}
    # one defect: one reading, or the desired/ready pair of one daemonset
    assert len({k.rsplit(".", 1)[0] if ".daemonset." in k else k for k in changed}) == 1


def test_the_mixed_variant_is_exactly_both_single_defects() -> None:
    healthy = _readings("gb300-eks-2304-healthy.yaml")
    mixed = _readings("gb300-eks-2304-mixed-defects.yaml")
    for variant in ("catalog-defect", "infra-defect"):
        single = _readings(f"gb300-eks-2304-{variant}.yaml")
        for k, v in single.items():
            if healthy[k] != v:
                assert mixed[k] == v
    changed = {k for k in healthy if healthy[k] != mixed[k]}
    assert len(changed) == 3  # the driver daemonset's desired and ready, and CoreDNS replicas


def test_the_large_cluster_with_the_standard_profile_is_a_catalog_defect() -> None:
    """Without the scale profile, the owned settings are wrong for 2,304 nodes: exit 1."""
    res = run(
        "--recipe", LARGE[0], "--snapshot", str(SNAPSHOTS / "gb300-eks-2304-healthy.yaml"),
        "--format", "json",
    )  # fmt: skip
    assert res.exit_code == 1
    doc = json.loads(res.stdout)
    failed = {f["id"] for f in doc["findings"] if f["result"] == "fail"}
    assert {f["owner"] for f in doc["findings"] if f["id"] in failed} == {"catalog"}
    assert {
        "profile-band", "gpu-operator.rollout-waves", "gpu-operator.driver-upgrade-budget",
        "gpu-operator.driver-upgrade-waves", "gpu-operator.dcgm-scrape-interval",
        "nfd.master-parallelism", "nfd.worker-rollout-waves", "nodewright.memory-floor",
        "nodewright.interruption-budget", "nvsentinel.platform-connector-waves",
        "nvsentinel.circuit-breaker", "dra.kubelet-plugin-priority", "prometheus.memory-capacity",
        "prometheus.storage-capacity", "kube-state-metrics.sharding",
        "slurm.tree-width", "slurm.slurmd-timeout", "dra.client-qps",
    } <= failed  # fmt: skip
    # the recipe's nodeset runs in DaemonSet mode at every profile: it follows the cluster
    replicas = next(f for f in doc["findings"] if f["id"] == "slurm.nodeset-replicas")
    assert (replicas["result"], replicas["observed"]) == ("pass", 2304)


def test_criteria_form_of_recipe_resolves_the_same_recipe() -> None:
    snap = str(SNAPSHOTS / "gb300-eks-36-healthy.yaml")
    by_name = run("--recipe", SMALL[0], "--snapshot", snap, "--format", "json")
    by_criteria = run(
        "--recipe", "service=eks,accelerator=gb300,os=ubuntu,intent=training",
        "--snapshot", snap, "--format", "json",
    )  # fmt: skip
    assert by_name.exit_code == by_criteria.exit_code == 0
    assert json.loads(by_name.stdout) == json.loads(by_criteria.stdout)


def test_output_is_deterministic() -> None:
    a = run(*args_for("gb300-eks-2304-catalog-defect.yaml"), "--format", "json")
    b = run(*args_for("gb300-eks-2304-catalog-defect.yaml"), "--format", "json")
    assert a.stdout == b.stdout
    assert str(CATALOG) not in a.stdout and "/" not in json.loads(a.stdout)["snapshot"]


def test_cli_matches_the_engine() -> None:
    catalog, _ = load_catalog(CATALOG)
    result = resolve(catalog, SMALL[0], profile="standard", nodes=36)
    snap = parse_snapshot((SNAPSHOTS / "gb300-eks-36-infra-defect.yaml").read_bytes(), "x.yaml")
    report = preflight(
        result, catalog.profiles["standard"],
        checkset_from(catalog.documents["scale/checks.yaml"]), snap, 36,
    )  # fmt: skip
    doc = json.loads(run(*args_for("gb300-eks-36-infra-defect.yaml"), "--format", "json").stdout)
    assert [f.id for f in report.findings] == [f["id"] for f in doc["findings"]]
    assert report.exit_code == doc["summary"]["exitCode"] == 3


# ---------------------------------------------------------------------------------------------
# usage and unreadable input: exit 2


def test_nodes_outside_the_band_is_a_usage_error_naming_the_covering_profile() -> None:
    res = run(
        "--recipe", LARGE[0], "--nodes", "2304",
        "--snapshot", str(SNAPSHOTS / "gb300-eks-2304-healthy.yaml"),
    )  # fmt: skip
    assert res.exit_code == 2
    assert "nvl72-2304" in res.stderr and "standard" in res.stderr
    assert res.stdout == ""


def test_profile_that_does_not_apply_is_a_usage_error() -> None:
    res = run(
        "--recipe", "service=eks,accelerator=h100,intent=training",
        "--scale-profile", "nvl72-2304", "--snapshot", str(SNAPSHOTS / "gb300-eks-2304-healthy.yaml"),
    )  # fmt: skip
    assert res.exit_code == 2
    assert "does not apply" in res.stderr


def test_missing_snapshot_file_exits_2() -> None:
    res = run("--recipe", SMALL[0], "--snapshot", "/nonexistent/snapshot.yaml")
    assert res.exit_code == 2
    assert "cannot read snapshot" in res.stderr


def test_invalid_snapshot_exits_2_with_located_diagnostics(tmp_path: Path) -> None:
    doc = yaml.safe_load((SNAPSHOTS / "gb300-eks-36-healthy.yaml").read_text())
    doc["kind"] = "RecipeResult"
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(doc))
    res = run("--recipe", SMALL[0], "--snapshot", str(bad))
    assert res.exit_code == 2
    assert "bad.yaml:" in res.stderr and "[snapshot.header]" in res.stderr


def test_unknown_recipe_and_profile_exit_2() -> None:
    snap = str(SNAPSHOTS / "gb300-eks-36-healthy.yaml")
    assert run("--recipe", "no-such-recipe", "--snapshot", snap).exit_code == 2
    res = run("--recipe", SMALL[0], "--scale-profile", "no-such-profile", "--snapshot", snap)
    assert res.exit_code == 2 and "no-such-profile" in res.stderr


@pytest.mark.parametrize(
    "recipe", ["service=eks,colour=blue", "service=", "service=eks,service=aks"]
)
def test_malformed_criteria_exit_2(recipe: str) -> None:
    res = run("--recipe", recipe, "--snapshot", str(SNAPSHOTS / "gb300-eks-36-healthy.yaml"))
    assert res.exit_code == 2


def test_catalog_without_checks_exits_2(tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "catalog"
    shutil.copytree(CATALOG, copy)
    (copy / "scale" / "checks.yaml").unlink()
    res = CliRunner().invoke(
        main,
        ["preflight", "--catalog", str(copy), "--recipe", SMALL[0],
         "--snapshot", str(SNAPSHOTS / "gb300-eks-36-healthy.yaml")],
    )  # fmt: skip
    assert res.exit_code == 2 and "scale/checks.yaml" in res.stderr


def test_help_documents_the_exit_codes() -> None:
    res = CliRunner().invoke(main, ["preflight", "--help"])
    assert res.exit_code == 0
    for code in ("0  no failed", "1  a catalog-owned", "3  infrastructure checks failed",
                 "4  insufficient data", "2  usage"):  # fmt: skip
        assert code in res.output


SEED = "gb300-eks-ubuntu-training-slurm"


@pytest.mark.parametrize(
    ("profile", "snapshot", "code"),
    [
        ("standard", "gb300-eks-36-healthy.yaml", 0),
        ("standard", "gb300-eks-36-catalog-defect.yaml", 1),
        ("standard", "gb300-eks-36-infra-defect.yaml", 3),
        ("nvl72-2304", "gb300-eks-2304-healthy.yaml", 0),
        ("nvl72-2304", "gb300-eks-2304-catalog-defect.yaml", 1),
        ("nvl72-2304", "gb300-eks-2304-infra-defect.yaml", 3),
    ],
)
def test_the_seed_recipe_at_both_profiles_on_its_samples(
    profile: str, snapshot: str, code: int
) -> None:
    """Issue 18 item 1: the seed recipe passes its healthy samples at both profiles, and its
    Slurm nodeset is checked (not skipped, not unavailable) on every one of them."""
    res = run("--recipe", SEED, "--scale-profile", profile, "--snapshot",
              str(SNAPSHOTS / snapshot), "--format", "json")  # fmt: skip
    assert res.exit_code == code, res.output
    doc = json.loads(res.stdout)
    assert doc["summary"]["unavailable"] == 0
    by_id = {f["id"]: f for f in doc["findings"]}
    for check in ("slurm.nodeset-replicas", "ds.slurm-nodeset"):
        assert by_id[check]["result"] == "pass", by_id[check]
    assert by_id["slurm.nodeset-replicas"]["observed"] == doc["nodes"]["observed"]


def test_a_snapshot_of_only_upstreams_readings_is_insufficient_data(tmp_path: Path) -> None:
    """Issue 18 item 3: what upstream's `aicr snapshot` collects leaves most checks without
    data; that is insufficient data (exit 4) with the list, not an infrastructure verdict (3)."""
    full = parse_snapshot((SNAPSHOTS / "gb300-eks-36-healthy.yaml").read_bytes(), "h.yaml")
    upstream = {k: v for k, v in full.readings.items()
                if k.startswith(("GPU.", "OS.")) or k == "K8s.server.version"}  # fmt: skip
    measurements: dict[str, dict[str, dict[str, object]]] = {}
    for path, value in upstream.items():
        mtype, _, rest = path.partition(".")
        sub, _, key = rest.partition(".")
        measurements.setdefault(mtype, {}).setdefault(sub, {})[key] = value
    doc = {"apiVersion": "aicr.run/v1", "kind": "Snapshot", "measurements": [
        {"type": t, "subtypes": [{"subtype": s, "data": d} for s, d in subs.items()]}
        for t, subs in measurements.items()]}  # fmt: skip
    snap = tmp_path / "upstream-only.yaml"
    snap.write_text(yaml.safe_dump(doc))
    res = run("--recipe", SEED, "--snapshot", str(snap), "--format", "json")
    assert res.exit_code == 4, res.output
    report = json.loads(res.stdout)
    missing = {m["reading"]: m for m in report["missingReadings"]}
    assert len(missing) == report["summary"]["missingReadings"] == 17
    assert report["summary"]["unavailable"] > 30 and report["summary"]["fail"] == 0
    needed_by_catalog = {f["id"] for f in report["findings"]
                         if f["owner"] == "catalog" and f["result"] == "unavailable"}  # fmt: skip
    assert "slurm.nodeset-replicas" in needed_by_catalog
    assert missing["K8s.nodes.gpu"]["howToCollect"].startswith("aicr-catalog snapshot")
    assert "K8s.control-plane.tier" not in missing  # an nvl72-2304 prerequisite only
    text = run("--recipe", SEED, "--snapshot", str(snap)).stdout
    assert f"insufficient data: {len(missing)} readings missing\n" in text
    assert "not at fault" not in text
