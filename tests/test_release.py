"""`release`: reproducible assets from a clean tagged tree, and every refusal with its message."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from generator.cli import main
from generator.core import markdown
from tests.conftest import REPO

ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
    "GIT_AUTHOR_DATE": "2026-11-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2026-11-01T00:00:00Z",
}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, **ENV},
    ).stdout


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    r = tmp_path_factory.mktemp("release") / "repo"
    r.mkdir()
    for name in ("catalog", "evidence", "docs"):
        shutil.copytree(REPO / name, r / name)
    shutil.copy(REPO / "mkdocs.yml", r / "mkdocs.yml")
    git(r, "init", "-q", "-b", "main")
    git(r, "add", "-A")
    git(r, "commit", "-q", "-m", "base")
    git(r, "tag", "v0.1.0")
    return r


def release(repo: Path, *args: str) -> tuple[int, str]:
    old = Path.cwd()
    os.chdir(repo)
    try:
        res = CliRunner().invoke(main, ["release", *args], catch_exceptions=False)
    finally:
        os.chdir(old)
    return res.exit_code, res.stdout + res.stderr


def tree_digests(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_release_twice_is_byte_identical_and_complete(repo: Path, tmp_path: Path) -> None:
    code, out = release(repo, "--version", "v0.1.0", "-o", str(tmp_path / "a"))
    assert code == 0, out
    assert "released v0.1.0" in out and "(first release)" in out
    code, out = release(repo, "--version", "v0.1.0", "-o", str(tmp_path / "b"))
    assert code == 0, out
    a, b = tree_digests(tmp_path / "a"), tree_digests(tmp_path / "b")
    assert a == b
    assert (tmp_path / "a" / "SHA256SUMS").read_bytes() == (
        tmp_path / "b" / "SHA256SUMS"
    ).read_bytes()
    sums = (tmp_path / "a" / "SHA256SUMS").read_text().splitlines()
    listed = {line.split("  ", 1)[1]: line.split("  ", 1)[0] for line in sums}
    assert listed == {k: v for k, v in a.items() if k != "SHA256SUMS"}
    assert "release-manifest.json" in listed and "aicr-catalog-site-v0.1.0.tar.gz" in listed
    assert any(k.startswith("gb300-eks-ubuntu-training-slurm-nvl72-2304-") for k in listed)
    assert all("/" not in k for k in listed), "release assets are flat"
    manifest = json.loads((tmp_path / "a" / "release-manifest.json").read_text())
    assert manifest["evidence"], "the repository's sample evidence is listed (not counted)"
    for e in manifest["evidence"]:
        # the file's sha256, not a run id
        assert e["sha256"] == hashlib.sha256((repo / e["path"]).read_bytes()).hexdigest(), e
        assert e["counted"] is False


def test_the_demo_root_is_refused_however_it_is_given(repo: Path, tmp_path: Path) -> None:
    """Issue #16, attack 1: `--trust-root catalog/trust/demo/trusted_root.json` made the demo
    root count as real. The root is recognised by its content: a path, a link, a copy."""
    demo = repo / "catalog" / "trust" / "demo" / "trusted_root.json"
    (tmp_path / "link.json").symlink_to(demo)
    (tmp_path / "copy.json").write_bytes(demo.read_bytes())
    for spec in (
        "catalog/trust/demo/trusted_root.json",
        tmp_path / "link.json",
        tmp_path / "copy.json",
    ):
        code, out = release(
            repo, "--version", "v0.2.0", "--trust-root", str(spec), "-o", str(tmp_path / "d")
        )
        assert code == 1, out
        assert "error: release refuses the demo trust root" in out
        assert "recognised by its content" in out
    assert not (tmp_path / "d").exists()


def test_refusals(repo: Path, tmp_path: Path) -> None:
    out_dir = str(tmp_path / "x")
    code, out = release(repo, "--version", "1.0", "-o", out_dir)
    assert code == 1 and "error: version '1.0' is not of the form vMAJOR.MINOR.PATCH" in out
    code, out = release(repo, "--version", "v0.2.0", "--trust-root", "demo", "-o", out_dir)
    assert code == 1
    assert (
        "error: release refuses the demo trust root: sample evidence must never count as qualification"
        in out
    )
    code, out = release(repo, "--version", "v0.0.9", "-o", out_dir)
    assert (
        code == 1 and "error: version v0.0.9 is not greater than the previous release v0.1.0" in out
    )
    code, out = release(repo, "--version", "v0.1.0", "--previous", "v0.1.0", "-o", out_dir)
    assert code == 1 and "is not greater than the previous release v0.1.0" in out
    (repo / "catalog" / "stray.txt").write_text("uncommitted\n")
    try:
        code, out = release(repo, "--version", "v0.2.0", "-o", out_dir)
        assert code == 1
        assert (
            "error: the working tree is not clean (catalog/stray.txt); a release builds only from a clean tree"
            in out
        )
    finally:
        (repo / "catalog" / "stray.txt").unlink()
    assert not (tmp_path / "x").exists(), "a refused release writes nothing"


def test_changelog_against_previous_release_and_tag_elsewhere(repo: Path, tmp_path: Path) -> None:
    values = repo / "catalog/components/slinky-slurm/values.yaml"
    values.write_text(values.read_text() + "\n# tuned for the test\ntestOnlyKey: 1\n")
    git(repo, "commit", "-q", "-am", "tune slurm")
    code, out = release(repo, "--version", "v0.1.0", "-o", str(tmp_path / "y"))
    assert code == 1 and "error: tag v0.1.0 points at" in out and "not at HEAD" in out
    code, out = release(repo, "--version", "v0.2.0", "-o", str(tmp_path / "rel"))
    assert code == 0, out
    assert "(changelog against v0.1.0)" in out
    log = (tmp_path / "rel" / "CHANGELOG.md").read_text()
    assert log.startswith("# v0.2.0\n")
    assert (
        "| `gb300-eks-ubuntu-training-slurm` | "
        + markdown.text("nvl72-2304")
        + " | changed | "
        + markdown.text("values file components/slinky-slurm/values.yaml changed")
        in log
    )
    assert "h100-eks-ubuntu-inference-dynamo" not in log  # untouched recipes are not listed
