"""The views stage's stored form (`stages.StoredViews`): each recipe's views with their check and
KPI rows apart, unpickled only when a page or file of the recipe reads them; equal, field by
field, to the views as judged (the reference), and a rebuild after one run changed reads the
rows of that run's recipe alone."""

from __future__ import annotations

import dataclasses
import pickle
import shutil
from pathlib import Path

import pytest

from generator.bench.synth import SynthOptions, synthesize
from generator.evidence import store
from generator.pipeline import Inputs, Outcome, run
from generator.site import stages
from generator.site.build import BuildOptions, build_site
from tests.test_site_incremental import digests


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("synth")
    synthesize(SynthOptions(4, 40, seed=5, jobs=1), out)
    return out


@pytest.fixture(scope="module")
def outcome(world: Path) -> Outcome:
    return run(
        Inputs(world / "catalog", world / "evidence", (str(world / "trust/synth-root.json"),))
    )


def _by_recipe(outcome: Outcome) -> dict[str, tuple[stages.EvidenceView, ...]]:
    judged, _ = stages.judged(outcome, Path(outcome.catalog.root).parent / "evidence")
    groups: dict[str, list[stages.EvidenceView]] = {}
    for v in judged.runs:
        groups.setdefault(v.recipe, []).append(v)
    return {name: stages.shared(tuple(views)) for name, views in groups.items()}


def test_stored_views_load_equal_to_the_views_field_by_field(outcome: Outcome) -> None:
    rows = 0
    for views in _by_recipe(outcome).values():
        stored = stages.StoredViews.of(views)
        loaded = pickle.loads(pickle.dumps(stored, protocol=pickle.HIGHEST_PROTOCOL)).views()
        assert loaded == views and repr(loaded) == repr(views)
        for a, b in zip(loaded, views, strict=True):
            for f in dataclasses.fields(a):
                assert getattr(a, f.name) == getattr(b, f.name), f.name
                assert getattr(b, f.name) == getattr(a, f.name), f.name  # the other way round
            assert a.to_json() == b.to_json()
            assert list(a.checks) == list(b.checks) and len(a.kpis) == len(b.kpis)
            assert hash(a.checks) == hash(b.checks) and hash(a.kpis) == hash(b.kpis)
            assert bool(a.kpis) == bool(b.kpis) and a.kpis[:1] == b.kpis[:1]
            rows += len(a.checks) + len(a.kpis)
        # pickled again (a view sent elsewhere), its rows are plain tuples
        again = pickle.loads(pickle.dumps(loaded, protocol=pickle.HIGHEST_PROTOCOL))
        assert again == views and all(type(v.checks) is tuple for v in again)
        # the rows the views shared stay shared (`stages.shared`)
        every = [r for v in loaded for r in (*v.checks, *v.kpis)]
        assert len({id(r) for r in every}) == len(set(every))
    assert rows > 0


def test_rows_are_unpickled_once_per_recipe_and_only_when_read(
    outcome: Outcome, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(stages._RecipeRows, "loaded", 0)
    groups = _by_recipe(outcome)
    loaded = [
        pickle.loads(pickle.dumps(stages.StoredViews.of(v), protocol=5)).views()
        for v in groups.values()
    ]
    # what every page shows of a run (its state, outcome, signer, dates) reads no row
    assert all(v.id and v.outcome and v.attested_at is not None for vs in loaded for v in vs)
    assert stages._RecipeRows.loaded == 0
    first = loaded[0]
    assert [len(v.checks) for v in first] and [list(v.kpis) for v in first]
    assert stages._RecipeRows.loaded == 1  # the recipe's rows, all its views', once


def _options(world: Path, out: Path, cached: bool = True) -> BuildOptions:
    return BuildOptions(
        catalog=world / "catalog",
        evidence=world / "evidence",
        out=out,
        trust_root=str(world / "trust/synth-root.json"),
        source_date_epoch=1767225600,
        cache_dir=out.parent / ".cache" / "bundles" if cached else None,
        bundles=False,
    )


def test_a_rebuild_after_one_run_changed_reads_the_rows_of_its_recipe_alone(
    world: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Removing one run: the views of every other recipe are loaded from the cache with their
    rows left unread (no page or file of theirs is made); the site is the site from scratch."""
    monkeypatch.setattr(store, "SETTLED_NS", 0)  # the copies below count as settled
    shutil.copytree(world, tmp_path / "w")
    w = tmp_path / "w"
    out = tmp_path / "b" / "site"
    build_site(_options(w, out))
    gone = sorted((w / "evidence").rglob("*.sigstore.json"))[7]
    gone.unlink()
    monkeypatch.setattr(stages._RecipeRows, "loaded", 0)
    report = build_site(_options(w, out))
    recipes = {p.relative_to(w / "evidence").parts[0] for p in (w / "evidence").rglob("*.json")}
    assert report.recipes == len(recipes) > 2 and report.views_judged > 0
    assert stages._RecipeRows.loaded <= 1, stages._RecipeRows.loaded  # its recipe's, if any
    fresh = tmp_path / "fresh" / "site"
    build_site(_options(w, fresh, cached=False))
    assert digests(out) == digests(fresh)
