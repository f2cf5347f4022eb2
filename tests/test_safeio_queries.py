"""The metadata queries of `core/safeio.py`: what each answers for a file, a directory, a link to
each, a dangling link, a link loop, a missing path, a path through a file, a NUL byte and a
permission error, and that each answers what the call it replaced answered (pathlib's
`Path.exists/is_file/is_dir/is_symlink/resolve/absolute`, `os.path`'s `isfile/isdir/islink/
lexists/realpath/abspath/relpath`) on the Python this project runs on (3.11's rules)."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from generator.core import safeio


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    """Every kind of path a query meets, by name."""
    (tmp_path / "dir").mkdir()
    (tmp_path / "file").write_text("x")
    (tmp_path / "link-file").symlink_to(tmp_path / "file")
    (tmp_path / "link-dir").symlink_to(tmp_path / "dir")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    os.mkfifo(tmp_path / "fifo")
    return {
        "file": tmp_path / "file",
        "dir": tmp_path / "dir",
        "link-file": tmp_path / "link-file",
        "link-dir": tmp_path / "link-dir",
        "dangling": tmp_path / "dangling",
        "loop": tmp_path / "loop",
        "fifo": tmp_path / "fifo",
        "missing": tmp_path / "missing",
        "through-file": tmp_path / "file" / "below",
        "nul": tmp_path / "a\0b",
    }


# (query, what it answers per kind): the rules written out, one row per kind of path
EXPECTED = {
    #           file   dir    l-file l-dir  dangl  loop   fifo   missing thru-f nul
    "exists": (True, True, True, True, False, False, True, False, False, False),
    "is_file": (True, False, True, False, False, False, False, False, False, False),
    "is_dir": (False, True, False, True, False, False, False, False, False, False),
    "is_link": (False, False, True, True, True, True, False, False, False, False),
    "lexists": (True, True, True, True, True, True, True, False, False, False),
}
KINDS = ("file", "dir", "link-file", "link-dir", "dangling", "loop", "fifo", "missing")
KINDS += ("through-file", "nul")


@pytest.mark.parametrize("query", sorted(EXPECTED))
def test_each_query_answers_by_its_rule(tree: dict[str, Path], query: str) -> None:
    ask = getattr(safeio, query)
    assert tuple(ask(tree[k]) for k in KINDS) == EXPECTED[query]
    assert tuple(ask(str(tree[k])) for k in KINDS) == EXPECTED[query]  # a string the same


# the call each replaced, the differential: the same answer for every kind of path
REPLACED = {
    "exists": Path.exists,
    "is_file": Path.is_file,
    "is_dir": Path.is_dir,
    "is_link": Path.is_symlink,
}
QUIET = {"is_file": os.path.isfile, "is_dir": os.path.isdir, "is_link": os.path.islink}


@pytest.mark.parametrize("query", sorted(REPLACED))
def test_each_query_answers_as_pathlib(tree: dict[str, Path], query: str) -> None:
    ask = getattr(safeio, query)
    assert [ask(tree[k]) for k in KINDS] == [REPLACED[query](tree[k]) for k in KINDS]


@pytest.mark.parametrize("query", sorted(QUIET))
def test_quiet_answers_as_os_path(tree: dict[str, Path], query: str) -> None:
    ask = getattr(safeio, query)
    assert [ask(tree[k], quiet=True) for k in KINDS] == [QUIET[query](tree[k]) for k in KINDS]


@pytest.mark.parametrize("query", ["exists", "is_file", "is_dir", "is_link"])
@pytest.mark.parametrize("code", [errno.EACCES, errno.EIO])
def test_an_error_other_than_absence_raises_unless_quiet(
    tree: dict[str, Path], monkeypatch: pytest.MonkeyPatch, query: str, code: int
) -> None:
    """pathlib's rule on 3.11: a directory above that cannot be searched is not "missing"; the
    caller sees the error (the CLI makes it one line). `quiet` (os.path's rule) says False.
    Simulated: the tests run as root, for whom EACCES does not happen."""

    def refuse(path: object, *args: object, **kwargs: object) -> os.stat_result:
        raise OSError(code, os.strerror(code), str(path))

    monkeypatch.setattr(os, "stat", refuse)
    monkeypatch.setattr(os, "lstat", refuse)
    ask = getattr(safeio, query)
    with pytest.raises(OSError) as e:
        ask(tree["file"])
    assert e.value.errno == code
    if query != "exists":
        assert ask(tree["file"], quiet=True) is False


@pytest.mark.parametrize("code", [errno.ENOENT, errno.ENOTDIR, errno.ELOOP, errno.EBADF])
def test_absence_answers_false(
    tree: dict[str, Path], monkeypatch: pytest.MonkeyPatch, code: int
) -> None:
    def absent(path: object, *args: object, **kwargs: object) -> os.stat_result:
        raise OSError(code, os.strerror(code), str(path))

    monkeypatch.setattr(os, "stat", absent)
    monkeypatch.setattr(os, "lstat", absent)
    assert not any(
        (safeio.exists(tree["file"]), safeio.is_file(tree["file"]), safeio.is_dir(tree["dir"]))
    )
    assert not safeio.is_link(tree["link-file"])


def test_the_aliases_are_the_calls_they_replaced() -> None:
    """No wrapper where the call is the rule: no frame added on the paths that ask per file."""
    assert safeio.lexists is os.path.lexists
    assert safeio.real_path is os.path.realpath
    assert safeio.abspath is os.path.abspath
    assert safeio.relpath is os.path.relpath
    assert safeio.readlink is os.readlink


def test_real_path_and_resolve(tree: dict[str, Path]) -> None:
    root = tree["file"].parent
    real_root = Path(os.path.realpath(root))
    assert safeio.real_path(tree["link-file"]) == str(real_root / "file")
    assert safeio.resolve(tree["link-dir"]) == real_root / "dir"
    assert safeio.resolve(tree["dangling"]) == real_root / "nowhere"  # kept as spelt
    assert safeio.resolve(tree["missing"]) == real_root / "missing"
    assert safeio.resolve(str(tree["link-file"])) == tree["link-file"].resolve()
    with pytest.raises(FileNotFoundError):
        safeio.resolve(tree["dangling"], strict=True)
    with pytest.raises(RuntimeError, match="loop"):
        safeio.resolve(tree["loop"])
    with pytest.raises(ValueError):
        safeio.resolve(tree["nul"])
    with pytest.raises(ValueError):
        safeio.real_path(tree["nul"])


def test_readlink(tree: dict[str, Path]) -> None:
    assert safeio.readlink(tree["dangling"]) == str(tree["file"].parent / "nowhere")
    with pytest.raises(OSError):
        safeio.readlink(tree["file"])


def test_absolute_abspath_relpath_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert safeio.cwd() == Path.cwd() == Path(os.getcwd())
    assert safeio.absolute("a/../b") == Path.cwd() / "a" / ".." / "b"  # not normalised
    assert safeio.absolute(tmp_path) == tmp_path
    assert safeio.abspath("a/../b") == os.path.join(os.getcwd(), "b")  # normalised
    assert safeio.relpath(tmp_path / "x" / "y", tmp_path) == os.path.join("x", "y")
    assert safeio.relpath("x/y", "x") == "y"
