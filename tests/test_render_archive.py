"""generator.render.archive: reproducible tar.gz, byte-identical across TZ, umask and cwd."""

from __future__ import annotations

import gzip
import io
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from generator.core.errors import RenderError
from generator.render import BundleFile, archive_bytes, archive_name, render_bundle
from generator.render.archive import source_date_epoch
from tests.conftest import REPO
from tests.test_render import MANIFESTS, sample_result

# A child process that renders and archives the sample bundle the same way the CLI does.
CHILD = """
import sys
sys.path.insert(0, {repo!r})
from generator.render import BundleFile, archive_bytes, archive_name, render_bundle
from tests.test_render import MANIFESTS, sample_result
r = sample_result()
tree = render_bundle(r, "helm", MANIFESTS)
name = archive_name(r, "helm")
open(name, "wb").write(archive_bytes(tree, name.removesuffix(".tar.gz")))
print(name)
"""


def _build_in(cwd: Path, tz: str, umask: str, extra_env: dict[str, str] | None = None) -> bytes:
    cwd.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "SOURCE_DATE_EPOCH"}
    env.update({"TZ": tz, **(extra_env or {})})
    code = CHILD.format(repo=str(REPO))
    proc = subprocess.run(
        ["sh", "-c", f'umask {umask} && exec "$0" -c "$1"', sys.executable, code],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    name = proc.stdout.strip()
    assert name == "sample-recipe-standard-helm.tar.gz"
    return (cwd / name).read_bytes()


def test_byte_identical_across_tz_umask_and_cwd(tmp_path: Path) -> None:
    a = _build_in(tmp_path / "one", "UTC", "022")
    b = _build_in(tmp_path / "deeper" / "two", "Asia/Kolkata", "077")
    c = _build_in(tmp_path / "three", "America/St_Johns", "002")
    assert a == b == c
    # and it is what this process builds too
    r = sample_result()
    assert a == archive_bytes(
        render_bundle(r, "helm", MANIFESTS), "sample-recipe-standard-helm", mtime=0
    )


def test_source_date_epoch_sets_mtime(tmp_path: Path) -> None:
    plain = _build_in(tmp_path / "a", "UTC", "022")
    dated = _build_in(tmp_path / "b", "UTC", "022", {"SOURCE_DATE_EPOCH": "1700000000"})
    assert plain != dated
    with tarfile.open(fileobj=io.BytesIO(dated), mode="r:gz") as tar:
        assert {m.mtime for m in tar.getmembers()} == {1700000000}
    with tarfile.open(fileobj=io.BytesIO(plain), mode="r:gz") as tar:
        assert {m.mtime for m in tar.getmembers()} == {0}


def test_entries_are_normalized() -> None:
    r = sample_result()
    tree = render_bundle(r, "helm", MANIFESTS)
    data = archive_bytes(tree, "top", mtime=0)
    assert data[:2] == b"\x1f\x8b"
    assert data[4:8] == b"\x00\x00\x00\x00"  # gzip header mtime 0
    assert gzip.decompress(data)  # a valid gzip stream
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        members = tar.getmembers()
        names = [m.name for m in members]
        assert names == sorted(names)
        files = {m.name.removeprefix("top/"): m for m in members if m.isfile()}
        assert set(files) == set(tree)
        for m in members:
            assert m.uid == 0 and m.gid == 0 and m.uname == "" and m.gname == ""
            assert not m.name.startswith("/") and ".." not in m.name.split("/")
            assert m.name == "top" or m.name.startswith("top/")
            if m.isdir():
                assert m.mode == 0o755
        for rel, m in files.items():
            expected = 0o755 if rel.endswith(".sh") else 0o644
            assert m.mode == expected, rel
            f = tar.extractfile(m)
            assert f is not None and f.read() == tree[rel].data


def test_archive_name() -> None:
    r = sample_result()
    assert archive_name(r, "flux") == "sample-recipe-standard-flux.tar.gz"


def test_bad_inputs_are_rejected(monkeypatch: pytest.MonkeyPatch) -> None:
    tree = render_bundle(sample_result(), "helm", MANIFESTS)
    with pytest.raises(RenderError):
        archive_bytes(tree, "a/b")
    with pytest.raises(RenderError):
        archive_bytes(tree, "..")
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "yesterday")
    with pytest.raises(RenderError, match="SOURCE_DATE_EPOCH"):
        source_date_epoch()


_segment = st.from_regex(r"[a-z0-9][a-z0-9._-]{0,8}", fullmatch=True).filter(
    lambda s: s not in (".", "..")
)
_trees = st.dictionaries(
    st.lists(_segment, min_size=1, max_size=3).map("/".join),
    st.tuples(st.binary(max_size=64), st.sampled_from([0o644, 0o755, 0o600, 0o700])),
    min_size=1,
    max_size=8,
).filter(
    # no path may be both a file and a directory
    lambda t: not any(a != b and b.startswith(a + "/") for a in t for b in t)
)


@settings(max_examples=40, deadline=None)
@given(_trees)
def test_archive_round_trips(raw: dict[str, tuple[bytes, int]]) -> None:
    tree = {p: BundleFile(data, mode) for p, (data, mode) in raw.items()}
    blob = archive_bytes(tree, "top", mtime=0)
    assert blob == archive_bytes(dict(reversed(list(tree.items()))), "top", mtime=0)
    with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tar:
        got = {}
        for m in tar.getmembers():
            if m.isfile():
                f = tar.extractfile(m)
                assert f is not None
                got[m.name.removeprefix("top/")] = (f.read(), m.mode)
    assert got == {p: (data, 0o755 if mode & 0o111 else 0o644) for p, (data, mode) in raw.items()}
