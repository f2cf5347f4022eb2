"""`known_valid`: a compiled yes/no check of a JSON Schema, in front of jsonschema.

Reference: `validator.is_valid(instance)` (jsonschema). jsonschema walks every node through
generic machinery, about 1 ms per evidence statement, more than the whole signature check. The
statement schemas use a small set of keywords, so each schema is compiled once into plain Python
predicates that answer only "valid?". The answer is used in one direction only: True means
jsonschema would find no error; False means "ask jsonschema", whose errors are what is reported.
So the predicates must never accept what jsonschema rejects: they follow jsonschema's keyword
functions (jsonschema/_keywords.py) and its draft 2020-12 type checker, `pattern` with ECMA
anchors (`generator.core.names.schema_regex`, as the catalog's validators use), and a schema with
any other keyword (or a `$ref` that was not inlined, a non-string enum or const) gets no compiled
check at all: `known_valid` is then always False.

Measured gain: `aicr-catalog evidence verify --jobs 1` of the 2,000 statements of a synthetic
100-recipe catalog, with the compiled check vs jsonschema alone: median 6.8 s vs 11.9 s CPU
(whole process, three paired runs), ratio 0.57.

`known_valid` asks `generated_check`: the same predicate written as the source of one function
(reference: `compiled_check`, the closures; see the comment above `generated_check`).
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Mapping
from typing import Any

from jsonschema.protocols import Validator

from generator.core.names import schema_regex

Check = Callable[[Any], bool]
_ANNOTATIONS = frozenset({"$schema", "$id", "title", "description", "$comment", "examples"})

# the compiled check of each validator's schema, by the validator's id (the validator is kept)
_COMPILED: dict[int, tuple[Validator, Check | None]] = {}


def known_valid(validator: Validator, instance: Any) -> bool:
    """True only when `validator.is_valid(instance)` is True (and jsonschema may be skipped);
    False when the instance is invalid, or when the schema has no compiled check."""
    entry = _COMPILED.get(id(validator))
    if entry is None or entry[0] is not validator:
        entry = _COMPILED[id(validator)] = (validator, generated_check(validator.schema))
    check = entry[1]
    return check is not None and check(instance)


class Unsupported(Exception):
    """The schema uses something the compiled check does not model: use jsonschema alone."""


def compiled_check(schema: Any) -> Check | None:
    """The predicate of `schema`, or None when it uses what the compiled check does not model."""
    try:
        return compile_schema(schema)
    except Unsupported:
        return None


def _is_integer(x: Any) -> bool:
    """jsonschema's draft 6+ "integer": an int that is not a bool, or an integral float."""
    if isinstance(x, bool):
        return False
    return isinstance(x, int) or (isinstance(x, float) and x.is_integer())


def _is_number(x: Any) -> bool:
    """jsonschema's "number": any numbers.Number but a bool (an exact int or float: at once)."""
    if type(x) is float or type(x) is int:
        return True
    return isinstance(x, numbers.Number) and not isinstance(x, bool)


_TYPES: dict[str, Check] = {
    "array": lambda x: isinstance(x, list),
    "boolean": lambda x: isinstance(x, bool),
    "integer": _is_integer,
    "null": lambda x: x is None,
    "number": _is_number,
    "object": lambda x: isinstance(x, dict),
    "string": lambda x: isinstance(x, str),
}


def _all(checks: list[Check]) -> Check:
    if not checks:
        return lambda x: True
    if len(checks) == 1:
        return checks[0]
    every = tuple(checks)

    def check_all(x: Any) -> bool:
        for check in every:
            if not check(x):
                return False
        return True

    return check_all


def compile_schema(schema: Any) -> Check:
    """A predicate that is True only for instances `schema` accepts (raises Unsupported)."""
    if schema is True:
        return lambda x: True
    if schema is False:
        return lambda x: False
    if not isinstance(schema, dict):
        raise Unsupported(f"schema {schema!r}")
    leaf = _compile_leaf(schema)
    if leaf is not None:
        return leaf
    checks: list[Check] = []
    fused = _compile_object(schema)
    if fused is not None:
        checks.append(fused)
    for key, value in schema.items():
        if key in _ANNOTATIONS or key in ("then", "else"):  # then/else: with "if"
            continue
        if fused is not None and key in _OBJECT_KEYS:
            continue
        keyword = _KEYWORDS.get(key)
        if keyword is None:
            raise Unsupported(f"keyword {key!r}")
        checks.append(keyword(value, schema))
    return _all(checks)


_OBJECT_KEYS = frozenset({"type", "required", "properties", "additionalProperties"})


def _compile_object(schema: Mapping[str, Any]) -> Check | None:
    """`type: object` with `required`, `properties` and `additionalProperties` in one pass over
    the object's members (each member is judged by its property's schema, or by
    `additionalProperties` when no property names it: there is no `patternProperties`)."""
    if schema.get("type") != "object" or "patternProperties" in schema:
        return None
    required = tuple(_strings(schema.get("required", [])))
    raw = schema.get("properties", {})
    if not isinstance(raw, dict):
        raise Unsupported("properties")
    props = {name: compile_schema(sub) for name, sub in raw.items()}
    extra = schema.get("additionalProperties", True)
    closed = extra is False
    other = None if extra is True or closed else compile_schema(extra)

    def check_object(x: Any) -> bool:
        if not isinstance(x, dict):
            return False
        for name in required:
            if name not in x:
                return False
        for key, value in x.items():
            check = props.get(key)
            if check is None:
                if closed or (other is not None and not other(value)):
                    return False
            elif not check(value):
                return False
        return True

    return check_object


_STRING_KEYS = frozenset({"type", "minLength", "maxLength", "pattern"})
_NUMBER_KEYS = frozenset({"type", "minimum", "maximum"})


def _compile_leaf(schema: Mapping[str, Any]) -> Check | None:
    """One function for the commonest leaves (a string with bounds and a pattern, an integer or
    number with bounds): the same tests as the keyword functions, without a call for each."""
    keys = frozenset(schema) - _ANNOTATIONS
    kind = schema.get("type")
    if kind == "string" and keys <= _STRING_KEYS:
        return _string_leaf(schema)
    if kind in ("integer", "number") and keys <= _NUMBER_KEYS:
        return _number_leaf(schema, _TYPES[kind])
    return None


def _string_leaf(schema: Mapping[str, Any]) -> Check:
    shortest = _count(schema.get("minLength", 0))
    longest = _count(schema["maxLength"]) if "maxLength" in schema else None
    pattern = schema.get("pattern")
    if pattern is not None and not isinstance(pattern, str):
        raise Unsupported(f"pattern {pattern!r}")
    search = schema_regex(pattern).search if pattern is not None else None

    def check_string(x: Any) -> bool:
        if not isinstance(x, str) or len(x) < shortest:
            return False
        if longest is not None and len(x) > longest:
            return False
        return search is None or search(x) is not None

    return check_string


def _number_leaf(schema: Mapping[str, Any], is_kind: Check) -> Check:
    least, most = schema.get("minimum"), schema.get("maximum")
    for bound in (least, most):
        if bound is not None and not _is_number(bound):
            raise Unsupported(f"bound {bound!r}")

    def check_number(x: Any) -> bool:
        return is_kind(x) and (least is None or not x < least) and (most is None or not x > most)

    return check_number


def _strings(value: Any) -> frozenset[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise Unsupported(f"non-string values {value!r}")
    return frozenset(value)


def _count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise Unsupported(f"non-integer bound {value!r}")
    return value


def _bound(value: Any) -> Any:
    if not _is_number(value):
        raise Unsupported(f"bound {value!r}")
    return value


# --- one function per keyword: (the keyword's value, the schema holding it) -> predicate ------


def _type(value: Any, schema: Mapping[str, Any]) -> Check:
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not names or any(n not in _TYPES for n in names):
        raise Unsupported(f"type {value!r}")
    tests = [_TYPES[n] for n in names]
    return tests[0] if len(tests) == 1 else (lambda x: any(t(x) for t in tests))


def _enum(value: Any, schema: Mapping[str, Any]) -> Check:
    allowed = _strings(value)
    return lambda x: isinstance(x, str) and x in allowed


def _const(value: Any, schema: Mapping[str, Any]) -> Check:
    if not isinstance(value, str):
        raise Unsupported(f"const {value!r}")
    return lambda x: isinstance(x, str) and x == value


def _required(value: Any, schema: Mapping[str, Any]) -> Check:
    names = tuple(_strings(value)) if value else ()
    return lambda x: not isinstance(x, dict) or all(n in x for n in names)


def _properties(value: Any, schema: Mapping[str, Any]) -> Check:
    if not isinstance(value, dict):
        raise Unsupported("properties")
    props = tuple((name, compile_schema(sub)) for name, sub in value.items())

    def check_properties(x: Any) -> bool:
        if isinstance(x, dict):
            for name, check in props:
                if name in x and not check(x[name]):
                    return False
        return True

    return check_properties


def _additional_properties(value: Any, schema: Mapping[str, Any]) -> Check:
    if "patternProperties" in schema:
        raise Unsupported("patternProperties")
    known = frozenset(schema.get("properties", {}))
    if value is False:
        return lambda x: not isinstance(x, dict) or all(k in known for k in x)
    extra = compile_schema(value)

    def check_additional(x: Any) -> bool:
        if isinstance(x, dict):
            for k, v in x.items():
                if k not in known and not extra(v):
                    return False
        return True

    return check_additional


def _property_names(value: Any, schema: Mapping[str, Any]) -> Check:
    names_ok = compile_schema(value)
    return lambda x: not isinstance(x, dict) or all(names_ok(k) for k in x)


def _items(value: Any, schema: Mapping[str, Any]) -> Check:
    if "prefixItems" in schema:
        raise Unsupported("prefixItems")
    item = compile_schema(value)

    def check_items(x: Any) -> bool:
        if isinstance(x, list):
            for v in x:
                if not item(v):
                    return False
        return True

    return check_items


def _min_items(value: Any, schema: Mapping[str, Any]) -> Check:
    least = _count(value)
    return lambda x: not isinstance(x, list) or len(x) >= least


def _min_length(value: Any, schema: Mapping[str, Any]) -> Check:
    shortest = _count(value)
    return lambda x: not isinstance(x, str) or len(x) >= shortest


def _max_length(value: Any, schema: Mapping[str, Any]) -> Check:
    longest = _count(value)
    return lambda x: not isinstance(x, str) or len(x) <= longest


def _minimum(value: Any, schema: Mapping[str, Any]) -> Check:
    least = _bound(value)
    return lambda x: not _is_number(x) or not x < least


def _maximum(value: Any, schema: Mapping[str, Any]) -> Check:
    most = _bound(value)
    return lambda x: not _is_number(x) or not x > most


def _pattern(value: Any, schema: Mapping[str, Any]) -> Check:
    if not isinstance(value, str):
        raise Unsupported(f"pattern {value!r}")
    search = schema_regex(value).search  # the `pattern` keyword, ECMA anchors
    return lambda x: not isinstance(x, str) or search(x) is not None


def _all_of(value: Any, schema: Mapping[str, Any]) -> Check:
    if not isinstance(value, list):
        raise Unsupported("allOf")
    return _all([compile_schema(sub) for sub in value])


def _if(value: Any, schema: Mapping[str, Any]) -> Check:
    condition = compile_schema(value)
    then = compile_schema(schema.get("then", True))
    otherwise = compile_schema(schema.get("else", True))
    return lambda x: then(x) if condition(x) else otherwise(x)


_KEYWORDS: dict[str, Callable[[Any, Mapping[str, Any]], Check]] = {
    "type": _type,
    "enum": _enum,
    "const": _const,
    "required": _required,
    "properties": _properties,
    "additionalProperties": _additional_properties,
    "propertyNames": _property_names,
    "items": _items,
    "minItems": _min_items,
    "minLength": _min_length,
    "maxLength": _max_length,
    "minimum": _minimum,
    "maximum": _maximum,
    "pattern": _pattern,
    "allOf": _all_of,
    "if": _if,
}


# --- the same predicate as one generated function ---------------------------------------------
#
# `compile_schema` composes one closure per keyword and per property: the predicate of a
# statement with 13 KPIs and 16 checks costs ~250 Python calls. `generated_check` writes the same
# tests, keyword by keyword, as the source of one function (a `for` per array, a local per value,
# no guard of a type its `type` keyword has already required), so a value costs a few bytecodes
# and no call. Reference: `compiled_check` (tests/test_fast_schemacheck.py holds the two and
# jsonschema equal). What lies deeper than `_MAX_DEPTH` (Python's limits on nested blocks and
# indentation) and every `if` condition are checked by the closure `compile_schema` makes.
# The predicates of the 4,000 statements of 200 x 4,000, best of 3 in one process: 41-43 ->
# 23-24 us each. `statement.parse_statement` of those 4,000 payloads, the first pass of a new
# process (as a build parses each once), three interleaved pairs: 150.1/151.6/148.0 ->
# 129.7/125.3/125.3 us a statement; the 4,000 parsed statements hold 65.04 MB either way.

_MISSING = object()
_MAX_LOOPS = 12  # `for` blocks nested in one function (CPython allows 20)
_MAX_DEPTH = 40  # indentation levels (CPython allows 100)


class _Source:
    """The lines of one generated function and the objects its source names."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.names: dict[str, Any] = {
            "_MISSING": _MISSING,
            "_is_integer": _is_integer,
            "_is_number": _is_number,
        }
        self.count = 0

    def name(self, value: Any) -> str:
        self.count += 1
        name = f"_c{self.count}"
        self.names[name] = value
        return name

    def local(self) -> str:
        self.count += 1
        return f"v{self.count}"


# each as `_TYPES` has it
_TYPE_TESTS: dict[str, str] = {
    "array": "isinstance({x}, list)",
    "boolean": "isinstance({x}, bool)",
    "integer": "(type({x}) is int or _is_integer({x}))",
    "null": "{x} is None",
    "number": "(type({x}) is float or type({x}) is int or _is_number({x}))",
    "object": "isinstance({x}, dict)",
    "string": "isinstance({x}, str)",
}
# the type a keyword applies to (it passes any value of another type)
_APPLIES_TO: dict[str, str] = {
    "required": "object",
    "properties": "object",
    "additionalProperties": "object",
    "propertyNames": "object",
    "items": "array",
    "minItems": "array",
    "minLength": "string",
    "maxLength": "string",
    "pattern": "string",
    "minimum": "number",
    "maximum": "number",
}


def _emit(
    src: _Source, schema: Any, x: str, indent: str, loops: int, known: str | None = None
) -> None:
    """Append the lines that `return False` when the value named `x` fails `schema` (`known`:
    the JSON type an enclosing test has already required of `x`)."""
    out = src.lines.append
    if schema is True:
        return
    if schema is False:
        out(f"{indent}return False")
        return
    if not isinstance(schema, dict):
        raise Unsupported(f"schema {schema!r}")
    if loops >= _MAX_LOOPS or len(indent) >= 4 * _MAX_DEPTH:  # the closures check the rest
        out(f"{indent}if not {src.name(compile_schema(schema))}({x}):")
        out(f"{indent}    return False")
        return
    for key in schema:
        if key not in _ANNOTATIONS and key not in ("then", "else") and key not in _KEYWORDS:
            raise Unsupported(f"keyword {key!r}")
    own = schema.get("type")
    if "type" in schema:  # first: the tests after it need no guard of its type
        _emit_keyword(src, "type", own, schema, x, indent, loops, known)
        if isinstance(own, str):
            known = own
    if "required" in schema:  # before `properties`: a required member is then read as `x[k]`
        _emit_keyword(src, "required", schema["required"], schema, x, indent, loops, known)
    for key, value in schema.items():
        if key in _KEYWORDS and key not in ("type", "required"):
            _emit_keyword(src, key, value, schema, x, indent, loops, known)


class _At:
    """Where a keyword's lines go: the function's source, the value's name `x`, the indent of
    its tests, the guard of the type the keyword applies to ("" when `x` is of it already), the
    `for` blocks around it and the JSON type an enclosing test has required of `x`."""

    __slots__ = ("guard", "indent", "inner", "known", "loops", "src", "x")

    def __init__(
        self, src: _Source, x: str, indent: str, guard: str, loops: int, known: str | None
    ) -> None:
        self.src, self.x, self.indent, self.guard = src, x, indent, guard
        self.inner = indent + "    " if guard else indent
        self.loops, self.known = loops, known

    def out(self, line: str) -> None:
        self.src.lines.append(line)

    def fail_if(self, condition: str) -> None:
        self.out(f"{self.indent}if {self.guard + ' and ' if self.guard else ''}{condition}:")
        self.out(f"{self.indent}    return False")


def _emit_keyword(
    src: _Source,
    key: str,
    value: Any,
    schema: Mapping[str, Any],
    x: str,
    indent: str,
    loops: int,
    known: str | None,
) -> None:
    applies = _APPLIES_TO.get(key)
    if applies is None or known == applies or (applies == "number" and known == "integer"):
        guard = ""  # `x` is of the type the keyword applies to (an "integer" is a "number")
    else:
        guard = _TYPE_TESTS[applies].format(x=x)
    at = _At(src, x, indent, guard, loops, known)
    if guard and key in ("properties", "additionalProperties", "propertyNames", "items"):
        at.out(f"{indent}if {guard}:")
    emit = _EMITTERS.get(key)
    if emit is None:  # a keyword of `_KEYWORDS` without lines here
        raise Unsupported(f"keyword {key!r}")
    emit(at, value, schema)


def _emit_type(at: _At, value: Any, schema: Mapping[str, Any]) -> None:
    names = [value] if isinstance(value, str) else value
    if not isinstance(names, list) or not names or any(n not in _TYPES for n in names):
        raise Unsupported(f"type {value!r}")
    at.fail_if(f"not ({' or '.join(_TYPE_TESTS[n].format(x=at.x) for n in names)})")


def _emit_enum(at: _At, value: Any, schema: Mapping[str, Any]) -> None:
    at.fail_if(f"(not isinstance({at.x}, str) or {at.x} not in {at.src.name(_strings(value))})")


def _emit_const(at: _At, value: Any, schema: Mapping[str, Any]) -> None:
    if not isinstance(value, str):
        raise Unsupported(f"const {value!r}")
    at.fail_if(f"(not isinstance({at.x}, str) or {at.x} != {value!r})")


def _emit_required(at: _At, value: Any, schema: Mapping[str, Any]) -> None:
    names = sorted(_strings(value))  # as `_compile_object`: a list, or no check at all
    if names:
        at.fail_if("(" + " or ".join(f"{n!r} not in {at.x}" for n in names) + ")")


def _emit_properties(at: _At, value: Any, schema: Mapping[str, Any]) -> None:
    if not isinstance(value, dict):
        raise Unsupported("properties")
    required, inner, x = _strings(schema.get("required", [])), at.inner, at.x
    at.out(f"{inner}pass")
    for name, sub in value.items():
        v = at.src.local()
        if name in required:  # tested above
            at.out(f"{inner}{v} = {x}[{name!r}]")
            _emit(at.src, sub, v, inner, at.loops)
        else:
            at.out(f"{inner}{v} = {x}.get({name!r}, _MISSING)")
            at.out(f"{inner}if {v} is not _MISSING:")
            at.out(f"{inner}    pass")
            _emit(at.src, sub, v, inner + "    ", at.loops)


def _emit_additional(at: _At, value: Any, schema: Mapping[str, Any]) -> None:
    if "patternProperties" in schema:
        raise Unsupported("patternProperties")
    inner, names = at.inner, at.src.name(frozenset(schema.get("properties", {})))
    if value is False:
        at.out(f"{inner}if not {names}.issuperset({at.x}):")
        at.out(f"{inner}    return False")
    elif value is not True:
        k, v = at.src.local(), at.src.local()
        at.out(f"{inner}for {k}, {v} in {at.x}.items():")
        at.out(f"{inner}    if {k} not in {names}:")
        at.out(f"{inner}        pass")
        _emit(at.src, value, v, inner + "        ", at.loops + 1)
    else:
        at.out(f"{inner}pass")


def _emit_property_names(at: _At, value: Any, schema: Mapping[str, Any]) -> None:
    k = at.src.local()
    at.out(f"{at.inner}for {k} in {at.x}:")
    at.out(f"{at.inner}    pass")
    _emit(at.src, value, k, at.inner + "    ", at.loops + 1)


def _emit_items(at: _At, value: Any, schema: Mapping[str, Any]) -> None:
    if "prefixItems" in schema:
        raise Unsupported("prefixItems")
    v = at.src.local()
    at.out(f"{at.inner}for {v} in {at.x}:")
    at.out(f"{at.inner}    pass")
    _emit(at.src, value, v, at.inner + "    ", at.loops + 1)


def _emit_min_count(at: _At, value: Any, schema: Mapping[str, Any]) -> None:
    at.fail_if(f"len({at.x}) < {_count(value)!r}")


def _emit_max_length(at: _At, value: Any, schema: Mapping[str, Any]) -> None:
    at.fail_if(f"len({at.x}) > {_count(value)!r}")


def _emit_minimum(at: _At, value: Any, schema: Mapping[str, Any]) -> None:
    at.fail_if(f"{at.x} < {at.src.name(_bound(value))}")


def _emit_maximum(at: _At, value: Any, schema: Mapping[str, Any]) -> None:
    at.fail_if(f"{at.x} > {at.src.name(_bound(value))}")


def _emit_pattern(at: _At, value: Any, schema: Mapping[str, Any]) -> None:
    if not isinstance(value, str):
        raise Unsupported(f"pattern {value!r}")
    at.fail_if(f"{at.src.name(schema_regex(value).search)}({at.x}) is None")


def _emit_all_of(at: _At, value: Any, schema: Mapping[str, Any]) -> None:
    if not isinstance(value, list):
        raise Unsupported("allOf")
    for sub in value:
        _emit(at.src, sub, at.x, at.indent, at.loops, at.known)


def _emit_if(at: _At, value: Any, schema: Mapping[str, Any]) -> None:
    indent = at.indent
    at.out(f"{indent}if {at.src.name(compile_schema(value))}({at.x}):")
    at.out(f"{indent}    pass")
    _emit(at.src, schema.get("then", True), at.x, indent + "    ", at.loops, at.known)
    at.out(f"{indent}else:")
    at.out(f"{indent}    pass")
    _emit(at.src, schema.get("else", True), at.x, indent + "    ", at.loops, at.known)


# each keyword's lines (a keyword of `_KEYWORDS` missing here makes the schema Unsupported)
_EMITTERS: dict[str, Callable[[_At, Any, Mapping[str, Any]], None]] = {
    "type": _emit_type,
    "enum": _emit_enum,
    "const": _emit_const,
    "required": _emit_required,
    "properties": _emit_properties,
    "additionalProperties": _emit_additional,
    "propertyNames": _emit_property_names,
    "items": _emit_items,
    "minItems": _emit_min_count,
    "minLength": _emit_min_count,
    "maxLength": _emit_max_length,
    "minimum": _emit_minimum,
    "maximum": _emit_maximum,
    "pattern": _emit_pattern,
    "allOf": _emit_all_of,
    "if": _emit_if,
}


def generated_source(schema: Any) -> tuple[str, dict[str, Any]]:
    """The source of `generate_schema(schema)`'s function and the objects it names."""
    src = _Source()
    src.lines.append("def check(x0):")
    _emit(src, schema, "x0", "    ", 0)
    src.lines.append("    return True")
    return "\n".join(src.lines) + "\n", src.names


def generate_schema(schema: Any) -> Check:
    """`compile_schema(schema)` as one generated function (raises Unsupported)."""
    source, names = generated_source(schema)
    namespace = dict(names)
    exec(compile(source, "<schemacheck>", "exec"), namespace)  # source written here, from
    check: Check = namespace["check"]  # the schema's keys as literals (`repr`) and named objects
    return check


def generated_check(schema: Any) -> Check | None:
    """`compiled_check(schema)` as one generated function; None where that is None."""
    try:
        return generate_schema(schema)
    except Unsupported:
        return None
