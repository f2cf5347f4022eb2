"""`aicr-catalog evidence ...` end to end through click: sign with the demo root, verify, show,
digest; whole transcripts, JSON against its schema, and the exit-code contract."""

from __future__ import annotations

import json
import os
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from generator.catalog.load import load_catalog
from generator.catalog.resolve import resolve
from generator.cli import main
from generator.core.errors import CatalogError
from generator.evidence.sign import DEMO_IDENTITY, DEMO_ISSUER
from generator.evidence.statement import build_statement
from generator.evidence.store import evidence_path, source_id
from tests import evidence_fixtures as fx
from tests.conftest import CATALOG

SCHEMA = json.loads((CATALOG / "schemas" / "evidence-verification.schema.json").read_text())


def run(cwd: Path, *args: str) -> tuple[int, str, str]:
    old = Path.cwd()
    os.chdir(cwd)
    try:
        res = CliRunner().invoke(main, list(args), catch_exceptions=False)
    finally:
        os.chdir(old)
    return res.exit_code, res.stdout, res.stderr


@pytest.fixture(scope="module")
def leaf() -> tuple[str, str]:
    """A leaf recipe of the repository catalog and its current digest (standard profile)."""
    catalog, _ = load_catalog(CATALOG)
    for name in catalog.leaves():
        try:
            return name, resolve(catalog, name, profile="standard").digest
        except CatalogError:  # any leaf that resolves will do
            continue
    pytest.skip("no leaf of the catalog resolves")


def _statement(tmp_path: Path, recipe: str, digest: str, **changes: object) -> tuple[Path, bytes]:
    pred = fx.predicate(
        recipe={"name": recipe, "digest": digest},
        scaleProfile={"name": "standard", "version": "1.0.0"},
        sample=True,
        **changes,
    )
    data = build_statement(pred)
    path = tmp_path / "statement.json"
    path.write_bytes(data)
    return path, data


def test_sign_with_the_demo_root_then_verify_text(tmp_path: Path, leaf: tuple[str, str]) -> None:
    recipe, digest = leaf
    _, data = _statement(tmp_path, recipe, digest)
    code, out, err = run(
        tmp_path,
        "evidence",
        "sign",
        "statement.json",
        "--trust-root",
        "demo",
        "--catalog",
        str(CATALOG),
    )
    rel = evidence_path(recipe, DEMO_ISSUER, DEMO_IDENTITY, data)
    assert (code, out, err) == (0, f"{rel}\n", "")
    code, out, err = run(
        tmp_path,
        "evidence",
        "verify",
        "evidence",
        "--trust-root",
        "demo",
        "--catalog",
        str(CATALOG),
    )
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].startswith(
        f"VERIFIED {rel}: recipe {recipe} @ standard, lane l144, verdict fail; "
    )
    assert (
        f"signed by Demo qualification lab (sample) (first-party) {DEMO_IDENTITY} via {DEMO_ISSUER}; "
        "trust root demo, log index " in lines[0]
    )
    assert lines[0].endswith(" at 2026-11-30T10:00:00Z [SAMPLE]")
    assert lines[1:] == ["1 file(s): 1 verified, 0 stale, 0 rejected (1 sample)"]
    # the same statement signed again gives the same bytes (deterministic demo signing)
    first = (tmp_path / rel).read_bytes()
    run(
        tmp_path,
        "evidence",
        "sign",
        "statement.json",
        "--trust-root",
        "demo",
        "-o",
        "again.json",
        "--catalog",
        str(CATALOG),
    )
    assert (tmp_path / "again.json").read_bytes() == first


def test_verify_json_validates_and_reports_each_status(
    tmp_path: Path, leaf: tuple[str, str]
) -> None:
    recipe, digest = leaf
    _statement(tmp_path, recipe, digest)
    run(
        tmp_path,
        "evidence",
        "sign",
        "statement.json",
        "--trust-root",
        "demo",
        "--catalog",
        str(CATALOG),
    )
    _statement(tmp_path, recipe, "sha256:" + "9" * 64)
    run(
        tmp_path,
        "evidence",
        "sign",
        "statement.json",
        "--trust-root",
        "demo",
        "--catalog",
        str(CATALOG),
    )
    junk = tmp_path / "evidence" / recipe / "junk.sigstore.json"
    junk.write_text("{}")
    code, out, err = run(
        tmp_path,
        "evidence",
        "verify",
        "evidence",
        "--trust-root",
        "demo",
        "--format",
        "json",
        "--catalog",
        str(CATALOG),
    )
    assert (code, err) == (1, "")
    doc = json.loads(out)
    jsonschema.Draft202012Validator(SCHEMA).validate(doc)
    assert doc["summary"] == {"verified": 1, "stale": 1, "rejected": 1, "sample": 2}
    by_status = {r["state"]: r for r in doc["results"]}
    assert by_status["verified"]["currentDigest"] == digest and by_status["verified"]["counted"]
    assert by_status["verified"]["signer"] == {
        "identity": DEMO_IDENTITY,
        "issuer": DEMO_ISSUER,
        "label": "Demo qualification lab (sample)",
        "class": "first-party",
    }
    verified = by_status["verified"]["repositoryPath"]
    assert f"/{source_id(DEMO_ISSUER, DEMO_IDENTITY)}/" in verified  # the signer's directory
    stale = by_status["stale"]
    assert (stale["class"], stale["recipeDigest"], stale["currentDigest"]) == (
        "stale",
        "sha256:" + "9" * 64,
        digest,
    )
    rejected = by_status["rejected"]
    assert (rejected["class"], rejected["repositoryPath"]) == (
        "malformed-bundle",
        f"evidence/{recipe}/junk.sigstore.json",
    )
    assert doc["trustRoots"][0]["name"] == "demo" and doc["trustRoots"][0]["demo"] is True
    # deterministic: the same run gives the same bytes
    assert (
        run(
            tmp_path,
            "evidence",
            "verify",
            "evidence",
            "--trust-root",
            "demo",
            "--format",
            "json",
            "--catalog",
            str(CATALOG),
        )[1]
        == out
    )


def test_demo_evidence_is_untrusted_by_default(tmp_path: Path, leaf: tuple[str, str]) -> None:
    _statement(tmp_path, *leaf)
    run(
        tmp_path,
        "evidence",
        "sign",
        "statement.json",
        "--trust-root",
        "demo",
        "--catalog",
        str(CATALOG),
    )
    code, out, _ = run(tmp_path, "evidence", "verify", "evidence", "--catalog", str(CATALOG))
    assert code == 1
    assert out.startswith("REJECTED evidence/")
    assert "certificate does not chain to trust root public-good" in out
    assert out.endswith("1 file(s): 0 verified, 0 stale, 1 rejected (0 sample)\n")


def test_show_renders_the_statement(tmp_path: Path, leaf: tuple[str, str]) -> None:
    recipe, digest = leaf
    _statement(tmp_path, recipe, digest)
    _, out, _ = run(
        tmp_path,
        "evidence",
        "sign",
        "statement.json",
        "--trust-root",
        "demo",
        "--catalog",
        str(CATALOG),
    )
    code, out, err = run(
        tmp_path, "evidence", "show", out.strip(), "--trust-root", "demo", "--catalog", str(CATALOG)
    )
    assert (code, err) == (0, "")
    body = out.split("\n", 1)[1]
    assert body == (
        "predicate type   https://aicr.run/scale-qualification/v1\n"
        f"recipe           {recipe}\n"
        f"recipe digest    {digest}\n"
        "scale profile    standard 1.0.0\n"
        "lane             l144 (144 nodes, criteria 1.0.0)\n"
        "observed         144 nodes, 576 GPUs\n"
        f"bundle digest    sha256:{'b' * 64}\n"
        "attested at      2026-11-30T10:00:00Z\n"
        "generator        aicr-catalog 0.1.0\n"
        "sample           yes (sample/demo data: never released)\n"
        "verdict          fail\n"
        "  reason: kpi nccl-busbw 350.5 GB/s is not >= 380\n"
        "components\n"
        "  gpu-operator                   v25.3.0\n"
        "  network-operator               v25.4.0\n"
        "phase deployment\n"
        "  [passed] operators-ready on 144 target(s)\n"
        "phase conformance\n"
        "  [passed] dra-allocation on 144 target(s)\n"
        "phase performance\n"
        "  [failed] nccl-all-reduce on 144 target(s) — low\n"
        "KPIs\n"
        "  [failed] nccl-busbw: 350.5 GB/s (threshold >= 380)\n"
    )


def test_show_of_an_unverified_bundle_says_so(tmp_path: Path, leaf: tuple[str, str]) -> None:
    _statement(tmp_path, *leaf)
    _, out, _ = run(
        tmp_path,
        "evidence",
        "sign",
        "statement.json",
        "--trust-root",
        "demo",
        "--catalog",
        str(CATALOG),
    )
    code, out, _ = run(tmp_path, "evidence", "show", out.strip(), "--catalog", str(CATALOG))
    assert code == 1
    assert out.splitlines()[1] == "(statement shown UNVERIFIED: the bundle did not verify)"
    assert "verdict          fail" in out


def test_sign_refuses_a_statement_that_is_not_evidence(
    tmp_path: Path, leaf: tuple[str, str]
) -> None:
    _statement(tmp_path, *leaf, verdict="maybe")
    code, out, err = run(
        tmp_path,
        "evidence",
        "sign",
        "statement.json",
        "--trust-root",
        "demo",
        "--catalog",
        str(CATALOG),
    )
    assert (code, out) == (1, "")
    assert err.startswith(
        "error: statement.json: predicate fails the https://aicr.run/scale-qualification/v1 schema: "
    )
    assert err.rstrip().endswith("[predicate-schema]")


def test_keyless_sign_without_an_identity_token_is_a_usage_error(
    tmp_path: Path, leaf: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sigstore.oidc.detect_credential", lambda *a, **k: None)
    _statement(tmp_path, *leaf)
    code, out, err = run(tmp_path, "evidence", "sign", "statement.json", "--catalog", str(CATALOG))
    assert (code, out) == (2, "")
    assert err.startswith("error: no ambient identity token: keyless signing runs in CI")


def test_digest_prints_the_current_recipe_digest(tmp_path: Path, leaf: tuple[str, str]) -> None:
    recipe, digest = leaf
    assert run(tmp_path, "evidence", "digest", "--recipe", recipe, "--catalog", str(CATALOG)) == (
        0,
        f"{digest}\n",
        "",
    )
    code, out, err = run(
        tmp_path, "evidence", "digest", "--recipe", "no-such-recipe", "--catalog", str(CATALOG)
    )
    assert (code, out) == (1, "")
    assert "no-such-recipe" in err


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    (tmp_path / "x.sigstore.json").write_text("{}")
    code, _, err = run(
        tmp_path,
        "evidence",
        "verify",
        "x.sigstore.json",
        "--trust-root",
        "missing.json",
        "--catalog",
        str(CATALOG),
    )
    assert code == 2 and "trust root 'missing.json': cannot read missing.json" in err
    # a corrupt root is a usage error, not every file "malformed" with exit 0 or 1 (issue #17.8)
    (tmp_path / "corrupt.json").write_text('{"mediaType": "application/json"}')
    (tmp_path / "evidence").mkdir()
    (tmp_path / "evidence" / "x.sigstore.json").write_text("{}")
    build = ("build", "--no-bundles", "--evidence", "evidence", "-o", str(tmp_path / "site"))
    for command in (("evidence", "verify", "x.sigstore.json"), ("status",), build):
        code, out, err = run(
            tmp_path, *command, "--trust-root", "corrupt.json", "--catalog", str(CATALOG)
        )
        assert code == 2, (command, out, err)
        assert "corrupt.json is not a usable Sigstore trusted root" in err
        assert "malformed" not in out + err
    (tmp_path / "empty").mkdir()
    code, _, err = run(tmp_path, "evidence", "verify", "empty", "--catalog", str(CATALOG))
    assert (code, err) == (
        2,
        "error: no *.sigstore.json evidence file or sha256-<hex>.yaml pointer found under the "
        "given paths\n",
    )
    assert run(tmp_path, "evidence", "verify")[0] == 2


def test_help_documents_exit_codes_and_keyless_limits() -> None:
    for sub in ("verify", "show", "sign", "digest"):
        code, out, _ = run(Path.cwd(), "evidence", sub, "--help")
        assert code == 0 and "Exit codes:" in out, sub
    _, out, _ = run(Path.cwd(), "evidence", "sign", "--help")
    assert "cannot run offline" in out


def test_sign_refuses_a_pipe_or_an_oversized_statement_without_reading_it(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.json")  # reading it would block until a writer comes
    with (tmp_path / "big.json").open("wb") as fh:
        fh.truncate(2 * 1024 * 1024)
    for name, why in [
        ("pipe.json", "not a regular file [file.not-regular]"),
        ("big.json", "file is 2097152 bytes; the limit is 1048576 bytes [file.too-large]"),
    ]:
        args = ("evidence", "sign", name, "--trust-root", "demo", "--catalog", str(CATALOG))
        assert run(tmp_path, *args) == (2, "", f"error: {name}: {why}\n")
