"""The verifier's cheaper paths give the same answers as the plain ones.

- the compiled yes/no check of each statement schema agrees with jsonschema on every instance
  (it decides alone only when it says "valid", so it must never accept what jsonschema refuses);
- the process pool, which sends statements back as bytes, gives the records the in-process path
  gives, for accepted and refused statements alike;
- the trust root's keyrings are built once, and not kept while a key's validity is yet to start.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generator.evidence import statement as statement_mod
from generator.evidence import verify as verify_mod
from generator.evidence.model import (
    RECIPE_EVIDENCE_V2,
    RECIPE_EVIDENCE_V3,
    FailureClass,
    RejectedEvidence,
    TrustRoot,
    VerifiedEvidence,
)
from generator.evidence.trustroot import load_trust_root
from generator.evidence.verify import verify_evidence
from tests import evidence_fixtures as fx

CURRENT = {f"{fx.RECIPE}@nvl72-2304": fx.DIGEST}
KINDS = ("statement", "predicate", "upstream")


def _jsonschema_valid(kind: str, instance: Any) -> bool:
    return not any(True for _ in statement_mod._validator(kind).iter_errors(instance))


def _fast(kind: str) -> Any:
    check = statement_mod._fast_check(kind)
    assert check is not None, f"the {kind} schema has no fast check: every statement pays 1 ms"
    return check


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
    with pytest.raises(statement_mod._Unsupported):
        statement_mod._compile_schema(schema)


def test_an_instance_the_fast_check_refuses_gets_jsonschemas_messages() -> None:
    doc = json.loads(fx.statement(fx.predicate(verdict="fail", reasons=[], unknown=1)))
    errors = statement_mod.schema_errors("predicate", doc["predicate"], "$.predicate")
    assert errors == (
        "$.predicate: Additional properties are not allowed ('unknown' was unexpected)",
        "$.predicate.reasons: [] should be non-empty",
    )


# --- the pool sends statements as bytes and builds them again ------------------------------------


@pytest.fixture(scope="module")
def authority():  # type: ignore[no-untyped-def]
    return fx.make_authority("fast")


@pytest.fixture(scope="module")
def root(authority, tmp_path_factory: pytest.TempPathFactory) -> TrustRoot:  # type: ignore[no-untyped-def]
    return load_trust_root(str(fx.write_root(authority, tmp_path_factory.mktemp("root"))))


def _files(authority: Any) -> list[Any]:
    payloads = [fx.statement(fx.predicate(reasons=[f"reason {i}"])) for i in range(6)] + [
        fx.statement(fx.predicate(verdict="fail", reasons=[])),  # predicate-schema
        fx.statement(predicateType="https://example.com/other"),  # predicate-type-unknown
        fx.statement(predicateType=RECIPE_EVIDENCE_V2),  # a v2 needs a profile
        json.dumps(
            {
                "_type": "https://in-toto.io/Statement/v1",
                "subject": [{"name": "x", "digest": {"sha256": "1" * 64}}],
                "predicateType": RECIPE_EVIDENCE_V3,
                "predicate": _upstream_predicate(),
            }
        ).encode(),
    ]
    files = [fx.placed(fx.sign(authority, p), p) for p in payloads]
    files.append(fx.placed(b"{not json", payloads[0]))
    return files


def test_the_pool_gives_the_records_of_the_in_process_path(  # type: ignore[no-untyped-def]
    authority, root, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = _files(authority)
    verify_mod._MEMO.clear()
    alone = verify_evidence(
        files, trust_roots=root, policy=fx.POLICY, current_digests=CURRENT, jobs=1
    )
    memo_alone = dict(next(iter(verify_mod._MEMO.values())))
    verify_mod._MEMO.clear()
    monkeypatch.setattr(verify_mod, "PARALLEL_THRESHOLD", 2)
    monkeypatch.setattr(verify_mod, "CHUNK_MIN", 3)
    pooled = verify_evidence(
        files, trust_roots=root, policy=fx.POLICY, current_digests=CURRENT, jobs=2
    )
    assert pooled == alone
    assert dict(next(iter(verify_mod._MEMO.values()))) == memo_alone
    kinds = [r.klass if isinstance(r, RejectedEvidence) else "ok" for r in pooled]
    assert kinds == ["ok"] * 6 + [
        FailureClass.PREDICATE_SCHEMA,
        FailureClass.PREDICATE_TYPE_UNKNOWN,
        FailureClass.PREDICATE_SCHEMA,
        "ok",  # upstream v3 (stale: no current digest for it)
        FailureClass.MALFORMED_BUNDLE,
    ]
    verified = [r for r in pooled if isinstance(r, VerifiedEvidence)]
    assert len(verified) == 7 and verified[-1].stale and verified[-1].statement.recipe == fx.RECIPE


def test_a_worker_sends_no_statement_back(authority, root) -> None:  # type: ignore[no-untyped-def]
    good, bad = _files(authority)[0], _files(authority)[6]
    sent = [verify_mod._check_to_send((root,), fx.POLICY, f.data) for f in (good, bad)]
    assert sent[0].klass is None and sent[0].statement is None and sent[0].statement_error is None
    assert sent[1].statement_error is not None and sent[1].statement_error[0] is (
        FailureClass.PREDICATE_SCHEMA
    )
    full = verify_mod.check_signature(good.data, (root,), fx.POLICY)
    assert verify_mod._complete(sent[0]) == full and full.statement is not None
    assert verify_mod._complete(sent[1]) == verify_mod.check_signature(bad.data, (root,), fx.POLICY)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(1, 2000), st.integers(1, 4))
def test_chunks_are_within_bounds(n: int, workers: int) -> None:
    size = verify_mod._chunk_size(n, workers)
    assert verify_mod.CHUNK_MIN <= size <= verify_mod.CHUNK_MAX


# --- keyrings built once -----------------------------------------------------------------------


def test_keyrings_are_built_once_per_root(root, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    from sigstore._internal.trust import KeyringPurpose
    from sigstore.models import TrustedRoot

    built: list[str] = []
    for name in ("rekor_keyring", "ct_keyring"):
        original = getattr(TrustedRoot, name)

        def counting(self: Any, purpose: Any, _o: Any = original, _n: str = name) -> Any:
            built.append(_n)
            return _o(self, purpose)

        monkeypatch.setattr(TrustedRoot, name, counting)
    trusted = verify_mod._KeyringsOnce(TrustedRoot.from_file(root.path))
    first = trusted.rekor_keyring(KeyringPurpose.VERIFY), trusted.ct_keyring(KeyringPurpose.VERIFY)
    for _ in range(3):
        assert trusted.rekor_keyring(KeyringPurpose.VERIFY) is first[0]
        assert trusted.ct_keyring(KeyringPurpose.VERIFY) is first[1]
    assert sorted(built) == ["ct_keyring", "rekor_keyring"]
    trusted.rekor_keyring(KeyringPurpose.SIGN)  # not the verification keyring: never kept
    trusted.rekor_keyring(KeyringPurpose.SIGN)
    assert built.count("rekor_keyring") == 3


def test_a_keyring_with_a_key_not_yet_valid_is_not_kept(root, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from sigstore._internal.trust import KeyringPurpose
    from sigstore.models import TrustedRoot

    doc = json.loads(Path(root.path).read_bytes())
    doc["tlogs"][0]["publicKey"]["validFor"]["start"] = "2999-01-01T00:00:00Z"
    (tmp_path / "future.json").write_text(json.dumps(doc))
    trusted = verify_mod._KeyringsOnce(TrustedRoot.from_file(str(tmp_path / "future.json")))
    with pytest.raises(Exception, match="Rekor keys"):  # sigstore: no key valid yet
        trusted.rekor_keyring(KeyringPurpose.VERIFY)
    assert trusted._rekor is None
    assert trusted.ct_keyring(KeyringPurpose.VERIFY) is trusted.ct_keyring(KeyringPurpose.VERIFY)


# --- the policy hook reuses what was read only for that very certificate ------------------------


def test_the_policy_hook_reads_any_other_certificate_afresh(authority, root) -> None:  # type: ignore[no-untyped-def]
    from sigstore.models import Bundle

    payload = fx.statement()
    ours = Bundle.from_json(fx.sign(authority, payload)).signing_certificate
    theirs = Bundle.from_json(
        fx.sign(authority, payload, identity=fx.OTHER_IDENTITY)
    ).signing_certificate
    # told that `ours` is allowlisted: a different certificate object is still read and refused
    hook = verify_mod._AllowlistPolicy(fx.POLICY, root, (ours, fx.IDENTITY, fx.ISSUER))
    with pytest.raises(verify_mod.SignerNotAllowed, match="intruder"):
        hook.verify(theirs)
    hook.verify(ours)
    assert hook.matched is not None
    # and what was read for a certificate is what reading it gives
    fresh = verify_mod._AllowlistPolicy(fx.POLICY, root)
    fresh.verify(ours)
    assert fresh.matched == hook.matched
    assert (verify_mod.cert_identity(ours), verify_mod.cert_issuer(ours)) == (
        fx.IDENTITY,
        fx.ISSUER,
    )
