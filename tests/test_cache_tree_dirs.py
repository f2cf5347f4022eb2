"""`stat_tree_digest` at the grain of a directory: a directory whose stat rows are the recorded
ones takes its files' digests from the memo without a check per file, and the digest is
always `tree_digest`'s without any memo (the reference), whatever changed in between."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from generator.core import cache as cache_module
from generator.core.cache import Cache, stat_tree_digest, tree_digest
from generator.core.errors import LoadError

SECRET = b"d" * 32


@pytest.fixture
def settled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cache_module, "SETTLED_NS", 0)


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files checked one by one (`_file_stamp`) with a memo, by path below the root (the
    reference, without one, is not counted)."""
    seen: list[str] = []
    real = cache_module._file_stamp

    def counted(tree, entry, memo, recent, *, where):  # type: ignore[no-untyped-def]
        if memo is not None:
            seen.append(entry.rel)
        return real(tree, entry, memo, recent, where=where)

    monkeypatch.setattr(cache_module, "_file_stamp", counted)
    return seen


def _tree(root: Path) -> Path:
    for rel in ("a/x.yaml", "a/deep/y.yaml", "a-b/z.yaml", "top.yaml", "c/w.yaml"):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"name: {rel}\n")
    (root / "c" / "link.yaml").symlink_to(root / "top.yaml")
    return root


def _digest(root: Path, cache_dir: Path) -> str:
    got = stat_tree_digest(Cache(cache_dir, secret=SECRET), root, (".yaml",))
    assert got == tree_digest(root, (".yaml",))  # the reference: no memo, every file read
    return got


def _rewrite_keeping_size_and_mtime(path: Path) -> None:
    st = path.stat()
    data = path.read_bytes()
    time.sleep(0.02)  # past the file system clock's granularity: the ctime moves
    path.write_bytes(data.replace(b"name", b"nime"))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)


def test_unchanged_directories_are_not_checked_file_by_file(
    tmp_path: Path, settled: None, checks: list[str]
) -> None:
    root = _tree(tmp_path / "t")
    first = _digest(root, tmp_path / "c")
    assert len(checks) == 6
    checks.clear()
    assert _digest(root, tmp_path / "c") == first
    assert checks == ["c/link.yaml", "c/w.yaml"]  # the directory with a link, every time


@pytest.mark.parametrize("change", ["rewrite", "replace", "add", "remove", "rename", "link"])
def test_every_change_is_seen(
    tmp_path: Path, settled: None, checks: list[str], change: str
) -> None:
    root = _tree(tmp_path / "t")
    first = _digest(root, tmp_path / "c")
    _digest(root, tmp_path / "c")
    target = root / "a" / "deep" / "y.yaml"
    if change == "rewrite":
        _rewrite_keeping_size_and_mtime(target)
    elif change == "replace":  # another inode, the same size and mtime
        st = target.stat()
        time.sleep(0.02)
        (root / "new").write_text(target.read_text().replace("name", "nime"))
        os.utime(root / "new", ns=(st.st_atime_ns, st.st_mtime_ns))
        os.replace(root / "new", target)
    elif change == "add":
        (root / "a" / "n.yaml").write_text("n: 1\n")
    elif change == "remove":
        target.unlink()
    elif change == "rename":
        target.rename(target.with_name("y2.yaml"))
    else:  # the link's target rewritten: the link's own row is unchanged
        _rewrite_keeping_size_and_mtime(root / "top.yaml")
        root.joinpath("top.yaml").rename(root / "top2.yaml")
        root.joinpath("top2.yaml").rename(root / "top.yaml")
    checks.clear()
    assert _digest(root, tmp_path / "c") != first
    assert "a-b/z.yaml" not in checks  # the directories unchanged: served whole


def test_recent_files_are_never_served_whole(tmp_path: Path, checks: list[str]) -> None:
    root = _tree(tmp_path / "t")  # just written: not settled
    _digest(root, tmp_path / "c")
    checks.clear()
    _digest(root, tmp_path / "c")
    assert len(checks) == 6


def test_problems_are_the_references(tmp_path: Path, settled: None) -> None:
    root = _tree(tmp_path / "t")
    _digest(root, tmp_path / "c")
    os.mkfifo(root / "a" / "pipe.yaml")
    with pytest.raises(LoadError) as reference:
        tree_digest(root, (".yaml",))
    with pytest.raises(LoadError) as got:
        stat_tree_digest(Cache(tmp_path / "c", secret=SECRET), root, (".yaml",))
    assert got.value.diagnostics == reference.value.diagnostics
