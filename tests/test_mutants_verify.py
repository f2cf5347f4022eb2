"""Verification decisions that no other test pins down (issue 32, `make mutation`).

Each test fails on a mutant of `generator/evidence/verify.py` that the rest of the suite let
through: the Fulcio issuer extension read from certificates whose extension is empty, short,
of the wrong type or long; the failure class of each error sigstore can raise (an error raised
while the signature is checked is a malformed bundle, not an invalid signature); a rejected
record keeping the identity it claimed; the fail-closed guard for a signature accepted without
the signer policy having run; the log position read from either spelling of the bundle.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID, ObjectIdentifier
from sigstore.errors import CertValidationError, Error, VerificationError

from generator.evidence import verify as v
from generator.evidence.model import (
    EvidenceFile,
    FailureClass,
    RejectedEvidence,
    SignerClass,
    SignerRule,
    TrustRoot,
    VerifiedEvidence,
)
from generator.evidence.statement import IN_TOTO_PAYLOAD_TYPE, parse_statement
from generator.evidence.trustroot import load_trust_root
from tests import evidence_fixtures as fx

V1, V2 = v._OID_ISSUER_V1, v._OID_ISSUER_V2
START = datetime(2026, 11, 30, 10, 0, 0, tzinfo=UTC)
KEY = ec.derive_private_key(7, ec.SECP256R1())


def _cert(
    extensions: dict[ObjectIdentifier, bytes] | None = None,
    san: list[x509.GeneralName] | None = None,
) -> x509.Certificate:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "t")])
    b = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(KEY.public_key())
        .serial_number(1)
        .not_valid_before(START)
        .not_valid_after(START + timedelta(minutes=10))
    )
    for oid, value in (extensions or {}).items():
        b = b.add_extension(x509.UnrecognizedExtension(oid, value), critical=False)
    if san is not None:
        b = b.add_extension(x509.SubjectAlternativeName(san), critical=False)
    return b.sign(KEY, hashes.SHA256())


def _utf8(text: str) -> bytes:
    raw = text.encode()
    n = len(raw)
    if n < 0x80:
        return bytes([0x0C, n]) + raw
    size = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([0x0C, 0x80 | len(size)]) + size + raw


# ---------------------------------------------------------------- the Fulcio issuer


@pytest.mark.parametrize(
    ("v2", "v1", "expected"),
    [
        (_utf8("https://v2.example"), None, "https://v2.example"),
        (_utf8("https://v2.example"), b"https://v1.example", "https://v2.example"),
        (_utf8("h" * 200), None, "h" * 200),  # long form, one length byte
        (_utf8("h" * 300), None, "h" * 300),  # long form, two length bytes
        (b"", b"https://v1.example", "https://v1.example"),  # empty extension
        (b"\x0c", b"https://v1.example", "https://v1.example"),  # too short
        (b"\x0c\x00", b"https://v1.example", "https://v1.example"),  # an empty string
        (b"\x04\x05hello", b"https://v1.example", "https://v1.example"),  # an OCTET STRING
        (b"\x13\x05hello", None, ""),  # a PrintableString, and no v1
        (b"", None, ""),
        (None, b"https://v1.example", "https://v1.example"),
        (None, None, ""),
    ],
    ids=[
        "v2",
        "v2-over-v1",
        "v2-long",
        "v2-longer",
        "v2-empty",
        "v2-short",
        "v2-empty-string",
        "v2-octet-string",
        "v2-printable-string",
        "v2-empty-alone",
        "v1",
        "none",
    ],
)
def test_the_issuer_extension(v2: bytes | None, v1: bytes | None, expected: str) -> None:
    ext = {oid: value for oid, value in ((V2, v2), (V1, v1)) if value is not None}
    assert v.cert_issuer(_cert(ext)) == expected


def test_der_utf8_reads_only_a_utf8string() -> None:
    assert v._der_utf8(_utf8("abc")) == "abc"
    assert v._der_utf8(_utf8("abc") + b"trailing") == "abc"
    assert v._der_utf8(b"\x0c\x81\x03abcd") == "abc"
    assert v._der_utf8(b"\x0c\x82\x00\x03abcd") == "abc"
    assert v._der_utf8(b"\x0c\x00") == ""
    for bad in (b"", b"\x0c", b"\x0d\x01a", b"\x04\x01a"):
        assert not v._der_utf8(bad)


def test_the_identity_from_each_kind_of_name() -> None:
    uri = x509.UniformResourceIdentifier("https://github.com/a/b/w.yml@refs/heads/main")
    mail = x509.RFC822Name("someone@example.com")
    other = x509.OtherName(v._OID_OTHERNAME, b"\x0c\x04user")
    foreign = x509.OtherName(ObjectIdentifier("1.2.3.4"), b"\x0c\x04nope")
    assert v.cert_identity(_cert(san=[uri])) == uri.value
    assert v.cert_identity(_cert(san=[mail])) == "someone@example.com"
    assert v.cert_identity(_cert(san=[uri, mail])) == uri.value
    assert v.cert_identity(_cert(san=[other])).endswith("user")
    assert v.cert_identity(_cert(san=[foreign])) == ""
    assert v.cert_identity(_cert()) == ""


# ---------------------------------------------------------------- failure classes


ROOT = TrustRoot(name="test", path="", data=b"", sha256="0" * 64, demo=False)
INSIDE = int((START + timedelta(minutes=5)).timestamp())


@pytest.mark.parametrize(
    ("exc", "klass", "prefix"),
    [
        (v.SignerNotAllowed("who"), FailureClass.SIGNER_NOT_ALLOWED, "who"),
        (
            CertValidationError("chain"),
            FailureClass.CERTIFICATE_UNTRUSTED,
            "certificate does not chain to trust root test: chain",
        ),
        (
            x509.ExtensionNotFound("no ext", V2),
            FailureClass.CERTIFICATE_UNTRUSTED,
            "certificate is not a code-signing leaf: no ext",
        ),
        (
            UnsupportedAlgorithm("alg"),
            FailureClass.CERTIFICATE_UNTRUSTED,
            "certificate is not a code-signing leaf: alg",
        ),
        (
            VerificationError("DSSE: bad"),
            FailureClass.SIGNATURE_INVALID,
            "signature does not verify: DSSE: bad",
        ),
        # a DSSE error is the signature's, whatever else its text names
        (
            VerificationError("DSSE: does not match the log entry"),
            FailureClass.SIGNATURE_INVALID,
            "signature does not verify: DSSE:",
        ),
        (
            ValueError("DSSE: Key usage"),
            FailureClass.SIGNATURE_INVALID,
            "signature does not verify",
        ),
        (
            VerificationError("invalid log entry"),
            FailureClass.TLOG_INVALID,
            "transparency evidence does not verify: invalid log entry",
        ),
        (
            VerificationError("SET: x"),
            FailureClass.TLOG_INVALID,
            "transparency evidence does not verify: SET: x",
        ),
        (
            VerificationError("Key usage wrong"),
            FailureClass.CERTIFICATE_UNTRUSTED,
            "certificate is not a code-signing leaf: Key usage wrong",
        ),
        (
            VerificationError("Extended usage wrong"),
            FailureClass.CERTIFICATE_UNTRUSTED,
            "certificate is not a code-signing leaf: Extended",
        ),
        (
            ValueError("bad point"),
            FailureClass.MALFORMED_BUNDLE,
            "bundle cannot be verified: bad point",
        ),
        (OSError("io"), FailureClass.MALFORMED_BUNDLE, "bundle cannot be verified: io"),
        (Error("other"), FailureClass.SIGNATURE_INVALID, "signature does not verify: other"),
    ],
)
def test_each_error_has_its_class(exc: Exception, klass: FailureClass, prefix: str) -> None:
    for when in (None, INSIDE):
        got, message = v._classify(exc, _cert(), when, ROOT)
        assert got is klass and message.startswith(prefix), (when, got, message)


@pytest.mark.parametrize(
    ("offset", "expired"),
    [(-1, True), (0, False), (600, False), (601, True)],
)
def test_a_certificate_is_judged_at_the_log_time_bounds_included(
    offset: int, expired: bool
) -> None:
    when = int(START.timestamp()) + offset
    for exc in (VerificationError("x"), CertValidationError("y")):
        klass, message = v._classify(exc, _cert(), when, ROOT)
        assert (klass is FailureClass.CERTIFICATE_EXPIRED) is expired, (offset, exc)
        if expired:
            assert message.endswith("(transparency log integrated time)")
    # a value error outside the validity is still a malformed bundle, not an expiry
    assert v._classify(ValueError("v"), _cert(), int(START.timestamp()) - 1, ROOT)[0] is (
        FailureClass.MALFORMED_BUNDLE
    )


def test_one_failure_from_a_root_the_certificate_chained_to() -> None:
    untrusted = (FailureClass.CERTIFICATE_UNTRUSTED, "u")
    tlog = (FailureClass.TLOG_INVALID, "t")
    a = ROOT
    b = TrustRoot(name="other", path="", data=b"", sha256="1" * 64, demo=False)
    assert v._most_telling([untrusted, tlog], [a, b]) == tlog
    assert v._most_telling([untrusted], [a]) == untrusted
    assert v._most_telling([untrusted, untrusted], [a, b]) == (
        FailureClass.CERTIFICATE_UNTRUSTED,
        "certificate does not chain to trust root test or other",
    )


@pytest.fixture(scope="module")
def authority():  # type: ignore[no-untyped-def]
    return fx.make_authority("test")


@pytest.fixture(scope="module")
def root(authority, tmp_path_factory: pytest.TempPathFactory) -> TrustRoot:  # type: ignore[no-untyped-def]
    return load_trust_root(str(fx.write_root(authority, tmp_path_factory.mktemp("root"))))


class _Raising:
    def __init__(self, exc: Exception) -> None:
        self.exc = exc

    def verify_dsse(self, bundle: Any, policy: Any) -> Any:
        raise self.exc


@pytest.mark.parametrize(
    ("exc", "klass"),
    [
        (ValueError("point not on curve"), FailureClass.MALFORMED_BUNDLE),
        (OSError("read"), FailureClass.MALFORMED_BUNDLE),
        (x509.ExtensionNotFound("none", V2), FailureClass.CERTIFICATE_UNTRUSTED),
        (UnsupportedAlgorithm("alg"), FailureClass.CERTIFICATE_UNTRUSTED),
    ],
)
def test_an_error_raised_while_the_signature_is_checked_keeps_its_class(
    authority, root, monkeypatch: pytest.MonkeyPatch, exc: Exception, klass: FailureClass
) -> None:  # type: ignore[no-untyped-def]
    payload = fx.statement()
    data = fx.sign(authority, payload)
    monkeypatch.setattr(v, "_verifier", lambda r: _Raising(exc))
    check = v.check_signature(data, [root], fx.POLICY)
    assert check.klass is klass
    assert str(exc) in check.message
    assert (check.identity, check.issuer) == (fx.IDENTITY, fx.ISSUER)


def test_a_rejected_record_keeps_the_identity_it_claimed(authority, root) -> None:  # type: ignore[no-untyped-def]
    payload = fx.statement()
    bundle = fx.sign(authority, payload, identity=fx.OTHER_IDENTITY)
    file = fx.placed(bundle, payload, identity=fx.OTHER_IDENTITY)
    (record,) = v.verify_evidence(
        [file], trust_roots=root, policy=fx.POLICY, current_digests={}, jobs=1
    )
    assert isinstance(record, RejectedEvidence)
    assert record.klass is FailureClass.SIGNER_NOT_ALLOWED
    assert (record.signer_identity, record.signer_issuer) == (fx.OTHER_IDENTITY, fx.ISSUER)
    assert record.log_index is not None
    assert record.integrated_time == int(fx.SIGNED_AT.timestamp())
    assert record.path == file.path
    assert fx.OTHER_IDENTITY in record.message


def test_a_rejection_without_a_claimed_identity_names_none() -> None:
    sig = v.SignatureCheck(FailureClass.MALFORMED_BUNDLE, "not a Sigstore bundle: x")
    record = v.verify_one(EvidenceFile("evidence/r/s/f.sigstore.json", b"{}"), sig, [ROOT], {})
    assert isinstance(record, RejectedEvidence)
    assert (record.signer_identity, record.signer_issuer, record.log_index) == (None, None, None)


# ---------------------------------------------------------------- the fail-closed guard


def _accepted(**changes: Any) -> v.SignatureCheck:
    payload = fx.statement()
    fields: dict[str, Any] = {
        "klass": None,
        "message": "verified",
        "trust_root": ROOT.name,
        "payload_type": IN_TOTO_PAYLOAD_TYPE,
        "payload": payload,
        "identity": fx.IDENTITY,
        "issuer": fx.ISSUER,
        "rule": SignerRule("Example lab", SignerClass.PARTNER, fx.ISSUER, fx.IDENTITY, None),
        "log_index": 7,
        "integrated_time": int(fx.SIGNED_AT.timestamp()),
        "statement": parse_statement(IN_TOTO_PAYLOAD_TYPE, payload),
    }
    fields.update(changes)
    return v.SignatureCheck(**fields)


@pytest.mark.parametrize("missing", ["rule", "log_index", "trust_root"])
def test_a_signature_accepted_without_the_signer_policy_is_refused(missing: str) -> None:
    sig = _accepted(**{missing: None})
    file = EvidenceFile("evidence/r/s/f.sigstore.json", b"{}")
    record = v.verify_one(file, sig, [ROOT], {}, check_paths=False)
    assert isinstance(record, RejectedEvidence)
    assert record.klass is FailureClass.SIGNER_NOT_ALLOWED
    assert record.message == (
        f"signed by {fx.IDENTITY} via {fx.ISSUER}; the signer policy was not applied"
    )
    assert record.statement is not None


def test_the_same_check_with_the_policy_applied_verifies() -> None:
    file = EvidenceFile("evidence/r/s/f.sigstore.json", b"{}")
    record = v.verify_one(file, _accepted(), [ROOT], {}, check_paths=False)
    assert isinstance(record, VerifiedEvidence)
    assert record.log_index == 7 and record.signer_label == "Example lab" and record.stale
    demo = TrustRoot(name=ROOT.name, path="", data=b"", sha256="2" * 64, demo=True)
    assert v.verify_one(file, _accepted(), [demo], {}, check_paths=False).sample  # type: ignore[union-attr]


# ---------------------------------------------------------------- small pieces


def test_the_log_position_in_either_spelling() -> None:
    camel = {"verificationMaterial": {"tlogEntries": [{"logIndex": "12", "integratedTime": "34"}]}}
    snake = {"verification_material": {"tlog_entries": [{"log_index": 12, "integrated_time": 34}]}}
    assert v._log_position(camel) == (12, 34) == v._log_position(snake)
    for zero in ("0", 0, "", None):
        doc = {"verificationMaterial": {"tlogEntries": [{"logIndex": 0, "integratedTime": zero}]}}
        assert v._log_position(doc) == (0, None)
    assert v._log_position({}) == (None, None)
    bad = {"verificationMaterial": {"tlogEntries": [{"logIndex": "x", "integratedTime": 1}]}}
    assert v._log_position(bad) == (None, None)


def test_chunks_for_the_pool() -> None:
    assert v._chunk_size(10, 2) == v.CHUNK_MIN
    assert v._chunk_size(800, 2) == 50
    assert v._chunk_size(10**6, 2) == v.CHUNK_MAX


def test_a_worker_check_is_completed_in_the_parent(authority, root) -> None:  # type: ignore[no-untyped-def]
    payload = fx.statement()
    data = fx.sign(authority, payload)
    sent = v._check_to_send((root,), fx.POLICY, data)
    assert sent.klass is None and sent.statement is None and sent.statement_error is None
    done = v._complete(sent)
    assert (
        done.statement is not None
        and done.statement == v.check_signature(data, [root], fx.POLICY).statement
    )
    rejected = v.SignatureCheck(FailureClass.MALFORMED_BUNDLE, "x")
    assert v._complete(rejected) is rejected


def test_a_root_whose_bytes_do_not_match_its_digest_is_refused(root: TrustRoot) -> None:
    forged = TrustRoot(name="x", path="", data=root.data + b" ", sha256="f" * 64, demo=False)
    with pytest.raises(VerificationError, match="its bytes do not match its digest"):
        v._verifier(forged)


def test_no_trust_root_is_a_usage_mistake(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at least one trust root"):
        v.verify_evidence([], trust_roots=[], policy=fx.POLICY, current_digests={})


def test_a_bundle_error_without_a_message_is_named_by_its_type(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refuse(data: bytes) -> object:
        raise KeyError()

    monkeypatch.setattr(v.Bundle, "from_json", refuse)
    check = v.check_signature(b"{}", [ROOT], fx.POLICY)
    assert (check.klass, check.message) == (
        FailureClass.MALFORMED_BUNDLE,
        "not a Sigstore bundle: KeyError",
    )


def test_a_bundle_that_is_not_json_or_too_deep_is_malformed() -> None:
    for data in (b"not json", b"[" * 100_000 + b"]" * 100_000):
        check = v.check_signature(data, [ROOT], fx.POLICY)
        assert check.klass is FailureClass.MALFORMED_BUNDLE
        assert check.message.startswith("not a Sigstore bundle: not JSON")


def test_the_ct_keyring_for_signing_is_never_the_kept_one(root: TrustRoot) -> None:
    from sigstore._internal.trust import KeyringPurpose
    from sigstore.models import TrustedRoot

    trusted = v._KeyringsOnce(TrustedRoot.from_file(root.path))
    signing = trusted.ct_keyring(KeyringPurpose.SIGN)
    verifying = trusted.ct_keyring(KeyringPurpose.VERIFY)
    assert verifying is not signing
    assert trusted.ct_keyring(KeyringPurpose.VERIFY) is verifying
    assert trusted.ct_keyring(KeyringPurpose.SIGN) is not verifying


def test_a_keyring_is_kept_only_when_every_key_has_started(root: TrustRoot, tmp_path: Path) -> None:
    import json

    from sigstore._internal.trust import KeyringPurpose
    from sigstore.models import TrustedRoot

    doc = json.loads(Path(root.path).read_bytes())
    later = json.loads(json.dumps(doc["tlogs"][0]))
    later["publicKey"]["validFor"]["start"] = "2999-01-01T00:00:00Z"
    doc["tlogs"].append(later)  # one key valid now, one from 2999
    (tmp_path / "mixed.json").write_text(json.dumps(doc))
    trusted = v._KeyringsOnce(TrustedRoot.from_file(str(tmp_path / "mixed.json")))
    first = trusted.rekor_keyring(KeyringPurpose.VERIFY)
    assert trusted.rekor_keyring(KeyringPurpose.VERIFY) is not first
    assert trusted._rekor is None


def test_a_ct_keyring_is_kept_only_when_every_key_has_started(
    root: TrustRoot, tmp_path: Path
) -> None:
    import json

    from sigstore._internal.trust import KeyringPurpose
    from sigstore.models import TrustedRoot

    doc = json.loads(Path(root.path).read_bytes())
    later = json.loads(json.dumps(doc["ctlogs"][0]))
    later["publicKey"]["validFor"]["start"] = "2999-01-01T00:00:00Z"
    doc["ctlogs"].append(later)
    (tmp_path / "mixed.json").write_text(json.dumps(doc))
    trusted = v._KeyringsOnce(TrustedRoot.from_file(str(tmp_path / "mixed.json")))
    first = trusted.ct_keyring(KeyringPurpose.VERIFY)
    assert trusted.ct_keyring(KeyringPurpose.VERIFY) is not first
    assert trusted._ct is None
