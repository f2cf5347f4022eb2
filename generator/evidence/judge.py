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
from dataclasses import dataclass

from generator.catalog.lanes import Lane, Lanes, Threshold
from generator.core.records import Criteria
from generator.core.timeutil import TimeError, parse_rfc3339, rfc3339
from generator.evidence.model import SCALE_QUALIFICATION_V1, Kpi, Statement

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


@dataclass(frozen=True, slots=True)
class Judgement:
    """The recomputed outcome of one run and where the signed statement disagrees with it."""

    verdict: str  # pass | fail, recomputed
    reasons: tuple[str, ...]  # why it fails, recomputed
    kpi_status: Mapping[str, str]  # KPI id -> passed | failed, recomputed
    mismatches: tuple[str, ...]  # empty: the signed conclusions are the recomputed ones

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


def _required(lanes: Lanes, lane: Lane, criteria: Criteria) -> _Required:
    return _Required(
        scenarios=tuple((s.phase, s.id) for s in lanes.required_scenarios(lane, criteria)),
        kpis=tuple(
            (k.id, k.unit, k.phase, lane.required_targets(k.min_targets), t)
            for k, t in lanes.required_kpis(lane, criteria)
        ),
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


def _run_reasons(statement: Statement, lane: Lane, pins: Mapping[str, str | None]) -> list[str]:
    """Why the run itself fails: the lane's size, the preflight, what it observed, its pins."""
    reasons: list[str] = []
    if statement.lane_nodes != lane.nodes:
        reasons.append(
            f"names {statement.lane_nodes} nodes for {lane.name}, which has {lane.nodes}"
        )
    # the run is bound to a passing preflight of the cluster it ran on (generator.scale.qualify):
    # a signed pass without one, or with a failed one, is not the recomputed verdict
    preflight = statement.predicate.get("preflight")
    if not isinstance(preflight, Mapping):
        reasons.append("no preflight report is bound to the run")
    elif preflight.get("exitCode") != 0:
        reasons.append(f"preflight did not pass (exit {preflight.get('exitCode')})")
    nodes, gpus = statement.observed_nodes or 0, statement.observed_gpus or 0
    if nodes < lane.nodes:
        reasons.append(f"observed {nodes} nodes, below the lane's {lane.nodes}")
    if gpus < lane.gpus:
        reasons.append(f"observed {gpus} GPUs, below the lane's {lane.gpus}")
    for name, version in pins.items():
        if version is None:
            continue
        running = statement.component_versions.get(name)
        if running is None:
            reasons.append(f"component {name}: the run does not report its version")
        elif running != version:
            reasons.append(f"component {name}: running {running}, the recipe pins {version}")
    return reasons


def _scenario_reasons(statement: Statement, need: _Required) -> list[str]:
    """Why the checks fail: a required scenario not run, not passed or absent, any failure."""
    reasons: list[str] = []
    wanted = set(need.scenarios)
    seen: set[tuple[str, str]] = set()
    for phase, checks in statement.phases.items():
        for c in checks:
            key = (phase, c.name)
            where = f"{phase}/{c.name}"
            if key in wanted:
                seen.add(key)
                if c.status in NOT_RUN:
                    reasons.append(f"{where}: not executed ({c.status})")
                elif c.status != PASSED:
                    reasons.append(f"{where}: {c.status}")
                elif not c.targets:
                    reasons.append(f"{where}: ran on 0 targets")
            elif c.status != PASSED and c.status not in NOT_RUN:
                reasons.append(f"{where}: {c.status} (not required by the lane, still counted)")
    for phase, sid in need.scenarios:
        if (phase, sid) not in seen:
            reasons.append(f"{phase}/{sid}: not executed (absent from the report)")
    return reasons


def _kpi_failure(k: Kpi, unit: str, least: int, threshold: Threshold) -> str | None:
    """Why one reported KPI fails the lane, or None."""
    if k.unit != unit:
        return f"KPI {k.id}: reported in '{k.unit}', the lane uses '{unit}'"
    if (k.targets or 0) < least:
        return f"KPI {k.id}: measured on {k.targets or 0} target(s), the lane needs {least}"
    if not threshold.holds(k.value):
        return f"KPI {k.id}: {_num(k.value)} {unit} is not {threshold.describe()}"
    return None


def _kpi_outcomes(
    statement: Statement, lane: Lane, need: _Required
) -> tuple[list[str], list[str], dict[str, str]]:
    """(reasons, mismatches, recomputed status by KPI id) of the lane's required KPIs."""
    reasons: list[str] = []
    mismatches: list[str] = []
    by_id: dict[str, list[int]] = {}
    for i, k in enumerate(statement.kpis):
        by_id.setdefault(k.id, []).append(i)
    status: dict[str, str] = {}
    judged: set[str] = set()
    for kid, unit, _phase, least, threshold in need.kpis:
        judged.add(kid)
        found = by_id.get(kid, [])
        if len(found) != 1:
            reasons.append(
                f"KPI {kid}: not measured"
                if not found
                else f"KPI {kid}: reported {len(found)} times"
            )
            continue
        k = statement.kpis[found[0]]
        if (k.operator, k.threshold) != (threshold.operator, threshold.value):
            mismatches.append(
                f"KPI {kid}: signed threshold {k.operator} {_num(k.threshold)} is not the lane's "
                f"{threshold.describe()}"
            )
        failure = _kpi_failure(k, unit, least, threshold)
        if failure is not None:
            reasons.append(failure)
        status[kid] = PASSED if failure is None else "failed"
        if k.status != status[kid]:
            mismatches.append(
                f"KPI {kid}: signed {k.status or 'no status'}, recomputed {status[kid]}"
            )
    for kid in by_id:
        if kid not in judged:
            mismatches.append(f"KPI {kid}: not among the criteria of {lane.name}")
    return reasons, mismatches, status


def _judge(
    statement: Statement, lane: Lane, need: _Required, pins: Mapping[str, str | None]
) -> Judgement:
    kpi_reasons, mismatches, status = _kpi_outcomes(statement, lane, need)
    reasons = [
        *_run_reasons(statement, lane, pins),
        *_scenario_reasons(statement, need),
        *kpi_reasons,
    ]
    verdict = "fail" if reasons else "pass"
    if statement.verdict != verdict:
        why = f": {'; '.join(reasons[:3])}" if reasons else ""
        mismatches.insert(0, f"signed verdict {statement.verdict}, recomputed {verdict}{why}")
    return Judgement(verdict, tuple(reasons), status, tuple(mismatches))
