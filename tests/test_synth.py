"""Synthetic catalogs: shape, determinism, validity, and evidence that verifies with its root."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from generator.bench.synth import (
    MARKER,
    SynthOptions,
    catalog_files,
    leaves,
    plan_evidence,
    synthesize,
)
from generator.catalog.load import load_catalog
from generator.catalog.resolve import resolve
from generator.cli import main
from generator.core.cache import tree_digest
from generator.core.errors import Severity, UsageError
from generator.evidence.model import FailureClass, RejectedEvidence, VerifiedEvidence
from generator.evidence.stage import verify_stage
from generator.validate import validate_catalog

RECIPES, EVIDENCE = 12, 40


@pytest.fixture(scope="module")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("synth")
    synthesize(SynthOptions(RECIPES, EVIDENCE, seed=3, jobs=1), out)
    return out


def test_leaves_are_distinct_and_counted() -> None:
    for n in (1, 4, 7, 100, 1000):
        names = [leaf.name for leaf in leaves(n)]
        assert len(names) == len(set(names)) == n


def test_a_thousand_leaves_extend_the_criteria_values() -> None:
    files = catalog_files(1000)
    overlays = [r for r in files if r.startswith("overlays/")]
    criteria = yaml.safe_load(files["criteria.yaml"])
    assert criteria["kind"] == "CriteriaValues"
    assert criteria["apiVersion"] == "catalog.aicr.run/v1alpha1"
    assert criteria["spec"]["os"] and criteria["spec"]["platform"]
    # base + eks + 2 service-intent + 4 accel-service-intent + OS-level + 1000 leaves
    assert len(overlays) > 1000
    assert "scale/profiles/nvl72-2304.yaml" in files and "scale/profiles/standard.yaml" in files


def test_catalog_validates_strictly_and_every_leaf_has_both_profiles(synth: Path) -> None:
    catalog, load_diags = load_catalog(synth / "catalog")
    diags = validate_catalog(catalog, strict=True, load_diagnostics=load_diags)
    assert [d.format() for d in diags if d.severity is Severity.ERROR] == []
    assert len(catalog.leaves()) == RECIPES
    assert set(catalog.profiles) == {"standard", "nvl72-2304"}
    leaf = catalog.leaves()[0]
    chain = resolve(catalog, leaf, profile="nvl72-2304").applied_overlays
    assert len(chain) == 6 and chain[0] == "base" and chain[-1] == leaf  # base → ... → leaf
    for leaf in catalog.leaves():
        big = resolve(catalog, leaf, profile="nvl72-2304")
        assert big.scale_profile == "nvl72-2304"
        assert len(big.mixins) == 2
        assert any(c.name.startswith("synth-") and c.values_files for c in big.components)


def test_evidence_verifies_with_the_generated_root(synth: Path) -> None:
    run = verify_stage(
        [synth / "evidence"],
        catalog_dir=synth / "catalog",
        trust_roots=(str(synth / "trust" / "synth-root.json"),),
        base=synth,
        jobs=1,
    )
    assert len(run.records) == EVIDENCE
    verified = [r for r in run.records if isinstance(r, VerifiedEvidence)]
    rejected = [r for r in run.records if isinstance(r, RejectedEvidence)]
    kinds = Counter(
        r.kind
        for r in plan_evidence(
            [leaf.name for leaf in leaves(RECIPES)],
            EVIDENCE,
            3,
            {"standard": ("lane-36",), "nvl72-2304": ("lane-36", "lane-72")},
        )
    )
    # every rejection is the unallowlisted lab; everything else verifies
    assert {r.klass for r in rejected} <= {FailureClass.SIGNER_NOT_ALLOWED}
    assert len(rejected) == kinds["unlisted"]
    assert sum(r.stale for r in verified) == kinds["stale"] > 0
    assert not any(r.sample for r in verified)
    verdicts = Counter(r.statement.verdict for r in verified)
    assert verdicts["pass"] > 0 and verdicts["fail"] > 0
    assert len({r.statement.recipe for r in verified}) == RECIPES
    assert {r.statement.scale_profile for r in verified} == {"standard", "nvl72-2304"}
    assert len({r.signer_identity for r in verified}) > 3


def test_evidence_is_rejected_under_another_root(synth: Path) -> None:
    run = verify_stage(
        [next((synth / "evidence").rglob("*.sigstore.json"))],
        catalog_dir=synth / "catalog",
        trust_roots=("public-good",),
        base=synth,
        jobs=1,
    )
    assert isinstance(run.records[0], RejectedEvidence)


def test_same_seed_same_bytes_any_jobs(synth: Path, tmp_path: Path) -> None:
    again = tmp_path / "again"
    synthesize(SynthOptions(RECIPES, EVIDENCE, seed=3, jobs=2), again)
    assert tree_digest(again) == tree_digest(synth)
    other = tmp_path / "other"
    synthesize(SynthOptions(RECIPES, EVIDENCE, seed=4, jobs=1), other)
    # the catalog does not depend on the seed, but for the trust root the signers are bound to
    # (named by its digest, the root's keys derive from the seed)
    signers = [(d / "catalog" / "signers.yaml").read_text() for d in (other, synth)]
    for d in (other, synth):
        (d / "catalog" / "signers.yaml").unlink()
    assert tree_digest(other / "catalog") == tree_digest(synth / "catalog")
    assert tree_digest(other / "evidence") != tree_digest(synth / "evidence")
    changed = [
        (a, b)
        for a, b in zip(signers[0].splitlines(), signers[1].splitlines(), strict=True)
        if a != b
    ]
    assert changed and all(a.strip().startswith("trustRoot: sha256:") for a, _ in changed)
    (synth / "catalog" / "signers.yaml").write_text(signers[1])


def test_pool_signing_gives_the_same_bytes(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    synthesize(SynthOptions(4, 110, seed=1, jobs=1), one)
    synthesize(SynthOptions(4, 110, seed=1, jobs=2), two)  # 110 runs: a pool of 2
    assert len(list((two / "evidence").rglob("*.sigstore.json"))) == 110
    assert tree_digest(one) == tree_digest(two)


def test_refuses_a_directory_it_did_not_write(tmp_path: Path) -> None:
    (tmp_path / "catalog").mkdir()
    (tmp_path / "catalog" / "precious.yaml").write_text("keep me")
    with pytest.raises(UsageError, match=r"not marked as this tool.s synth output"):
        synthesize(SynthOptions(2, 0), tmp_path)
    assert (tmp_path / "catalog" / "precious.yaml").read_text() == "keep me"


def test_rewrites_its_own_directory(tmp_path: Path) -> None:
    synthesize(SynthOptions(3, 0), tmp_path)
    (tmp_path / "catalog" / "stray.yaml").write_text("x")
    synthesize(SynthOptions(2, 0), tmp_path)
    assert (tmp_path / MARKER).is_file()
    assert not (tmp_path / "catalog" / "stray.yaml").exists()
    assert len(list((tmp_path / "catalog" / "overlays").glob("*-*-*-*-*.yaml"))) == 2


def test_cli_transcript_and_usage(tmp_path: Path) -> None:
    out = tmp_path / "s"
    result = CliRunner().invoke(
        main,
        [
            "synth",
            "--recipes",
            "4",
            "--evidence",
            "6",
            "--seed",
            "2",
            "--jobs",
            "1",
            "-o",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith(f"synthesized {out}/: 4 leaf recipes, ")
    assert "6 evidence files" in lines[0]
    assert lines[1] == (
        f"build it: aicr-catalog build --catalog {out}/catalog --evidence {out}/evidence "
        f"--trust-root {out}/trust/synth-root.json"
    )
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "x").write_text("x")
    refused = CliRunner().invoke(main, ["synth", "--recipes", "2", "-o", str(tmp_path / "busy")])
    assert refused.exit_code == 2
    assert CliRunner().invoke(main, ["synth", "--recipes", "0", "-o", str(out)]).exit_code == 2
