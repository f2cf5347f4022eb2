"""Recompute, never believe: a scale-qualification run judged again from what it signed.

A statement signs its raw results (check statuses and targets, KPI values and targets, observed
counts, running component versions) *and* what its signer concluded (each KPI's status, the
verdict). Only the raw results are taken as signed; the conclusions are recomputed here against
the lane criteria the catalog publishes (`catalog/scale/lanes.yaml`), by the rules
`generator.scale.qualify.qualify` applies when it writes a statement:

- the lane's node count is the one the catalog gives it, and the run observed at least the
  lane's nodes and GPUs;
- every running component version is the recipe's pin;
- every required scenario of the lane (those whose `appliesTo` matches the recipe) was reported,
  passed and ran on at least one target; no check anywhere failed (skipped and pending are not
  failures, but a required scenario skipped was not executed);
- every required KPI is reported once, in the lane's unit, within the lane's threshold (the
  catalog's, not the one the statement repeats), measured on at least the lane's `minTargets`.

`judge(statement, lanes, criteria, pins)` returns the recomputed verdict and KPI statuses and
every place where the signed statement disagrees: a signed verdict or KPI status that is not the
recomputed one, a threshold that is not the lane's, a KPI the lane does not judge. A statement
with any disagreement is an invalid run (`verdict-mismatch` in the status). Statements judged
under other criteria (`criteriaVersion` is not the lane's current one) are stale, not judged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from generator.catalog.lanes import Lane, Lanes, Threshold
from generator.core.records import Criteria
from generator.core.timeutil import TimeError, parse_rfc3339, rfc3339
from generator.evidence.model import SCALE_QUALIFICATION_V1, Kpi, Statement, constructor_args

PASSED = "passed"
NOT_RUN = ("skipped", "pending")
# How far a run's clock may be ahead of the transparency log's before attestedAt is a lie.
CLOCK_SKEW_SECONDS = 300


def attested_after_logged(attested_at: str | None, integrated_time: int | None) -> str | None:
    """Why a statement attested after the log recorded it is invalid, or None."""
    if not attested_at or integrated_time is None:
        return None
    try:
        when = parse_rfc3339(attested_at)
    except TimeError as e:
        # fail closed: a time no one can order never skips this rule
        return f"attested-after-logged: attestedAt cannot be ordered against the log: {e}"
    if when.timestamp() <= integrated_time + CLOCK_SKEW_SECONDS:
        return None
    logged = rfc3339(integrated_time)
    return (
        f"attested-after-logged: attestedAt {attested_at} is later than the transparency log's "
        f"time for the entry ({logged})"
    )


class Cause(StrEnum):
    """Why a run, a check or a KPI fails its lane, in a few words: the one vocabulary every
    page, chart and badge shows beside a judged outcome (the detail follows it)."""

    COVERAGE_SHORT = "coverage short"  # fewer nodes, GPUs or targets than the lane needs
    THRESHOLD_MISSED = "threshold missed"
    UNIT_DIFFERS = "unit differs"
    NOT_MEASURED = "not measured"
    NOT_EXECUTED = "not executed"
    CHECK_FAILED = "check failed"
    PIN_DIFFERS = "pin differs"
    LANE_SIZE = "wrong lane size"
    NO_PREFLIGHT = "preflight missing or failed"


@dataclass(frozen=True, slots=True)
class RowOutcome:
    """The recomputed outcome of one check or KPI row of a run: passed, or failed with its
    cause and the detail (`detail` names the row, as the run's reasons do)."""

    status: str  # passed | failed | skipped | pending (a check not required by the lane)
    cause: str  # a `Cause`, "" when passed
    detail: str  # "" when passed

    def __reduce__(self) -> tuple[type[RowOutcome], tuple[Any, ...]]:
        return RowOutcome, constructor_args(self)  # loaded by one constructor call


_PASSED_ROW = RowOutcome(PASSED, "", "")


@dataclass(frozen=True, slots=True)
class Judgement:
    """The recomputed outcome of one run and where the signed statement disagrees with it."""

    verdict: str  # pass | fail, recomputed
    reasons: tuple[str, ...]  # why it fails, recomputed
    mismatches: tuple[str, ...]  # empty: the signed conclusions are the recomputed ones
    causes: tuple[str, ...] = ()  # the distinct `Cause`s of `reasons`, in their order
    judged_kpis: frozenset[str] = frozenset()  # the KPI ids the lane judges
    # the rows that did not pass, by KPI id and by (phase, check): every other judged KPI and
    # every other reported check passed (kept sparse: 20,000 runs have 500,000 rows)
    failed_kpis: Mapping[str, RowOutcome] = field(default_factory=dict)
    failed_checks: Mapping[tuple[str, str], RowOutcome] = field(default_factory=dict)

    def __reduce__(self) -> tuple[type[Judgement], tuple[Any, ...]]:
        # the aggregate stage's stored parts hold one per judged run (20,000 at 1,000 recipes)
        return Judgement, constructor_args(self)  # loaded by one constructor call

    def kpi(self, kpi_id: str) -> RowOutcome | None:
        """A reported KPI's recomputed outcome; None when the lane does not judge it."""
        if kpi_id not in self.judged_kpis:
            return None
        return self.failed_kpis.get(kpi_id, _PASSED_ROW)

    def check(self, phase: str, name: str) -> RowOutcome:
        """A reported check's recomputed outcome."""
        return self.failed_checks.get((phase, name), _PASSED_ROW)

    @property
    def kpi_status(self) -> Mapping[str, str]:
        """KPI id -> passed | failed, recomputed (the KPIs the run reported once)."""
        return {
            kid: row.status
            for kid in sorted(self.judged_kpis)
            if (row := self.kpi(kid)) is not None and row.cause != Cause.NOT_MEASURED
        }

    @property
    def consistent(self) -> bool:
        return not self.mismatches

    def explain(self) -> str:
        """One line naming the disagreement (for status, the site and release)."""
        return "verdict-mismatch: " + "; ".join(self.mismatches)


def _num(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:g}"


@dataclass(frozen=True, slots=True)
class _Required:
    scenarios: tuple[tuple[str, str], ...]  # (phase, scenario id)
    kpis: tuple[tuple[str, str, str, int, Threshold], ...]  # (id, unit, phase, targets, threshold)
    kpi_ids: frozenset[str]


def _required(lanes: Lanes, lane: Lane, criteria: Criteria) -> _Required:
    kpis = tuple(
        (k.id, k.unit, k.phase, lane.required_targets(k.min_targets), t)
        for k, t in lanes.required_kpis(lane, criteria)
    )
    return _Required(
        scenarios=tuple((s.phase, s.id) for s in lanes.required_scenarios(lane, criteria)),
        kpis=kpis,
        kpi_ids=frozenset(k[0] for k in kpis),
    )


def judgeable(statement: Statement, lanes: Lanes) -> Lane | None:
    """The lane a statement can be judged against: ours, a known lane, the current criteria."""
    if statement.predicate_type != SCALE_QUALIFICATION_V1 or statement.lane is None:
        return None
    lane = lanes.lane(statement.lane)
    if lane is None or statement.criteria_version != lane.criteria_version:
        return None
    return lane


class Judge:
    """`judge` for many statements against one set of lanes (requirements computed once per
    lane and recipe criteria)."""

    def __init__(self, lanes: Lanes) -> None:
        self.lanes = lanes
        self._need: dict[tuple[str, Criteria], _Required] = {}

    def __call__(
        self, statement: Statement, criteria: Criteria, pins: Mapping[str, str | None]
    ) -> Judgement | None:
        lane = judgeable(statement, self.lanes)
        if lane is None:
            return None
        need = self._need.get((lane.name, criteria))
        if need is None:
            need = self._need[(lane.name, criteria)] = _required(self.lanes, lane, criteria)
        return _judge(statement, lane, need, pins)


def judge(
    statement: Statement,
    lanes: Lanes,
    criteria: Criteria,
    pins: Mapping[str, str | None],
) -> Judgement | None:
    """The run recomputed (see the module), or None when it cannot be judged (`judgeable`)."""
    return Judge(lanes)(statement, criteria, pins)


def _run_reasons(
    statement: Statement, lane: Lane, pins: Mapping[str, str | None]
) -> list[tuple[Cause, str]]:
    """Why the run itself fails: the lane's size, the preflight, what it observed, its pins."""
    reasons: list[tuple[Cause, str]] = []
    if statement.lane_nodes != lane.nodes:
        reasons.append(
            (
                Cause.LANE_SIZE,
                f"names {statement.lane_nodes} nodes for {lane.name}, which has {lane.nodes}",
            )
        )
    # the run is bound to a passing preflight of the cluster it ran on (generator.scale.qualify):
    # a signed pass without one, or with a failed one, is not the recomputed verdict
    preflight = statement.predicate.get("preflight")
    if not isinstance(preflight, Mapping):
        reasons.append((Cause.NO_PREFLIGHT, "no preflight report is bound to the run"))
    elif preflight.get("exitCode") != 0:
        reasons.append(
            (Cause.NO_PREFLIGHT, f"preflight did not pass (exit {preflight.get('exitCode')})")
        )
    nodes, gpus = statement.observed_nodes or 0, statement.observed_gpus or 0
    if nodes < lane.nodes:
        reasons.append(
            (Cause.COVERAGE_SHORT, f"observed {nodes} nodes, below the lane's {lane.nodes}")
        )
    if gpus < lane.gpus:
        reasons.append(
            (Cause.COVERAGE_SHORT, f"observed {gpus} GPUs, below the lane's {lane.gpus}")
        )
    for name, version in pins.items():
        if version is None:
            continue
        running = statement.component_versions.get(name)
        if running is None:
            reasons.append(
                (Cause.PIN_DIFFERS, f"component {name}: the run does not report its version")
            )
        elif running != version:
            reasons.append(
                (
                    Cause.PIN_DIFFERS,
                    f"component {name}: running {running}, the recipe pins {version}",
                )
            )
    return reasons


def _scenario_reasons(
    statement: Statement, need: _Required
) -> tuple[list[tuple[Cause, str]], dict[tuple[str, str], RowOutcome]]:
    """Why the checks fail (a required scenario not run, not passed or absent, any failure),
    and each reported check's recomputed outcome when it did not pass."""
    reasons: list[tuple[Cause, str]] = []
    rows: dict[tuple[str, str], RowOutcome] = {}
    wanted = set(need.scenarios)
    seen: set[tuple[str, str]] = set()
    for phase, checks in statement.phases.items():
        for c in checks:
            key = (phase, c.name)
            required = key in wanted
            if required:
                seen.add(key)
            if c.status == PASSED and (c.targets or not required):
                continue
            row = _check_row(f"{phase}/{c.name}", c.status, required)
            rows.setdefault(key, row)
            if row.cause:
                reasons.append((Cause(row.cause), row.detail))
    for phase, sid in need.scenarios:
        if (phase, sid) not in seen:
            reasons.append(
                (Cause.NOT_EXECUTED, f"{phase}/{sid}: not executed (absent from the report)")
            )
    return reasons, rows


def _check_row(where: str, status: str, required: bool) -> RowOutcome:
    """The outcome of a check that did not simply pass (a required one passed on 0 targets)."""
    if status in NOT_RUN:
        if not required:  # not required: not executed, not a failure
            return RowOutcome(status, "", "")
        return RowOutcome("failed", Cause.NOT_EXECUTED, f"{where}: not executed ({status})")
    if status == PASSED:
        return RowOutcome("failed", Cause.COVERAGE_SHORT, f"{where}: ran on 0 targets")
    if required:
        return RowOutcome("failed", Cause.CHECK_FAILED, f"{where}: {status}")
    return RowOutcome(
        "failed", Cause.CHECK_FAILED, f"{where}: {status} (not required by the lane, still counted)"
    )


def _kpi_failure(k: Kpi, unit: str, least: int, threshold: Threshold) -> tuple[Cause, str] | None:
    """Why one reported KPI fails the lane, or None."""
    if k.unit != unit:
        return Cause.UNIT_DIFFERS, f"KPI {k.id}: reported in '{k.unit}', the lane uses '{unit}'"
    if (k.targets or 0) < least:
        return (
            Cause.COVERAGE_SHORT,
            f"KPI {k.id}: measured on {k.targets or 0} target(s), the lane needs {least}",
        )
    if not threshold.holds(k.value):
        return (
            Cause.THRESHOLD_MISSED,
            f"KPI {k.id}: {_num(k.value)} {unit} is not {threshold.describe()}",
        )
    return None


def _kpi_outcomes(
    statement: Statement, lane: Lane, need: _Required
) -> tuple[list[tuple[Cause, str]], list[str], dict[str, RowOutcome], frozenset[str]]:
    """(reasons, mismatches, recomputed outcome by KPI id where not passed, the KPI ids the lane
    judges) of the lane's required KPIs."""
    reasons: list[tuple[Cause, str]] = []
    mismatches: list[str] = []
    by_id: dict[str, list[int]] = {}
    for i, k in enumerate(statement.kpis):
        by_id.setdefault(k.id, []).append(i)
    rows: dict[str, RowOutcome] = {}
    for kid, unit, _phase, least, threshold in need.kpis:
        found = by_id.get(kid, [])
        if len(found) != 1:
            why = (
                f"KPI {kid}: not measured"
                if not found
                else f"KPI {kid}: reported {len(found)} times"
            )
            reasons.append((Cause.NOT_MEASURED, why))
            rows[kid] = RowOutcome("failed", Cause.NOT_MEASURED, why)
            continue
        k = statement.kpis[found[0]]
        if (k.operator, k.threshold) != (threshold.operator, threshold.value):
            mismatches.append(
                f"KPI {kid}: signed threshold {k.operator} {_num(k.threshold)} is not the lane's "
                f"{threshold.describe()}"
            )
        failure = _kpi_failure(k, unit, least, threshold)
        status = PASSED
        if failure is not None:
            reasons.append(failure)
            rows[kid] = RowOutcome("failed", *failure)
            status = "failed"
        if k.status != status:
            mismatches.append(f"KPI {kid}: signed {k.status or 'no status'}, recomputed {status}")
    for kid in by_id:
        if kid not in need.kpi_ids:
            mismatches.append(f"KPI {kid}: not among the criteria of {lane.name}")
    return reasons, mismatches, rows, need.kpi_ids


def _judge(
    statement: Statement, lane: Lane, need: _Required, pins: Mapping[str, str | None]
) -> Judgement:
    kpi_reasons, mismatches, kpis, judged = _kpi_outcomes(statement, lane, need)
    check_reasons, checks = _scenario_reasons(statement, need)
    why = [*_run_reasons(statement, lane, pins), *check_reasons, *kpi_reasons]
    reasons = [text for _, text in why]
    verdict = "fail" if reasons else "pass"
    if statement.verdict != verdict:
        said = f": {'; '.join(reasons[:3])}" if reasons else ""
        mismatches.insert(0, f"signed verdict {statement.verdict}, recomputed {verdict}{said}")
    return Judgement(
        verdict,
        tuple(reasons),
        tuple(mismatches),
        causes=tuple(dict.fromkeys(str(cause) for cause, _ in why)) if why else (),
        judged_kpis=judged,
        failed_kpis=kpis,
        failed_checks=checks,
    )
