"""Preflight: evaluate the scale contract's checks against an observed cluster.

One engine evaluates checks that are data, from three sources:
- the recipe's own `constraints` (`{Type}.{Subtype}.{Key}` with `>= <= > < == !=` or an exact value);
- the scale profile's `prerequisites` (external infrastructure the cluster must provide);
- `catalog/scale/checks.yaml`: checks on resolved values and the infrastructure checks every profile
  shares, with the constants and lookup tables their expressions use.

`preflight(result, profile, checks, snapshot, nodes)` is pure: records in, a `PreflightReport` out.
Each finding has an owner (`catalog`: a defect in the resolved configuration; `infrastructure`: an
external prerequisite the catalog detects and never changes) and a result (pass | fail | skipped |
unavailable). Missing data is `unavailable`, never `pass`.

The expressions checks are written in live in `generator/scale/checkexpr.py`.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, assert_never

from generator.catalog import schemas
from generator.core.errors import Diagnostic, ValidationError
from generator.core.records import Catalog, Constraint, Document, RecipeResult, ScaleProfile
from generator.scale.checkexpr import (
    ExprError,
    NotApplicable,
    Scope,
    Unavailable,
    Unset,
    as_number,
    compare,
    compile_expr,
    evaluate_expr,
    expr_names,
    truth,
)
from generator.scale.collect import how_to_collect
from generator.scale.snapshot import ClusterSnapshot, split_path

CHECKS_FILE = "scale/checks.yaml"
CHECKS_SCHEMA = "scale-checks"
REPORT_API_VERSION = "catalog.aicr.run/v1alpha1"
EXIT_CATALOG, EXIT_INFRASTRUCTURE, EXIT_INSUFFICIENT = 1, 3, 4


class Owner(StrEnum):
    CATALOG = "catalog"
    INFRASTRUCTURE = "infrastructure"


class Result(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    SKIPPED = "skipped"
    UNAVAILABLE = "unavailable"


class Source(StrEnum):
    RECIPE = "recipe"
    PROFILE = "profile"
    CATALOG = "catalog"


# The areas the catalog never owns (docs/scale-contract.md lists the same, a test compares them).
# Every infrastructure check carries one of these tags in `area`.
NON_OWNED_AREAS: Mapping[str, str] = {
    "control-plane": "Control plane and etcd sizing",
    "node-pools": "Node pools",
    "kubelet": "Kubelet reservations and limits",
    "host-sysctls": "Host sysctls",
    "cluster-dns": "Cluster DNS",
    "registries": "Registries and image caches",
    "cni": "CNI, kube-proxy and conntrack",
}

# Recipe constraints are infrastructure prerequisites; their area follows the measurement.
_CONSTRAINT_AREAS: tuple[tuple[str, str], ...] = (
    ("OS.sysctl.", "host-sysctls"),
    ("K8s.server.", "control-plane"),
    ("K8s.", "control-plane"),
)
_DEFAULT_CONSTRAINT_AREA = "node-pools"  # OS release, kernel, GPU, SystemD: the node image

OPERATORS: tuple[str, ...] = (">=", "<=", ">", "<", "==", "!=", "in", "not-in", "between")

# Names every expression may use besides the constants of checks.yaml.
# `declared_nodes` is --nodes, 0 when not given.
BUILTIN_NAMES: tuple[str, ...] = ("nodes", "declared_nodes", "profile_min", "profile_max")


# ---------------------------------------------------------------------------------------------
# Records


@dataclass(frozen=True, slots=True)
class Check:
    id: str
    source: Source
    owner: Owner
    severity: str  # error | warning
    description: str
    remediation: str
    operator: str
    observed: str  # expression (a `measurement` is written as m('<path>'))
    expected: str | None  # expression, or None when `value` is a literal
    value: Any
    when: str | None = None
    area: str | None = None
    component: str | None = None
    fail_when_zero: bool = False
    unit: str | None = None  # "bytes": shown as IEC quantities in text and `expected`


@dataclass(frozen=True, slots=True)
class CheckSet:
    """The contents of `catalog/scale/checks.yaml`."""

    constants: Mapping[str, Any]
    tables: Mapping[str, Mapping[str, Any]]
    checks: tuple[Check, ...]


@dataclass(frozen=True, slots=True)
class Finding:
    id: str
    source: Source
    owner: Owner
    area: str | None
    component: str | None
    result: Result
    severity: str
    description: str
    observed: Any  # a JSON value; None when unavailable or skipped
    expected: str
    remediation: str
    message: str
    unit: str | None = None
    missing: str | None = None  # the reading an unavailable finding lacks

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "source": str(self.source),
            "owner": str(self.owner),
            "area": self.area,
            "component": self.component,
            "result": str(self.result),
            "severity": self.severity,
            "description": self.description,
            "observed": self.observed,
            "expected": self.expected,
            "remediation": self.remediation,
            "message": self.message,
            "unit": self.unit,
            "missing": self.missing,
        }


@dataclass(frozen=True, slots=True)
class PreflightReport:
    recipe: str
    digest: str
    profile: str
    profile_version: str
    nodes_declared: int | None
    nodes_observed: int | None
    snapshot: str
    findings: tuple[Finding, ...]  # sorted by id
    snapshot_digest: str | None = None

    def count(self, result: Result, owner: Owner | None = None) -> int:
        return sum(
            1 for f in self.findings if f.result is result and (owner is None or f.owner is owner)
        )

    def blocking(self) -> tuple[Finding, ...]:
        """Error-severity findings that are not shown to hold: failed or without data."""
        return tuple(
            f
            for f in self.findings
            if f.severity == "error" and f.result in (Result.FAIL, Result.UNAVAILABLE)
        )

    def missing_readings(self) -> dict[str, tuple[str, ...]]:
        """Reading -> the error-severity checks that lack it, sorted."""
        out: dict[str, list[str]] = {}
        for f in self.blocking():
            if f.result is Result.UNAVAILABLE:
                out.setdefault(f.missing or "(unknown reading)", []).append(f.id)
        return {k: tuple(sorted(v)) for k, v in sorted(out.items())}

    @property
    def exit_code(self) -> int:
        """0 nothing blocking; 1 a catalog-owned failure; 3 infrastructure failures (and no
        catalog-owned one); 4 no failure, but error-severity checks lack data (never a pass)."""
        blocking = self.blocking()
        failed = [f for f in blocking if f.result is Result.FAIL]
        if any(f.owner is Owner.CATALOG for f in failed):
            return EXIT_CATALOG
        if failed:
            return EXIT_INFRASTRUCTURE
        if blocking:
            return EXIT_INSUFFICIENT
        return 0


# ---------------------------------------------------------------------------------------------
# Building checks from data


def _check_from(raw: Mapping[str, Any], source: Source) -> Check:
    if "measurement" in raw:
        observed = f"m({json.dumps(raw['measurement'], allow_nan=False)})"
    else:
        observed = str(raw["observed"])
    return Check(
        id=str(raw["id"]),
        source=source,
        owner=Owner(raw["owner"]),
        severity=str(raw.get("severity", "error")),
        description=" ".join(str(raw["description"]).split()),
        remediation=" ".join(str(raw["remediation"]).split()),
        operator=str(raw["operator"]),
        observed=observed,
        expected=str(raw["expected"]) if "expected" in raw else None,
        value=raw.get("value"),
        when=str(raw["when"]) if "when" in raw else None,
        area=raw.get("area"),
        component=raw.get("component"),
        fail_when_zero=bool(raw.get("failWhenZero", False)),
        unit=raw.get("unit"),
    )


def _expr_diagnostics(
    check: Check, doc: Document | None, json_path: str, known: set[str]
) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    rel = doc.rel if doc is not None else "<profile>"
    for field, text in (("observed", check.observed), ("expected", check.expected),
                        ("when", check.when)):  # fmt: skip
        if text is None:
            continue
        jp = f"{json_path}.{field}"
        if field == "observed" and text.startswith("m("):
            jp = f"{json_path}.measurement"
        line, col = doc.locate(jp) if doc is not None else (0, 0)
        try:
            unknown = sorted(expr_names(text) - known)
        except ExprError as e:
            out.append(Diagnostic(rel, line, col, jp, str(e), "scale.check-expression"))
            continue
        if unknown:
            out.append(
                Diagnostic(rel, line, col, jp,
                           f"unknown name(s) {', '.join(unknown)} in {text!r}",
                           "scale.check-expression")
            )  # fmt: skip
    for path in _measurement_literals(check):
        try:
            split_path(path)
        except ValueError as e:
            line, col = doc.locate(json_path) if doc is not None else (0, 0)
            out.append(Diagnostic(rel, line, col, json_path, str(e), "scale.check-measurement"))
    return out


def _measurement_literals(check: Check) -> list[str]:
    """The measurement paths an expression reads with m()/has() and a literal argument."""
    paths: list[str] = []
    for text in (check.observed, check.expected, check.when):
        if text is None:
            continue
        try:
            tree = compile_expr(text)
        except ExprError:
            continue
        for n in ast.walk(tree):
            if (
                isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                and n.func.id in ("m", "has") and n.args
                and isinstance(n.args[0], ast.Constant) and isinstance(n.args[0].value, str)
            ):  # fmt: skip
                paths.append(n.args[0].value)
    return paths


def measurement_paths(checks: Iterable[Check]) -> tuple[str, ...]:
    """Every literal measurement path the checks read, sorted."""
    return tuple(sorted({p for c in checks for p in _measurement_literals(c)}))


def checkset_from(doc: Document) -> CheckSet:
    """`catalog/scale/checks.yaml` as a CheckSet; raises ValidationError listing every problem."""
    diags = list(schemas.check(doc, CHECKS_SCHEMA))
    if diags:
        raise ValidationError(f"{doc.rel}: invalid ScaleChecks", diags)
    spec = doc.data["spec"]
    constants = dict(sorted((spec.get("constants") or {}).items()))
    tables = {k: dict(v) for k, v in sorted((spec.get("tables") or {}).items())}
    known = set(BUILTIN_NAMES) | set(constants)
    checks: list[Check] = []
    seen: dict[str, int] = {}
    for i, raw in enumerate(spec["checks"]):
        check = _check_from(raw, Source.CATALOG)
        jp = f"$.spec.checks[{i}]"
        diags.extend(_expr_diagnostics(check, doc, jp, known))
        if check.id in seen:
            line, col = doc.locate(f"{jp}.id")
            diags.append(
                Diagnostic(
                    doc.rel,
                    line,
                    col,
                    f"{jp}.id",
                    f"check id '{check.id}' is already used by $.spec.checks[{seen[check.id]}]",
                    "scale.check-duplicate",
                )
            )
        seen.setdefault(check.id, i)
        checks.append(check)
    if diags:
        raise ValidationError(f"{doc.rel}: invalid ScaleChecks", diags)
    return CheckSet(constants=constants, tables=tables, checks=tuple(checks))


def profile_checks(profile: ScaleProfile, checkset: CheckSet) -> tuple[Check, ...]:
    """The profile's prerequisites as checks; raises ValidationError on a bad expression."""
    known = set(BUILTIN_NAMES) | set(checkset.constants)
    diags: list[Diagnostic] = []
    out: list[Check] = []
    for i, raw in enumerate(profile.prerequisites):
        check = _check_from(raw, Source.PROFILE)
        diags.extend(_expr_diagnostics(check, profile.doc, f"$.spec.prerequisites[{i}]", known))
        out.append(check)
    if diags:
        raise ValidationError(f"scale profile {profile.name}: invalid prerequisites", diags)
    return tuple(out)


_CONSTRAINT_OP = re.compile(r"^\s*(>=|<=|==|!=|>|<)\s*(.*?)\s*$")


def constraint_check(c: Constraint) -> Check:
    """A recipe constraint as an infrastructure check (`>= 1.32`, or an exact value)."""
    m = _CONSTRAINT_OP.fullmatch(c.value)
    op, literal = (m.group(1), m.group(2)) if m else ("==", c.value.strip())
    area = next((a for prefix, a in _CONSTRAINT_AREAS if c.name.startswith(prefix)),
                _DEFAULT_CONSTRAINT_AREA)  # fmt: skip
    return Check(
        id=f"recipe.{c.name}",
        source=Source.RECIPE,
        owner=Owner.INFRASTRUCTURE,
        severity=c.severity or "error",
        description=f"recipe constraint {c.name} {op} {literal}",
        remediation=c.remediation or f"Bring {c.name} to {op} {literal} on the cluster.",
        operator=op,
        observed=f"m({json.dumps(c.name, allow_nan=False)})",
        expected=None,
        value=literal,
        area=area,
    )


def all_checks(
    result: RecipeResult, profile: ScaleProfile, checkset: CheckSet
) -> tuple[Check, ...]:
    """Recipe constraints, profile prerequisites and shared checks; ids must be unique."""
    checks = (
        tuple(constraint_check(c) for c in result.constraints)
        + profile_checks(profile, checkset)
        + checkset.checks
    )
    seen: dict[str, Check] = {}
    diags: list[Diagnostic] = []
    for c in checks:
        if c.id in seen:
            diags.append(Diagnostic(f"<{c.source}>", 0, 0, "$",
                                    f"check id '{c.id}' is defined by both {seen[c.id].source} "
                                    f"and {c.source}", "scale.check-duplicate"))  # fmt: skip
        seen.setdefault(c.id, c)
    if diags:
        raise ValidationError("duplicate preflight check ids", diags)
    return tuple(sorted(checks, key=lambda c: c.id))


# ---------------------------------------------------------------------------------------------
# Evaluation


def _display(x: Any) -> Any:
    """A JSON-friendly rendering of an evaluated value."""
    if isinstance(x, tuple):
        return ".".join(str(p) for p in x)
    if isinstance(x, float) and x.is_integer():
        return int(x)
    if isinstance(x, float):
        return round(x, 3)
    if isinstance(x, list):
        return [_display(e) for e in x]
    return x


def _human_bytes(n: float) -> str:
    for power, suffix in ((5, "Pi"), (4, "Ti"), (3, "Gi"), (2, "Mi"), (1, "Ki")):
        unit = 1024**power
        if abs(n) >= unit:
            q = n / unit
            return f"{q:.0f}{suffix}" if float(q).is_integer() else f"{q:.1f}{suffix}"
    return f"{n:.0f}"


def _show(x: Any, unit: str | None = None) -> str:
    x = _display(x)
    if x == "":
        return '""'
    if unit == "bytes" and isinstance(x, int | float) and not isinstance(x, bool):
        return _human_bytes(x)
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, list):
        return "[" + ", ".join(_show(e, unit) for e in x) + "]"
    return str(x)


def _expected_text(op: str, expected: Any, unit: str | None = None) -> str:
    if op == "between" and isinstance(expected, list | tuple) and len(expected) == 2:
        return f"between {_show(expected[0], unit)} and {_show(expected[1], unit)}"
    return f"{op} {_show(expected, unit)}"


def _finding(
    check: Check,
    result: Result,
    observed: Any,
    expected: str,
    message: str,
    missing: str | None = None,
) -> Finding:
    return Finding(
        id=check.id,
        source=check.source,
        owner=check.owner,
        area=check.area,
        component=check.component,
        result=result,
        severity=check.severity,
        description=check.description,
        observed=_display(observed),
        expected=expected,
        remediation=check.remediation,
        message=message,
        unit=check.unit,
        missing=missing,
    )


def _static_expected(check: Check) -> str:
    if check.expected is None:
        return _expected_text(check.operator, check.value, check.unit)
    return f"{check.operator} {check.expected}"


def evaluate(check: Check, scope: Scope) -> Finding:
    """One check against one environment. Never raises for data problems."""
    if check.component and check.component not in scope.components:
        return _finding(check, Result.SKIPPED, None, _static_expected(check),
                        f"the recipe does not deploy {check.component}")  # fmt: skip
    stage = "when"
    try:
        if check.when is not None and not truth(evaluate_expr(check.when, scope)):
            return _finding(check, Result.SKIPPED, None, _static_expected(check),
                            f"does not apply: {check.when}")  # fmt: skip
        stage = "observed"
        observed = evaluate_expr(check.observed, scope)
        stage = "expected"
        expected = check.value if check.expected is None else evaluate_expr(check.expected, scope)
    except Unavailable as e:
        return _finding(check, Result.UNAVAILABLE, None, _static_expected(check),
                        f"the snapshot has no reading {e.what}; missing data is never a pass",
                        missing=e.what)  # fmt: skip
    except NotApplicable as e:
        return _finding(check, Result.SKIPPED, None, _static_expected(check), str(e))
    except Unset as e:
        return _finding(check, Result.FAIL, None, _static_expected(check),
                        f"{e}: the resolved configuration has no value to check")  # fmt: skip
    except ExprError as e:
        result = Result.FAIL if check.owner is Owner.CATALOG else Result.UNAVAILABLE
        return _finding(check, result, None, _static_expected(check),
                        f"cannot evaluate {stage}: {e}")  # fmt: skip
    expected_text = _expected_text(check.operator, expected, check.unit)
    if check.fail_when_zero and any(
        as_number(x) == 0 for x in (observed, expected) if not isinstance(x, bool)
    ):
        return _finding(check, Result.FAIL, observed, expected_text,
                        "a count of 0 fails: nothing was scheduled where it must run")  # fmt: skip
    try:
        ok = compare(observed, check.operator, expected)
    except ExprError as e:
        result = Result.FAIL if check.owner is Owner.CATALOG else Result.UNAVAILABLE
        return _finding(check, result, observed, expected_text, str(e))
    if ok:
        return _finding(check, Result.PASS, observed, expected_text, "")
    return _finding(check, Result.FAIL, observed, expected_text,
                    f"observed {_show(observed, check.unit)}, expected {expected_text}")  # fmt: skip


def _observed_nodes(snapshot: ClusterSnapshot) -> int | None:
    value = snapshot.get("K8s.nodes.gpu")
    n = as_number(value) if value is not None else None
    return int(n) if n is not None and float(n).is_integer() else None


def rendered_values(tree: Mapping[str, Any]) -> dict[str, tuple[Mapping[str, Any], ...]]:
    """Each component's values as a rendered bundle ships them: component -> the values of each
    of its releases, in bundle order (its chart's, and any local chart of its manifests; a
    release that hands Helm no values, such as a folder of plain manifests, is not listed).

    Read through `bundle-info.yaml`'s releases (component, path): `<path>/values.yaml` (a local
    chart nests the component's values under its name, as its templates read them), or the
    `spec.values` of `<path>/helmrelease.yaml` (flux). `tree` is a `render_bundle` result.
    """
    from generator.core.yamlio import parse_yaml

    def load(rel: str) -> Any:
        f = tree.get(rel)
        return None if f is None else parse_yaml(f.data, rel, allow_empty=True).data

    info = load("bundle-info.yaml")
    if not isinstance(info, dict):
        raise ValueError("the bundle has no bundle-info.yaml")
    out: dict[str, list[Mapping[str, Any]]] = {}
    for rel in info.get("releases") or ():
        comp, path = str(rel["component"]), str(rel["path"])
        values = load(f"{path}/values.yaml")
        if values is None:
            release = load(f"{path}/helmrelease.yaml")
            values = (
                (release or {}).get("spec", {}).get("values") if isinstance(release, dict) else None
            )
        if not isinstance(values, dict):
            continue  # a release with no values (plain manifests applied as they are)
        if set(values) == {comp} and isinstance(values[comp], dict):
            values = values[comp]  # a local chart of the component's manifests (nested values)
        out.setdefault(comp, []).append(values)
    return {k: tuple(v) for k, v in sorted(out.items())}


def scope_for(
    result: RecipeResult,
    profile: ScaleProfile,
    checks: CheckSet,
    snapshot: ClusterSnapshot,
    nodes: int | None,
    values: Mapping[str, Mapping[str, Any]] | None = None,
) -> Scope:
    """What check expressions see: readings, the configuration's values, criteria, names and
    tables. `values` (component -> values, from `rendered_values` of the recipe's bundle) is the
    one source for v(); without it, the resolved values of `result` (the same merge)."""
    sizes = [n for n in (nodes, _observed_nodes(snapshot)) if n is not None]
    names: dict[str, Any] = dict(checks.constants)
    names.update(
        profile_min=profile.nodes_min, profile_max=profile.nodes_max, declared_nodes=nodes or 0
    )
    if sizes:
        # the larger of the declared and the observed GPU nodes: sizing checks never understate
        names["nodes"] = max(sizes)
    components = {c.name: c.values for c in result.components}
    if values is not None:
        absent = sorted(set(components) - set(values))
        if absent:  # the bundle was rendered from another recipe: a bug, not bad input
            raise ValueError(f"the bundle's values lack component(s) {', '.join(absent)}")
        components = {name: values[name] for name in components}
    return Scope(
        readings=snapshot.readings,
        components=components,
        criteria={d: v for d, v in result.criteria.to_json().items()},
        names=names,
        tables=checks.tables,
        name_sources={"nodes": "K8s.nodes.gpu"},
    )


def preflight(
    result: RecipeResult,
    profile: ScaleProfile,
    checks: CheckSet,
    snapshot: ClusterSnapshot,
    nodes: int | None = None,
    values: Mapping[str, Mapping[str, Any]] | None = None,
) -> PreflightReport:
    """Evaluate every check of (recipe, profile, shared checks) against `snapshot`.

    `values`: each component's values as the recipe's bundle renders them (`rendered_values`);
    the CLI always passes them, so a check on the configuration reads what the bundle ships.

    `nodes` is the GPU-node count the user declared (`--nodes`). Expressions size their checks
    with the larger of it and the snapshot's `K8s.nodes.gpu`, so a declaration below the observed
    cluster cannot hide a sizing defect.
    """
    observed_nodes = _observed_nodes(snapshot)
    scope = scope_for(result, profile, checks, snapshot, nodes, values)
    findings = tuple(evaluate(c, scope) for c in all_checks(result, profile, checks))
    return PreflightReport(
        recipe=result.name,
        digest=result.digest,
        profile=profile.name,
        profile_version=profile.version,
        nodes_declared=nodes,
        nodes_observed=observed_nodes,
        snapshot=snapshot.rel,
        findings=findings,
        snapshot_digest=snapshot.digest,
    )


def catalog_checks(catalog: Catalog) -> tuple[tuple[str | None, Check], ...]:
    """Every check the catalog defines, for listings (site, docs): (profile name or None for the
    shared checks of checks.yaml, check), shared first, then by profile and id.

    Raises ValidationError when checks.yaml or a profile's prerequisites are invalid.
    """
    doc = catalog.documents.get(CHECKS_FILE)
    checkset = checkset_from(doc) if doc is not None else CheckSet({}, {}, ())
    rows: list[tuple[str | None, Check]] = [
        (None, c) for c in sorted(checkset.checks, key=lambda c: c.id)
    ]
    for name, profile in sorted(catalog.profiles.items()):
        rows.extend(
            (name, c) for c in sorted(profile_checks(profile, checkset), key=lambda c: c.id)
        )
    return tuple(rows)


# ---------------------------------------------------------------------------------------------
# Validation hook (for `aicr-catalog validate`)


def scale_diagnostics(catalog: Catalog) -> tuple[Diagnostic, ...]:
    """Problems in the scale data that the JSON Schemas alone cannot see.

    checks.yaml present and valid; every prerequisite expression compiles and uses known names;
    owned values name registry components; ids unique across checks.yaml and each profile.
    """
    diags: list[Diagnostic] = []
    doc = catalog.documents.get(CHECKS_FILE)
    checkset = CheckSet(constants={}, tables={}, checks=())
    if doc is None:
        diags.append(Diagnostic(CHECKS_FILE, 0, 0, "$", "the catalog has no scale/checks.yaml",
                                "scale.checks-missing"))  # fmt: skip
    else:
        try:
            checkset = checkset_from(doc)
        except ValidationError as e:
            diags.extend(e.diagnostics)
    shared = {c.id for c in checkset.checks}
    for name, profile in sorted(catalog.profiles.items()):
        rel = profile.doc.rel if profile.doc is not None else f"scale/profiles/{name}.yaml"
        try:
            prereqs = profile_checks(profile, checkset)
        except ValidationError as e:
            diags.extend(e.diagnostics)
            prereqs = ()
        for i, c in enumerate(prereqs):
            if c.id in shared:
                jp = f"$.spec.prerequisites[{i}].id"
                line, col = profile.doc.locate(jp) if profile.doc is not None else (0, 0)
                diags.append(Diagnostic(rel, line, col, jp,
                                        f"check id '{c.id}' is also defined in {CHECKS_FILE}",
                                        "scale.check-duplicate"))  # fmt: skip
        if catalog.registry.components:
            for ov in profile.owned_values:
                if ov.component not in catalog.registry.components:
                    jp = f"$.spec.ownedValues.{ov.component}"
                    line, col = profile.doc.locate(jp) if profile.doc is not None else (0, 0)
                    diags.append(Diagnostic(rel, line, col, jp,
                                            f"owned values name component '{ov.component}', "
                                            "which the registry does not declare",
                                            "scale.owned-unknown-component"))  # fmt: skip
        if profile.nodes_min > profile.nodes_max:
            line, col = profile.doc.locate("$.spec.nodes") if profile.doc is not None else (0, 0)
            diags.append(Diagnostic(rel, line, col, "$.spec.nodes",
                                    f"nodes.min {profile.nodes_min} is above nodes.max "
                                    f"{profile.nodes_max}", "scale.band-empty"))  # fmt: skip
    return tuple(sorted(set(diags)))


# ---------------------------------------------------------------------------------------------
# Reporters


_EXIT_MEANING = {
    0: "no blocking finding",
    1: "a catalog-owned defect in the resolved configuration",
    3: "infrastructure prerequisites unmet (no catalog-owned check failed)",
    4: "insufficient data: error-severity checks lack readings (nothing failed; nothing is shown "
    "to hold either)",
}
_RESULT_ORDER = {Result.FAIL: 0, Result.UNAVAILABLE: 1, Result.PASS: 2, Result.SKIPPED: 3}


def report_json(report: PreflightReport) -> dict[str, Any]:
    """The report document; valid against catalog/schemas/preflight-report.schema.json."""
    return {
        "apiVersion": REPORT_API_VERSION,
        "kind": "PreflightReport",
        "recipe": {"name": report.recipe, "digest": report.digest},
        "scaleProfile": {"name": report.profile, "version": report.profile_version},
        "nodes": {"declared": report.nodes_declared, "observed": report.nodes_observed},
        "snapshot": report.snapshot,
        "snapshotDigest": report.snapshot_digest,
        "summary": {
            "checks": len(report.findings),
            "pass": report.count(Result.PASS),
            "fail": report.count(Result.FAIL),
            "skipped": report.count(Result.SKIPPED),
            "unavailable": report.count(Result.UNAVAILABLE),
            "catalogFailures": report.count(Result.FAIL, Owner.CATALOG),
            "infrastructureFailures": report.count(Result.FAIL, Owner.INFRASTRUCTURE),
            "missingReadings": len(report.missing_readings()),
            "exitCode": report.exit_code,
        },
        "findings": [f.to_json() for f in report.findings],
        "missingReadings": [
            {"reading": r, "checks": list(ids), "howToCollect": how_to_collect(r)}
            for r, ids in report.missing_readings().items()
        ],
    }


def render_json(report: PreflightReport) -> str:
    return (
        json.dumps(
            report_json(report), indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False
        )
        + "\n"
    )


def render_text(report: PreflightReport) -> str:
    declared = "-" if report.nodes_declared is None else str(report.nodes_declared)
    observed = "-" if report.nodes_observed is None else str(report.nodes_observed)
    lines = [
        f"preflight: recipe {report.recipe}, scale profile {report.profile} "
        f"{report.profile_version}",
        f"  digest {report.digest}",
        f"  snapshot {report.snapshot}: GPU nodes declared {declared}, observed {observed}",
        "",
    ]
    width = max((len(f.id) for f in report.findings), default=10)
    ordered = sorted(report.findings, key=lambda f: (_RESULT_ORDER[f.result], f.id))
    for f in ordered:
        obs = "-" if f.observed is None else _show(f.observed, f.unit)
        lines.append(
            f"{f.result.upper():<11} {f.owner:<14} {f.severity:<7} {f.id:<{width}}  "
            f"observed {obs}, expected {f.expected}"
        )
        if f.result in (Result.FAIL, Result.UNAVAILABLE):
            if f.message and f.message != f"observed {obs}, expected {f.expected}":
                lines.append(f"    why: {f.message}")
            lines.append(f"    fix: {f.remediation}")
        elif f.result is Result.SKIPPED and f.message:
            lines.append(f"    skipped: {f.message}")
    code = report.exit_code
    missing = report.missing_readings()
    if missing:
        noun = "reading" if len(missing) == 1 else "readings"
        lines += ["", f"insufficient data: {len(missing)} {noun} missing"]
        for reading, ids in missing.items():
            lines.append(f"  {reading} (needed by {', '.join(ids)})")
            lines.append(f"    collect: {how_to_collect(reading)}")
    lines += [
        "",
        f"{len(report.findings)} checks: {report.count(Result.PASS)} pass, "
        f"{report.count(Result.FAIL)} fail "
        f"({report.count(Result.FAIL, Owner.CATALOG)} catalog, "
        f"{report.count(Result.FAIL, Owner.INFRASTRUCTURE)} infrastructure), "
        f"{report.count(Result.SKIPPED)} skipped, {report.count(Result.UNAVAILABLE)} unavailable",
        f"exit {code}: {_EXIT_MEANING[code]}",
    ]
    return "\n".join(lines) + "\n"


def render_github(report: PreflightReport, snapshot_file: str | None = None) -> str:
    """GitHub Actions workflow annotations, one per failed or unavailable finding, on the
    snapshot file (named from the repository root) when it is given."""
    from generator.core.report import annotation

    out: list[str] = []
    for f in report.findings:
        if f.result not in (Result.FAIL, Result.UNAVAILABLE):
            continue
        level = "error" if f.severity == "error" else "warning"
        msg = f"{f.result} ({f.owner}): {f.message or f.description} -- {f.remediation}"
        out.append(annotation(level, msg, title=f"preflight {f.id}", path=snapshot_file))
    out.append(
        annotation(
            "notice",
            f"exit {report.exit_code}: {_EXIT_MEANING[report.exit_code]}",
            title="preflight",
            path=snapshot_file,
        )
    )
    return "\n".join(out) + "\n"


class Format(StrEnum):
    TEXT = "text"
    JSON = "json"
    GITHUB = "github"


def render(report: PreflightReport, fmt: Format, snapshot_file: str | None = None) -> str:
    if fmt is Format.TEXT:
        return render_text(report)
    if fmt is Format.JSON:
        return render_json(report)
    if fmt is Format.GITHUB:
        return render_github(report, snapshot_file)
    assert_never(fmt)
