"""Statement parsing: our scale-qualification/v1 predicate, upstream recipe-evidence v1/v2/v3."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from generator.evidence import statement as statement_mod
from generator.evidence.model import (
    IN_TOTO_PAYLOAD_TYPE,
    RECIPE_EVIDENCE_V1,
    RECIPE_EVIDENCE_V2,
    RECIPE_EVIDENCE_V3,
    SCALE_QUALIFICATION_V1,
    FailureClass,
)
from generator.evidence.statement import (
    StatementError,
    build_statement,
    parse_statement,
    predicate_schema,
)
from tests import evidence_fixtures as fx


def _parse(payload: bytes, payload_type: str = IN_TOTO_PAYLOAD_TYPE):  # type: ignore[no-untyped-def]
    return parse_statement(payload_type, payload)


def _error(payload: bytes, payload_type: str = IN_TOTO_PAYLOAD_TYPE) -> StatementError:
    with pytest.raises(StatementError) as info:
        parse_statement(payload_type, payload)
    return info.value


def test_the_predicate_schema_is_a_valid_draft_2020_12_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(predicate_schema())
    jsonschema.Draft202012Validator(predicate_schema()).validate(fx.predicate())


def test_our_predicate_parses_into_every_field() -> None:
    st = _parse(fx.statement())
    assert st.predicate_type == SCALE_QUALIFICATION_V1
    assert (st.recipe, st.recipe_digest) == (fx.RECIPE, fx.DIGEST)
    assert (st.scale_profile, st.scale_profile_version) == ("nvl72-2304", "1.2.0")
    assert (st.lane, st.lane_nodes, st.criteria_version) == ("l144", 144, "1.0.0")
    assert (st.observed_nodes, st.observed_gpus) == (144, 576)
    assert st.bundle_digest == "sha256:" + "b" * 64
    assert dict(st.component_versions) == {"gpu-operator": "v25.3.0", "network-operator": "v25.4.0"}
    assert list(st.phases) == ["deployment", "conformance", "performance"]
    check = st.phases["performance"][0]
    assert (check.name, check.status, check.targets, check.message) == (
        "nccl-all-reduce",
        "failed",
        144,
        "low",
    )
    kpi = st.kpis[0]
    assert (kpi.id, kpi.value, kpi.unit, kpi.operator, kpi.threshold, kpi.status) == (
        "nccl-busbw",
        350.5,
        "GB/s",
        ">=",
        380.0,
        "failed",
    )
    assert (st.verdict, st.reasons, st.attested_at) == (
        "fail",
        ("kpi nccl-busbw 350.5 GB/s is not >= 380",),
        "2026-11-30T10:00:00Z",
    )
    assert (st.sample, st.generator) == (False, "aicr-catalog 0.1.0")
    assert st.subjects == ((f"recipe:{fx.RECIPE}", {"sha256": "1" * 64}),)


def test_build_statement_is_canonical_and_deterministic() -> None:
    a = build_statement(fx.predicate())
    shuffled = dict(reversed(list(fx.predicate().items())))
    assert build_statement(shuffled) == a
    doc = json.loads(a)
    assert a == json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()
    assert doc["_type"] == "https://in-toto.io/Statement/v1"


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"verdict": "maybe"}, "$.predicate.verdict: 'maybe' is not one of ['pass', 'fail']"),
        ({"verdict": "fail", "reasons": []}, "$.predicate.reasons: [] should be non-empty"),
        ({"attestedAt": "yesterday"}, "$.predicate.attestedAt: 'yesterday' does not match"),
        (
            {"observed": {"nodes": -1, "gpus": 4}},
            "$.predicate.observed.nodes: -1 is less than the minimum of 0",
        ),
        (
            {"recipe": {"name": fx.RECIPE, "digest": "abc"}},
            "$.predicate.recipe.digest: 'abc' does not match",
        ),
        (
            {"extra": 1},
            "$.predicate: Additional properties are not allowed ('extra' was unexpected)",
        ),
        ({"sample": "no"}, "$.predicate.sample: 'no' is not of type 'boolean'"),
    ],
)
def test_schema_failures_name_the_field(change: dict[str, Any], expected: str) -> None:
    err = _error(build_statement(fx.predicate(**change)))
    assert err.klass is FailureClass.PREDICATE_SCHEMA
    assert err.message.startswith(f"predicate fails the {SCALE_QUALIFICATION_V1} schema: ")
    assert expected in err.message


def test_a_ctrf_status_outside_the_set_is_refused() -> None:
    pred = fx.predicate()
    pred["phases"]["deployment"]["checks"][0]["status"] = "ok"
    assert (
        "$.predicate.phases.deployment.checks[0].status: 'ok' is not one of"
        in _error(build_statement(pred)).message
    )


def test_every_schema_problem_is_reported_sorted() -> None:
    pred = fx.predicate(verdict="maybe")
    del pred["lane"]
    message = _error(build_statement(pred)).message
    assert message.index("$.predicate: 'lane' is a required property") < message.index(
        "$.predicate.verdict"
    )


def test_subject_must_carry_the_recipe_digest() -> None:
    payload = fx.statement(subject=[{"name": "recipe:x", "digest": {"sha256": "f" * 64}}])
    err = _error(payload)
    assert err.klass is FailureClass.PREDICATE_SCHEMA
    assert err.message.endswith(
        f"$.subject: no subject carries the predicate's recipe digest sha256:{'1' * 64}"
    )


def test_payload_type_statement_type_and_predicate_type() -> None:
    assert _error(fx.statement(), "text/plain").klass is FailureClass.PAYLOAD_TYPE
    err = _error(fx.statement(_type="https://example.com/Statement"))
    assert (err.klass, err.message) == (
        FailureClass.PAYLOAD_TYPE,
        "payload _type is 'https://example.com/Statement'; expected 'https://in-toto.io/Statement/v1'",
    )
    assert (
        _error(b"[1, 2]").message
        == "payload _type is 'list'; expected 'https://in-toto.io/Statement/v1'"
    )
    assert _error(b"\xff").klass is FailureClass.PAYLOAD_TYPE
    assert _error(fx.statement(predicateType=None)).klass is FailureClass.PREDICATE_TYPE_UNKNOWN


def _upstream(predicate_type: str, **pred: Any) -> bytes:
    body: dict[str, Any] = {
        "schemaVersion": "1.0.0",
        "attestedAt": "2026-05-08T10:23:11Z",
        "aicrVersion": "v0.13.0",
        "recipe": {"name": "h100-eks-ubuntu-training", "digest": "a" * 64},
        "phases": {
            "deployment": {
                "passed": 5,
                "failed": 0,
                "skipped": 1,
                "ctrfDigest": "sha256:" + "c" * 64,
            },
            "performance": {
                "passed": 2,
                "failed": 1,
                "skipped": 0,
                "ctrfDigest": "sha256:" + "d" * 64,
            },
        },
        "bom": {"format": "CycloneDX", "version": "1.6", "digest": "x", "imageCount": 3},
    }
    body.update(pred)
    return json.dumps(
        {
            "_type": "https://in-toto.io/Statement/v1",
            "subject": [
                {"name": "recipe:h100-eks-ubuntu-training", "digest": {"sha256": "a" * 64}}
            ],
            "predicateType": predicate_type,
            "predicate": body,
        }
    ).encode()


def test_upstream_v3_is_read_permissively_with_results_from_phase_counts() -> None:
    st = _parse(_upstream(RECIPE_EVIDENCE_V3))
    assert (st.recipe, st.recipe_digest) == ("h100-eks-ubuntu-training", "sha256:" + "a" * 64)
    assert (st.verdict, st.reasons) == ("fail", ("1 check(s) failed",))
    assert [c.status for c in st.phases["deployment"]] == ["passed"]
    assert st.phases["performance"][0].message == "2 passed, 1 failed, 0 skipped"
    assert "conformance" not in st.phases
    assert (st.attested_at, st.generator, st.scale_profile) == (
        "2026-05-08T10:23:11Z",
        "aicr v0.13.0",
        None,
    )
    assert st.predicate["bom"]["imageCount"] == 3  # unknown fields are kept as signed


def test_upstream_all_passed_is_a_pass() -> None:
    ok = {"deployment": {"passed": 3, "failed": 0, "skipped": 0}}
    assert _parse(_upstream(RECIPE_EVIDENCE_V1, phases=ok)).verdict == "pass"
    assert _parse(_upstream(RECIPE_EVIDENCE_V1, phases={})).reasons == ("no check passed",)


def test_upstream_profile_rules_of_v1_and_v2() -> None:
    profile = {"selection": "gpuStack=default", "policyDescriptorIdentity": "abc"}
    assert (
        _parse(_upstream(RECIPE_EVIDENCE_V2, profile=profile)).scale_profile == "gpuStack=default"
    )
    assert _error(_upstream(RECIPE_EVIDENCE_V2)).message.endswith(
        f"$.predicate: 'profile' is required by {RECIPE_EVIDENCE_V2}"
    )
    assert _error(_upstream(RECIPE_EVIDENCE_V1, profile=profile)).message.endswith(
        f"$.predicate.profile: not allowed by {RECIPE_EVIDENCE_V1}"
    )
    assert (
        _parse(_upstream(RECIPE_EVIDENCE_V3, profile=profile)).scale_profile == "gpuStack=default"
    )


def test_upstream_without_a_recipe_fails_its_schema() -> None:
    err = _error(_upstream(RECIPE_EVIDENCE_V3, recipe={"name": "x"}))
    assert err.klass is FailureClass.PREDICATE_SCHEMA
    assert "$.predicate.recipe: 'digest' is a required property" in err.message


UNSAFE_NAMES = ["../outside/pwned", "a/b", "..", "A", "x" * 64, "a_b", "<script>"]


@pytest.mark.parametrize("name", UNSAFE_NAMES)
@pytest.mark.parametrize("predicate_type", [RECIPE_EVIDENCE_V1, RECIPE_EVIDENCE_V3])
def test_an_upstream_recipe_name_must_be_a_safe_path_segment(
    predicate_type: str, name: str
) -> None:
    """The name is joined into evidence/<recipe>/...: `..` or `/` would leave the tree."""
    recipe = {"name": name, "digest": "a" * 64}
    err = _error(_upstream(predicate_type, recipe=recipe))
    assert err.klass is FailureClass.PREDICATE_SCHEMA
    assert err.message == (
        f"predicate fails the {predicate_type} schema: "
        f"$.predicate.recipe.name: {name!r} is not a safe path segment"
    )


@pytest.mark.parametrize("name", UNSAFE_NAMES)
def test_our_recipe_name_must_be_a_safe_path_segment(name: str) -> None:
    pred = fx.predicate()
    pred["recipe"] = {**pred["recipe"], "name": name}
    err = _error(fx.statement(pred))
    assert err.klass is FailureClass.PREDICATE_SCHEMA
    assert f"$.predicate.recipe.name: {name!r} is not a safe path segment" in err.message


def test_a_payload_with_a_huge_integer_is_not_json() -> None:
    payload = b'{"_type": ' + b"1" * 5000 + b"}"
    err = _error(payload)
    assert err.klass is FailureClass.PREDICATE_SCHEMA
    assert "statement holds a number outside JSON's domain: integer 1111" in err.message
    assert "is outside ±2^53" in err.message


# ---------------------------------------------------------------- numbers inside JSON's domain
#
# Issue #16, attack 6: NaN and Infinity in signed KPI values verified and were published as
# `NaN` / `Infinity`; `1e308` was accepted as a node count.


def _with_number(where: str, literal: str) -> bytes:
    """The fixture statement with one number replaced by a raw JSON literal."""
    marker = 987654.25
    pred = fx.predicate()
    if where == "kpi value":
        pred["kpis"][0]["value"] = marker
    elif where == "threshold":
        pred["kpis"][0]["threshold"]["value"] = marker
    elif where == "observed nodes":
        pred["observed"]["nodes"] = marker
    elif where == "lane nodes":
        pred["lane"]["nodes"] = marker
    raw = build_statement(pred)
    assert raw.count(b"987654.25") == 1
    return raw.replace(b"987654.25", literal.encode())


@pytest.mark.parametrize("where", ["kpi value", "threshold", "observed nodes", "lane nodes"])
@pytest.mark.parametrize(
    "literal", ["NaN", "Infinity", "-Infinity", "1e999", "-1e400", "1e308", "9007199254740993"]
)
def test_numbers_outside_json_are_schema_errors(where: str, literal: str) -> None:
    err = _error(_with_number(where, literal))
    assert err.klass is FailureClass.PREDICATE_SCHEMA, err.message
    assert "number outside JSON's domain" in err.message


@pytest.mark.parametrize(
    ("where", "literal", "problem"),
    [
        ("observed nodes", "100001", "$.predicate.observed.nodes: 100001 is greater than"),
        ("observed nodes", "1e15", "$.predicate.observed.nodes: 1000000000000000.0 is greater"),
        ("lane nodes", "100001", "$.predicate.lane.nodes: 100001 is greater than the maximum"),
    ],
)
def test_counts_above_a_sane_bound_are_schema_errors(
    where: str, literal: str, problem: str
) -> None:
    err = _error(_with_number(where, literal))
    assert err.klass is FailureClass.PREDICATE_SCHEMA
    assert problem in err.message


def test_numbers_inside_the_domain_still_parse() -> None:
    for literal in ("9007199254740992", "-0.5", "1e15", "0.1e-400"):
        st = _parse(_with_number("kpi value", literal))
        assert st.kpis[0].value == float(literal)
    pred = fx.predicate()
    pred["observed"]["gpus"] = 1_000_001
    assert "is greater than the maximum of 1000000" in _error(build_statement(pred)).message


# Every JSON document the build writes refuses NaN and ±Infinity (`allow_nan=False`): a value
# outside JSON's domain is an error where it is written, never `NaN` in a published file.
# Exempt: json.dumps used to quote one value inside a message or a YAML scalar, and the build
# cache (internal, authenticated, read back only by this tool).
_DUMPS_EXEMPT = {
    "generator/core/cache.py": None,  # every call: internal, authenticated entries
}


def test_every_json_output_is_written_with_allow_nan_false() -> None:
    import ast

    root = Path(__file__).resolve().parents[1]
    missing: dict[str, int] = {}
    for path in sorted((root / "generator").rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("dumps", "dump")
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "json"
                and not any(
                    k.arg == "allow_nan"
                    and isinstance(k.value, ast.Constant)
                    and k.value.value is False
                    for k in node.keywords
                )
            ):
                missing[rel] = missing.get(rel, 0) + 1
    unexpected = {
        rel: n
        for rel, n in missing.items()
        if rel not in _DUMPS_EXEMPT or (_DUMPS_EXEMPT[rel] is not None and n > _DUMPS_EXEMPT[rel])
    }
    assert unexpected == {}
    assert "generator/site/api.py" not in missing and "generator/publish/release.py" not in missing


# --- equal check results are one record --------------------------------------------------------

_CHECK_DICTS = st.fixed_dictionaries(
    {
        "name": st.sampled_from(["initial-deploy", "steady-state", "x"]),
        "status": st.sampled_from(["passed", "failed", "skipped"]),
        "targets": st.sampled_from([0, 1, 36, 0.0, -0.0, 1.0, 36.0, True, False]),
    },
    optional={"message": st.sampled_from(["", "ok", "timed out"])},
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_CHECK_DICTS, max_size=12))
def test_check_results_are_the_references_and_shared_only_when_alike(
    checks: list[dict[str, Any]],
) -> None:
    """`_check` gives what a new record would (value, type of targets, published form), the
    same object for equal checks whose targets are ints, never for a float or bool."""
    got = [statement_mod._check(c) for c in checks]
    want = [statement_mod._check_reference(c) for c in checks]
    for a, b in zip(got, want, strict=True):
        assert a == b and repr(a) == repr(b) and type(a.targets) is type(b.targets)
        assert json.dumps(a.targets) == json.dumps(b.targets)
    for a, b in itertools.combinations(got, 2):
        if a is b:
            assert type(a.targets) is int
        elif a == b and type(a.targets) is int is type(b.targets):
            pytest.fail(f"{a} made twice")
