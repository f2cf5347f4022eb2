"""The atomic writer (`generator/core/atomic.py`), pinned for `make mutation` (issue 32).

A file is replaced by a rename of a complete temporary file beside it: parents are created, the
mode is applied before the rename (without one, the file gets 0666 less the umask, as any new
file), and on any failure the temporary file is removed and the error raised, the old file
untouched.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from generator.core.atomic import write_atomic


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
