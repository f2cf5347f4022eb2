"""The build key's digest of a tree by directory (`cache.stat_tree_digest`, `DIGEST_STAGE`):
the value `tree_digest` gives (the reference, reading every file) and that the one-memo
reference gives (`stat_tree_digest_reference`), through any sequence of changes; an unchanged
directory is not read again; a file rewritten with its size and mtime put back is read again;
links, recent files and refusals are judged as `tree_digest` judges them."""

from __future__ import annotations

import os
import random
import time
from pathlib import Path

import pytest

from generator.core import cache as cache_module
from generator.core import safeio
from generator.core.cache import (
    DIGEST_STAGE,
    Cache,
    dir_groups,
    stat_tree_digest,
    stat_tree_digest_reference,
    tree_digest,
)
from generator.core.errors import LoadError

SECRET = b"s" * 32


def _old(root: Path) -> None:
    old = time.time() - 60
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            os.utime(os.path.join(dirpath, name), (old, old))


def _tree(root: Path) -> None:
    for d in ("a", "b", "c"):
        (root / d).mkdir(parents=True)
        for i in range(3):
            (root / d / f"f{i}.json").write_text(f"{d}{i}")
    (root / "top.json").write_text("top")
    _old(root)


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths read (`safeio.read_checked`)."""
    reads: list[str] = []
    real = safeio.read_checked

    def read_checked(real_path: str, path: str, **kw: object) -> bytes:
        reads.append(path)
        return real(real_path, path, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(safeio, "read_checked", read_checked)
    return reads


def test_by_directory_equals_the_references_and_reads_only_what_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, counted: list[str]
) -> None:
    root = tmp_path / "t"
    _tree(root)
    monkeypatch.setattr(cache_module, "SETTLED_NS", 0)  # the test cannot wait two seconds
    cache = Cache(tmp_path / "c", secret=SECRET)
    plain = tree_digest(root)
    assert stat_tree_digest(cache, root) == plain
    assert len(cache.keys(DIGEST_STAGE)) == 4  # a, b, c and the file at the top
    cache.finish()
    counted.clear()
    assert stat_tree_digest(cache, root) == plain and counted == []  # nothing read
    # one file changed: its directory alone is read again
    (root / "b" / "f1.json").write_text("changed")
    counted.clear()
    changed = stat_tree_digest(cache, root)
    assert sorted(Path(p).parent.name for p in counted) == ["b"] * 3
    assert changed == tree_digest(root) != plain
    # the same size and the mtime put back (`touch -r`): only the ctime tells
    target = root / "a" / "f0.json"
    before = target.stat()
    with target.open("r+") as fh:
        fh.write("X")
    os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert target.stat().st_size == before.st_size and target.stat().st_ino == before.st_ino
    assert stat_tree_digest(cache, root) == tree_digest(root) != changed
    cache.finish()
    # a directory removed: its entry swept when the (next) build finishes
    for p in (root / "c").iterdir():
        p.unlink()
    (root / "c").rmdir()
    assert stat_tree_digest(cache, root) == tree_digest(root)
    cache.finish()
    assert len(cache.keys(DIGEST_STAGE)) == 3
    assert stat_tree_digest(cache, tmp_path / "absent") == "" == tree_digest(tmp_path / "absent")


def test_random_changes_give_the_references_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Differential: after each of a seeded sequence of changes (add, remove, rewrite, rewrite
    with size and mtime put back, a new directory), the value is `tree_digest`'s and the
    one-memo reference's."""
    root = tmp_path / "t"
    _tree(root)
    monkeypatch.setattr(cache_module, "SETTLED_NS", 0)
    rng = random.Random(29)
    cache = Cache(tmp_path / "c", secret=SECRET)
    ref_cache = Cache(tmp_path / "r", secret=SECRET)
    for step in range(40):
        files = sorted(p for p in root.rglob("*.json"))
        op = rng.choice(("add", "remove", "rewrite", "putback", "newdir"))
        if op == "add" or not files:
            (rng.choice([root / "a", root / "b", root]) / f"n{step}.json").write_text(str(step))
        elif op == "remove":
            rng.choice(files).unlink()
        elif op == "rewrite":
            rng.choice(files).write_text(f"r{step}")
        elif op == "putback":
            p = rng.choice(files)
            st = p.stat()
            data = p.read_bytes()
            p.write_bytes(bytes(reversed(data)) if len(set(data)) > 1 else data + b"")
            os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
        else:
            (root / f"d{step}").mkdir()
            (root / f"d{step}" / "x.json").write_text(str(step))
        want = tree_digest(root)
        assert stat_tree_digest(cache, root) == want, (step, op)
        assert stat_tree_digest_reference(ref_cache, root) == want, (step, op)
        if step % 7 == 0:
            cache.finish()
            ref_cache.finish()


def test_recent_files_and_links_are_read_every_time_and_never_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, counted: list[str]
) -> None:
    root = tmp_path / "t"
    _tree(root)
    now = time.time_ns()  # the build's clock, frozen: what was written before it is settled
    time.sleep(0.01)
    (root / "a" / "f0.json").write_text("just now")  # within the settle window
    os.symlink("f1.json", root / "b" / "link.json")
    monkeypatch.setattr(cache_module, "SETTLED_NS", 0)
    monkeypatch.setattr(cache_module.time, "time_ns", lambda: now)
    cache = Cache(tmp_path / "c", secret=SECRET)
    groups = {g.name: g.rows for g in dir_groups(safeio.walk(root), now)}
    assert groups["a"] == "" and groups["b"] == "" and groups["c"] and groups["top.json"]
    for _ in range(2):
        counted.clear()
        got = stat_tree_digest(cache, root)
        assert {Path(p).parent.name for p in counted} >= {"a", "b"}
        assert got == tree_digest(root)
    assert len(cache.keys(DIGEST_STAGE)) == 2  # c and the file at the top


def test_refusals_are_those_of_tree_digest(tmp_path: Path) -> None:
    root = tmp_path / "t"
    _tree(root)
    os.mkfifo(root / "a" / "pipe.json")
    os.symlink("/etc/hostname", root / "b" / "out.json")
    (root / "c" / "big.yaml").write_bytes(b"x" * (safeio.cap_for("big.yaml") + 1))
    _old(root / "c")
    cache = Cache(tmp_path / "c", secret=SECRET)
    with pytest.raises(LoadError) as want:
        tree_digest(root, shown="t/")
    with pytest.raises(LoadError) as got:
        stat_tree_digest(cache, root, shown="t/")
    assert str(got.value) == str(want.value)
    assert got.value.diagnostics == want.value.diagnostics
    assert len(want.value.diagnostics) == 3
    assert cache.keys(DIGEST_STAGE) == []  # nothing stored for a refused directory


def test_one_walks_pointer_files_and_groups_are_made_once_per_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`pointer.in_tree` and `Cache.dir_groups` of one walk: made once until `finish`, the
    reference's values; another walk (or the next build) makes them again."""
    from generator.evidence import pointer

    root = tmp_path / "t"
    _tree(root)
    (root / "a" / ("sha256-" + "0" * 64 + ".yaml")).write_text("x: 1\n")
    os.symlink("f0.json", root / "a" / ("sha256-" + "1" * 64 + ".yaml"))  # a link: none
    (root / "b" / ("sha256-" + "2" * 64 + ".yml")).write_text("x: 1\n")  # not a pointer's
    calls: list[int] = []
    fast = pointer._pointers

    def counted(tree: safeio.Tree) -> tuple[Path, ...]:
        calls.append(1)
        return fast(tree)

    monkeypatch.setattr(pointer, "_pointers", counted)
    cache = Cache(tmp_path / "c", secret=SECRET)
    walk = safeio.walk(root, suffixes=(".json", ".yaml", ".yml"))
    want = pointer.in_tree_reference(walk)
    assert [p.name for p in want] == ["sha256-" + "0" * 64 + ".yaml"]
    assert pointer.in_tree(walk, cache) == want == pointer.in_tree(walk, cache)
    assert len(calls) == 1
    assert cache.dir_groups(walk, 0) is cache.dir_groups(walk, 1)
    assert cache.dir_groups(walk, 0) == dir_groups(walk, 0)
    assert pointer.in_tree(safeio.walk(root, suffixes=(".json", ".yaml", ".yml")), cache) == want
    assert len(calls) == 2
    cache.finish()
    assert pointer.in_tree(walk, cache) == want and len(calls) == 3
    assert pointer.in_tree(walk) == want and len(calls) == 4


def test_the_one_memo_it_replaced_is_deleted_when_a_build_finishes(tmp_path: Path) -> None:
    root = tmp_path / "t"
    _tree(root)
    cache = Cache(tmp_path / "c", secret=SECRET)
    stat_tree_digest_reference(cache, root)
    assert len(cache.keys(cache_module.MEMO_STAGE)) == 1
    stat_tree_digest(cache, root)
    cache.finish()
    assert cache.keys(cache_module.MEMO_STAGE) == []
