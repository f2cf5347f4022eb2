"""Each recipe's runs as a build with a cache holds them (`stages.judged`): their summary rows
(`evidence.view.RunRow`) at hand, their views read from the views stage when first used
(`RecipeRuns`, `SiteRuns`). The reference is the plain tuple of views a build without a cache
makes: the rows are the views' fields, the runs loaded whole are that tuple, and a rebuild
after one run changed loads the views of that run's recipe alone."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from generator.bench.synth import SynthOptions, synthesize
from generator.core.cache import Cache
from generator.evidence import store
from generator.evidence.view import (
    _ROW_FIELDS,
    EvidenceView,
    RecipeRuns,
    RunRow,
    SiteRuns,
    by_recipe,
    facts,
)
from generator.pipeline import Inputs, Outcome, run
from generator.site import stages
from generator.site.build import BuildOptions, build_site
from tests.test_site_incremental import digests


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("synth")
    synthesize(SynthOptions(4, 40, seed=7, jobs=1), out)
    return out


def _inputs(world: Path) -> Inputs:
    return Inputs(world / "catalog", world / "evidence", (str(world / "trust/synth-root.json"),))


@pytest.fixture(scope="module")
def plain(world: Path) -> tuple[EvidenceView, ...]:
    """The reference: every run's view as a build without a cache makes them."""
    judged, _ = stages.judged(run(_inputs(world)), world / "evidence")
    assert type(judged.runs) is tuple and judged.runs
    return judged.runs


def _cached(world: Path, cache: Cache) -> tuple[Outcome, stages.Aggregated]:
    from generator.core.memo import Memo

    outcome = run(_inputs(world), Memo(cache))
    judged, _ = stages.judged(outcome, world / "evidence", cache)
    return outcome, judged


def _same(a: object, b: object) -> None:
    assert isinstance(a, EvidenceView) and isinstance(b, EvidenceView)
    for f in dataclasses.fields(a):
        assert getattr(a, f.name) == getattr(b, f.name), f.name
    assert a.to_json() == b.to_json() and repr(a) == repr(b)


def test_a_row_is_its_views_fields(plain: tuple[EvidenceView, ...]) -> None:
    names = {f.name for f in dataclasses.fields(EvidenceView)}
    assert set(_ROW_FIELDS) <= names and _ROW_FIELDS == RunRow._fields
    for view in plain:
        row = RunRow.of(view)
        for name in _ROW_FIELDS:
            assert getattr(row, name) == getattr(view, name), name
        assert (row.counted, row.raw_file) == (view.counted, view.raw_file)
    assert facts(plain) is plain  # plain views are their own facts


@pytest.mark.parametrize("stored", [False, True], ids=["made", "read"])
def test_the_runs_loaded_whole_are_the_plain_tuple(
    world: Path, tmp_path: Path, plain: tuple[EvidenceView, ...], stored: bool
) -> None:
    """A forced full load (made by this build, or read from the cache by the next) equals the
    tuple a build without a cache makes, view for view and field by field; the rows, the
    groups and the lengths are known without loading a view."""
    cache = Cache(tmp_path / "cache")
    _, judged = _cached(world, cache)
    if stored:
        cache = Cache(tmp_path / "cache")
        _, judged = _cached(world, cache)
        assert judged.made == 0
    runs = judged.runs
    assert isinstance(runs, SiteRuns)
    before = RecipeRuns.loaded
    assert len(runs) == len(plain) and bool(runs)
    assert list(facts(runs)) == [RunRow.of(v) for v in plain]
    groups = by_recipe(runs)
    assert list(groups) == list(by_recipe(plain))
    assert [len(g) for g in groups.values()] == [len(g) for g in by_recipe(plain).values()]
    assert RecipeRuns.loaded == before  # nothing read so far
    assert tuple(runs) == plain and runs == plain
    for a, b in zip(runs, plain, strict=True):
        _same(a, b)
    for name, group in groups.items():
        assert tuple(group) == by_recipe(plain)[name]
    assert RecipeRuns.loaded == before + len(groups)  # each group once


def test_a_bad_views_entry_is_made_again_when_read(
    world: Path, tmp_path: Path, plain: tuple[EvidenceView, ...]
) -> None:
    """A recipe's rows stored but its views entry damaged: its views are made again (and
    equal) when first read, never taken from the bad entry."""
    cache = Cache(tmp_path / "cache")
    _cached(world, cache)
    again = Cache(tmp_path / "cache")
    keys = again.keys(stages.VIEWS_STAGE)
    assert keys
    for key in keys:
        raw = again.raw(stages.VIEWS_STAGE, key)
        assert raw is not None
        again.write_raw(stages.VIEWS_STAGE, key, raw[:-1] + bytes([raw[-1] ^ 1]))
    _, judged = _cached(world, again)
    assert judged.made == 0  # the rows were read: nothing made up front
    assert tuple(judged.runs) == plain


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


@pytest.mark.parametrize("change", ["removed", "added"])
def test_a_rebuild_after_one_run_changed_loads_the_views_of_its_recipe_alone(
    world: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    """One evidence file removed (or added back): no other recipe's views are read from the
    cache (`_ShareViews.loaded`) nor loaded into the site (`RecipeRuns.loaded`: the changed
    recipe's name alone); the site is the site from scratch."""
    monkeypatch.setattr(store, "SETTLED_NS", 0)  # the copies below count as settled
    shutil.copytree(world, tmp_path / "w")
    w = tmp_path / "w"
    out = tmp_path / "b" / "site"
    gone = sorted((w / "evidence").rglob("*.sigstore.json"))[7]
    kept = tmp_path / "kept.json"
    if change == "added":
        shutil.move(gone, kept)
    build_site(_options(w, out))
    if change == "added":
        shutil.move(kept, gone)
    else:
        gone.unlink()
    monkeypatch.setattr(RecipeRuns, "loaded", 0)
    monkeypatch.setattr(stages._ShareViews, "loaded", 0)
    report = build_site(_options(w, out))
    recipes = {p.relative_to(w / "evidence").parts[0] for p in (w / "evidence").rglob("*.json")}
    assert report.recipes == len(recipes) > 2 and report.views_judged > 0
    assert stages._ShareViews.loaded == 0, stages._ShareViews.loaded
    assert RecipeRuns.loaded == 1, RecipeRuns.loaded  # the changed recipe's
    fresh = tmp_path / "fresh" / "site"
    build_site(_options(w, fresh, cached=False))
    assert digests(out) == digests(fresh)
