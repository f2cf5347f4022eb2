"""Qualify: a scale run's raw results, judged against one lane of the ladder → an unsigned statement.

Two parts, both pure (no file is read or written here):

- `parse_lanes(doc)` turns `catalog/scale/lanes.yaml` into frozen `Lanes` records, after its
  schema and the cross-references the schema cannot express (scenario and KPI ids, racks and GPUs
  consistent with the topology, ascending node counts).
- `parse_run(files)` reads a run's raw results — given as `{file name: bytes}` by the caller —
  and `qualify(lanes, lane, recipe, run, ...)` evaluates them and builds the
  `https://aicr.run/scale-qualification/v1` predicate and its in-toto statement.

A run's raw results directory holds:

    run.yaml               componentVersions (as running), optional finishedAt, sample, and
                           optionally bundleDigest (then it must be the bundle qualify is given)
    deployment.ctrf.json   one CTRF report per phase; each test is one scenario, named by its id,
    conformance.ctrf.json  with `extra.targets` = how many nodes/objects it ran on
    performance.ctrf.json
    kpis.json              {"kpis": [{id, value | numerator+denominator, unit, targets}]}
    snapshot.yaml          the AICR Snapshot of the cluster the run saw (`aicr-catalog snapshot`)
    preflight.json         `aicr-catalog preflight --format json` on that snapshot.yaml

Besides the results, `qualify` takes the bundle that was deployed (its archive, or its digest):
the statement records the digests of the preflight report and of the bundle, and a run whose
preflight did not pass (exit 0) on its own snapshot, for the same recipe digest and profile
version, cannot pass.

Fail closed: the verdict is `pass` only when every required scenario of every required phase was
executed on at least one target and passed, every applicable KPI was measured on enough targets
and is within its threshold (proposed thresholds gate too), the observed node and GPU counts reach
the lane's, and the running component versions are the recipe's pins. Every other outcome is
`fail`, with one reason per problem.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from generator import __version__
from generator.catalog import schemas
from generator.catalog.lanes import KpiSpec, Lane, Lanes, Scenario, Threshold, Verdict
from generator.core import safeio, timeutil
from generator.core.errors import (
    CatalogError,
    Diagnostic,
    LoadError,
    UsageError,
    ValidationError,
    sort_diagnostics,
)
from generator.core.records import DIMENSIONS, Criteria, Document, RecipeResult, ScaleProfile
from generator.core.yamlio import parse_yaml
from generator.evidence.statement import build_statement

LANES_FILE = "scale/lanes.yaml"
LANES_SCHEMA = "lanes"
PREDICATE_SCHEMA = "scale-qualification-v1"
GENERATOR_NAME = "aicr-catalog"

_RFC3339 = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})"
)

CTRF_STATUSES: tuple[str, ...] = ("passed", "failed", "skipped", "pending", "other")


def _applies_to(raw: Any) -> Criteria | None:
    if not raw:
        return None
    return Criteria(**{d: raw.get(d) for d in DIMENSIONS})


def _num(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:g}"


def parse_lanes(doc: Document) -> Lanes:
    """`catalog/scale/lanes.yaml` as records; raises ValidationError with every problem located.

    The one parser of lanes.yaml (`validate`, `status`, `qualify` and the site all use it): its
    schema first, then the records, then the cross-references the schema cannot express.
    """
    diags = list(schemas.check(doc, LANES_SCHEMA))
    if diags:
        raise ValidationError(f"{doc.rel}: invalid qualification lanes", diags)
    spec = doc.data["spec"]
    scenarios = tuple(_scenario(s) for s in spec["scenarios"])
    kpis = tuple(_kpi_spec(k) for k in spec["kpis"])
    lanes = tuple(_lane(raw) for raw in spec["lanes"])
    topo = spec["topology"]
    parsed = Lanes(
        name=doc.data["metadata"]["name"],
        gpus_per_node=int(topo["gpusPerNode"]),
        nodes_per_rack=int(topo["nodesPerRack"]),
        observe_nodes=spec["observation"]["nodes"],
        observe_gpus_per_node=spec["observation"]["gpusPerNode"],
        phases=tuple(spec["phases"]),
        scenarios=scenarios,
        kpis=kpis,
        lanes=lanes,
    )
    problems = _id_problems(parsed)
    for i, (lane, order) in enumerate(zip(lanes, _ladder_problems(parsed), strict=True)):
        problems += order + _lane_problems(parsed, lane, f"$.spec.lanes[{i}]")
    if problems:
        for path, message, rule in problems:
            line, col = doc.locate(path)
            diags.append(Diagnostic(doc.rel, line, col, path, message, rule))
        raise ValidationError(f"{doc.rel}: invalid qualification lanes", diags)
    return parsed


_Problem = tuple[str, str, str]  # (JSON path, message, rule)


def _scenario(s: Mapping[str, Any]) -> Scenario:
    return Scenario(
        id=s["id"],
        phase=s["phase"],
        title=s["title"],
        description=s["description"],
        applies_to=_applies_to(s.get("appliesTo")),
    )


def _kpi_spec(k: Mapping[str, Any]) -> KpiSpec:
    return KpiSpec(
        id=k["id"],
        title=k["title"],
        unit=k["unit"],
        phase=k["phase"],
        measure=k["measure"],
        min_targets=k["minTargets"],
        description=k["description"],
        applies_to=_applies_to(k.get("appliesTo")),
    )


def _lane(raw: Mapping[str, Any]) -> Lane:
    return Lane(
        name=raw["name"],
        nodes=int(raw["nodes"]),
        racks=int(raw["racks"]),
        gpus=int(raw["gpus"]),
        criteria_version=raw["criteriaVersion"],
        phases=tuple(raw["phases"]),
        scenarios=tuple(raw["scenarios"]),
        thresholds=tuple(
            (
                kid,
                Threshold(
                    operator=t["operator"],
                    value=t["value"],
                    status=t["status"],
                    source=t.get("source"),
                ),
            )
            for kid, t in raw["thresholds"].items()
        ),
    )


def _id_problems(lanes: Lanes) -> list[_Problem]:
    """Scenario and KPI ids are unique, and each names one of `spec.phases`."""
    out: list[_Problem] = []
    ids_and_phases: tuple[tuple[str, list[tuple[str, str]]], ...] = (
        ("scenarios", [(s.id, s.phase) for s in lanes.scenarios]),
        ("kpis", [(k.id, k.phase) for k in lanes.kpis]),
    )
    for kind, items in ids_and_phases:
        seen: set[str] = set()
        for i, (item_id, phase) in enumerate(items):
            if item_id in seen:
                out.append((f"$.spec.{kind}[{i}].id", f"duplicate id '{item_id}'",
                            "lanes.duplicate"))  # fmt: skip
            seen.add(item_id)
            if phase not in lanes.phases:
                out.append((f"$.spec.{kind}[{i}].phase",
                            f"phase '{phase}' is not one of spec.phases", "lanes.phase"))  # fmt: skip
    return out


def _ladder_problems(lanes: Lanes) -> list[list[_Problem]]:
    """Per lane: its name is unique and its node count above the previous lane's."""
    out: list[list[_Problem]] = []
    names: set[str] = set()
    previous = 0
    for i, lane in enumerate(lanes.lanes):
        at, here = f"$.spec.lanes[{i}]", []
        if lane.name in names:
            here.append((f"{at}.name", f"duplicate lane '{lane.name}'", "lanes.duplicate"))
        names.add(lane.name)
        if lane.nodes <= previous:
            here.append((f"{at}.nodes", f"lanes must ascend: {lane.nodes} nodes after {previous}",
                         "lanes.order"))  # fmt: skip
        previous = lane.nodes
        out.append(here)
    return out


def _lane_problems(lanes: Lanes, lane: Lane, at: str) -> list[_Problem]:
    """One lane against the topology (racks, GPUs) and the scenarios and KPIs it names."""
    out: list[_Problem] = []
    npr, gpn = lanes.nodes_per_rack, lanes.gpus_per_node
    if lane.nodes % npr or lane.racks != lane.nodes // npr:
        out.append((f"{at}.racks", f"{lane.nodes} nodes at {npr} nodes per rack is "
                    f"{lane.nodes / npr:g} racks, not {lane.racks}", "lanes.racks"))  # fmt: skip
    if lane.gpus != lane.nodes * gpn:
        out.append((f"{at}.gpus", f"{lane.nodes} nodes at {gpn} GPUs per node is "
                    f"{lane.nodes * gpn} GPUs, not {lane.gpus}", "lanes.gpus"))  # fmt: skip
    scenario_ids = {s.id for s in lanes.scenarios}
    kpi_ids = {k.id for k in lanes.kpis}
    for j, sid in enumerate(lane.scenarios):
        if sid not in scenario_ids:
            out.append((f"{at}.scenarios[{j}]", f"unknown scenario '{sid}'", "lanes.reference"))
    for kid, _ in lane.thresholds:
        if kid not in kpi_ids:
            out.append((f"{at}.thresholds.{kid}", f"unknown KPI '{kid}'", "lanes.reference"))
    for k in lanes.kpis:
        if k.phase in lane.phases and lane.threshold(k.id) is None:
            out.append((f"{at}.thresholds", f"KPI '{k.id}' has no threshold", "lanes.threshold"))
    return out


# ---------------------------------------------------------------- raw run results


@dataclass(frozen=True, slots=True)
class RawCheck:
    name: str
    status: str  # as reported; anything outside CTRF's statuses counts as failed
    targets: int | None  # None: the report did not say
    message: str = ""


@dataclass(frozen=True, slots=True)
class RawKpi:
    id: str
    value: float | None
    numerator: float | None
    denominator: float | None
    unit: str | None
    targets: int | None


@dataclass(frozen=True, slots=True)
class RunResults:
    """One run's raw results, parsed. A phase whose report is absent is missing from `phases`."""

    phases: Mapping[str, tuple[RawCheck, ...]]
    kpis: tuple[RawKpi, ...]
    measurements: Mapping[str, Any]  # snapshot "{Type}.{Subtype}.{Key}" -> value
    bundle_digest: str | None  # as run.yaml states it (optional)
    component_versions: Mapping[str, str]
    finished_at: str | None = None
    sample: bool = False
    snapshot_digest: str | None = None  # sha256 of snapshot.yaml
    preflight: PreflightBinding | None = None  # preflight.json


@dataclass(frozen=True, slots=True)
class PreflightBinding:
    """What a qualification needs of a preflight report: its digest and what it was run on."""

    digest: str  # sha256 of the report file
    recipe: str
    recipe_digest: str
    profile: str
    profile_version: str
    exit_code: int
    snapshot_digest: str | None


@dataclass(frozen=True, slots=True)
class BundleBinding:
    """The deployed bundle: its digest, and (from an archive) the recipe it was rendered from."""

    digest: str
    recipe_digest: str | None = None
    profile: str | None = None
    profile_version: str | None = None


_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


def parse_preflight(raw: bytes, rel: str = "preflight.json") -> PreflightBinding:
    """A `preflight --format json` report; raises LoadError when it is not one."""
    doc = _json(raw, rel)
    problems = sorted(f"{e.json_path}: {e.message}"
                      for e in schemas.validator("preflight-report").iter_errors(doc))  # fmt: skip
    if problems:
        raise _fail(rel, "not an aicr-catalog preflight --format json report: " + problems[0],
                    "results.preflight")  # fmt: skip
    return PreflightBinding(
        digest="sha256:" + hashlib.sha256(raw).hexdigest(),
        recipe=doc["recipe"]["name"],
        recipe_digest=doc["recipe"]["digest"],
        profile=doc["scaleProfile"]["name"],
        profile_version=doc["scaleProfile"]["version"],
        exit_code=int(doc["summary"]["exitCode"]),
        snapshot_digest=doc.get("snapshotDigest"),
    )


def bundle_binding(given: str, read: Callable[[str], bytes]) -> BundleBinding:
    """`--bundle`: a digest (`sha256:<hex>`) or the path of the bundle archive, whose
    bundle-info.yaml names the recipe digest and profile it was rendered from."""
    if given.startswith("sha256:"):
        if not _DIGEST.fullmatch(given):
            raise UsageError(f"--bundle {given!r} is not sha256:<64 hex>")
        return BundleBinding(digest=given)
    raw = read(given)
    digest = "sha256:" + hashlib.sha256(raw).hexdigest()
    try:
        members = safeio.tar_files(raw, what=f"--bundle {given}")
    except safeio.Refusal as e:
        raise UsageError(f"--bundle {given}: not a bundle archive: {e.message}") from e
    data = next(
        (members[name] for name in sorted(members)
         if name.split("/")[-1] == "bundle-info.yaml" and name.count("/") <= 1),
        None,
    )  # fmt: skip
    if data is None:
        raise UsageError(f"--bundle {given}: the archive has no bundle-info.yaml")
    info = parse_yaml(data, "bundle-info.yaml").data
    if not isinstance(info, dict):
        raise UsageError(f"--bundle {given}: bundle-info.yaml is not a mapping")
    recipe = info.get("recipe") or {}
    profile = info.get("scaleProfile") or {}
    return BundleBinding(
        digest=digest,
        recipe_digest=str(recipe.get("digest")) if recipe.get("digest") else None,
        profile=str(profile.get("name")) if profile.get("name") else None,
        profile_version=str(profile.get("version")) if profile.get("version") else None,
    )


RUN_FILE = "run.yaml"
KPI_FILE = "kpis.json"
SNAPSHOT_FILE = "snapshot.yaml"
CTRF_SUFFIX = ".ctrf.json"
PREFLIGHT_FILE = "preflight.json"


def _fail(rel: str, message: str, rule: str, json_path: str = "$") -> LoadError:
    return LoadError(f"{rel}: {message}", [Diagnostic(rel, 0, 0, json_path, message, rule)])


def _json(raw: bytes, rel: str) -> Any:
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise _fail(rel, f"not valid JSON: {e}", "results.json") from e


def _int_or_none(v: Any) -> int | None:
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        return None
    return int(v)


def _float_or_none(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
        return None
    return float(v)


def parse_ctrf(raw: bytes, rel: str) -> tuple[RawCheck, ...]:
    """The tests of a CTRF report; each test's `extra.targets` is the number of targets it ran on."""
    doc = _json(raw, rel)
    results = doc.get("results") if isinstance(doc, dict) else None
    tests = results.get("tests") if isinstance(results, dict) else None
    if not isinstance(tests, list):
        raise _fail(rel, "not a CTRF report: results.tests is missing", "results.ctrf")
    out = []
    for i, t in enumerate(tests):
        if not isinstance(t, dict) or not isinstance(t.get("name"), str):
            raise _fail(rel, f"test {i} has no name", "results.ctrf", f"$.results.tests[{i}]")
        extra: dict[str, Any] = t["extra"] if isinstance(t.get("extra"), dict) else {}
        out.append(
            RawCheck(
                name=t["name"],
                status=str(t.get("status", "")),
                targets=_int_or_none(extra.get("targets")),
                message=str(t.get("message", "")),
            )
        )
    return tuple(out)


def flatten_snapshot(data: Any) -> dict[str, Any]:
    """An AICR Snapshot's measurements as `{Type}.{Subtype}.{Key}` -> value."""
    out: dict[str, Any] = {}
    if not isinstance(data, dict):
        return out
    for m in data.get("measurements") or ():
        if not isinstance(m, dict):
            continue
        for sub in m.get("subtypes") or ():
            if not isinstance(sub, dict) or not isinstance(sub.get("data"), dict):
                continue
            for key, value in sub["data"].items():
                out[f"{m.get('type')}.{sub.get('subtype')}.{key}"] = value
    return out


def parse_run(files: Mapping[str, bytes], phases: Sequence[str]) -> RunResults:
    """A run's raw results from its files (name -> bytes); raises LoadError when unreadable."""
    if RUN_FILE not in files:
        raise _fail(RUN_FILE, "the results have no run.yaml", "results.missing")
    run = parse_yaml(files[RUN_FILE], RUN_FILE).data
    if not isinstance(run, dict):
        raise _fail(RUN_FILE, "run.yaml is not a mapping", "results.run")
    digest = run.get("bundleDigest")
    if digest is not None and not _DIGEST.fullmatch(str(digest)):
        raise _fail(
            RUN_FILE, "bundleDigest must be sha256:<64 hex>", "results.run", "$.bundleDigest"
        )
    versions = run.get("componentVersions") or {}
    if not isinstance(versions, dict):
        raise _fail(RUN_FILE, "componentVersions must be a mapping", "results.run")
    checks = {
        phase: parse_ctrf(files[phase + CTRF_SUFFIX], phase + CTRF_SUFFIX)
        for phase in phases
        if phase + CTRF_SUFFIX in files
    }
    kpis: list[RawKpi] = []
    if KPI_FILE in files:
        raw_kpis = _json(files[KPI_FILE], KPI_FILE)
        items = raw_kpis.get("kpis") if isinstance(raw_kpis, dict) else None
        if not isinstance(items, list):
            raise _fail(KPI_FILE, "kpis.json must hold a list `kpis`", "results.kpis")
        for i, k in enumerate(items):
            if not isinstance(k, dict) or not isinstance(k.get("id"), str):
                raise _fail(KPI_FILE, f"KPI {i} has no id", "results.kpis", f"$.kpis[{i}]")
            kpis.append(
                RawKpi(
                    id=k["id"],
                    value=_float_or_none(k.get("value")),
                    numerator=_float_or_none(k.get("numerator")),
                    denominator=_float_or_none(k.get("denominator")),
                    unit=k.get("unit") if isinstance(k.get("unit"), str) else None,
                    targets=_int_or_none(k.get("targets")),
                )
            )
    measurements: dict[str, Any] = {}
    snapshot_digest = None
    if SNAPSHOT_FILE in files:
        measurements = flatten_snapshot(parse_yaml(files[SNAPSHOT_FILE], SNAPSHOT_FILE).data)
        snapshot_digest = "sha256:" + hashlib.sha256(files[SNAPSHOT_FILE]).hexdigest()
    preflight = parse_preflight(files[PREFLIGHT_FILE]) if PREFLIGHT_FILE in files else None
    finished = run.get("finishedAt")
    return RunResults(
        phases=checks,
        kpis=tuple(kpis),
        measurements=measurements,
        bundle_digest=str(digest) if digest is not None else None,
        component_versions={str(k): str(v) for k, v in sorted(versions.items())},
        finished_at=str(finished) if finished is not None else None,
        sample=run.get("sample") is True,
        snapshot_digest=snapshot_digest,
        preflight=preflight,
    )


# ---------------------------------------------------------------- evaluation


@dataclass(frozen=True, slots=True)
class Qualification:
    """The outcome of `qualify`: the predicate, its unsigned statement, and the verdict."""

    predicate: Mapping[str, Any]
    statement: bytes
    verdict: Verdict
    reasons: tuple[str, ...]


def _observed(run: RunResults, key: str) -> int | None:
    return _int_or_none(run.measurements.get(key))


def _check_reasons(lanes: Lanes, lane: Lane, criteria: Criteria, run: RunResults) -> list[str]:
    reasons: list[str] = []
    for phase in lane.phases:
        if phase not in run.phases:
            reasons.append(f"phase {phase}: no results ({phase}{CTRF_SUFFIX} is missing)")
    required = lanes.required_scenarios(lane, criteria)
    for s in required:
        reported = [c for c in run.phases.get(s.phase, ()) if c.name == s.id]
        if s.phase in run.phases and not reported:
            reasons.append(f"{s.phase}/{s.id}: not executed (absent from the report)")
        for c in reported:
            where = f"{s.phase}/{s.id}"
            if c.status in ("skipped", "pending"):
                reasons.append(f"{where}: not executed ({c.status})")
            elif c.status == "failed":
                tail = f": {c.message}" if c.message else ""
                reasons.append(f"{where}: failed{tail}")
            elif c.status != "passed":
                reasons.append(f"{where}: status '{c.status}' counts as a failure")
            elif not c.targets:
                reasons.append(f"{where}: ran on 0 targets")
    wanted = {(s.phase, s.id) for s in required}
    for phase, checks in sorted(run.phases.items()):
        for c in checks:  # a failure anywhere in the run fails it, required or not
            if (phase, c.name) not in wanted and c.status not in ("passed", "skipped", "pending"):
                reasons.append(
                    f"{phase}/{c.name}: {c.status} (not required by the lane, still counted)"
                )
    return reasons


def _kpi_results(
    lanes: Lanes, lane: Lane, criteria: Criteria, run: RunResults
) -> tuple[list[dict[str, Any]], list[str]]:
    by_id: dict[str, list[RawKpi]] = {}
    for k in run.kpis:
        by_id.setdefault(k.id, []).append(k)
    out: list[dict[str, Any]] = []
    reasons: list[str] = []
    for spec, threshold in lanes.required_kpis(lane, criteria):
        measured = by_id.get(spec.id, [])
        if len(measured) != 1:
            reasons.append(
                f"KPI {spec.id}: not measured"
                if not measured
                else f"KPI {spec.id}: reported {len(measured)} times"
            )
            continue
        raw = measured[0]
        measured_value, why = _kpi_value(spec, raw)
        if measured_value is None:
            reasons.append(why)
            continue
        value = round(measured_value, 6)
        ok = threshold.holds(value)
        need = lane.required_targets(spec.min_targets)
        if (raw.targets or 0) < need:
            ok = False
            reasons.append(
                f"KPI {spec.id}: measured on {raw.targets or 0} target(s), "
                f"the lane needs {need} ({spec.min_targets})"
            )
        elif not ok:
            reasons.append(
                f"KPI {spec.id}: {_num(value)} {spec.unit} is not {threshold.describe()}"
                + (" (proposed threshold)" if threshold.status == "proposed" else "")
            )
        out.append(
            {
                "id": spec.id,
                "value": value,
                "unit": spec.unit,
                "threshold": {"operator": threshold.operator, "value": float(threshold.value)},
                "status": "passed" if ok else "failed",
                # signed, so the catalog can recompute minTargets (generator/evidence/judge.py)
                **({"targets": max(0, min(raw.targets, 10**6))} if raw.targets is not None else {}),
            }
        )
    return out, reasons


def _kpi_value(spec: KpiSpec, raw: RawKpi) -> tuple[float | None, str]:
    """(the KPI's value as reported, "") or (None, why it has none the lane can judge)."""
    if raw.unit is not None and raw.unit != spec.unit:
        return None, f"KPI {spec.id}: reported in '{raw.unit}', the lane uses '{spec.unit}'"
    if spec.measure != "ratio":
        return (raw.value, "") if raw.value is not None else (None, f"KPI {spec.id}: no value")
    if raw.numerator is None or raw.denominator is None:
        return None, f"KPI {spec.id}: a ratio needs numerator and denominator"
    if raw.denominator == 0:
        return None, f"KPI {spec.id}: {_num(raw.numerator)}/0 — nothing was measured, cannot pass"
    return raw.numerator / raw.denominator, ""


def _phase_json(run: RunResults, phase: str) -> dict[str, Any]:
    checks = []
    for c in run.phases.get(phase, ()):
        status = c.status if c.status in CTRF_STATUSES else "other"
        item: dict[str, Any] = {"name": c.name, "status": status, "targets": c.targets or 0}
        if c.message:
            item["message"] = c.message
        elif status != c.status:
            item["message"] = f"reported status '{c.status}'"
        checks.append(item)
    return {"checks": checks}


def qualify(
    lanes: Lanes,
    lane_name: str,
    recipe: RecipeResult,
    ladder: Sequence[str],
    run: RunResults,
    *,
    bundle: BundleBinding,
    attested_at: str,
    sample: bool = False,
) -> Qualification:
    """Judge `run` against `lane_name` for `recipe` (resolved with its profile, whose ladder is given).

    Raises UsageError when the lane is unknown or not on the profile's ladder.
    """
    lane = lanes.lane(lane_name)
    if lane is None:
        known = ", ".join(x.name for x in lanes.lanes)
        raise UsageError(f"unknown lane '{lane_name}'; lanes: {known}")
    if lane_name not in ladder:
        raise UsageError(
            f"lane '{lane_name}' is not on the ladder of scale profile '{recipe.scale_profile}' "
            f"({', '.join(ladder) or 'empty'})"
        )
    nodes, gpus, reasons = _size_reasons(lanes, lane, run)
    reasons.extend(_pin_reasons(recipe, run))
    reasons.extend(_binding_reasons(recipe, run, bundle))
    reasons.extend(_check_reasons(lanes, lane, recipe.criteria, run))
    kpis, kpi_reasons = _kpi_results(lanes, lane, recipe.criteria, run)
    reasons.extend(kpi_reasons)
    verdict = Verdict.FAIL if reasons else Verdict.PASS
    predicate = _predicate(
        recipe, lane, run, bundle, (nodes, gpus), kpis, verdict, reasons, attested_at, sample
    )
    return Qualification(
        predicate=predicate,
        statement=build_statement(predicate),
        verdict=verdict,
        reasons=tuple(reasons),
    )


def _size_reasons(
    lanes: Lanes, lane: Lane, run: RunResults
) -> tuple[int | None, int | None, list[str]]:
    """(observed nodes, observed GPUs, why the cluster the run saw is not the lane's size)."""
    reasons: list[str] = []
    nodes = _observed(run, lanes.observe_nodes)
    per_node = _observed(run, lanes.observe_gpus_per_node)
    gpus = nodes * per_node if nodes is not None and per_node is not None else None
    if nodes is None:
        reasons.append(f"snapshot has no node count ({lanes.observe_nodes})")
    elif nodes < lane.nodes:
        reasons.append(f"observed {nodes} nodes, below the lane's {lane.nodes}")
    if per_node is None:
        reasons.append(f"snapshot has no GPUs per node ({lanes.observe_gpus_per_node})")
    elif gpus is not None and gpus < lane.gpus:
        reasons.append(f"observed {gpus} GPUs, below the lane's {lane.gpus}")
    return nodes, gpus, reasons


def _pin_reasons(recipe: RecipeResult, run: RunResults) -> list[str]:
    """The running component versions that are not the recipe's pins."""
    reasons: list[str] = []
    for comp in recipe.components:
        running = run.component_versions.get(comp.name)
        if comp.version is None:
            continue
        if running is None:
            reasons.append(f"component {comp.name}: the run does not report its version")
        elif running != comp.version:
            reasons.append(
                f"component {comp.name}: running {running}, the recipe pins {comp.version}"
            )
    return reasons


def _predicate(
    recipe: RecipeResult,
    lane: Lane,
    run: RunResults,
    bundle: BundleBinding,
    observed: tuple[int | None, int | None],
    kpis: list[dict[str, Any]],
    verdict: Verdict,
    reasons: list[str],
    attested_at: str,
    sample: bool,
) -> dict[str, Any]:
    """The scale-qualification/v1 predicate, checked against its schema."""
    nodes, gpus = observed
    predicate: dict[str, Any] = {
        "recipe": {"name": recipe.name, "digest": recipe.digest},
        "scaleProfile": {"name": recipe.scale_profile, "version": recipe.scale_profile_version},
        "lane": {"name": lane.name, "nodes": lane.nodes, "criteriaVersion": lane.criteria_version},
        "observed": {"nodes": nodes or 0, "gpus": gpus or 0},
        "bundleDigest": bundle.digest,
        "preflight": (
            {
                "digest": run.preflight.digest,
                "exitCode": run.preflight.exit_code,
                "snapshotDigest": run.preflight.snapshot_digest,
            }
            if run.preflight is not None
            else None
        ),
        "componentVersions": dict(run.component_versions),
        "phases": {p: _phase_json(run, p) for p in ("deployment", "conformance", "performance")},
        "kpis": kpis,
        "verdict": str(verdict),
        "reasons": reasons,
        "attestedAt": attested_at,
        "sample": sample or run.sample,
        "generator": {"name": GENERATOR_NAME, "version": __version__},
    }
    problems = schemas.validator(PREDICATE_SCHEMA).iter_errors(predicate)
    bad = sorted(f"{e.json_path}: {e.message}" for e in problems)
    if bad:  # a bug here, not bad input: the inputs were all parsed above
        raise AssertionError("qualify built an invalid predicate: " + "; ".join(bad))
    return predicate


def _binding_reasons(recipe: RecipeResult, run: RunResults, bundle: BundleBinding) -> list[str]:
    """What ties the run to what was tested: a passing preflight of the same recipe digest and
    profile version on the run's own snapshot, and the bundle rendered from that recipe."""
    out: list[str] = []
    pf = run.preflight
    if pf is None:
        out.append(f"no preflight report ({PREFLIGHT_FILE}): run `aicr-catalog preflight "
                   "--format json` on the run's snapshot.yaml")  # fmt: skip
    else:
        if pf.recipe_digest != recipe.digest:
            out.append(f"the preflight report is for recipe digest {pf.recipe_digest}, "
                       f"not {recipe.digest}")  # fmt: skip
        if (pf.profile, pf.profile_version) != (recipe.scale_profile, recipe.scale_profile_version):
            out.append(f"the preflight report is for scale profile {pf.profile} "
                       f"{pf.profile_version}, not {recipe.scale_profile} "
                       f"{recipe.scale_profile_version}")  # fmt: skip
        if pf.exit_code != 0:
            out.append(f"preflight did not pass (exit {pf.exit_code})")
        if run.snapshot_digest is None or pf.snapshot_digest != run.snapshot_digest:
            out.append("the preflight report was not run on the run's snapshot.yaml "
                       f"({pf.snapshot_digest or 'no snapshot digest'} vs "
                       f"{run.snapshot_digest or 'no snapshot.yaml'})")  # fmt: skip
    if run.bundle_digest is not None and run.bundle_digest != bundle.digest:
        out.append(f"run.yaml says bundle {run.bundle_digest}, qualify was given {bundle.digest}")
    if bundle.recipe_digest is not None and bundle.recipe_digest != recipe.digest:
        out.append(f"the bundle was rendered from recipe digest {bundle.recipe_digest}, "
                   f"not {recipe.digest}")  # fmt: skip
    if bundle.profile is not None and (bundle.profile, bundle.profile_version) != (
        recipe.scale_profile,
        recipe.scale_profile_version,
    ):
        out.append(f"the bundle was rendered with scale profile {bundle.profile} "
                   f"{bundle.profile_version}")  # fmt: skip
    return out


def attested_at_from(epoch: str | None, run: RunResults, given: str | None) -> str:
    """attestedAt: --attested-at, else the run's finishedAt (so that "latest run per signer" means
    the run that finished last), else SOURCE_DATE_EPOCH; never the wall clock."""
    if given is None:
        given = run.finished_at
    if given is None and epoch:
        return timeutil.rfc3339(timeutil.parse_epoch(epoch, error=UsageError))
    if given is None:
        raise UsageError(
            "no attestation date: pass --attested-at, give finishedAt in run.yaml, "
            "or set SOURCE_DATE_EPOCH"
        )
    if not _RFC3339.fullmatch(given):
        raise UsageError(f"attestation date {given!r} is not RFC 3339 (2026-12-02T11:00:00Z)")
    try:
        timeutil.parse_rfc3339(given)
    except timeutil.TimeError as e:
        raise UsageError(f"attestation date: {e}") from None
    return given


def lanes_of(documents: Mapping[str, Document]) -> Lanes:
    """The catalog's lanes (`catalog.documents`); a catalog without lanes.yaml is a ValidationError."""
    doc = documents.get(LANES_FILE)
    if doc is None:
        raise ValidationError(
            f"{LANES_FILE}: the catalog has no qualification lanes",
            [Diagnostic(LANES_FILE, 0, 0, "$", "file is missing", "lanes.missing")],
        )
    return parse_lanes(doc)


def check_lanes(
    documents: Mapping[str, Document], profiles: Mapping[str, ScaleProfile]
) -> tuple[Diagnostic, ...]:
    """Every problem of lanes.yaml and of the profiles' ladders, located (for `validate`).

    lanes.yaml: its schema and cross-references (see `parse_lanes`). Each profile's
    `spec.ladder` agrees with its band `spec.nodes`: every lane exists, in ascending order, each
    within the band (a lane below it would qualify a size the profile is not meant for, one above
    it a size it does not cover), and the top lane reaches the band's maximum (the band claims no
    size its ladder cannot qualify).
    """
    try:
        lanes = lanes_of(documents)
    except CatalogError as e:
        return e.diagnostics
    out: list[Diagnostic] = []
    for profile in profiles.values():
        out += _ladder_diagnostics(profile, lanes)
    return sort_diagnostics(out)


def _ladder_diagnostics(profile: ScaleProfile, lanes: Lanes) -> list[Diagnostic]:
    """One profile's `spec.ladder` against the lanes and its band (see `check_lanes`)."""
    doc = profile.doc
    rel = doc.rel if doc is not None else f"scale/profiles/{profile.name}.yaml"

    def at(path: str, message: str, rule: str) -> Diagnostic:
        line, col = doc.locate(path) if doc is not None else (0, 0)
        return Diagnostic(rel, line, col, path, message, rule)

    out: list[Diagnostic] = []
    order = {ln.name: i for i, ln in enumerate(lanes.lanes)}
    previous = -1
    band = f"({profile.nodes_min}–{profile.nodes_max})"
    for i, name in enumerate(profile.ladder):
        path = f"$.spec.ladder[{i}]"
        lane = lanes.lane(name)
        if lane is None:
            known = ", ".join(ln.name for ln in lanes.lanes)
            out.append(at(path, f"unknown lane '{name}'; lanes: {known}", "ladder.unknown-lane"))
            continue
        if order[name] <= previous:
            out.append(at(path, f"ladder must climb: '{name}' comes after a larger lane",
                          "ladder.order"))  # fmt: skip
        previous = max(previous, order[name])
        if lane.nodes > profile.nodes_max:
            out.append(at(path, f"'{name}' needs {lane.nodes} nodes, above the profile's band "
                          f"{band}", "ladder.above-band"))  # fmt: skip
        elif lane.nodes < profile.nodes_min:
            out.append(at(path, f"'{name}' runs on {lane.nodes} nodes, below the profile's band "
                          f"{band}: lower spec.nodes.min to {lane.nodes} or drop the lane",
                          "ladder.below-band"))  # fmt: skip
    tops = [ln.nodes for ln in map(lanes.lane, profile.ladder) if ln is not None]
    if tops and max(tops) < profile.nodes_max:
        out.append(at("$.spec.nodes", f"the band reaches {profile.nodes_max} nodes but the "
                      f"ladder's top lane runs on {max(tops)}: no lane can qualify the rest of "
                      "the band", "ladder.band-uncovered"))  # fmt: skip
    return out


def qualified_diagnostics(
    profiles: Mapping[str, ScaleProfile],
    records: Mapping[str, Any],
    evidence_dir: str,
) -> tuple[Diagnostic, ...]:
    """Every `status: qualified` owned value must name counted evidence at its profile version.

    `records` maps each referenced file (relative to `evidence_dir`) to its verification record
    (`VerifiedEvidence | RejectedEvidence`, `None` when the file is absent). Counted means: the
    signature and signer verified, the recipe digest is current (not stale), the predicate is a
    scale qualification of this profile's name and version on a lane of its ladder, its verdict
    is pass, and it carries a passing preflight report.
    """
    out: list[Diagnostic] = []
    for name, profile in sorted(profiles.items()):
        doc = profile.doc
        rel = doc.rel if doc is not None else f"scale/profiles/{name}.yaml"
        for ov in profile.owned_values:
            if ov.status != "qualified":
                continue
            for i, ref in enumerate(ov.evidence):
                jp = f"$.spec.ownedValues['{ov.component}']['{ov.path}'].evidence[{i}]"
                line, col = doc.locate(jp) if doc is not None else (0, 0)
                record = records.get(ref)
                why = _not_counted(record, profile)
                if why is not None:
                    out.append(Diagnostic(rel, line, col, jp,
                                          f"{evidence_dir}/{ref} does not qualify "
                                          f"{ov.component} {ov.path} at {name} "
                                          f"{profile.version}: {why}",
                                          "scale.qualified-evidence"))  # fmt: skip
    return sort_diagnostics(out)


def _not_counted(record: Any, profile: ScaleProfile) -> str | None:
    from generator.evidence.model import SCALE_QUALIFICATION_V1, VerifiedEvidence

    if record is None:
        return "no such evidence file"
    if not isinstance(record, VerifiedEvidence):
        return f"not verified ({record.klass}: {record.message})"
    st = record.statement
    if st.predicate_type != SCALE_QUALIFICATION_V1:
        return f"not a scale qualification ({st.predicate_type})"
    if record.stale:
        return "stale: the recipe digest it names is not the current one"
    if (st.scale_profile, st.scale_profile_version) != (profile.name, profile.version):
        return f"it qualifies scale profile {st.scale_profile} {st.scale_profile_version}"
    if st.lane not in profile.ladder:
        return f"lane {st.lane} is not on the profile's ladder"
    if st.predicate.get("verdict") != "pass":
        return "its verdict is fail"
    preflight = st.predicate.get("preflight")
    if not isinstance(preflight, dict) or preflight.get("exitCode") != 0:
        return "it carries no passing preflight report"
    return None


def _lanes_of_catalog(catalog: Any) -> Lanes:
    return lanes_of(catalog.documents)


def verify_qualified_evidence(
    profiles: Mapping[str, ScaleProfile],
    evidence_root: Any,
    catalog: Any,
    trust_roots: Sequence[str],
) -> dict[str, Any]:
    """Verify the evidence files the qualified owned values name (and only those)."""
    from pathlib import Path

    from generator.evidence.stage import verify_stage

    root = Path(evidence_root)
    refs = sorted({r for p in profiles.values() for ov in p.owned_values
                   if ov.status == "qualified" for r in ov.evidence})  # fmt: skip
    present = [root / r for r in refs if safeio.is_file(root / r)]
    out: dict[str, Any] = {r: None for r in refs}
    if present:
        run = verify_stage(present, catalog_dir=Path(catalog.root), trust_roots=trust_roots,
                           catalog=catalog, base=root, claims=_lanes_of_catalog)  # fmt: skip
        for rec in run.records:
            out[Path(rec.path).as_posix()] = rec
    return out
