"""A run's API record written from pieces (`api.record_text`) is the reference's text
(`api.record_text_reference`: `_text(run_json(run))`), and refuses what it refuses.

Held equal for every run of the repository's catalog and of a synthetic one (each with a memo
shared by all its runs, as one API build shares it), and for views hypothesis draws from a pool
of rows and outcomes (so that pieces are taken from the memo), with fields of types the writer
does not expect, numbers the encoder refuses, and the memo made to start again.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generator import pipeline
from generator.bench.synth import SynthOptions, synthesize
from generator.evidence.model import RunState
from generator.evidence.view import CheckRow, EvidenceView, KpiRow, Outcome, RawFile
from generator.site import api, stages

REPO = Path(__file__).resolve().parent.parent


def _written(run: EvidenceView, memo: api.RecordMemo) -> tuple[str, str]:
    try:
        return "text", api.record_text(run, memo)
    except Exception as e:  # the refusal, compared with the reference's
        return type(e).__name__, str(e)


def _reference(run: EvidenceView) -> tuple[str, str]:
    try:
        return "text", api.record_text_reference(run)
    except Exception as e:
        return type(e).__name__, str(e)


def _judged_runs(catalog: Path, evidence: Path, roots: tuple[str, ...]) -> Sequence[EvidenceView]:
    ran = pipeline.run(pipeline.Inputs(catalog, evidence, roots, jobs=1))
    judged, _ = stages.judged(ran, evidence)
    return judged.runs


@pytest.fixture(scope="module")
def repository_runs() -> Iterator[Sequence[EvidenceView]]:
    with pytest.MonkeyPatch.context() as m:
        m.chdir(REPO)
        yield _judged_runs(Path("catalog"), Path("evidence"), ("demo",))


@pytest.fixture(scope="module")
def synthetic_runs(tmp_path_factory: pytest.TempPathFactory) -> Sequence[EvidenceView]:
    out = tmp_path_factory.mktemp("synth")
    synthesize(SynthOptions(6, 120, seed=3, jobs=1), out)
    return _judged_runs(out / "catalog", out / "evidence", (str(out / "trust/synth-root.json"),))


def _every_run_the_same(runs: Sequence[EvidenceView]) -> api.RecordMemo:
    memo = api.RecordMemo()
    for run in runs:
        assert api.record_text(run, memo) == api.record_text_reference(run), run.id
    return memo


def test_every_run_of_the_repository_is_written_as_the_reference(
    repository_runs: Sequence[EvidenceView],
) -> None:
    assert len(repository_runs) > 20
    assert {r.state for r in repository_runs} >= {RunState.VERIFIED, RunState.STALE}
    memo = _every_run_the_same(repository_runs)
    assert len(memo.checks) < len(repository_runs)  # pieces were taken from the memo


def test_every_run_of_a_synthetic_catalog_is_written_as_the_reference(
    synthetic_runs: Sequence[EvidenceView],
) -> None:
    assert len(synthetic_runs) == 120 and len({r.state for r in synthetic_runs}) == 3
    memo = _every_run_the_same(synthetic_runs)
    kpis = sum(len(r.kpis) for r in synthetic_runs)
    assert len(memo.checks) < len(synthetic_runs) and len(memo.kpis) < kpis / 4
    # and with the memo starting again after every two entries
    with pytest.MonkeyPatch.context() as m:
        m.setattr(api, "_MEMO_MAX", 2)
        _every_run_the_same(synthetic_runs)


def test_the_kpi_memo_names_every_field_a_row_shows_but_its_value() -> None:
    """`_kpis_text` keeps a KPI row's text but its value by (id, unit, operator, threshold,
    status, outcome): a field added to `KpiRow` (or to its JSON) must be added to that key."""
    assert [f.name for f in dataclasses.fields(KpiRow)] == [
        "id",
        "value",
        "unit",
        "operator",
        "threshold",
        "status",
        "outcome",
    ]
    row = KpiRow("k", 1.5, "s", "<=", 2.0, "passed", Outcome("passed"))
    assert list(row.to_json()) == ["id", "value", "unit", "threshold", "status", "outcome"]
    assert sorted(row.to_json())[-1] == "value"  # its text ends with the value


# drawn values: mostly of the types a view holds, sometimes not (the reference writes those)
_TEXT = st.one_of(
    st.sampled_from(["", "x", "passed", 'q"u\\o\n\t\x00\x1f\u2028é\U0001f600', "\ud800"]),
    st.text(max_size=8),
)
_ODD = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.floats(allow_nan=True, allow_infinity=True),
    st.just(RunState.STALE),
    st.just(("a",)),
)
_STR = st.one_of(_TEXT, _TEXT, _TEXT, _TEXT, _TEXT, _TEXT, _ODD)
_CLEAN_INT = st.one_of(st.none(), st.integers(-(2**70), 2**70))
_INT = st.one_of(_CLEAN_INT, _CLEAN_INT, _ODD)
_CLEAN_NUMBER = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0.0, -0.0, 1.0, 1, 0, 1e300, 5e-324, 2.5]),
    st.integers(-(2**70), 2**70),
)
_REFUSED = st.sampled_from([math.nan, math.inf, -math.inf])  # allow_nan=False refuses them
_NUMBER = st.one_of(_CLEAN_NUMBER, _CLEAN_NUMBER, _CLEAN_NUMBER, _ODD, _REFUSED)


def _kpi_rows(odd: bool) -> st.SearchStrategy[KpiRow]:
    """Rows without an outcome yet; `odd`: any field may be of a type the writer refuses."""
    if odd:
        return st.builds(KpiRow, st.sampled_from(["a", "b"]), _NUMBER, _STR, _STR, _NUMBER, _STR)
    # few values of each field, so that rows alike but in one field are drawn often
    return st.builds(
        KpiRow,
        st.sampled_from(["a", "b"]),
        _CLEAN_NUMBER,
        st.sampled_from(["s", "ratio"]),
        st.sampled_from(["<=", ">="]),
        st.sampled_from([1.0, 1, 0.0, -0.0, 2.5]),
        st.sampled_from(["passed", "failed", ""]),
    )


@st.composite
def _outcomes(draw: st.DrawFn) -> Outcome:
    return Outcome(
        draw(st.one_of(_TEXT, st.just(""))),
        tuple(draw(st.lists(_TEXT, max_size=2))),
        draw(st.one_of(_TEXT, st.just(""))),
    )


@st.composite
def _views(draw: st.DrawFn) -> list[EvidenceView]:
    outcomes = draw(st.lists(_outcomes(), min_size=1, max_size=3))
    outcome = st.sampled_from(outcomes)
    checks = draw(
        st.lists(st.builds(CheckRow, _TEXT, _TEXT, _STR, _INT, _TEXT, outcome), max_size=4)
    )
    rows = st.one_of(_kpi_rows(False), _kpi_rows(False), _kpi_rows(False), _kpi_rows(True))
    kpis = draw(st.lists(st.tuples(rows, outcome).map(lambda x: x[0].judged(x[1])), max_size=5))
    n = draw(st.integers(1, 4))
    views = []
    for i in range(n):
        # most views of the types a view holds (written by `record_text` itself), some not
        odd = draw(st.integers(0, 3)) == 0
        text, integer = (_STR, _INT) if odd else (_TEXT, _CLEAN_INT)
        row_checks = draw(st.lists(st.sampled_from(checks), max_size=5)) if checks else []
        row_kpis = draw(st.lists(st.sampled_from(kpis), max_size=6)) if kpis else []
        # a value alike in every field but the value: the KPI memo's row again
        if row_kpis and draw(st.booleans()):
            k = row_kpis[0]
            row_kpis.append(dataclasses.replace(k, value=draw(_NUMBER if odd else _CLEAN_NUMBER)))
        raw = draw(st.one_of(st.none(), st.just(RawFile("p", "r", "0" * 64, 1, True))))
        states = st.sampled_from([*RunState, "verified", "stale"])  # a plain str too
        state = draw(
            st.one_of(states, st.sampled_from([RunState.STALE, 1, None])) if odd else states
        )
        versions = draw(
            st.one_of(
                st.dictionaries(_TEXT, _TEXT, max_size=3),
                st.dictionaries(_TEXT, _STR, max_size=3),
                st.just({1: "a", "b": "c"}),
                st.just({2: "a", 1: "b"}),
                st.none(),
            )
            if odd
            else st.dictionaries(_TEXT, _TEXT, max_size=3)
        )
        reasons = draw(
            st.one_of(st.lists(_TEXT, max_size=2).map(tuple), st.just(()), _ODD)
            if odd
            else st.lists(_TEXT, max_size=2).map(tuple)
        )
        sample = st.one_of(st.booleans(), st.booleans(), _ODD) if odd else st.booleans()
        views.append(
            EvidenceView(
                draw(_TEXT) + str(i),
                draw(text),
                draw(_TEXT),
                draw(text),
                state,  # type: ignore[arg-type]
                draw(text),
                draw(text),
                draw(sample),
                draw(text),
                draw(text),
                draw(text),
                draw(text),
                draw(integer),
                draw(integer),
                draw(integer),
                draw(text),
                reasons,
                draw(text),
                draw(text),
                draw(text),
                draw(text),
                draw(text),
                draw(text),
                draw(text),
                draw(text),
                draw(integer),
                draw(text),
                tuple(row_checks),
                tuple(row_kpis),
                versions,  # type: ignore[arg-type]
                raw,
                draw(outcome),
            )
        )
    return views


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(views=_views(), small=st.booleans())
def test_drawn_views_are_written_as_the_reference(views: list[EvidenceView], small: bool) -> None:
    """Each view twice, with one memo: the second time every piece is the memo's."""
    memo = api.RecordMemo()
    with pytest.MonkeyPatch.context() as m:
        if small:
            m.setattr(api, "_MEMO_MAX", 1)
        for run in views + views:
            assert _written(run, memo) == _reference(run)


def test_a_refused_number_is_refused_as_the_reference_refuses_it() -> None:
    memo = api.RecordMemo()
    base = next(v for v in _fixed_views() if v.kpis)
    nan = dataclasses.replace(base, kpis=(dataclasses.replace(base.kpis[0], value=math.nan),))
    assert api.record_text(base, memo) == api.record_text_reference(base)  # its row memoized
    with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
        api.record_text(nan, memo)
    assert _written(nan, memo) == _reference(nan)
    # a bool for an int: written by the reference, the same
    odd = dataclasses.replace(base, lane_nodes=True)
    assert api.record_text(odd, memo) == api.record_text_reference(odd)


def _fixed_views() -> list[EvidenceView]:
    from tests.test_site_pages import site

    return list(site().evidence)


def test_the_site_fixtures_runs_are_written_as_the_reference() -> None:
    memo = api.RecordMemo()
    for run in _fixed_views() * 2:
        assert api.record_text(run, memo) == api.record_text_reference(run)


def test_views_read_from_the_cache_are_written_on_the_fast_path(
    synthetic_runs: Sequence[EvidenceView], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A build that takes a recipe's views from the cache holds their rows as `LazyRows`
    (`stages.StoredViews`): their records are the reference's text, written without falling
    back to the reference (which wrote every such record a second time)."""
    by_recipe: dict[str, list[EvidenceView]] = {}
    for run in synthetic_runs:
        by_recipe.setdefault(run.recipe, []).append(run)
    stored = [v for runs in by_recipe.values() for v in stages.StoredViews.of(runs).views()]
    assert any(isinstance(v.checks, stages.LazyRows) and v.checks for v in stored)
    expected = [api.record_text_reference(v) for v in stored]

    def refused(run: EvidenceView) -> str:
        raise AssertionError(f"{run.id}: written by the reference")

    monkeypatch.setattr(api, "record_text_reference", refused)
    memo = api.RecordMemo()
    assert [api.record_text(v, memo) for v in stored] == expected
    assert len(memo.checks) < len(stored)  # rows shared within a recipe: taken from the memo
