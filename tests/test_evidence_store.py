"""Evidence storage paths and reading files."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from generator.core.errors import LoadError
from generator.core.yamlio import MAX_FILE_BYTES
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
    # exact: a copy nested anywhere else is misplaced (it would count one run twice)
    assert path_problem("evidence/mirror/" + path, path) is not None
    assert path_problem("evidence/r2/" + path.split("/", 2)[2], path) == (
        f"file is at evidence/r2/{path.split('/', 2)[2]} but its content belongs at {path}"
    )


@pytest.mark.parametrize("name", ["../outside/pwned", "a/b", "..", ".", "", "A", "x" * 64, "a_b"])
def test_evidence_path_refuses_names_that_are_not_safe_segments(name: str) -> None:
    with pytest.raises(ValueError, match="not a safe path segment"):
        evidence_path(name, "https://i.example", "me@example.com", b"{}")


def test_discover_and_read(tmp_path: Path) -> None:
    (tmp_path / "evidence" / "r" / "s").mkdir(parents=True)
    a = tmp_path / "evidence" / "r" / "s" / "a.sigstore.json"
    a.write_bytes(b"A")
    (tmp_path / "evidence" / "r" / "s" / "notes.txt").write_text("not evidence")
    b = tmp_path / "b.json"
    b.write_bytes(b"B")
    assert discover([tmp_path / "evidence", b]) == tuple(sorted([a, b]))
    files = read_files([tmp_path / "evidence", b], base=tmp_path)
    # a file named explicitly outside any `evidence` folder: judged below the folder three
    # levels up (the depth of evidence/<recipe>/<source>/<file>)
    assert [(f.path, f.data, f.location) for f in files] == [
        ("b.json", b"B", f"evidence/{b.relative_to(b.parents[2]).as_posix()}"),
        ("evidence/r/s/a.sigstore.json", b"A", "evidence/r/s/a.sigstore.json"),
    ]


def _tree(tmp_path: Path) -> Path:
    """repo/evidence/r/s/a.sigstore.json and a nested copy repo/evidence/m/evidence/r/s/a..."""
    repo = tmp_path / "repo"
    for rel in ("evidence/r/s/a.sigstore.json", "evidence/m/evidence/r/s/a.sigstore.json"):
        (repo / rel).parent.mkdir(parents=True)
        (repo / rel).write_bytes(b"A")
    return repo


@pytest.mark.parametrize(
    "given",
    ["evidence", ".", "evidence/r", "evidence/r/s", "evidence/m"],
)
def test_locations_are_relative_to_the_evidence_root_given(tmp_path: Path, given: str) -> None:
    """Whatever part of the tree is searched, a file's location is its path below the one
    evidence root: the nested copy is never at `evidence/r/s/...`."""
    repo = _tree(tmp_path)
    files = read_files([repo / given], base=repo)
    locations = {f.path: f.location for f in files}
    want = {
        "evidence/r/s/a.sigstore.json": "evidence/r/s/a.sigstore.json",
        "evidence/m/evidence/r/s/a.sigstore.json": "evidence/m/evidence/r/s/a.sigstore.json",
    }
    assert locations == {k: v for k, v in want.items() if k.startswith(f"{given}/") or given == "."}


def test_a_file_named_explicitly_is_judged_below_the_nearest_evidence_folder(
    tmp_path: Path,
) -> None:
    repo = _tree(tmp_path)
    (f,) = read_files([repo / "evidence/r/s/a.sigstore.json"], base=repo)
    assert f.location == "evidence/r/s/a.sigstore.json"
    (f,) = read_files([repo / "evidence/m/evidence/r/s/a.sigstore.json"], base=repo)
    assert f.location == "evidence/r/s/a.sigstore.json"  # named explicitly: the user's choice


def _problem(paths: list[Path], base: Path) -> str:
    with pytest.raises(LoadError) as info:
        read_files(paths, base=base)
    (d,) = info.value.diagnostics
    return d.format()


def test_an_oversized_file_is_refused_by_its_size_without_reading_it(tmp_path: Path) -> None:
    big = tmp_path / "evidence" / "big.sigstore.json"
    big.parent.mkdir()
    with big.open("wb") as fh:
        fh.truncate(4 * 1024**3)  # sparse: reading it would need 4 GiB
    assert _problem([tmp_path / "evidence"], tmp_path) == (
        f"evidence/big.sigstore.json: $: file is {4 * 1024**3} bytes; the limit is "
        f"{MAX_FILE_BYTES} bytes [file.too-large]"
    )
    big.write_bytes(b"x" * MAX_FILE_BYTES)  # at the limit: read
    assert read_files([big], base=tmp_path)[0].data == b"x" * MAX_FILE_BYTES


@pytest.mark.parametrize("explicit", [False, True])
def test_a_pipe_is_refused_by_name_and_never_opened(tmp_path: Path, explicit: bool) -> None:
    pipe = tmp_path / "evidence" / "p.sigstore.json"
    pipe.parent.mkdir()
    os.mkfifo(pipe)
    assert discover([tmp_path / "evidence"]) == (pipe,)  # listed, not skipped
    given = pipe if explicit else tmp_path / "evidence"
    assert _problem([given], tmp_path) == (
        "evidence/p.sigstore.json: $: not a regular file [file.not-regular]"
    )


def test_a_link_leaving_the_evidence_directory_is_refused_unread(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("secret")
    link = tmp_path / "repo" / "evidence" / "r" / "s" / "x.sigstore.json"
    link.parent.mkdir(parents=True)
    link.symlink_to(secret)
    inside = link.parent / "y.sigstore.json"
    inside.symlink_to(link.parent.parent.parent / "r" / "s" / "z.json")
    (link.parent / "z.json").write_text("{}")
    repo = tmp_path / "repo"
    for given in (repo / "evidence", link):
        assert _problem([given], repo) == (
            "evidence/r/s/x.sigstore.json: $: symbolic link points outside the evidence "
            "directory [file.symlink-escape]"
        )
    # a link that stays inside is read
    assert read_files([inside], base=repo)[0].data == b"{}"


def test_unreadable_files_are_reported(tmp_path: Path) -> None:
    with pytest.raises(LoadError) as info:
        read_files([tmp_path / "missing.sigstore.json"], base=tmp_path)
    assert info.value.diagnostics[0].format() == (
        "missing.sigstore.json: $: cannot read: No such file or directory [io]"
    )
