"""The output guard's decisions that no other test pins down (issue 32, `make mutation`).

`generator/core/outputs.py` decides whether a directory may be replaced whole: by its mark
(a site marker, a bundle's header, a release's own files, a synthetic catalog's marker) and by
where it lies (the file-system root, the working directory, an input). Each test fails on a
mutant of that module that the rest of the suite let through.
"""

from __future__ import annotations

import ctypes
import errno
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from generator.cli import main
from generator.core import outputs, safeio
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


# --- swap_in: the one rename of a finished output into place -------------------------------------


def _tree(path: Path, content: str) -> Path:
    path.mkdir()
    (path / "index.html").write_text(content)
    (path / "sub").mkdir()
    (path / "sub" / "page.html").write_text(content)
    return path


def _content(path: Path) -> dict[str, str]:
    return {
        p.relative_to(path).as_posix(): p.read_text()
        for p in sorted(path.rglob("*"))
        if p.is_file()
    }


class _Libc:
    """A stand-in for libc whose renameat2 records its arguments and fails with `err`."""

    def __init__(self, err: int) -> None:
        self.err = err
        self.calls: list[tuple[Any, ...]] = []

    def renameat2(self, *args: Any) -> int:
        self.calls.append(args)
        ctypes.set_errno(self.err)
        return -1


def _fake_libc(monkeypatch: pytest.MonkeyPatch, libc: object) -> list[dict[str, Any]]:
    opened: list[dict[str, Any]] = []

    def cdll(name: object, **kw: Any) -> object:
        assert name is None  # the running process's own libc
        opened.append(kw)
        return libc

    monkeypatch.setattr("generator.core.outputs.ctypes.CDLL", cdll)
    return opened


def _replaces(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Path, Path]]:
    seen: list[tuple[Path, Path]] = []
    real = os.replace

    def spy(src: Any, dst: Any) -> None:
        seen.append((Path(src), Path(dst)))
        real(src, dst)

    monkeypatch.setattr("generator.core.outputs.os.replace", spy)
    return seen


def test_exchange_swaps_two_directories_in_one_step(tmp_path: Path) -> None:
    a, b = _tree(tmp_path / "a", "A"), _tree(tmp_path / "b", "B")
    assert outputs._exchange(a, b) is True
    assert _content(a) == {"index.html": "B", "sub/page.html": "B"}
    assert _content(b) == {"index.html": "A", "sub/page.html": "A"}


def test_exchange_of_a_missing_path_is_false(tmp_path: Path) -> None:
    a = _tree(tmp_path / "a", "A")
    assert outputs._exchange(a, tmp_path / "missing") is False  # ENOENT: nothing moved
    assert _content(a) == {"index.html": "A", "sub/page.html": "A"}


def test_swap_in_exchanges_an_existing_output_and_removes_the_old_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    new, out = _tree(tmp_path / ".out.new", "new"), _tree(tmp_path / "out", "old")
    renames = _replaces(monkeypatch)
    outputs.swap_in(new, out)
    assert _content(out) == {"index.html": "new", "sub/page.html": "new"}
    assert not new.exists()
    assert renames == []  # one exchange, no rename
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cwd", "out"]


def test_exchange_passes_the_kernel_what_it_expects(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    libc = _Libc(errno.EINVAL)
    opened = _fake_libc(monkeypatch, libc)
    assert outputs._exchange(tmp_path / "a", tmp_path / "b") is False
    assert opened == [{"use_errno": True}]
    at_fdcwd = -100  # linux/fcntl.h
    a, b = os.fsencode(tmp_path / "a"), os.fsencode(tmp_path / "b")
    assert libc.calls == [(at_fdcwd, a, at_fdcwd, b, 2)]  # 2: RENAME_EXCHANGE (linux/fs.h)


@pytest.mark.parametrize("err", [errno.EINVAL, errno.ENOSYS])
@pytest.mark.parametrize("existing", [True, False])
@pytest.mark.parametrize("leftover", [True, False])
def test_swap_in_without_the_exchange_renames_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, err: int, existing: bool, leftover: bool
) -> None:
    """renameat2 unsupported (an old kernel, a file system without RENAME_EXCHANGE): the old
    output is renamed aside to `.out.old`, the new one into place, the old one removed; a
    `.out.old` left by an earlier killed run is removed first."""
    libc = _Libc(err)
    _fake_libc(monkeypatch, libc)
    new, out = _tree(tmp_path / ".out.new", "new"), tmp_path / "out"
    if existing:
        _tree(out, "old")
    old = tmp_path / ".out.old"
    if leftover:
        _tree(old, "leftover")
    renames = _replaces(monkeypatch)
    outputs.swap_in(new, out)
    assert _content(out) == {"index.html": "new", "sub/page.html": "new"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cwd", "out"]
    assert len(libc.calls) == (1 if existing else 0)  # nothing to exchange with: no call
    assert renames == ([(out, old)] if existing else []) + [(new, out)]


@pytest.mark.parametrize("failure", [OSError("no libc"), AttributeError("renameat2")])
def test_swap_in_without_renameat2_renames_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failure: Exception
) -> None:
    def cdll(name: object, **kw: Any) -> object:
        raise failure

    monkeypatch.setattr("generator.core.outputs.ctypes.CDLL", cdll)
    assert outputs._exchange(tmp_path, tmp_path) is False
    new, out = _tree(tmp_path / ".out.new", "new"), _tree(tmp_path / "out", "old")
    outputs.swap_in(new, out)
    assert _content(out) == {"index.html": "new", "sub/page.html": "new"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cwd", "out"]


def test_restore_renames_the_previous_tree_back(tmp_path: Path) -> None:
    old, out = _tree(tmp_path / ".out.old", "old"), tmp_path / "out"
    outputs.restore(old, out)
    assert _content(out) == {"index.html": "old", "sub/page.html": "old"}
    assert not old.exists()
