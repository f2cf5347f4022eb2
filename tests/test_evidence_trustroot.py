"""Trust roots: the vendored public-good root matches its pins and the installed sigstore; the demo
root is exactly what the generator makes; modified or missing roots are refused."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import sigstore
from sigstore.models import TrustedRoot

from generator.errors import UsageError
from generator.evidence.sign import write_demo_root
from generator.evidence.trustroot import (
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
    assert "TrustedRoot.from_file(" in verify_source and "Verifier(trusted_root=" in verify_source
