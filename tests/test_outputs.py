"""Output directories that must never be replaced (generator/core/outputs.py), through the real CLI.

Each refused case checks the exit code (2, usage), the message naming the rule, and that every
file that was there before is still there, byte for byte, afterwards.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from generator.cli import main
from generator.core.errors import UsageError
from generator.core.outputs import MARKER, OutputKind, check_output_dir, marked_kind
from tests.conftest import CATALOG

RECIPE = "gb300-eks-ubuntu-training"


def snapshot(root: Path) -> dict[str, str]:
    """Every file and link under `root` with a digest of its content (or link target)."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames + [d for d in dirnames if os.path.islink(Path(dirpath, d))]:
            p = Path(dirpath, name)
            rel = p.relative_to(root).as_posix()
            if p.is_symlink():
                out[rel] = "link:" + os.readlink(p)
            else:
                out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


@pytest.fixture()
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A small repository holding a copy of the catalog, a .git directory and a user's file;
    the current directory is its root."""
    ws = tmp_path / "repo"
    shutil.copytree(CATALOG, ws / "catalog")
    (ws / "evidence").mkdir()
    (ws / ".git").mkdir()
    (ws / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (ws / "notes.txt").write_text("someone's work\n")
    monkeypatch.chdir(ws)
    return ws


def invoke(*args: str) -> tuple[int, str]:
    res = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return res.exit_code, res.stderr


BUILD = ("build", "--catalog", "catalog", "--evidence", "evidence", "--no-cache")


@pytest.mark.parametrize(
    ("out", "says"),
    [
        (".", "current directory"),
        ("..", "current directory"),
        ("catalog", "is an input"),
        ("catalog/overlays", "inside the input"),
        ("evidence", "is an input"),
        ("evidence/site", "inside the input"),
        ("/", "file-system root"),
    ],
)
def test_build_refuses_an_output_that_would_lose_data(workspace: Path, out: str, says: str) -> None:
    before = snapshot(workspace)
    code, err = invoke(*BUILD, "-o", out)
    assert code == 2, err
    assert says in err
    assert snapshot(workspace) == before


def test_build_refuses_a_directory_of_someone_elses_files(workspace: Path) -> None:
    (workspace / "docs").mkdir()
    (workspace / "docs" / "guide.md").write_text("# mine\n")
    before = snapshot(workspace)
    code, err = invoke(*BUILD, "-o", "docs")
    assert code == 2 and "not marked as this tool's site output" in err
    assert snapshot(workspace) == before


def test_repository_root_elsewhere_is_refused(workspace: Path, tmp_path: Path) -> None:
    other = tmp_path / "other-repo"
    (other / ".git").mkdir(parents=True)
    (other / MARKER).write_text("site\n")  # even a mark does not make a repository replaceable
    code, err = invoke(*BUILD, "-o", str(other))
    assert code == 2 and "repository root" in err
    assert (other / ".git").is_dir()


def test_symlinked_output_is_refused(workspace: Path, tmp_path: Path) -> None:
    target = tmp_path / "real-site"
    target.mkdir()
    (workspace / "site").symlink_to(target)
    code, err = invoke(*BUILD, "-o", "site")
    assert code == 2 and "symbolic link" in err
    assert (workspace / "site").is_symlink() and target.is_dir()


def test_bundle_refuses_a_directory_holding_someones_files(workspace: Path) -> None:
    mine = workspace / "mine"
    mine.mkdir()
    (mine / "keep.txt").write_text("keep me\n")
    before = snapshot(workspace)
    code, err = invoke("bundle", "--recipe", RECIPE, "--catalog", "catalog", "-o", "mine")
    assert code == 2 and "not marked as this tool's bundle output" in err
    assert snapshot(workspace) == before


@pytest.mark.parametrize("out", [".", "catalog", "catalog/components", ".."])
def test_bundle_refuses_inputs_and_the_working_tree(workspace: Path, out: str) -> None:
    before = snapshot(workspace)
    code, _ = invoke("bundle", "--recipe", RECIPE, "--catalog", "catalog", "-o", out)
    assert code == 2
    assert snapshot(workspace) == before


def test_bundle_replaces_its_own_previous_bundle_and_an_empty_directory(workspace: Path) -> None:
    (workspace / "b").mkdir()  # empty: allowed
    for _ in range(2):  # the second run replaces the bundle the first one wrote
        code, err = invoke("bundle", "--recipe", RECIPE, "--catalog", "catalog", "-o", "b")
        assert code == 0, err
    assert marked_kind(workspace / "b") is OutputKind.BUNDLE


def test_a_site_is_not_replaced_by_a_bundle(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / MARKER).write_text("site\n")
    (site / "index.html").write_text("<html></html>\n")
    with pytest.raises(UsageError, match="holds this tool's site output"):
        check_output_dir(site, OutputKind.BUNDLE)
    check_output_dir(site, OutputKind.SITE)  # the same kind may be replaced


def test_release_refuses_the_repository_root(workspace: Path) -> None:
    shutil.rmtree(workspace / ".git")
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    before = snapshot(workspace)
    code, err = invoke("release", "--version", "v9.9.9", "-o", ".")
    assert code == 2 and "current directory" in err
    assert snapshot(workspace) == before


def test_synth_refuses_a_foreign_directory(workspace: Path) -> None:
    before = snapshot(workspace)
    code, err = invoke("synth", "--recipes", "2", "--evidence", "0", "-o", "catalog")
    assert code == 2 and "not marked as this tool's synth output" in err
    assert snapshot(workspace) == before
