"""`EvidenceView`: one evidence file, verified or not, as people and tools are shown it.

One record, one JSON form (`EvidenceView.to_json()`), used by every reader of a verification:
`evidence verify --format json` (each result), `status --format json --detail` (each run and
excluded file) and the site's API (`api/v1/evidence/<recipe>.json`, each recipe's `evidence`).
Each of those adds only what its own context knows: the verifier the digest it compared with,
`status` how the run was counted, the site where it published the file. Adding a statement field
is one field here, its line in `to_json()` and the `$defs/run` of the schemas that embed it
(`tests/test_evidence_view.py` checks those agree).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, NamedTuple, Protocol

from generator.core.timeutil import rfc3339
from generator.evidence.model import (
    CheckResult,
    Evidence,
    Kpi,
    RunState,
    Statement,
    VerifiedEvidence,
)
from generator.fast.loaded import LoadedTuple


@dataclass(frozen=True, slots=True)
class Outcome:
    """A judged outcome and why: the one thing a page, chart or badge shows as a run's, a
    check's or a KPI's status (never the status a signer wrote, which a run may contradict).

    `status`: for a run pass | fail (counted, as recomputed) | stale | rejected; for a check or
    KPI passed | failed (recomputed against the lane), skipped | pending (a check the lane does
    not require), or "not judged" (the run was not judged: stale, rejected, no lanes).
    `causes`: why, in a few words (`generator.evidence.judge.Cause`, or the exclusion's label);
    `detail`: the full sentence(s)."""

    status: str
    causes: tuple[str, ...] = ()
    detail: str = ""

    def __reduce__(self) -> tuple[type[Outcome], tuple[Any, ...]]:
        return Outcome, (self.status, self.causes, self.detail)

    @property
    def cause(self) -> str:
        return ", ".join(self.causes)

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status or None,
            "causes": list(self.causes),
            "detail": self.detail or None,
        }


def _values(record: Any) -> tuple[Any, ...]:
    """A slotted record's field values, in its constructor's order (pickled as arguments)."""
    return tuple(getattr(record, name) for name in record.__slots__)


NOT_JUDGED = "not judged"
# a row before `evidence_view` places it in its run (`_unjudged_rows`)
_UNJUDGED = Outcome(NOT_JUDGED, ("not judged against a lane",))


@dataclass(frozen=True, slots=True)
class CheckRow:
    """One check result of a run: `status` as signed, `outcome` as judged."""

    phase: str
    name: str
    status: str  # CTRF: passed failed skipped pending other (as signed)
    targets: int | None
    message: str
    outcome: Outcome = _UNJUDGED

    def __reduce__(self) -> tuple[type[CheckRow], tuple[Any, ...]]:
        return CheckRow, _values(self)

    def judged(self, outcome: Outcome) -> CheckRow:
        """This row with `outcome` (a direct construction: `dataclasses.replace` costs ~10×,
        and every run's rows are judged once or twice a build)."""
        return CheckRow(self.phase, self.name, self.status, self.targets, self.message, outcome)

    def to_json(self) -> dict[str, Any]:
        return {
            "phase": self.phase,
            "name": self.name,
            "status": self.status,
            "targets": self.targets,
            "outcome": self.outcome.to_json(),
        }


@dataclass(frozen=True, slots=True)
class KpiRow:
    """One KPI a run reported: `status` as signed, `outcome` as judged."""

    id: str
    value: float
    unit: str
    operator: str
    threshold: float
    status: str  # passed | failed | proposed | "" (as signed)
    outcome: Outcome = _UNJUDGED

    def __reduce__(self) -> tuple[type[KpiRow], tuple[Any, ...]]:
        return KpiRow, _values(self)

    def judged(self, outcome: Outcome) -> KpiRow:
        """This row with `outcome` (see `CheckRow.judged`)."""
        return KpiRow(
            self.id, self.value, self.unit, self.operator, self.threshold, self.status, outcome
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "value": self.value,
            "unit": self.unit,
            "threshold": {"operator": self.operator, "value": self.threshold},
            "status": self.status or None,
            "outcome": self.outcome.to_json(),
        }


@dataclass(frozen=True, slots=True)
class RawFile:
    """The file the site publishes as a run's raw download, by reference: a view holds no
    bytes (a build keeps every run's view, and stores them). `path`: the file the build reads
    the bytes from, inside `root` (both real paths); a `pointer` file's published bytes are its
    signed bundle when the cache holds one, else the pointer itself. `sha256` and `size`: the
    bytes published, which are those verified (a reader refuses any others); `statement`:
    whether they hold a signed statement, published beside them
    (`generator.site.audit.signed_statement`)."""

    path: str
    root: str
    sha256: str
    size: int
    statement: bool
    pointer: bool = False

    def __reduce__(self) -> tuple[type[RawFile], tuple[Any, ...]]:
        return RawFile, _values(self)


@dataclass(frozen=True, slots=True)
class EvidenceView:
    """One evidence file, verified or not (made from a verification record by
    `evidence_view`); `to_json()` is its one published form."""

    id: str  # stable and unique: <statement digest hex[:16]>-<sha256(path) hex[:8]>
    statement_digest: str  # "sha256:<hex>" of the statement, "" when unreadable
    path: str  # evidence/<recipe>/<source>/<digest>.sigstore.json (repository-relative)
    recipe: str
    state: RunState
    reason: str  # why rejected/stale ("" when verified)
    failure_class: str  # failure class: "stale", a verification failure, or "" when verified
    sample: bool
    predicate_type: str
    profile: str
    profile_version: str
    lane: str
    lane_nodes: int | None
    observed_nodes: int | None
    observed_gpus: int | None
    verdict: str  # pass | fail | "" (unknown)
    reasons: tuple[str, ...]
    recipe_digest: str
    bundle_digest: str
    attested_at: str
    signer_identity: str
    signer_issuer: str
    signer_class: str  # first-party | partner | community | "" (not allowlisted)
    signer_label: str
    trust_root: str
    tlog_index: int | None
    integrated_time: str
    checks: tuple[CheckRow, ...]
    kpis: tuple[KpiRow, ...]
    component_versions: Mapping[str, str]
    raw: RawFile | None  # the .sigstore.json file the site publishes; None when it does not
    # the run as judged (`RunStatus.judged`): what every page, chart and badge shows
    outcome: Outcome = _UNJUDGED

    def __reduce__(self) -> tuple[type[EvidenceView], tuple[Any, ...]]:
        """Pickled as its constructor's arguments: a build stores every recipe's views
        (`generator.site.stages.judged`), and the generic path of a frozen dataclass (a
        `__setstate__` setting each field) costs several times more to load."""
        return EvidenceView, _values(self)

    @property
    def counted(self) -> bool:
        return self.state == RunState.VERIFIED

    @property
    def raw_file(self) -> str:
        """Where the site publishes the file: `evidence/raw/<id>.sigstore.json`, one flat
        directory (a directory per recipe and lab, as in the repository, would be thousands of
        directories to create and delete on every build)."""
        return f"evidence/raw/{self.id}.sigstore.json"

    @property
    def short(self) -> str:
        """The run's short name on pages: the first 12 hex of its statement digest."""
        return (self.statement_digest.removeprefix("sha256:") or self.id)[:12]

    def to_json(self) -> dict[str, Any]:
        """The run as every JSON output shows it (`$defs/run` of
        `catalog/schemas/api/evidence.schema.json`, less the site's `url` and `raw`)."""
        return {
            "id": self.id,
            "statementDigest": self.statement_digest or None,
            "recipe": self.recipe,
            # where the file is in the catalog's repository (on the site it is at `raw`)
            "repositoryPath": self.path,
            "state": self.state,
            "counted": self.counted,
            "reason": self.reason or None,
            "class": self.failure_class or None,
            "sample": self.sample,
            "predicateType": self.predicate_type or None,
            "scaleProfile": {"name": self.profile or None, "version": self.profile_version or None},
            "lane": {"name": self.lane or None, "nodes": self.lane_nodes},
            "observed": {"nodes": self.observed_nodes, "gpus": self.observed_gpus},
            "verdict": self.verdict or None,
            "reasons": list(self.reasons),
            "recipeDigest": self.recipe_digest or None,
            "bundleDigest": self.bundle_digest or None,
            "componentVersions": dict(sorted(self.component_versions.items())),
            "attestedAt": self.attested_at or None,
            "signer": {
                "identity": self.signer_identity or None,
                "issuer": self.signer_issuer or None,
                "class": self.signer_class or None,
                "label": self.signer_label or None,
            },
            "trustRoot": self.trust_root or None,
            "tlog": {"index": self.tlog_index, "integratedTime": self.integrated_time or None},
            "checks": [c.to_json() for c in self.checks],
            "kpis": [k.to_json() for k in self.kpis],
            "outcome": self.outcome.to_json(),
        }


class RunFacts(Protocol):
    """What the site-wide outputs read of a run (the evidence index, the API's indexes, the
    dashboard, changelog, signer and component pages, each recipe's summary and badges, the
    keys of a recipe's files, the raw files published): the fields of `RunRow`, which an
    `EvidenceView` has too, under the same names."""

    @property
    def id(self) -> str: ...
    @property
    def path(self) -> str: ...
    @property
    def recipe(self) -> str: ...
    @property
    def state(self) -> RunState: ...
    @property
    def sample(self) -> bool: ...
    @property
    def profile(self) -> str: ...
    @property
    def lane(self) -> str: ...
    @property
    def lane_nodes(self) -> int | None: ...
    @property
    def attested_at(self) -> str: ...
    @property
    def signer_identity(self) -> str: ...
    @property
    def signer_class(self) -> str: ...
    @property
    def signer_label(self) -> str: ...
    @property
    def raw(self) -> RawFile | None: ...
    @property
    def outcome(self) -> Outcome: ...
    @property
    def counted(self) -> bool: ...
    @property
    def raw_file(self) -> str: ...


class RunRow(NamedTuple):
    """A run's summary row: the fields of its `EvidenceView` that the site-wide outputs read
    (`RunFacts`), the same values. A build keeps one per run beside its recipe's stored views
    (`generator.site.stages`), so that the outputs made from every run (the evidence index,
    counts, the changelog, each recipe's summary, the keys that tell a recipe's files
    unchanged) are made without loading the views of recipes whose runs did not change.

    Measured at 1,000 recipes x 20,000 runs, one evidence file removed: every recipe's views
    were read for those outputs (1,000 entries, 47.4 MB, 20,000 views); the rows are 14.7 MB.
    A named tuple, not a frozen dataclass: loading the 20,000 rows, 0.066 -> 0.042 CPU-s (a
    frozen dataclass sets each field through `object.__setattr__`). The reference is the view
    itself: `RunRow.of(view)` is its fields (tests/test_views_rows.py)."""

    id: str
    path: str
    recipe: str
    state: RunState
    sample: bool
    profile: str
    lane: str
    lane_nodes: int | None
    attested_at: str
    signer_identity: str
    signer_class: str
    signer_label: str
    raw: RawFile | None
    outcome: Outcome

    @staticmethod
    def of(view: EvidenceView) -> RunRow:
        return RunRow(*[getattr(view, name) for name in _ROW_FIELDS])

    @property
    def counted(self) -> bool:
        return self.state == RunState.VERIFIED

    @property
    def raw_file(self) -> str:
        return f"evidence/raw/{self.id}.sigstore.json"  # as `EvidenceView.raw_file`


_ROW_FIELDS = RunRow._fields


class RecipeRuns(LoadedTuple):
    """One recipe name's runs: their summary rows at hand (`rows`), their views read when first
    used (`load`: from the recipe's stored views). The tuple of views to every reader, its
    length and truth its rows' (no load). Not a record: it loads."""

    __slots__ = ("_load", "_views", "rows")
    loaded = 0  # how many recipe names' views were loaded (a count of work, for tests)

    def __init__(
        self, rows: tuple[RunRow, ...], load: Callable[[], tuple[EvidenceView, ...]]
    ) -> None:
        self.rows = rows
        self._load: Callable[[], tuple[EvidenceView, ...]] | None = load
        self._views: tuple[EvidenceView, ...] | None = None

    def _tuple(self) -> tuple[EvidenceView, ...]:
        if self._views is None:
            assert self._load is not None
            type(self).loaded += 1
            views = self._load()
            if [v.id for v in views] != [r.id for r in self.rows]:
                raise AssertionError("a recipe's stored views are not those of its rows")
            self._views, self._load = views, None
        return self._views

    def __len__(self) -> int:
        return len(self.rows)

    def __bool__(self) -> bool:
        return bool(self.rows)


class SiteRuns(LoadedTuple):
    """Every run, grouped by recipe name (`groups`, in the site's order: each a `RecipeRuns`),
    their rows at hand (`rows`); the tuple of every view to a reader that asks for it (which
    loads them all: the site-wide outputs read `facts`). Not a record: it loads."""

    __slots__ = ("_all", "groups", "rows")

    def __init__(self, groups: Mapping[str, RecipeRuns]) -> None:
        self.groups = groups
        self.rows = tuple(r for g in groups.values() for r in g.rows)
        self._all: tuple[EvidenceView, ...] | None = None

    def _tuple(self) -> tuple[EvidenceView, ...]:
        if self._all is None:
            self._all = tuple(v for g in self.groups.values() for v in g)
        return self._all

    def __len__(self) -> int:
        return len(self.rows)

    def __bool__(self) -> bool:
        return bool(self.rows)


def facts(runs: Sequence[RunFacts]) -> Sequence[RunFacts]:
    """What the site-wide outputs read of `runs`, without loading views that are not loaded
    yet: the rows of stored runs (`RecipeRuns`, `SiteRuns`), else the views themselves."""
    if isinstance(runs, RecipeRuns | SiteRuns):
        return runs.rows
    return runs


def by_recipe(runs: Sequence[EvidenceView]) -> dict[str, Sequence[EvidenceView]]:
    """`runs` grouped by recipe name, in their order, without loading views not loaded yet
    (the groups of `SiteRuns`; else each name's views as a tuple)."""
    if isinstance(runs, SiteRuns):
        return {name: group for name, group in runs.groups.items()}
    groups: dict[str, list[EvidenceView]] = {}
    for e in runs:
        groups.setdefault(e.recipe, []).append(e)
    return {name: tuple(views) for name, views in groups.items()}


def evidence_view(record: Evidence, *, trust_root: str, raw: RawFile | None = None) -> EvidenceView:
    """The view of one verification record; `trust_root` names the root when the record does
    not (it could not be verified by any); `raw` is the file the site publishes."""
    st = record.statement
    ok = record if isinstance(record, VerifiedEvidence) else None
    state, reason, klass = view_state(record)
    view = EvidenceView(
        id=_view_id(record),
        statement_digest=record.statement_digest or "",
        path=record.path,
        state=state,
        reason=reason,
        failure_class=klass,
        # signed under the demo root, or sample by its own word
        sample=(ok is not None and ok.sample)
        or (st is not None and st.sample)
        or record.trust_root == "demo",
        signer_identity=record.signer_identity or "",
        signer_issuer=record.signer_issuer or "",
        signer_class=str(ok.signer_class) if ok else "",
        signer_label=ok.signer_label if ok else "",
        trust_root=record.trust_root or trust_root,
        tlog_index=record.log_index,
        integrated_time="" if record.integrated_time is None else rfc3339(record.integrated_time),
        raw=raw,
        outcome=_state_outcome(state, reason, klass),
        **(_statement_fields(st) if st is not None else _no_statement(record.path)),
    )
    return _unjudged_rows(view)


class RowShare:
    """One object for equal outcomes, and for equal check or KPI rows, among the views made
    with it (`made_view`): the rule of `generator.site.stages.shared` (rows alike in what
    their published form shows apart: a KPI's zeros by sign, a check's targets by type), kept
    while the views are made instead of applied to them after. Not a record: it remembers."""

    __slots__ = ("_checks", "_kpis", "_outcomes")

    def __init__(self) -> None:
        self._outcomes: dict[tuple[str, tuple[str, ...], str], Outcome] = {}
        self._checks: dict[tuple[Any, ...], CheckRow] = {}
        self._kpis: dict[tuple[Any, ...], KpiRow] = {}

    def outcome(self, status: str, causes: tuple[str, ...] = (), detail: str = "") -> Outcome:
        key = (status, causes, detail)
        found = self._outcomes.get(key)
        if found is None:
            found = self._outcomes[key] = Outcome(status, causes, detail)
        return found

    def check(self, phase: str, c: CheckResult, outcome: Outcome) -> CheckRow:
        """The row of check `c` (one of `outcome`s from `self.outcome`: keyed by identity)."""
        targets = c.targets
        exact = type(targets), targets == 0 and repr(targets)  # as `stages._exact`
        key = (phase, c.name, c.status, targets, c.message, id(outcome), exact)
        found = self._checks.get(key)
        if found is None:
            found = self._checks[key] = CheckRow(
                phase, c.name, c.status, targets, c.message, outcome
            )
        return found

    def kpi(self, k: Kpi, outcome: Outcome) -> KpiRow:
        """The row of KPI `k` (as `check`)."""
        value, threshold, status = k.value, k.threshold, k.status or ""
        key = (
            k.id,
            value,
            k.unit,
            k.operator,
            threshold,
            status,
            id(outcome),
            value == 0 and repr(value),
            threshold == 0 and repr(threshold),
        )
        found = self._kpis.get(key)
        if found is None:
            found = self._kpis[key] = KpiRow(
                k.id, value, k.unit, k.operator, threshold, status, outcome
            )
        return found


def made_view(
    record: Evidence,
    *,
    trust_root: str,
    raw: RawFile | None,
    state: RunState,
    reason: str,
    failure_class: str,
    outcome: Outcome,
    check_outcome: Callable[[str, CheckResult], Outcome],
    kpi_outcome: Callable[[Kpi], Outcome],
    share: RowShare,
) -> EvidenceView:
    """The view of `record` as `evidence_view` makes it, with `state`, `reason`,
    `failure_class` and `outcome` given, each check's and KPI's outcome from `check_outcome`
    and `kpi_outcome`, and its rows and outcomes shared through `share`: one construction of
    each, where the reference (`evidence_view`, then `with_outcome` or `as_signed` as the
    aggregate judges the run, then `stages.shared`) makes each view four times and each row
    three (`generator.aggregate.RunStatus.judged_view` says what it bought)."""
    st = record.statement
    ok = record if isinstance(record, VerifiedEvidence) else None
    checks: tuple[CheckRow, ...] = ()
    kpis: tuple[KpiRow, ...] = ()
    if st is not None:
        checks = tuple(
            share.check(phase, c, check_outcome(phase, c))
            for phase, cs in st.phases.items()
            for c in cs
        )
        kpis = tuple(share.kpi(k, kpi_outcome(k)) for k in st.kpis)
    path = record.path
    return EvidenceView(
        _view_id(record),
        record.statement_digest or "",
        path,
        st.recipe if st is not None else path.split("/")[1] if "/" in path else "",
        state,
        reason,
        failure_class,
        # signed under the demo root, or sample by its own word
        (ok is not None and ok.sample)
        or (st is not None and st.sample)
        or record.trust_root == "demo",
        *(_statement_head(st) if st is not None else _NO_STATEMENT_HEAD),
        record.signer_identity or "",
        record.signer_issuer or "",
        str(ok.signer_class) if ok else "",
        ok.signer_label if ok else "",
        record.trust_root or trust_root,
        record.log_index,
        "" if record.integrated_time is None else rfc3339(record.integrated_time),
        checks,
        kpis,
        dict(st.component_versions) if st is not None else {},
        raw,
        outcome,
    )


# the view's fields from `predicate_type` to `attested_at`
_Head = tuple[
    str, str, str, str, int | None, int | None, int | None, str, tuple[str, ...], str, str, str
]


def _statement_head(st: Statement) -> _Head:
    """The view's fields from `predicate_type` to `attested_at`, as `_statement_fields`."""
    return (
        st.predicate_type,
        st.scale_profile or "",
        st.scale_profile_version or "",
        st.lane or "",
        st.lane_nodes,
        st.observed_nodes,
        st.observed_gpus,
        st.verdict or "",
        tuple(st.reasons),
        st.recipe_digest,
        st.bundle_digest or "",
        st.attested_at or "",
    )


# those fields of a file whose statement could not be read (`_no_statement`)
_NO_STATEMENT_HEAD: _Head = ("", "", "", "", None, None, None, "", (), "", "", "")


def unjudged_outcome(run: Outcome, share: RowShare) -> Outcome:
    """The outcome of every row of a run not judged, for the run's `run` outcome (stale,
    rejected, not judged): what `_unjudged_rows` gives each."""
    return share.outcome(
        NOT_JUDGED,
        run.causes or (run.status,),
        f"the run is {run.status}"
        + (f" ({run.cause})" if run.cause else "")
        + ": its checks and KPIs are not judged against the lane",
    )


def with_outcome(
    view: EvidenceView,
    run: Outcome,
    kpis: Mapping[str, Outcome] | None = None,
    checks: Mapping[tuple[str, str], Outcome] | None = None,
) -> EvidenceView:
    """`view` with its judged outcome: the run's, and each row's from `kpis` / `checks` (a row
    they do not name is not judged, and says so); without them every row is not judged, for
    the run's reason."""
    if kpis is None or checks is None:
        return _unjudged_rows(replace(view, outcome=run))
    left_out = Outcome(NOT_JUDGED, ("not among the lane's criteria",))
    return replace(
        view,
        outcome=run,
        kpis=tuple(k.judged(kpis.get(k.id, left_out)) for k in view.kpis),
        checks=tuple(c.judged(checks.get((c.phase, c.name), left_out)) for c in view.checks),
    )


def as_signed(view: EvidenceView, verdict: str) -> EvidenceView:
    """A counted run that no lane recomputes (not a scale-qualification statement): counted
    with `verdict`, each row as its signer reported it, and saying so."""
    said = "as signed: this kind of evidence is not recomputed against a lane"
    return replace(
        view,
        outcome=Outcome(verdict, (), "; ".join(view.reasons) or said),
        kpis=tuple(k.judged(Outcome(k.status or NOT_JUDGED, (), said)) for k in view.kpis),
        checks=tuple(c.judged(Outcome(c.status, (), said)) for c in view.checks),
    )


def _unjudged_rows(view: EvidenceView) -> EvidenceView:
    """Every row of `view` not judged, for the run's outcome (stale, rejected, not judged)."""
    run = view.outcome
    why = Outcome(
        NOT_JUDGED,
        run.causes or (run.status,),
        f"the run is {run.status}"
        + (f" ({run.cause})" if run.cause else "")
        + ": its checks and KPIs are not judged against the lane",
    )
    return replace(
        view,
        kpis=tuple(k.judged(why) for k in view.kpis),
        checks=tuple(c.judged(why) for c in view.checks),
    )


def _state_outcome(state: RunState, reason: str, klass: str) -> Outcome:
    """A run's outcome from verification alone: stale or rejected and why, else not judged."""
    if state is RunState.VERIFIED:
        return Outcome(NOT_JUDGED, ("not judged against a lane",))
    return Outcome(str(state), (klass or str(state),), reason)


def _view_id(record: Evidence) -> str:
    """Stable and unique: two files may hold the same statement (a copy under another signer's
    directory), so the key adds the path and ids, anchors and links stay unique and stable."""
    digest = record.statement_digest or ""
    key = digest.removeprefix("sha256:")[:16] or "file"  # "file": no readable statement
    return f"{key}-{hashlib.sha256(record.path.encode()).hexdigest()[:8]}"


def view_state(record: Evidence) -> tuple[RunState, str, str]:
    """(state, why it is not counted, failure class) as the verifier judged the file."""
    state = RunState.of(record)
    if state is RunState.VERIFIED:
        return state, "", ""
    if state is RunState.STALE:
        return state, record.message, "stale"
    return state, record.message, str(record.klass)


def _statement_fields(st: Statement) -> dict[str, Any]:
    """What a view shows of the statement a record carries."""
    return {
        "recipe": st.recipe,
        "predicate_type": st.predicate_type,
        "profile": st.scale_profile or "",
        "profile_version": st.scale_profile_version or "",
        "lane": st.lane or "",
        "lane_nodes": st.lane_nodes,
        "observed_nodes": st.observed_nodes,
        "observed_gpus": st.observed_gpus,
        "verdict": st.verdict or "",
        "reasons": tuple(st.reasons),
        "recipe_digest": st.recipe_digest,
        "bundle_digest": st.bundle_digest or "",
        "attested_at": st.attested_at or "",
        "checks": tuple(
            CheckRow(phase, c.name, c.status, c.targets, c.message)
            for phase, cs in st.phases.items()
            for c in cs
        ),
        "kpis": tuple(
            KpiRow(k.id, k.value, k.unit, k.operator, k.threshold, k.status or "") for k in st.kpis
        ),
        "component_versions": dict(st.component_versions),
    }


def _no_statement(path: str) -> dict[str, Any]:
    """The statement fields of a file whose statement could not be read."""
    return {
        "recipe": path.split("/")[1] if "/" in path else "",
        "predicate_type": "",
        "profile": "",
        "profile_version": "",
        "lane": "",
        "lane_nodes": None,
        "observed_nodes": None,
        "observed_gpus": None,
        "verdict": "",
        "reasons": (),
        "recipe_digest": "",
        "bundle_digest": "",
        "attested_at": "",
        "checks": (),
        "kpis": (),
        "component_versions": {},
    }
