"""`site.runpage.run_markdown` (a run's page written in Python) against its reference, the
template `pages/run.md.j2` (`pages.run_page_reference`): the same text for every run of a
synthetic catalog, for hand-made runs through every branch of the template, and for drawn
field values (hostile text, controls, empty and missing values)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markupsafe import Markup

from generator.bench.synth import SynthOptions, synthesize
from generator.evidence.view import CheckRow, KpiRow, Outcome
from generator.site import pages, runpage
from generator.site.build import BuildOptions, gather
from generator.site.model import EvidenceView, RecipeView, SiteData
from tests.test_site_pages import site as hand_made


def _same(run: EvidenceView, s: SiteData, recipe: RecipeView | None) -> None:
    assert pages.run_page(run, s, recipe) == pages.run_page_reference(run, s, recipe)


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> SiteData:
    root = tmp_path_factory.mktemp("synth")
    synthesize(SynthOptions(3, 40, seed=5, jobs=1), root)
    options = BuildOptions(
        catalog=root / "catalog",
        evidence=root / "evidence",
        out=root / "site",
        trust_root=str(root / "trust" / "synth-root.json"),
        bundles=False,
        jobs=1,
    )
    return gather(options, 1764800000)


def test_every_run_of_a_synthetic_catalog_is_the_templates_page(synthetic: SiteData) -> None:
    by_name = {r.name: r for r in synthetic.recipes}
    assert len(synthetic.evidence) >= 30
    states = set()
    for run in synthetic.evidence:
        states.add(run.outcome.status)
        _same(run, synthetic, by_name.get(run.recipe))
        _same(run, synthetic, None)  # as an orphan's run
    assert len(states) >= 2  # runs judged differently went through both


def _branches(run: EvidenceView) -> list[EvidenceView]:
    """The run changed through each branch of the template."""
    failed = Outcome("failed", ("below threshold", "late"), "took <2x> & more")
    return [
        run,
        replace(run, sample=False),
        replace(run, checks=(), kpis=()),
        replace(run, checks=run.checks * 3, kpis=()),
        replace(run, outcome=Outcome("rejected", ("bad",), "why: <b>"), failure_class="tlog"),
        replace(run, outcome=Outcome("pass"), verdict="pass", reasons=("x",)),
        replace(run, outcome=Outcome("fail"), verdict="pass", reasons=("a", "b <c>")),
        replace(run, outcome=Outcome("stale"), verdict="", reasons=()),
        replace(run, recipe_digest=""),
        replace(run, recipe_digest="sha256:" + "ee" * 32),
        replace(run, profile="", profile_version=""),
        replace(run, profile="nowhere"),
        replace(run, lane="", lane_nodes=0, observed_nodes=None, observed_gpus=None),
        replace(run, bundle_digest=""),
        replace(run, bundle_digest="sha256:" + "99" * 32),
        replace(run, raw=None),
        replace(run, attested_at="", tlog_index=None, integrated_time="", predicate_type=""),
        replace(run, signer_identity="https://x.invalid/a?b=<c>", signer_label="", signer_class=""),
        replace(run, signer_identity="", signer_label="", signer_issuer=""),
        replace(run, component_versions={}),
        replace(run, component_versions={"b": "2", "A": "1", "a": "<3>", "C\x01": "x"}),
        replace(
            run,
            checks=(CheckRow("p<1>", "n&m", "failed", None, "", failed),),
            kpis=(KpiRow("k'1", float("inf"), "s\x7f", ">=", -0.0, "", failed),),
        ),
        replace(run, recipe="r <'\">&", id="id<&>", statement_digest=""),
        # equal to the same plain text, printed differently: never one for the other
        replace(run, outcome=Outcome(Markup("fail"), (), Markup("<b>x</b>"))),
        replace(run, outcome=Outcome("fail", (), "<b>x</b>")),
    ]


def test_every_branch_of_the_template_gives_the_same_page() -> None:
    s = hand_made()
    recipe = s.recipes[0]
    digest = recipe.profiles[0].downloads[0].sha256 if recipe.profiles[0].downloads else ""
    for base in s.evidence:
        for run in _branches(base):
            if digest:  # a run whose bundle is a download of this site
                _same(replace(run, bundle_digest="sha256:" + digest), s, recipe)
            for where in (recipe, None):
                _same(run, s, where)
                added = {run.path: ("0123456789abcdef0123", "2026-11-02")}
                for url in ("", "https://github.com/o/r", "https://example.invalid/r"):
                    _same(run, replace(s, evidence_added=added, repo_url=url), where)
                _same(run, replace(s, trust_root="a <root> & 'b'"), where)


_text = st.text(st.characters(codec="utf-8"), max_size=12)


@settings(max_examples=150, deadline=None)
@given(
    recipe=_text,
    lane=_text,
    profile=_text,
    verdict=_text,
    reasons=st.lists(_text, max_size=3),
    identity=_text,
    label=_text,
    message=_text,
    detail=_text,
    versions=st.dictionaries(_text, _text, max_size=3),
    nodes=st.one_of(st.none(), st.integers(-5, 5000)),
)
def test_drawn_values_give_the_same_page(
    recipe: str,
    lane: str,
    profile: str,
    verdict: str,
    reasons: list[str],
    identity: str,
    label: str,
    message: str,
    detail: str,
    versions: dict[str, str],
    nodes: int | None,
) -> None:
    s = hand_made()
    base = s.evidence[0]
    check = CheckRow(lane, message, verdict, nodes, message, Outcome(verdict, (detail,), detail))
    run = replace(
        base,
        recipe=recipe,
        lane=lane,
        lane_nodes=nodes,
        observed_nodes=nodes,
        profile=profile,
        verdict=verdict,
        reasons=tuple(reasons),
        signer_identity=identity,
        signer_label=label,
        component_versions=versions,
        checks=(check,),
        outcome=Outcome(verdict, tuple(reasons), detail),
    )
    for where in (s.recipes[0], None):
        _same(run, s, where)


def test_the_template_is_still_the_reference(tmp_path: Path) -> None:
    """The reference renders the template file itself: a change to the template that the
    fast path does not follow fails the tests above, never passes unseen."""
    s = hand_made()
    text = pages.run_page_reference(s.evidence[0], s, s.recipes[0])
    assert text.startswith("---\ntitle: ") and "<!--aicr:island-->" in text
    assert 'class="aicr-run"' in text


_PRINTABLE = (
    st.text()
    | st.sampled_from(["passed", "a & b", "<b>", "it's", 'say "x"', "\x00\x7f\ud7ff", "\ufffe"])
    | st.integers()
    | st.floats()
    | st.booleans()
    | st.none()
    | st.text().map(Markup)
)


@given(values=st.lists(_PRINTABLE, max_size=8), bound=st.integers(1, 4))
@settings(max_examples=300, deadline=None)
def test_a_printed_value_is_the_references(values: list[object], bound: int) -> None:
    """`runpage._h` (plain strings remembered, numbers as their `str`) prints every value as
    `_h_reference` does, the first time and again, and after its memory was cleared."""
    saved = runpage._PRINTED_MAX
    runpage._PRINTED_MAX = bound
    runpage._PRINTED.clear()  # what the pages before printed
    try:
        for value in values + values:
            assert runpage._h(value) == runpage._h_reference(value)
            assert type(runpage._h(value)) is str
        assert len(runpage._PRINTED) <= bound
    finally:
        runpage._PRINTED_MAX = saved
        runpage._PRINTED.clear()


_CELL = (
    st.sampled_from(["passed", "a & b", "<b>", ""])
    | st.sampled_from(["passed", "<b>"]).map(Markup)
    | st.integers(-2, 2)
    | st.sampled_from([True, False, 0.0, -0.0, 1.0, 1800, 1800.0, float("nan")])
    | st.none()
)
_OUTCOMES = st.builds(
    Outcome,
    st.sampled_from(["passed", "failed", Markup("failed")]),
    st.lists(st.sampled_from(["late", Markup("late"), "<c>"]), max_size=2).map(tuple),
    st.sampled_from(["", "took <2x>", Markup("took <2x>")]),
)


@given(
    rows=st.lists(
        st.tuples(_CELL, _CELL, _CELL, _CELL, _CELL, _OUTCOMES, st.sampled_from(["", "../"])),
        max_size=8,
    ),
    bound=st.integers(1, 4),
)
@settings(max_examples=300, deadline=None)
def test_rows_written_before_are_the_references(rows: list[tuple[Any, ...]], bound: int) -> None:
    """`runpage._check_row` and `_kpi_cells` (rows of plain values remembered) write every
    row as their references do, the first time and again, whatever the values' types: a
    Markup and its plain text, True and 1, 1800 and 1800.0, 0.0 and -0.0 never one for the
    other; and after their memory was cleared."""
    saved = runpage._ROWS_MAX
    runpage._ROWS_MAX = bound
    runpage._ROWS.clear()
    runpage._CELLS.clear()
    try:
        for a, b, c, d, e, outcome, base in rows + rows:
            check = SimpleNamespace(
                phase=a, name=b, targets=c, status=d, message=e, outcome=outcome
            )
            want = runpage._check_row_reference(check, base)
            assert runpage._check_row(check, base) == want
            typed = CheckRow(str(a), str(b), str(d), c if type(c) is int else None, str(e), outcome)
            assert runpage._check_row(typed, base) == runpage._check_row_reference(typed, base)
            kpi = SimpleNamespace(operator=a, threshold=c, unit=b, status=d, outcome=outcome)
            assert runpage._kpi_cells(kpi, base) == runpage._kpi_cells_reference(kpi, base)
        assert len(runpage._ROWS) <= bound and len(runpage._CELLS) <= bound
    finally:
        runpage._ROWS_MAX = saved
        runpage._ROWS.clear()
        runpage._CELLS.clear()
