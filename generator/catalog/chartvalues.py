"""The values a local chart's templates print, and whether a component's values are safe there.

A component's manifests are Helm templates rendered with the component's values (`index .Values
"<component>"`). A value printed as it is (`count: {{ $budget.count }}`) is pasted into the YAML
text, so a string holding a newline, `: ` or `{` adds keys, objects or whole documents (a
`ClusterRoleBinding` to `cluster-admin`) that no reviewer of the recipe sees. This module is the
one judge of that, used by `validate` (each values file and override, located), by the renderer
(the merged values, `--set` included, before a bundle is written) and by `bundle verify` (the
values.yaml a bundle ships):

- `uses(text)`: every value path a template reads in an action that prints, with how it is
  printed: `raw` (no quoting or typing function: the value must be a *plain-safe* scalar, one
  that YAML reads back as itself on one line), `int` / `number` (`| int`, `| int64`,
  `| float64`: the value must have that type, because Helm turns any other string into 0
  silently), or not at all (`| quote`, `| toYaml`, `| toJson`, comparisons: any value is safe).
- `problems(values, uses)`: (JSON path, message, rule) for every value that breaks its use.

The project's own templates print every value through a quoting or typing function
(tests/test_chart_values.py scans them and renders every local chart with hostile values with
the pinned Helm); upstream AICR's templates print some values raw, which this check then guards.
Paths are tuples of keys; `*` stands for every item of a list (`range`) or value of a mapping.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from generator.catalog.manifests import TEMPLATE, template_actions
from generator.core import safeio
from generator.core.errors import Diagnostic, LoadError
from generator.core.records import Catalog, ComponentRef, Document, Overlay
from generator.core.yamlio import parse_yaml

RAW, INT, NUMBER = "raw", "int", "number"
ANY = "*"
# functions whose output is a quoted, typed or serialised value: whatever goes in, it stays one
# value in the YAML text
_SAFE_LAST = frozenset({"quote", "squote", "toJson", "toRawJson", "b64enc", "sha256sum"})
# `indent N` / `nindent N` (N > 0) last: every line of the value starts N columns in, so it
# cannot start a document or a key left of where it is printed (a block scalar's text stays
# text); it can still add keys below a key it is printed after, which the project's own
# templates never do (tests/test_chart_values.py)
_INDENTED = frozenset({"indent", "nindent"})
_TYPED = {"int": INT, "int64": INT, "float64": NUMBER}
# serialisers whose output may be re-indented afterwards and stay safe
_SERIALISERS = frozenset({"toYaml", "toJson", "toPrettyJson", "toRawJson", "quote", "squote"})
_AFTER_SERIALISER = frozenset({"indent", "nindent", "trim", "trimSuffix"})
# functions whose output is a boolean or a number, whatever their arguments
_SCALAR_OUT = frozenset(
    {"eq", "ne", "lt", "le", "gt", "ge", "and", "or", "not", "hasKey", "empty", "len",
     "contains", "hasPrefix", "hasSuffix", "semverCompare", "kindIs", "typeIs"}
)  # fmt: skip
_CONTROL = frozenset(
    {"if", "else", "end", "define", "block", "template", "include", "break", "continue"}
)
_TOKEN = re.compile(
    r'"(?:[^"\\]|\\.)*"|`[^`]*`|\'(?:[^\'\\]|\\.)*\'|:=|=|\||\(|\)|,|[^\s|()=,:]+|:'
)
_REF = re.compile(r"^(\$[A-Za-z0-9_]*|\.Values|\.)((?:\.[A-Za-z0-9_-]+)*)$")


@dataclass(frozen=True, slots=True)
class Use:
    """One value a template prints: its path under the component's values and how."""

    path: tuple[str, ...]
    how: str  # RAW, INT or NUMBER
    line: int  # line of the action in the template


def _rooted(tok: str) -> str:
    """`$.Values…` (the root context's values, reachable inside `with` and `range`, where `.`
    is rebound) is `.Values…`: `$` is always the root context in a Helm template."""
    return tok[1:] if tok == "$.Values" or tok.startswith("$.Values.") else tok


def _unquote(tok: str) -> str | None:
    if len(tok) >= 2 and tok[0] == tok[-1] and tok[0] in "\"`'":
        return tok[1:-1]
    return None


class _Scope:
    """Variables bound to value paths, and the path `.` stands for (None: not the values)."""

    def __init__(self, component: str) -> None:
        self.component = component
        self.vars: dict[str, tuple[str, ...] | None] = {"$": None}
        self.dot: list[tuple[str, ...] | None] = [None]
        self.blocks: list[str] = []

    def ref(self, tok: str) -> tuple[str, ...] | None:
        """The value path token `tok` (`$v.a.b`, `.Values.c.a`, `.a`) stands for, else None."""
        tok = _rooted(tok)
        # `.a.b` (a field of `.` inside `with`/`range`) is the dot followed by `.a.b`
        m = _REF.fullmatch(tok) or (_REF.fullmatch("." + tok) if tok[:1] == "." else None)
        if m is None:
            return None
        head, rest = m.group(1), [p for p in m.group(2).split(".") if p]
        if head == ".Values":
            if not rest or rest[0] != self.component:
                return None
            return tuple(rest[1:])
        if head == ".":  # (a token `.Values.x` has the head `.Values`: never `.` + `Values`)
            base = self.dot[-1]
            return None if base is None else (*base, *rest)
        base = self.vars.get(head)
        return None if base is None else (*base, *rest)


def _split_pipes(tokens: list[str]) -> list[list[str]]:
    out: list[list[str]] = [[]]
    depth = 0
    for t in tokens:
        if t == "(":
            depth += 1
        elif t == ")":
            depth -= 1
        if t == "|" and depth == 0:
            out.append([])
        else:
            out[-1].append(t)
    return out


def _path_of(scope: _Scope, cmd: list[str]) -> tuple[str, ...] | None:
    """The value path one command yields: a reference, `index X "k" …`, `dig "k" … default X`,
    `.Values | get`-less forms only; None when it yields no value path."""
    cmd = [t for t in cmd if t not in "()"]
    if not cmd:
        return None
    head = cmd[0]
    if head == "index" and len(cmd) >= 2:
        base = _index_base(scope, cmd[1])
        keys = [_unquote(t) for t in cmd[2:]]
        if base is None or any(k is None for k in keys):
            return None
        return (*base, *(k for k in keys if k is not None))
    if head == "dig" and len(cmd) >= 3:
        base = scope.ref(cmd[-1])
        keys = [_unquote(t) for t in cmd[1:-2]]
        if base is None or any(k is None for k in keys):
            return None
        return (*base, *(k for k in keys if k is not None))
    if len(cmd) == 1:
        return scope.ref(head)
    return None


def _index_base(scope: _Scope, tok: str) -> tuple[str, ...] | None:
    """`index .Values "<component>"`: the root of the component's values."""
    if _rooted(tok) == ".Values":
        return ()  # the key that follows must be the component: checked by the caller's keys
    return scope.ref(tok)


def _strip_component(scope: _Scope, cmd: list[str], path: tuple[str, ...] | None) -> Any:
    """`index .Values "<component>" …` names the component first: drop it (another key: None)."""
    if path is None or [_rooted(t) for t in cmd if t not in "()"][:2] != ["index", ".Values"]:
        return path
    if not path or path[0] != scope.component:
        return None
    return path[1:]


def _refs(scope: _Scope, tokens: list[str]) -> Iterator[tuple[str, ...]]:
    """Every value path the tokens of one pipeline mention (arguments included)."""
    for cmd in _split_pipes(tokens):
        path = _strip_component(scope, cmd, _path_of(scope, cmd))
        if path is not None:
            yield path
            continue
        for t in cmd:
            p = scope.ref(t)
            if p is not None:
                yield p


def _printed_as(funcs: list[str]) -> str | None:
    """How a printing pipeline prints its values: RAW, INT, NUMBER, or None (safely)."""
    funcs = [f for f in funcs if f != "ref"]
    if not funcs:  # a lookup alone
        return RAW
    if funcs[0] in _SCALAR_OUT:
        return None
    last = funcs[-1]
    if last in _TYPED:
        return _TYPED[last]
    if last in _SAFE_LAST or last in _INDENTED:
        return None
    for i, f in enumerate(funcs):
        if f in _SERIALISERS and all(g in _AFTER_SERIALISER for g in funcs[i + 1 :]):
            return None
    return RAW


def _functions(tokens: list[str]) -> list[str]:
    """The function of each command of a pipeline; a lookup (a reference, a literal, `index`,
    `dig`) counts as `ref`."""
    out: list[str] = []
    for cmd in _split_pipes(tokens):
        words = [t for t in cmd if t not in "()"]
        if not words:
            continue
        head = words[0]
        lookup = head in ("index", "dig") or _REF.fullmatch(head) or _unquote(head) is not None
        out.append("ref" if lookup else head)
    return out


def _assign(scope: _Scope, tokens: list[str]) -> None:
    """`$v := <pipeline>` (or `=`): bind $v to the path the pipeline yields (None otherwise)."""
    name, rhs = tokens[0], tokens[2:]
    pipes = _split_pipes(rhs)
    path = None
    if len(pipes) == 1:
        path = _strip_component(scope, pipes[0], _path_of(scope, pipes[0]))
    scope.vars[name] = path


@functools.lru_cache(maxsize=4096)
def uses(text: str, component: str) -> tuple[Use, ...]:
    """Every value of `component` that template `text` prints, with how it prints it (memoised:
    a build renders the same templates for every recipe, profile and deployer)."""
    scope = _Scope(component)
    out: list[Use] = []
    for start, body in template_actions(text):
        if body.startswith("/*"):
            continue
        tokens = _TOKEN.findall(body)
        if not tokens:
            continue
        line = text.count("\n", 0, start) + 1
        kw = tokens[0]
        if kw in ("range", "with"):
            _open(scope, kw, tokens[1:])
            continue
        if kw in ("if", "define", "block"):
            scope.blocks.append(kw)
            scope.dot.append(scope.dot[-1] if kw == "if" else None)
            continue
        if kw == "end":
            if scope.blocks:
                scope.blocks.pop()
                scope.dot.pop()
            continue
        if kw in _CONTROL:
            continue
        if len(tokens) >= 2 and tokens[0].startswith("$") and tokens[1] in (":=", "="):
            _assign(scope, tokens)
            continue
        how = _printed_as(_functions(tokens))
        if how is None:
            continue
        out.extend(Use(p, how, line) for p in _refs(scope, tokens))
    return tuple(dict.fromkeys(out))


def _open(scope: _Scope, kw: str, tokens: list[str]) -> None:
    """`range`/`with`: `.` becomes each item (`range`) or the value (`with`) of the pipeline;
    `range $i, $e := X` binds $e instead."""
    scope.blocks.append(kw)
    if ":=" in tokens:
        names = [t for t in tokens[: tokens.index(":=")] if t.startswith("$")]
        rhs = tokens[tokens.index(":=") + 1 :]
        pipes = _split_pipes(rhs)
        path = _strip_component(scope, pipes[0], _path_of(scope, pipes[0])) if pipes else None
        item = None if path is None else ((*path, ANY) if kw == "range" else path)
        if names:
            scope.vars[names[-1]] = item
        scope.dot.append(item)
        return
    pipes = _split_pipes(tokens)
    path = _strip_component(scope, pipes[0], _path_of(scope, pipes[0])) if len(pipes) == 1 else None
    scope.dot.append(None if path is None else ((*path, ANY) if kw == "range" else path))


# --- judging values against the uses ----------------------------------------------------------


def plain_safe(value: Any) -> bool:
    """Whether `value`, pasted into YAML text as `key: <value>`, stays that one scalar: a string
    on one line that YAML reads back as itself or as another scalar (`yes`, `1.0`), a number, a
    boolean or nothing; the empty string, which prints nothing, adds no structure either."""
    if value is None or isinstance(value, bool | int | float):
        return True
    if not isinstance(value, str):
        return False
    if value == "":
        return True  # prints nothing: the key is null (or the template's `default`), no structure
    if any(c in value for c in "\t\n\r\x85\u2028\u2029") or value != value.strip():
        return False
    if "{{" in value or "}}" in value:
        return False
    try:  # the one bounded YAML reader, as for every YAML text
        back = parse_yaml(f"k: {value}\n", "value").data
    except LoadError:
        return False
    # one line starting `k: ` is a mapping of the one key `k` or no YAML at all (a second key,
    # a directive or another document needs a line of its own)
    read = back["k"]
    # a string reads back as itself; `yes`, `1.0` or `null` read back as another scalar type,
    # which changes no structure (inside a block scalar it is text anyway)
    return read == value if isinstance(read, str) else isinstance(read, bool | int | float | None)


def _at(values: Any, path: tuple[str, ...], where: str) -> Iterator[tuple[str, Any]]:
    """(JSON path, value) of every value `path` reaches in `values` (`*`: each item)."""
    if not path:
        yield where, values
        return
    key, rest = path[0], path[1:]
    if key == ANY:
        if isinstance(values, list):
            for i, v in enumerate(values):
                yield from _at(v, rest, f"{where}[{i}]")
        elif isinstance(values, Mapping):
            for k in sorted(values, key=str):
                yield from _at(values[k], rest, _child(where, str(k)))
        return
    if isinstance(values, Mapping) and key in values:
        yield from _at(values[key], rest, _child(where, key))


def _child(where: str, key: str) -> str:
    return f"{where}.{key}"  # as located documents name their paths (core/yamlio)


def problems(values: Any, found: tuple[Use, ...], where: str = "$") -> list[tuple[str, str, str]]:
    """(JSON path under `where`, message, rule) for every value that breaks how a template
    prints it; `values` is the component's values or one layer of them (a values file, the
    overrides), so a path a layer does not set is not a problem."""
    out: dict[str, tuple[str, str, str]] = {}
    for use in found:
        for jp, value in _at(values, use.path, where):
            msg = _problem(use, value)
            if msg is not None and jp not in out:
                out[jp] = (jp, msg, "values.type" if use.how != RAW else "values.unsafe-print")
    return [out[k] for k in sorted(out)]


def _problem(use: Use, value: Any) -> str | None:
    name = ".".join(use.path)
    if use.how == INT:
        if isinstance(value, bool) or not isinstance(value, int):
            return (
                f"{name} must be an integer (a template prints it with `| int`), got {value!r:.60}"
            )
        return None
    if use.how == NUMBER:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return f"{name} must be a number (a template prints it with `| float64`), got {value!r:.60}"
        return None
    if plain_safe(value):
        return None
    what = type(value).__name__ if isinstance(value, list | dict) else repr(value)[:60]
    return (
        f"{name} is printed unquoted by a manifest template, so it must be a one-line plain "
        f"scalar that YAML reads back as itself; got {what} (a newline, ': ', '#', a quote or "
        "a bracket would add YAML the recipe does not show)"
    )


# --- the catalog: every values layer, located --------------------------------------------------


def _refs_by_component(catalog: Catalog) -> dict[str, list[tuple[Overlay, ComponentRef]]]:
    out: dict[str, list[tuple[Overlay, ComponentRef]]] = {}
    for ov in (*catalog.overlays.values(), *catalog.mixins.values()):
        for ref in ov.component_refs:
            out.setdefault(ref.name, []).append((ov, ref))
    return out


def _template_uses(catalog: Catalog, component: str, rels: set[str]) -> tuple[Use, ...]:
    root = Path(catalog.root)
    found: list[Use] = []
    for rel in sorted(rels):
        info = catalog.manifests.get(rel)
        if info is None or info.kind != TEMPLATE:
            continue
        try:
            raw = safeio.read(root / rel, root=root, where="the catalog")
        except safeio.Refusal:
            continue  # `load` reported it
        found.extend(uses(raw.decode("utf-8", "replace"), component))
    return tuple(dict.fromkeys(found))


def catalog_problems(catalog: Catalog) -> Iterator[Diagnostic]:
    """Every values file and override of the catalog that sets a value a component's manifest
    templates print unsafely (see `problems`), located in the file that sets it."""
    for component, refs in sorted(_refs_by_component(catalog).items()):
        rels = {r for _, ref in refs for r in (*ref.manifest_files, *ref.pre_manifest_files)}
        found = _template_uses(catalog, component, rels)
        if not found:
            continue
        layers: dict[str, Document] = {}
        base = catalog.files.get(f"components/{component}/values.yaml")
        if base is not None:
            layers[base.rel] = base
        for _, ref in refs:
            doc = catalog.files.get(ref.values_file) if ref.values_file else None
            if doc is not None:
                layers[doc.rel] = doc
        for doc in layers.values():
            yield from _located(doc, doc.data, found, "$")
        for ov, ref in refs:
            if ref.overrides:
                yield from _located(ov.doc, ref.overrides, found, f"{ref.json_path}.overrides")


def _located(
    doc: Document, values: Any, found: tuple[Use, ...], where: str
) -> Iterator[Diagnostic]:
    for jp, msg, rule in problems(values, found, where):
        line, col = doc.locate(jp)
        yield Diagnostic(doc.rel, line, col, jp, msg, rule)


def folder_problems(
    component: str, values: Any, templates: tuple[tuple[str, bytes], ...], where: str
) -> list[tuple[str, str, str]]:
    """`problems` of a local chart: the component's merged values (files, overrides, `--set`)
    against what its templates print; JSON paths under `where`."""
    found = tuple(
        dict.fromkeys(
            u for _, data in templates for u in uses(data.decode("utf-8", "replace"), component)
        )
    )
    return problems(values, found, where) if found else []
