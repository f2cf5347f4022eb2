"""The site's default repository link: the web address of the catalog's git remote."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from generator.core.gitremote import remote_web_url, web_url


@pytest.mark.parametrize(
    ("remote", "web"),
    [
        ("git@github.com:NVIDIA/aicr-catalog.git", "https://github.com/NVIDIA/aicr-catalog"),
        ("https://github.com/NVIDIA/aicr-catalog.git/", "https://github.com/NVIDIA/aicr-catalog"),
        (
            "ssh://git@gitlab.example.com/grp/sub/repo.git",
            "https://gitlab.example.com/grp/sub/repo",
        ),
        # credentials in a remote never reach a page
        ("https://user:token@github.com/o/n", "https://github.com/o/n"),
        ("https://GitHub.com:8443/o/n", "https://github.com:8443/o/n"),
        # no web address: a local path, a file URL, a host alone
        ("/srv/git/repo.git", ""),
        ("file:///srv/git/repo", ""),
        ("https://github.com/", ""),
        ("", ""),
    ],
)
def test_web_url(remote: str, web: str) -> None:
    assert web_url(remote) == web


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def test_remote_web_url_prefers_origin(tmp_path: Path) -> None:
    _git(tmp_path, "init", "-q")
    assert remote_web_url(tmp_path) == ""
    _git(tmp_path, "remote", "add", "alpha", "git@example.org:a/first.git")
    (tmp_path / "catalog").mkdir()
    assert remote_web_url(tmp_path / "catalog") == "https://example.org/a/first"
    _git(tmp_path, "remote", "add", "origin", "https://example.org/o/catalog.git")
    assert remote_web_url(tmp_path / "catalog") == "https://example.org/o/catalog"


def test_no_git_repository_gives_no_link(tmp_path: Path) -> None:
    assert remote_web_url(tmp_path) == ""
