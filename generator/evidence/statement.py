"""in-toto Statement v1 parsing and the accepted predicates.

`parse_statement(payload_type, payload)` turns the (already signature-verified) DSSE payload
into a `Statement` record, or raises `StatementError` carrying the failure class
(payload-type, predicate-type-unknown, predicate-schema). Our predicate
(`https://aicr.run/scale-qualification/v1`) is checked against
`catalog/schemas/scale-qualification-v1.schema.json`; upstream AICR's
`https://aicr.run/recipe-evidence/v1|v2|v3` predicates are accepted permissively: only the fields
we read (recipe name and digest, phase counts, attestedAt, the v2 profile block) are checked.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

from generator.catalog import schemas
from generator.core import safeio
from generator.core.timeutil import TimeError, parse_rfc3339
from generator.core.yamlio import load_json
from generator.evidence.model import (
    IN_TOTO_PAYLOAD_TYPE,
    PREDICATE_TYPES,
    RECIPE_EVIDENCE_V1,
    RECIPE_EVIDENCE_V2,
    SCALE_QUALIFICATION_V1,
    STATEMENT_TYPE_V1,
    CheckResult,
    FailureClass,
    Kpi,
    Statement,
)
from generator.evidence.store import NAME_RE, is_safe_name
from generator.fast.schemacheck import known_valid

SCHEMA_DIR = safeio.resolve(Path(__file__)).parents[2] / "catalog" / "schemas"
PREDICATE_SCHEMA_FILE = "scale-qualification-v1.schema.json"
PHASES: tuple[str, ...] = ("deployment", "conformance", "performance")

# Accepted in-toto statement `_type`s: v1, and v0.1 which older cosign/in-toto tools still emit.
STATEMENT_TYPES: tuple[str, ...] = (STATEMENT_TYPE_V1, "https://in-toto.io/Statement/v0.1")

_HEX64 = "^[0-9a-f]{64}$"
_DIGEST = "^(sha256:)?[0-9a-f]{64}$"
_COUNTS = {"type": "integer", "minimum": 0}

# What we rely on in upstream's recipe-evidence predicate (pkg/evidence/attestation/types.go
# upstream): everything else is allowed and kept as signed.
UPSTREAM_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["recipe"],
    "properties": {
        "schemaVersion": {"type": "string"},
        "attestedAt": {"type": "string"},
        "aicrVersion": {"type": "string"},
        "recipe": {
            "type": "object",
            "required": ["name", "digest"],
            "properties": {
                # a path segment of evidence/<recipe>/...: the catalog's name pattern
                "name": {"type": "string", "pattern": NAME_RE},
                "digest": {"type": "string", "pattern": _DIGEST},
            },
        },
        "phases": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "properties": {"passed": _COUNTS, "failed": _COUNTS, "skipped": _COUNTS},
            },
        },
        "profile": {
            "type": "object",
            "required": ["selection", "policyDescriptorIdentity"],
            "properties": {
                "selection": {"type": "string", "minLength": 1},
                "policyDescriptorIdentity": {"type": "string", "minLength": 1},
            },
        },
    },
}

STATEMENT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["_type", "subject", "predicateType", "predicate"],
    "properties": {
        "subject": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["digest"],
                "properties": {
                    "name": {"type": "string"},
                    "digest": {"type": "object", "additionalProperties": {"type": "string"}},
                },
            },
        },
        "predicateType": {"type": "string"},
        "predicate": {"type": "object"},
    },
}


class StatementError(Exception):
    """The payload is not an acceptable evidence statement; `klass` says which check failed."""

    def __init__(self, klass: FailureClass, message: str) -> None:
        super().__init__(message)
        self.klass = klass
        self.message = message


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@cache
def predicate_schema() -> dict[str, Any]:
    schema: dict[str, Any] = load_json(SCHEMA_DIR / PREDICATE_SCHEMA_FILE, root=SCHEMA_DIR)
    return schema


def _inline_refs(node: Any, defs: Mapping[str, Any]) -> Any:
    """The schema with its local `#/$defs/...` references replaced by their targets.

    Our schemas are not recursive, so this terminates; it makes validation of thousands of
    statements about twice as fast (jsonschema resolves each `$ref` at every use).
    """
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            rest = {k: v for k, v in node.items() if k != "$ref"}
            target = _inline_refs(defs[ref.removeprefix("#/$defs/")], defs)
            return {**target, **_inline_refs(rest, defs)} if rest else target
        return {k: _inline_refs(v, defs) for k, v in node.items() if k != "$defs"}
    if isinstance(node, list):
        return [_inline_refs(v, defs) for v in node]
    return node


@cache
def _validator(kind: str) -> jsonschema.protocols.Validator:
    schema = {
        "predicate": _inline_refs(predicate_schema(), predicate_schema().get("$defs", {})),
        "upstream": UPSTREAM_SCHEMA,
        "statement": STATEMENT_SCHEMA,
    }[kind]
    cls = schemas.validator_class(jsonschema.validators.validator_for(schema))
    validator: jsonschema.protocols.Validator = cls(schema)  # `pattern` with ECMA anchors
    return validator


def schema_errors(kind: str, instance: Any, prefix: str) -> tuple[str, ...]:
    """Every schema error as `$.json.path: message`, sorted; empty when valid."""
    validator = _validator(kind)
    if known_valid(validator, instance):  # a compiled check: jsonschema would find nothing
        return ()
    errors = validator.iter_errors(instance)
    found = sorted({(f"{prefix}{e.json_path[1:]}", _message(e)) for e in errors})
    return tuple(f"{path}: {message}" for path, message in found)


def _message(error: jsonschema.ValidationError) -> str:
    name_pattern = error.validator_value == NAME_RE or error.json_path == "$.recipe.name"
    if error.validator == "pattern" and name_pattern:
        return f"{error.instance!r} is not a safe path segment"
    return error.message


def _recipe_name_problem(predicate: Mapping[str, Any]) -> tuple[str, ...]:
    """The recipe name must be a safe path segment in every predicate type (it is joined into
    the storage path): checked here whatever the predicate's own schema allows."""
    name = predicate["recipe"]["name"]
    if is_safe_name(name):
        return ()
    return (f"$.predicate.recipe.name: {name!r} is not a safe path segment",)


# --- numbers inside JSON's domain -------------------------------------------------------------
#
# Python's json module reads `NaN`, `Infinity` and `-Infinity` (not JSON), turns `1e999` into
# infinity and reads integers of any size; none of that may reach a statement (a NaN KPI value
# compares false with every threshold, an infinite one is written back out as `Infinity`, which
# strict parsers and the page's chart refuse). Every number of a payload is checked as it is
# parsed: finite and within ±2^53, the range in which every JSON reader agrees on the value.

MAX_SAFE_INTEGER = 2**53


class NumberOutOfDomain(ValueError):
    """A payload number outside JSON's domain (NaN, ±Infinity, beyond ±2^53)."""


def _reject_constant(name: str) -> Any:
    raise NumberOutOfDomain(f"{name} is not a JSON number")


def _checked_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value) or abs(value) > MAX_SAFE_INTEGER:
        raise NumberOutOfDomain(f"number {text[:40]} is outside ±2^53")
    return value


def _checked_int(text: str) -> int:
    if len(text.lstrip("-")) > 16:  # 2^53 has 16 digits: longer is too large (or padded)
        raise NumberOutOfDomain(
            f"integer {text[:40]}{'…' if len(text) > 40 else ''} is outside ±2^53"
        )
    value = int(text)
    if abs(value) > MAX_SAFE_INTEGER:
        raise NumberOutOfDomain(f"integer {text} is outside ±2^53")
    return value


def loads_in_domain(data: bytes | str) -> Any:
    """`json.loads`, refusing NaN, ±Infinity and numbers beyond ±2^53 (NumberOutOfDomain),
    its keys and short strings shared with the statements read before (`_shared_object`).
    Reference: `loads_in_domain_reference` (the same values, no string shared)."""
    return json.loads(
        data,
        parse_constant=_reject_constant,
        parse_float=_checked_float,
        parse_int=_checked_int,
        object_pairs_hook=_shared_object,
    )


def loads_in_domain_reference(data: bytes | str) -> Any:
    """`loads_in_domain` without sharing strings (what it was before)."""
    return json.loads(
        data,
        parse_constant=_reject_constant,
        parse_float=_checked_float,
        parse_int=_checked_int,
    )


# --- one string object for equal keys and short values across statements -------------------
#
# A verified statement keeps its whole parsed predicate (`Statement.predicate`), and a cold build
# keeps every record it verified until the site is written: at 1,000 x 20,000, 20,000 parsed
# documents of ~22 KB of Python objects each (for a ~4 KB payload). Most of their strings are the
# same from one statement to the next (every key; statuses, units, operators, check, KPI and
# component names, versions) but json makes a new object for each (it shares a document's keys
# within that document only). Equal keys and strings shorter than `SHARED_MAX` are made one
# object here: 22.0 -> 13.0 KB per document at 200 x 4,000 (tracemalloc, 1,000 statements).
# Digests (64 characters and more) are unique and not kept. The table is bounded
# (`SHARED_LIMIT` strings, then emptied): what a document shares within itself does not depend
# on it, and values never do. Cost: ~36 us more per parse (90 vs 45 us, best of 5; ~25 us of it
# is json's calling any pairs hook at all), about +1 CPU-s in the verify stage at 1,000 x
# 20,000. Cold builds there, with the memo keeping no payloads (`verify._kept`), PSS summed
# over the process tree as `make bench` samples it, code before -> after, one each per row:
# --no-cache 1,734-1,736 MB (3 runs) -> 1,492-1,500 MB (3 runs), CPU 85.2/93.2/89.9 ->
# 92.2/94.5/91.8 (load 1.3-8; the verify stage in the last pair 25.3 -> 26.4 CPU-s); an empty
# cache (as `make bench`) 1,877/1,887 MB -> 1,647/1,651 MB, 106.9/104.0 -> 99.0/93.9 CPU-s
# (smaller pickles to store: a string shared within a record is pickled once).

SHARED_MAX = 64
SHARED_LIMIT = 1 << 16
_SHARED: dict[str, str] = {}


def _shared_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """The JSON object of `pairs` (later duplicates win, as `dict(pairs)`), its keys and short
    string values the objects already in the table for equal strings.

    A loop, not a dict comprehension: in this Python a comprehension is a function call of its
    own, and most objects of a statement have two to six members. The 4,000 payloads of 200 x
    4,000 read with this hook alone, best of 9, collector paused, three rounds: 77.7/76.7/76.2
    -> 67.6/66.6/67.5 us per payload (`dict` as the hook: 53-54)."""
    table = _SHARED
    if len(table) > SHARED_LIMIT:
        table.clear()
    get = table.setdefault
    out = {}
    for k, v in pairs:
        if type(v) is str and len(v) < SHARED_MAX:
            v = get(v, v)
        out[get(k, k)] = v
    return out


def normalize_digest(digest: str) -> str:
    return digest if digest.startswith("sha256:") else f"sha256:{digest}"


def parse_statement(payload_type: str, payload: bytes) -> Statement:
    """The evidence statement in a verified DSSE payload; raises StatementError."""
    return _statement(_checked_document(payload_type, payload))


def _checked_document(payload_type: str, payload: bytes) -> dict[str, Any]:
    """The statement document after every check of `parse_statement`; raises StatementError."""
    if payload_type != IN_TOTO_PAYLOAD_TYPE:
        raise StatementError(
            FailureClass.PAYLOAD_TYPE,
            f"DSSE payloadType is {payload_type!r}; expected {IN_TOTO_PAYLOAD_TYPE!r}",
        )
    try:
        doc = loads_in_domain(payload)
    except NumberOutOfDomain as e:
        raise StatementError(
            FailureClass.PREDICATE_SCHEMA,
            f"statement holds a number outside JSON's domain: {e} (NaN, ±Infinity and numbers "
            "beyond ±2^53 are refused)",
        ) from e
    except (ValueError, RecursionError) as e:  # incl. JSONDecodeError, Unicode, int digits
        raise StatementError(FailureClass.PAYLOAD_TYPE, f"DSSE payload is not JSON: {e}") from e
    if not isinstance(doc, dict) or doc.get("_type") not in STATEMENT_TYPES:
        seen = doc.get("_type") if isinstance(doc, dict) else type(doc).__name__
        raise StatementError(
            FailureClass.PAYLOAD_TYPE,
            f"payload _type is {seen!r}; expected {STATEMENT_TYPE_V1!r}",
        )
    predicate_type = doc.get("predicateType")
    if predicate_type not in PREDICATE_TYPES:
        raise StatementError(
            FailureClass.PREDICATE_TYPE_UNKNOWN,
            f"predicateType {predicate_type!r} is not evidence; accepted: "
            + ", ".join(PREDICATE_TYPES),
        )
    problems = schema_errors("statement", doc, "$")
    if not problems:
        kind = "predicate" if predicate_type == SCALE_QUALIFICATION_V1 else "upstream"
        problems = schema_errors(kind, doc["predicate"], "$.predicate")
    if not problems:
        problems = _recipe_name_problem(doc["predicate"])
    if not problems and predicate_type in (RECIPE_EVIDENCE_V1, RECIPE_EVIDENCE_V2):
        has_profile = "profile" in doc["predicate"]
        if predicate_type == RECIPE_EVIDENCE_V1 and has_profile:
            problems = (f"$.predicate.profile: not allowed by {RECIPE_EVIDENCE_V1}",)
        if predicate_type == RECIPE_EVIDENCE_V2 and not has_profile:
            problems = (f"$.predicate: 'profile' is required by {RECIPE_EVIDENCE_V2}",)
    if not problems:
        problems = _time_problem(doc["predicate"])
    if not problems and predicate_type == SCALE_QUALIFICATION_V1:
        want = doc["predicate"]["recipe"]["digest"].removeprefix("sha256:")
        if not any(s["digest"].get("sha256") == want for s in doc["subject"]):
            problems = (
                f"$.subject: no subject carries the predicate's recipe digest sha256:{want}",
            )
    if problems:
        raise StatementError(
            FailureClass.PREDICATE_SCHEMA,
            f"predicate fails the {predicate_type} schema: " + "; ".join(problems),
        )
    return doc


def _time_problem(predicate: Mapping[str, Any]) -> tuple[str, ...]:
    """attestedAt, when present, names a real instant (`timeutil.parse_rfc3339`): the schema's
    pattern lets `+99:00` or month 13 through."""
    when = predicate.get("attestedAt")
    if when is None:
        return ()
    try:
        parse_rfc3339(when)
    except TimeError as e:
        return (f"$.predicate.attestedAt: {e}",)
    return ()


def _statement(doc: Mapping[str, Any]) -> Statement:
    """The record of a checked statement document."""
    predicate_type = doc["predicateType"]
    subjects = tuple(
        (str(s.get("name", "")), dict(sorted(s["digest"].items()))) for s in doc["subject"]
    )
    pred: Mapping[str, Any] = doc["predicate"]
    if predicate_type == SCALE_QUALIFICATION_V1:
        return _scale_statement(pred, subjects)
    return _upstream_statement(predicate_type, pred, subjects)


def _scale_statement(
    pred: Mapping[str, Any], subjects: tuple[tuple[str, Mapping[str, str]], ...]
) -> Statement:
    raw_phases = pred["phases"]
    phases = {name: tuple(map(_check, raw_phases[name]["checks"])) for name in PHASES}
    # positional: a frozen dataclass called with keywords costs about twice as much
    kpis = tuple(
        Kpi(
            k["id"],
            float(k["value"]),
            k["unit"],
            k["threshold"]["operator"],
            float(k["threshold"]["value"]),
            k.get("status"),
            k.get("targets"),
        )
        for k in pred["kpis"]
    )
    return Statement(
        predicate_type=SCALE_QUALIFICATION_V1,
        recipe=pred["recipe"]["name"],
        recipe_digest=pred["recipe"]["digest"],
        subjects=subjects,
        predicate=pred,
        scale_profile=pred["scaleProfile"]["name"],
        scale_profile_version=pred["scaleProfile"]["version"],
        lane=pred["lane"]["name"],
        lane_nodes=pred["lane"]["nodes"],
        criteria_version=pred["lane"]["criteriaVersion"],
        observed_nodes=pred["observed"]["nodes"],
        observed_gpus=pred["observed"]["gpus"],
        bundle_digest=pred["bundleDigest"],
        component_versions=dict(sorted(pred["componentVersions"].items())),
        phases=phases,
        kpis=kpis,
        verdict=pred["verdict"],
        reasons=tuple(pred["reasons"]),
        attested_at=pred["attestedAt"],
        sample=pred["sample"],
        generator=f"{pred['generator']['name']} {pred['generator']['version']}",
    )


# One record for equal check results across statements: a cold build holds every statement
# (20,000 at 1,000 x 20,000, ~16 checks each), and one recipe's runs report the same checks with
# the same results. Bounded as `_SHARED` is. The reference is `_check_reference` (a new record
# each time; tests/test_evidence_statement.py). With the KPIs made positionally: `_statement` of
# the 4,000 checked documents of 200 x 4,000, best of 5 in one process, collector paused:
# 48.7 -> 33.5 us per statement.
_CHECKS: dict[tuple[str, str, int, str], CheckResult] = {}


def _check(c: Mapping[str, Any]) -> CheckResult:
    """The record of a checked statement's check `c` (positional: see `_scale_statement`), the
    one already made for an equal one when its targets are an int (a float or bool equal to
    an int is written apart from it, and is never shared)."""
    name, status, targets, message = c["name"], c["status"], c["targets"], c.get("message", "")
    if type(targets) is not int:
        return CheckResult(name, status, targets, message)
    key = (name, status, targets, message)
    found = _CHECKS.get(key)
    if found is None:
        if len(_CHECKS) > SHARED_LIMIT:
            _CHECKS.clear()
        found = _CHECKS[key] = CheckResult(name, status, targets, message)
    return found


def _check_reference(c: Mapping[str, Any]) -> CheckResult:
    """`_check` as `_scale_statement` made each check before: a new record every time."""
    return CheckResult(
        name=c["name"], status=c["status"], targets=c["targets"], message=c.get("message", "")
    )


def _upstream_statement(
    predicate_type: str,
    pred: Mapping[str, Any],
    subjects: tuple[tuple[str, Mapping[str, str]], ...],
) -> Statement:
    """Upstream carries per-phase counts, not per-check results: one summary row per phase."""
    phases: dict[str, tuple[CheckResult, ...]] = {}
    raw_phases: Mapping[str, Any] = pred.get("phases", {})
    failed = passed = 0
    for name in PHASES:
        if name not in raw_phases:
            continue
        counts = raw_phases[name]
        p, f, s = (int(counts.get(k, 0)) for k in ("passed", "failed", "skipped"))
        passed, failed = passed + p, failed + f
        status = "failed" if f else "passed" if p else "skipped"
        message = f"{p} passed, {f} failed, {s} skipped"
        phases[name] = (CheckResult(name=f"{name} (summary)", status=status, message=message),)
    verdict = "pass" if passed and not failed else "fail"
    reasons: tuple[str, ...] = ()
    if failed:
        reasons = (f"{failed} check(s) failed",)
    elif not passed:
        reasons = ("no check passed",)
    profile = pred.get("profile")
    version = pred.get("aicrVersion")
    return Statement(
        predicate_type=predicate_type,
        recipe=pred["recipe"]["name"],
        recipe_digest=normalize_digest(pred["recipe"]["digest"]),
        subjects=subjects,
        predicate=pred,
        scale_profile=profile["selection"] if isinstance(profile, Mapping) else None,
        phases=phases,
        verdict=verdict,
        reasons=reasons,
        attested_at=pred.get("attestedAt"),
        generator=f"aicr {version}" if version else None,
    )


def build_statement(predicate: Mapping[str, Any]) -> bytes:
    """The canonical statement bytes for one scale-qualification predicate.

    Subject: the recipe, named `recipe:<name>`, with its digest; keys sorted, compact, UTF-8,
    so the same predicate always gives the same bytes (and the same storage file name).
    """
    recipe = predicate["recipe"]
    statement = {
        "_type": STATEMENT_TYPE_V1,
        "subject": [
            {
                "name": f"recipe:{recipe['name']}",
                "digest": {"sha256": recipe["digest"].removeprefix("sha256:")},
            }
        ],
        "predicateType": SCALE_QUALIFICATION_V1,
        "predicate": predicate,
    }
    return json.dumps(
        statement, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode()
