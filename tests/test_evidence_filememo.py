"""The evidence files' stat memo (`store.FileMemo`): a file unchanged since an earlier build is
not read again, and nothing the memo cannot vouch for is taken from it.

- vouched: same device, inode, size, mtime and ctime as when it was read: not read again;
- a file rewritten in place with its size kept and its mtime put back (`touch -r`) is read
  again: its ctime moved, and no call sets a ctime back;
- a file changed in the last two seconds is never recorded (a second write within the
  clock's granularity could leave its stat as recorded);
- a vouched digest whose bytes changed before they were needed is refused (`load`), and the
  memo is an authenticated entry: one planted in `.cache/` is not this machine's, not used.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from generator.core.cache import Cache
from generator.core.errors import LoadError
from generator.evidence import store
from generator.evidence.store import FileMemo, find_files, load
from generator.evidence.verify_cache import FILES_STAGE, file_memo, keep_file_memo
from tests.conftest import REPO


@pytest.fixture
def evidence(tmp_path: Path) -> Path:
    if not any((REPO / "evidence").rglob("*.sigstore.json")):
        pytest.skip("the repository has no sample evidence")
    shutil.copytree(REPO / "evidence", tmp_path / "evidence")
    return tmp_path / "evidence"


@pytest.fixture
def settled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Files written by the test count as settled (the test cannot wait two seconds per file:
    its ctimes cannot be set back)."""
    monkeypatch.setattr(store, "SETTLED_NS", 0)


def _memo_after(evidence: Path, memo: FileMemo | None = None) -> FileMemo:
    memo = memo or FileMemo()
    find_files([evidence], evidence.parent, evidence, memo)
    return FileMemo(memo.after)


def _rewrite_in_place(path: Path) -> None:
    """One character of the signed payload changed: the same size, another content; then the
    mtime put back as `touch -r` does."""
    st = path.stat()
    data = path.read_bytes()
    at = data.index(b'"payload": "') + len(b'"payload": "') + 20
    swapped = b"B" if data[at : at + 1] == b"A" else b"A"
    with path.open("r+b") as fh:  # in place: the same inode
        fh.seek(at)
        fh.write(swapped)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = path.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (
        st.st_ino,
        st.st_size,
        st.st_mtime_ns,
    )


def test_an_unchanged_file_is_vouched_for_and_not_read(evidence: Path, settled: None) -> None:
    first = FileMemo()
    read = find_files([evidence], evidence.parent, evidence, first)
    assert read and all(f.data is not None for f in read) and first.vouched == 0
    again = FileMemo(first.after)
    found = find_files([evidence], evidence.parent, evidence, again)
    assert again.vouched == len(read) and all(f.data is None for f in found)
    assert [(f.path, f.sha256, f.location, f.real) for f in found] == [
        (f.path, f.sha256, f.location, f.real) for f in read
    ]
    # the bytes are read when they are needed, and are those the digest names
    assert [load(f).data for f in found] == [f.data for f in read]


def test_a_file_rewritten_with_its_size_and_mtime_kept_is_read_again(
    evidence: Path, settled: None
) -> None:
    memo = _memo_after(evidence)
    path = sorted(evidence.rglob("*.sigstore.json"))[0]
    before = path.read_bytes()
    _rewrite_in_place(path)
    found = {f.real: f for f in find_files([evidence], evidence.parent, evidence, memo)}
    changed = found[os.path.realpath(path)]
    assert changed.data == path.read_bytes() != before  # read: its ctime moved
    assert memo.vouched == len(found) - 1


def test_a_file_changed_in_the_last_two_seconds_is_not_recorded(evidence: Path) -> None:
    memo = FileMemo()  # SETTLED_NS as shipped: the copies were written just now
    find_files([evidence], evidence.parent, evidence, memo)
    assert memo.after == {}
    again = FileMemo(memo.after)
    assert all(f.data is not None for f in find_files([evidence], evidence.parent, evidence, again))


def test_bytes_changed_after_they_were_vouched_for_are_refused(
    evidence: Path, settled: None
) -> None:
    memo = _memo_after(evidence)
    found = find_files([evidence], evidence.parent, evidence, memo)
    path = Path(found[0].real)
    _rewrite_in_place(path)  # after the memo vouched, before verification reads it
    with pytest.raises(LoadError) as e:
        load(found[0])
    assert e.value.diagnostics[0].rule == "file.changed"


def test_the_memo_is_this_machines_and_one_planted_is_not_used(
    evidence: Path, tmp_path: Path, settled: None
) -> None:
    cache = Cache(tmp_path / ".cache", secret=b"k" * 32)
    memo = file_memo(cache, [evidence])
    find_files([evidence], evidence.parent, evidence, memo)
    keep_file_memo(cache, [evidence], memo)
    (key,) = cache.keys(FILES_STAGE)
    assert file_memo(cache, [evidence]).before == memo.after
    # the same entry under another machine's key: foreign, so every file is read
    other = Cache(tmp_path / ".cache", secret=b"x" * 32)
    assert other.keys(FILES_STAGE) == [key] and file_memo(other, [evidence]).before == {}


def test_a_link_is_verified_but_its_raw_file_not_published(evidence: Path, settled: None) -> None:
    """`stages.raw_files` by the real path the reader resolved: a file that is itself a link
    (even to a file inside the tree) is not published as a raw download."""
    from generator.evidence.stage import VerificationRun
    from generator.site.stages import raw_files

    files = sorted(evidence.rglob("*.sigstore.json"))
    link = files[0].with_name("0" * 64 + ".sigstore.json")
    link.symlink_to(files[0].name)  # beside it, inside the tree
    found = find_files([evidence], evidence.parent, evidence, FileMemo())
    run = VerificationRun((), ("a record",), found)  # type: ignore[arg-type]
    raw = raw_files(run, evidence)
    shown = {f.path for f in found}
    assert link.relative_to(evidence.parent).as_posix() in shown
    assert set(raw) == shown - {link.relative_to(evidence.parent).as_posix()}
