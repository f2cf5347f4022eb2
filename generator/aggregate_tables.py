"""Aggregate in pandas: the reference `generator.aggregate.aggregate` is held to.

The status was first computed here, as tables (`StatusTables`, `status_tables`), and turned into
the records by `status_records`; `aggregate_reference` is the two together. The build computes
the same records in plain Python (`generator.aggregate.aggregate`): a one-file rebuild
aggregates one recipe, 20 records and a few hundred rows, where a DataFrame's fixed costs
outweigh its vector speed, and importing pandas and numpy was most of the stage's cost.
Measured (CPU, min of 3-7, load ~6): `import generator.aggregate` 0.38-0.43 -> 0.15-0.23 s; one
recipe of 200 x 4,000 (20 records) 0.080-0.097 -> 0.002 s; every recipe at once (the cold
stage, 400 results x 4,000 records, 0.17 s of it the judge both share) 0.73-0.86 -> 0.55-0.60 s.
tests/test_aggregate_differential.py holds the two to one answer on random catalogs and
evidence (every state, exclusion, profile and lane); the model-level tests
(tests/test_aggregate.py) read these tables.

Nothing in a build imports this module: pandas stays here, with the tests that read it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat
from operator import attrgetter
from typing import Any

import numpy as np
import pandas as pd

from generator.aggregate import (
    _INVALID_CLASSES,
    _RUN_COLUMNS,
    ATTESTED_AFTER_LOGGED,
    CONFIRMED,
    CONTESTED,
    FAILING,
    HEALTH_PHASES,
    INVALID,
    PARTIAL,
    QUALIFYING,
    SAMPLE_OUTSIDE_DEMO,
    SINGLE,
    STALE,
    STALE_CRITERIA,
    UNALLOWLISTED,
    UNKNOWN_LANE,
    UNTESTED,
    UNVERIFIED,
    VERDICT_MISMATCH,
    CheckStatus,
    ComponentQualification,
    Exclusion,
    HealthStatus,
    LaneStatus,
    RecipeStatus,
    RunStatus,
    Status,
    _judgements,
    _log_time,
    _run_row,
)
from generator.catalog.lanes import Lanes, Verdict
from generator.core.records import DIMENSIONS, Consensus, RecipeResult
from generator.evidence.judge import CLOCK_SKEW_SECONDS, Judgement
from generator.evidence.model import SCALE_QUALIFICATION_V1, Evidence, FailureClass
from generator.validate import health_of

_KEYS_RUN = ["recipe", "profile", "lane"]


@dataclass(frozen=True, slots=True)
class StatusTables:
    """The status as pandas tables, inside this module (`aggregate` turns them into records).
    DataFrames are sorted and indexed 0..n-1; treat them as read-only.

    `demo`: a demo trust root was in use, so sample evidence may be counted (and is marked).
    """

    health: pd.DataFrame  # recipe, health, coverage, R, D, P, C, problems
    runs: pd.DataFrame  # every evidence record, counted or not, with why
    checks: pd.DataFrame  # recipe, profile, lane, phase, check, required, passed, failed, state
    phases: pd.DataFrame  # recipe, profile, lane, phase, state
    lanes: pd.DataFrame  # recipe, profile, lane, nodes, rung, passed, failed, state, qualified
    recipes: pd.DataFrame  # recipe, profile, ..., consensus, ceiling_lane, ceiling_nodes, ...
    components: pd.DataFrame  # component, version, lane, nodes, profiles, recipes
    demo: bool = False

    @property
    def excluded(self) -> pd.DataFrame:
        return self.runs[~self.runs["counted"]].reset_index(drop=True)


# ---------------------------------------------------------------- helpers


def state_of(passed: pd.Series, failed: pd.Series) -> np.ndarray:
    """The consensus state from counts of distinct passing and failing signers."""
    return np.select(
        [(passed > 0) & (failed > 0), failed > 0, passed >= 2, passed == 1],
        [CONTESTED, FAILING, CONFIRMED, SINGLE],
        default=UNTESTED,
    )


def rollup(df: pd.DataFrame, keys: list[str], column: str = "state") -> pd.DataFrame:
    """Worst-first roll-up of `column` over `keys`, PARTIAL when only some rows are untested."""
    # compared as a plain object array: the string column's own `eq` costs a pass over its
    # missing-value mask each time (the states are never missing)
    s = df[column].to_numpy(dtype=object)
    flags = pd.DataFrame(
        {
            "failing": s == FAILING,
            "contested": s == CONTESTED,
            "untested": s == UNTESTED,
            "partial": s == PARTIAL,
            "single": s == SINGLE,
        },
        index=df.index,
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
    return pd.DataFrame({column: state}, index=g.index).reset_index()


def _applies(frame: pd.DataFrame, prefix: str) -> pd.Series:
    """Rows whose recipe criteria satisfy the `applies_<dim>` pattern (NaN = any)."""
    ok = pd.Series(True, index=frame.index)
    for d in DIMENSIONS:
        pattern = frame[f"{prefix}{d}"]
        ok &= pattern.isna() | (pattern == frame[d])
    return ok


def _lane_frames(lanes: Lanes) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(lane table, required rows per lane: scenarios and KPIs with their applicability)."""
    lane_rows = [
        (ln.name, ln.nodes, ln.racks, ln.criteria_version, i) for i, ln in enumerate(lanes.lanes)
    ]
    lane_df = pd.DataFrame(
        lane_rows, columns=["lane", "lane_nodes_def", "racks", "criteria_current", "lane_rank"]
    )
    req: list[tuple[Any, ...]] = []
    for ln in lanes.lanes:
        for s in lanes.scenarios:
            if s.id in ln.scenarios and s.phase in ln.phases:
                pat = s.applies_to
                req.append(
                    (ln.name, s.phase, s.id, *((pat.get(d) if pat else None) for d in DIMENSIONS))
                )
        for k in lanes.kpis:
            if ln.threshold(k.id) is not None and k.phase in ln.phases:
                pat = k.applies_to
                req.append(
                    (
                        ln.name,
                        k.phase,
                        f"kpi:{k.id}",
                        *((pat.get(d) if pat else None) for d in DIMENSIONS),
                    )
                )
    req_df = pd.DataFrame(
        req, columns=["lane", "phase", "check", *(f"applies_{d}" for d in DIMENSIONS)]
    )
    return lane_df, req_df


def _recipe_frame(recipes: Sequence[RecipeResult]) -> pd.DataFrame:
    rows = [
        (
            r.name,
            r.scale_profile,
            r.scale_profile_version,
            r.digest,
            *(r.criteria.get(d) for d in DIMENSIONS),
        )
        for r in recipes
    ]
    cols = ["recipe", "profile", "profile_version", "digest", *DIMENSIONS]
    return pd.DataFrame(rows, columns=cols).drop_duplicates(["recipe", "profile"], keep="last")


# ---------------------------------------------------------------- structural health


def structural_health(
    recipes: Sequence[RecipeResult], failures: Mapping[str, str] = {}
) -> pd.DataFrame:
    """Health per leaf, by the rules of `generator.validate.leaf_health` (what `list` and the site
    show): fail if it does not resolve; warn if a constraint is malformed or a chart is not pinned
    to a released semantic version; coverage counts the declared checks per phase."""
    rows: list[tuple[Any, ...]] = []
    seen: set[str] = set()
    for r in recipes:
        if r.name in seen:
            continue
        seen.add(r.name)
        h = health_of(r)
        counts = [h.coverage[phase] for _, phase in HEALTH_PHASES]
        rows.append((r.name, h.health, h.coverage_text(), *counts, h.reasons))
    for name, why in sorted(failures.items()):
        if name not in seen:
            rows.append(
                (name, "fail", "R:0 D:0 P:0 C:0", 0, 0, 0, 0, (f"does not resolve: {why}",))
            )
    cols = ["recipe", "health", "coverage", "R", "D", "P", "C", "problems"]
    return pd.DataFrame(rows, columns=cols).sort_values("recipe", ignore_index=True)


def _run_rows(evidence: Sequence[Evidence]) -> pd.DataFrame:
    rows = [tuple(_run_row(i, e)) for i, e in enumerate(evidence)]
    frame = pd.DataFrame.from_records(rows, columns=_RUN_COLUMNS)
    frame["logged"] = frame["logged"].astype("float64")  # seconds since the epoch; NaN: none
    if rows:
        return frame
    types: dict[str, Any] = {c: bool for c in ("verified", "stale_flag", "sample")}
    types |= {c: "int64" for c in ("idx", "lane_nodes", "observed_nodes")}
    types |= {"logged": "float64"}
    types |= {c: str for c in _RUN_COLUMNS if c not in types and c != "reasons"}
    return frame.astype(types)


def _judge_runs(
    runs: pd.DataFrame,
    rec: pd.DataFrame,
    lane_df: pd.DataFrame,
    demo: bool,
    demo_roots: Collection[str],
    judged: tuple[list[str], list[str], list[Judgement | None]],
) -> pd.DataFrame:
    """Add current digest, exclusion (why not counted), counted, latest, effective verdict."""
    recomputed, mismatch, judgements = judged
    runs["recomputed"] = [recomputed[i] for i in runs["idx"]] if len(runs) else ""
    runs["judgement"] = [judgements[i] for i in runs["idx"]] if len(runs) else None
    runs["mismatch"] = [mismatch[i] for i in runs["idx"]] if len(runs) else ""
    runs = runs.merge(
        rec[["recipe", "profile", "digest"]].rename(columns={"digest": "current_digest"}),
        on=["recipe", "profile"],
        how="left",
    )
    runs = runs.merge(lane_df, on="lane", how="left")
    runs["exclusion"] = _exclusions(runs, demo, demo_roots)
    runs["counted"] = runs["exclusion"].eq("")
    runs["latest"] = _latest(runs)
    # a scale run's verdict is the recomputed one (a counted run's signed verdict agrees with it)
    scale = runs["predicate_type"].eq(SCALE_QUALIFICATION_V1)
    runs["effective"] = np.where(
        runs["recomputed"].ne(""),
        runs["recomputed"],
        np.where(runs["verdict"].eq(Verdict.PASS) & ~scale, Verdict.PASS, Verdict.FAIL),
    )
    runs["downgraded"] = _downgraded(runs)
    return runs


def _exclusions(runs: pd.DataFrame, demo: bool, demo_roots: Collection[str]) -> np.ndarray:
    """Why each run is not counted ("" when it is), the first reason that applies."""
    scale = runs["predicate_type"].eq(SCALE_QUALIFICATION_V1)
    cls = runs["class"]
    rejected = ~runs["verified"]
    # upstream recipe-evidence carries upstream's recipe digest: the verifier judged it against
    # upstream's digest of the current recipe (generator.evidence.upstream), not this catalog's
    digest_stale = scale & (
        runs["current_digest"].isna() | (runs["current_digest"] != runs["recipe_digest"])
    )
    runs["when"] = pd.to_datetime(runs["attested_at"], utc=True, format="ISO8601", errors="coerce")
    attested = (runs["when"] - pd.Timestamp(0, tz="UTC")).dt.total_seconds()
    # attested (the run's own clock) after the transparency log recorded it (the log's clock)
    late = runs["verified"] & (attested > runs["logged"] + CLOCK_SKEW_SECONDS)
    rules: tuple[tuple[pd.Series, Exclusion], ...] = (
        (rejected & cls.eq(str(FailureClass.SIGNER_NOT_ALLOWED)), UNALLOWLISTED),
        (rejected & cls.isin([str(c) for c in _INVALID_CLASSES]), INVALID),
        (rejected & cls.eq(str(FailureClass.STALE)), STALE),
        # judged already (records of `evidence.stage.verify_stage`)
        (rejected & cls.eq(str(FailureClass.VERDICT_MISMATCH)), VERDICT_MISMATCH),
        (rejected & cls.eq(str(FailureClass.ATTESTED_AFTER_LOGGED)), ATTESTED_AFTER_LOGGED),
        (rejected, UNVERIFIED),
        (late, ATTESTED_AFTER_LOGGED),
        (runs["stale_flag"] | digest_stale, STALE),
        (runs["sample"] & ~(runs["trust_root"].isin(list(demo_roots)) | demo), SAMPLE_OUTSIDE_DEMO),
        (scale & runs["lane_rank"].isna(), UNKNOWN_LANE),
        (scale & (runs["criteria_version"] != runs["criteria_current"]), STALE_CRITERIA),
        (scale & runs["mismatch"].ne(""), VERDICT_MISMATCH),
    )
    return np.select([when for when, _ in rules], [why for _, why in rules], default="")


def _latest(runs: pd.DataFrame) -> np.ndarray:
    """The latest run per signer and scope, among counted runs, by the transparency log's
    verified time (never the signed attestedAt: a pass dated 2099 cannot hide a later failure)."""
    order = runs.sort_values(
        [*_KEYS_RUN, "signer", "logged", "statement_digest"], na_position="first", kind="stable"
    )
    counted = order[order["counted"]]
    latest_idx = counted.drop_duplicates([*_KEYS_RUN, "signer"], keep="last").index
    latest = np.zeros(len(runs), dtype=bool)
    latest[runs.index.get_indexer(latest_idx)] = True
    return latest


def _downgraded(runs: pd.DataFrame) -> np.ndarray:
    """For a run invalid because of what it signed, the disagreement named ("" otherwise)."""
    return np.select(
        [runs["exclusion"].eq(VERDICT_MISMATCH), runs["exclusion"].eq(ATTESTED_AFTER_LOGGED)],
        [
            runs["mismatch"],
            "attested-after-logged: attestedAt "
            + runs["attested_at"].astype(str)
            + " is later than the transparency log's time for the entry ("
            + runs["logged"].map(_log_time)
            + ")",
        ],
        default="",
    )


# ---------------------------------------------------------------- consensus


class _Codes(dict[Any, int]):
    """Value → integer code, a new code for each value not seen before (first seen, first code)."""

    def __missing__(self, key: Any) -> int:
        code = self[key] = len(self)
        return code


def _categorical(codes: _Codes, at: Sequence[int]) -> pd.Categorical:
    """`pd.Categorical(values)` of the values whose codes are `at`: the categories sorted, and
    values counted once each instead of hashed per row."""
    values = list(codes)
    if not values or not all(type(v) is str for v in values):
        inverse = {code: v for v, code in codes.items()}
        return pd.Categorical([inverse[i] for i in at])
    categories = sorted(values)
    rank = np.empty(len(values), dtype=np.int64)
    rank[[codes[v] for v in categories]] = np.arange(len(categories))
    dtype = pd.CategoricalDtype(categories)
    return pd.Categorical.from_codes(rank[np.asarray(at, dtype=np.int64)], dtype=dtype)


def _check_rows(evidence: Sequence[Evidence], latest: pd.DataFrame, lanes: Lanes) -> pd.DataFrame:
    """One row per check/KPI result of each latest counted run: scope, signer_id, phase, check,
    fail. Skipped, pending and unjudged KPIs are dropped, and so is a "pass" on zero targets.

    This loop (over the records' checks) is the only per-row Python on the hot path: it turns
    phase, check and status into integer codes as it goes, each distinct value looked at once."""
    kpi_phase = {k.id: k.phase for k in lanes.kpis}
    phases, checks, statuses = _Codes(), _Codes(), _Codes()
    phase_code, check_code, status_code = (
        phases.__getitem__,
        checks.__getitem__,
        statuses.__getitem__,
    )
    at: list[int] = []
    phase: list[int] = []
    check: list[int] = []
    status: list[int] = []
    targets: list[int | None] = []
    name_of, status_of_, targets_of, id_of = (
        attrgetter("name"),
        attrgetter("status"),
        attrgetter("targets"),
        attrgetter("id"),
    )
    for pos, i in enumerate(latest["idx"].tolist()):
        st = evidence[i].statement
        assert st is not None
        for ph, cs in st.phases.items():
            n = len(cs)
            at.extend(repeat(pos, n))
            phase.extend(repeat(phase_code(ph), n))
            check.extend(map(check_code, map(name_of, cs)))
            status.extend(map(status_code, map(status_of_, cs)))
            targets.extend(map(targets_of, cs))
        ks = st.kpis
        n = len(ks)
        at.extend(repeat(pos, n))
        phase.extend(phase_code(kpi_phase.get(k, "performance")) for k in map(id_of, ks))
        check.extend(map(check_code, map("kpi:".__add__, map(id_of, ks))))
        status.extend(map(status_code, map(status_of_, ks)))
        targets.extend(repeat(None, n))
    where = np.asarray(at, dtype=np.int64)
    zero = np.asarray(targets, dtype=object) == 0
    # per distinct status: "passed", or not run (skipped, pending, proposed, absent)
    by_code = list(statuses)
    status_at = np.asarray(status, dtype=np.int64)
    passed = np.asarray([v == "passed" for v in by_code], dtype=bool)[status_at]
    not_run = np.asarray(
        [v in ("skipped", "pending", "proposed") or bool(pd.isna(v)) for v in by_code], dtype=bool
    )[status_at]
    keep = ~not_run & ~(passed & zero)
    return pd.DataFrame(
        {
            "scope": latest["scope"].to_numpy()[where][keep],
            "signer_id": latest["signer_id"].to_numpy()[where][keep],
            "phase": _categorical(phases, phase)[keep],
            "check": _categorical(checks, check)[keep],
            "fail": ~passed[keep],  # failed, other, anything unknown
        }
    )


def _consensus(rows: pd.DataFrame, expected: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Distinct passing/failing signers per key (a signer failing anywhere in a row fails it),
    outer-joined with the expected rows so that untested ones appear."""
    per_signer = rows.groupby([*keys, "signer_id"], sort=False, observed=True)["fail"].any()
    counts = per_signer.groupby(level=keys, sort=False, observed=True).agg(["sum", "count"])
    counts = counts.rename(columns={"sum": "failed"})
    counts["passed"] = counts["count"] - counts["failed"]
    counts = counts.drop(columns="count").reset_index()
    for k in keys:
        if isinstance(counts[k].dtype, pd.CategoricalDtype):
            counts[k] = counts[k].astype(str)
    exp = expected[keys].drop_duplicates().assign(required=True)
    out = exp.merge(counts, on=keys, how="outer")
    out["required"] = out["required"].fillna(False).astype(bool)
    out[["passed", "failed"]] = out[["passed", "failed"]].fillna(0).astype(int)
    out["state"] = state_of(out["passed"], out["failed"])
    return out.sort_values(keys, ignore_index=True)


def _with_scope(frame: pd.DataFrame, scopes: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """Add the scope's `columns` (recipe, profile, lane, rp) in front, by integer lookup."""
    ids = frame["scope"].to_numpy()
    head = {c: scopes[c].to_numpy()[ids] for c in columns}
    return pd.concat([pd.DataFrame(head), frame.reset_index(drop=True)], axis=1)


# ---------------------------------------------------------------- the whole status, as tables


def status_tables(
    recipes: Sequence[RecipeResult],
    evidence: Sequence[Evidence],
    lanes: Lanes,
    ladders: Mapping[str, Sequence[str]],
    *,
    demo: bool = False,
    demo_roots: Collection[str] = (),
    failures: Mapping[str, str] = {},
) -> StatusTables:
    """The status tables (the vectorised computation behind `aggregate`; arguments as there)."""
    lane_df, req_df = _lane_frames(lanes)
    rec = _recipe_frame(recipes)
    health = structural_health(recipes, failures)

    judged = _judgements(evidence, recipes, lanes)
    runs = _judge_runs(_run_rows(evidence), rec, lane_df, demo, demo_roots, judged)
    latest = runs[runs["latest"]]

    # the ladder rows of every recipe × profile
    ladder_df = pd.DataFrame(
        [(p, ln, i) for p, lad in ladders.items() for i, ln in enumerate(lad)],
        columns=["profile", "lane", "rung"],
    )
    rungs = rec.merge(ladder_df, on="profile", how="inner").merge(lane_df, on="lane", how="left")
    scopes = _scopes(rungs, latest)
    latest = latest.merge(scopes[[*_KEYS_RUN, "scope"]], on=_KEYS_RUN, how="left")
    latest["signer_id"] = pd.factorize(latest["signer"])[0]
    rungs = rungs.merge(scopes[[*_KEYS_RUN, "scope"]], on=_KEYS_RUN, how="left")

    checks, phases, consensus = _check_tables(evidence, lanes, latest, rungs, req_df, scopes)
    lane_state = _lane_table(latest, rungs, scopes, lane_df)
    summary = _summary(rec, runs, lane_state, consensus, health)
    return StatusTables(
        health=health,
        runs=runs.sort_values(["recipe", "profile", "lane_rank", "path"], ignore_index=True),
        checks=checks,
        phases=phases,
        lanes=lane_state,
        recipes=summary,
        components=_components(recipes, summary),
        demo=demo or bool(demo_roots),
    )


def _scopes(rungs: pd.DataFrame, latest: pd.DataFrame) -> pd.DataFrame:
    """Every (recipe, profile, lane) of a rung or of a counted run, as integer ids (`scope`) in
    sorted order, and `rp` the id of its recipe × profile (grouping on integers is what keeps
    20,000 records fast)."""
    scopes = (
        pd.concat([rungs[_KEYS_RUN], latest[_KEYS_RUN]])
        .drop_duplicates()
        .sort_values(_KEYS_RUN, ignore_index=True)
    )
    scopes["scope"] = np.arange(len(scopes), dtype=np.int64)
    scopes["rp"] = scopes.groupby(["recipe", "profile"], sort=True).ngroup()
    return scopes


def _check_tables(
    evidence: Sequence[Evidence],
    lanes: Lanes,
    latest: pd.DataFrame,
    rungs: pd.DataFrame,
    req_df: pd.DataFrame,
    scopes: pd.DataFrame,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(checks, phases, consensus per recipe × profile): the expected rows are the applicable
    required scenarios and KPIs of every ladder lane, joined with what the latest runs say."""
    expected = rungs.merge(req_df, on="lane", how="inner")
    expected = expected[_applies(expected, "applies_")]
    check_rows = _check_rows(evidence, latest, lanes)
    checks = _consensus(check_rows, expected, ["scope", "phase", "check"])
    checks = _with_scope(checks, scopes, ["rp"])
    phases = _with_scope(rollup(checks, ["scope", "phase"]), scopes, _KEYS_RUN)
    consensus = _with_scope(
        rollup(checks, ["rp"]).merge(scopes.drop_duplicates("rp")[["rp", "scope"]], on="rp"),
        scopes,
        ["recipe", "profile"],
    )[["recipe", "profile", "state"]].rename(columns={"state": "consensus"})
    checks = _with_scope(checks.drop(columns="rp"), scopes, _KEYS_RUN).drop(columns="scope")
    return checks, phases.drop(columns="scope"), consensus


def _lane_table(
    latest: pd.DataFrame, rungs: pd.DataFrame, scopes: pd.DataFrame, lane_df: pd.DataFrame
) -> pd.DataFrame:
    """Per recipe × profile × lane: consensus over the latest scale runs' verdicts."""
    lane_rows = latest[latest["predicate_type"].eq(SCALE_QUALIFICATION_V1)].assign(
        fail=lambda d: d["effective"].ne(Verdict.PASS)
    )
    lane_state = _with_scope(_consensus(lane_rows, rungs, ["scope"]), scopes, _KEYS_RUN)
    lane_state = lane_state.merge(rungs[["scope", "rung"]], on="scope", how="left").merge(
        lane_df[["lane", "lane_nodes_def"]], on="lane", how="left"
    )
    lane_state = lane_state.drop(columns="scope").rename(columns={"lane_nodes_def": "nodes"})
    lane_state["nodes"] = lane_state["nodes"].fillna(0).astype(int)
    lane_state["qualified"] = lane_state["state"].isin(QUALIFYING)
    return lane_state.sort_values(["recipe", "profile", "nodes", "lane"], ignore_index=True)


def _ceilings(lane_state: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(ceiling lane and nodes, first blocked rung and its state) per recipe × profile: the
    contiguous qualified rungs from the bottom of each ladder."""
    ladder_rows = lane_state[lane_state["rung"].notna()].sort_values(
        ["recipe", "profile", "rung"], kind="stable"
    )
    ok = ladder_rows["qualified"].astype(int)
    ladder_rows = ladder_rows.assign(
        contiguous=ok.groupby([ladder_rows["recipe"], ladder_rows["profile"]]).cumprod()
    )
    top = (
        ladder_rows[ladder_rows["contiguous"].eq(1)]
        .groupby(["recipe", "profile"], sort=False)
        .last()[["lane", "nodes"]]
        .rename(columns={"lane": "ceiling_lane", "nodes": "ceiling_nodes"})
    )
    blocked = (
        ladder_rows[ladder_rows["contiguous"].eq(0)]
        .groupby(["recipe", "profile"], sort=False)
        .first()[["lane", "state"]]
        .rename(columns={"lane": "blocked_lane", "state": "blocked_state"})
    )
    return top, blocked


def _summary(
    rec: pd.DataFrame,
    runs: pd.DataFrame,
    lane_state: pd.DataFrame,
    consensus: pd.DataFrame,
    health: pd.DataFrame,
) -> pd.DataFrame:
    """One row per recipe × profile: consensus, ceiling, where it is blocked, run counts."""
    top, blocked = _ceilings(lane_state)
    counted = runs[runs["counted"]]
    n_runs = counted.groupby(["recipe", "profile"]).size().rename("runs")
    n_signers = counted.groupby(["recipe", "profile"])["signer"].nunique().rename("signers")
    sample = counted.groupby(["recipe", "profile"])["sample"].any().rename("sample")
    excluded = runs[~runs["counted"]]
    n_excluded = excluded.groupby(["recipe", "profile"]).size().rename("excluded")
    # unreadable statements name no profile: they count against every profile of their recipe
    n_unscoped = excluded[excluded["profile"].eq("")].groupby("recipe").size()
    summary = (
        rec.set_index(["recipe", "profile"])
        .join([top, blocked, n_runs, n_signers, sample, n_excluded], how="left")
        .reset_index()
        .merge(consensus, on=["recipe", "profile"], how="left")
    )
    summary["consensus"] = summary["consensus"].fillna(UNTESTED)
    summary["ceiling_nodes"] = summary["ceiling_nodes"].fillna(0).astype(int)
    for col in ("runs", "signers", "excluded"):
        summary[col] = summary[col].fillna(0).astype(int)
    summary["excluded"] += summary["recipe"].map(n_unscoped).fillna(0).astype(int)
    summary["sample"] = summary["sample"].fillna(False).astype(bool)
    summary["ceiling_lane"] = (
        summary["ceiling_lane"].astype(object).where(summary["ceiling_lane"].notna(), None)
    )
    summary = summary.merge(health[["recipe", "health", "coverage"]], on="recipe", how="left")
    return summary.sort_values(["recipe", "profile"], ignore_index=True)


def _components(recipes: Sequence[RecipeResult], summary: pd.DataFrame) -> pd.DataFrame:
    """Per component and pinned version: the largest lane qualified, its profile(s), recipes."""
    rows = [
        (c.name, c.version, r.name, r.scale_profile)
        for r in recipes
        for c in r.components
        if c.version is not None
    ]
    comp = pd.DataFrame(rows, columns=["component", "version", "recipe", "profile"])
    comp = comp.merge(
        summary[["recipe", "profile", "ceiling_lane", "ceiling_nodes"]],
        on=["recipe", "profile"],
        how="left",
    )
    comp["ceiling_nodes"] = comp["ceiling_nodes"].fillna(0).astype(int)
    best = comp.groupby(["component", "version"])["ceiling_nodes"].transform("max")
    n_recipes = comp.groupby(["component", "version"])["recipe"].nunique().rename("recipes")
    top = comp[comp["ceiling_nodes"].eq(best) & best.gt(0)]
    at_top = top.groupby(["component", "version"]).agg(
        lane=("ceiling_lane", "first"),
        nodes=("ceiling_nodes", "first"),
        profiles=("profile", lambda s: tuple(sorted(set(s)))),
        qualified_by=("recipe", lambda s: tuple(sorted(set(s)))),
    )
    out = n_recipes.to_frame().join(at_top, how="left").reset_index()
    out["nodes"] = out["nodes"].fillna(0).astype(int)
    out["lane"] = out["lane"].astype(object).where(out["lane"].notna(), None)
    for col in ("profiles", "qualified_by"):
        out[col] = out[col].apply(lambda v: v if isinstance(v, tuple) else ())
    return out.sort_values(["component", "version"], ignore_index=True)


def components_of_reference(
    results: Sequence[RecipeResult], statuses: Sequence[RecipeStatus]
) -> tuple[ComponentQualification, ...]:
    """`components_of` through the summary table `aggregate` makes it from (the reference)."""
    summary = pd.DataFrame(
        [(s.recipe, s.profile, s.ceiling_lane, s.ceiling_nodes) for s in statuses],
        columns=["recipe", "profile", "ceiling_lane", "ceiling_nodes"],
    )
    return _component_records(_components(results, summary))


_CONSENSUS: Mapping[str, Consensus] = {str(c): c for c in Consensus}
_EXCLUSION: Mapping[str, Exclusion | None] = {"": None} | {str(e): e for e in Exclusion}
_VERDICT: Mapping[str, Verdict] = {str(v): v for v in Verdict}


def _optional(v: Any) -> Any:
    """NaN/NA → None, numpy scalars → Python scalars."""
    if v is None or (isinstance(v, float) and np.isnan(v)) or v is pd.NA:
        return None
    if isinstance(v, np.generic):
        return v.item()
    return v


def status_records(tables: StatusTables) -> Status:
    """The tables as records (the one way out of pandas)."""
    runs = _run_records(tables.runs)
    by_index = {r.index: r for r in runs}
    sorted_runs = [by_index[i] for i in tables.runs["idx"].tolist()]
    lanes = _lane_records(tables, sorted_runs)
    checks = _check_records(tables.checks)
    excluded: dict[str, list[RunStatus]] = {}
    for run in sorted_runs:
        if not run.counted:
            excluded.setdefault(run.recipe, []).append(run)
    out = []
    for r in tables.recipes.to_dict("records"):
        key = (r["recipe"], r["profile"])
        blocked = _optional(r["blocked_lane"])
        out.append(
            RecipeStatus(
                recipe=r["recipe"],
                profile=r["profile"],
                profile_version=r["profile_version"],
                digest=r["digest"],
                health=_optional(r["health"]),
                coverage=_optional(r["coverage"]),
                consensus=_CONSENSUS[r["consensus"]],
                ceiling_lane=_optional(r["ceiling_lane"]),
                ceiling_nodes=int(r["ceiling_nodes"]),
                blocked_lane=blocked,
                blocked_state=None if blocked is None else _CONSENSUS[r["blocked_state"]],
                runs=int(r["runs"]),
                signers=int(r["signers"]),
                excluded=int(r["excluded"]),
                sample=bool(r["sample"]),
                lanes=lanes.get(key, ()),
                checks=checks.get(key, ()),
                excluded_evidence=tuple(
                    x for x in excluded.get(r["recipe"], ()) if x.profile in (r["profile"], "")
                ),
            )
        )
    return Status(
        health=_health_records(tables.health),
        recipes=tuple(out),
        components=_component_records(tables.components),
        runs=tuple(sorted(runs, key=attrgetter("index"))),
        demo=tables.demo,
    )


def _run_records(runs: pd.DataFrame) -> list[RunStatus]:
    """One `RunStatus` per row of the runs table, built column-wise (20,000 at scale)."""

    def col(name: str) -> list[Any]:
        return runs[name].tolist()

    return list(
        map(
            RunStatus,
            [int(i) for i in col("idx")],
            col("path"),
            col("recipe"),
            col("profile"),
            col("lane"),
            col("signer_label"),
            col("signer_class"),
            col("identity"),
            col("issuer"),
            col("attested_at"),
            col("verdict"),
            [_VERDICT[v] for v in col("effective")],
            [tuple(v) for v in col("reasons")],
            [bool(v) for v in col("sample")],
            [bool(v) for v in col("counted")],
            [bool(v) for v in col("latest")],
            [_EXCLUSION[v] for v in col("exclusion")],
            col("class"),
            col("message"),
            [str(v or "") for v in col("downgraded")],
            col("judgement"),
        )
    )


def _lane_records(
    tables: StatusTables, runs: Sequence[RunStatus]
) -> dict[tuple[str, str], tuple[LaneStatus, ...]]:
    """Per recipe × profile, its lanes with their phases and latest runs."""
    phases: dict[tuple[str, str, str], list[tuple[str, Consensus]]] = {}
    ph = tables.phases
    for recipe, profile, lane, phase, state in zip(
        ph["recipe"].tolist(),
        ph["profile"].tolist(),
        ph["lane"].tolist(),
        ph["phase"].tolist(),
        ph["state"].tolist(),
        strict=True,
    ):
        phases.setdefault((recipe, profile, lane), []).append((phase, _CONSENSUS[state]))
    latest: dict[tuple[str, str, str], list[RunStatus]] = {}
    for r in runs:
        if r.latest:
            latest.setdefault((r.recipe, r.profile, r.lane), []).append(r)
    out: dict[tuple[str, str], list[LaneStatus]] = {}
    for ln in tables.lanes.to_dict("records"):
        key = (ln["recipe"], ln["profile"], ln["lane"])
        lane_runs = sorted(latest.get(key, ()), key=lambda x: (x.signer_label, x.path))
        out.setdefault(key[:2], []).append(
            LaneStatus(
                lane=ln["lane"],
                nodes=int(ln["nodes"]),
                on_ladder=_optional(ln["rung"]) is not None,
                state=_CONSENSUS[ln["state"]],
                qualified=bool(ln["qualified"]),
                passed=int(ln["passed"]),
                failed=int(ln["failed"]),
                phases=tuple(sorted(phases.get(key, ()))),
                runs=tuple(lane_runs),
            )
        )
    return {k: tuple(v) for k, v in out.items()}


def _check_records(checks: pd.DataFrame) -> dict[tuple[str, str], tuple[CheckStatus, ...]]:
    """Per recipe × profile, its checks in table order (the hot part: built column-wise)."""
    recipe, profile = checks["recipe"].tolist(), checks["profile"].tolist()
    columns = zip(
        checks["lane"].tolist(),
        checks["phase"].tolist(),
        checks["check"].tolist(),
        [_CONSENSUS[s] for s in checks["state"].tolist()],
        checks["passed"].tolist(),
        checks["failed"].tolist(),
        checks["required"].tolist(),
        strict=True,
    )
    records = list(map(tuple.__new__, repeat(CheckStatus), columns))
    out: dict[tuple[str, str], tuple[CheckStatus, ...]] = {}
    start = 0
    for i in range(1, len(records) + 1):
        if i == len(records) or (recipe[i], profile[i]) != (recipe[start], profile[start]):
            out[(recipe[start], profile[start])] = tuple(records[start:i])
            start = i
    return out


def _health_records(health: pd.DataFrame) -> tuple[HealthStatus, ...]:
    return tuple(
        map(
            HealthStatus,
            health["recipe"].tolist(),
            health["health"].tolist(),
            health["coverage"].tolist(),
            [tuple(p) for p in health["problems"].tolist()],
        )
    )


def _component_records(components: pd.DataFrame) -> tuple[ComponentQualification, ...]:
    return tuple(
        ComponentQualification(
            component=c["component"],
            version=c["version"],
            lane=_optional(c["lane"]),
            nodes=int(c["nodes"]),
            profiles=tuple(c["profiles"]),
            qualified_by=tuple(c["qualified_by"]),
            recipes=int(c["recipes"]),
        )
        for c in components.to_dict("records")
    )


def aggregate_reference(
    recipes: Sequence[RecipeResult],
    evidence: Sequence[Evidence],
    lanes: Lanes,
    ladders: Mapping[str, Sequence[str]],
    *,
    demo: bool = False,
    demo_roots: Collection[str] = (),
    failures: Mapping[str, str] = {},
) -> Status:
    """`generator.aggregate.aggregate` through the tables (the reference; arguments as there)."""
    tables = status_tables(
        recipes,
        evidence,
        lanes,
        ladders,
        demo=demo,
        demo_roots=demo_roots,
        failures=failures,
    )
    return status_records(tables)
