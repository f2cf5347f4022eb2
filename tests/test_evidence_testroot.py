"""The offline authority: what it signs is what the sigstore verifier expects, deterministically."""

from __future__ import annotations

import base64
import hashlib
import json
from datetime import UTC, datetime

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.certificate_transparency import LogEntryType

from generator.core.errors import UsageError
from generator.evidence import testroot
from generator.evidence.sign import signing_time
from generator.evidence.verify import cert_identity, cert_issuer
from tests import evidence_fixtures as fx


@pytest.fixture(scope="module")
def authority() -> testroot.Authority:
    return fx.make_authority("unit")


def _leaf(bundle: bytes) -> x509.Certificate:
    raw = json.loads(bundle)["verificationMaterial"]["certificate"]["rawBytes"]
    return x509.load_der_x509_certificate(base64.b64decode(raw))


def test_same_inputs_same_authority_and_same_bundle(authority: testroot.Authority) -> None:
    again = fx.make_authority("unit")
    assert testroot.trusted_root_json(again) == testroot.trusted_root_json(authority)
    payload = fx.statement()
    assert fx.sign(authority, payload) == fx.sign(again, payload)
    assert fx.sign(authority, payload) != fx.sign(fx.make_authority("other"), payload)


def test_the_embedded_sct_signs_the_precertificate(authority: testroot.Authority) -> None:
    cert = _leaf(fx.sign(authority, fx.statement()))
    (sct,) = cert.extensions.get_extension_for_class(
        x509.PrecertificateSignedCertificateTimestamps
    ).value
    assert sct.entry_type is LogEntryType.PRE_CERTIFICATE
    assert sct.log_id == testroot.key_id(authority.ct_key.public_key())
    tbs = cert.tbs_precertificate_bytes  # the leaf without its SCT extension
    signed = (
        bytes([0, 0])
        + int(sct.timestamp.replace(tzinfo=UTC).timestamp() * 1000).to_bytes(8, "big")
        + (1).to_bytes(2, "big")
        + testroot.key_id(authority.ca_key.public_key())
        + len(tbs).to_bytes(3, "big")
        + tbs
        + (0).to_bytes(2, "big")
    )
    authority.ct_key.public_key().verify(sct.signature, signed, ec.ECDSA(hashes.SHA256()))


def test_the_leaf_is_fulcio_shaped(authority: testroot.Authority) -> None:
    cert = _leaf(fx.sign(authority, fx.statement()))
    assert (cert_identity(cert), cert_issuer(cert)) == (fx.IDENTITY, fx.ISSUER)
    assert cert.not_valid_after_utc - cert.not_valid_before_utc == testroot.LEAF_LIFETIME
    assert cert.not_valid_before_utc < fx.SIGNED_AT < cert.not_valid_after_utc
    assert cert.issuer == authority.ca_cert.subject
    email = _leaf(fx.sign(authority, fx.statement(), identity="someone@example.com"))
    assert cert_identity(email) == "someone@example.com"


def test_the_log_entry_is_a_one_leaf_tree(authority: testroot.Authority) -> None:
    entry = json.loads(fx.sign(authority, fx.statement()))["verificationMaterial"]["tlogEntries"][0]
    body = base64.b64decode(entry["canonicalizedBody"])
    proof = entry["inclusionProof"]
    assert (proof["treeSize"], proof["logIndex"], proof["hashes"]) == ("1", "0", [])
    assert base64.b64decode(proof["rootHash"]) == hashlib.sha256(b"\x00" + body).digest()
    note = proof["checkpoint"]["envelope"]
    assert note.startswith(
        f"{authority.origin}\n1\n{proof['rootHash']}\n\n\u2014 {authority.log_host} "
    )
    assert entry["integratedTime"] == str(int(fx.SIGNED_AT.timestamp()))


def test_keys_round_trip_through_the_demo_key_file(authority: testroot.Authority) -> None:
    loaded = testroot.authority_from_json(testroot.private_keys_json(authority))
    assert testroot.trusted_root_json(loaded) == testroot.trusted_root_json(authority)
    payload = fx.statement()
    assert fx.sign(loaded, payload) == fx.sign(authority, payload)


def test_signing_time_comes_from_the_statement_then_source_date_epoch(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert signing_time(fx.statement()) == datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    assert signing_time(b'{"predicate": {}}') == datetime.fromtimestamp(1700000000, UTC)
    monkeypatch.delenv("SOURCE_DATE_EPOCH")
    with pytest.raises(UsageError) as info:
        signing_time(b"{}")
    assert (
        info.value.message
        == "the statement has no predicate.attestedAt and SOURCE_DATE_EPOCH is not set"
    )
