"""The catalog stage's results as stored (`pipeline.StoredResults`, `pipeline.ResultHead`):
each recipe's results read when first looked up, equal value for value to the results the
stage resolved (the reference: the plain dict `resolve_recipe` gives), and a build after one
evidence file changed reads only the changed recipe's results."""

from __future__ import annotations

import hashlib
import logging
import pickle
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from generator.evidence import store
from generator.pipeline import (
    CatalogInput,
    Resolved,
    ResultHead,
    StoredResults,
    resolve_catalog,
    resolve_recipe,
    results_digest,
)
from generator.site.build import BuildOptions
from generator.site.entry import build_site
from generator.site.model import ResultSource
from tests.conftest import CATALOG, REPO

EPOCH = 1767225600


@pytest.fixture(scope="module")
def resolved() -> Resolved:
    return resolve_catalog(CatalogInput(CATALOG))


def _stored(resolved: Resolved) -> Resolved:
    """The stage's result as a build takes it from the memo: pickled and unpickled."""
    again = pickle.loads(pickle.dumps(resolved, protocol=pickle.HIGHEST_PROTOCOL))
    assert isinstance(again, Resolved)
    return again


def test_stored_results_are_the_resolved_results_value_for_value(resolved: Resolved) -> None:
    reference = {n: resolve_recipe(resolved.catalog, n)[0] for n in resolved.by_recipe}
    assert isinstance(resolved.by_recipe, StoredResults) and len(reference) > 1
    stored = _stored(resolved)
    by_recipe = stored.by_recipe
    assert isinstance(by_recipe, StoredResults)
    before = StoredResults.loaded
    # names, length, membership and heads read no results
    assert list(by_recipe) == list(reference) and len(by_recipe) == len(reference)
    assert all(n in by_recipe for n in reference) and "no-such-recipe" not in by_recipe
    heads = {n: tuple(map(ResultHead.of, rs)) for n, rs in reference.items()}
    assert dict(stored.heads) == heads
    assert stored.result_heads() == tuple(h for hs in heads.values() for h in hs)
    assert StoredResults.loaded == before
    # a forced full load: the reference, value for value, and the digests its pickles'
    assert dict(by_recipe) == reference and by_recipe == reference
    assert StoredResults.loaded == before + len(reference)
    assert stored.results() == tuple(r for rs in reference.values() for r in rs)
    assert dict(stored.digests) == {n: results_digest(rs) for n, rs in reference.items()}
    # equal to the stage's result made from the plain results (heads made from them)
    plain = Resolved(
        resolved.catalog, reference, resolved.failures, resolved.problems, resolved.lanes,
        resolved.digests,
    )  # fmt: skip
    assert plain.heads == stored.heads and plain.results() == stored.results()


@settings(max_examples=25, deadline=None)
@given(order=st.lists(st.integers(min_value=0, max_value=10_000), max_size=12))
def test_any_order_of_lookups_gives_each_recipe_its_results(
    resolved: Resolved, order: list[int]
) -> None:
    names = list(resolved.by_recipe)
    stored = _stored(resolved).by_recipe
    before = StoredResults.loaded
    asked = [names[i % len(names)] for i in order]
    for name in asked:
        assert stored[name] == resolve_recipe(resolved.catalog, name)[0]
    assert StoredResults.loaded == before + len(set(asked))  # each recipe unpickled once


def test_a_result_source_reads_its_result_when_first_used(resolved: Resolved) -> None:
    stored = _stored(resolved).by_recipe
    name = next(iter(stored))
    result = resolve_recipe(resolved.catalog, name)[0][0]
    source = ResultSource(result.digest, lambda: stored[name][0])
    before = StoredResults.loaded
    assert source.digest == result.digest and StoredResults.loaded == before
    assert source.result() == result and StoredResults.loaded == before + 1
    held = ResultSource.held(result)
    assert source == held and source.document() == held.document()
    again = pickle.loads(pickle.dumps(source))
    assert again == held and again.result() == result


def _digests(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _opts(catalog: Path, evidence: Path, out: Path, cached: bool = True) -> BuildOptions:
    return BuildOptions(
        catalog=catalog,
        evidence=evidence,
        out=out,
        trust_root="demo",
        source_date_epoch=EPOCH,
        cache_dir=out.parent / ".cache" / "bundles" if cached else None,
    )


def test_a_one_file_change_reads_only_the_changed_recipes_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    if not any((REPO / "evidence").rglob("*.sigstore.json")):
        pytest.skip("the repository has no sample evidence")
    shutil.copytree(CATALOG, tmp_path / "catalog")
    shutil.copytree(REPO / "evidence", tmp_path / "evidence")
    catalog, evidence = tmp_path / "catalog", tmp_path / "evidence"
    monkeypatch.setattr(store, "SETTLED_NS", 0)
    held = sorted(evidence.rglob("*.sigstore.json"))[0]
    out = tmp_path / "b" / "site"
    first = build_site(_opts(catalog, evidence, out))
    shutil.move(held, tmp_path / "held.sigstore.json")  # one evidence file removed
    caplog.set_level(logging.INFO, logger="aicr_catalog.build")
    monkeypatch.setattr(StoredResults, "loaded", 0)
    second = build_site(_opts(catalog, evidence, out))
    assert "catalog unchanged" in caplog.text
    assert first.recipes > 1 and second.recipes_aggregated == 1, second
    # the removed file's recipe's results are read (its status, pages and API files are
    # made again), no other recipe's
    assert StoredResults.loaded == 1
    scratch = tmp_path / "s" / "site"
    build_site(_opts(catalog, evidence, scratch, cached=False))
    assert _digests(out) == _digests(scratch)
