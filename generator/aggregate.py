"""Aggregate: resolved recipes + verified evidence + lanes → status records.

`aggregate` is the stage's one function: it returns a `Status` of frozen records
(`RecipeStatus` with its `LaneStatus` and `CheckStatus` rows, `ComponentQualification`,
`RunStatus` per evidence record, `HealthStatus` per leaf). pandas stays inside this module: the
vectorised computation builds `StatusTables` (`status_tables`) and `status_records` turns them into
the records. The JSON and text the status command prints are projections of the records
(`generator.commands.status`).

Three axes, computed separately and never fused into one grade:

1. **Structural health** per leaf recipe: it resolves, its constraints are well formed, its
   charts are pinned → pass | warn | fail, with coverage `R:n D:n P:n C:n` (declared checks of
   the readiness, deployment, performance and conformance phases).
2. **Consensus** per check, phase, lane and recipe × profile over *distinct verified signers*,
   counting only the latest run of each signer. A signer is an entry of `catalog/signers.yaml`
   (its unique label), never an identity string: two identities one entry matches are one
   signer. The latest run is the one the transparency log recorded last (its verified
   integration time), never the one with the latest signed `attestedAt`. States: CONFIRMED
   (≥ 2 pass, 0 fail), SINGLE (1 pass, 0 fail), CONTESTED (pass and fail), FAILING (fail only),
   UNTESTED. A roll-up takes the worst state first and is PARTIAL when some rows are untested
   and none failing or contested. Skipped and pending results never count; an unknown status
   counts as a failure; a "pass" on zero targets is not a pass. KPIs are rows too
   (`kpi:<id>`), so a KPI failure shows.
3. **Scale ceiling** per recipe × profile: the largest lane such that every lane of the
   profile's ladder up to it has current, verified, passing evidence (a lane passes when its
   latest runs per signer agree on pass: CONFIRMED or SINGLE).

A scale run's verdict is never taken as signed: `generator.evidence.judge` recomputes it and
every KPI status from the run's signed raw results against the current lane criteria (observed
nodes and GPUs, pins, required scenarios on non-zero targets, KPI values and targets against
the catalog's thresholds). A run whose signed verdict, KPI status or threshold disagrees is
invalid (`verdict-mismatch`), and one whose `attestedAt` is later than the log's time is invalid
(`attested-after-logged`); both are listed with the disagreement named, never counted.

Evidence that is stale (older recipe digest or lane criteria), unverified, unallowlisted,
invalid, or sample outside the demo trust root is listed separately and never counted.

Component qualification: for every component and pinned version of the current recipes, the
largest lane at which current evidence has qualified a recipe pinning it, and under which
profile — a pin bump changes the recipe digest, so it reads "not yet qualified at scale" until a
lane is re-run.

Everything here is a pure function of its inputs; the hot path is vectorised pandas (the only
Python loops turn the input records into columns).
"""

from __future__ import annotations

import pickle
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from enum import StrEnum
from itertools import repeat
from operator import attrgetter
from typing import Any, NamedTuple, cast

import numpy as np
import pandas as pd

from generator.catalog.lanes import Lanes, Verdict
from generator.core.records import DEFAULT_PROFILE, DIMENSIONS, Consensus, RecipeResult
from generator.core.timeutil import rfc3339
from generator.evidence.judge import CLOCK_SKEW_SECONDS, Judge, Judgement, RowOutcome
from generator.evidence.model import (
    SCALE_QUALIFICATION_V1,
    Evidence,
    FailureClass,
    RejectedEvidence,
    RunState,
    VerifiedEvidence,
    constructor_args,
)
from generator.evidence.view import NOT_JUDGED, EvidenceView, Outcome, as_signed, with_outcome
from generator.fast.loaded import LoadedTuple
from generator.validate import health_of

CONFIRMED, SINGLE, CONTESTED, FAILING, UNTESTED, PARTIAL = (
    Consensus.CONFIRMED,
    Consensus.SINGLE,
    Consensus.CONTESTED,
    Consensus.FAILING,
    Consensus.UNTESTED,
    Consensus.PARTIAL,
)
# Worst first, for display. A roll-up is FAILING if any row is, else CONTESTED if any row is,
# else UNTESTED if every row is, else PARTIAL if any row is UNTESTED or PARTIAL, else SINGLE if
# any row is, else CONFIRMED (see `rollup`).
STATE_ORDER: tuple[Consensus, ...] = (FAILING, CONTESTED, PARTIAL, UNTESTED, SINGLE, CONFIRMED)
QUALIFYING = (CONFIRMED, SINGLE)

HEALTH_PHASES: tuple[tuple[str, str], ...] = (
    ("R", "readiness"),
    ("D", "deployment"),
    ("P", "performance"),
    ("C", "conformance"),
)


class Exclusion(StrEnum):
    """Why an evidence record is not counted (the `exclusion` column; "" there when counted)."""

    UNVERIFIED = "unverified"
    UNALLOWLISTED = "unallowlisted"
    INVALID = "invalid"
    STALE = "stale"
    STALE_CRITERIA = "stale-criteria"
    SAMPLE_OUTSIDE_DEMO = "sample-outside-demo"
    UNKNOWN_LANE = "unknown-lane"
    # the signed verdict or a KPI status is not what the raw results give under the lane's criteria
    VERDICT_MISMATCH = "verdict-mismatch"
    # the signed attestedAt is later than the transparency log's (verified) time for the entry
    ATTESTED_AFTER_LOGGED = "attested-after-logged"

    @property
    def explanation(self) -> str:
        """Why, in a sentence (the status document's `message` when the record carries none)."""
        return _EXPLANATIONS.get(self, "")

    @property
    def label(self) -> str:
        """Why, in a few words (the site's evidence tables)."""
        return _LABELS[self]

    @property
    def is_stale(self) -> bool:
        return self in (Exclusion.STALE, Exclusion.STALE_CRITERIA)


# The one place that words each exclusion for people.
_EXPLANATIONS: Mapping[Exclusion, str] = {
    Exclusion.STALE: "recipe digest is not the current one (the recipe changed since the run)",
    Exclusion.STALE_CRITERIA: "run judged against other lane criteria than the current ones",
    Exclusion.SAMPLE_OUTSIDE_DEMO: "sample evidence counts only under the demo trust root",
    Exclusion.UNKNOWN_LANE: "names a lane that lanes.yaml does not define",
}
_LABELS: Mapping[Exclusion, str] = {
    Exclusion.UNVERIFIED: "not verified",
    Exclusion.UNALLOWLISTED: "signer not in the allowlist",
    Exclusion.INVALID: "invalid statement",
    Exclusion.STALE: "stale: the recipe has changed since",
    Exclusion.STALE_CRITERIA: "stale: the lane criteria have changed since",
    Exclusion.SAMPLE_OUTSIDE_DEMO: "sample evidence counts only under the demo trust root",
    Exclusion.UNKNOWN_LANE: "names a lane the ladder does not have",
    Exclusion.VERDICT_MISMATCH: "its signed verdict is not what its raw results give under the "
    "lane criteria",
    Exclusion.ATTESTED_AFTER_LOGGED: "attested after the transparency log recorded it",
}

UNVERIFIED, UNALLOWLISTED, INVALID, STALE, STALE_CRITERIA, SAMPLE_OUTSIDE_DEMO, UNKNOWN_LANE = (
    Exclusion.UNVERIFIED,
    Exclusion.UNALLOWLISTED,
    Exclusion.INVALID,
    Exclusion.STALE,
    Exclusion.STALE_CRITERIA,
    Exclusion.SAMPLE_OUTSIDE_DEMO,
    Exclusion.UNKNOWN_LANE,
)
VERDICT_MISMATCH = Exclusion.VERDICT_MISMATCH
ATTESTED_AFTER_LOGGED = Exclusion.ATTESTED_AFTER_LOGGED


_INVALID_CLASSES = {
    FailureClass.PAYLOAD_TYPE,
    FailureClass.PREDICATE_TYPE_UNKNOWN,
    FailureClass.PREDICATE_SCHEMA,
    FailureClass.PATH_MISMATCH,
    FailureClass.POINTER_INVALID,  # upstream pointer files (generator.evidence.upstream)
    FailureClass.BUNDLE_INVALID,
}


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


# ---------------------------------------------------------------- evidence → runs


def _recipe_from_path(path: str) -> str:
    """The recipe directory of `.../evidence/<recipe>/<source>/<file>` (for unreadable statements)."""
    parts = path.replace("\\", "/").split("/")
    return parts[-3] if len(parts) >= 4 and parts[-4] == "evidence" else ""


_RUN_COLUMNS = [
    "idx",
    "path",
    "verified",
    "stale_flag",
    "class",
    "message",
    "sample",
    "signer",
    "signer_label",
    "signer_class",
    "identity",
    "issuer",
    "recipe",
    "profile",
    "lane",
    "lane_nodes",
    "criteria_version",
    "observed_nodes",
    "verdict",
    "attested_at",
    "recipe_digest",
    "statement_digest",
    "predicate_type",
    "reasons",
    "trust_root",
    "logged",
]


def _run_row(i: int, e: Evidence) -> tuple[Any, ...]:
    """One record's columns (`_RUN_COLUMNS`)."""
    st = e.statement
    if isinstance(e, VerifiedEvidence):
        # a signer is an allowlist entry (labels are unique in signers.yaml): one entry whose
        # pattern matches two workflows, or one workflow on two refs, is one signer
        signer, label, klass = e.signer_label, e.signer_label, str(e.signer_class)
        verified, stale, cls, message, sample = True, e.stale, "", "", e.sample
    else:
        assert isinstance(e, RejectedEvidence)
        signer = label = klass = ""
        verified, stale, cls, message = False, False, str(e.klass), e.message
        sample = bool(st.sample) if st else False
    head = (i, e.path, verified, stale, cls, message, sample, signer, label, klass)
    who = (e.signer_identity or "", e.signer_issuer or "")
    statement_digest = (e.statement_digest or "") if isinstance(e, VerifiedEvidence) else ""
    if st is None:  # unreadable: its recipe from its path, nothing else
        what: tuple[Any, ...] = (_recipe_from_path(e.path), "", "", -1, "", -1, "", "", "")
        what += (statement_digest, "", ())
    else:
        what = (
            st.recipe,
            st.scale_profile or DEFAULT_PROFILE,
            st.lane or "",
            st.lane_nodes if st.lane_nodes is not None else -1,
            st.criteria_version or "",
            st.observed_nodes if st.observed_nodes is not None else -1,
            st.verdict or "",
            st.attested_at or "",
            st.recipe_digest,
            statement_digest,
            st.predicate_type,
            tuple(st.reasons),
        )
    logged = e.integrated_time if isinstance(e, VerifiedEvidence) else None
    return (*head, *who, *what, e.trust_root or "", logged)


def _run_rows(evidence: Sequence[Evidence]) -> pd.DataFrame:
    rows = [_run_row(i, e) for i, e in enumerate(evidence)]
    frame = pd.DataFrame.from_records(rows, columns=_RUN_COLUMNS)
    frame["logged"] = frame["logged"].astype("float64")  # seconds since the epoch; NaN: none
    if rows:
        return frame
    types: dict[str, Any] = {c: bool for c in ("verified", "stale_flag", "sample")}
    types |= {c: "int64" for c in ("idx", "lane_nodes", "observed_nodes")}
    types |= {"logged": "float64"}
    types |= {c: str for c in _RUN_COLUMNS if c not in types and c != "reasons"}
    return frame.astype(types)


def _judgements(
    evidence: Sequence[Evidence], recipes: Sequence[RecipeResult], lanes: Lanes
) -> tuple[list[str], list[str], list[Judgement | None]]:
    """(recomputed verdict, disagreement, the judgement) per record: "" (None) where a record is
    not judged (rejected, stale, not ours, unknown lane, other criteria). See
    `generator.evidence.judge`."""
    judge = Judge(lanes)
    current = {(r.name, r.scale_profile): r for r in recipes}
    pins: dict[tuple[str, str], dict[str, str | None]] = {}
    verdicts, mismatches = [""] * len(evidence), [""] * len(evidence)
    judgements: list[Judgement | None] = [None] * len(evidence)
    for i, e in enumerate(evidence):
        if not isinstance(e, VerifiedEvidence) or e.stale:
            continue
        st = e.statement
        key = (st.recipe, st.scale_profile or DEFAULT_PROFILE)
        r = current.get(key)
        if r is None or r.digest != st.recipe_digest:
            continue
        if key not in pins:
            pins[key] = {c.name: c.version for c in r.components}
        j = judge(st, r.criteria, pins[key])
        if j is not None:
            verdicts[i] = j.verdict
            mismatches[i] = "" if j.consistent else j.explain()
            judgements[i] = j
    return verdicts, mismatches, judgements


def _log_time(seconds: float) -> str:
    if seconds != seconds:  # NaN: no log time
        return "-"
    return rfc3339(int(seconds))


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


# ---------------------------------------------------------------- the records


@dataclass(frozen=True, slots=True)
class HealthStatus:
    """Structural health of one leaf recipe (`generator.validate.leaf_health`'s rules)."""

    recipe: str
    health: str  # pass | warn | fail
    coverage: str  # R:n D:n P:n C:n
    problems: tuple[str, ...]

    def __reduce__(self) -> tuple[type[HealthStatus], tuple[Any, ...]]:
        return HealthStatus, constructor_args(self)  # loaded by one constructor call


@dataclass(frozen=True, slots=True)
class RunStatus:
    """One evidence record as aggregated: counted or why not, and its verdict as counted."""

    index: int  # its position in the evidence given to `aggregate`
    path: str
    recipe: str
    profile: str  # "" when the statement is unreadable
    lane: str
    signer_label: str  # "" when not verified
    signer_class: str
    identity: str
    issuer: str
    attested_at: str
    verdict: str  # as signed, "" when none
    effective: Verdict  # as counted: recomputed for a scale run, as signed for other evidence
    reasons: tuple[str, ...]
    sample: bool
    counted: bool
    latest: bool  # the latest counted run of its signer on its recipe × profile × lane
    exclusion: Exclusion | None  # None when counted
    failure_class: str  # the verification failure class, "" when verified
    message: str  # the verification failure, "" when verified
    downgraded: str  # verdict-mismatch or attested-after-logged: the disagreement named
    judgement: Judgement | None  # the recomputed outcome, per check and KPI (None: not judged)

    def __reduce__(self) -> tuple[type[RunStatus], tuple[Any, ...]]:
        return RunStatus, constructor_args(self)  # loaded by one constructor call

    def judged(self, view: EvidenceView) -> EvidenceView:
        """`view` (this run's evidence record) as counted: stale or rejected when this run is
        excluded for it, the disagreement named when its verdict was downgraded. The site's API
        and `status` show a run so."""
        exclusion, downgraded = self.exclusion, self.downgraded
        if exclusion is not None and exclusion.is_stale:
            view = replace(view, state=RunState.STALE, reason=view.reason or exclusion.label)
        elif exclusion is not None:
            # verdict-mismatch and attested-after-logged name the disagreement themselves
            view = replace(
                view,
                state=RunState.REJECTED,
                reason=view.reason or downgraded or exclusion.label,
                failure_class=view.failure_class or str(exclusion),
            )
        if downgraded and view.state == RunState.VERIFIED:
            view = replace(view, reason=downgraded)
        return self._with_outcome(view)

    def _with_outcome(self, view: EvidenceView) -> EvidenceView:
        """`view` with the outcome this run was judged to have, and each row's: recomputed
        against the lane when it was judged (`judgement`), as signed when it is counted
        evidence no lane recomputes, else not judged for why it is not counted."""
        j = self.judgement
        if view.state != RunState.VERIFIED:
            why = self.exclusion.label if self.exclusion is not None else view.failure_class
            run = Outcome(str(view.state), (why or str(view.state),), view.reason)
        elif j is not None:
            run = Outcome(str(self.effective), j.causes, "; ".join(j.reasons))
        else:
            return as_signed(view, str(self.effective))
        if j is None:
            return with_outcome(view, run)
        return with_outcome(
            view,
            run,
            {k.id: _row_outcome(j.kpi(k.id)) for k in view.kpis},
            {(c.phase, c.name): _row_outcome(j.check(c.phase, c.name)) for c in view.checks},
        )


def _row_outcome(row: RowOutcome | None) -> Outcome:
    if row is None:  # a KPI the lane does not judge (the run is invalid for it)
        return Outcome(NOT_JUDGED, ("not among the lane's criteria",))
    return Outcome(row.status, (row.cause,) if row.cause else (), row.detail)


class CheckStatus(NamedTuple):
    """Consensus on one required (or reported) check or KPI (`kpi:<id>`) of a lane.

    A typed named tuple rather than a frozen dataclass: there is one per check, lane and recipe
    × profile (102,500 at 1,000 recipes), and a tuple is made in C from the table's columns
    (0.02 s there, against 0.09 s for a frozen dataclass's `__init__`, collector paused)."""

    lane: str
    phase: str
    check: str
    state: Consensus
    passed: int  # distinct passing signers
    failed: int
    required: bool


@dataclass(frozen=True, slots=True)
class LaneStatus:
    """Consensus on one lane of a recipe × profile over its latest scale runs' verdicts."""

    lane: str
    nodes: int
    on_ladder: bool
    state: Consensus
    qualified: bool  # CONFIRMED or SINGLE
    passed: int
    failed: int
    phases: tuple[tuple[str, Consensus], ...]  # (phase, roll-up of its checks), by phase
    runs: tuple[RunStatus, ...]  # the latest counted run of each signer, by signer and path

    def __reduce__(self) -> tuple[type[LaneStatus], tuple[Any, ...]]:
        return LaneStatus, constructor_args(self)  # loaded by one constructor call


@dataclass(frozen=True, slots=True)
class RecipeStatus:
    """One recipe × profile: structural health, consensus, scale ceiling and its evidence."""

    recipe: str
    profile: str
    profile_version: str
    digest: str
    health: str | None
    coverage: str | None
    consensus: Consensus
    ceiling_lane: str | None
    ceiling_nodes: int
    blocked_lane: str | None  # the first ladder rung not qualified
    blocked_state: Consensus | None
    runs: int  # counted runs
    signers: int
    excluded: int
    sample: bool
    lanes: tuple[LaneStatus, ...]  # by nodes, then name
    checks: tuple[CheckStatus, ...]  # by lane, phase, check
    excluded_evidence: tuple[RunStatus, ...]  # of this profile or of none (unreadable)

    def __reduce__(self) -> tuple[type[RecipeStatus], tuple[Any, ...]]:
        return RecipeStatus, constructor_args(self)  # loaded by one constructor call


@dataclass(frozen=True, slots=True)
class ComponentQualification:
    """A component at one pinned version: the largest lane current evidence qualified it at."""

    component: str
    version: str
    lane: str | None  # None: not yet qualified at scale
    nodes: int
    profiles: tuple[str, ...]
    qualified_by: tuple[str, ...]  # recipes
    recipes: int  # recipes pinning it


@dataclass(frozen=True, slots=True)
class Status:
    """What `aggregate` gives: every recipe × profile, every evidence record, every component.

    `demo`: a demo trust root was in use, so sample evidence may be counted (and is marked).
    """

    health: tuple[HealthStatus, ...]  # by recipe
    recipes: tuple[RecipeStatus, ...]  # by recipe, then profile
    components: tuple[ComponentQualification, ...]  # by component, then version
    runs: tuple[RunStatus, ...]  # every evidence record, in the order given
    demo: bool = False


def aggregate(
    recipes: Sequence[RecipeResult],
    evidence: Sequence[Evidence],
    lanes: Lanes,
    ladders: Mapping[str, Sequence[str]],
    *,
    demo: bool = False,
    demo_roots: Collection[str] = (),
    failures: Mapping[str, str] = {},
) -> Status:
    """The status of every recipe × profile, from verified evidence.

    `recipes`: the current resolved recipes, one per (leaf, profile) to report on.
    `evidence`: verification records (any order). `ladders`: profile name → its lanes.
    `demo`: the evidence was verified with the demo trust root only, so sample evidence counts;
    `demo_roots`: with several trust roots, the names of the demo ones — a sample record counts
    only if a demo root verified it.
    `failures`: leaf → why it does not resolve (structural health).
    """
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


# ---------------------------------------------------------------- per recipe


def record_recipe(e: Evidence) -> str:
    """The recipe a record is aggregated under (its `recipe` column): its statement's, else the
    recipe directory of its path (an unreadable statement)."""
    st = e.statement
    return recipe_of(st.recipe if st is not None else None, e.path)


def recipe_of(recipe: str | None, path: str) -> str:
    """`record_recipe` of a record from its statement's recipe (None: it has no statement) and
    its path, as the verify stage gives them without reading it (`verify_cache.Records`)."""
    return recipe if recipe is not None else _recipe_from_path(path)


@dataclass(frozen=True, slots=True)
class RecipePart:
    """One recipe's share of the status: its structural health, its recipe × profile records and
    its runs, `RunStatus.index` being a position in the recipe's own records. Everything in
    `aggregate` but the component qualification is computed within one recipe (every grouping
    starts with the recipe), so the status of a catalog is its recipes' parts put together
    (`combine`), and a changed run re-aggregates one recipe."""

    health: tuple[HealthStatus, ...]
    recipes: tuple[RecipeStatus, ...]
    runs: tuple[RunStatus, ...]

    def __reduce__(self) -> tuple[type[RecipePart], tuple[Any, ...]]:
        return RecipePart, constructor_args(self)  # loaded by one constructor call


@dataclass(frozen=True, slots=True)
class RecipeInput:
    """One recipe as `recipe_parts` takes it: its resolved results (every profile), its records
    (those whose `record_recipe` is its name) and why it does not resolve (None: it does)."""

    name: str
    results: Sequence[RecipeResult]
    evidence: Sequence[Evidence]
    failure: str | None = None


def recipe_parts(
    recipes: Sequence[RecipeInput],
    lanes: Lanes,
    ladders: Mapping[str, Sequence[str]],
    *,
    demo: bool = False,
    demo_roots: Collection[str] = (),
) -> list[RecipePart]:
    """`aggregate` of several recipes at once (one computation over all of them), split into
    one part per recipe, in the order given."""
    evidence = [e for r in recipes for e in r.evidence]
    status = aggregate(
        [x for r in recipes for x in r.results],
        evidence,
        lanes,
        ladders,
        demo=demo,
        demo_roots=demo_roots,
        failures={r.name: r.failure for r in recipes if r.failure is not None},
    )
    owner: list[tuple[int, int]] = []  # position in `evidence` -> (recipe, its own position)
    for g, r in enumerate(recipes):
        owner.extend((g, i) for i in range(len(r.evidence)))
    group = {r.name: g for g, r in enumerate(recipes)}
    health: list[list[HealthStatus]] = [[] for _ in recipes]
    for h in status.health:
        health[group[h.recipe]].append(h)
    statuses: list[list[RecipeStatus]] = [[] for _ in recipes]
    for s in status.recipes:
        statuses[group[s.recipe]].append(s)
    runs: list[list[RunStatus]] = [[] for _ in recipes]
    for run in status.runs:
        runs[owner[run.index][0]].append(run)
    local = {i: own for i, (_, own) in enumerate(owner)}
    parts = []
    for g in range(len(recipes)):
        rs, rn = rebased(statuses[g], runs[g], local)
        parts.append(RecipePart(tuple(health[g]), rs, rn))
    return parts


_RUN_FIELDS = attrgetter(*(f.name for f in fields(RunStatus) if f.name != "index"))
# the fields `rebased` keeps, in the constructor's order around the ones it replaces
_LANE_HEAD = attrgetter(*LaneStatus.__slots__[: LaneStatus.__slots__.index("runs")])
_RECIPE_HEAD = attrgetter(*RecipeStatus.__slots__[: RecipeStatus.__slots__.index("lanes")])
if LaneStatus.__slots__[-1] != "runs" or RecipeStatus.__slots__[-3:] != (
    "lanes",
    "checks",
    "excluded_evidence",
):  # pragma: no cover - a field added after these: `rebased` names it
    raise AssertionError("rebased: LaneStatus or RecipeStatus has a field after those it sets")


def rebased(
    recipes: Sequence[RecipeStatus], runs: Sequence[RunStatus], index: Mapping[int, int]
) -> tuple[tuple[RecipeStatus, ...], tuple[RunStatus, ...]]:
    """The records with each run's `index` mapped through `index`, in the runs list and wherever
    a recipe's lanes and excluded evidence show the same run.

    Each record is made by its constructor from its other fields (`dataclasses.replace`, the
    reference `rebased_reference`, costs several times as much): `combine` rebases every
    recipe's part on every build, 20,000 runs at 1,000 x 20,000. The parts of the 200 x 4,000
    store: 0.058 -> 0.028-0.032 s CPU (collector paused, three runs each); the 1,000 parts
    at 1,000 x 20,000: 0.155 -> 0.130 s (min of 3). tests/test_aggregate_by_recipe.py holds
    the two to one answer."""
    new = {id(r): RunStatus(index[r.index], *_RUN_FIELDS(r)) for r in runs}

    def lane(ln: LaneStatus) -> LaneStatus:
        return LaneStatus(*(*_LANE_HEAD(ln), tuple([new[id(x)] for x in ln.runs])))

    out = tuple(
        RecipeStatus(
            *(
                *_RECIPE_HEAD(s),
                tuple(map(lane, s.lanes)),
                s.checks,
                tuple([new[id(x)] for x in s.excluded_evidence]),
            )
        )
        for s in recipes
    )
    return out, tuple([new[id(r)] for r in runs])


def rebased_reference(
    recipes: Sequence[RecipeStatus], runs: Sequence[RunStatus], index: Mapping[int, int]
) -> tuple[tuple[RecipeStatus, ...], tuple[RunStatus, ...]]:
    """`rebased` through `dataclasses.replace` (the reference)."""
    new = {id(r): RunStatus(index[r.index], *_RUN_FIELDS(r)) for r in runs}
    out = tuple(
        replace(
            s,
            lanes=tuple(replace(ln, runs=tuple(new[id(x)] for x in ln.runs)) for ln in s.lanes),
            excluded_evidence=tuple(new[id(x)] for x in s.excluded_evidence),
        )
        for s in recipes
    )
    return out, tuple(new[id(r)] for r in runs)


def combine(
    parts: Sequence[RecipePart | StoredPart],
    positions: Sequence[Sequence[int]],
    results: Sequence[RecipeResult],
    *,
    demo: bool = False,
) -> Status:
    """The status of the recipes whose parts are given (by name, as `aggregate` orders them),
    each part's runs put at `positions` (the recipe's records' positions in the evidence the
    status is about), and the component qualification over `results` (every recipe's).

    A part as stored (`StoredPart`) enters by its heads: its records' runs, checks and
    excluded evidence, and its runs in `Status.runs`, are read from its pickle when first
    used (`Later`). With every part in hand, the status is made as the reference did it."""
    if all(isinstance(p, RecipePart) for p in parts):
        return _combine_whole(cast(Sequence[RecipePart], parts), positions, results, demo)
    recipes: list[RecipeStatus] = []
    sources: list[_PartSource] = []
    for part, where in zip(parts, positions, strict=True):
        source = _PartSource(part, where)
        sources.append(source)
        recipes.extend(source.heads())
    owner = [(0, 0)] * sum(len(w) for w in positions)
    for g, where in enumerate(positions):
        for j, i in enumerate(where):
            owner[i] = (g, j)
    runs: Any = _AllRuns(sources, owner)  # a Sequence read as the tuple of every run
    return Status(
        health=tuple(h for p in parts for h in p.health),
        recipes=tuple(recipes),
        components=components_of(results, recipes),
        runs=runs,
        demo=demo,
    )


def _combine_whole(
    parts: Sequence[RecipePart],
    positions: Sequence[Sequence[int]],
    results: Sequence[RecipeResult],
    demo: bool,
) -> Status:
    """`combine` of parts in hand (every part made by this run, or a build without a memo)."""
    recipes: list[RecipeStatus] = []
    runs: list[RunStatus] = []
    for part, where in zip(parts, positions, strict=True):
        rs, rn = rebased(part.recipes, part.runs, dict(enumerate(where)))
        recipes.extend(rs)
        runs.extend(rn)
    return Status(
        health=tuple(h for p in parts for h in p.health),
        recipes=tuple(recipes),
        components=components_of(results, recipes),
        runs=tuple(sorted(runs, key=attrgetter("index"))),
        demo=demo,
    )


@dataclass(frozen=True, slots=True)
class StoredPart:
    """One recipe's part as the aggregate stage stores it: what every build reads of it (its
    health, and the fields of each recipe × profile record and of each of its lanes but their
    runs, checks and excluded evidence: `heads`), and the whole part as one pickle (`whole`),
    unpickled only when one of the rest is first read.

    A rebuild after one evidence file changed reads every recipe's part, yet uses of the
    unchanged recipes only their consensus, ceilings and lane verdicts (the site's pages of
    the recipe, the API index, the component qualification): their runs (20 a recipe) and
    check rows (about 100) were unpickled and rebased for nothing. At 1,000 x 20,000 the 1,000
    parts unpickled whole took 0.64 s CPU (collector on, load ~4), 0.36 s of it the checks.
    The stage with every part memoized, at 200 x 4,000 (min of 5, three interleaved pairs,
    load ~8): 0.19-0.26 -> 0.031-0.034 s CPU.
    The reference is the part itself: `combine` of stored parts gives a status equal, field
    by field, to `combine` of the parts (tests/test_aggregate_by_recipe.py).

    `whole` is a pickle inside the stage's entry, which the cache authenticates before it is
    unpickled (`Cache.get_or_make_many`); it is unpickled only from such an entry, or from
    what this run made."""

    health: tuple[HealthStatus, ...]
    heads: tuple[tuple[tuple[Any, ...], tuple[tuple[Any, ...], ...]], ...]
    whole: bytes

    def __reduce__(self) -> tuple[type[StoredPart], tuple[Any, ...]]:
        return StoredPart, constructor_args(self)  # loaded by one constructor call

    @staticmethod
    def of(part: RecipePart) -> StoredPart:
        heads = tuple((_RECIPE_HEAD(s), tuple(map(_LANE_HEAD, s.lanes))) for s in part.recipes)
        return StoredPart(part.health, heads, pickle.dumps(part, protocol=pickle.HIGHEST_PROTOCOL))

    def part(self) -> RecipePart:
        loaded = pickle.loads(self.whole)  # an authenticated entry's (see the class)
        if not isinstance(loaded, RecipePart):  # pragma: no cover - written by `of` alone
            raise TypeError("a stored aggregate part holds a RecipePart")
        return loaded


class _PartSource:
    """One recipe's part in a status: its records' heads at once, the rest (its part loaded
    and rebased at its positions) when first asked for. Not a record: it loads."""

    __slots__ = ("_part", "_rebased", "_where")
    loaded = 0  # how many stored parts were unpickled (a count of work, for tests)

    def __init__(self, part: RecipePart | StoredPart, where: Sequence[int]) -> None:
        self._part, self._where = part, where
        self._rebased: tuple[tuple[RecipeStatus, ...], tuple[RunStatus, ...]] | None = None

    def heads(self) -> list[RecipeStatus]:
        """The part's recipe × profile records, their runs, checks and excluded evidence
        read from the part when first used."""
        part = self._part
        if isinstance(part, RecipePart):  # in hand: rebased now, as the reference
            return list(self.rebased()[0])
        out = []
        for s, (head, lane_heads) in enumerate(part.heads):
            lanes = tuple(
                LaneStatus(*[*lh, Later(self, ("lane", s, k))]) for k, lh in enumerate(lane_heads)
            )
            rest: list[Any] = [lanes, Later(self, ("checks", s)), Later(self, ("excluded", s))]
            out.append(RecipeStatus(*head, *rest))
        return out

    def rebased(self) -> tuple[tuple[RecipeStatus, ...], tuple[RunStatus, ...]]:
        if self._rebased is None:
            part = self._part
            if isinstance(part, StoredPart):
                type(self).loaded += 1
                part = part.part()
            self._rebased = rebased(part.recipes, part.runs, dict(enumerate(self._where)))
            self._part = part
        return self._rebased

    def get(self, which: tuple[Any, ...]) -> tuple[Any, ...]:
        recipes, runs = self.rebased()
        if which[0] == "runs":
            return runs
        s: RecipeStatus = recipes[int(which[1])]
        if which[0] == "lane":
            return s.lanes[int(which[2])].runs
        return s.checks if which[0] == "checks" else s.excluded_evidence


class Later(LoadedTuple):
    """A field of a stored part's record (a lane's runs, its checks, its excluded evidence),
    read from the part when first used; equal to (and hashed as) the tuple it stands for, and
    pickled as that tuple (`fast.loaded.LoadedTuple`). Not a record: it loads."""

    __slots__ = ("_src", "_which")

    def __init__(self, src: _PartSource, which: tuple[Any, ...]) -> None:
        self._src, self._which = src, which

    def _tuple(self) -> tuple[Any, ...]:
        return self._src.get(self._which)


class _AllRuns(Later):
    """`Status.runs` of a status some of whose parts are stored: run `i` is read from the part
    of the recipe it belongs to (`owner[i]`: that part and the run's place in it), loading that
    part alone; the whole tuple only when iterated or compared."""

    __slots__ = ("_owner", "_sources")

    def __init__(self, sources: Sequence[_PartSource], owner: Sequence[tuple[int, int]]) -> None:
        self._sources, self._owner = sources, owner

    def _tuple(self) -> tuple[Any, ...]:
        return tuple(self[i] for i in range(len(self._owner)))

    def __len__(self) -> int:
        return len(self._owner)

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(len(self._owner))))
        g, j = self._owner[index]
        return self._sources[g].get(("runs",))[j]

    def __bool__(self) -> bool:
        return bool(self._owner)


def components_of(
    results: Sequence[RecipeResult], statuses: Sequence[RecipeStatus]
) -> tuple[ComponentQualification, ...]:
    """The component qualification (`aggregate`'s one result across recipes) from the recipe ×
    profile records' ceilings: what `components_of_reference` (the computation `aggregate`
    makes from its summary table, in pandas) gives, in plain Python.

    `combine` computes it on every build that aggregates, over every recipe's results (2,000
    recipe × profile rows at 1,000 recipes), where the rest of the work is one recipe's: the
    pandas merge and group-bys were a fixed 0.05-0.11 s of a one-file rebuild's aggregate
    stage. tests/test_aggregate_by_recipe.py holds the two to one answer."""
    ceilings = {(s.recipe, s.profile): (s.ceiling_lane, s.ceiling_nodes) for s in statuses}
    groups: dict[tuple[str, str], list[tuple[str, str, str | None, int]]] = {}
    for r in results:
        lane, nodes = ceilings.get((r.name, r.scale_profile), (None, 0))
        for c in r.components:
            if c.version is not None:
                groups.setdefault((c.name, c.version), []).append(
                    (r.name, r.scale_profile, lane, int(nodes or 0))
                )
    out = []
    for (component, version), rows in sorted(groups.items()):
        best = max(n for *_, n in rows)
        top = [row for row in rows if row[3] == best] if best > 0 else []
        out.append(
            ComponentQualification(
                component=component,
                version=version,
                lane=next((ln for _, _, ln, _ in top if ln is not None), None),
                nodes=best if top else 0,
                profiles=tuple(sorted({p for _, p, _, _ in top})),
                qualified_by=tuple(sorted({name for name, *_ in top})),
                recipes=len({name for name, *_ in rows}),
            )
        )
    return tuple(out)


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
