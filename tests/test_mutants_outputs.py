"""The output guard's decisions that no other test pins down (issue 32, `make mutation`).

`generator/core/outputs.py` decides whether a directory may be replaced whole: by its mark
(a site marker, a bundle's header, a release's own files, a synthetic catalog's marker) and by
where it lies (the file-system root, the working directory, an input). Each test fails on a
mutant of that module that the rest of the suite let through.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from generator.cli import main
from generator.core import safeio
from generator.core.errors import UsageError
from generator.core.outputs import (
    BUNDLE_HEADER,
    MARKER,
    RELEASE_FILES,
    SYNTH_MARKER,
    OutputKind,
    check_output_dir,
    mark,
    marked_kind,
)


@pytest.fixture(autouse=True)
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The working directory is a sibling of every output the tests make."""
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")


def _refused(out: Path, kind: OutputKind, inputs: tuple[Path, ...] = ()) -> str:
    with pytest.raises(UsageError) as info:
        check_output_dir(out, kind, inputs)
    return str(info.value)


def test_a_site_marker_that_is_not_utf8_is_a_usage_error_not_a_crash(tmp_path: Path) -> None:
    out = tmp_path / "site"
    out.mkdir()
    (out / MARKER).write_bytes(b"\xff\xfesite\n")
    (out / "index.html").write_text("<p>someone's page</p>\n")
    assert marked_kind(out) is None
    assert "not marked as this tool's site output" in _refused(out, OutputKind.SITE)
    # and through the CLI: exit 2 with the rule, never a traceback
    res = CliRunner().invoke(main, ["build", "-o", str(out), "--no-cache"])
    assert res.exit_code == 2, res.output
    assert "not marked as this tool's site output" in res.stderr
    assert (out / "index.html").read_text() == "<p>someone's page</p>\n"


def test_an_unreadable_marker_is_no_mark(tmp_path: Path) -> None:
    out = tmp_path / "site"
    out.mkdir()
    (out / MARKER).mkdir()  # not a file: no mark
    assert marked_kind(out) is None
    marker_dir = tmp_path / "other"
    marker_dir.mkdir()
    (marker_dir / MARKER).write_text("not-a-kind\n")
    assert marked_kind(marker_dir) is None


@pytest.mark.parametrize("kind", list(OutputKind))
def test_each_kind_is_recognised_by_its_own_mark(tmp_path: Path, kind: OutputKind) -> None:
    out = tmp_path / str(kind)
    out.mkdir()
    if kind is OutputKind.SYNTH:
        (out / SYNTH_MARKER).write_text("synth\n")
    elif kind is OutputKind.BUNDLE:
        (out / BUNDLE_HEADER).write_text("apiVersion: x\nkind: BundleInfo\n")
        (out / "checksums.txt").write_text("")
    elif kind is OutputKind.RELEASE:
        for name in RELEASE_FILES:
            (out / name).write_text("")
    else:
        mark(out, kind)
        assert (out / MARKER).read_text() == f"{kind}\n"
    (out / "payload").write_text("x")
    assert marked_kind(out) is kind
    check_output_dir(out, kind)  # its own previous output: replaced
    for other in OutputKind:
        if other is not kind:
            assert f"holds this tool's {kind} output" in _refused(out, other)


def test_only_a_site_is_marked_by_mark(tmp_path: Path) -> None:
    for kind in (OutputKind.BUNDLE, OutputKind.RELEASE, OutputKind.SYNTH):
        mark(tmp_path, kind)
    assert list(tmp_path.iterdir()) == [tmp_path / "cwd"]


def test_marks_that_are_links_are_not_marks(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (real / SYNTH_MARKER).write_text("synth\n")
    (real / MARKER).write_text("site\n")
    (real / BUNDLE_HEADER).write_text("kind: BundleInfo\n")
    for name, kind in ((SYNTH_MARKER, None), (MARKER, None), (BUNDLE_HEADER, None)):
        out = tmp_path / f"linked-{name}"
        out.mkdir()
        (out / name).symlink_to(real / name)
        (out / "checksums.txt").write_text("")
        assert marked_kind(out) is kind, name


def test_a_bundle_needs_its_header_kind_and_its_checksums(tmp_path: Path) -> None:
    out = tmp_path / "b"
    out.mkdir()
    (out / BUNDLE_HEADER).write_text("kind: BundleInfo\n")
    assert marked_kind(out) is None  # no checksums.txt
    (out / "checksums.txt").write_text("")
    assert marked_kind(out) is OutputKind.BUNDLE
    (out / BUNDLE_HEADER).write_text("kind: BundleInfoX\n")
    assert marked_kind(out) is None  # the kind line, not a prefix of it


def test_a_release_needs_all_of_its_files(tmp_path: Path) -> None:
    out = tmp_path / "r"
    out.mkdir()
    (out / RELEASE_FILES[0]).write_text("")
    assert marked_kind(out) is None
    (out / RELEASE_FILES[1]).write_text("")
    assert marked_kind(out) is OutputKind.RELEASE


def test_missing_and_empty_directories_are_replaced(tmp_path: Path) -> None:
    check_output_dir(tmp_path / "new", OutputKind.SITE)
    (tmp_path / "empty").mkdir()
    check_output_dir(tmp_path / "empty", OutputKind.BUNDLE)


def test_where_an_output_may_not_be(tmp_path: Path) -> None:
    assert "file-system root" in _refused(Path("/"), OutputKind.SITE)
    cwd = tmp_path / "cwd"
    assert "current directory" in _refused(cwd, OutputKind.SITE)
    assert "current directory" in _refused(tmp_path, OutputKind.SITE)  # an ancestor of it
    catalog = tmp_path / "catalog"
    (catalog / "overlays").mkdir(parents=True)
    assert "is an input" in _refused(catalog, OutputKind.SITE, (catalog,))
    assert "is an input" in _refused(tmp_path / "x", OutputKind.SITE, (tmp_path / "x" / "c",))
    assert "lies inside the input" in _refused(catalog / "out", OutputKind.SITE, (catalog,))
    # beside an input, or inside an input that is a file (not a directory): allowed
    check_output_dir(tmp_path / "out", OutputKind.SITE, (catalog,))
    (tmp_path / "f").write_text("")
    check_output_dir(tmp_path / "f-out", OutputKind.SITE, (tmp_path / "f",))
    afile = tmp_path / "file"
    afile.write_text("x")
    assert "is not a directory" in _refused(afile, OutputKind.SITE)
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    assert "repository root" in _refused(repo, OutputKind.SITE)
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "new")
    assert "symbolic link" in _refused(link, OutputKind.SITE)


def test_a_bundle_header_is_read_through_safeio_up_to_its_cap(tmp_path: Path) -> None:
    out = tmp_path / "b"
    out.mkdir()
    (out / "checksums.txt").write_text("")
    kind = "kind: BundleInfo\n"
    filler = "#" * (safeio.YAML_BYTES - len(kind) - 1) + "\n"
    (out / BUNDLE_HEADER).write_text(filler + kind)  # exactly the cap, the mark on its last line
    assert marked_kind(out) is OutputKind.BUNDLE
    (out / BUNDLE_HEADER).write_text("#" + filler + kind)  # one byte over: refused, no mark
    assert marked_kind(out) is None


def test_a_bundle_header_that_cannot_be_read_is_no_mark(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "b"
    out.mkdir()
    (out / BUNDLE_HEADER).write_text("kind: BundleInfo\n")
    (out / "checksums.txt").write_text("")
    assert marked_kind(out) is OutputKind.BUNDLE
    real_open = os.open

    def unreadable(path: Any, *args: Any, **kw: Any) -> int:
        if os.fspath(path).endswith(BUNDLE_HEADER):
            raise OSError(5, "Input/output error")
        return real_open(path, *args, **kw)

    monkeypatch.setattr(os, "open", unreadable)
    assert marked_kind(out) is None
    assert "not marked as this tool's bundle output" in _refused(out, OutputKind.BUNDLE)


def test_an_output_directory_that_cannot_be_listed_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "site"
    out.mkdir()

    def refuse(path: object) -> object:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("generator.core.outputs.os.scandir", refuse)
    assert _refused(out, OutputKind.SITE) == f"output {out} cannot be read: Permission denied"


def test_a_site_marker_is_read_up_to_its_cap(tmp_path: Path) -> None:
    """The marker is one line; it is read through safeio with a 4096-byte cap: a marker of
    exactly the cap is read (surrounding white space ignored), one byte over is no mark."""
    out = tmp_path / "site"
    out.mkdir()
    (out / MARKER).write_text("site" + " " * (4096 - 5) + "\n")
    assert (out / MARKER).stat().st_size == 4096
    assert marked_kind(out) is OutputKind.SITE
    (out / MARKER).write_text("site" + " " * (4096 - 4) + "\n")
    assert marked_kind(out) is None
