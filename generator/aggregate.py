"""Aggregate: resolved recipes + verified evidence + lanes → status records.

`aggregate` is the stage's one function: it returns a `Status` of frozen records
(`RecipeStatus` with its `LaneStatus` and `CheckStatus` rows, `ComponentQualification`,
`RunStatus` per evidence record, `HealthStatus` per leaf), computed in plain Python. The JSON
and text the status command prints are projections of the records (`generator.commands.status`).

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

Everything here is a pure function of its inputs. It was computed with pandas tables, kept as
the reference (`generator.aggregate_tables`): a one-file rebuild aggregates one recipe, a few
hundred rows, yet importing pandas and numpy cost it 0.2 s of 4.5, and a DataFrame's fixed costs
outweighed its vector speed on rows that few. tests/test_aggregate_differential.py holds the two
to one answer on random catalogs and evidence (every state, exclusion, profile and lane).
"""

from __future__ import annotations

import pickle
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from operator import attrgetter
from typing import Any, NamedTuple, Protocol, cast

from generator.catalog.lanes import Lane, Lanes, Verdict, applies
from generator.core.records import DEFAULT_PROFILE, Consensus, Criteria, RecipeResult
from generator.core.timeutil import TimeError, parse_rfc3339, rfc3339
from generator.evidence.judge import CLOCK_SKEW_SECONDS, Judge, Judgement, RowOutcome
from generator.evidence.model import (
    SCALE_QUALIFICATION_V1,
    CheckResult,
    Evidence,
    FailureClass,
    Kpi,
    RejectedEvidence,
    RunState,
    Statement,
    VerifiedEvidence,
    constructor_args,
)
from generator.evidence.view import (
    NOT_JUDGED,
    EvidenceView,
    Outcome,
    RawFile,
    RowShare,
    as_signed,
    made_view,
    unjudged_outcome,
    view_state,
    with_outcome,
)
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


# ---------------------------------------------------------------- evidence → runs


def _recipe_from_path(path: str) -> str:
    """The recipe directory of `.../evidence/<recipe>/<source>/<file>` (for unreadable statements)."""
    parts = path.replace("\\", "/").split("/")
    return parts[-3] if len(parts) >= 4 and parts[-4] == "evidence" else ""


class _Row(NamedTuple):
    """One evidence record's fields as `aggregate` reads them (the reference's `runs` table
    columns, `_RUN_COLUMNS`)."""

    idx: int
    path: str
    verified: bool
    stale_flag: bool
    klass: str  # the verification failure class, "" when verified
    message: str
    sample: bool
    signer: str
    signer_label: str
    signer_class: str
    identity: str
    issuer: str
    recipe: str
    profile: str
    lane: str
    lane_nodes: int
    criteria_version: str
    observed_nodes: int
    verdict: str
    attested_at: str
    recipe_digest: str
    statement_digest: str
    predicate_type: str
    reasons: tuple[str, ...]
    trust_root: str
    logged: int | None  # the transparency log's time (seconds since the epoch)


_RUN_COLUMNS = ["class" if f == "klass" else f for f in _Row._fields]


def _run_row(i: int, e: Evidence) -> _Row:
    """One record's fields (`_Row`)."""
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
    return _Row._make((*head, *who, *what, e.trust_root or "", logged))


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

    def judged_view(
        self, record: Evidence, trust_root: str, raw: RawFile | None, share: RowShare
    ) -> EvidenceView:
        """`self.judged(evidence_view(record, trust_root=trust_root, raw=raw))`, its rows and
        outcomes shared through `share` (as `generator.site.stages.shared` shares them): each
        view and row made once (`made_view`), where that reference replaces a view three times
        and makes each row three times. The reference is kept and the two agree field by field
        (tests/test_views_made.py). Measured: the views stage (`stages.judged` on the
        pipeline's outcome at 200 x 4,000, collector paused as in a build, best of 3 in one
        process, two interleaved pairs): no cache 0.737/0.757 -> 0.427/0.441 s CPU, an empty
        cache 0.739/0.774 -> 0.437/0.432 s (what is left is mostly `stages.raw_file`)."""
        state, reason, klass = view_state(record)
        exclusion, downgraded = self.exclusion, self.downgraded
        if exclusion is not None and exclusion.is_stale:
            state, reason = RunState.STALE, reason or exclusion.label
        elif exclusion is not None:
            state, reason = RunState.REJECTED, reason or downgraded or exclusion.label
            klass = klass or str(exclusion)
        if downgraded and state == RunState.VERIFIED:
            reason = downgraded
        run, check_outcome, kpi_outcome = self._row_rules(record, state, reason, klass, share)
        return made_view(
            record,
            trust_root=trust_root,
            raw=raw,
            state=state,
            reason=reason,
            failure_class=klass,
            outcome=run,
            check_outcome=check_outcome,
            kpi_outcome=kpi_outcome,
            share=share,
        )

    def _row_rules(
        self, record: Evidence, state: RunState, reason: str, klass: str, share: RowShare
    ) -> tuple[Outcome, Callable[[str, CheckResult], Outcome], Callable[[Kpi], Outcome]]:
        """The run's outcome and each row's, for `judged_view`: as `_with_outcome` gives them."""
        j = self.judgement
        if state == RunState.VERIFIED and j is None:  # no lane recomputes it: `as_signed`
            said = "as signed: this kind of evidence is not recomputed against a lane"
            st = record.statement
            reasons = "; ".join(st.reasons) if st is not None else ""

            def signed_check(phase: str, c: CheckResult) -> Outcome:
                return share.outcome(c.status, (), said)

            def signed_kpi(k: Kpi) -> Outcome:
                return share.outcome(k.status or NOT_JUDGED, (), said)

            run = share.outcome(str(self.effective), (), reasons or said)
            return run, signed_check, signed_kpi
        if state != RunState.VERIFIED:
            why = self.exclusion.label if self.exclusion is not None else klass
            run = share.outcome(str(state), (why or str(state),), reason)
        else:
            assert j is not None
            run = share.outcome(str(self.effective), j.causes, "; ".join(j.reasons))
        if j is None:  # every row not judged, for the run's outcome (`with_outcome`)
            why_not = unjudged_outcome(run, share)

            def not_judged(*_: Any) -> Outcome:
                return why_not

            return run, not_judged, not_judged
        judgement = j

        def judged_check(phase: str, c: CheckResult) -> Outcome:
            return _shared_row_outcome(judgement.check(phase, c.name), share)

        def judged_kpi(k: Kpi) -> Outcome:
            return _shared_row_outcome(judgement.kpi(k.id), share)

        return run, judged_check, judged_kpi

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


def _shared_row_outcome(row: RowOutcome | None, share: RowShare) -> Outcome:
    """`_row_outcome`, one object for equal outcomes (`share`)."""
    if row is None:
        return share.outcome(NOT_JUDGED, ("not among the lane's criteria",))
    return share.outcome(row.status, (row.cause,) if row.cause else (), row.detail)


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


# ---------------------------------------------------------------- the computation, in plain Python


def consensus_of(passed: int, failed: int) -> Consensus:
    """The consensus state from counts of distinct passing and failing signers."""
    if passed > 0 and failed > 0:
        return CONTESTED
    if failed > 0:
        return FAILING
    if passed >= 2:
        return CONFIRMED
    return SINGLE if passed == 1 else UNTESTED


def rolled_up(states: Iterable[Consensus]) -> Consensus:
    """Worst-first roll-up of some rows' states (one or more), PARTIAL when only some rows are
    untested."""
    seen = set(states)
    if FAILING in seen:
        return FAILING
    if CONTESTED in seen:
        return CONTESTED
    if seen == {UNTESTED}:
        return UNTESTED
    if UNTESTED in seen or PARTIAL in seen:
        return PARTIAL
    return SINGLE if SINGLE in seen else CONFIRMED


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_SECOND = timedelta(seconds=1)
_FRACTION = re.compile(r"\.([0-9]+)", re.ASCII)


def _attested_after(text: str, limit: int) -> bool:
    """Whether a signed attestedAt is later than `limit` (seconds since the epoch); False when
    it is empty or no RFC 3339 time.

    Compared exactly, to the nanosecond: the reference's datetime arithmetic does so too
    (pandas' `total_seconds` keeps a time with a sub-second part off the whole second)."""
    if not text:
        return False
    try:
        when = parse_rfc3339(text)
    except TimeError:
        return False
    fraction = _FRACTION.match(text, 19)  # parse_rfc3339 took YYYY-MM-DDTHH:MM:SS before it
    nanos = int(fraction.group(1)) if fraction else 0
    return ((when.replace(microsecond=0) - _EPOCH) // _SECOND, nanos) > (limit, 0)


# why a rejected record is not counted, by its failure class (the first rule that names it)
_REJECTED: Mapping[str, Exclusion] = {
    str(FailureClass.SIGNER_NOT_ALLOWED): UNALLOWLISTED,
    **{str(c): INVALID for c in sorted(_INVALID_CLASSES)},
    str(FailureClass.STALE): STALE,
    # judged already (records of `evidence.stage.verify_stage`)
    str(FailureClass.VERDICT_MISMATCH): VERDICT_MISMATCH,
    str(FailureClass.ATTESTED_AFTER_LOGGED): ATTESTED_AFTER_LOGGED,
}


@dataclass(frozen=True, slots=True)
class _Scope:
    """What judging the records needs besides them: the current recipes by (name, profile)
    (the last given of each), the lanes by name with their rank, whether sample evidence
    counts, and each record's recomputation (`_judgements`)."""

    current: Mapping[tuple[str, str], RecipeResult]
    lanes: Lanes
    known: Mapping[str, tuple[int, Any]]  # lane name -> (its rank in lanes.yaml, the Lane)
    demo: bool
    demo_roots: frozenset[str]
    judged: tuple[list[str], list[str], list[Judgement | None]]
    predicate: Sequence[str]  # each record's predicate type ("" when unreadable)
    # per lane, its required scenarios and KPIs (`kpi:<id>`): (phase, check, applies to)
    required: Mapping[str, tuple[tuple[str, str, Criteria | None], ...]]
    kpi_phase: Mapping[str, str]  # KPI id -> its phase

    def exclusion(self, row: _Row) -> Exclusion | None:
        """Why the record is not counted (None when it is), the first reason that applies."""
        if not row.verified:
            return _REJECTED.get(row.klass, UNVERIFIED)
        # attested (the run's own clock) after the transparency log recorded it (the log's)
        late = row.logged is not None and _attested_after(
            row.attested_at, row.logged + CLOCK_SKEW_SECONDS
        )
        if late:
            return ATTESTED_AFTER_LOGGED
        scale = row.predicate_type == SCALE_QUALIFICATION_V1
        # upstream recipe-evidence carries upstream's recipe digest: the verifier judged it
        # against upstream's digest of the current recipe (generator.evidence.upstream)
        r = self.current.get((row.recipe, row.profile))
        if row.stale_flag or (scale and (r is None or r.digest != row.recipe_digest)):
            return STALE
        if row.sample and not (row.trust_root in self.demo_roots or self.demo):
            return SAMPLE_OUTSIDE_DEMO
        if not scale:
            return None
        lane = self.known.get(row.lane)
        if lane is None:
            return UNKNOWN_LANE
        if row.criteria_version != lane[1].criteria_version:
            return STALE_CRITERIA
        return VERDICT_MISMATCH if self.judged[1][row.idx] else None

    def runs(self, rows: Sequence[_Row]) -> list[RunStatus]:
        """Every record as a run: counted or why not, latest or not, its verdict as counted."""
        recomputed, mismatch, judgements = self.judged
        exclusions = [self.exclusion(row) for row in rows]
        latest = _latest(rows, exclusions)
        out = []
        for row, why in zip(rows, exclusions, strict=True):
            i = row.idx
            if recomputed[i]:  # a scale run's verdict is the recomputed one
                effective = Verdict(recomputed[i])
            elif row.verdict == Verdict.PASS and row.predicate_type != SCALE_QUALIFICATION_V1:
                effective = Verdict.PASS
            else:
                effective = Verdict.FAIL
            out.append(
                RunStatus(
                    *(i, row.path, row.recipe, row.profile, row.lane, row.signer_label),
                    *(row.signer_class, row.identity, row.issuer, row.attested_at, row.verdict),
                    *(effective, tuple(row.reasons), bool(row.sample), why is None, i in latest),
                    *(why, row.klass, row.message, _downgraded(row, why, mismatch[i])),
                    judgements[i],
                )
            )
        return out

    def order(self, run: RunStatus) -> tuple[Any, ...]:
        """Where a run is listed: by recipe, profile, its lane's place in lanes.yaml (an unknown
        lane, or none, after every known one), path, then its place in the evidence."""
        known = self.known.get(run.lane)
        rank = (True, 0) if known is None else (False, known[0])
        return (run.recipe, run.profile, *rank, run.path, run.index)


def _latest(rows: Sequence[_Row], exclusions: Sequence[Exclusion | None]) -> set[int]:
    """The latest run per signer and scope, among counted runs, by the transparency log's
    verified time (never the signed attestedAt: a pass dated 2099 cannot hide a later failure);
    a run without a log time before every logged one; ties by statement digest, then the later
    record."""
    best: dict[tuple[str, str, str, str], tuple[bool, float, str, int]] = {}
    for row, why in zip(rows, exclusions, strict=True):
        if why is not None:
            continue
        key = (row.recipe, row.profile, row.lane, row.signer)
        order = (row.logged is not None, float(row.logged or 0), row.statement_digest, row.idx)
        if key not in best or order > best[key]:
            best[key] = order
    return {order[3] for order in best.values()}


def _downgraded(row: _Row, why: Exclusion | None, mismatch: str) -> str:
    """For a run invalid because of what it signed, the disagreement named ("" otherwise)."""
    if why is VERDICT_MISMATCH:
        return mismatch
    if why is ATTESTED_AFTER_LOGGED:
        logged = _log_time(float("nan") if row.logged is None else float(row.logged))
        return (
            f"attested-after-logged: attestedAt {row.attested_at} is later than the transparency "
            f"log's time for the entry ({logged})"
        )
    return ""


_NOT_RUN = ("skipped", "pending", "proposed")


def _results(st: Statement, kpi_phase: Mapping[str, str]) -> dict[tuple[str, str], bool]:
    """A run's checks and KPIs: (phase, check) -> failed (a check reported twice fails if either
    failed). Skipped, pending and unjudged KPIs are dropped, and so is a "pass" on zero
    targets; any other status than "passed" is a failure."""
    out: dict[tuple[str, str], bool] = {}
    rows: list[tuple[str, str, str | None, int | None]] = [
        (ph, c.name, c.status, c.targets) for ph, cs in st.phases.items() for c in cs
    ]
    rows += [(kpi_phase.get(k.id, "performance"), "kpi:" + k.id, k.status, None) for k in st.kpis]
    for phase, check, status, targets in rows:
        if status is None or status != status or status in _NOT_RUN:
            continue
        passed = status == "passed"
        if passed and targets == 0:
            continue
        key = (phase, check)
        out[key] = out.get(key, False) or not passed
    return out


def _required(lanes: Lanes, lane: Lane) -> tuple[tuple[str, str, Criteria | None], ...]:
    """A lane's required scenarios and KPIs, whichever recipe they apply to: (phase, check,
    the criteria they apply to), as `Lanes.required_scenarios` and `required_kpis` choose
    them before applying them to a recipe's criteria."""
    scenarios = [
        (s.phase, s.id, s.applies_to)
        for s in lanes.scenarios
        if s.id in lane.scenarios and s.phase in lane.phases
    ]
    kpis = [
        (k.phase, "kpi:" + k.id, k.applies_to)
        for k in lanes.kpis
        if lane.threshold(k.id) is not None and k.phase in lane.phases
    ]
    return (*scenarios, *kpis)


def _counts(fails: Iterable[bool]) -> tuple[int, int]:
    """(passed, failed) of some distinct signers, each failing or not."""
    failed = passed = 0
    for fail in fails:
        if fail:
            failed += 1
        else:
            passed += 1
    return passed, failed


@dataclass(frozen=True, slots=True)
class _Profile:
    """One recipe × profile's share of the computation: its result, ladder and runs."""

    result: RecipeResult
    ladder: Sequence[str]
    runs: Sequence[RunStatus]  # of this recipe and profile
    unscoped: Sequence[RunStatus]  # of this recipe, naming no profile (unreadable)

    def checks(self, scope: _Scope, evidence: Sequence[Evidence]) -> list[CheckStatus]:
        """Its checks: the applicable required scenarios and KPIs of every ladder lane, and
        every row its latest runs report, by lane, phase and check."""
        criteria = self.result.criteria
        latest: dict[str, list[RunStatus]] = {}
        for run in self.runs:
            if run.latest:
                latest.setdefault(run.lane, []).append(run)
        out = []
        for lane in sorted(set(self.ladder) | set(latest)):
            required = scope.required.get(lane, ()) if lane in self.ladder else ()
            expected = {(ph, check) for ph, check, pat in required if applies(pat, criteria)}
            counts: dict[tuple[str, str], list[int]] = {key: [0, 0] for key in expected}
            for run in latest.get(lane, ()):
                st = evidence[run.index].statement
                assert st is not None  # a counted run is verified
                for key, fail in _results(st, scope.kpi_phase).items():
                    counts.setdefault(key, [0, 0])[fail] += 1  # [passed, failed] signers
            for (phase, check), (passed, failed) in sorted(counts.items()):
                state = consensus_of(passed, failed)
                out.append(
                    CheckStatus(
                        lane, phase, check, state, passed, failed, (phase, check) in expected
                    )
                )
        return out

    def status(
        self, scope: _Scope, evidence: Sequence[Evidence], health: HealthStatus
    ) -> RecipeStatus:
        """Its record: consensus over its checks, its lanes, the ceiling of its ladder."""
        r = self.result
        checks = self.checks(scope, evidence)
        lanes = {ln.lane: ln for ln in self.lanes(scope, checks)}
        ceiling: tuple[str | None, int] = (None, 0)
        blocked: tuple[str | None, Consensus | None] = (None, None)
        for name in self.ladder:  # the contiguous qualified rungs from the bottom
            if not lanes[name].qualified:
                blocked = (name, lanes[name].state)
                break
            ceiling = (name, lanes[name].nodes)
        counted = [x for x in self.runs if x.counted]
        # unreadable statements name no profile: they count against every profile of their recipe
        pool = self.runs if r.scale_profile == "" else (*self.runs, *self.unscoped)
        excluded = sorted((x for x in pool if not x.counted), key=scope.order)
        return RecipeStatus(
            *(r.name, r.scale_profile, r.scale_profile_version, r.digest, health.health),
            health.coverage,
            rolled_up(c.state for c in checks) if checks else UNTESTED,
            *(*ceiling, *blocked),
            len(counted),
            len({x.signer_label for x in counted}),
            sum(not x.counted for x in self.runs) + sum(not x.counted for x in self.unscoped),
            any(x.sample for x in counted),
            tuple(sorted(lanes.values(), key=lambda ln: (ln.nodes, ln.lane))),
            tuple(checks),
            tuple(excluded),
        )

    def lanes(self, scope: _Scope, checks: Sequence[CheckStatus]) -> list[LaneStatus]:
        """Its lanes (of its ladder, or of a latest scale run): consensus over the latest scale
        runs' verdicts, with their phases' roll-ups and latest runs."""
        latest: dict[str, list[RunStatus]] = {}
        scale: dict[str, list[bool]] = {}
        for run in self.runs:
            if run.latest:
                latest.setdefault(run.lane, []).append(run)
                if scope.predicate[run.index] == SCALE_QUALIFICATION_V1:
                    scale.setdefault(run.lane, []).append(run.effective != Verdict.PASS)
        phases: dict[str, dict[str, list[Consensus]]] = {}
        for c in checks:
            phases.setdefault(c.lane, {}).setdefault(c.phase, []).append(c.state)
        out = []
        for lane in set(self.ladder) | set(scale):
            passed, failed = _counts(scale.get(lane, ()))
            state = consensus_of(passed, failed)
            spec = scope.known.get(lane)
            runs = sorted(latest.get(lane, ()), key=lambda x: (x.signer_label, x.path, x.index))
            rolled = ((ph, rolled_up(s)) for ph, s in phases.get(lane, {}).items())
            out.append(
                LaneStatus(
                    lane=lane,
                    nodes=spec[1].nodes if spec is not None else 0,
                    on_ladder=lane in self.ladder,
                    state=state,
                    qualified=state in QUALIFYING,
                    passed=passed,
                    failed=failed,
                    phases=tuple(sorted(rolled)),
                    runs=tuple(runs),
                )
            )
        return out


def _health(
    recipes: Sequence[RecipeResult], failures: Mapping[str, str]
) -> tuple[HealthStatus, ...]:
    """Health per leaf, by the rules of `generator.validate.leaf_health` (what `list` and the site
    show): fail if it does not resolve; warn if a constraint is malformed or a chart is not pinned
    to a released semantic version; coverage counts the declared checks per phase."""
    out: dict[str, HealthStatus] = {}
    for r in recipes:
        if r.name not in out:
            h = health_of(r)
            out[r.name] = HealthStatus(r.name, h.health, h.coverage_text(), tuple(h.reasons))
    for name, why in sorted(failures.items()):
        if name not in out:
            problems = (f"does not resolve: {why}",)
            out[name] = HealthStatus(name, "fail", "R:0 D:0 P:0 C:0", problems)
    return tuple(out[name] for name in sorted(out))


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

    Computed in plain Python; `generator.aggregate_tables.aggregate_reference` computes it
    with pandas tables (the reference: tests/test_aggregate_differential.py).
    """
    rows = [_run_row(i, e) for i, e in enumerate(evidence)]
    scope = _Scope(
        current={(r.name, r.scale_profile): r for r in recipes},  # the last of each
        lanes=lanes,
        known={ln.name: (rank, ln) for rank, ln in enumerate(lanes.lanes)},
        demo=demo,
        demo_roots=frozenset(demo_roots),
        judged=_judgements(evidence, recipes, lanes),
        predicate=[row.predicate_type for row in rows],
        required={ln.name: _required(lanes, ln) for ln in lanes.lanes},
        kpi_phase={k.id: k.phase for k in lanes.kpis},
    )
    runs = scope.runs(rows)
    by_profile: dict[tuple[str, str], list[RunStatus]] = {}
    for run in runs:
        by_profile.setdefault((run.recipe, run.profile), []).append(run)
    health = _health(recipes, failures)
    by_name = {h.recipe: h for h in health}
    statuses = [
        _Profile(
            r, ladders.get(profile, ()), by_profile.get((name, profile), ()),
            by_profile.get((name, ""), ()),
        ).status(scope, evidence, by_name[name])
        for (name, profile), r in sorted(scope.current.items())
    ]  # fmt: skip
    return Status(
        health=health,
        recipes=tuple(statuses),
        components=components_of(recipes, statuses),
        runs=tuple(runs),
        demo=demo or bool(demo_roots),
    )


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
    results: Sequence[Qualified],
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
    results: Sequence[Qualified],
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


class _Component(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def version(self) -> str | None: ...


class Qualified(Protocol):
    """What the component qualification reads of a result: a `RecipeResult`, or its head
    (`pipeline.ResultHead`, which `combine` is given: no recipe's results are read)."""

    @property
    def name(self) -> str: ...
    @property
    def scale_profile(self) -> str: ...
    @property
    def components(self) -> Sequence[_Component]: ...


def components_of(
    results: Sequence[Qualified], statuses: Sequence[RecipeStatus]
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
