"""The doors that list, create and remove paths (issue 27 follow-up): no link followed.

`safeio.scan` / `listdir` / `walk` / `find` / `glob_tree` list a directory or a tree, each
entry with its kind as the directory says, a link never descended; `atomic.make_dirs` and
`atomic.remove` create directories and remove a file; `outputs.discard` removes a tree and
never what a link in it (or at it) points to; `TreeWriter.chmod_dirs` sets a mode through the
descriptors it holds. A link planted where a directory is listed or a tree removed leaves what
it points to listed nowhere and untouched; every refusal names the path.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generator.core import atomic, outputs, safeio


@pytest.fixture
def planted(tmp_path: Path) -> tuple[Path, Path]:
    """(tree, outside): a tree holding files, a subdirectory, and links to a directory and a
    file outside it (and a dangling one); the outside directory holds a secret."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.yaml").write_text("secret")
    (outside / "deeper").mkdir()
    (outside / "deeper" / "more.yaml").write_text("more")
    tree = tmp_path / "tree"
    (tree / "sub").mkdir(parents=True)
    (tree / "a.yaml").write_text("a")
    (tree / "a-b.yaml").write_text("ab")
    (tree / "sub" / "c.yaml").write_text("c")
    (tree / "escape").symlink_to(outside)
    (tree / "secret-link.yaml").symlink_to(outside / "secret.yaml")
    (tree / "dangling.yaml").symlink_to(tmp_path / "nowhere")
    return tree, outside


def test_listdir_gives_kinds_sorted_and_follows_no_link(planted: tuple[Path, Path]) -> None:
    tree, _ = planted
    listed = safeio.listdir(tree)
    assert [(e.name, e.kind) for e in listed] == [
        ("a-b.yaml", safeio.Kind.FILE),
        ("a.yaml", safeio.Kind.FILE),
        ("dangling.yaml", safeio.Kind.LINK),
        ("escape", safeio.Kind.DIR_LINK),
        ("secret-link.yaml", safeio.Kind.LINK),
        ("sub", safeio.Kind.DIR),
    ]
    assert [e.name for e in listed] == sorted(p.name for p in tree.iterdir())
    assert all(e.path == os.path.join(tree, e.name) for e in listed)
    assert sorted(safeio.scan(tree)) == sorted(listed)
    assert sorted(safeio.names(tree)) == [e.name for e in listed]


def test_a_walk_lists_a_link_to_a_directory_and_nothing_behind_it(
    planted: tuple[Path, Path],
) -> None:
    tree, _ = planted
    rels = [e.rel for e in safeio.walk(tree).entries]
    assert "escape" in rels
    assert not [r for r in rels if r.startswith("escape/") or "secret.yaml" == r]
    assert sorted(e.rel for e in safeio.find(tree)) == rels
    with_dirs = safeio.walk(tree, dirs=True).entries
    assert [(e.rel, e.kind) for e in with_dirs if e.kind is safeio.Kind.DIR] == [
        ("sub", safeio.Kind.DIR)
    ]


@pytest.mark.parametrize("pattern", ["*", "*.yaml", "c.yaml", "escape", "*-b.yaml"])
def test_glob_tree_is_sorted_rglob(planted: tuple[Path, Path], pattern: str) -> None:
    """The differential test: what `sorted(Path.rglob(pattern))` gave, in its order (by path
    components: `a-b.yaml` and `sub/...` where a string sort differs), nothing behind a link."""
    tree, _ = planted
    found = safeio.glob_tree(tree, pattern)
    assert found == sorted(tree.rglob(pattern))
    assert not [p for p in found if tree / "escape" in p.parents]  # the link listed, not entered


def test_glob_tree_takes_only_the_patterns_it_knows(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="a/b"):
        safeio.glob_tree(tmp_path, "a/b")
    with pytest.raises(ValueError):
        safeio.glob_tree(tmp_path, "*.y?ml")
    assert safeio.glob_tree(tmp_path / "missing", "*") == []


_NAME = st.text(alphabet="ab-._/", min_size=1, max_size=6).filter(
    lambda n: all(p not in ("", ".", "..") for p in n.split("/"))
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(names=st.lists(_NAME, min_size=1, max_size=8, unique=True))
def test_glob_tree_orders_as_rglob_for_any_names(
    tmp_path_factory: pytest.TempPathFactory, names: list[str]
) -> None:
    base = tmp_path_factory.mktemp("g")
    for name in names:
        path = base / name
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch()
        except OSError:  # a name that is a directory of another name: skipped
            continue
    for pattern in ("*", "*a"):
        assert safeio.glob_tree(base, pattern) == sorted(base.rglob(pattern))


def test_a_directory_that_cannot_be_listed_is_refused_by_name(tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    with pytest.raises(safeio.Refusal) as e:
        safeio.listdir(missing)
    assert e.value.rule == safeio.LIST_FAILED
    assert str(missing) in str(e.value)
    a_file = tmp_path / "file"
    a_file.write_text("x")
    with pytest.raises(safeio.Refusal, match="file: cannot list directory"):
        list(safeio.scan(a_file))
    with pytest.raises(safeio.Refusal, match="missing: cannot list directory"):
        safeio.names(missing)


def test_scan_streams(planted: tuple[Path, Path]) -> None:
    """A caller that stops at the first entry reads no more (a generator, not a list)."""
    tree, _ = planted
    it = safeio.scan(tree)
    name, path, _ = next(it)
    assert name in {p.name for p in tree.iterdir()} and path == os.path.join(tree, name)
    del it  # the directory closed with the generator


# --- creating and removing -------------------------------------------------------------------


def test_make_dirs_creates_and_names_what_it_cannot(tmp_path: Path) -> None:
    deep = tmp_path / "a" / "b" / "c"
    atomic.make_dirs(deep)
    assert deep.is_dir()
    atomic.make_dirs(deep)  # there already: fine
    with pytest.raises(safeio.Refusal, match="exists already") as e:
        atomic.make_dirs(deep, exist_ok=False)
    assert str(deep) in str(e.value)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(safeio.Refusal) as e:
        atomic.make_dirs(blocker / "below")
    assert e.value.rule == atomic.WRITE_FAILED
    assert str(blocker / "below") in str(e.value)


def test_remove_takes_a_link_away_never_its_target(planted: tuple[Path, Path]) -> None:
    tree, outside = planted
    assert atomic.remove(tree / "secret-link.yaml")
    assert not os.path.lexists(tree / "secret-link.yaml")
    assert (outside / "secret.yaml").read_text() == "secret"
    assert atomic.remove(tree / "escape")  # a link to a directory is a file to remove
    assert (outside / "deeper" / "more.yaml").exists()
    assert atomic.remove(tree / "a.yaml")
    assert not atomic.remove(tree / "a.yaml")  # gone: False
    with pytest.raises(safeio.Refusal, match="no such file") as e:
        atomic.remove(tree / "a.yaml", missing_ok=False)
    assert str(tree / "a.yaml") in str(e.value)
    with pytest.raises(safeio.Refusal, match="is a directory") as e:
        atomic.remove(tree / "sub")
    assert str(tree / "sub") in str(e.value)


def test_discard_removes_a_tree_and_nothing_a_link_in_it_points_to(
    planted: tuple[Path, Path],
) -> None:
    tree, outside = planted
    assert outputs.discard(tree)
    assert not os.path.lexists(tree)
    assert (outside / "secret.yaml").read_text() == "secret"
    assert (outside / "deeper" / "more.yaml").read_text() == "more"
    assert not outputs.discard(tree)  # nothing there: False


def test_discard_refuses_a_link_at_the_path_by_name(planted: tuple[Path, Path]) -> None:
    tree, outside = planted
    link = tree / "escape"
    with pytest.raises(safeio.Refusal, match="symbolic link") as e:
        outputs.discard(link)
    assert e.value.rule == outputs.DISCARD_RULE
    assert str(link) in str(e.value)
    assert not outputs.discard(link, ignore_errors=True)  # ignored: left, and not followed
    assert link.is_symlink()
    assert (outside / "secret.yaml").exists() and (outside / "deeper").is_dir()
    with pytest.raises(safeio.Refusal, match="not a directory"):
        outputs.discard(tree / "a.yaml")
    assert (tree / "a.yaml").exists()


def test_discard_names_what_it_could_not_remove(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tree the file system will not let go (a read-only directory, for a user not root):
    the refusal names the entry that failed; with `ignore_errors` it is left, as rmtree did."""
    tree = tmp_path / "tree"
    (tree / "locked").mkdir(parents=True)
    calls: list[bool] = []

    def refuse(path: Path, ignore_errors: bool = False) -> None:
        calls.append(ignore_errors)
        if not ignore_errors:
            raise PermissionError(13, "Permission denied", str(tree / "locked"))

    monkeypatch.setattr("generator.core.outputs.shutil.rmtree", refuse)
    with pytest.raises(safeio.Refusal, match="cannot remove: Permission denied") as e:
        outputs.discard(tree)
    assert str(tree / "locked") in str(e.value)
    assert not outputs.discard(tree, ignore_errors=True)  # still there: False, no error
    assert calls == [False, True]


def test_chmod_dirs_sets_every_directory_the_writer_holds(tmp_path: Path) -> None:
    root = tmp_path / "new"
    root.mkdir(mode=0o700)
    with atomic.TreeWriter(root) as tree:
        tree.put("a/b/c.txt", b"x")
        tree.put("d/e.txt", b"y")
        tree.chmod_dirs(0o755)
    for d in (root, root / "a", root / "a" / "b", root / "d"):
        assert stat.S_IMODE(d.stat().st_mode) == 0o755, d


def test_leftovers_removed_beside_an_output_never_through_a_planted_link(
    planted: tuple[Path, Path],
) -> None:
    """A link named like a staging tree beside the output (`.site-build-x -> /outside`) is left,
    and what it points to survives: the sweep of leftovers lists and removes through the doors."""
    from generator.core.outputs import staging_prefix
    from generator.site.outdir import remove_leftovers

    tree, outside = planted
    out = tree / "site"
    out.mkdir()
    prefix = staging_prefix(out)
    (tree / f"{prefix}killed" / "docs").mkdir(parents=True)  # a real leftover: removed
    (tree / f"{prefix}killed" / "docs" / "x.html").write_text("x")
    (tree / f"{prefix}evil").symlink_to(outside)
    (tree / f"{prefix}file").write_text("not a tree")
    remove_leftovers(out)
    assert not (tree / f"{prefix}killed").exists()
    assert (tree / f"{prefix}evil").is_symlink()
    assert (tree / f"{prefix}file").read_text() == "not a tree"
    assert (outside / "secret.yaml").read_text() == "secret"
    assert (outside / "deeper" / "more.yaml").read_text() == "more"


def test_a_temporary_tree_is_fresh_private_and_removed(tmp_path: Path) -> None:
    """`outputs.temp_dir`: a new name each time (a planted entry of any name is never reused),
    mode 0700, removed when the block ends, a link inside removed as a link."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("x")
    with outputs.temp_dir("t-", tmp_path) as a, outputs.temp_dir("t-", tmp_path) as b:
        assert a != b and a.parent == b.parent == tmp_path
        assert (a.stat().st_mode & 0o777) == 0o700
        (a / "link").symlink_to(outside, target_is_directory=True)
    assert not a.exists() and not b.exists()
    assert (outside / "keep").read_text() == "x"


def test_a_temporary_tree_that_cannot_be_made_names_its_parent(tmp_path: Path) -> None:
    missing = tmp_path / "no" / "such"
    with pytest.raises(safeio.Refusal) as e:
        outputs.make_temp_dir("t-", missing)
    assert str(missing) in str(e.value) and e.value.rule == outputs.TEMP_RULE
