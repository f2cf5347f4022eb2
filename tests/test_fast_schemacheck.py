"""generator.fast.schemacheck: the compiled yes/no check of each statement schema agrees with
jsonschema (the reference, `validator.is_valid`) on every instance. It decides alone only when
it says "valid", so it must never accept what jsonschema refuses; it must also accept the
documents jsonschema accepts, or every statement pays for jsonschema.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from generator.evidence import statement as statement_mod
from generator.fast import schemacheck
from tests import evidence_fixtures as fx

KINDS = ("statement", "predicate", "upstream")


def _jsonschema_valid(kind: str, instance: Any) -> bool:
    return bool(statement_mod._validator(kind).is_valid(instance))


def _fast(kind: str) -> Any:
    validator = statement_mod._validator(kind)
    check = schemacheck.compiled_check(validator.schema)
    assert check is not None, f"the {kind} schema has no fast check: every statement pays 1 ms"
    generated = schemacheck.generated_check(validator.schema)
    assert generated is not None, f"the {kind} schema has no generated check"

    def fast(instance: Any) -> bool:
        answer = schemacheck.known_valid(validator, instance)
        assert generated(instance) is answer  # `known_valid` asks the generated check
        assert check(instance) is answer  # which agrees with the closures (its reference)
        return answer

    return fast


# --- the compiled schema check agrees with jsonschema --------------------------------------------


def _upstream_predicate() -> dict[str, Any]:
    return {
        "schemaVersion": "1.0.0",
        "attestedAt": "2026-11-30T10:00:00Z",
        "aicrVersion": "0.9.0",
        "recipe": {"name": fx.RECIPE, "digest": "1" * 64},
        "phases": {"deployment": {"passed": 3, "failed": 0, "skipped": 1}},
        "profile": {"selection": "gpuStack=default", "policyDescriptorIdentity": "x"},
    }


def _bases() -> dict[str, list[Any]]:
    passing = fx.predicate(verdict="pass", reasons=[])
    no_kpi_status = fx.predicate()
    del no_kpi_status["kpis"][0]["status"]
    return {
        "statement": [json.loads(fx.statement()), json.loads(fx.statement(passing))],
        "predicate": [fx.predicate(), passing, no_kpi_status],
        "upstream": [_upstream_predicate(), {"recipe": {"name": "a", "digest": "2" * 64}}],
    }


# values chosen to sit on every boundary the schemas draw: bool vs integer vs integral float,
# empty vs one-character strings, the enums, the patterns (a trailing newline passes `$`)
_EDGE_VALUES: list[Any] = [
    None,
    True,
    False,
    0,
    1,
    -1,
    1.0,
    0.0,
    -0.5,
    2.5,
    2**70,
    float("nan"),
    float("inf"),
    "",
    "a",
    "A",
    "pass",
    "fail",
    "passed",
    "failed",
    "proposed",
    ">=",
    "1.0.0",
    "1.0.0\n",
    "01.0.0",
    fx.RECIPE,
    fx.RECIPE + "\n",
    "-bad",
    "x" * 254,
    "sha256:" + "1" * 64,
    "sha256:" + "1" * 64 + "\n",
    "1" * 64,
    "2026-11-30T10:00:00Z",
    "2026-11-30 10:00:00",
    [],
    {},
]
_EDGE = st.sampled_from(_EDGE_VALUES)
_VALUES = st.recursive(
    _EDGE | st.text(max_size=4),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["name", "digest", "checks", "x", "", "Bad Name"]), inner, max_size=3
        )
    ),
    max_leaves=6,
)


def _containers(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path] if isinstance(node, dict | list) else []
    children = (
        node.items()
        if isinstance(node, dict)
        else enumerate(node)
        if isinstance(node, list)
        else ()
    )
    for key, child in children:
        out.extend(_containers(child, (*path, key)))
    return out


def _at(doc: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        doc = doc[key]
    return doc


@st.composite
def _mutated(draw: st.DrawFn) -> tuple[str, Any]:
    kind = draw(st.sampled_from(KINDS))
    doc = copy.deepcopy(draw(st.sampled_from(_bases()[kind])))
    for _ in range(draw(st.integers(1, 3))):
        target = _at(doc, draw(st.sampled_from(_containers(doc))))
        action = draw(st.sampled_from(["set", "delete", "add"]))
        if isinstance(target, dict):
            keys = sorted(target)
            if action == "add" or not keys:
                key = draw(st.sampled_from(["extra", "status", "message", "profile", "else"]))
                target[key] = copy.deepcopy(draw(_VALUES))
            elif action == "delete":
                del target[draw(st.sampled_from(keys))]
            else:
                target[draw(st.sampled_from(keys))] = copy.deepcopy(draw(_VALUES))
        elif isinstance(target, list):
            if action == "add" or not target:
                target.append(copy.deepcopy(draw(_VALUES)))
            elif action == "delete":
                del target[draw(st.integers(0, len(target) - 1))]
            else:
                target[draw(st.integers(0, len(target) - 1))] = copy.deepcopy(draw(_VALUES))
    return kind, doc


@settings(max_examples=1500, deadline=None)
@given(_mutated())
def test_the_fast_schema_check_agrees_with_jsonschema(case: tuple[str, Any]) -> None:
    kind, instance = case
    assert _fast(kind)(instance) == _jsonschema_valid(kind, instance)


def _paths(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a document (not the document itself)."""
    children = (
        node.items()
        if isinstance(node, dict)
        else enumerate(node)
        if isinstance(node, list)
        else ()
    )
    out: list[tuple[Any, ...]] = []
    for key, child in children:
        out.append((*path, key))
        out.extend(_paths(child, (*path, key)))
    return out


@pytest.mark.parametrize("kind", KINDS)
def test_every_place_of_every_document_with_every_edge_value(kind: str) -> None:
    """Exhaustive single changes: each place set to each boundary value, or removed."""
    fast = _fast(kind)
    compared = refused = 0
    for base in _bases()[kind]:
        for path in _paths(base):
            for value in [*_EDGE_VALUES, "REMOVE"]:
                doc = copy.deepcopy(base)
                parent = _at(doc, path[:-1])
                if value == "REMOVE":
                    del parent[path[-1]]
                else:
                    parent[path[-1]] = copy.deepcopy(value)
                valid = _jsonschema_valid(kind, doc)
                assert fast(doc) == valid, (path, value)
                compared, refused = compared + 1, refused + (not valid)
        for path in [(), *_paths(base)]:  # a key added to each object, named well or badly
            if not isinstance(_at(base, path), dict):
                continue
            for key in ("Bad Name", "extra", "status", "profile"):
                doc = copy.deepcopy(base)
                _at(doc, path)[key] = "1"
                valid = _jsonschema_valid(kind, doc)
                assert fast(doc) == valid, (path, key)
                compared, refused = compared + 1, refused + (not valid)
    assert 0 < refused < compared  # both answers were exercised


@pytest.mark.parametrize("kind", KINDS)
def test_the_unchanged_documents_pass_both_checks(kind: str) -> None:
    for base in _bases()[kind]:
        assert _fast(kind)(base) and _jsonschema_valid(kind, base)


@pytest.mark.parametrize(
    ("changes", "valid"),
    [
        ({"verdict": "fail", "reasons": []}, False),  # if/then: a failure needs a reason
        ({"verdict": "pass", "reasons": []}, True),
        ({"sample": 0}, False),  # a boolean is not an integer and an integer is not a boolean
        ({"observed": {"nodes": True, "gpus": 4}}, False),
        ({"observed": {"nodes": 4.0, "gpus": 4}}, True),  # an integral float is an integer
        ({"observed": {"nodes": 4.5, "gpus": 4}}, False),
        ({"observed": {"nodes": -1, "gpus": 4}}, False),
        # `pattern` has its JSON Schema (ECMA) `$`: a trailing newline is refused (generator/core/names.py)
        ({"bundleDigest": "sha256:" + "a" * 64 + "\n"}, False),
        ({"componentVersions": {"Bad Name": "1"}}, False),  # propertyNames
        ({"componentVersions": {"gpu-operator": ""}}, False),  # additionalProperties schema
        ({"unknown": 1}, False),  # additionalProperties: false
    ],
)
def test_boundary_instances_get_jsonschemas_answer(changes: dict[str, Any], valid: bool) -> None:
    instance = fx.predicate(**changes)
    assert _jsonschema_valid("predicate", instance) is valid
    assert _fast("predicate")(instance) is valid


@pytest.mark.parametrize(
    "schema",
    [
        {"anyOf": [{"type": "string"}]},
        {"$ref": "#/$defs/name"},
        {"enum": [1, "a"]},
        {"const": 1},
        {"type": "whatever"},
        {"additionalProperties": False, "patternProperties": {"^a": {}}},
        {"items": {}, "prefixItems": [{}]},
        {"properties": {"a": {"format": "date-time"}}},
        {"minLength": 1.5},
    ],
)
def test_a_schema_the_fast_check_does_not_model_gets_none(schema: dict[str, Any]) -> None:
    with pytest.raises(schemacheck.Unsupported):
        schemacheck.compile_schema(schema)
    assert schemacheck.compiled_check(schema) is None
    with pytest.raises(schemacheck.Unsupported):
        schemacheck.generate_schema(schema)
    assert schemacheck.generated_check(schema) is None


def test_an_instance_the_fast_check_refuses_gets_jsonschemas_messages() -> None:
    doc = json.loads(fx.statement(fx.predicate(verdict="fail", reasons=[], unknown=1)))
    errors = statement_mod.schema_errors("predicate", doc["predicate"], "$.predicate")
    assert errors == (
        "$.predicate: Additional properties are not allowed ('unknown' was unexpected)",
        "$.predicate.reasons: [] should be non-empty",
    )


def test_a_schema_without_a_compiled_check_is_never_known_valid() -> None:
    import jsonschema

    schema = {"anyOf": [{"type": "string"}]}
    validator = jsonschema.Draft202012Validator(schema)
    assert validator.is_valid("a")
    assert schemacheck.known_valid(validator, "a") is False  # jsonschema is asked instead
    object_schema = {"type": "object", "required": ["a"]}
    other = jsonschema.Draft202012Validator(object_schema)
    assert schemacheck.known_valid(other, {"a": 1}) is True
    assert schemacheck.known_valid(other, {}) is False


# --- the generated check agrees with the closures (its reference) and with jsonschema ----------

_NAMES = st.sampled_from(["a", "b", "name", "é", "\ud800", "'", "x\ny"])
_LEAF_SCHEMAS = st.one_of(
    st.booleans(),
    st.fixed_dictionaries(
        {
            "type": st.sampled_from(sorted(schemacheck._TYPES))
            | st.lists(
                st.sampled_from(sorted(schemacheck._TYPES)), min_size=1, max_size=3, unique=True
            )
        }
    ),
    st.fixed_dictionaries({"enum": st.lists(_NAMES, max_size=3)}),
    st.fixed_dictionaries({"const": _NAMES}),
    st.fixed_dictionaries({"minLength": st.integers(0, 3)}),
    st.fixed_dictionaries({"maxLength": st.integers(0, 3)}),
    st.fixed_dictionaries({"pattern": st.sampled_from(["^a", "b$", "^[a-z]+$", "."])}),
    st.fixed_dictionaries({"minimum": st.sampled_from([0, 1, -1.5, 2**53])}),
    st.fixed_dictionaries({"maximum": st.sampled_from([0, 1, 2.5, 2**53])}),
    st.fixed_dictionaries({"minItems": st.integers(0, 2)}),
    st.fixed_dictionaries({"required": st.lists(_NAMES, max_size=2, unique=True)}),
    st.fixed_dictionaries({"description": st.just("an annotation")}),
)


def _combined(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    keyword = st.one_of(
        st.fixed_dictionaries({"properties": st.dictionaries(_NAMES, inner, max_size=3)}),
        st.fixed_dictionaries({"additionalProperties": inner}),
        st.fixed_dictionaries({"propertyNames": inner}),
        st.fixed_dictionaries({"items": inner}),
        st.fixed_dictionaries({"allOf": st.lists(inner, max_size=2)}),
        st.fixed_dictionaries({"if": inner, "then": inner, "else": inner}),
        st.fixed_dictionaries({"then": inner}),  # without `if`: no effect
    )
    return st.lists(keyword | _LEAF_SCHEMAS.filter(lambda s: isinstance(s, dict)), max_size=4).map(
        lambda parts: {k: v for part in parts for k, v in part.items()}
    )


_SCHEMAS = st.recursive(_LEAF_SCHEMAS, _combined, max_leaves=12)
_INSTANCES = st.recursive(
    st.none()
    | st.booleans()
    | st.sampled_from([0, 1, -1, 2, 2**53, 2**53 + 1, 0.0, -0.0, 1.0, 2.5, -1.5])
    | st.floats()
    | st.integers()
    | _NAMES
    | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_NAMES, inner, max_size=3),
    max_leaves=10,
)


@settings(max_examples=1000, deadline=None)
@given(_SCHEMAS, st.lists(_INSTANCES, min_size=1, max_size=4))
def test_the_generated_check_is_the_compiled_check(schema: Any, instances: list[Any]) -> None:
    import jsonschema

    compiled = schemacheck.compiled_check(schema)
    generated = schemacheck.generated_check(schema)
    if compiled is None:  # what the closures do not model, the generated check does not either
        assert generated is None
        return
    assert generated is not None, schemacheck.generated_source(schema)[0]
    validator = jsonschema.Draft202012Validator(schema)
    for instance in instances:
        answer = generated(instance)
        assert answer is compiled(instance), (schemacheck.generated_source(schema)[0], instance)
        if answer:  # never valid where jsonschema is not
            assert validator.is_valid(instance)


def _nested(depth: int, leaf: Any, wrap: Any) -> Any:
    for _ in range(depth):
        leaf = wrap(leaf)
    return leaf


@pytest.mark.parametrize("depth", [1, 11, 12, 13, 39, 40, 41, 60])
def test_a_schema_deeper_than_one_function_is_checked_as_the_closures_do(depth: int) -> None:
    """Past `_MAX_LOOPS` nested arrays or `_MAX_DEPTH` indentation levels the closures check
    the rest: Python refuses a function nested deeper."""
    import jsonschema

    cases = [
        (lambda s: {"type": "array", "items": s}, lambda v: [v], lambda v: [v, "x"]),
        (
            lambda s: {"type": "object", "required": ["k"], "properties": {"k": s}},
            lambda v: {"k": v},
            lambda v: {"k": v, "j": 1},
        ),
        (lambda s: {"properties": {"k": s}}, lambda v: {"k": v}, lambda v: {"j": v}),
        (lambda s: {"additionalProperties": s}, lambda v: {"k": v}, lambda v: [v]),
    ]
    for wrap_schema, wrap_good, wrap_other in cases:
        schema = _nested(depth, {"type": "integer", "maximum": 3}, wrap_schema)
        check = schemacheck.generate_schema(schema)
        validator = jsonschema.Draft202012Validator(schema)
        for leaf in (1, 4, "a", 2.0, True):
            for wrap in (wrap_good, wrap_other):
                instance = _nested(depth, leaf, wrap)
                assert check(instance) is validator.is_valid(instance), (depth, leaf)
