"""`safeio.walk` and `safeio.check_entry`: one walk of a tree, the same answers as the reference.

The walk replaced `os.walk` + `safeio.check` per file (a `realpath`, an `lstat` per path
component) in `tree_digest`, `tree_listing`, `pointer.discover` and the verify stage's
`store.find_files`. Each test here compares the fast path with its reference on trees holding
every kind of hostile entry (links in and out, to files and to directories, dangling, looping,
FIFOs, oversized files, names that are not UTF-8), and one counts the `stat` calls (counted
work, never time).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generator.core import cache, safeio
from generator.core.errors import LoadError
from generator.evidence import pointer, store

POINTER = "sha256-" + "ab" * 32 + ".yaml"
LIMIT = 64  # bytes: a file of 65 is oversized


def _make(base: Path, rel: str, kind: str, outside: Path) -> None:
    """One entry of kind `kind` at `base/rel` (its directories made)."""
    path = base / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() or path.is_symlink():
        return
    if kind == "file":
        path.write_bytes(b"x: 1\n")
    elif kind == "big":
        path.write_bytes(b"x" * (LIMIT + 1))
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "dir":
        path.mkdir()
        (path / "inner.yaml").write_bytes(b"y: 2\n")
    elif kind == "link-in":
        (base / "target.yaml").write_bytes(b"t: 1\n")
        path.symlink_to(base / "target.yaml")
    elif kind == "link-out":
        path.symlink_to(outside / "secret.yaml")
    elif kind == "dir-link-in":
        (base / "tdir").mkdir(exist_ok=True)
        (base / "tdir" / POINTER).write_bytes(b"p: 1\n")
        path.symlink_to(base / "tdir")
    elif kind == "dir-link-out":
        path.symlink_to(outside)
    elif kind == "dangling":
        path.symlink_to(base / "nowhere")
    elif kind == "loop":
        path.symlink_to(path.name)
    else:  # pragma: no cover
        raise AssertionError(kind)


HOSTILE = [
    ("a/one.yaml", "file"),
    ("a/b/c/two.sigstore.json", "file"),
    ("a/b/c/" + POINTER, "file"),
    (".hidden/" + POINTER, "file"),
    ("a/readme.txt", "file"),
    ("a/big.yaml", "big"),
    ("a/pipe.yaml", "fifo"),
    ("a/" + "sha256-" + "cd" * 32 + ".yaml", "fifo"),
    ("a/dir.sigstore.json", "dir"),
    ("a/in.yaml", "link-in"),
    ("a/" + "sha256-" + "ef" * 32 + ".yaml", "link-in"),
    ("a/out.yaml", "link-out"),
    ("a/dirlink", "dir-link-in"),
    ("a/dirlink.sigstore.json", "dir-link-in"),
    ("a/outdir", "dir-link-out"),
    ("a/gone.yaml", "dangling"),
    ("a/loop.yaml", "loop"),
    ("a-b/x.yaml", "file"),  # sorts before "a/" as a string, after it by components
    (os.fsdecode(b"a/\xff.yaml"), "file"),  # a name that is not UTF-8
]


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.yaml").write_bytes(b"do-not-read\n")
    (outside / POINTER).write_bytes(b"p: 1\n")
    base = tmp_path / "tree"
    for rel, kind in HOSTILE:
        _make(base, rel, kind, outside)
    return base


def _outcome(
    fn: Callable[..., tuple[str, os.stat_result]], *args: Any, **kwargs: Any
) -> tuple[Any, ...]:
    """What `fn(*args, **kwargs)` (a check) gave: the real path and the stat fields that say
    which file, or the refusal's rule and message."""
    try:
        real, st_ = fn(*args, **kwargs)
    except safeio.Refusal as r:
        return ("refused", r.rule, r.message, str(r))
    return ("ok", real, st_.st_dev, st_.st_ino, st_.st_mode, st_.st_size, st_.st_mtime_ns)


SUFFIX_SETS = [(), (".yaml",), (".sigstore.json", ".yaml")]


def _compare(base: Path, suffixes: tuple[str, ...], real_root: str | None = None) -> None:
    tree = safeio.walk(base, suffixes=suffixes)
    reference = cache._tree_files(base, suffixes)
    # the same entries: every file ending in the suffixes, and every link to a directory
    assert [(e.rel, e.path) for e in tree.entries] == reference
    inside = real_root or os.path.realpath(base)
    for entry in tree.entries:
        if entry.kind is safeio.Kind.DIR_LINK:
            assert os.path.isdir(entry.path) and os.path.islink(entry.path)
            continue
        fast = _outcome(
            safeio.check_entry, tree, entry, where="w", limit=LIMIT, real_root=real_root
        )
        slow = _outcome(safeio.check, entry.path, where="w", limit=LIMIT, real_root=inside)
        assert fast == slow, entry.rel


@pytest.mark.parametrize("suffixes", SUFFIX_SETS)
def test_the_walk_gives_what_os_walk_and_check_give(
    hostile: Path, suffixes: tuple[str, ...]
) -> None:
    _compare(hostile, suffixes)
    # below a root that is not the walked directory (the verify stage walks an argument
    # inside its evidence root)
    _compare(hostile / "a", suffixes, os.path.realpath(hostile))
    # walked through a link to the tree (the root's real path is taken once)
    link = hostile.parent / "via-link"
    link.symlink_to(hostile)
    _compare(link, suffixes)


def test_every_kind_of_refusal_is_met(hostile: Path) -> None:
    """The hostile tree does reach each refusal (so the comparison above compares them)."""
    tree = safeio.walk(hostile)
    rules = set()
    for entry in tree.entries:
        if entry.kind is not safeio.Kind.DIR_LINK:
            outcome = _outcome(safeio.check_entry, tree, entry, limit=LIMIT)
            rules.add(outcome[1] if outcome[0] == "refused" else "ok")
    assert rules == {
        "ok",
        safeio.NOT_REGULAR,
        safeio.TOO_LARGE,
        safeio.ESCAPE,
        safeio.UNREADABLE,
        safeio.NAME_ENCODING,
    }


def test_a_file_gone_before_its_stat_is_refused_as_check_refuses_it(tmp_path: Path) -> None:
    (tmp_path / "f.yaml").write_bytes(b"a: 1\n")
    tree = safeio.walk(tmp_path)
    (tmp_path / "f.yaml").unlink()
    (entry,) = tree.entries
    gone = safeio.Entry(entry.rel, entry.path, safeio.Kind.FILE, None, "No such file or directory")
    fast = _outcome(safeio.check_entry, tree, gone)
    slow = _outcome(safeio.check, entry.path, real_root=tree.real_root)
    assert fast == slow
    assert fast[1] == safeio.UNREADABLE


def test_the_digest_refuses_what_it_refused_before(hostile: Path) -> None:
    """`tree_digest` over the walk names every refused file, as `validate` does."""
    with pytest.raises(LoadError) as caught:
        cache.tree_digest(hostile, (".yaml",), shown="t/")
    refused = {d.path for d in caught.value.diagnostics}
    assert "t/a/out.yaml" in refused and "t/a/pipe.yaml" in refused
    assert "t/a/loop.yaml" in refused and "t/a/gone.yaml" in refused
    assert "t/a/one.yaml" not in refused and "t/a/in.yaml" not in refused


def test_listing_is_the_reference_listing(hostile: Path) -> None:
    for rel in ("a/out.yaml", "a/gone.yaml", "a/loop.yaml", "a/pipe.yaml"):
        (hostile / rel).unlink()  # an output tree holds neither (os.stat would raise)
    os.unlink(hostile / "a" / ("sha256-" + "cd" * 32 + ".yaml"))
    listing = cache.tree_listing(hostile)
    assert listing == cache.tree_listing_reference(hostile)
    assert [list(r) for r in cache.listing_rows(hostile)] == listing
    assert cache.listing_digest(cache.listing_rows(hostile)) == cache.listing_digest(listing)
    edited = [[*row[:2], row[2] + 1, row[3]] if i == 0 else row for i, row in enumerate(listing)]
    assert cache.listing_digest(edited) != cache.listing_digest(listing)


def test_a_dangling_link_in_a_listing_fails_as_before(hostile: Path) -> None:
    with pytest.raises(OSError):
        cache.tree_listing_reference(hostile)
    with pytest.raises(OSError):
        cache.tree_listing(hostile)


def test_pointer_discovery_is_the_reference(hostile: Path) -> None:
    given = [hostile, hostile / "a" / "b" / "c" / POINTER, hostile / "missing"]
    found = pointer.discover(given)
    assert found == pointer.discover_reference(given)
    assert hostile / ".hidden" / POINTER in found  # the control: pointers are found
    assert all(not p.is_symlink() for p in found)
    assert hostile / "tdir" / POINTER in found
    assert not any("dirlink" in p.parts for p in found)  # found once, not through the link


def test_evidence_search_is_the_reference(hostile: Path) -> None:
    fast = [p for p, _, _ in store._search(hostile)]
    assert sorted(fast) == sorted(store._search_reference(hostile))
    assert hostile / "a" / "dirlink.sigstore.json" in fast  # a link is listed, to be refused


# --- counted work -------------------------------------------------------------------------------


class _Counted:
    """`os.scandir` whose entries count their `stat` calls."""

    def __init__(self, real: Callable[..., Any], counts: dict[str, int]) -> None:
        self.real, self.counts = real, counts

    def __call__(self, path: Any) -> Any:
        counts = self.counts

        class Entry:
            def __init__(self, e: os.DirEntry[str]) -> None:
                self._e = e
                self.name, self.path = e.name, e.path

            def is_dir(self, *, follow_symlinks: bool = True) -> bool:
                return self._e.is_dir(follow_symlinks=follow_symlinks)

            def is_symlink(self) -> bool:
                return self._e.is_symlink()

            def stat(self, *, follow_symlinks: bool = True) -> os.stat_result:
                counts["stat"] += 1
                return self._e.stat(follow_symlinks=follow_symlinks)

        class Listing:
            def __init__(self, it: Any) -> None:
                self.it = it

            def __enter__(self) -> Listing:
                return self

            def __exit__(self, *exc: object) -> None:
                self.it.close()

            def __iter__(self) -> Iterator[Entry]:
                return self

            def __next__(self) -> Entry:
                return Entry(next(self.it))

        return Listing(self.real(path))


def _count_stats(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    counts = {"stat": 0}
    for name in ("stat", "lstat"):
        real = getattr(os, name)

        def counted(*a: Any, _real: Callable[..., Any] = real, **k: Any) -> Any:
            counts["stat"] += 1
            return _real(*a, **k)

        monkeypatch.setattr(os, name, counted)
    monkeypatch.setattr(safeio.os, "scandir", _Counted(os.scandir, counts))
    return counts


def _deep_tree(base: Path, files: int) -> None:
    for i in range(files):
        d = base / f"r{i % 7}" / f"s{i % 3}" / "t"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"{i}.sigstore.json").write_bytes(b"{}")


def test_a_walk_takes_one_stat_per_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`tree_digest` and the verify stage's search take one `stat` per file (plus the root's
    `realpath`), where `check` per file took one per path component and one more."""
    base = tmp_path / "evidence"
    files = 60
    _deep_tree(base, files)
    memo: dict[str, list[Any]] = {}
    cache.tree_digest(base, (".sigstore.json",), memo)
    counts = _count_stats(monkeypatch)
    cache.tree_digest(base, (".sigstore.json",), memo)  # every digest from the memo
    depth = len(base.parts)
    assert counts["stat"] <= files + depth + 2
    counts["stat"] = 0
    found = store.find_files([base], tmp_path, base)
    assert len(found) == files
    assert counts["stat"] <= 2 * files + 2 * depth  # the walk's, and one fstat per read
    counts["stat"] = 0
    real_root = os.path.realpath(base)
    for _, path in cache._tree_files(base, (".sigstore.json",)):
        safeio.check(path, real_root=real_root)
    assert counts["stat"] > (depth + 4) * files  # the control: what the walk saves


# --- a property: any tree of these kinds --------------------------------------------------------

KINDS = ["file", "big", "fifo", "dir", "link-in", "link-out", "dir-link-in", "dangling", "loop"]
names = st.sampled_from(["x.yaml", "y.sigstore.json", POINTER, "z.txt", "d", "e.yaml"])
entries = st.lists(
    st.tuples(st.lists(names, min_size=1, max_size=3), st.sampled_from(KINDS)), max_size=10
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(entries)
def test_any_tree_walks_as_the_reference(layout: list[tuple[list[str], str]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        outside = Path(tmp) / "outside"
        outside.mkdir()
        (outside / "secret.yaml").write_bytes(b"s\n")
        base = Path(tmp) / "tree"
        base.mkdir()
        for parts, kind in layout:
            try:
                _make(base, "/".join(parts), kind, outside)
            except OSError:
                continue  # a name taken by another kind of entry (a file, a link, a loop)
        for suffixes in SUFFIX_SETS:
            _compare(base, suffixes)
        assert pointer.discover([base]) == pointer.discover_reference([base])
        assert sorted(p for p, _, _ in store._search(base)) == sorted(store._search_reference(base))
