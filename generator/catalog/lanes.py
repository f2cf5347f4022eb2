"""The records of the qualification lanes (`catalog/scale/lanes.yaml`): the ladder, its KPIs,
scenarios and thresholds.

They sit below both stages that read them: `generator.scale.qualify` parses lanes.yaml into them
(`parse_lanes`) and writes statements judged by them; `generator.evidence.judge` recomputes a
signed run's verdict against them. Neither stage imports the other for these types.
"""

from __future__ import annotations

import operator as op
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum

from generator.core.records import Criteria

OPERATORS: Mapping[str, Callable[[float, float], bool]] = {
    ">=": op.ge,
    "<=": op.le,
    ">": op.gt,
    "<": op.lt,
    "==": op.eq,
    "!=": op.ne,
}


# ---------------------------------------------------------------- lane records


class Verdict(StrEnum):
    """A scale run's verdict: pass only when every requirement of its lane is met (fail closed)."""

    PASS = "pass"
    FAIL = "fail"


@dataclass(frozen=True, slots=True)
class Threshold:
    operator: str
    value: float  # as lanes.yaml writes it (an int stays one: the site shows it so)
    status: str  # proposed | adopted | calibrated
    source: str | None = None

    def holds(self, value: float) -> bool:
        return OPERATORS[self.operator](value, self.value)

    def describe(self) -> str:
        return f"{self.operator} {_num(self.value)}"


@dataclass(frozen=True, slots=True)
class Scenario:
    id: str
    phase: str
    title: str
    description: str
    applies_to: Criteria | None = None  # None: every recipe


@dataclass(frozen=True, slots=True)
class KpiSpec:
    id: str
    title: str
    unit: str
    phase: str
    measure: str  # value | ratio
    min_targets: str  # nodes | racks | any
    description: str
    applies_to: Criteria | None = None


@dataclass(frozen=True, slots=True)
class Lane:
    name: str
    nodes: int
    racks: int
    gpus: int
    criteria_version: str
    phases: tuple[str, ...]
    scenarios: tuple[str, ...]
    thresholds: tuple[tuple[str, Threshold], ...]  # (kpi id, threshold), in lanes.yaml order

    def threshold(self, kpi: str) -> Threshold | None:
        for k, t in self.thresholds:
            if k == kpi:
                return t
        return None

    def required_targets(self, min_targets: str) -> int:
        return {"nodes": self.nodes, "racks": self.racks}.get(min_targets, 1)


@dataclass(frozen=True, slots=True)
class Lanes:
    name: str
    gpus_per_node: int
    nodes_per_rack: int
    observe_nodes: str  # snapshot measurement key {Type}.{Subtype}.{Key}: ready GPU nodes
    observe_gpus_per_node: str  # smallest GPU capacity per node
    phases: tuple[str, ...]
    scenarios: tuple[Scenario, ...]
    kpis: tuple[KpiSpec, ...]
    lanes: tuple[Lane, ...]  # ascending node count

    def lane(self, name: str) -> Lane | None:
        for lane in self.lanes:
            if lane.name == name:
                return lane
        return None

    def scenario(self, sid: str) -> Scenario | None:
        for s in self.scenarios:
            if s.id == sid:
                return s
        return None

    def kpi(self, kid: str) -> KpiSpec | None:
        for k in self.kpis:
            if k.id == kid:
                return k
        return None

    def required_scenarios(self, lane: Lane, criteria: Criteria) -> tuple[Scenario, ...]:
        """The lane's scenarios that apply to a recipe with these criteria, in lanes.yaml order."""
        wanted = set(lane.scenarios)
        return tuple(
            s
            for s in self.scenarios
            if s.id in wanted and s.phase in lane.phases and applies(s.applies_to, criteria)
        )

    def required_kpis(
        self, lane: Lane, criteria: Criteria
    ) -> tuple[tuple[KpiSpec, Threshold], ...]:
        out = []
        for k in self.kpis:
            t = lane.threshold(k.id)
            if t is not None and k.phase in lane.phases and applies(k.applies_to, criteria):
                out.append((k, t))
        return tuple(out)


def applies(pattern: Criteria | None, criteria: Criteria) -> bool:
    """A dimension the pattern names must equal the recipe's (a recipe wildcard does not match)."""
    if pattern is None:
        return True
    return all(v is None or criteria.get(d) == v for d, v in pattern.items())


def _num(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:g}"
