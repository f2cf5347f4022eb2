"""Consensus and ceiling decisions that no other test pins down (issue 32, `make mutation`).

Each test fails on a mutant of `generator/aggregate_tables.py` (its consensus and ceiling functions,
see tests/mutation/modules.toml) that the rest of the suite let through: a run reporting one
check twice, once passed and once failed, is a failure of that check; a counted run without a
transparency-log time can never be a signer's latest run (it would hide a later logged failure).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from generator.aggregate import (
    CLOCK_SKEW_SECONDS,
    CONFIRMED,
    CONTESTED,
    FAILING,
    PARTIAL,
    SINGLE,
    UNTESTED,
)
from generator.aggregate_tables import _check_rows, _consensus, state_of
from generator.evidence.model import CheckResult, VerifiedEvidence
from tests.test_aggregate import LANES, STANDARD, check_state, one, recipe, run, status_of, summary


def _with_check(e: VerifiedEvidence, check: CheckResult) -> VerifiedEvidence:
    """`e` with `check` added to the phase that already reports a check of that name."""
    phases = dict(e.statement.phases)
    (phase,) = [ph for ph, cs in phases.items() if any(c.name == check.name for c in cs)]
    phases[phase] = (*phases[phase], check)
    return replace(e, statement=replace(e.statement, phases=phases))


def test_a_check_reported_twice_passed_and_failed_is_a_failure() -> None:
    r = recipe(profile=STANDARD)
    twice = _with_check(
        run(r, "lane-36", "a", verdict="fail"), CheckResult("node-reboot", "failed", 36)
    )
    s = status_of([r], [twice])
    assert bool(one(s.runs, idx=0)["counted"]), one(s.runs, idx=0)["exclusion"]
    assert check_state(s, "lane-36", "node-reboot", STANDARD) == FAILING
    assert one(s.checks, check="node-reboot")[["passed", "failed"]].tolist() == [0, 1]
    # with a second signer passing it, the check is contested, not confirmed
    s = status_of([r], [twice, run(r, "lane-36", "b")])
    assert check_state(s, "lane-36", "node-reboot", STANDARD) == CONTESTED
    assert check_state(s, "lane-36", "initial-deploy", STANDARD) == CONFIRMED


def test_a_run_without_a_log_time_never_hides_a_later_logged_failure() -> None:
    r = recipe(profile=STANDARD)
    unlogged = replace(run(r, "lane-36", "a", day=9), integrated_time=None)
    failed = run(r, "lane-36", "a", day=5, verdict="fail", statuses={"node-reboot": "failed"})
    for evidence in ([unlogged, failed], [failed, unlogged]):
        s = status_of([r], evidence)
        runs = s.runs.set_index("statement_digest")
        assert bool(runs.loc[unlogged.statement_digest, "counted"])
        assert not bool(runs.loc[unlogged.statement_digest, "latest"])
        assert bool(runs.loc[failed.statement_digest, "latest"])
        assert check_state(s, "lane-36", "node-reboot", STANDARD) == FAILING
        assert one(s.lanes, lane="lane-36")["state"] == FAILING


def test_of_two_runs_logged_at_once_the_latest_is_decided_by_digest_not_input_order() -> None:
    r = recipe(profile=STANDARD)
    a = run(r, "lane-36", "a", day=3)
    b = run(r, "lane-36", "a", day=3, verdict="fail", statuses={"node-reboot": "failed"})
    latest = {
        str(status_of([r], order).runs.query("latest")["statement_digest"].item())
        for order in ([a, b], [b, a])
    }
    assert latest == {max(a.statement_digest, b.statement_digest)}


def test_state_of_counts() -> None:
    passed = pd.Series([0, 1, 2, 3, 0, 1, 0])
    failed = pd.Series([0, 0, 0, 0, 1, 1, 2])
    assert list(state_of(passed, failed)) == [
        UNTESTED,
        SINGLE,
        CONFIRMED,
        CONFIRMED,
        FAILING,
        CONTESTED,
        FAILING,
    ]


def test_consensus_counts_distinct_signers_and_keeps_untested_rows() -> None:
    rows = pd.DataFrame(
        {
            "k": ["x", "x", "x", "x", "y"],
            "signer_id": [0, 0, 1, 2, 0],
            "fail": [False, True, False, False, False],
        }
    )
    expected = pd.DataFrame({"k": ["x", "y", "z"]})
    out = _consensus(rows, expected, ["k"]).set_index("k")
    assert out.loc["x", ["passed", "failed", "state"]].tolist() == [2, 1, CONTESTED]
    assert out.loc["y", ["passed", "failed", "state"]].tolist() == [1, 0, SINGLE]
    assert out.loc["z", ["passed", "failed", "state"]].tolist() == [0, 0, UNTESTED]
    assert out["required"].tolist() == [True, True, True]
    extra = _consensus(rows, pd.DataFrame({"k": ["y"]}), ["k"]).set_index("k")
    assert extra["required"].to_dict() == {"x": False, "y": True}


def test_check_rows_drop_what_did_not_run_and_passes_on_zero_targets() -> None:
    r = recipe(profile=STANDARD)
    statuses = {"node-reboot": "skipped", "steady-state": "pending", "initial-deploy": "proposed"}
    e = run(r, "lane-36", "a", verdict="fail", statuses=statuses)
    e = _with_check(e, CheckResult("node-reboot", "passed", 0))  # a pass on no target
    e = _with_check(e, CheckResult("steady-state", "failed", 0))  # a failure on none: kept
    latest = pd.DataFrame({"idx": [0], "scope": [3], "signer_id": [5]})
    rows = _check_rows([e], latest, LANES)
    kept = {(str(c), bool(f)) for c, f in zip(rows["check"], rows["fail"], strict=True)}
    assert ("node-reboot", False) not in kept and ("node-reboot", True) not in kept
    assert ("steady-state", True) in kept and ("steady-state", False) not in kept
    assert not any(c == "initial-deploy" for c, _ in kept)
    assert set(rows["scope"]) == {3} and set(rows["signer_id"]) == {5}
    assert any(c.startswith("kpi:") for c, _ in kept)
    assert np.all(
        rows["fail"].to_numpy() == [f for _, f in zip(rows["check"], rows["fail"], strict=True)]
    )


def test_an_unlogged_pass_alone_still_counts() -> None:
    r = recipe(profile=STANDARD)
    s = status_of([r], [replace(run(r, "lane-36", "a"), integrated_time=None)])
    assert bool(s.runs["latest"].item()) and summary(s, STANDARD)["consensus"] == SINGLE


def test_partial_is_not_untested() -> None:
    r = recipe()
    s = status_of([r], [run(r, "lane-36", "a")])
    assert summary(s)["consensus"] == PARTIAL


def test_a_run_attested_exactly_the_skew_after_its_log_time_counts() -> None:
    r = recipe(profile=STANDARD)
    e = run(r, "lane-36", "a", day=3)
    assert e.integrated_time is not None
    at_skew = replace(e, integrated_time=e.integrated_time - CLOCK_SKEW_SECONDS)
    s = status_of([r], [at_skew])
    assert bool(s.runs["counted"].item()), s.runs["exclusion"].item()
    past = replace(e, integrated_time=e.integrated_time - CLOCK_SKEW_SECONDS - 1)
    assert status_of([r], [past]).runs["exclusion"].item() == "attested-after-logged"


def test_a_pass_on_one_target_counts_and_an_unjudged_kpi_does_not() -> None:
    r = recipe(profile=STANDARD)
    e = _with_check(run(r, "lane-36", "a"), CheckResult("node-reboot", "passed", 1))
    k = e.statement.kpis[0]
    e = replace(
        e, statement=replace(e.statement, kpis=(replace(k, status=None), *e.statement.kpis[1:]))
    )
    latest = pd.DataFrame({"idx": [0], "scope": [0], "signer_id": [0]})
    rows = _check_rows([e], latest, LANES)
    checks = [str(c) for c in rows["check"]]
    assert checks.count("node-reboot") == 2  # the pass on 36 targets and the one on 1
    assert f"kpi:{k.id}" not in checks
    assert f"kpi:{e.statement.kpis[1].id}" in checks
