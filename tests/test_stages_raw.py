"""`stages.raw_files`' link test by the reader's real path (`_no_link`) beside its reference,
`os.path.islink` of every file: one answer for plain files, a file that is a link, files below
a linked directory, and a tree reached through a linked parent (every real path differs)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from generator.evidence.store import FileMemo, find_files
from generator.site import stages
from tests.conftest import REPO


def _tree(tmp_path: Path) -> Path:
    if not any((REPO / "evidence").rglob("*.sigstore.json")):
        pytest.skip("the repository has no sample evidence")
    evidence = tmp_path / "real" / "evidence"
    shutil.copytree(REPO / "evidence", evidence)
    files = sorted(evidence.rglob("*.sigstore.json"))
    files[0].with_name("0" * 64 + ".sigstore.json").symlink_to(files[0].name)  # a file link
    recipe = files[-1].parent
    (recipe.parent / "linked-dir").symlink_to(recipe.name)  # a directory link inside the tree
    return evidence


@pytest.mark.parametrize("through_link", [False, True])
def test_no_link_is_its_reference(tmp_path: Path, through_link: bool) -> None:
    evidence = _tree(tmp_path)
    if through_link:  # the evidence directory's parent named through a link
        (tmp_path / "via").symlink_to(evidence.parent)
        evidence = tmp_path / "via" / "evidence"
    found = find_files([evidence], evidence.parent, evidence, FileMemo())
    parent, real_parent = evidence.parent, os.path.realpath(evidence.parent)
    answers = {f.path: stages._no_link(f, parent, real_parent) for f in found}
    assert answers == {f.path: not os.path.islink(parent / f.path) for f in found}
    assert False in answers.values() and True in answers.values()
    # the plain files take the shortcut (no `lstat`), the parent's link resolved once
    plain = {f.path for f in found if "linked-dir" not in f.path and "0" * 64 not in f.path}
    assert {f.path for f in found if f.real == os.path.join(real_parent, f.path)} == plain
