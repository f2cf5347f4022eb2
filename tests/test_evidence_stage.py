"""The verify stage in one call (`verify_stage`): files, policy, roots, verification, current digests."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from generator.catalog.load import load_catalog
from generator.catalog.resolve import resolve
from generator.core.errors import UsageError
from generator.evidence.model import (
    Evidence,
    FailureClass,
    RejectedEvidence,
    RunState,
    VerifiedEvidence,
)
from generator.evidence.sign import DEMO_IDENTITY, DEMO_ISSUER, demo_authority, sign_offline
from generator.evidence.stage import (
    VerificationRun,
    current_digests,
    signer_policy,
    verify_stage,
)
from generator.evidence.statement import build_statement
from generator.evidence.store import evidence_path
from tests import evidence_fixtures as fx
from tests.conftest import CATALOG


def _write(repo: Path, recipe: str, digest: str, profile: str = "standard") -> Path:
    data = build_statement(
        fx.predicate(
            recipe={"name": recipe, "digest": digest},
            scaleProfile={"name": profile, "version": "1.0.0"},
            sample=True,
        )
    )
    path = repo / evidence_path(recipe, DEMO_ISSUER, DEMO_IDENTITY, data)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(sign_offline(data, demo_authority(CATALOG)))
    return path


def test_verify_stage_resolves_only_what_the_statements_name(tmp_path: Path) -> None:
    catalog, _ = load_catalog(CATALOG)
    leaf = catalog.leaves()[0]
    digest = resolve(catalog, leaf).digest
    _write(tmp_path, leaf, digest)
    _write(tmp_path, "no-such-recipe", "sha256:" + "4" * 64)
    (tmp_path / "evidence" / "junk.sigstore.json").write_text("[]")
    run = verify_stage(
        [tmp_path / "evidence"],
        catalog_dir=CATALOG,
        trust_roots=("demo",),
        catalog=catalog,
        base=tmp_path,
    )
    assert [t.name for t in run.trust_roots] == ["demo"]
    assert [r.path for r in run.records] == sorted(r.path for r in run.records)
    by_recipe = {r.recipe: r for r in run.records}
    current = by_recipe[leaf]
    assert isinstance(current, VerifiedEvidence) and current.counted and current.sample
    gone = by_recipe["no-such-recipe"]
    assert isinstance(gone, VerifiedEvidence) and gone.stale and gone.current_digest is None
    junk = by_recipe[None]
    assert isinstance(junk, RejectedEvidence) and junk.klass is FailureClass.MALFORMED_BUNDLE
    assert len(run.files) == 3


def test_current_digests_is_keyed_by_recipe_and_profile(tmp_path: Path) -> None:
    catalog, _ = load_catalog(CATALOG)
    leaf = catalog.leaves()[0]
    _write(tmp_path, leaf, "sha256:" + "5" * 64)
    run = verify_stage([tmp_path], catalog_dir=CATALOG, trust_roots=("demo",), catalog=catalog)
    assert current_digests(run.records, catalog) == {
        f"{leaf}@standard": resolve(catalog, leaf).digest
    }


def test_an_unknown_trust_root_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError):
        verify_stage([tmp_path], catalog_dir=CATALOG, trust_roots=(str(tmp_path / "none.json"),))


# -- one path: `evidence verify`, `status` and `build` all verify through `verify_stage` -------


def _spy(monkeypatch: pytest.MonkeyPatch, module: object) -> list[VerificationRun]:
    """Record every run `module` gets from `verify_stage` (the real one)."""
    runs: list[VerificationRun] = []

    def spy(*args: Any, **kwargs: Any) -> VerificationRun:
        run = verify_stage(*args, **kwargs)
        runs.append(run)
        return run

    monkeypatch.setattr(module, "verify_stage", spy)
    return runs


def _states(records: Sequence[Evidence]) -> dict[str, tuple[RunState, str | None]]:
    return {r.path: (RunState.of(r), str(r.klass) if r.klass else None) for r in records}


def test_the_cli_status_and_the_site_verify_through_verify_stage_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from generator import pipeline
    from generator.cli import main
    from generator.commands import evidence as evidence_cmd
    from generator.commands import status as status_cmd
    from generator.evidence import stage as evidence_stage  # the pipeline imports it to verify

    catalog, _ = load_catalog(CATALOG)
    leaf = catalog.leaves()[0]
    _write(tmp_path, leaf, resolve(catalog, leaf).digest)  # current
    _write(tmp_path, leaf, "sha256:" + "6" * 64)  # stale
    (tmp_path / "evidence" / leaf / "junk.sigstore.json").write_text("[]")  # rejected
    evidence = tmp_path / "evidence"
    monkeypatch.chdir(tmp_path)

    cli_runs, pipeline_runs = _spy(monkeypatch, evidence_cmd), _spy(monkeypatch, evidence_stage)
    assert not hasattr(status_cmd, "verify_stage")  # status verifies through the pipeline
    args = ["--catalog", str(CATALOG), "--trust-root", "demo"]
    verify = CliRunner().invoke(main, ["evidence", "verify", str(evidence), *args, "--jobs", "1"])
    assert verify.exit_code == 1, verify.output  # one stale, one rejected
    status = CliRunner().invoke(main, ["status", leaf, *args, "--evidence", str(evidence)])
    assert status.exit_code == 0, status.output
    # the site's run: the same pipeline over every recipe (what `build` asks of it)
    outcome = pipeline.run(pipeline.Inputs(CATALOG, evidence, ("demo",), jobs=1))

    assert len(cli_runs) == 1 and len(pipeline_runs) == 2
    (cli,), (st, site) = cli_runs, pipeline_runs
    assert outcome.verification.records == site.records
    # the same files, judged the same way (paths are shown relative to where each looked from)
    by_name = [
        {Path(p).name: s for p, s in _states(run.records).items()} for run in (cli, st, site)
    ]
    assert by_name[0] == by_name[1] == by_name[2]
    assert sorted(s for s, _ in by_name[0].values()) == sorted(RunState)
    # one policy, from the catalog `load` read (status and build) or its directory (the CLI)
    assert {r.signer_label for r in site.records if isinstance(r, VerifiedEvidence)} == {
        r.signer_label for r in cli.records if isinstance(r, VerifiedEvidence)
    }


def test_the_loaded_signer_policy_is_the_one_on_disk() -> None:
    catalog, _ = load_catalog(CATALOG)
    assert signer_policy(CATALOG, catalog) == signer_policy(CATALOG)
    assert signer_policy(CATALOG, catalog).rules  # this project's signers.yaml allows someone


def test_a_loaded_catalog_without_signers_allows_nobody(tmp_path: Path) -> None:
    catalog, _ = load_catalog(CATALOG)
    bare = dataclasses.replace(
        catalog, documents={k: v for k, v in catalog.documents.items() if k != "signers.yaml"}
    )
    assert signer_policy(tmp_path, bare).rules == ()


def test_the_cli_json_and_the_api_show_one_record_alike(tmp_path: Path) -> None:
    """`evidence verify --format json` and api/v1/evidence/<recipe>.json: one record, one JSON form; the
    CLI adds the digest it compared with, the API where the site publishes the file."""
    from generator.evidence.report import record_json
    from generator.evidence.view import RawFile, evidence_view
    from generator.site.api import run_json

    raw = RawFile("/evidence/x.sigstore.json", "/evidence", "0" * 64, 2, False)

    catalog, _ = load_catalog(CATALOG)
    leaf = catalog.leaves()[0]
    _write(tmp_path, leaf, resolve(catalog, leaf).digest)
    (tmp_path / "evidence" / leaf / "junk.sigstore.json").write_text("[]")
    run = verify_stage([tmp_path / "evidence"], catalog_dir=CATALOG, trust_roots=("demo",))
    assert len(run.records) == 2
    for record in run.records:
        cli = record_json(record)
        api = run_json(evidence_view(record, trust_root="", raw=raw))
        assert {k: v for k, v in cli.items() if k != "currentDigest"} == {
            k: v for k, v in api.items() if k not in ("url", "raw")
        }, record.path
        assert set(cli["tlog"]) == {"index", "integratedTime"}
        if record.counted:
            assert cli["signer"]["class"] == "first-party" and cli["currentDigest"]
