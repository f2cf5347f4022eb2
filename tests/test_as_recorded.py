"""`incremental.as_recorded` (one scandir walk, each file's stat compared as it is read) gives
the answer of its reference, `as_recorded_reference` (the output's whole `tree_listing`
compared with the table), on trees as recorded and after every kind of change; it is stricter
only on links, which a build never writes."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from generator.core.cache import tree_listing
from generator.site import incremental
from generator.site.incremental import as_recorded, as_recorded_reference
from generator.site.publish import Published


def _tree(root: Path) -> dict[str, Published]:
    for rel, data in {
        "index.html": b"<p>i</p>",
        "a/b/c.json": b"{}",
        "a/b/d.json": b"[]",
        "a/e.svg": b"<svg/>",
        "caf\u00e9/f.html": b"f",
        "z/deep/er/g.txt": b"g" * 100,
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return {r: Published(s, m, i, "sha", "") for r, s, m, i in tree_listing(root)}


def _touch(root: Path) -> None:
    st = (root / "a/b/c.json").stat()
    os.utime(root / "a/b/c.json", ns=(st.st_atime_ns, st.st_mtime_ns + 1))


def _rewrite_same_stat_but_inode(root: Path) -> None:  # replaced by a new file, mtime put back
    path = root / "a/e.svg"
    st = path.stat()
    new = root / "a" / "e.svg.new"  # written while the old file is there: another inode
    new.write_bytes(b"<svg/>")
    os.utime(new, ns=(st.st_atime_ns, st.st_mtime_ns))
    new.rename(path)


def _grow(root: Path) -> None:
    with (root / "index.html").open("ab") as fh:
        fh.write(b"x")


CHANGES: dict[str, tuple[Callable[[Path], object], bool]] = {
    "as-recorded": (lambda root: None, True),
    "empty-directory-added": (lambda root: (root / "new" / "dir").mkdir(parents=True), True),
    "file-added": (lambda root: (root / "a" / "new.html").write_bytes(b"n"), False),
    "file-added-top": (lambda root: (root / "new.html").write_bytes(b"n"), False),
    "file-removed": (lambda root: (root / "z/deep/er/g.txt").unlink(), False),
    "mtime-changed": (_touch, False),
    "inode-changed": (_rewrite_same_stat_but_inode, False),
    "size-changed": (_grow, False),
    "file-renamed": (lambda root: (root / "a/b/d.json").rename(root / "a/b/D.json"), False),
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_as_recorded_is_its_reference(tmp_path: Path, change: str) -> None:
    table = _tree(tmp_path)
    apply, expected = CHANGES[change]
    apply(tmp_path)
    assert as_recorded_reference(tmp_path, table) is expected
    assert as_recorded(tmp_path, table) is expected


def test_a_table_naming_more_or_other_files_is_not_as_recorded(tmp_path: Path) -> None:
    table = _tree(tmp_path)
    more = {**table, "gone.html": Published(1, 1, 1, "sha")}
    fewer = {r: p for r, p in table.items() if r != "index.html"}
    for other in (more, fewer, {}):
        assert as_recorded(tmp_path, other) is as_recorded_reference(tmp_path, other) is False
    assert as_recorded(tmp_path / "absent", table) is False


def test_links_are_never_as_recorded(tmp_path: Path) -> None:
    """A build writes regular files only: a link (to a file as recorded, or to a directory,
    which the reference's listing leaves out) means the tree was changed by hand."""
    table = _tree(tmp_path)
    target = tmp_path.parent / f"{tmp_path.name}-elsewhere"
    target.mkdir()
    os.symlink(target, tmp_path / "a" / "dir-link")
    assert as_recorded_reference(tmp_path, table) is True  # the reference lists no dir link
    assert as_recorded(tmp_path, table) is False
    os.unlink(tmp_path / "a" / "dir-link")
    path = tmp_path / "a/b/c.json"
    os.rename(path, target / "c.json")
    os.symlink(target / "c.json", path)  # the same file (size, mtime, inode) through a link
    assert as_recorded_reference(tmp_path, table) is True
    assert as_recorded(tmp_path, table) is False


def test_the_walk_stops_at_the_first_difference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Counted: a table whose every row differs costs one `lstat`, not one per file."""
    table = _tree(tmp_path)
    stale = {r: Published(p.size + 1, p.mtime_ns, p.inode, "") for r, p in table.items()}
    calls: list[str] = []
    real = os.scandir

    def scandir(path: str) -> object:
        calls.append(path)
        return real(path)

    monkeypatch.setattr(incremental.os, "scandir", scandir)
    assert as_recorded(tmp_path, stale) is False
    assert len(calls) <= 2, calls
