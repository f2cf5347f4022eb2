"""A signed run's raw file and its signed statement are published from one read of the file.

Before, each of the two `Derived` files read the evidence file again and hashed it
(`stages.read_raw`): two reads of every signed run in a cold build (40,000 at 1,000 x 20,000).
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from generator.core.errors import LoadError
from generator.evidence.view import RawFile
from generator.site import build, stages
from generator.site.audit import signed_statement, statement_file
from generator.site.publish import Derived


def _bundle(tmp: Path, name: str) -> RawFile:
    statement = {"_type": "https://in-toto.io/Statement/v1", "subject": [], "name": name}
    payload = base64.b64encode(json.dumps(statement).encode()).decode()
    data = json.dumps({"dsseEnvelope": {"payload": payload, "signatures": []}}).encode()
    path = tmp / f"{name}.sigstore.json"
    path.write_bytes(data)
    sha = hashlib.sha256(data).hexdigest()
    return RawFile(str(path), str(tmp), sha, len(data), signed_statement(data) is not None)


def _run(raw: RawFile, state: str = "counted") -> SimpleNamespace:
    return SimpleNamespace(raw=raw, raw_file=f"evidence/raw/{Path(raw.path).name}", state=state)


def _made(items: list[tuple[str, bytes | Derived]]) -> dict[str, bytes | None]:
    return {rel: d.make() if isinstance(d, Derived) else d for rel, d in items}


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    reads: list[str] = []
    real = stages.read_raw

    def read_raw(raw: RawFile) -> bytes:
        reads.append(raw.path)
        return real(raw)

    monkeypatch.setattr(stages, "read_raw", read_raw)
    return reads


def test_a_signed_run_is_read_once_for_both_files(tmp_path: Path, counted: list[str]) -> None:
    runs = [_run(_bundle(tmp_path, f"r{i}")) for i in range(3)]
    made = _made(list(build._runs(runs, "code")))
    assert len(made) == 6
    assert sorted(counted) == sorted(r.raw.path for r in runs)  # one read each, not two
    for r in runs:
        raw = made[r.raw_file]
        assert raw == Path(r.raw.path).read_bytes()
        assert made[statement_file(r.raw_file)] == signed_statement(raw)


def test_statement_alone_reads_and_a_repeated_make_reads_again(
    tmp_path: Path, counted: list[str]
) -> None:
    """A raw file reused from the last build (not made) leaves the statement to read it; a
    third make (never asked by a publisher) reads again rather than give stale bytes."""
    run = _run(_bundle(tmp_path, "one"))
    items = dict(build._runs([run], "code"))
    statement = items[statement_file(run.raw_file)]
    assert isinstance(statement, Derived)
    assert statement.make() == signed_statement(Path(run.raw.path).read_bytes())
    assert len(counted) == 1
    raw = items[run.raw_file]
    assert isinstance(raw, Derived)
    raw.make()
    raw.make()
    assert len(counted) == 2


def test_a_rejected_run_publishes_its_raw_file_alone(tmp_path: Path, counted: list[str]) -> None:
    run = _run(_bundle(tmp_path, "bad"), state="rejected")
    made = _made(list(build._runs([run], "code")))
    assert list(made) == [run.raw_file]
    assert counted == [run.raw.path]


def test_a_file_changed_after_verification_is_refused(tmp_path: Path, counted: list[str]) -> None:
    run = _run(_bundle(tmp_path, "moved"))
    Path(run.raw.path).write_bytes(b"{}")
    items = dict(build._runs([run], "code"))
    raw = items[run.raw_file]
    assert isinstance(raw, Derived)
    with pytest.raises(LoadError):
        raw.make()


def _made_lazily(items: Iterator[tuple[str, bytes | Derived]]) -> dict[str, bytes | None]:
    """Each file made as it is given, as a publisher makes it (its block's reader open)."""
    return {rel: d.make() if isinstance(d, Derived) else d for rel, d in items}


def test_files_made_as_given_are_read_below_the_root_without_the_reference(
    tmp_path: Path, counted: list[str]
) -> None:
    runs = [_run(_bundle(tmp_path, f"r{i}")) for i in range(3)]
    made = _made_lazily(build._runs(runs, "code"))
    assert counted == []  # each read by the block's `safeio.TreeReader`
    for r in runs:
        raw = made[r.raw_file]
        assert raw == Path(r.raw.path).read_bytes()
        assert made[statement_file(r.raw_file)] == signed_statement(raw)


def test_a_file_changed_or_made_a_link_is_judged_by_the_reference(
    tmp_path: Path, counted: list[str]
) -> None:
    changed, linked = _run(_bundle(tmp_path, "changed")), _run(_bundle(tmp_path, "linked"))
    Path(changed.raw.path).write_bytes(b"{}")
    with pytest.raises(LoadError, match="changed"):
        _made_lazily(build._runs([changed], "code"))
    assert counted == [changed.raw.path]
    target = tmp_path / "target.json"
    Path(linked.raw.path).rename(target)
    Path(linked.raw.path).symlink_to(target)  # the same bytes, now through a link
    made = _made_lazily(build._runs([linked], "code"))
    assert counted == [changed.raw.path, linked.raw.path]  # left to the reference, which
    assert made[linked.raw_file] == target.read_bytes()  # reads a link staying inside
