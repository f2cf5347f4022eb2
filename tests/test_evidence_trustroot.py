"""Trust roots: the vendored public-good root matches its pins and the installed sigstore; the demo
root is exactly what the generator makes; modified or missing roots are refused."""

from __future__ import annotations

import base64
import hashlib
import json
import os
from pathlib import Path

import pytest
import sigstore
from sigstore.models import TrustedRoot

from generator.core.errors import UsageError
from generator.evidence import testroot
from generator.evidence.sign import demo_authority, write_demo_root
from generator.evidence.trustroot import (
    DEMO_SHA256,
    PUBLIC_GOOD_SHA256,
    load_trust_root,
    trust_root_path,
)
from tests.conftest import CATALOG

SHIPPED = (
    Path(sigstore.__file__).parent
    / "_store"
    / "https%3A%2F%2Ftuf-repo-cdn.sigstore.dev"
    / "trusted_root.json"
)
VENDORED = CATALOG / "trust" / "public-good" / "trusted_root.json"


def test_vendored_public_good_root_matches_the_pin_and_the_installed_package() -> None:
    vendored = VENDORED.read_bytes()
    assert hashlib.sha256(vendored).hexdigest() == PUBLIC_GOOD_SHA256
    assert vendored == SHIPPED.read_bytes()
    pinned_file = (VENDORED.parent / "trusted_root.json.sha256").read_text().split()
    assert pinned_file == [PUBLIC_GOOD_SHA256, "trusted_root.json"]
    assert sigstore.__version__ == "4.5.1"
    TrustedRoot.from_file(str(VENDORED)).get_fulcio_certs()  # parses with the public API


def test_public_good_is_loaded_from_the_project_whatever_the_catalog(tmp_path: Path) -> None:
    root = load_trust_root("public-good", tmp_path)
    assert (root.name, root.sha256, root.demo) == ("public-good", PUBLIC_GOOD_SHA256, False)
    assert trust_root_path("public-good", tmp_path) == VENDORED


def test_a_modified_public_good_root_is_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake_catalog = tmp_path / "catalog"
    target = fake_catalog / "trust" / "public-good" / "trusted_root.json"
    target.parent.mkdir(parents=True)
    target.write_bytes(VENDORED.read_bytes().replace(b"rekor.sigstore.dev", b"rekor.evil.example"))
    monkeypatch.setattr("generator.evidence.trustroot.PROJECT_CATALOG", fake_catalog)
    with pytest.raises(UsageError) as info:
        load_trust_root("public-good")
    assert "refusing a modified root" in info.value.message


def test_demo_root_is_reproducible_and_marked_demo(tmp_path: Path) -> None:
    write_demo_root(tmp_path)
    committed = CATALOG / "trust" / "demo"
    for name in ("trusted_root.json", "DEMO-PRIVATE-KEYS.json"):
        assert (tmp_path / name).read_bytes() == (committed / name).read_bytes(), name
    assert b"DEMO MATERIAL" in (committed / "DEMO-PRIVATE-KEYS.json").read_bytes()
    demo = load_trust_root("demo", CATALOG)
    assert (demo.name, demo.demo) == ("demo", True)


def test_a_missing_file_root_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as info:
        load_trust_root(str(tmp_path / "nope.json"))
    assert info.value.message.startswith(
        f"trust root '{tmp_path / 'nope.json'}': cannot read nope.json"
    )


def test_the_build_never_uses_the_cached_production_root() -> None:
    """`Verifier.production()` reads an unauthenticated, writable cache copy of the root."""
    package = CATALOG.parent / "generator"
    offenders = [
        str(p.relative_to(package.parent))
        for p in sorted(package.rglob("*.py"))
        if "Verifier.production" in p.read_text() or "Verifier.staging" in p.read_text()
    ]
    assert offenders == []
    verify_source = (package / "evidence" / "verify.py").read_text()
    assert "parse_trusted_root(root.data)" in verify_source
    assert "Verifier(trusted_root=" in verify_source


# ---------------------------------------------------------------- roots judged by content


DEMO_FILE = CATALOG / "trust" / "demo" / "trusted_root.json"


def test_the_demo_root_pin_is_the_committed_file() -> None:
    assert hashlib.sha256(DEMO_FILE.read_bytes()).hexdigest() == DEMO_SHA256


def _copies(tmp_path: Path) -> dict[str, Path]:
    """The demo root spelled every way but `demo`: path, link, copy, reformatted, mixed."""
    data = DEMO_FILE.read_bytes()
    out = {"path": DEMO_FILE}
    (tmp_path / "link.json").symlink_to(DEMO_FILE)
    out["link"] = tmp_path / "link.json"
    (tmp_path / "copy.json").write_bytes(data)
    out["copy"] = tmp_path / "copy.json"
    doc = json.loads(data)
    (tmp_path / "compact.json").write_text(json.dumps(doc, separators=(",", ":")))
    out["reformatted"] = tmp_path / "compact.json"
    # the demo CA next to another authority's logs and CA: still demo material
    other = json.loads(testroot.trusted_root_json(testroot.make_authority("other", b"other")))
    other["certificateAuthorities"] += doc["certificateAuthorities"]
    (tmp_path / "mixed.json").write_text(json.dumps(other))
    out["mixed"] = tmp_path / "mixed.json"
    # only the demo transparency-log key, everything else another authority's
    other = json.loads(testroot.trusted_root_json(testroot.make_authority("other", b"other")))
    other["tlogs"] = doc["tlogs"]
    (tmp_path / "tlog.json").write_text(json.dumps(other))
    out["demo tlog key"] = tmp_path / "tlog.json"
    return out


def test_the_demo_root_is_recognised_however_it_is_given(tmp_path: Path) -> None:
    for how, path in _copies(tmp_path).items():
        root = load_trust_root(str(path))
        assert (root.name, root.demo) == ("demo", True), how


def test_a_root_whose_ca_a_demo_key_signed_is_demo(tmp_path: Path) -> None:
    """A new CA certificate (new key) issued by the demo CA key: the demo keys still decide."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec

    demo = demo_authority()
    fresh = testroot.make_authority("fresh", b"fresh")
    cert = (
        x509.CertificateBuilder()
        .subject_name(fresh.ca_cert.subject)
        .issuer_name(demo.ca_cert.subject)
        .public_key(fresh.ca_key.public_key())
        .serial_number(7)
        .not_valid_before(testroot.ROOT_NOT_BEFORE)
        .not_valid_after(testroot.ROOT_NOT_AFTER)
        .add_extension(x509.BasicConstraints(ca=True, path_length=1), critical=True)
        .sign(demo.ca_key, hashes.SHA256())
    )
    assert isinstance(cert.public_key(), ec.EllipticCurvePublicKey)
    doc = json.loads(testroot.trusted_root_json(fresh))
    from cryptography.hazmat.primitives import serialization

    der = cert.public_bytes(serialization.Encoding.DER)
    doc["certificateAuthorities"][0]["certChain"]["certificates"] = [
        {"rawBytes": base64.b64encode(der).decode()}
    ]
    path = tmp_path / "issued.json"
    path.write_text(json.dumps(doc))
    assert load_trust_root(str(path)).demo is True
    # the same root without the demo-issued certificate is not demo, and is named by its digest
    plain = tmp_path / "plain.json"
    plain.write_bytes(testroot.trusted_root_json(fresh))
    root = load_trust_root(str(plain))
    digest = hashlib.sha256(plain.read_bytes()).hexdigest()
    assert (root.demo, root.name, root.sha256) == (False, f"sha256:{digest[:16]}", digest)


def test_a_copy_of_public_good_given_by_path_is_public_good(tmp_path: Path) -> None:
    copy = tmp_path / "pg.json"
    copy.write_bytes(VENDORED.read_bytes())
    root = load_trust_root(str(copy))
    assert (root.name, root.demo) == ("public-good", False)


@pytest.mark.parametrize(
    "content",
    [b"", b"not json", b"{}", b'{"mediaType": "x"}', b"[1, 2]", b'{"mediaType": 1}'],
)
def test_a_corrupt_root_is_a_usage_error(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "broken.json"
    path.write_bytes(content)
    with pytest.raises(UsageError) as info:
        load_trust_root(str(path))
    assert "is not a usable Sigstore trusted root" in info.value.message


def test_a_root_without_logs_is_a_usage_error(tmp_path: Path) -> None:
    doc = json.loads(DEMO_FILE.read_bytes())
    doc["tlogs"] = []
    path = tmp_path / "nologs.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(UsageError) as info:
        load_trust_root(str(path))
    assert "Rekor keys" in info.value.message


def test_a_fifo_root_does_not_block(tmp_path: Path) -> None:
    fifo = tmp_path / "root.json"
    os.mkfifo(fifo)
    with pytest.raises(UsageError) as info:
        load_trust_root(str(fifo))
    assert "not a regular file" in info.value.message
