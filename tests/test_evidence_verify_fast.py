"""The verifier's cheaper paths give the same answers as the plain ones.

(The compiled yes/no check of each statement schema: tests/test_fast_schemacheck.py.)
- the process pool, whose workers check signatures only and send payloads back as bytes (the
  parent reads each statement once, with every check), gives the records the in-process path
  gives, for accepted and refused statements alike;
- the trust root's keyrings are built once, and not kept while a key's validity is yet to start;
- the memo keeps no payload bytes (a memo hit gives the records a fresh check gives);
- statements read with their keys and short strings shared (`statement.loads_in_domain`) equal
  those read without (`loads_in_domain_reference`), refusals included.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
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


def _upstream_predicate() -> dict[str, Any]:
    return {
        "schemaVersion": "1.0.0",
        "attestedAt": "2026-11-30T10:00:00Z",
        "aicrVersion": "0.9.0",
        "recipe": {"name": fx.RECIPE, "digest": "1" * 64},
        "phases": {"deployment": {"passed": 3, "failed": 0, "skipped": 1}},
        "profile": {"selection": "gpuStack=default", "policyDescriptorIdentity": "x"},
    }


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
    """A worker checks the signature only; the parent reads the statement with every check, so
    a refused statement is refused there, as the in-process path refuses it."""
    files = _files(authority)
    for f in files:
        sent = verify_mod._check_to_send((root,), fx.POLICY, f.data)
        assert sent.statement is None and sent.statement_error is None
        assert verify_mod._complete(sent) == verify_mod.check_signature(f.data, (root,), fx.POLICY)
    good, bad = files[0], files[6]
    full = verify_mod._complete(verify_mod._check_to_send((root,), fx.POLICY, good.data))
    assert full.klass is None and full.statement is not None and full.statement_error is None
    refused = verify_mod._complete(verify_mod._check_to_send((root,), fx.POLICY, bad.data))
    assert refused.statement is None and refused.statement_error is not None
    assert refused.statement_error[0] is FailureClass.PREDICATE_SCHEMA


def test_the_parent_reads_a_statement_once(  # type: ignore[no-untyped-def]
    authority, root, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each accepted payload is parsed once in all (parent and worker), with every check."""
    from generator.evidence import statement as statement_mod

    files = _files(authority)[:6]
    parsed: list[bytes] = []
    original = statement_mod.loads_in_domain

    def counting(data: bytes | str) -> Any:
        parsed.append(bytes(data) if isinstance(data, bytes) else data.encode())
        return original(data)

    monkeypatch.setattr(statement_mod, "loads_in_domain", counting)
    sent = [verify_mod._check_to_send((root,), fx.POLICY, f.data) for f in files]
    assert parsed == []  # the worker does not read the payload
    done = [verify_mod._complete(c) for c in sent]
    assert parsed == [c.payload for c in sent]
    assert all(d.statement is not None for d in done)


def test_the_memo_keeps_no_payload_and_a_hit_gives_the_same_records(  # type: ignore[no-untyped-def]
    authority, root
) -> None:
    files = _files(authority)
    verify_mod._MEMO.clear()
    first = verify_evidence(
        files, trust_roots=root, policy=fx.POLICY, current_digests=CURRENT, jobs=1
    )
    memo = next(iter(verify_mod._MEMO.values()))
    assert memo and all(c.payload == b"" for c in memo.values())
    for f in files:  # the digest it keeps is the payload's
        full = verify_mod.check_signature(f.data, (root,), fx.POLICY)
        if full.klass is None:
            assert full.payload_sha256 == hashlib.sha256(full.payload).hexdigest()
            kept = memo[hashlib.sha256(f.data).hexdigest()]
            assert kept == dataclasses.replace(full, payload=b"")
    again = verify_evidence(  # every check from the memo
        files, trust_roots=root, policy=fx.POLICY, current_digests=CURRENT, jobs=1
    )
    assert again == first


# --- strings shared between statements ------------------------------------------------------------

_JSON_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(-(2**60), 2**60)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=80)
    | st.sampled_from(["passed", "s", "<=", "a" * 63, "b" * 64, "v1.2.3"])
)
_JSON = st.recursive(
    _JSON_LEAVES,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(["id", "name", "status", "x", "é"]) | st.text(), inner)
    ),
    max_leaves=25,
)


def _read(loads: Any, data: bytes) -> tuple[str, Any]:
    try:
        return "ok", loads(data)
    except statement_mod.NumberOutOfDomain as e:
        return "out of domain", str(e)
    except ValueError as e:
        return "not JSON", str(e)


@settings(max_examples=200, deadline=None)
@given(_JSON, st.booleans())
def test_shared_strings_read_the_same_values(doc: Any, duplicate_key: bool) -> None:
    text = json.dumps(doc, allow_nan=True)
    if duplicate_key and text.startswith("{") and text != "{}":
        text = '{"id": 1, ' + text[1:].replace("{", '{"id": 2, ', 1)  # later duplicates win
    data = text.encode()
    got = _read(statement_mod.loads_in_domain, data)
    want = _read(statement_mod.loads_in_domain_reference, data)
    assert got[0] == want[0]
    assert json.dumps(got[1], sort_keys=False) == json.dumps(want[1], sort_keys=False)
    if got[0] == "ok":  # the same types and values, -0.0 kept apart from 0.0
        assert _shape(got[1]) == _shape(want[1])


def _shape(value: Any) -> Any:
    if isinstance(value, dict):
        return [(k, _shape(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [_shape(v) for v in value]
    if isinstance(value, float):
        return ("float", value.hex() if math.isfinite(value) else repr(value))
    return (type(value).__name__, value)


def test_keys_and_short_strings_are_one_object_across_statements() -> None:
    one = statement_mod.loads_in_domain(b'{"status": "passed", "d": "' + b"1" * 64 + b'"}')
    two = statement_mod.loads_in_domain(b'{"status": "passed", "d": "' + b"1" * 64 + b'"}')
    assert one == two
    (k1, v1), (k2, v2) = next(iter(one.items())), next(iter(two.items()))
    assert k1 is k2 and v1 is v2  # shared
    assert one["d"] is not two["d"]  # a digest-long string is not kept in the table


def test_the_table_of_shared_strings_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(statement_mod, "SHARED_LIMIT", 10)
    monkeypatch.setattr(statement_mod, "_SHARED", {})
    for i in range(50):
        statement_mod.loads_in_domain(json.dumps({f"k{i}": f"v{i}"}).encode())
        assert len(statement_mod._SHARED) <= 12


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
