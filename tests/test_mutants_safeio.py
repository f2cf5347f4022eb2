"""The safe reader's guards that no other test pins down (issue 32, `make mutation`).

Each test fails on a mutant of `generator/core/safeio.py` that the rest of the suite let
through: the open flags that guard a file swapped between `check` and `open` (`O_NONBLOCK`,
`O_NOFOLLOW`), a read error after opening (a refusal, never a truncated file), the bounded read
of a file that grows, and the position of a refusal's diagnostic (the whole file: line 0).
"""

from __future__ import annotations

import errno
import io
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from generator.core import safeio
from generator.core.errors import Diagnostic


def _swap_after_check(monkeypatch: pytest.MonkeyPatch, swapped: Path) -> None:
    """`check` approves the file, then (as an attacker racing it would) `read` opens `swapped`."""
    real_check = safeio.check

    def check(path: Path | str, **kw: Any) -> tuple[str, os.stat_result]:
        _, st = real_check(path, **kw)
        return str(swapped), st

    monkeypatch.setattr(safeio, "check", check)


def test_a_fifo_swapped_in_after_the_check_is_refused_without_blocking(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "f.yaml").write_bytes(b"a: 1\n")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    _swap_after_check(monkeypatch, fifo)
    done, rescued = threading.Event(), threading.Event()

    def watchdog() -> None:
        # an open without O_NONBLOCK waits for a writer: be that writer after 3 s, and say so
        if not done.wait(3):
            rescued.set()
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))

    t = threading.Thread(target=watchdog)
    t.start()
    try:
        with pytest.raises(safeio.Refusal) as info:
            safeio.read(tmp_path / "f.yaml", root=tmp_path)
    finally:
        done.set()
        t.join()
    assert not rescued.is_set(), "the open blocked on the FIFO (no O_NONBLOCK)"
    assert info.value.rule == safeio.NOT_REGULAR


def test_a_link_swapped_in_after_the_check_is_not_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "f.yaml").write_bytes(b"a: 1\n")
    secret = tmp_path / "secret"
    secret.write_bytes(b"do-not-read")
    link = tmp_path / "link"
    link.symlink_to(secret)
    _swap_after_check(monkeypatch, link)
    with pytest.raises(safeio.Refusal) as info:
        safeio.read(tmp_path / "f.yaml", root=tmp_path)
    assert info.value.rule == safeio.UNREADABLE
    assert "do-not-read" not in str(info.value)


class _Chunked(io.RawIOBase):
    """A file object that returns at most `chunk` bytes per read, then raises `error` if set."""

    def __init__(self, data: bytes, chunk: int, error: OSError | None = None) -> None:
        super().__init__()
        self.data, self.chunk, self.error, self.at = data, chunk, error, 0
        self.fd: int | None = None

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        super().close()

    def read(self, size: int = -1) -> bytes:
        if self.at >= len(self.data) and self.error is not None:
            raise self.error
        n = min(self.chunk, size if size >= 0 else len(self.data))
        out = self.data[self.at : self.at + n]
        self.at += len(out)
        return out

    def readable(self) -> bool:
        return True


def _reads(monkeypatch: pytest.MonkeyPatch, fake: _Chunked) -> None:
    """`read` reads through `fake` (the real descriptor is still opened, checked and closed)."""

    def fdopen(fd: int, *args: Any, **kw: Any) -> Any:
        fake.fd = fd
        return fake

    monkeypatch.setattr(safeio.os, "fdopen", fdopen)


def test_a_read_error_after_opening_refuses_instead_of_returning_part_of_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "f.yaml"
    path.write_bytes(b"a: 1\nb: 2\n")
    _reads(monkeypatch, _Chunked(b"a: 1\n", 4, OSError(errno.EIO, "Input/output error")))
    with pytest.raises(safeio.Refusal) as info:
        safeio.read(path, root=tmp_path)
    assert info.value.rule == safeio.UNREADABLE
    assert "Input/output error" in info.value.message


def test_a_file_that_grows_past_the_limit_while_read_in_pieces_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "f.yaml"
    path.write_bytes(b"x" * 8)  # within the limit when checked
    _reads(monkeypatch, _Chunked(b"x" * 12, 4))  # larger when read, 4 bytes at a time
    with pytest.raises(safeio.Refusal) as info:
        safeio.read(path, root=tmp_path, limit=8)
    assert info.value.rule == safeio.TOO_LARGE


@pytest.mark.parametrize("chunk", [1, 4, 8, 9])
def test_a_file_of_exactly_the_limit_is_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    path = tmp_path / "f.yaml"
    path.write_bytes(b"y" * 8)
    _reads(monkeypatch, _Chunked(b"y" * 8, chunk))
    assert safeio.read(path, root=tmp_path, limit=8) == b"y" * 8


def test_a_file_of_exactly_the_limit_passes_the_check(tmp_path: Path) -> None:
    path = tmp_path / "f.yaml"
    path.write_bytes(b"z" * 8)
    assert safeio.read(path, root=tmp_path, limit=8) == b"z" * 8
    with pytest.raises(safeio.Refusal) as info:
        safeio.read(path, root=tmp_path, limit=7)
    assert info.value.rule == safeio.TOO_LARGE


def test_a_refusal_is_located_at_the_file_not_at_a_line(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "p.yaml")
    with pytest.raises(safeio.Refusal) as info:
        safeio.read(tmp_path / "p.yaml")
    path = str(tmp_path / "p.yaml")
    message = "not a regular file"
    assert list(info.value.diagnostics) == [
        Diagnostic(path, 0, 0, "$", message, safeio.NOT_REGULAR)
    ]
    assert str(info.value) == f"{path}: {message}"
    assert safeio.diagnostic("p.yaml", info.value) == Diagnostic(
        "p.yaml", 0, 0, "$", message, safeio.NOT_REGULAR
    )
    # an oversized YAML file keeps the YAML reader's rule; any other file the reader's
    big = safeio.Refusal(safeio.TOO_LARGE, "too big", "x")
    assert safeio.diagnostic("a.yaml", big).rule == "yaml.too-large"
    assert safeio.diagnostic("a.json", big).rule == safeio.TOO_LARGE
    assert safeio.diagnostic("a.yaml", info.value).rule == safeio.NOT_REGULAR


def test_a_refusal_without_a_path_has_no_diagnostic() -> None:
    r = safeio.Refusal(safeio.UNREADABLE, "cannot read file: gone")
    assert str(r) == "cannot read file: gone" and list(r.diagnostics) == []


def test_the_cap_of_a_file_by_its_name() -> None:
    assert safeio.cap_for("a.yaml") == safeio.cap_for("b.yml") == safeio.YAML_BYTES
    assert safeio.cap_for("x.sigstore.json") == safeio.YAML_BYTES
    assert safeio.cap_for("values.json") == safeio.cap_for("README") == safeio.OTHER_BYTES


def test_inside_its_tree(tmp_path: Path) -> None:
    root = str(tmp_path / "tree")
    assert safeio._inside(root, root)
    assert safeio._inside(root + "/a/b", root)
    assert safeio._inside(root + "/a", root + "/")
    assert not safeio._inside(root + "-other/a", root)
    assert not safeio._inside(str(tmp_path), root)


def test_a_link_out_of_the_tree_named_by_real_root_alone_is_refused(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tmp_path / "out.yaml").write_bytes(b"a: 1\n")
    (tree / "link.yaml").symlink_to(tmp_path / "out.yaml")
    with pytest.raises(safeio.Refusal) as info:
        safeio.check(tree / "link.yaml", real_root=os.path.realpath(tree))
    assert info.value.rule == safeio.ESCAPE
    # a file the user named on the command line (no tree) may be anywhere
    assert safeio.read(tree / "link.yaml") == b"a: 1\n"


# --- sha256: the same guards as read, in chunks -------------------------------------------------


def test_sha256_of_a_file_up_to_its_limit(tmp_path: Path) -> None:
    import hashlib

    path = tmp_path / "asset.tar.gz"
    path.write_bytes(b"0123456789")
    assert safeio.sha256(path, limit=10) == hashlib.sha256(b"0123456789").hexdigest()
    (tmp_path / "empty").write_bytes(b"")
    assert safeio.sha256(tmp_path / "empty") == hashlib.sha256(b"").hexdigest()


def test_sha256_refuses_a_file_that_grows_past_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "asset"
    path.write_bytes(b"x" * 8)
    _reads(monkeypatch, _Chunked(b"x" * 12, 4))
    with pytest.raises(safeio.Refusal) as info:
        safeio.sha256(path, limit=8)
    assert info.value.rule == safeio.TOO_LARGE


def test_sha256_refuses_a_fifo_or_a_link_swapped_in_after_the_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "asset").write_bytes(b"asset")
    secret = tmp_path / "secret"
    secret.write_bytes(b"do-not-read")
    (tmp_path / "link").symlink_to(secret)
    _swap_after_check(monkeypatch, tmp_path / "link")
    with pytest.raises(safeio.Refusal) as info:
        safeio.sha256(tmp_path / "asset", root=tmp_path)
    assert info.value.rule == safeio.UNREADABLE
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    _swap_after_check(monkeypatch, fifo)
    done, rescued = threading.Event(), threading.Event()

    def watchdog() -> None:
        if not done.wait(3):
            rescued.set()
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))

    t = threading.Thread(target=watchdog)
    t.start()
    try:
        with pytest.raises(safeio.Refusal) as info:
            safeio.sha256(tmp_path / "asset", root=tmp_path)
    finally:
        done.set()
        t.join()
    assert not rescued.is_set(), "the open blocked on the FIFO (no O_NONBLOCK)"
    assert info.value.rule == safeio.NOT_REGULAR


# --- files, read_text, template_source, diagnostic ---------------------------------------------


def test_files_by_suffix_with_a_cap_and_through_links_inside(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.yaml").write_bytes(b"a: 1\n")
    (tmp_path / "b.json").write_bytes(b"{}")
    (tmp_path / "alias.yaml").symlink_to(tmp_path / "d" / "a.yaml")
    assert list(safeio.files(tmp_path)) == [
        ("alias.yaml", b"a: 1\n"),
        ("b.json", b"{}"),
        ("d/a.yaml", b"a: 1\n"),
    ]
    assert [rel for rel, _ in safeio.files(tmp_path, suffixes=(".yaml",))] == [
        "alias.yaml",
        "d/a.yaml",
    ]
    with pytest.raises(safeio.Refusal) as info:
        list(safeio.files(tmp_path, limit=3))
    assert info.value.rule == safeio.TOO_LARGE
    (tmp_path / "out.yaml").symlink_to("/etc/hostname")
    with pytest.raises(safeio.Refusal) as info:
        list(safeio.files(tmp_path, suffixes=(".yaml",)))
    assert info.value.rule == safeio.ESCAPE


def test_read_text_refuses_what_is_not_utf8(tmp_path: Path) -> None:
    (tmp_path / "t.md").write_bytes(b"a\xffb")
    with pytest.raises(safeio.Refusal) as info:
        safeio.read_text(tmp_path / "t.md")
    assert info.value.rule == safeio.ENCODING and "byte offset 1" in info.value.message
    (tmp_path / "u.md").write_bytes("ü\n".encode())
    assert safeio.read_text(tmp_path / "u.md") == "ü\n"


def test_template_source_finds_reads_and_misses(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "page.html").write_text("<p>{{ x }}</p>")
    load = safeio.template_source(tmp_path)
    found = load("sub/page.html")
    assert found is not None
    text, path, uptodate = found
    assert (text, path, uptodate()) == ("<p>{{ x }}</p>", str(tmp_path / "sub" / "page.html"), True)
    assert load("sub/missing.html") is None


@pytest.mark.parametrize(
    ("rel", "rule", "expected"),
    [
        ("a.yaml", safeio.TOO_LARGE, "yaml.too-large"),
        ("a.yml", safeio.TOO_LARGE, "yaml.too-large"),
        ("a.json", safeio.TOO_LARGE, safeio.TOO_LARGE),
        ("a.yaml", safeio.ESCAPE, safeio.ESCAPE),
    ],
)
def test_a_diagnostic_of_a_refusal(rel: str, rule: str, expected: str) -> None:
    d = safeio.diagnostic(rel, safeio.Refusal(rule, "why", rel))
    assert (d.path, d.line, d.col, d.json_path, d.message, d.rule) == (
        rel,
        0,
        0,
        "$",
        "why",
        expected,
    )


# --- gunzip and tar_files ------------------------------------------------------------------------


def test_gunzip_reads_gzip_only_and_up_to_its_limit() -> None:
    import gzip
    import zlib

    assert safeio.gunzip(gzip.compress(b"x" * 10), what="w", limit=10) == b"x" * 10
    with pytest.raises(safeio.Oversize, match="unpacks to more than 9 bytes"):
        safeio.gunzip(gzip.compress(b"x" * 10), what="w", limit=9)
    with pytest.raises(safeio.Oversize):
        safeio.gunzip(gzip.compress(b"x" * 100), what="w", limit=9)
    for raw in (zlib.compress(b"x" * 10), b"not gzip at all"):
        with pytest.raises(safeio.Refusal, match="not a gzip stream") as info:
            safeio.gunzip(raw, what="w", limit=100)
        assert info.value.rule == safeio.ARCHIVE


def _tarball(*members: tuple[str, bytes | str | None], gz: bool = False) -> bytes:
    """(name, bytes) a file, (name, None) a directory, (name, "-> x") a symbolic link."""
    import gzip
    import tarfile

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, what in members:
            info = tarfile.TarInfo(name)
            if what is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            elif isinstance(what, str):
                info.type, info.linkname = tarfile.SYMTYPE, what.removeprefix("-> ")
                tar.addfile(info)
            else:
                info.size = len(what)
                tar.addfile(info, io.BytesIO(what))
    return gzip.compress(buf.getvalue()) if buf.getvalue() and gz else buf.getvalue()


@pytest.mark.parametrize("gz", [False, True])
def test_tar_files_reads_regular_files_by_normalised_name(gz: bool) -> None:
    raw = _tarball(("./", None), ("d/", None), ("./d//a.txt", b"A"), ("b.txt", b"BB"), gz=gz)
    assert safeio.tar_files(raw, what="t") == {"d/a.txt": b"A", "b.txt": b"BB"}
    assert safeio.tar_files(raw, what="t", wanted=frozenset({"b.txt"})) == {"b.txt": b"BB"}


@pytest.mark.parametrize("name", ["/abs.txt", "a\\b.txt", "../up.txt", "a/../../up.txt"])
def test_tar_files_refuses_a_name_leaving_the_archive(name: str) -> None:
    with pytest.raises(safeio.Refusal, match=r"entry '.*' leaves the archive"):
        safeio.tar_files(_tarball((name, b"x")), what="t")
    with pytest.raises(safeio.Refusal, match="entry #2 leaves the archive"):
        safeio.tar_files(_tarball(("ok", b"x"), (name, b"x")), what="t", quote_names=False)


def test_a_duplicate_is_named_as_normalised_or_by_position() -> None:
    raw = _tarball(("x", b"1"), ("y", b"2"), ("./x", b"3"))
    with pytest.raises(safeio.Refusal) as info:
        safeio.tar_files(raw, what="t")
    assert info.value.message == "entry 'x' appears twice (the second time as './x')"
    with pytest.raises(safeio.Refusal) as info:
        safeio.tar_files(raw, what="t", quote_names=False)
    assert info.value.message == "entry #3 appears twice"
    with pytest.raises(safeio.Refusal) as info:
        safeio.tar_files(_tarball(("x", b"1"), ("x", b"2")), what="t")
    assert info.value.message == "entry 'x' appears twice"
    with pytest.raises(safeio.Refusal, match="appears twice"):  # checked, even if not wanted
        safeio.tar_files(raw, what="t", wanted=frozenset({"y"}))


def test_tar_files_refuses_links_and_oversized_members() -> None:
    with pytest.raises(safeio.Refusal) as info:
        safeio.tar_files(_tarball(("a", b"1"), ("l", "-> a")), what="t")
    assert info.value.message == "entry 'l' is not a regular file"
    raw = _tarball(("a", b"12345"))
    assert safeio.tar_files(raw, what="t", member_limit=5) == {"a": b"12345"}
    with pytest.raises(safeio.Oversize) as big:
        safeio.tar_files(raw, what="t", member_limit=4)
    assert big.value.message == "entry 'a' is 5 bytes; the limit is 4"


def test_tar_files_caps_the_archive_and_refuses_what_is_no_tar() -> None:
    raw = _tarball(("a", b"12345"))
    assert safeio.tar_files(raw, what="t", total_limit=len(raw)) == {"a": b"12345"}
    with pytest.raises(safeio.Oversize, match=f"is larger than {len(raw) - 1} bytes"):
        safeio.tar_files(raw, what="t", total_limit=len(raw) - 1)
    with pytest.raises(safeio.Refusal, match="not a tar archive"):
        safeio.tar_files(b"\x00garbage" * 100, what="t")


def test_a_name_that_is_not_utf8_is_refused_and_shown_escaped(tmp_path: Path) -> None:
    raw = os.fsencode(tmp_path) + b"/bad\xff.yaml"
    with open(raw, "wb") as fh:
        fh.write(b"a: 1\n")
    path = os.fsdecode(raw)  # the surrogate escape os.walk and os.listdir give
    assert safeio.shown_path(path) == f"{tmp_path}/bad\\xff.yaml"
    assert safeio.shown_path(tmp_path / "fine.yaml") == f"{tmp_path}/fine.yaml"
    with pytest.raises(safeio.Refusal) as info:
        safeio.read(path)
    assert info.value.rule == safeio.NAME_ENCODING
    assert info.value.message == "file name is not valid UTF-8; rename the file"
    assert [d.path for d in info.value.diagnostics] == [f"{tmp_path}/bad\\xff.yaml"]


def test_read_own_refuses_an_oversized_file_by_its_size_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """read_own (no `check` before it) judges the size on the descriptor before reading: the
    refusal names the file's size, and not a byte is read."""
    (tmp_path / "entry").write_bytes(b"x" * 11)
    fake = _Chunked(b"x" * 11, 4)
    _reads(monkeypatch, fake)
    with pytest.raises(safeio.Refusal) as info:
        safeio.read_own(tmp_path / "entry", limit=10)
    assert info.value.rule == safeio.TOO_LARGE
    assert info.value.message == "file is 11 bytes; the limit is 10 bytes"
    assert fake.at == 0


def _octal(n: int) -> bytes:
    """A 12-byte numeric field of a tar header."""
    return b"%011o\0" % n


def _sparse_member(name: str, size: int, stored: bytes) -> bytes:
    """One old-GNU sparse member (type 'S'): `stored` is its only data, at offset 0, and the
    rest of its `size` bytes is a hole. Its header records `size`, its archive holds only
    `stored`, so the member sizes of such an archive add up to more than its own bytes."""
    import tarfile

    info = tarfile.TarInfo(name)
    info.size = len(stored)
    head = bytearray(info.tobuf(format=tarfile.GNU_FORMAT))
    head[156:157] = tarfile.GNUTYPE_SPARSE
    head[386:398] = _octal(0)  # the data's offset in the file
    head[398:410] = _octal(len(stored))  # and its length
    head[482] = 0  # no extended sparse headers
    head[483:495] = _octal(size)  # the file's real size
    head[148:156] = b" " * 8
    head[148:156] = b"%06o\0 " % sum(head)
    pad = -len(stored) % tarfile.BLOCKSIZE
    return bytes(head) + stored + b"\0" * pad


def _sparse_tar(sizes: tuple[int, ...]) -> bytes:
    import tarfile

    body = b"".join(_sparse_member(f"m{i}", size, b"x") for i, size in enumerate(sizes))
    return body + b"\0" * (2 * tarfile.BLOCKSIZE)


def test_sparse_members_are_read_at_their_real_size() -> None:
    """tarfile reads a GNU sparse member at the size its header gives, holes as zeros: so the
    sizes can add up to more than the archive, and only the total cap stops them."""
    raw = _sparse_tar((1000, 2000))
    assert len(raw) == 3 * 1024  # two headers, two data blocks, the end
    assert safeio.tar_files(raw, what="t") == {"m0": b"x" + bytes(999), "m1": b"x" + bytes(1999)}


def test_sparse_members_adding_up_past_the_total_cap_are_refused() -> None:
    # 4 headers and data blocks + the end: 5120 bytes, within every cap on its own
    limit = 5120
    exact = _sparse_tar((1000, 1000, 1000, limit - 3000))
    assert len(exact) == limit
    got = safeio.tar_files(exact, what="t", total_limit=limit)  # exactly the cap: read
    assert sum(len(v) for v in got.values()) == limit
    over = _sparse_tar((1000, 1000, 1000, limit - 2999))
    assert len(over) == limit
    for member_limit in (limit, safeio.MEMBER_BYTES):  # no member is over its own cap
        with pytest.raises(safeio.Oversize) as info:
            safeio.tar_files(over, what="t", total_limit=limit, member_limit=member_limit)
        assert info.value.message == f"unpacks to more than {limit} bytes"
        assert info.value.rule == safeio.ARCHIVE
    with pytest.raises(safeio.Oversize, match="unpacks to more than"):  # read or not
        safeio.tar_files(over, what="t", total_limit=limit, wanted=frozenset())


def test_the_archive_root_may_appear_more_than_once() -> None:
    """`./` (or `.`) is the archive's own root, not an entry: given twice, it is no duplicate."""
    raw = _tarball(("./", None), ("a", b"A"), (".", None), ("./", None))
    assert safeio.tar_files(raw, what="t") == {"a": b"A"}
    assert safeio.tar_files(raw, what="t", quote_names=False) == {"a": b"A"}


# --- TreeReader: the reference is `read` ---------------------------------------------------------


def _reference(path: str, root: str, limit: int) -> bytes | None:
    try:
        return safeio.read(path, real_root=root, limit=limit)
    except safeio.Refusal:
        return None


def _planted(tmp_path: Path) -> tuple[str, dict[str, str]]:
    """A tree with every kind of entry a reader may meet, and the path of each, by name."""
    root = tmp_path / "root"
    (root / "a" / "b").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_bytes(b"secret")
    (root / "a" / "b" / "f.json").write_bytes(b'{"x": 1}')
    (root / "top.json").write_bytes(b"top")
    (root / "empty").write_bytes(b"")
    (root / "a" / "limit").write_bytes(b"x" * 16)
    (root / "a" / "over").write_bytes(b"x" * 17)
    (root / "a" / "in-link").symlink_to(root / "top.json")  # a link staying inside: read by
    (root / "a" / "out-link").symlink_to(outside / "secret")  # the reference, never by a reader
    (root / "dir-link").symlink_to(root / "a")
    (root / "out-dir").symlink_to(outside)
    os.mkfifo(root / "a" / "fifo")
    bad = os.fsdecode(b"bad-\xff")
    (root / bad).write_bytes(b"bad")
    names = {
        "file": "a/b/f.json",
        "top": "top.json",
        "empty": "empty",
        "limit": "a/limit",
        "over": "a/over",
        "in-link": "a/in-link",
        "out-link": "a/out-link",
        "through-dir-link": "dir-link/b/f.json",
        "through-out-dir": "out-dir/secret",
        "fifo": "a/fifo",
        "directory": "a/b",
        "missing": "a/none",
        "missing-dir": "none/f",
        "dot-dot": "a/../top.json",
        "dot": "a/./limit",
        "double-slash": "a//limit",
        "not-utf8": bad,
    }
    real = os.path.realpath(root)
    return real, {k: os.path.join(real, v) for k, v in names.items()}


def test_a_tree_reader_reads_what_read_reads_or_leaves_it_to_read(tmp_path: Path) -> None:
    root, paths = _planted(tmp_path)
    with safeio.TreeReader(root) as reader:
        got = {name: reader.read(path, 16) for name, path in paths.items()}
        assert reader.read(root, 16) is None  # the root itself
        assert reader.read(str(tmp_path / "outside" / "secret"), 16) is None  # not below it
    for name, path in paths.items():
        assert got[name] is None or got[name] == _reference(path, root, 16), name
    read = {name for name, data in got.items() if data is not None}
    assert read == {"file", "top", "empty", "limit"}  # every plain file below the root
    assert got["file"] == b'{"x": 1}' and got["empty"] == b""
    assert _reference(paths["in-link"], root, 16) == b"top"  # the reference's own verdict


def test_a_tree_reader_reads_nothing_once_closed_or_from_a_root_not_real(tmp_path: Path) -> None:
    root, paths = _planted(tmp_path)
    reader = safeio.TreeReader(root)
    assert reader.read(paths["file"], 16) == b'{"x": 1}'
    reader.close()
    assert reader.read(paths["file"], 16) is None
    alias = tmp_path / "alias"
    alias.symlink_to(root)  # the root named through a link: its files' real paths are not
    with safeio.TreeReader(str(alias)) as through:  # below it, so `read` would refuse them
        assert through.read(str(alias / "top.json"), 16) is None
    assert safeio.TreeReader("relative").read("relative/top.json", 16) is None


def test_a_tree_reader_keeps_each_directory_open_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, paths = _planted(tmp_path)
    opened: list[str] = []
    real_open = os.open

    def counting(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        opened.append(os.fspath(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", counting)
    with safeio.TreeReader(root) as reader:
        for _ in range(3):
            assert reader.read(paths["file"], 16) == b'{"x": 1}'
    assert opened == [root, "a", "b", "f.json", "f.json", "f.json"]


def test_a_tree_reader_refuses_a_file_grown_past_the_limit_while_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, paths = _planted(tmp_path)
    real_read = os.read

    def growing(fd: int, n: int) -> bytes:
        return real_read(fd, n) or b"y" * n  # the file grows as it is read

    monkeypatch.setattr(os, "read", growing)
    with safeio.TreeReader(root) as reader:
        assert reader.read(paths["limit"], 16) is None


def test_a_tree_reader_gives_nothing_on_a_read_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, paths = _planted(tmp_path)

    def failing(fd: int, n: int) -> bytes:
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(os, "read", failing)
    with safeio.TreeReader(root) as reader:
        assert reader.read(paths["file"], 16) is None
