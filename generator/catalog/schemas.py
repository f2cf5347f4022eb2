"""The project's JSON Schemas (draft 2020-12, in `catalog/schemas/`) and located schema diagnostics.

Entry: `check(doc, name) -> diagnostics`, used by `load` at the boundary and by every reader of the
project's own kinds; `schema(name)` and `validator(name)` give the schema and its validator.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
from jsonschema.protocols import Validator

from generator.core import names, safeio
from generator.core.errors import Diagnostic
from generator.core.records import Document
from generator.core.yamlio import load_json

SCHEMA_DIR = safeio.resolve(Path(__file__)).parents[2] / "catalog" / "schemas"


@cache
def schema(name: str) -> dict[str, Any]:
    """The schema `catalog/schemas/<name>.schema.json` (or a relative path ending in .json)."""
    fname = name if name.endswith(".json") else f"{name}.schema.json"
    data: dict[str, Any] = load_json(SCHEMA_DIR / fname, root=SCHEMA_DIR, where="the schemas")
    return data


def _pattern(
    validator: Validator, pattern: str, instance: Any, schema: dict[str, Any]
) -> Iterator[jsonschema.ValidationError]:
    """The `pattern` keyword with JSON Schema's (ECMA-262) `$`: jsonschema's own uses Python's
    `re.search`, whose `$` accepts a trailing newline ("eks\n" would be a valid name)."""
    if validator.is_type(instance, "string") and not names.schema_search(pattern, instance):
        yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


@cache
def validator_class(base: type[Validator]) -> type[Validator]:
    """`base` with the `pattern` keyword (and so `propertyNames` patterns) anchored as in ECMA."""
    cls: type[Validator] = jsonschema.validators.extend(base, {"pattern": _pattern})  # type: ignore[no-untyped-call]
    return cls


@cache
def validator(name: str) -> Validator:
    s = schema(name)
    cls = jsonschema.validators.validator_for(s, default=jsonschema.Draft202012Validator)
    cls.check_schema(s)
    v: Validator = validator_class(cls)(s, format_checker=jsonschema.FormatChecker())
    return v


def _best(error: jsonschema.ValidationError) -> jsonschema.ValidationError:
    """For oneOf/anyOf failures, the most relevant sub-error."""
    if error.context:
        return jsonschema.exceptions.best_match(error.context) or error
    return error


def _message(error: jsonschema.ValidationError) -> str:
    if error.validator == "additionalProperties":
        return error.message.replace("Additional properties are not allowed", "unknown field(s)")
    if error.validator == "not":
        forbidden = error.validator_value
        if isinstance(forbidden, dict) and list(forbidden) == ["required"]:
            return f"must not set all of: {', '.join(forbidden['required'])}"
        return "matches a form the schema forbids"
    if error.validator == "required":
        return error.message.replace("is a required property", "is required")
    return error.message


def check(doc: Document, name: str, data: Any = None) -> tuple[Diagnostic, ...]:
    """Every schema violation in `doc` (or in `data`, located through `doc`), sorted."""
    out: list[Diagnostic] = []
    instance = doc.data if data is None else data
    for err in validator(name).iter_errors(instance):
        err = _best(err)
        path = err.json_path
        if err.validator == "additionalProperties" and isinstance(err.instance, dict):
            sch = err.schema if isinstance(err.schema, dict) else {}
            allowed = set(sch.get("properties", {}))
            extras = sorted(k for k in err.instance if k not in allowed)
            for key in extras:
                line, col = doc.locate(f"{path}.{key}")
                out.append(
                    Diagnostic(
                        doc.rel,
                        line,
                        col,
                        f"{path}.{key}",
                        f"unknown field '{key}'",
                        "schema.additionalProperties",
                    )
                )
            continue
        line, col = doc.locate(path)
        out.append(Diagnostic(doc.rel, line, col, path, _message(err), f"schema.{err.validator}"))
    return tuple(sorted(out))
