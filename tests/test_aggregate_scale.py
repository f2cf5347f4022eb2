"""Aggregate at scale: the coded check rows and the roll-up give exactly what the plain forms gave."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from generator.aggregate import (
    CONFIRMED,
    CONTESTED,
    FAILING,
    PARTIAL,
    SINGLE,
    UNTESTED,
)
from generator.aggregate_tables import _categorical, _Codes, rollup


def _coded(values: list[Any]) -> pd.Categorical:
    codes = _Codes()
    at = [codes[v] for v in values]
    return _categorical(codes, at)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["b", "a", "kpi:x", "Z", "é", "passed", "a b"]), max_size=30))
def test_coded_categorical_is_the_categorical_of_the_values(values: list[str]) -> None:
    got, want = _coded(values), pd.Categorical(values)
    assert got.dtype == want.dtype
    assert list(got.categories) == list(want.categories)
    np.testing.assert_array_equal(got.codes, want.codes)


@pytest.mark.parametrize(
    "values",
    [[], ["passed", None, "failed", None], [3, 1, 2], ["a", 1]],
    ids=["empty", "missing", "not-strings", "mixed"],
)
def test_coded_categorical_falls_back_for_what_is_not_plain_strings(values: list[Any]) -> None:
    got, want = _coded(values), pd.Categorical(values)
    assert got.dtype == want.dtype
    np.testing.assert_array_equal(got.codes, want.codes)


def _rollup_by_series(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """`rollup` as it was (the string column's own `eq`), for comparison."""
    s = df["state"]
    flags = pd.DataFrame(
        {
            "failing": s.eq(FAILING),
            "contested": s.eq(CONTESTED),
            "untested": s.eq(UNTESTED),
            "partial": s.eq(PARTIAL),
            "single": s.eq(SINGLE),
        }
    )
    for k in keys:
        flags[k] = df[k].to_numpy()
    g = flags.groupby(keys, sort=True, observed=True).agg(
        failing=("failing", "any"),
        contested=("contested", "any"),
        any_untested=("untested", "any"),
        all_untested=("untested", "all"),
        partial=("partial", "any"),
        single=("single", "any"),
    )
    state = np.select(
        [
            g["failing"],
            g["contested"],
            g["all_untested"],
            g["any_untested"] | g["partial"],
            g["single"],
        ],
        [FAILING, CONTESTED, UNTESTED, PARTIAL, SINGLE],
        default=CONFIRMED,
    )
    return pd.DataFrame({"state": state}, index=g.index).reset_index()


_STATES = [FAILING, CONTESTED, UNTESTED, PARTIAL, SINGLE, CONFIRMED]


@settings(max_examples=50, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 3), st.sampled_from(["x", "y"]), st.sampled_from(_STATES)),
        min_size=1,
        max_size=40,
    ),
    st.integers(0, 5),
)
def test_rollup_is_what_it_was(rows: list[tuple[int, str, str]], start: int) -> None:
    df = pd.DataFrame(rows, columns=["scope", "phase", "state"])
    df.index = df.index + start  # an index that is not 0..n-1
    for keys in (["scope"], ["scope", "phase"]):
        pd.testing.assert_frame_equal(rollup(df, keys), _rollup_by_series(df, keys))


def test_run_records_are_the_runs_table_read_row_by_row() -> None:
    from generator.aggregate_tables import status_records
    from generator.evidence.model import FailureClass, RejectedEvidence
    from tests.test_aggregate import STANDARD, recipe, run, status_of

    r = recipe()
    rejected = RejectedEvidence(
        path=f"evidence/r1/{'1' * 32}/{'2' * 64}.sigstore.json",
        klass=FailureClass.SIGNER_NOT_ALLOWED,
        message="signed by x via y; allowed: nobody",
    )
    evidence = [
        run(r, "lane-36"),
        run(r, "lane-72", observed=54, verdict="pass"),  # claims pass, undersized: invalid
        rejected,
        run(r, "lane-36", "b", sample=True),  # sample outside the demo root
        run(recipe(profile=STANDARD), "lane-36", digest="sha256:" + "9" * 64),  # stale
    ]
    s = status_of([r, recipe(profile=STANDARD)], evidence)
    by_rows = {
        int(row.idx): (str(row.exclusion), str(getattr(row, "downgraded", "") or ""))
        for row in s.runs.itertuples(index=False)
    }
    runs = status_records(s).runs
    got = {r.index: (str(r.exclusion or ""), r.downgraded) for r in runs}
    assert got == by_rows
    assert [r.index for r in runs] == list(range(len(evidence)))  # in the order given
    assert sorted(got) == list(range(len(evidence)))
    assert got[1][0] == "verdict-mismatch"
    assert got[1][1].startswith(
        "verdict-mismatch: signed verdict pass, recomputed fail: observed 54 nodes"
    )
    assert {e for e, _ in got.values()} == {
        "",
        "unallowlisted",
        "sample-outside-demo",
        "stale",
        "verdict-mismatch",
    }


def test_records_are_the_tables_read_row_by_row() -> None:
    """`aggregate`'s records carry exactly the rows of the tables it computes."""
    from generator.aggregate import Consensus
    from generator.aggregate_tables import status_records
    from tests.test_aggregate import LADDER, STANDARD, climb, recipe, run, status_of

    r, other = recipe(), recipe(profile=STANDARD)
    evidence = [
        *climb(r, LADDER[:2]),
        run(r, "lane-144", "b", statuses={"node-reboot": "failed"}),
        run(other, "lane-36", "a"),
    ]
    tables = status_of([r, other], evidence)
    records = status_records(tables)
    summary = tables.recipes
    assert [
        (x.recipe, x.profile, x.consensus, x.ceiling_lane, x.ceiling_nodes) for x in records.recipes
    ] == list(
        zip(
            summary["recipe"],
            summary["profile"],
            summary["consensus"],
            summary["ceiling_lane"],
            summary["ceiling_nodes"],
            strict=True,
        )
    )
    lanes = [(x.recipe, x.profile, ln.lane, ln.state, ln.qualified, ln.passed, ln.failed)
             for x in records.recipes for ln in x.lanes]  # fmt: skip
    t = tables.lanes
    assert lanes == list(zip(
        t["recipe"], t["profile"], t["lane"], t["state"], t["qualified"], t["passed"], t["failed"],
        strict=True,
    ))  # fmt: skip
    checks = [(x.recipe, x.profile, c.lane, c.phase, c.check, c.state, c.required)
              for x in records.recipes for c in x.checks]  # fmt: skip
    t = tables.checks
    assert checks == list(zip(
        t["recipe"], t["profile"], t["lane"], t["phase"], t["check"], t["state"], t["required"],
        strict=True,
    ))  # fmt: skip
    states = {c.state for x in records.recipes for c in x.checks}
    assert states and all(isinstance(s, Consensus) for s in states)
    assert {s for s in states} >= {Consensus.FAILING, Consensus.SINGLE}
    large = next(x for x in records.recipes if x.profile != STANDARD)
    assert large.blocked_lane == "lane-144" and large.blocked_state is Consensus.FAILING
