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

Expressions are a small subset of Python, parsed with `ast` and evaluated by a whitelist walker
(never `eval`): literals, names, arithmetic, comparisons, `and`/`or`/`not`, `a if c else b`, lists,
and the functions in `FUNCTIONS`.
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache
from typing import Any, assert_never

from generator import schemas
from generator.errors import Diagnostic, ValidationError
from generator.records import Catalog, Constraint, Document, RecipeResult, ScaleProfile
from generator.snapshot import Snapshot, split_path

CHECKS_FILE = "scale/checks.yaml"
CHECKS_SCHEMA = "scale-checks"
REPORT_API_VERSION = "catalog.aicr.run/v1alpha1"


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

    @property
    def exit_code(self) -> int:
        """0 nothing blocking; 1 a catalog-owned failure; 3 only infrastructure failures or data
        missing for an error-severity check (never a pass)."""
        blocking = self.blocking()
        if any(f.result is Result.FAIL and f.owner is Owner.CATALOG for f in blocking):
            return 1
        if blocking:
            return 3
        return 0


# ---------------------------------------------------------------------------------------------
# Expressions


class ExprError(Exception):
    """An expression that cannot be parsed or evaluated."""


class _Unavailable(Exception):
    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what


class _NotApplicable(Exception):
    pass


class _Unset(Exception):
    pass


_MISSING = object()

_BINOPS: Mapping[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
}
_CMPOPS: Mapping[type[ast.cmpop], str] = {
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.In: "in",
    ast.NotIn: "not-in",
}
_ALLOWED_NODES = (
    ast.Expression, ast.Constant, ast.Name, ast.Load, ast.List, ast.Tuple, ast.BinOp,
    ast.UnaryOp, ast.USub, ast.UAdd, ast.Not, ast.BoolOp, ast.And, ast.Or, ast.Compare,
    ast.IfExp, ast.Call, *_BINOPS, *_CMPOPS,
)  # fmt: skip

# Names every expression may use besides the constants of checks.yaml.
BUILTIN_NAMES: tuple[str, ...] = ("nodes", "profile_min", "profile_max")

_QUANTITY = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([KMGTPE]i?|[kmgtpe]|[KMGTPE]?B)?\s*$")
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"k": 1, "K": 1, "M": 2, "G": 3, "T": 4, "P": 5, "E": 6}
_PROM_BYTES = {"B": 0, "KB": 1, "MB": 2, "GB": 3, "TB": 4, "PB": 5, "EB": 6}  # base 1024
_DURATION = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ms|s|m|h|d|w|y)")
_DURATION_S = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}
_VERSION = re.compile(r"^v?([0-9]+(?:\.[0-9]+)*)")


def _num(x: Any) -> int | float:
    if isinstance(x, bool):
        raise ExprError(f"expected a number, got {x!r}")
    if isinstance(x, int | float):
        return x
    if isinstance(x, str):
        try:
            f = float(x.strip())
        except ValueError:
            raise ExprError(f"expected a number, got {x!r}") from None
        return int(f) if f.is_integer() and "." not in x else f
    raise ExprError(f"expected a number, got {x!r}")


def to_bytes(q: Any) -> int:
    """A Kubernetes quantity (`64Gi`, `500M`) or Prometheus size (`45GB`, base 1024) in bytes."""
    if isinstance(q, int | float) and not isinstance(q, bool):
        return int(q)
    m = _QUANTITY.match(str(q))
    if not m:
        raise ExprError(f"{q!r} is not a quantity")
    n, unit = float(m.group(1)), m.group(2) or ""
    if unit in _BINARY:
        return int(n * 1024 ** _BINARY[unit])
    if unit in _PROM_BYTES:
        return int(n * 1024 ** _PROM_BYTES[unit])
    if unit in _DECIMAL:
        return int(n * 1000 ** _DECIMAL[unit])
    if unit == "":
        return int(n)
    raise ExprError(f"{q!r} has an unknown unit")  # pragma: no cover - regex limits units


def to_seconds(d: Any) -> float:
    """A duration (`30s`, `5m`, `1h30m`, `5d`) in seconds; a bare number is seconds."""
    if isinstance(d, int | float) and not isinstance(d, bool):
        return float(d)
    text = str(d).strip()
    pos, total = 0, 0.0
    for m in _DURATION.finditer(text):
        if m.start() != pos:
            break
        total += float(m.group(1)) * _DURATION_S[m.group(2)]
        pos = m.end()
    if pos != len(text) or not text:
        raise ExprError(f"{d!r} is not a duration")
    return total


def to_cpu(q: Any) -> float:
    """A Kubernetes CPU quantity (`500m`, `2`) in cores."""
    if isinstance(q, int | float) and not isinstance(q, bool):
        return float(q)
    text = str(q).strip()
    if text.endswith("m"):
        return _num(text[:-1]) / 1000
    return float(_num(text))


def to_version(x: Any) -> tuple[int, ...]:
    """The numeric release of a version (`v1.33.5-eks-3025e55` -> (1, 33, 5))."""
    m = _VERSION.match(str(x).strip())
    if not m:
        raise ExprError(f"{x!r} is not a version")
    return tuple(int(p) for p in m.group(1).split("."))


def to_count(x: Any, total: Any) -> int:
    """An int-or-percent (Kubernetes `maxUnavailable`) as a node count; percentages round up."""
    if isinstance(x, str) and x.strip().endswith("%"):
        pct = _num(x.strip()[:-1])
        return math.ceil(_num(total) * pct / 100)
    n = _num(x)
    if not isinstance(n, int):
        raise ExprError(f"{x!r} is not a whole number or percentage")
    return n


@lru_cache(maxsize=1024)
def compile_expr(text: str) -> ast.Expression:
    """Parse `text`; raises ExprError naming the construct that is not allowed."""
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as e:
        raise ExprError(f"invalid expression {text!r}: {e.msg}") from None
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED_NODES):
            raise ExprError(f"{type(node).__name__} is not allowed in expression {text!r}")
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
                raise ExprError(f"unknown function in expression {text!r}")
            if node.keywords:
                raise ExprError(f"keyword arguments are not allowed in expression {text!r}")
    return tree


def expr_names(text: str) -> set[str]:
    """Free names used by an expression (function names excluded)."""
    tree = compile_expr(text)
    funcs = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and id(n) not in funcs}


@dataclass(frozen=True, slots=True)
class _Env:
    result: RecipeResult
    profile: ScaleProfile
    snapshot: Snapshot
    checkset: CheckSet
    nodes: int | None


def _lookup_path(values: Any, path: str) -> Any:
    cur = values
    for part in path.split("."):
        if not isinstance(cur, Mapping) or part not in cur:
            return _MISSING
        cur = cur[part]
    return _MISSING if cur is None else cur


def _name(env: _Env, name: str) -> Any:
    if name == "nodes":
        if env.nodes is None:
            raise _Unavailable("K8s.nodes.gpu")
        return env.nodes
    if name == "profile_min":
        return env.profile.nodes_min
    if name == "profile_max":
        return env.profile.nodes_max
    if name in env.checkset.constants:
        return env.checkset.constants[name]
    raise ExprError(f"unknown name {name!r}")


def _call(env: _Env, node: ast.Call) -> Any:
    assert isinstance(node.func, ast.Name)
    fname = node.func.id
    if fname == "v":  # lazy default: v(component, path[, default])
        if len(node.args) not in (2, 3):
            raise ExprError("v() takes a component, a path and an optional default")
        comp, path = _eval(env, node.args[0]), _eval(env, node.args[1])
        rc = env.result.component(str(comp))
        if rc is None:
            raise _NotApplicable(f"the recipe does not deploy {comp}")
        found = _lookup_path(rc.values, str(path))
        if found is not _MISSING:
            return found
        if len(node.args) == 3:
            return _eval(env, node.args[2])
        raise _Unset(f"{comp} does not set {path}")
    if fname == "lookup":  # lazy default: lookup(table, key[, default])
        if len(node.args) not in (2, 3):
            raise ExprError("lookup() takes a table, a key and an optional default")
        table, key = _eval(env, node.args[0]), _eval(env, node.args[1])
        rows = env.checkset.tables.get(str(table))
        if rows is None:
            raise ExprError(f"unknown table {table!r}")
        if str(key) in rows:
            return rows[str(key)]
        if len(node.args) == 3:
            return _eval(env, node.args[2])
        raise ExprError(f"table {table!r} has no row {key!r}")
    args = [_eval(env, a) for a in node.args]
    return FUNCTIONS[fname](env, *args)


def _m(env: _Env, path: Any) -> Any:
    value = env.snapshot.get(str(path))
    if value is None:
        raise _Unavailable(str(path))
    return value


def _criteria(env: _Env, dim: Any) -> str:
    value = env.result.criteria.get(str(dim))
    return value if value is not None else "any"


def _fn(f: Callable[..., Any]) -> Callable[..., Any]:
    def wrapped(env: _Env, *args: Any) -> Any:
        try:
            return f(*args)
        except (TypeError, ValueError, ZeroDivisionError, OverflowError) as e:
            raise ExprError(str(e)) from None

    return wrapped


FUNCTIONS: Mapping[str, Callable[..., Any]] = {
    "m": _m,
    "has": lambda env, path: env.snapshot.has(str(path)),
    "v": lambda env, *a: None,  # handled lazily in _call
    "lookup": lambda env, *a: None,  # handled lazily in _call
    "component": lambda env, name: env.result.component(str(name)) is not None,
    "criteria": _criteria,
    "count": _fn(to_count),
    "bytes": _fn(to_bytes),
    "seconds": _fn(to_seconds),
    "cpu": _fn(to_cpu),
    "version": _fn(to_version),
    "major": _fn(lambda x: to_version(x)[0]),
    "ceil": _fn(lambda x: math.ceil(_num(x))),
    "floor": _fn(lambda x: math.floor(_num(x))),
    "sqrt": _fn(lambda x: math.sqrt(_num(x))),
    "int": _fn(lambda x: int(_num(x))),
    "min": _fn(lambda *xs: min(_num(x) for x in xs)),
    "max": _fn(lambda *xs: max(_num(x) for x in xs)),
}


def _eval(env: _Env, node: ast.AST) -> Any:
    if isinstance(node, ast.Expression):
        return _eval(env, node.body)
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return _name(env, node.id)
    if isinstance(node, ast.List | ast.Tuple):
        return [_eval(env, e) for e in node.elts]
    if isinstance(node, ast.BinOp):
        a, b = _eval(env, node.left), _eval(env, node.right)
        if isinstance(node.op, ast.Add) and isinstance(a, str) and isinstance(b, str):
            return a + b
        try:
            return _BINOPS[type(node.op)](_num(a), _num(b))
        except ZeroDivisionError:
            raise ExprError("division by zero") from None
    if isinstance(node, ast.UnaryOp):
        x = _eval(env, node.operand)
        if isinstance(node.op, ast.Not):
            return not _truth(x)
        return -_num(x) if isinstance(node.op, ast.USub) else _num(x)
    if isinstance(node, ast.BoolOp):
        if isinstance(node.op, ast.And):
            return all(_truth(_eval(env, v)) for v in node.values)
        return any(_truth(_eval(env, v)) for v in node.values)
    if isinstance(node, ast.Compare):
        left = _eval(env, node.left)
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = _eval(env, right_node)
            if not compare(left, _CMPOPS[type(op)], right):
                return False
            left = right
        return True
    if isinstance(node, ast.IfExp):
        return _eval(env, node.body if _truth(_eval(env, node.test)) else node.orelse)
    if isinstance(node, ast.Call):
        return _call(env, node)
    raise ExprError(f"{type(node).__name__} is not allowed")  # pragma: no cover


def _truth(x: Any) -> bool:
    if isinstance(x, str):
        return x.strip().lower() not in ("", "false", "0", "no")
    return bool(x)


# ---------------------------------------------------------------------------------------------
# Comparison


def _as_bool(x: Any) -> bool | None:
    if isinstance(x, bool):
        return x
    if isinstance(x, str) and x.strip().lower() in ("true", "false"):
        return x.strip().lower() == "true"
    return None


def _as_number(x: Any) -> int | float | None:
    if isinstance(x, bool):
        return None
    if isinstance(x, int | float):
        return x
    if isinstance(x, str):
        try:
            return float(x.strip())
        except ValueError:
            return None
    return None


def _as_version(x: Any) -> tuple[int, ...] | None:
    if isinstance(x, tuple):
        return x
    if isinstance(x, list) and all(isinstance(p, int) for p in x):
        return tuple(x)
    if isinstance(x, str) and _VERSION.match(x.strip()):
        return to_version(x)
    if isinstance(x, int | float) and not isinstance(x, bool):
        return to_version(repr(x))
    return None


_VERSION_TEXT = re.compile(r"^(v[0-9]+|v?[0-9]+(\.[0-9]+)+)([-+.].*)?$")


def _is_version(x: Any) -> bool:
    """A tuple, or text that reads as a version (`v1`, `1.33`, `v1.33.5-eks-3025e55`)."""
    return isinstance(x, tuple) or (isinstance(x, str) and bool(_VERSION_TEXT.match(x.strip())))


def _pad(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    n = max(len(a), len(b))
    return a + (0,) * (n - len(a)), b + (0,) * (n - len(b))


def compare(observed: Any, op: str, expected: Any) -> bool:
    """`observed op expected` with typed coercion: booleans, numbers, versions, then strings.

    Raises ExprError when the two sides cannot be compared with `op`.
    """
    if op in ("in", "not-in"):
        if not isinstance(expected, list | tuple):
            raise ExprError(f"'{op}' needs a list, got {expected!r}")
        found = any(compare(observed, "==", e) for e in expected)
        return found if op == "in" else not found
    if op == "between":
        if not isinstance(expected, list | tuple) or len(expected) != 2:
            raise ExprError(f"'between' needs [low, high], got {expected!r}")
        return compare(observed, ">=", expected[0]) and compare(observed, "<=", expected[1])
    ba, bb = _as_bool(observed), _as_bool(expected)
    if isinstance(observed, bool) or isinstance(expected, bool):
        if ba is None or bb is None or op not in ("==", "!="):
            raise ExprError(f"cannot compare {observed!r} {op} {expected!r}")
        return (ba == bb) if op == "==" else (ba != bb)
    key_a: Any
    key_b: Any
    if _is_version(observed) or _is_version(expected):
        va, vb = _as_version(observed), _as_version(expected)
        if va is not None and vb is not None:
            key_a, key_b = _pad(va, vb)
        elif op in ("==", "!="):
            key_a, key_b = str(observed), str(expected)
        else:
            raise ExprError(f"cannot order {observed!r} and {expected!r}")
    else:
        na, nb = _as_number(observed), _as_number(expected)
        if na is not None and nb is not None:
            key_a, key_b = na, nb
        elif op in ("==", "!="):
            key_a, key_b = str(observed), str(expected)
        else:
            raise ExprError(f"cannot order {observed!r} and {expected!r}")
    if op == "==":
        return bool(key_a == key_b)
    if op == "!=":
        return bool(key_a != key_b)
    if op == ">=":
        return bool(key_a >= key_b)
    if op == "<=":
        return bool(key_a <= key_b)
    if op == ">":
        return bool(key_a > key_b)
    if op == "<":
        return bool(key_a < key_b)
    raise ExprError(f"unknown operator {op!r}")


# ---------------------------------------------------------------------------------------------
# Building checks from data


def _check_from(raw: Mapping[str, Any], source: Source) -> Check:
    if "measurement" in raw:
        observed = f"m({json.dumps(raw['measurement'])})"
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
    m = _CONSTRAINT_OP.match(c.value)
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
        observed=f"m({json.dumps(c.name)})",
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


def _finding(check: Check, result: Result, observed: Any, expected: str, message: str) -> Finding:
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
    )


def _static_expected(check: Check) -> str:
    if check.expected is None:
        return _expected_text(check.operator, check.value, check.unit)
    return f"{check.operator} {check.expected}"


def evaluate(check: Check, env: _Env) -> Finding:
    """One check against one environment. Never raises for data problems."""
    if check.component and env.result.component(check.component) is None:
        return _finding(check, Result.SKIPPED, None, _static_expected(check),
                        f"the recipe does not deploy {check.component}")  # fmt: skip
    stage = "when"
    try:
        if check.when is not None and not _truth(_eval(env, compile_expr(check.when))):
            return _finding(check, Result.SKIPPED, None, _static_expected(check),
                            f"does not apply: {check.when}")  # fmt: skip
        stage = "observed"
        observed = _eval(env, compile_expr(check.observed))
        stage = "expected"
        expected = (
            check.value if check.expected is None else _eval(env, compile_expr(check.expected))
        )
    except _Unavailable as e:
        return _finding(check, Result.UNAVAILABLE, None, _static_expected(check),
                        f"the snapshot has no reading {e.what}; missing data is never a pass")  # fmt: skip
    except _NotApplicable as e:
        return _finding(check, Result.SKIPPED, None, _static_expected(check), str(e))
    except _Unset as e:
        return _finding(check, Result.FAIL, None, _static_expected(check),
                        f"{e}: the resolved configuration has no value to check")  # fmt: skip
    except ExprError as e:
        result = Result.FAIL if check.owner is Owner.CATALOG else Result.UNAVAILABLE
        return _finding(check, result, None, _static_expected(check),
                        f"cannot evaluate {stage}: {e}")  # fmt: skip
    expected_text = _expected_text(check.operator, expected, check.unit)
    if check.fail_when_zero and any(
        _as_number(x) == 0 for x in (observed, expected) if not isinstance(x, bool)
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


def _observed_nodes(snapshot: Snapshot) -> int | None:
    value = snapshot.get("K8s.nodes.gpu")
    n = _as_number(value) if value is not None else None
    return int(n) if n is not None and float(n).is_integer() else None


def preflight(
    result: RecipeResult,
    profile: ScaleProfile,
    checks: CheckSet,
    snapshot: Snapshot,
    nodes: int | None = None,
) -> PreflightReport:
    """Evaluate every check of (recipe, profile, shared checks) against `snapshot`.

    `nodes` is the GPU-node count the user declared (`--nodes`); without it, expressions use the
    snapshot's `K8s.nodes.gpu`.
    """
    observed_nodes = _observed_nodes(snapshot)
    env = _Env(result=result, profile=profile, snapshot=snapshot, checkset=checks,
               nodes=nodes if nodes is not None else observed_nodes)  # fmt: skip
    findings = tuple(evaluate(c, env) for c in all_checks(result, profile, checks))
    return PreflightReport(
        recipe=result.name,
        digest=result.digest,
        profile=profile.name,
        profile_version=profile.version,
        nodes_declared=nodes,
        nodes_observed=observed_nodes,
        snapshot=snapshot.rel,
        findings=findings,
    )


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
    3: "infrastructure prerequisites unmet or unverified (the catalog configuration is not at fault)",
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
        "summary": {
            "checks": len(report.findings),
            "pass": report.count(Result.PASS),
            "fail": report.count(Result.FAIL),
            "skipped": report.count(Result.SKIPPED),
            "unavailable": report.count(Result.UNAVAILABLE),
            "catalogFailures": report.count(Result.FAIL, Owner.CATALOG),
            "infrastructureFailures": report.count(Result.FAIL, Owner.INFRASTRUCTURE),
            "exitCode": report.exit_code,
        },
        "findings": [f.to_json() for f in report.findings],
    }


def render_json(report: PreflightReport) -> str:
    return json.dumps(report_json(report), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


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
            if f.message:
                lines.append(f"    why: {f.message}")
            lines.append(f"    fix: {f.remediation}")
        elif f.result is Result.SKIPPED and f.message:
            lines.append(f"    skipped: {f.message}")
    code = report.exit_code
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


def render_github(report: PreflightReport) -> str:
    """GitHub Actions workflow annotations, one per failed or unavailable finding."""
    out: list[str] = []
    for f in report.findings:
        if f.result not in (Result.FAIL, Result.UNAVAILABLE):
            continue
        level = "error" if f.severity == "error" else "warning"
        msg = f"{f.result} ({f.owner}): {f.message or f.description} -- {f.remediation}"
        out.append(f"::{level} title=preflight {f.id}::{msg.replace(chr(10), ' ')}")
    out.append(
        f"::notice title=preflight::exit {report.exit_code}: {_EXIT_MEANING[report.exit_code]}"
    )
    return "\n".join(out) + "\n"


class Format(StrEnum):
    TEXT = "text"
    JSON = "json"
    GITHUB = "github"


def render(report: PreflightReport, fmt: Format) -> str:
    if fmt is Format.TEXT:
        return render_text(report)
    if fmt is Format.JSON:
        return render_json(report)
    if fmt is Format.GITHUB:
        return render_github(report)
    assert_never(fmt)
