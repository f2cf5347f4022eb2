"""Issue 29, stale sites: an input that changes between two builds into one output reaches
every file of the second build, whatever route it takes into the build.

tests/test_pipeline.py holds the cases the issue measured (`--repo-url A` then `--repo-url B`;
an edit to SECURITY.md or CONTRIBUTING.md). These are the same inputs by the other routes: the
repository link taken from the catalog's git remote when no `--repo-url` is given (the remote
changes, the command line does not), and the site URL (`--site-url`), which every absolute
address of the site (the sitemap, the feed, the badge snippets) is made from.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from generator.bench.synth import SynthOptions, synthesize
from tests.synth_site import cli_build

EPOCH = 1767225600


@pytest.fixture(scope="module")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("synth")
    synthesize(SynthOptions(2, 6, seed=3, jobs=1), out)
    return out


@pytest.fixture(autouse=True)
def _env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AICR_CATALOG_CACHE_KEY", str(tmp_path / "cache.key"))
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(EPOCH))


def _holding(out: Path, needle: bytes) -> list[str]:
    return sorted(
        p.relative_to(out).as_posix()
        for p in out.rglob("*")
        if p.is_file() and needle in p.read_bytes()
    )


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, timeout=30)


def test_a_changed_git_remote_replaces_the_repository_link_everywhere(
    synth: Path, tmp_path: Path
) -> None:
    _git(synth / "catalog", "init", "-q")
    try:
        _git(synth / "catalog", "remote", "add", "origin", "https://example.org/o/first-remote.git")
        out = tmp_path / "site"
        assert "https://example.org/o/first-remote" in cli_build(synth, out)
        linked = _holding(out, b"first-remote")
        assert len(linked) > 10  # every page links to the repository
        _git(synth / "catalog", "remote", "set-url", "origin", "https://example.org/o/moved.git")
        assert "https://example.org/o/moved" in cli_build(synth, out)
        assert _holding(out, b"first-remote") == []
        assert set(linked) <= set(_holding(out, b"example.org/o/moved"))
    finally:
        shutil.rmtree(synth / "catalog" / ".git")


def test_a_second_site_url_replaces_the_first_everywhere(synth: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    cli_build(synth, out, "--site-url", "https://first.example.org/catalog/")
    written = _holding(out, b"first.example.org")
    assert "sitemap.xml" in written
    cli_build(synth, out, "--site-url", "https://second.example.org/catalog/")
    assert _holding(out, b"first.example.org") == []
    assert set(written) <= set(_holding(out, b"second.example.org"))
