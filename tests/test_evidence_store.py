"""Evidence storage paths and reading files."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from generator.errors import LoadError
from generator.evidence.store import discover, evidence_path, path_problem, read_files, source_id


def test_source_is_32_hex_of_issuer_newline_identity() -> None:
    expected = hashlib.sha256(b"https://issuer.example\nme@example.com").hexdigest()[:32]
    assert source_id("https://issuer.example", "me@example.com") == expected
    # the newline separates the fields: moving it changes the source
    assert source_id("https://issuer.example\nme", "@example.com") != expected


def test_evidence_path_and_its_check() -> None:
    statement = b'{"x":1}'
    path = evidence_path("r1", "https://i.example", "me@example.com", statement)
    digest = hashlib.sha256(statement).hexdigest()
    assert (
        path
        == f"evidence/r1/{source_id('https://i.example', 'me@example.com')}/{digest}.sigstore.json"
    )
    assert path_problem(path, path) is None
    assert path_problem("/abs/checkout/" + path, path) is None
    assert path_problem("evidence/r2/" + path.split("/", 2)[2], path) == (
        f"file is at evidence/r2/{path.split('/', 2)[2]} but its content belongs at {path}"
    )


def test_discover_and_read(tmp_path: Path) -> None:
    (tmp_path / "evidence" / "r" / "s").mkdir(parents=True)
    a = tmp_path / "evidence" / "r" / "s" / "a.sigstore.json"
    a.write_bytes(b"A")
    (tmp_path / "evidence" / "r" / "s" / "notes.txt").write_text("not evidence")
    b = tmp_path / "b.json"
    b.write_bytes(b"B")
    assert discover([tmp_path / "evidence", b]) == tuple(sorted([a, b]))
    files = read_files([tmp_path / "evidence", b], base=tmp_path)
    assert [(f.path, f.data) for f in files] == [
        ("b.json", b"B"),
        ("evidence/r/s/a.sigstore.json", b"A"),
    ]


def test_unreadable_files_are_reported(tmp_path: Path) -> None:
    with pytest.raises(LoadError) as info:
        read_files([tmp_path / "missing.sigstore.json"], base=tmp_path)
    assert info.value.diagnostics[0].format() == (
        "missing.sigstore.json: $: cannot read: No such file or directory [io]"
    )
