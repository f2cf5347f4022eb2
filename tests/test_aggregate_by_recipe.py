"""Aggregation per recipe (issue 29): a recipe's status is computed from its results and its runs
alone, memoized per recipe, and the parts put together are exactly the status `aggregate`
computes over the whole catalog at once.

- A differential property: for random subsets of a synthetic catalog's records, the status the
  pipeline assembles from per-recipe parts equals `generator.aggregate.aggregate` over all of
  them, with and without the memo (and with parts reused from an earlier subset).
- Counted work: one record added or removed re-aggregates exactly one recipe; nothing changed
  re-aggregates none; a change of the judge's inputs (the demo roots) re-aggregates every one.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generator.aggregate import Status, aggregate, record_recipe
from generator.bench.synth import SynthOptions, synthesize
from generator.core.cache import Cache
from generator.core.memo import Memo
from generator.evidence.stage import VerificationRun
from generator.pipeline import Inputs, Outcome, run
from generator.pipeline import aggregate as by_recipe


@pytest.fixture(scope="module")
def outcome(tmp_path_factory: pytest.TempPathFactory) -> Outcome:
    out = tmp_path_factory.mktemp("synth")
    synthesize(SynthOptions(4, 40, seed=5, jobs=1), out)
    return run(Inputs(out / "catalog", out / "evidence", (str(out / "trust/synth-root.json"),)))


@pytest.fixture
def key_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AICR_CATALOG_CACHE_KEY", str(tmp_path / "cache.key"))


def whole(o: Outcome, records: tuple[object, ...], demo_roots: frozenset[str]) -> Status:
    """The status `aggregate` computes over every recipe and record at once."""
    r = o.resolved
    assert r.lanes is not None
    ladders = {n: p.ladder for n, p in r.catalog.profiles.items()}
    return aggregate(
        r.results(),
        records,  # type: ignore[arg-type]
        r.lanes,
        ladders,
        demo_roots=demo_roots,
        failures=r.failures,
    )


def test_the_synthetic_catalog_has_several_recipes_and_every_kind_of_run(
    outcome: Outcome,
) -> None:
    assert outcome.status is not None
    assert len({record_recipe(e) for e in outcome.records}) == 4
    assert {r.counted for r in outcome.status.runs} == {True, False}
    assert outcome.status.components and any(c.lane for c in outcome.status.components)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(keep=st.lists(st.booleans(), min_size=40, max_size=40), again=st.booleans())
def test_the_parts_put_together_are_the_whole_status(
    outcome: Outcome, tmp_path_factory: pytest.TempPathFactory, keep: list[bool], again: bool
) -> None:
    records = tuple(e for e, k in zip(outcome.records, keep, strict=False) if k)
    verification = outcome.verification
    expected = whole(outcome, records, verification.demo_roots)
    assert by_recipe(outcome.resolved, records, verification).status == expected
    # through the memo: parts of an earlier, different subset are reused where they apply
    memo = Memo(Cache(tmp_path_factory.mktemp("cache"), secret=b"k" * 32))
    if again:
        by_recipe(outcome.resolved, outcome.records, verification, memo)
    assert by_recipe(outcome.resolved, records, verification, memo).status == expected


def test_one_record_added_or_removed_re_aggregates_one_recipe(
    outcome: Outcome, tmp_path: Path
) -> None:
    memo = Memo(Cache(tmp_path / "cache", secret=b"k" * 32))
    resolved, verification = outcome.resolved, outcome.verification
    records = outcome.records
    first = by_recipe(resolved, records[1:], verification, memo)
    assert first.made == len(first.shares) >= 4
    assert by_recipe(resolved, records[1:], verification, memo).made == 0  # nothing changed
    added = by_recipe(resolved, records, verification, memo)
    assert added.made == 1
    assert added.status == whole(outcome, records, verification.demo_roots)
    removed = by_recipe(resolved, records[:7] + records[8:], verification, memo)
    assert removed.made == 1
    # each share names the positions of its recipe's records and the key later stages use
    share = next(s for s in removed.shares if s.positions)
    assert {record_recipe((records[:7] + records[8:])[i]) for i in share.positions} == {
        share.recipe
    }
    assert len({s.key for s in removed.shares}) == len(removed.shares)


def test_a_change_of_the_judges_inputs_re_aggregates_every_recipe(
    outcome: Outcome, tmp_path: Path
) -> None:
    memo = Memo(Cache(tmp_path / "cache", secret=b"k" * 32))
    resolved, verification = outcome.resolved, outcome.verification
    first = by_recipe(resolved, outcome.records, verification, memo)
    demo = dataclasses.replace(
        verification,
        trust_roots=tuple(dataclasses.replace(r, demo=True) for r in verification.trust_roots),
    )
    assert isinstance(demo, VerificationRun) and demo.demo_roots != verification.demo_roots
    again = by_recipe(resolved, outcome.records, demo, memo)
    assert again.made == first.made == len(first.shares)
    assert again.status == whole(outcome, outcome.records, demo.demo_roots)


def test_a_recipes_results_enter_its_key_by_the_catalog_stages_digest(
    outcome: Outcome, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The catalog stage digests each recipe's results once (`Resolved.digests`); the
    aggregate stage names them by that digest and pickles no results: a recipe whose digest
    changed (its results did) is aggregated again, no other."""
    from generator import pipeline

    resolved, verification = outcome.resolved, outcome.verification
    assert set(resolved.digests) == set(resolved.by_recipe)
    assert resolved.digests == {
        n: pipeline.results_digest(rs) for n, rs in resolved.by_recipe.items()
    }
    memo = Memo(Cache(tmp_path / "cache", secret=b"k" * 32))
    first = by_recipe(resolved, outcome.records, verification, memo)
    pickled: list[object] = []
    real = pipeline._pickled
    monkeypatch.setattr(pipeline, "_pickled", lambda v: pickled.append(v) or real(v))
    assert by_recipe(resolved, outcome.records, verification, memo).made == 0
    assert not any(isinstance(v, tuple) and v and hasattr(v[0], "digest") for v in pickled)
    name = sorted(resolved.digests)[0]
    edited = dataclasses.replace(resolved, digests={**resolved.digests, name: "0" * 64})
    again = by_recipe(edited, outcome.records, verification, memo)
    assert again.made == 1 and first.made == len(first.shares)
    assert again.status == first.status


def _sentinels(cls: type) -> object:
    """An instance of the frozen record `cls` with a distinct value in every field."""
    return cls(*(f"{cls.__name__}.{f.name}" for f in dataclasses.fields(cls)))


def test_records_pickled_as_constructor_arguments_round_trip_every_field() -> None:
    """The verify, aggregate and render stages' records load through one constructor call
    (`__reduce__`), not the generic state round trip of a frozen slotted dataclass: every
    field survives the round trip, in its place (a field left out of `__reduce__`, or two
    swapped, fail here)."""
    import pickle
    import pickletools

    from generator import aggregate as agg
    from generator.evidence import model
    from generator.site import stages

    classes = (
        model.Statement,
        model.VerifiedEvidence,
        model.RejectedEvidence,
        agg.HealthStatus,
        agg.RunStatus,
        agg.LaneStatus,
        agg.RecipeStatus,
        agg.RecipePart,
        stages.SealedDownload,
        agg.StoredPart,
    )
    for cls in classes:
        record = _sentinels(cls)
        reduced = record.__reduce__()
        assert reduced[0] is cls and len(reduced[1]) == len(dataclasses.fields(cls)), cls
        loaded = pickle.loads(pickle.dumps(record, protocol=pickle.HIGHEST_PROTOCOL))
        assert type(loaded) is cls
        for f in dataclasses.fields(cls):
            assert getattr(loaded, f.name) == f"{cls.__name__}.{f.name}", (cls, f.name)
        # no state to set after construction (the BUILD opcode calls `__setstate__`)
        ops = {op.name for op, _, _ in pickletools.genops(pickle.dumps(record, protocol=5))}
        assert "BUILD" not in ops and loaded == record, cls
        assert model.constructor_args(record) == model.constructor_args_reference(record), cls


def test_a_recipes_views_are_stored_with_equal_rows_shared_and_load_equal(
    outcome: Outcome,
) -> None:
    """`stages.shared`: a recipe's judged views with each set of equal rows and outcomes one
    object: equal to the views as judged, field for field, and pickled smaller (each row once)."""
    import pickle

    from generator.site import stages

    evidence = Path(outcome.catalog.root).parent / "evidence"
    judged, _ = stages.judged(outcome, evidence)
    by_recipe: dict[str, list[object]] = {}
    for v in judged.runs:
        by_recipe.setdefault(v.recipe, []).append(v)
    rows = checked = 0
    for views in by_recipe.values():
        plain = tuple(views)
        stored = stages.shared(plain)  # type: ignore[arg-type]
        loaded = pickle.loads(pickle.dumps(stored, protocol=pickle.HIGHEST_PROTOCOL))
        assert loaded == plain
        for a, b in zip(loaded, plain, strict=True):
            for f in dataclasses.fields(a):
                assert getattr(a, f.name) == getattr(b, f.name), f.name
            for x, y in zip((*a.checks, *a.kpis), (*b.checks, *b.kpis), strict=True):
                assert x == y and [type(c) for c in x.outcome.causes] == [
                    type(c) for c in y.outcome.causes
                ]
                checked += 1
        every = [r for v in loaded for r in (*v.checks, *v.kpis)]
        rows += len(every)
        assert len({id(r) for r in every}) == len(set(every))  # one object per distinct row
        assert len(pickle.dumps(stored)) <= len(pickle.dumps(plain))
    assert rows == checked > 0


def test_rebased_is_its_reference_and_shares_each_run(outcome: Outcome) -> None:
    """`rebased` (constructors) gives what `rebased_reference` (`dataclasses.replace`) gives,
    each run one object wherever its recipe's lanes and excluded evidence show it."""
    from generator.aggregate import RecipeInput, rebased, rebased_reference, recipe_parts

    r = outcome.resolved
    assert r.lanes is not None
    ladders = {n: p.ladder for n, p in r.catalog.profiles.items()}
    groups: dict[str, list[object]] = {}
    for e in outcome.records:
        groups.setdefault(record_recipe(e), []).append(e)
    inputs = [RecipeInput(n, r.by_recipe.get(n, ()), groups[n], None) for n in sorted(groups)]  # type: ignore[arg-type]
    start = 0
    for part in recipe_parts(inputs, r.lanes, ladders):
        index = {i: start + 3 * i for i in range(len(part.runs))}
        start += 3 * len(part.runs)
        got, expected = (
            rebased(part.recipes, part.runs, index),
            rebased_reference(part.recipes, part.runs, index),
        )
        assert got == expected and got[1]
        assert [run.index for run in got[1]] == [index[run.index] for run in part.runs]
        ids = {id(run) for run in got[1]}
        shown = [x for s in got[0] for ln in s.lanes for x in ln.runs]
        shown += [x for s in got[0] for x in s.excluded_evidence]
        assert shown and all(id(x) in ids for x in shown)


def test_a_recipes_views_are_memoized_under_its_derived_record(
    outcome: Outcome, tmp_path: Path
) -> None:
    """The views stage keys each recipe by its `RecipeViews` record (a derived key): the same
    outcome judged again makes no view and gives the same views; another trust root (a field
    of the record) makes every one again."""
    from generator.site import stages

    out = Path(outcome.catalog.root).parent
    evidence = out / "evidence"
    memo = Memo(Cache(tmp_path / "cache", secret=b"k" * 32))
    o = run(Inputs(out / "catalog", evidence, (str(out / "trust/synth-root.json"),)), memo)
    assert o.shares and all(s.key for s in o.shares)
    first, _ = stages.judged(o, evidence, memo.cache)
    again, _ = stages.judged(o, evidence, memo.cache)
    assert first.made == len(o.records) and again.made == 0 and again.runs == first.runs
    other, _ = stages.judged(dataclasses.replace(o, trust_root="another"), evidence, memo.cache)
    assert other.made == len(o.records)
    assert memo.cache is not None and len(memo.cache.keys(stages.VIEWS_STAGE)) == 2 * len(o.shares)


def test_shared_rows_keep_what_equality_does_not_tell_apart(outcome: Outcome) -> None:
    """Two runs whose KPI rows differ only by 0.0 against -0.0 (equal floats, apart in JSON)
    keep each its own after `stages.shared`, as a `--no-cache` build (which shares nothing)
    shows them; equal rows alike are still one object."""
    from generator.site import stages

    evidence = Path(outcome.catalog.root).parent / "evidence"
    judged, _ = stages.judged(outcome, evidence)
    a, b = [v for v in judged.runs if v.kpis][:2]
    kpi = a.kpis[0]
    zero, negative = dataclasses.replace(kpi, value=0.0), dataclasses.replace(kpi, value=-0.0)
    views = (
        dataclasses.replace(a, kpis=(zero, *a.kpis[1:])),
        dataclasses.replace(b, kpis=(negative, *b.kpis[1:])),
        dataclasses.replace(b, kpis=(dataclasses.replace(kpi, value=-0.0), *b.kpis[1:])),
    )
    out = stages.shared(views)
    assert [json.dumps(v.kpis[0].to_json()["value"]) for v in out] == ["0.0", "-0.0", "-0.0"]
    assert out[1].kpis[0] is out[2].kpis[0]


def test_stored_parts_are_read_by_their_heads_and_loaded_when_their_rest_is_used(
    outcome: Outcome, tmp_path: Path
) -> None:
    """A part taken from the memo enters the status by its heads (`StoredPart`): reading every
    recipe's consensus, ceilings and lanes, and the component qualification, unpickles no
    part; reading one run loads its recipe's part alone; the status equals the whole one,
    field by field, and pickles as it."""
    import pickle

    from generator.aggregate import Later, _PartSource

    memo = Memo(Cache(tmp_path / "cache", secret=b"k" * 32))
    resolved, verification, records = outcome.resolved, outcome.verification, outcome.records
    by_recipe(resolved, records, verification, memo)
    expected = whole(outcome, records, verification.demo_roots)
    before = _PartSource.loaded
    again = by_recipe(resolved, records, verification, memo)
    assert again.made == 0 and again.status is not None
    status = again.status
    heads = [
        (s.recipe, s.profile, s.consensus, s.ceiling_lane, s.ceiling_nodes, s.blocked_lane)
        for s in status.recipes
    ]
    lanes = [
        (ln.lane, ln.state, ln.qualified, ln.passed, ln.failed)
        for s in status.recipes
        for ln in s.lanes
    ]
    assert heads == [
        (s.recipe, s.profile, s.consensus, s.ceiling_lane, s.ceiling_nodes, s.blocked_lane)
        for s in expected.recipes
    ]
    assert lanes == [
        (ln.lane, ln.state, ln.qualified, ln.passed, ln.failed)
        for s in expected.recipes
        for ln in s.lanes
    ]
    assert status.components == expected.components and status.health == expected.health
    assert _PartSource.loaded == before  # nothing but heads read
    assert isinstance(status.recipes[0].checks, Later)
    last = len(records) - 1
    assert status.runs[last] == expected.runs[last] and status.runs[last].index == last
    assert _PartSource.loaded == before + 1  # the part of that run's recipe alone
    assert status == expected and expected == status
    assert len(status.runs) == len(records) and list(status.runs) == list(expected.runs)
    assert pickle.loads(pickle.dumps(status)) == expected
    assert type(pickle.loads(pickle.dumps(status)).runs) is tuple


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_components_of_is_its_pandas_reference(outcome: Outcome, data: st.DataObject) -> None:
    """The component qualification in plain Python gives what the summary table gave, for the
    synthetic statuses and for any ceilings (ties across recipes and profiles included) and
    any subset of the recipe × profile records (a result without one counts no ceiling)."""
    from generator.aggregate import components_of
    from generator.aggregate_tables import components_of_reference

    assert outcome.status is not None
    statuses = list(outcome.status.recipes)
    results = outcome.resolved.results()
    assert components_of(results, statuses) == components_of_reference(results, statuses)
    lanes = [("", 0), ("s", 8), ("m", 64), ("l", 512)]
    changed = []
    for s in statuses:
        if data.draw(st.booleans()):
            continue  # left out
        lane, nodes = data.draw(st.sampled_from(lanes))
        changed.append(dataclasses.replace(s, ceiling_lane=lane or None, ceiling_nodes=nodes))
    assert components_of(results, changed) == components_of_reference(results, changed)
    assert components_of((), changed) == components_of_reference((), changed) == ()


def test_the_sites_health_of_a_leaf_is_the_aggregate_stages(outcome: Outcome) -> None:
    """The site takes each leaf's health from the status (`_recipe_views`), where the aggregate
    stage found it by the rules `stages.structural_health` applies: the same three values for
    every leaf, a leaf pinned to a pre-release (warn) included."""
    from generator.aggregate import HealthStatus
    from generator.aggregate_tables import structural_health as tables
    from generator.site import stages
    from generator.site.build import leaves

    assert outcome.status is not None
    by_leaf = {h.recipe: h for h in outcome.status.health}
    shown = leaves(outcome)
    assert shown and set(shown) <= set(by_leaf)
    for leaf, results in shown.items():
        h = by_leaf[leaf]
        assert (h.health, h.coverage, h.problems) == stages.structural_health(results)
    leaf, results = next(iter(shown.items()))
    first = results[0]
    comp = next(c for c in first.components if c.version)
    odd = dataclasses.replace(
        first,
        components=tuple(
            dataclasses.replace(c, version="1.0.0-rc.1") if c is comp else c
            for c in first.components
        ),
    )
    row = tables([odd]).iloc[0]
    warned = HealthStatus(row["recipe"], row["health"], row["coverage"], tuple(row["problems"]))
    assert warned.health == "warn"
    assert (warned.health, warned.coverage, warned.problems) == stages.structural_health([odd])
