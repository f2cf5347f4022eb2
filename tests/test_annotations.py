"""`--format github` annotations name files from the repository root; Markdown summaries are inert.

GitHub resolves an annotation's `file=` against the repository root, so a path relative to the
catalog (or to the current directory) lands nowhere. Each test checks that every annotated path
exists from the root of the repository, whatever directory the command was given and wherever it
was run from.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from generator.cli import main
from generator.core.errors import Diagnostic, Severity
from generator.core.report import github, markdown_summary, repository_path
from tests.conftest import CATALOG

FILE = re.compile(r"^::(?:error|warning) file=([^,:]+)", re.M)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository holding a copy of the catalog with two broken files."""
    r = tmp_path / "repo"
    shutil.copytree(CATALOG, r / "catalog", ignore=shutil.ignore_patterns("trust"))
    subprocess.run(["git", "init", "-q", str(r)], check=True)
    overlay = r / "catalog/overlays/eks.yaml"
    overlay.write_text(overlay.read_text().replace("spec:", "spec:\n  bogusField: 1", 1))
    (r / "catalog/overlays/broken.yaml").write_text("kind: [unclosed\n")
    return r


def run_in(cwd: Path, *args: str) -> tuple[int, str]:
    old = Path.cwd()
    os.chdir(cwd)
    try:
        res = CliRunner().invoke(main, list(args), catch_exceptions=False)
    finally:
        os.chdir(old)
    return res.exit_code, res.stdout


@pytest.mark.parametrize(
    ("cwd", "arg"),
    [
        ("", "catalog"),  # from the root, as pr.yml runs it
        ("catalog", "."),  # from inside the catalog
        ("catalog/overlays", ".."),  # from deeper inside
        ("/", "ABS"),  # from elsewhere, with an absolute path
    ],
)
def test_validate_annotations_name_repository_paths(repo: Path, cwd: str, arg: str) -> None:
    where = Path(cwd) if cwd.startswith("/") else repo / cwd
    target = str(repo / "catalog") if arg == "ABS" else arg
    code, out = run_in(where, "validate", target, "--format", "github", "--summary", os.devnull)
    assert code == 1, out
    files = FILE.findall(out)
    assert files, out
    assert "catalog/overlays/broken.yaml" in files
    for f in files:
        assert not f.startswith("/"), f
        assert (repo / f).is_file(), f"{f} does not exist from the repository root"


def test_repository_path_outside_any_repository_is_relative_to_cwd(tmp_path: Path) -> None:
    (tmp_path / "cat" / "x").mkdir(parents=True)
    old = Path.cwd()
    os.chdir(tmp_path)
    try:
        assert repository_path("x/y.yaml", tmp_path / "cat") == "cat/x/y.yaml"
    finally:
        os.chdir(old)


def test_annotation_properties_and_message_are_escaped(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    d = Diagnostic("a,b:c.yaml", 3, 4, "$.x", "line1\nline2 %", "schema", Severity.ERROR)
    out = github([d], "validate", tmp_path)
    assert out.splitlines()[0] == (
        "::error file=a%2Cb%3Ac.yaml,line=3,col=4,title=schema::$.x: line1%0Aline2 %25"
    )


def test_markdown_summary_is_inert() -> None:
    hostile = Diagnostic(
        "overlays/`x`.yaml",
        1,
        1,
        "$",
        "<img src=x> [a](https://e.example) | **b**",
        "r",
        Severity.ERROR,
    )
    md = markdown_summary([hostile], "validate catalog")
    row = md.splitlines()[-1]
    assert row.startswith("| ``overlays/`x`.yaml`` | 1 | `r` | ")
    assert "<img" not in md and "](" not in md and "**b" not in md
    assert len(re.split(r"(?<!\\)\|", row)) == 6  # four cells, no cell added by the message


ANY_FILE = re.compile(r"^::(?:error|warning|notice) file=([^,:]+)", re.M)


@pytest.mark.parametrize(
    ("cwd", "snapshot", "catalog"),
    [
        ("", "catalog/scale/snapshots/gb300-eks-36-infra-defect.yaml", "catalog"),
        ("catalog/scale", "snapshots/gb300-eks-36-infra-defect.yaml", ".."),
        ("/", "ABS", "ABS"),
    ],
)
def test_preflight_annotations_name_the_snapshot_from_the_repository_root(
    cwd: str, snapshot: str, catalog: str
) -> None:
    from tests.conftest import REPO

    where = Path(cwd) if cwd.startswith("/") else REPO / cwd
    snap = str(REPO / "catalog/scale/snapshots/gb300-eks-36-infra-defect.yaml")
    code, out = run_in(
        where,
        "preflight",
        "--recipe",
        "gb300-eks-ubuntu-training",
        "--snapshot",
        snap if snapshot == "ABS" else snapshot,
        "--catalog",
        str(CATALOG) if catalog == "ABS" else catalog,
        "--format",
        "github",
    )
    assert code == 3, out
    files = ANY_FILE.findall(out)
    assert len(files) >= 2 and set(files) == {
        "catalog/scale/snapshots/gb300-eks-36-infra-defect.yaml"
    }
    assert all((REPO / f).is_file() for f in files)


@pytest.mark.parametrize("cwd", ["", "evidence", "/"])
def test_evidence_verify_annotations_name_repository_paths(cwd: str) -> None:
    from tests.conftest import REPO

    where = Path(cwd) if cwd.startswith("/") else REPO / cwd
    target = REPO / "evidence/gb300-eks-ubuntu-inference-dynamo"
    arg = {"": "evidence/gb300-eks-ubuntu-inference-dynamo", "evidence": target.name}.get(
        cwd, str(target)
    )
    # the sample evidence is signed by the demo root: under public-good every file is rejected
    code, out = run_in(
        where,
        "evidence",
        "verify",
        arg,
        "--catalog",
        str(CATALOG),
        "--format",
        "github",
        "--jobs",
        "1",
    )
    assert code == 1, out
    files = ANY_FILE.findall(out)
    assert files
    for f in files:
        assert f.startswith("evidence/gb300-eks-ubuntu-inference-dynamo/"), f
        assert (REPO / f).is_file(), f


def test_validate_summary_of_hostile_file_names_is_inert(repo: Path, tmp_path: Path) -> None:
    """A file name with backticks and markup cannot leave its code span in the job summary."""
    markdown_it = pytest.importorskip("markdown_it")
    name = "x` <img src=y onerror=alert(1)> [l](javascript:alert(2)) `.yaml"
    (repo / "catalog/overlays" / name).write_text("kind: [unclosed\n")
    summary = tmp_path / "summary.md"
    code, _ = run_in(repo, "validate", "catalog", "--format", "github", "--summary", str(summary))
    assert code == 1
    text = summary.read_text()
    html = markdown_it.MarkdownIt("commonmark").enable("table").render(text)
    assert "<img" not in html and "<a " not in html
    row = next(r for r in html.split("<tr>") if "onerror" in r)
    assert row.count("<td>") == 4
    assert (
        "<code>overlays/x` &lt;img src=y onerror=alert(1)&gt; [l](javascript:alert(2)) `.yaml</code>"
        in row
    )
