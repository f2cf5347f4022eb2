"""The demo-root check's pieces that no other test pins down (issue 32, `make mutation`).

`generator/evidence/trustroot.py` recognises the demo root by what it holds. Each test fails on
a mutant of that module that the rest of the suite let through: a certificate signed without a
hash algorithm (Ed25519) or by another key is not demo material, every section of a
trusted_root.json is searched and malformed entries are skipped, not fatal.
"""

from __future__ import annotations

import base64
import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from cryptography.x509.oid import NameOID

from generator.core.errors import UsageError
from generator.evidence import testroot
from generator.evidence import trustroot as tr
from generator.evidence.model import RootUse

NAME = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "t")])


def _builder(public_key: object) -> x509.CertificateBuilder:
    return (
        x509.CertificateBuilder()
        .subject_name(NAME)
        .issuer_name(NAME)
        .public_key(public_key)  # type: ignore[arg-type]
        .serial_number(1)
        .not_valid_before(datetime(2026, 1, 1, tzinfo=UTC))
        .not_valid_after(datetime(2027, 1, 1, tzinfo=UTC))
    )


def _demo() -> testroot.Authority:
    return testroot.make_authority("aicr-demo", tr.DEMO_SEED)


def _b64(der: bytes) -> str:
    return base64.b64encode(der).decode()


def test_signed_by_is_false_for_an_ed25519_certificate_and_for_another_key() -> None:
    ed = ed25519.Ed25519PrivateKey.from_private_bytes(b"\x01" * 32)
    ed_cert = _builder(ed.public_key()).sign(ed, None)
    assert ed_cert.signature_hash_algorithm is None
    assert not any(tr._signed_by(ed_cert, k) for k in tr.demo_public_keys())
    other = ec.derive_private_key(5, ec.SECP256R1())
    demo = _demo()
    by_demo = _builder(other.public_key()).sign(demo.ca_key, hashes.SHA256())
    by_other = _builder(other.public_key()).sign(other, hashes.SHA256())
    assert tr._signed_by(by_demo, demo.ca_key.public_key())
    assert not tr._signed_by(by_other, demo.ca_key.public_key())
    assert not tr._signed_by(by_demo, other.public_key())


def _root_with(section: str, item: dict[str, object]) -> bytes:
    if section in ("certificateAuthorities", "timestampAuthorities"):
        return json.dumps({section: [{"certChain": {"certificates": [item]}}]}).encode()
    return json.dumps({section: [{"publicKey": item}]}).encode()


@pytest.mark.parametrize("section", ["certificateAuthorities", "timestampAuthorities"])
def test_a_demo_certificate_in_either_authority_section_is_found(section: str) -> None:
    demo = _demo()
    der = demo.ca_cert.public_bytes(serialization.Encoding.DER)
    assert tr.holds_demo_material(_root_with(section, {"rawBytes": _b64(der)}))
    other = ec.derive_private_key(5, ec.SECP256R1())
    issued = _builder(other.public_key()).sign(demo.ct_key, hashes.SHA256())
    der = issued.public_bytes(serialization.Encoding.DER)
    assert tr.holds_demo_material(_root_with(section, {"rawBytes": _b64(der)}))
    plain = _builder(other.public_key()).sign(other, hashes.SHA256())
    der = plain.public_bytes(serialization.Encoding.DER)
    assert not tr.holds_demo_material(_root_with(section, {"rawBytes": _b64(der)}))


@pytest.mark.parametrize("section", ["tlogs", "ctlogs"])
def test_a_demo_key_in_either_log_section_is_found(section: str) -> None:
    demo = _demo()
    for key in (demo.rekor_key, demo.ct_key, demo.ca_key):
        der = key.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        assert tr.holds_demo_material(_root_with(section, {"rawBytes": _b64(der)}))
    other = ec.derive_private_key(5, ec.SECP256R1()).public_key()
    der = other.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    assert not tr.holds_demo_material(_root_with(section, {"rawBytes": _b64(der)}))


def test_malformed_entries_are_skipped_and_the_search_goes_on() -> None:
    demo = _demo()
    good = _b64(
        demo.rekor_key.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    doc = {
        "certificateAuthorities": [
            "not a mapping",
            {"certChain": "not a mapping"},
            {"certChain": {"certificates": ["x", {"rawBytes": 5}, {"rawBytes": "!!notb64"}]}},
            {"certChain": {"certificates": [{"rawBytes": _b64(b"not DER")}]}},
        ],
        "tlogs": [
            "x",
            {"publicKey": "x"},
            {"publicKey": {"rawBytes": _b64(b"not a key")}},
            {"publicKey": {"rawBytes": good}},
        ],
    }
    assert tr.holds_demo_material(json.dumps(doc).encode())
    doc["tlogs"] = doc["tlogs"][:-1]
    assert not tr.holds_demo_material(json.dumps(doc).encode())
    for raw in (b"not json", b"[]", b"null", b'{"tlogs": null}'):
        assert not tr.holds_demo_material(raw)


def test_trust_root_paths() -> None:
    assert tr.trust_root_path("public-good") == (
        tr.PROJECT_CATALOG / "trust" / "public-good" / "trusted_root.json"
    )
    assert str(tr.trust_root_path("demo")).endswith("trust/demo/trusted_root.json")
    assert str(tr.trust_root_path("x/y.json")) == "x/y.json"
    assert tr.root_name("ab" * 32) == "sha256:" + "ab" * 8


def test_a_named_root_must_stay_inside_the_catalogs_trust_directory(tmp_path: Path) -> None:
    catalog = tmp_path / "catalog"
    (catalog / "trust" / "demo").mkdir(parents=True)
    outside = tmp_path / "elsewhere.json"
    outside.write_bytes((tr.PROJECT_CATALOG / "trust" / "demo" / "trusted_root.json").read_bytes())
    (catalog / "trust" / "demo" / "trusted_root.json").symlink_to(outside)
    with pytest.raises(UsageError) as info:
        tr.load_trust_root("demo", catalog)
    assert "symbolic link points outside the catalog" in str(info.value)
    # a root given by its path may be a link anywhere: the user named it
    assert tr.load_trust_root(str(catalog / "trust" / "demo" / "trusted_root.json")).demo


def test_a_root_sigstore_cannot_read_is_named_by_the_first_line_of_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from sigstore_models.trustroot import v1 as trustroot_v1

    def refuse(data: bytes) -> object:
        raise ValueError("x" * 400 + "\nsecond line")

    monkeypatch.setattr(trustroot_v1.TrustedRoot, "from_json", refuse)
    with pytest.raises(ValueError) as info:
        tr.parse_trusted_root(b"{}")
    assert str(info.value) == "x" * 300

    def silent(data: bytes) -> object:
        raise KeyError()

    monkeypatch.setattr(trustroot_v1.TrustedRoot, "from_json", silent)
    with pytest.raises(ValueError, match=r"^KeyError$"):
        tr.parse_trusted_root(b"{}")


def test_an_unusable_root_is_a_usage_error_located_at_the_root_named(tmp_path: Path) -> None:
    bad = tmp_path / "root.json"
    bad.write_text("{}")
    with pytest.raises(UsageError) as info:
        tr.load_trust_root(str(bad))
    (d,) = info.value.diagnostics
    assert (d.path, d.line, d.col, d.json_path, d.rule) == (str(bad), 0, 0, "$", "trust-root")
    assert d.message.startswith(f"trust root {str(bad)!r}: root.json is not a usable")


def test_a_release_refuses_the_demo_root_and_says_how_it_was_recognised(tmp_path: Path) -> None:
    """By name when given as `demo`, by its content (with the digest) when given as a copy; the
    pinned public-good root and any other root are accepted for a release."""
    with pytest.raises(UsageError) as named:
        tr.load_trust_root("demo", use=RootUse.RELEASE)
    (d,) = named.value.diagnostics
    assert (d.path, d.rule) == ("demo", "trust-root.demo")
    assert d.message == (
        "trust root 'demo' is the demo root (recognised by name), whose private keys are "
        "public: a release refuses the demo trust root"
    )
    data = (tr.PROJECT_CATALOG / "trust" / "demo" / "trusted_root.json").read_bytes()
    copy = tmp_path / "copy.json"
    copy.write_bytes(data)
    with pytest.raises(UsageError) as by_content:
        tr.load_trust_root(str(copy), use=RootUse.RELEASE)
    digest = hashlib.sha256(data).hexdigest()
    assert by_content.value.diagnostics[0].message == (
        f"trust root {str(copy)!r} is the demo root (recognised by its content, sha256 "
        f"{digest}), whose private keys are public: a release refuses the demo trust root"
    )
    assert tr.load_trust_root(str(copy)).demo  # evidence: accepted, labelled demo
    public = tr.load_trust_root("public-good", use=RootUse.RELEASE)
    assert (public.name, public.demo) == ("public-good", False)
