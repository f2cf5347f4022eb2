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
