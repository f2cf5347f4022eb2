"""Aggregate: resolved recipes + verified evidence + lanes → status tables (pandas DataFrames).

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

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat
from operator import attrgetter
from typing import Any

import numpy as np
import pandas as pd

from generator.core.records import DEFAULT_PROFILE, DIMENSIONS, RecipeResult
from generator.core.timeutil import rfc3339
from generator.evidence.judge import CLOCK_SKEW_SECONDS, Judge
from generator.evidence.model import (
    SCALE_QUALIFICATION_V1,
    Evidence,
    FailureClass,
    RejectedEvidence,
    VerifiedEvidence,
)
from generator.scale.qualify import Lanes
from generator.validate import health_of

CONFIRMED, SINGLE, CONTESTED, FAILING, UNTESTED, PARTIAL = (
    "CONFIRMED",
    "SINGLE",
    "CONTESTED",
    "FAILING",
    "UNTESTED",
    "PARTIAL",
)
# Worst first, for display. A roll-up is FAILING if any row is, else CONTESTED if any row is,
# else UNTESTED if every row is, else PARTIAL if any row is UNTESTED or PARTIAL, else SINGLE if
# any row is, else CONFIRMED (see `rollup`).
STATE_ORDER: tuple[str, ...] = (FAILING, CONTESTED, PARTIAL, UNTESTED, SINGLE, CONFIRMED)
QUALIFYING = (CONFIRMED, SINGLE)

HEALTH_PHASES: tuple[tuple[str, str], ...] = (
    ("R", "readiness"),
    ("D", "deployment"),
    ("P", "performance"),
    ("C", "conformance"),
)

# Why a record is not counted; the `exclusion` column.
UNVERIFIED, UNALLOWLISTED, INVALID, STALE, STALE_CRITERIA, SAMPLE_OUTSIDE_DEMO, UNKNOWN_LANE = (
    "unverified",
    "unallowlisted",
    "invalid",
    "stale",
    "stale-criteria",
    "sample-outside-demo",
    "unknown-lane",
)
# the signed verdict or a KPI status is not what the raw results give under the lane's criteria
VERDICT_MISMATCH = "verdict-mismatch"
# the signed attestedAt is later than the transparency log's (verified) time for the entry
ATTESTED_AFTER_LOGGED = "attested-after-logged"

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
class Status:
    """Every status table. DataFrames are sorted and indexed 0..n-1; treat them as read-only.

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


def _run_rows(evidence: Sequence[Evidence]) -> pd.DataFrame:
    rows: list[tuple[Any, ...]] = []
    for i, e in enumerate(evidence):
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
        zero = False
        if st is not None and st.predicate_type == SCALE_QUALIFICATION_V1:
            zero = any(
                c.targets == 0 and c.status == "passed" for cs in st.phases.values() for c in cs
            )
        recipe = st.recipe if st else _recipe_from_path(e.path)
        rows.append(
            (
                i,
                e.path,
                verified,
                stale,
                cls,
                message,
                sample,
                signer,
                label,
                klass,
                e.signer_identity or "",
                e.signer_issuer or "",
                recipe,
                (st.scale_profile or DEFAULT_PROFILE) if st else "",
                (st.lane or "") if st else "",
                st.lane_nodes if st and st.lane_nodes is not None else -1,
                (st.criteria_version or "") if st else "",
                st.observed_nodes if st and st.observed_nodes is not None else -1,
                (st.verdict or "") if st else "",
                (st.attested_at or "") if st else "",
                st.recipe_digest if st else "",
                (e.statement_digest or "") if isinstance(e, VerifiedEvidence) else "",
                st.predicate_type if st else "",
                tuple(st.reasons) if st else (),
                zero,
                e.trust_root or "",
                e.integrated_time if isinstance(e, VerifiedEvidence) else None,
            )
        )
    cols = [
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
        "zero_targets",
        "trust_root",
        "logged",
    ]
    frame = pd.DataFrame.from_records(rows, columns=cols)
    frame["logged"] = frame["logged"].astype("float64")  # seconds since the epoch; NaN: none
    if rows:
        return frame
    types: dict[str, Any] = {c: bool for c in ("verified", "stale_flag", "sample", "zero_targets")}
    types |= {c: "int64" for c in ("idx", "lane_nodes", "observed_nodes")}
    types |= {"logged": "float64"}
    types |= {c: str for c in cols if c not in types and c != "reasons"}
    return frame.astype(types)


def _judgements(
    evidence: Sequence[Evidence], recipes: Sequence[RecipeResult], lanes: Lanes
) -> tuple[list[str], list[str]]:
    """(recomputed verdict, disagreement) per record: "" where a record is not judged (rejected,
    stale, not ours, unknown lane, other criteria). See `generator.evidence.judge`."""
    judge = Judge(lanes)
    current = {(r.name, r.scale_profile): r for r in recipes}
    pins: dict[tuple[str, str], dict[str, str | None]] = {}
    verdicts, mismatches = [""] * len(evidence), [""] * len(evidence)
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
    return verdicts, mismatches


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
    judged: tuple[list[str], list[str]],
) -> pd.DataFrame:
    """Add current digest, exclusion (why not counted), counted, latest, effective verdict."""
    recomputed, mismatch = judged
    runs["recomputed"] = [recomputed[i] for i in runs["idx"]] if len(runs) else ""
    runs["mismatch"] = [mismatch[i] for i in runs["idx"]] if len(runs) else ""
    runs = runs.merge(
        rec[["recipe", "profile", "digest"]].rename(columns={"digest": "current_digest"}),
        on=["recipe", "profile"],
        how="left",
    )
    runs = runs.merge(lane_df, on="lane", how="left")
    scale = runs["predicate_type"].eq(SCALE_QUALIFICATION_V1)
    cls = runs["class"]
    # upstream recipe-evidence carries upstream's recipe digest: the verifier judged it against
    # upstream's digest of the current recipe (generator.evidence.upstream), not this catalog's
    digest_stale = scale & (
        runs["current_digest"].isna() | (runs["current_digest"] != runs["recipe_digest"])
    )
    runs["when"] = pd.to_datetime(runs["attested_at"], utc=True, format="ISO8601", errors="coerce")
    attested = (runs["when"] - pd.Timestamp(0, tz="UTC")).dt.total_seconds()
    # attested (the run's own clock) after the transparency log recorded it (the log's clock)
    late = runs["verified"] & (attested > runs["logged"] + CLOCK_SKEW_SECONDS)
    exclusion = np.select(
        [
            ~runs["verified"] & cls.eq(str(FailureClass.SIGNER_NOT_ALLOWED)),
            ~runs["verified"] & cls.isin([str(c) for c in _INVALID_CLASSES]),
            ~runs["verified"] & cls.eq(str(FailureClass.STALE)),
            # judged already (records of `evidence.stage.verify_stage`)
            ~runs["verified"] & cls.eq(str(FailureClass.VERDICT_MISMATCH)),
            ~runs["verified"] & cls.eq(str(FailureClass.ATTESTED_AFTER_LOGGED)),
            ~runs["verified"],
            late,
            runs["stale_flag"] | digest_stale,
            runs["sample"] & ~(runs["trust_root"].isin(list(demo_roots)) | demo),
            scale & runs["lane_rank"].isna(),
            scale & (runs["criteria_version"] != runs["criteria_current"]),
            scale & runs["mismatch"].ne(""),
        ],
        [
            UNALLOWLISTED,
            INVALID,
            STALE,
            VERDICT_MISMATCH,
            ATTESTED_AFTER_LOGGED,
            UNVERIFIED,
            ATTESTED_AFTER_LOGGED,
            STALE,
            SAMPLE_OUTSIDE_DEMO,
            UNKNOWN_LANE,
            STALE_CRITERIA,
            VERDICT_MISMATCH,
        ],
        default="",
    )
    runs["exclusion"] = exclusion
    runs["counted"] = runs["exclusion"].eq("")
    # latest run per signer and scope, among counted runs, by the transparency log's verified
    # time (never the signed attestedAt: a pass dated 2099 cannot hide a later failure)
    order = runs.sort_values(
        [*_KEYS_RUN, "signer", "logged", "statement_digest"], na_position="first", kind="stable"
    )
    counted = order[order["counted"]]
    latest_idx = counted.drop_duplicates([*_KEYS_RUN, "signer"], keep="last").index
    runs["latest"] = False
    runs.loc[latest_idx, "latest"] = True
    # a scale run's verdict is the recomputed one (a counted run's signed verdict agrees with it)
    judged_scale = runs["recomputed"].ne("")
    runs["effective"] = np.where(
        judged_scale,
        runs["recomputed"],
        np.where(runs["verdict"].eq("pass") & ~scale, "pass", "fail"),
    )
    runs["downgraded"] = np.select(
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
    return runs


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


# ---------------------------------------------------------------- the whole status


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
    """The status tables.

    `recipes`: the current resolved recipes, one per (leaf, profile) to report on.
    `evidence`: verification records (any order). `ladders`: profile name → its lanes.
    `demo`: the evidence was verified with the demo trust root only, so sample evidence counts;
    `demo_roots`: with several trust roots, the names of the demo ones — a sample record counts
    only if a demo root verified it.
    `failures`: leaf → why it does not resolve (structural health).
    """
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

    # scopes: every (recipe, profile, lane) of a rung or of a counted run, as integer ids in
    # sorted order (grouping on integers is what keeps 20,000 records fast); rp = recipe×profile
    scopes = (
        pd.concat([rungs[_KEYS_RUN], latest[_KEYS_RUN]])
        .drop_duplicates()
        .sort_values(_KEYS_RUN, ignore_index=True)
    )
    scopes["scope"] = np.arange(len(scopes), dtype=np.int64)
    scopes["rp"] = scopes.groupby(["recipe", "profile"], sort=True).ngroup()
    latest = latest.merge(scopes[[*_KEYS_RUN, "scope"]], on=_KEYS_RUN, how="left")
    latest["signer_id"] = pd.factorize(latest["signer"])[0]
    rungs = rungs.merge(scopes[[*_KEYS_RUN, "scope"]], on=_KEYS_RUN, how="left")

    # checks: expected = the applicable required scenarios/KPIs of every ladder lane
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
    phases = phases.drop(columns="scope")

    # lanes: consensus over run verdicts
    lane_rows = latest[latest["predicate_type"].eq(SCALE_QUALIFICATION_V1)].assign(
        fail=lambda d: d["effective"].ne("pass")
    )
    lane_state = _with_scope(_consensus(lane_rows, rungs, ["scope"]), scopes, _KEYS_RUN)
    lane_state = lane_state.merge(rungs[["scope", "rung"]], on="scope", how="left").merge(
        lane_df[["lane", "lane_nodes_def"]], on="lane", how="left"
    )
    lane_state = lane_state.drop(columns="scope").rename(columns={"lane_nodes_def": "nodes"})
    lane_state["nodes"] = lane_state["nodes"].fillna(0).astype(int)
    lane_state["qualified"] = lane_state["state"].isin(QUALIFYING)
    lane_state = lane_state.sort_values(["recipe", "profile", "nodes", "lane"], ignore_index=True)

    # ceiling: contiguous qualified rungs from the bottom of each ladder
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
    summary = summary.sort_values(["recipe", "profile"], ignore_index=True)

    components = _components(recipes, summary)
    return Status(
        health=health,
        runs=runs.sort_values(["recipe", "profile", "lane_rank", "path"], ignore_index=True),
        checks=checks,
        phases=phases,
        lanes=lane_state,
        recipes=summary,
        components=components,
        demo=demo or bool(demo_roots),
    )


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


# ---------------------------------------------------------------- the JSON document

SAMPLE_BANNER = (
    "SAMPLE: evidence verified with the demo trust root is sample data for demonstration; "
    "it is not a real qualification and a release refuses it"
)


def _none(v: Any) -> Any:
    """NaN/NA → None, numpy scalars → Python scalars (for JSON)."""
    if v is None or (isinstance(v, float) and np.isnan(v)) or v is pd.NA:
        return None
    if isinstance(v, np.generic):
        return v.item()
    return v


def _run_json(r: Mapping[Any, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "path": r["path"],
        "signer": r["signer_label"] or None,
        "signerClass": r["signer_class"] or None,
        "identity": r["identity"] or None,
        "issuer": r["issuer"] or None,
        "attestedAt": r["attested_at"] or None,
        "verdict": r["verdict"] or None,
        "effectiveVerdict": r["effective"],
        "reasons": list(r["reasons"]) + ([r["downgraded"]] if r["downgraded"] else []),
        "sample": bool(r["sample"]),
    }
    return out


def _excluded_json(r: Mapping[Any, Any]) -> dict[str, Any]:
    message = (
        r["message"]
        or r.get("downgraded")
        or {
            STALE: "recipe digest is not the current one (the recipe changed since the run)",
            STALE_CRITERIA: "run judged against other lane criteria than the current ones",
            SAMPLE_OUTSIDE_DEMO: "sample evidence counts only under the demo trust root",
            UNKNOWN_LANE: "names a lane that lanes.yaml does not define",
        }.get(r["exclusion"], "")
    )
    return {
        "path": r["path"],
        "lane": r["lane"] or None,
        "exclusion": r["exclusion"],
        "class": r["class"] or None,
        "message": message,
        "signer": r["signer_label"] or r["identity"] or None,
        "attestedAt": r["attested_at"] or None,
        "sample": bool(r["sample"]),
    }


def run_verdicts(status: Status) -> dict[int, tuple[str, str]]:
    """Evidence record index (`idx`, its position in the `evidence` given) → (exclusion,
    why) as strings: why a run is not counted ("" when counted) and, for a run invalid because
    of what it signed (verdict-mismatch, attested-after-logged), the named disagreement. Two
    columns read at once, for callers that would otherwise walk every column of every run row
    by row."""
    runs = status.runs
    idx = runs["idx"].tolist()
    exclusion = runs["exclusion"].tolist()
    downgraded = runs["downgraded"].tolist() if "downgraded" in runs else [""] * len(idx)
    return {
        int(i): (str(e), str(d or "")) for i, e, d in zip(idx, exclusion, downgraded, strict=True)
    }


def status_document(
    status: Status, lanes: Lanes, trust_root: str, *, detail: bool = False
) -> dict[str, Any]:
    """The `aicr-catalog status --format json` document (catalog/schemas/status.schema.json).

    `detail` adds per-lane runs, phases, checks and excluded evidence to every recipe row.
    """
    doc: dict[str, Any] = {
        "apiVersion": "aicr.run/v1",
        "kind": "Status",
        "trustRoot": trust_root,
        "sample": bool(status.demo),
        "lanes": [
            {
                "name": ln.name,
                "nodes": ln.nodes,
                "racks": ln.racks,
                "gpus": ln.gpus,
                "criteriaVersion": ln.criteria_version,
                "proposedThresholds": sorted(k for k, t in ln.thresholds if t.status == "proposed"),
            }
            for ln in lanes.lanes
        ],
        "health": [
            {
                "recipe": h["recipe"],
                "status": h["health"],
                "coverage": h["coverage"],
                "problems": list(h["problems"]),
            }
            for h in status.health.to_dict("records")
        ],
        "recipes": [],
        "components": [
            {
                "component": c["component"],
                "version": c["version"],
                "lane": _none(c["lane"]),
                "nodes": int(c["nodes"]),
                "profiles": list(c["profiles"]),
                "qualifiedBy": list(c["qualified_by"]),
                "recipes": int(c["recipes"]),
            }
            for c in status.components.to_dict("records")
        ],
    }
    if status.demo:
        doc["sampleNote"] = SAMPLE_BANNER
    lanes_by = {k: g for k, g in status.lanes.groupby(["recipe", "profile"], sort=False)}
    if detail:
        runs_by = {k: g for k, g in status.runs.groupby(["recipe", "profile"], sort=False)}
        excl = status.runs[~status.runs["counted"]]
        excl_by = {k: g for k, g in excl.groupby("recipe", sort=False)}
        phases_by = {k: g for k, g in status.phases.groupby(["recipe", "profile"], sort=False)}
        checks_by = {k: g for k, g in status.checks.groupby(["recipe", "profile"], sort=False)}
    for r in status.recipes.to_dict("records"):
        key = (r["recipe"], r["profile"])
        item: dict[str, Any] = {
            "recipe": r["recipe"],
            "profile": r["profile"],
            "profileVersion": r["profile_version"],
            "digest": r["digest"],
            "health": _none(r["health"]),
            "coverage": _none(r["coverage"]),
            "consensus": r["consensus"],
            "ceiling": {"lane": _none(r["ceiling_lane"]), "nodes": int(r["ceiling_nodes"])},
            "blockedAt": None
            if _none(r["blocked_lane"]) is None
            else {"lane": r["blocked_lane"], "state": r["blocked_state"]},
            "runs": int(r["runs"]),
            "signers": int(r["signers"]),
            "excluded": int(r["excluded"]),
            "sample": bool(r["sample"]),
        }
        lane_rows = lanes_by.get(key)
        item["lanes"] = []
        for ln in lane_rows.to_dict("records") if lane_rows is not None else ():
            entry: dict[str, Any] = {
                "lane": ln["lane"],
                "nodes": int(ln["nodes"]),
                "onLadder": _none(ln["rung"]) is not None,
                "state": ln["state"],
                "qualified": bool(ln["qualified"]),
                "passed": int(ln["passed"]),
                "failed": int(ln["failed"]),
            }
            item["lanes"].append(entry)
        if detail:
            runs = runs_by.get(key)
            latest = runs[runs["latest"]] if runs is not None else None
            by_lane: dict[str, list[dict[str, Any]]] = {}
            for run in latest.to_dict("records") if latest is not None else ():
                by_lane.setdefault(run["lane"], []).append(_run_json(run))
            ph = phases_by.get(key)
            ph_lane: dict[str, dict[str, str]] = {}
            for p in ph.to_dict("records") if ph is not None else ():
                ph_lane.setdefault(p["lane"], {})[p["phase"]] = p["state"]
            for entry in item["lanes"]:
                entry["phases"] = ph_lane.get(entry["lane"], {})
                entry["runs"] = sorted(
                    by_lane.get(entry["lane"], []), key=lambda x: (x["signer"] or "", x["path"])
                )
            ck = checks_by.get(key)
            item["checks"] = [
                {
                    "lane": c["lane"],
                    "phase": c["phase"],
                    "check": c["check"],
                    "state": c["state"],
                    "passed": int(c["passed"]),
                    "failed": int(c["failed"]),
                    "required": bool(c["required"]),
                }
                for c in (ck.to_dict("records") if ck is not None else ())
            ]
            ex = excl_by.get(r["recipe"])
            item["excludedEvidence"] = [
                _excluded_json(x)
                for x in (ex.to_dict("records") if ex is not None else ())
                if x["profile"] in (r["profile"], "")
            ]
        doc["recipes"].append(item)
    return doc
