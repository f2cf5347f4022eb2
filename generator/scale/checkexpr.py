"""The check expression language of the scale contract.

Checks (catalog/scale/checks.yaml, profile prerequisites) compute their observed and expected
sides with a small, side-effect-free subset of Python, parsed with `ast` and evaluated by a
whitelist walker, never `eval`: literals, names, lists, arithmetic, comparisons, `and`/`or`/`not`,
`a if c else b`, and the functions in `FUNCTIONS`. `compare` is the one comparison both the
language and the check operators use: booleans, then versions, then numbers, then strings.

The language sees a `Scope` (readings, resolved values, criteria, names, tables), not the
pipeline's records, so it can be tested and reused on its own.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any


class ExprError(Exception):
    """An expression that cannot be parsed or evaluated."""


class Unavailable(Exception):
    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what


class NotApplicable(Exception):
    pass


class Unset(Exception):
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
    m = _QUANTITY.fullmatch(str(q))
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
class Scope:
    """What an expression can see. Independent of the pipeline's records.

    `names` holds the constants and derived names (`nodes` absent when unknown); `components` maps
    each deployed component to its resolved values; `criteria` maps each dimension to its value or
    `any`.
    """

    readings: Mapping[str, Any]
    components: Mapping[str, Mapping[str, Any]]
    criteria: Mapping[str, str]
    names: Mapping[str, Any]
    tables: Mapping[str, Mapping[str, Any]]
    # the reading that stands in for a missing name (e.g. nodes -> K8s.nodes.gpu)
    name_sources: Mapping[str, str]


def _lookup_path(values: Any, path: str) -> Any:
    cur = values
    for part in path.split("."):
        if not isinstance(cur, Mapping) or part not in cur:
            return _MISSING
        cur = cur[part]
    return _MISSING if cur is None else cur


def _name(env: Scope, name: str) -> Any:
    if name in env.names:
        return env.names[name]
    if name in env.name_sources:
        raise Unavailable(env.name_sources[name])
    raise ExprError(f"unknown name {name!r}")


def _call(env: Scope, node: ast.Call) -> Any:
    assert isinstance(node.func, ast.Name)
    fname = node.func.id
    if fname == "v":  # lazy default: v(component, path[, default])
        if len(node.args) not in (2, 3):
            raise ExprError("v() takes a component, a path and an optional default")
        comp, path = _eval(env, node.args[0]), _eval(env, node.args[1])
        values = env.components.get(str(comp))
        if values is None:
            raise NotApplicable(f"the recipe does not deploy {comp}")
        found = _lookup_path(values, str(path))
        if found is not _MISSING:
            return found
        if len(node.args) == 3:
            return _eval(env, node.args[2])
        raise Unset(f"{comp} does not set {path}")
    if fname == "lookup":  # lazy default: lookup(table, key[, default])
        if len(node.args) not in (2, 3):
            raise ExprError("lookup() takes a table, a key and an optional default")
        table, key = _eval(env, node.args[0]), _eval(env, node.args[1])
        rows = env.tables.get(str(table))
        if rows is None:
            raise ExprError(f"unknown table {table!r}")
        if str(key) in rows:
            return rows[str(key)]
        if len(node.args) == 3:
            return _eval(env, node.args[2])
        raise ExprError(f"table {table!r} has no row {key!r}")
    args = [_eval(env, a) for a in node.args]
    return FUNCTIONS[fname](env, *args)


def _m(env: Scope, path: Any) -> Any:
    value = env.readings.get(str(path))
    if value is None:
        raise Unavailable(str(path))
    return value


def _criteria(env: Scope, dim: Any) -> str:
    return env.criteria.get(str(dim), "any")


def _fn(f: Callable[..., Any]) -> Callable[..., Any]:
    def wrapped(env: Scope, *args: Any) -> Any:
        try:
            return f(*args)
        except (TypeError, ValueError, ZeroDivisionError, OverflowError) as e:
            raise ExprError(str(e)) from None

    return wrapped


FUNCTIONS: Mapping[str, Callable[..., Any]] = {
    "m": _m,
    "has": lambda env, path: str(path) in env.readings,
    "v": lambda env, *a: None,  # handled lazily in _call
    "lookup": lambda env, *a: None,  # handled lazily in _call
    "component": lambda env, name: str(name) in env.components,
    "criteria": _criteria,
    "count": _fn(to_count),
    "percent": _fn(lambda x: f"{_num(x)}%"),  # percent(10) -> "10%", for count()
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


def _eval(env: Scope, node: ast.AST) -> Any:
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
            return not truth(x)
        return -_num(x) if isinstance(node.op, ast.USub) else _num(x)
    if isinstance(node, ast.BoolOp):
        if isinstance(node.op, ast.And):
            return all(truth(_eval(env, v)) for v in node.values)
        return any(truth(_eval(env, v)) for v in node.values)
    if isinstance(node, ast.Compare):
        left = _eval(env, node.left)
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = _eval(env, right_node)
            if not compare(left, _CMPOPS[type(op)], right):
                return False
            left = right
        return True
    if isinstance(node, ast.IfExp):
        return _eval(env, node.body if truth(_eval(env, node.test)) else node.orelse)
    if isinstance(node, ast.Call):
        return _call(env, node)
    raise ExprError(f"{type(node).__name__} is not allowed")  # pragma: no cover


def truth(x: Any) -> bool:
    """Truthiness of an evaluated value; the strings "", "false", "0" and "no" are false."""
    if isinstance(x, str):
        return x.strip().lower() not in ("", "false", "0", "no")
    return bool(x)


def _as_bool(x: Any) -> bool | None:
    if isinstance(x, bool):
        return x
    if isinstance(x, str) and x.strip().lower() in ("true", "false"):
        return x.strip().lower() == "true"
    return None


def as_number(x: Any) -> int | float | None:
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
    return isinstance(x, tuple) or (isinstance(x, str) and bool(_VERSION_TEXT.fullmatch(x.strip())))


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
        na, nb = as_number(observed), as_number(expected)
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


def evaluate_expr(text: str, scope: Scope) -> Any:
    """The value of expression `text` in `scope`.

    Raises Unavailable (a reading is missing), NotApplicable (a component is not deployed), Unset
    (a resolved value is absent and has no default) or ExprError (anything else).
    """
    return _eval(scope, compile_expr(text))
