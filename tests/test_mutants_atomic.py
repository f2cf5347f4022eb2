"""The atomic writer (`generator/core/atomic.py`), pinned for `make mutation` (issue 32).

A file is replaced by a rename of a complete temporary file beside it: parents are created, the
mode is applied before the rename (without one, the file gets 0666 less the umask, as any new
file), and on any failure the temporary file is removed and the error raised, the old file
untouched.
"""

from __future__ import annotations

import io
import os
import stat
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from generator.core import atomic
from generator.core.atomic import write_atomic
from generator.core.errors import UsageError
from generator.core.safeio import Refusal


def test_a_file_is_written_with_its_parents(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "f.txt"
    write_atomic(target, b"one")
    assert target.read_bytes() == b"one"
    write_atomic(target, b"two")
    assert target.read_bytes() == b"two"
    assert sorted(p.name for p in target.parent.iterdir()) == ["f.txt"]


def test_the_mode_is_applied(tmp_path: Path) -> None:
    target = tmp_path / "f"
    old = os.umask(0o027)
    try:
        write_atomic(target, b"x", mode=0o604)  # applied as given, the umask notwithstanding
        assert stat.S_IMODE(target.stat().st_mode) == 0o604
        write_atomic(target, b"y")  # no mode: 0666 less the umask, as any new file
        assert stat.S_IMODE(target.stat().st_mode) == 0o640
    finally:
        os.umask(old)


def test_a_failed_write_leaves_the_old_file_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "f"
    target.write_bytes(b"old")

    def refuse(src: str, dst: object, **dir_fds: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError, match="No space left"):
        write_atomic(target, b"new")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["f"]


# --- the modes a new file or directory gets --------------------------------------------------


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


@pytest.mark.usefixtures("umask_022")
def test_new_files_and_directories_get_the_usual_modes(tmp_path: Path) -> None:
    """0666 (files) and 0777 (directories) less the umask, whichever writer made them."""
    root = tmp_path / "root"
    write_atomic(root / "a" / "f", b"x", root=root)
    assert (_mode(root / "a"), _mode(root / "a" / "f")) == (0o755, 0o644)
    atomic.append_text(tmp_path / "summary.md", "x")
    assert _mode(tmp_path / "summary.md") == 0o644
    os.close(atomic.open_lock(tmp_path / "lock"))
    assert _mode(tmp_path / "lock") == 0o644
    with atomic.TreeWriter(tmp_path / "tree") as tree:
        tree.put("d/e/f.txt", b"y")
    assert _mode(tmp_path / "tree" / "d" / "e" / "f.txt") == 0o644
    assert _mode(tmp_path / "tree" / "d") == 0o755


def test_a_temporary_file_is_private_until_its_mode_is_applied(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file written with a mode (a key, a cache entry) is 0600 while it is written: nobody
    else reads it before the mode its caller chose is applied."""
    seen: list[int] = []
    real = os.fchmod

    def spy(fd: int, mode: int) -> None:
        seen.append(stat.S_IMODE(os.fstat(fd).st_mode))
        real(fd, mode)

    monkeypatch.setattr(os, "fchmod", spy)
    old = os.umask(0)
    try:
        write_atomic(tmp_path / "a", b"x", mode=0o644)
        assert atomic.create_once(tmp_path / "b", b"y", mode=0o640)
    finally:
        os.umask(old)
    assert seen == [0o600, 0o600]
    assert (_mode(tmp_path / "a"), _mode(tmp_path / "b")) == (0o644, 0o640)


def test_descriptors_are_not_inherited(tmp_path: Path) -> None:
    fd = atomic.open_devnull()
    try:
        assert not os.get_inheritable(fd)
    finally:
        os.close(fd)
    lock = atomic.open_lock(tmp_path / "lock")
    try:
        assert not os.get_inheritable(lock)
    finally:
        os.close(lock)
    with atomic.TreeWriter(tmp_path / "tree") as tree:
        tree.put("a/f", b"x")
        assert all(not os.get_inheritable(fd) for fd in tree._dirs.values())


# --- write_atomic: where it writes, what it refuses ----------------------------------------


def test_a_path_outside_its_root_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "root"
    for path in (tmp_path / "out" / "f", tmp_path / "f", root, tmp_path / "out" / "a" / "f"):
        with pytest.raises(Refusal, match="lies outside"):
            write_atomic(path, b"x", root=root)
    assert sorted(p.name for p in tmp_path.rglob("*")) in ([], ["root"])


def test_nested_paths_below_a_root_land_where_named(tmp_path: Path) -> None:
    root = tmp_path / "root"
    write_atomic(root / "a" / "b" / "c.yaml", b"abc", root=root)
    write_atomic(root / "a" / "d.yaml", b"ad", root=root)
    write_atomic(root / "e.yaml", b"e", root=str(root))
    files = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    assert files == {"a/b/c.yaml": b"abc", "a/d.yaml": b"ad", "e.yaml": b"e"}


def test_a_relative_path_is_written_in_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write_atomic("f.txt", b"here")
    atomic.write_text(Path("sub") / "g.txt", "there")
    assert (tmp_path / "f.txt").read_bytes() == b"here"
    assert (tmp_path / "sub" / "g.txt").read_text() == "there"


def test_a_link_or_a_directory_at_the_target_is_refused(tmp_path: Path) -> None:
    (tmp_path / "victim").write_text("precious\n")
    (tmp_path / "link").symlink_to(tmp_path / "victim")
    (tmp_path / "dir").mkdir()
    with pytest.raises(Refusal) as e:
        write_atomic(tmp_path / "link", b"x")
    assert e.value.rule == atomic.WRITE_LINK
    assert (tmp_path / "link").is_symlink()
    with pytest.raises(Refusal) as e:
        write_atomic(tmp_path / "dir", b"x")
    assert e.value.rule == atomic.WRITE_NOT_REGULAR
    assert (tmp_path / "victim").read_text() == "precious\n" and (tmp_path / "dir").is_dir()


def test_a_link_below_the_root_is_refused_as_a_link(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    outside.mkdir()
    root.mkdir()
    (root / "a").symlink_to(outside)
    (root / "f").mkdir()
    for path in (root / "a" / "x", root / "a" / "b" / "x"):
        with pytest.raises(Refusal) as e:
            write_atomic(path, b"x", root=root)
        assert e.value.rule == atomic.WRITE_LINK
    (root / "plain").write_text("file\n")
    with pytest.raises(Refusal) as e:  # a file where a directory should be: ENOTDIR
        write_atomic(root / "plain" / "x", b"x", root=root)
    assert e.value.rule == atomic.WRITE_LINK
    assert list(outside.iterdir()) == []


def test_a_name_too_long_is_a_refusal(tmp_path: Path) -> None:
    root = tmp_path / "root"
    with pytest.raises(Refusal, match="cannot open directory: File name too long"):
        write_atomic(root / ("d" * 300) / "f", b"x", root=root)
    with pytest.raises(Refusal, match="cannot write: File name too long"):
        write_atomic(tmp_path / ("f" * 250), b"x")  # the name fits, its temporary does not
    with pytest.raises(Refusal, match="cannot write: File name too long"):
        atomic.append_text(tmp_path / ("f" * 300), "x")
    with pytest.raises(Refusal, match="cannot open lock: File name too long"):
        atomic.open_lock(tmp_path / ("f" * 300))


def test_a_root_that_is_a_file_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "root").write_text("a file\n")
    with pytest.raises(Refusal, match="cannot open directory"):
        write_atomic(tmp_path / "root" / "f", b"x", root=tmp_path / "root")
    # the same when the file is swapped in after the directory was made (mkdir sees nothing)
    monkeypatch.setattr(Path, "mkdir", lambda self, *a, **k: None)
    with pytest.raises(Refusal, match="cannot open directory: Not a directory"):
        write_atomic(tmp_path / "root" / "f", b"x", root=tmp_path / "root")


def test_a_directory_that_vanishes_after_it_was_made_is_an_error_not_a_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(os, "mkdir", lambda *a, **k: None)
    with pytest.raises(FileNotFoundError):
        write_atomic(tmp_path / "root" / "a" / "f", b"x", root=tmp_path)


# --- create_once --------------------------------------------------------------------------


def test_create_once_creates_once(tmp_path: Path) -> None:
    assert atomic.create_once(tmp_path / "f", b"first") is True
    assert atomic.create_once(tmp_path / "f", b"second") is False
    assert (tmp_path / "f").read_bytes() == b"first"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f"]


# --- append_text and open_lock ------------------------------------------------------------


def test_append_text_appends(tmp_path: Path) -> None:
    target = tmp_path / "summary.md"
    atomic.append_text(target, "one\n")
    atomic.append_text(target, "two ü\n")
    assert target.read_bytes() == "one\ntwo ü\n".encode()


@pytest.mark.parametrize("opener", ["append", "lock"])
def test_append_and_lock_refuse_what_is_not_a_regular_file(opener: str, tmp_path: Path) -> None:
    (tmp_path / "dir").mkdir()
    (tmp_path / "secret").write_text("precious\n")
    (tmp_path / "link").symlink_to(tmp_path / "secret")

    def call(path: Path) -> None:
        if opener == "append":
            atomic.append_text(path, "x")
        else:
            os.close(atomic.open_lock(path))

    with pytest.raises(Refusal) as e:
        call(Path(os.devnull))
    assert e.value.rule == atomic.WRITE_NOT_REGULAR
    with pytest.raises(Refusal) as e:
        call(tmp_path / "link")
    assert e.value.rule == atomic.WRITE_LINK
    with pytest.raises(Refusal) as e:
        call(tmp_path / "dir")
    assert e.value.rule == atomic.WRITE_FAILED
    with pytest.raises(Refusal) as e:
        call(tmp_path / "missing" / "f")
    assert e.value.rule == atomic.WRITE_FAILED
    assert (tmp_path / "secret").read_text() == "precious\n"


def test_a_lock_is_a_regular_file_opened_for_writing(tmp_path: Path) -> None:
    fd = atomic.open_lock(tmp_path / "lock")
    try:
        assert os.write(fd, b"pid") == 3
    finally:
        os.close(fd)
    assert (tmp_path / "lock").read_bytes() == b"pid"


# --- TreeWriter ---------------------------------------------------------------------------


def test_the_tree_writer_writes_below_its_root(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    with atomic.TreeWriter(root) as tree:
        tree.put("index.html", b"<p>")
        tree.put("a/b/c.txt", b"c")
        tree.put("a/d.txt", b"d", mode=0o600)
        tree.put("a/b/c.txt", b"c2")  # replaced, truncated
        tree.put("a/e.txt", b"e")
        tree.remove("a/e.txt")
        tree.remove("a/never.txt")
        tree.chmod_dir("a", 0o700)
    files = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    assert files == {"index.html": b"<p>", "a/b/c.txt": b"c2", "a/d.txt": b"d"}
    assert _mode(root / "a" / "d.txt") == 0o600
    assert _mode(root / "a") == 0o700


@pytest.mark.parametrize(
    "rel", ["../f", "a/../../f", "/abs", "a/", "", ".", "a/./f", "a\\b/f", "..\\x/f"]
)
def test_the_tree_writer_refuses_a_path_leaving_the_tree(rel: str, tmp_path: Path) -> None:
    with atomic.TreeWriter(tmp_path / "tree") as tree:
        with pytest.raises(Refusal, match="is not a relative path inside the tree"):
            tree.put(rel, b"x")
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


def test_the_tree_writer_never_writes_through_a_link(tmp_path: Path) -> None:
    root, outside = tmp_path / "tree", tmp_path / "outside"
    outside.mkdir()
    (outside / "f").write_text("precious\n")
    with atomic.TreeWriter(root) as tree:
        tree.put("a/x", b"x")
        (root / "link").symlink_to(outside)
        (root / "a" / "f").symlink_to(outside / "f")
        for rel in ("link/f", "a/f"):
            with pytest.raises(Refusal) as e:
                tree.put(rel, b"new")
            assert e.value.rule == atomic.WRITE_LINK
    assert (outside / "f").read_text() == "precious\n"


@pytest.mark.parametrize(
    ("errno_", "rule"), [(40, atomic.WRITE_LINK), (13, atomic.WRITE_FAILED)]
)  # ELOOP: a link swapped in after the check; EACCES
def test_the_tree_writer_classifies_a_failed_open(
    errno_: int, rule: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = os.open

    def failing(path: str, flags: int, *args: object, **kwargs: object) -> int:
        if path == "target":
            raise OSError(errno_, os.strerror(errno_))
        return real(path, flags, *args, **kwargs)  # type: ignore[arg-type]

    with atomic.TreeWriter(tmp_path / "tree") as tree:
        monkeypatch.setattr(os, "open", failing)
        with pytest.raises(Refusal) as e:
            tree.put("target", b"x")
    assert e.value.rule == rule


_PLANTS = ("none", "file", "link", "dangling", "dir")


def _plant(root: Path, outside: Path, rel: str, kind: str) -> None:
    """Something of `kind` at `rel` below `root`, unless something is there already."""
    path = root / rel
    if kind == "none" or path.is_symlink() or path.exists():
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError:  # a file or a link on the way: planted by an earlier step
        return
    if kind == "file":
        path.write_bytes(b"planted")
    elif kind == "link":
        path.symlink_to(os.path.relpath(outside / "victim", path.parent))
    elif kind == "dangling":
        path.symlink_to(os.path.relpath(outside / "missing", path.parent))
    else:
        path.mkdir()
        (path / "inner").write_bytes(b"inner")


def _snapshot(root: Path) -> dict[str, tuple[str, bytes | str | None, int]]:
    """Every entry below `root`: its kind, its bytes (a file) or target (a link), its mode."""
    out: dict[str, tuple[str, bytes | str | None, int]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            st = path.lstat()
            if stat.S_ISLNK(st.st_mode):
                out[str(path.relative_to(root))] = ("link", os.readlink(path), 0)
            elif stat.S_ISDIR(st.st_mode):
                out[str(path.relative_to(root))] = ("dir", None, stat.S_IMODE(st.st_mode))
            else:
                out[str(path.relative_to(root))] = (
                    "file",
                    path.read_bytes(),
                    stat.S_IMODE(st.st_mode),
                )
    return out


def _put_all(
    base: Path, method: str, ops: list[tuple[str, str, bytes, int | None]]
) -> tuple[list[str], dict[str, Any], dict[str, Any]]:
    root, outside = base / "tree", base / "outside"
    outside.mkdir(parents=True)
    (outside / "victim").write_bytes(b"precious")
    outcomes: list[str] = []
    old = os.umask(0o022)
    try:
        with atomic.TreeWriter(root) as tree:
            for rel, kind, data, mode in ops:
                _plant(root, outside, rel, kind)
                try:
                    getattr(tree, method)(rel, data, mode)
                except Refusal as e:
                    outcomes.append(f"{e.rule} {e}")
                else:
                    outcomes.append("ok")
    finally:
        os.umask(old)
    return outcomes, _snapshot(root), _snapshot(outside)


@settings(max_examples=80, deadline=None)
@given(
    ops=st.lists(
        st.tuples(
            st.sampled_from(["f", "a/f", "a/b/g", "a"]),
            st.sampled_from(_PLANTS),
            st.binary(max_size=40),
            st.sampled_from([None, 0o600, 0o640]),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_put_writes_and_refuses_as_put_reference_does(
    ops: list[tuple[str, str, bytes, int | None]], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """`TreeWriter.put` (a new file opened with `O_EXCL`, the checked way only when something
    is there) against `put_reference` (`lstat`, then `O_TRUNC`): the same files, modes and
    refusals, whatever was planted at the target (a file, a link to a file outside, a dangling
    link, a directory), and nothing outside the tree ever touched."""
    base = tmp_path_factory.mktemp("put")
    fast = _put_all(base / "fast", "put", ops)
    reference = _put_all(base / "reference", "put_reference", ops)
    assert [o.replace(str(base / "fast"), "") for o in fast[0]] == [
        o.replace(str(base / "reference"), "") for o in reference[0]
    ]
    assert fast[1:] == reference[1:]
    assert fast[2] == {"victim": ("file", b"precious", fast[2]["victim"][2])}


def test_put_writes_every_byte_of_a_short_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = os.write
    monkeypatch.setattr(os, "write", lambda fd, data: real(fd, bytes(data)[:3]))
    with atomic.TreeWriter(tmp_path / "tree") as tree:
        tree.put("a/f", b"0123456789")
        tree.put("empty", b"")
    assert (tmp_path / "tree" / "a" / "f").read_bytes() == b"0123456789"
    assert (tmp_path / "tree" / "empty").read_bytes() == b""


def test_put_closes_the_file_when_its_write_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    closed: list[int] = []
    real_close = os.close

    def full(fd: int, data: object) -> int:
        raise OSError(28, "No space left on device")

    def close(fd: int) -> None:
        closed.append(fd)
        real_close(fd)

    with atomic.TreeWriter(tmp_path / "tree") as tree:
        monkeypatch.setattr(os, "write", full)
        monkeypatch.setattr(os, "close", close)
        with pytest.raises(OSError, match="No space left"):
            tree.put("f", b"data")
        assert len(closed) == 1
        monkeypatch.undo()


def test_link_from_links_a_link_as_a_link(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("content\n")
    (tmp_path / "alias").symlink_to(tmp_path / "file")
    with atomic.TreeWriter(tmp_path / "tree") as tree:
        tree.link_from(tmp_path / "file", "hard")
        tree.link_from(tmp_path / "alias", "sub/alias")
    assert (tmp_path / "tree" / "hard").stat().st_ino == (tmp_path / "file").stat().st_ino
    assert (tmp_path / "tree" / "sub" / "alias").is_symlink()


def test_copy_tree_copies_links_as_links(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "f").write_text("x")
    (src / "l").symlink_to("/etc/hostname")
    atomic.copy_tree(src, tmp_path / "dst")
    assert (tmp_path / "dst" / "l").is_symlink()
    assert os.readlink(tmp_path / "dst" / "l") == "/etc/hostname"


# --- extract_tar --------------------------------------------------------------------------


def _tar(*members: tuple[str, str | bytes]) -> bytes:
    """(name, bytes content) for a file, (name, "-> target") for a symbolic link."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, what in members:
            info = tarfile.TarInfo(name)
            if isinstance(what, str):
                info.type, info.linkname = tarfile.SYMTYPE, what.removeprefix("-> ")
                tar.addfile(info)
            else:
                info.size = len(what)
                tar.addfile(info, io.BytesIO(what))
    return buf.getvalue()


def test_extract_tar_keeps_links_the_filter_refuses_as_they_are(tmp_path: Path) -> None:
    out = tmp_path / "out"
    data = _tar(
        ("a/f.txt", b"file"),
        ("top", "-> /etc/hostname"),
        ("a/up", "-> ../../outside"),
        ("deep/er/abs", "-> /etc/passwd"),
        ("a/ok", "-> f.txt"),
    )
    atomic.extract_tar(data, out)
    assert (out / "a" / "f.txt").read_bytes() == b"file"
    assert os.readlink(out / "top") == "/etc/hostname"
    assert os.readlink(out / "a" / "up") == "../../outside"
    assert os.readlink(out / "deep" / "er" / "abs") == "/etc/passwd"
    assert os.readlink(out / "a" / "ok") == "f.txt"


@pytest.mark.parametrize("name", ["../evil.txt", "a/../../evil.txt"])
def test_extract_tar_refuses_a_file_member_leaving_the_tree(name: str, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="cannot be extracted"):
        atomic.extract_tar(_tar((name, b"x")), tmp_path / "out")
    assert not (tmp_path / "evil.txt").exists()


def test_extract_tar_refuses_a_link_named_out_of_the_tree(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="leaves the snapshot"):
        atomic.extract_tar(_tar(("a/..", "-> /etc/passwd")), tmp_path / "out")


def test_extract_tar_never_places_a_link_through_a_link(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    data = _tar(("d", f"-> {elsewhere}"), ("d/x", "-> /etc/passwd"))
    with pytest.raises(UsageError, match="leaves the snapshot"):
        atomic.extract_tar(data, tmp_path / "out")
    assert list(elsewhere.iterdir()) == []


def test_create_once_never_follows_a_link_swapped_in_for_its_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """If the temporary file is replaced by a link before it is linked into place (a race by
    someone who can write the directory), the link is placed as a link (which the no-follow
    readers refuse), never as a second name of the file it points to."""
    secret = tmp_path / "secret"
    secret.write_text("precious\n")
    real_link = os.link

    def racing(src: str, dst: str, **kw: Any) -> None:
        dir_fd = kw["src_dir_fd"]
        os.unlink(src, dir_fd=dir_fd)
        os.symlink(secret, src, dir_fd=dir_fd)
        real_link(src, dst, **kw)

    monkeypatch.setattr(os, "link", racing)
    assert atomic.create_once(tmp_path / "entry", b"data") is True
    entry = tmp_path / "entry"
    assert entry.is_symlink()
    assert entry.lstat().st_ino != secret.stat().st_ino
