"""The evidence stage in one call: files, policy, roots, verification, current digests."""

from __future__ import annotations

from pathlib import Path

import pytest

from generator.catalog.load import load_catalog
from generator.catalog.resolve import resolve
from generator.core.errors import UsageError
from generator.evidence.collect import current_digests, verify_paths
from generator.evidence.model import FailureClass, RejectedEvidence, VerifiedEvidence
from generator.evidence.sign import DEMO_IDENTITY, DEMO_ISSUER, demo_authority, sign_offline
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


def test_verify_paths_resolves_only_what_the_statements_name(tmp_path: Path) -> None:
    catalog, _ = load_catalog(CATALOG)
    leaf = catalog.leaves()[0]
    digest = resolve(catalog, leaf).digest
    _write(tmp_path, leaf, digest)
    _write(tmp_path, "no-such-recipe", "sha256:" + "4" * 64)
    (tmp_path / "evidence" / "junk.sigstore.json").write_text("[]")
    run = verify_paths(
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
    run = verify_paths([tmp_path], catalog_dir=CATALOG, trust_roots=("demo",), catalog=catalog)
    assert current_digests(run.records, catalog) == {
        f"{leaf}@standard": resolve(catalog, leaf).digest
    }


def test_an_unknown_trust_root_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError):
        verify_paths([tmp_path], catalog_dir=CATALOG, trust_roots=(str(tmp_path / "none.json"),))
