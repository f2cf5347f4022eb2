"""The verify stage at the grain of a directory (`verify_cache.verify_tree`): a directory of the
evidence tree whose bundles' stat rows are those of an earlier build is served whole from its
entry (`DIRSTAT_STAGE`); anything its rows cannot vouch for is found file by file.

The contract (the stat memo's, `store.FileMemo`, for a whole directory): a row is the path
below the root, the mode, device, inode, size, mtime and ctime of each bundle, from the walk.

- whatever the sequence of changes, the files (but their bytes), records and keys are those of
  the file-by-file path (`find_files` + `verify_cached`, the reference) on a fresh cache;
- a file rewritten in place with its size kept and its mtime put back is caught (its ctime
  moved); so is a file replaced by another of the same size and mtime (another inode, or its
  ctime), one added, removed or renamed;
- a directory holding a link, or anything but regular files, is never served from an entry;
  nor is one with a file modified in the last `SETTLED_NS` (none is even stored);
- a tampered or planted entry is refused (HMAC), and the stage's answer is the reference's;
- problems (a FIFO, a link leaving the tree) are the reference's LoadError;
- the build key's walk is handed to the verify stage once (`Cache.hold_walk`/`take_walk`).
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from generator.bench.synth import SynthOptions, synthesize
from generator.core import safeio
from generator.core.cache import MAGIC, Cache
from generator.core.errors import LoadError
from generator.evidence import store
from generator.evidence.model import Evidence, FoundFile, SignerPolicy, TrustRoot
from generator.evidence.policy import read_policy
from generator.evidence.store import TREE_SUFFIXES, find_files
from generator.evidence.trustroot import load_trust_root
from generator.evidence.verify_cache import (
    DIRMEMO_STAGE,
    DIRS_STAGE,
    DIRSTAT_STAGE,
    FILES_STAGE,
    HEADS_STAGE,
    VERIFY_STAGE,
    directory,
    verify_cached,
    verify_tree,
)

SECRET = b"t" * 32
Facts = tuple[str, str | None, str, str, str, int]


@pytest.fixture(scope="module")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("synth")
    synthesize(SynthOptions(3, 12, seed=11, jobs=1), out)
    return out


@pytest.fixture
def tree(synth: Path, tmp_path: Path) -> Path:
    shutil.copytree(synth, tmp_path / "repo")
    return tmp_path / "repo"


@pytest.fixture
def settled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Files the test wrote count as settled (it cannot wait two seconds per change)."""
    monkeypatch.setattr(store, "SETTLED_NS", 0)


def _inputs(repo: Path) -> tuple[TrustRoot, SignerPolicy]:
    root = load_trust_root(str(repo / "trust" / "synth-root.json"))
    return root, read_policy(repo / "catalog" / "signers.yaml", "signers.yaml")


def _facts(files: tuple[FoundFile, ...]) -> list[Facts]:
    return [(f.path, f.location, f.real, f.root, f.sha256, f.size) for f in files]


def _tree_run(
    repo: Path, cache_dir: Path, secret: bytes = SECRET
) -> tuple[list[Facts], tuple[Evidence, ...], tuple[str, ...], Cache]:
    root, policy = _inputs(repo)
    cache = Cache(cache_dir, secret=secret)
    evidence = repo / "evidence"
    files, records, keys = verify_tree(
        safeio.walk(evidence, suffixes=TREE_SUFFIXES),
        root=evidence,
        base=repo,
        trust_root=root,
        policy=policy,
        current_digests={},
        cache=cache,
        jobs=1,
        sweep=True,
    )
    cache.finish()
    return _facts(files), records, keys, cache


def _reference(
    repo: Path, cache_dir: Path
) -> tuple[list[Facts], tuple[Evidence, ...], tuple[str, ...]]:
    """File by file, on a cache of its own (so nothing the tree path stored is used)."""
    root, policy = _inputs(repo)
    evidence = repo / "evidence"
    files = find_files([evidence], base=repo, root=evidence)
    cache = Cache(cache_dir, secret=SECRET)
    records, keys = verify_cached(
        files, trust_root=root, policy=policy, current_digests={}, cache=cache, jobs=1
    )
    return _facts(files), records, keys


def _same_as_reference(repo: Path, tmp_path: Path) -> tuple[Cache, tuple[Evidence, ...]]:
    facts, records, keys, cache = _tree_run(repo, tmp_path / "c")
    assert (facts, records, keys) == _reference(repo, tmp_path / "ref")
    return cache, records


def _dirs(repo: Path) -> int:
    return len({directory(f) for f in find_files([repo / "evidence"], repo, repo / "evidence")})


def _bundle(repo: Path, n: int) -> Path:
    return sorted((repo / "evidence").rglob("*.sigstore.json"))[n]


def _rewrite_keeping_size_and_mtime(path: Path) -> None:
    st = path.stat()
    data = bytearray(path.read_bytes())
    at = data.index(b'"payload": "') + len(b'"payload": "') + 20
    data[at] = ord("B") if data[at] == ord("A") else ord("A")
    time.sleep(0.02)  # past the file system clock's granularity (its ctime must move)
    with path.open("r+b") as fh:  # in place: the same inode
        fh.write(bytes(data))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    after = path.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (
        st.st_ino,
        st.st_size,
        st.st_mtime_ns,
    )
    assert after.st_ctime_ns != st.st_ctime_ns


def test_a_rebuild_serves_every_directory_from_its_entry(
    tree: Path, tmp_path: Path, settled: None
) -> None:
    cache, _ = _same_as_reference(tree, tmp_path)
    dirs = _dirs(tree)
    assert cache.stats.misses[DIRSTAT_STAGE] == dirs
    again, cache = _same_as_reference(tree, tmp_path)[0], None
    # the records' heads every build, the records themselves when read (here: compared)
    assert again.stats.hits == {DIRSTAT_STAGE: dirs, HEADS_STAGE: dirs, DIRS_STAGE: dirs}
    assert again.stats.misses == {}


def test_a_file_rewritten_with_its_size_and_mtime_kept_is_caught(
    tree: Path, tmp_path: Path, settled: None
) -> None:
    _same_as_reference(tree, tmp_path)
    _rewrite_keeping_size_and_mtime(_bundle(tree, 5))
    cache, records = _same_as_reference(tree, tmp_path)
    assert cache.stats.misses.get(DIRSTAT_STAGE) == 1
    assert cache.stats.misses.get(VERIFY_STAGE) == 1  # the one file verified again
    assert sum(1 for r in records if r.path.endswith(_bundle(tree, 5).name)) == 1


def test_a_directory_found_again_reads_its_own_stat_memo_alone(
    tree: Path, tmp_path: Path, settled: None
) -> None:
    """One entry of the stat memo per directory (`DIRMEMO_STAGE`), none for the tree: a
    directory found again reads and stores its own, and its unchanged files are vouched for,
    not read."""
    first = _same_as_reference(tree, tmp_path)[0]
    assert len(first.keys(DIRMEMO_STAGE)) == _dirs(tree) and first.keys(FILES_STAGE) == []
    changed = _bundle(tree, 5)
    _rewrite_keeping_size_and_mtime(changed)
    root, policy = _inputs(tree)
    evidence = tree / "evidence"
    cache = Cache(tmp_path / "c", secret=SECRET)
    files, records, _ = verify_tree(
        safeio.walk(evidence, suffixes=TREE_SUFFIXES),
        root=evidence,
        base=tree,
        trust_root=root,
        policy=policy,
        current_digests={},
        cache=cache,
        jobs=1,
    )
    assert cache.stats.hits[DIRMEMO_STAGE] == 1 and DIRMEMO_STAGE not in cache.stats.misses
    name = directory(next(f for f in files if f.path.endswith(changed.name)))
    read = [f.path for f in files if f.data is not None]
    assert read == [f.path for f in files if f.path.endswith(changed.name)]
    assert sum(1 for f in files if directory(f) == name) > 1  # the others: vouched for
    assert records == _reference(tree, tmp_path / "ref")[1]


def test_a_file_replaced_by_another_of_the_same_size_and_mtime_is_caught(
    tree: Path, tmp_path: Path, settled: None
) -> None:
    _same_as_reference(tree, tmp_path)
    target, other = _bundle(tree, 2), _bundle(tree, 3)
    st = target.stat()
    data = bytearray(target.read_bytes())
    at = data.index(b'"payload": "') + len(b'"payload": "') + 20
    data[at] = ord("B") if data[at] == ord("A") else ord("A")
    time.sleep(0.02)
    new = target.with_name("new.tmp")
    new.write_bytes(bytes(data))
    os.utime(new, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(new, target)  # another inode under the same name
    assert (target.stat().st_size, target.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    cache, _ = _same_as_reference(tree, tmp_path)
    assert cache.stats.misses.get(DIRSTAT_STAGE) == 1
    # and a bundle moved over another (same directory or not): its old name is gone
    os.replace(other, target)
    _same_as_reference(tree, tmp_path)


@pytest.mark.parametrize("change", ["remove", "add", "rename", "restore"])
def test_files_added_removed_or_renamed_are_caught(
    tree: Path, tmp_path: Path, settled: None, change: str
) -> None:
    _same_as_reference(tree, tmp_path)
    path = _bundle(tree, 7)
    data = path.read_bytes()
    if change == "remove":
        path.unlink()
    elif change == "add":  # a copy at a wrong place in another directory: path-mismatch
        (_bundle(tree, 0).parent / "x.sigstore.json").write_bytes(data)
    elif change == "rename":
        path.rename(path.with_name("0" + path.name))
    else:  # removed, a build, then the same bytes back (a new inode and ctime)
        path.unlink()
        _same_as_reference(tree, tmp_path)
        path.write_bytes(data)
    cache, _ = _same_as_reference(tree, tmp_path)
    assert cache.stats.misses.get(DIRSTAT_STAGE, 0) <= 1


def test_a_directory_with_a_link_is_found_file_by_file_every_time(
    tree: Path, tmp_path: Path, settled: None
) -> None:
    _same_as_reference(tree, tmp_path)
    path = _bundle(tree, 4)
    kept = tree / "elsewhere.json"
    kept.write_bytes(path.read_bytes())
    kept.rename(tree / "evidence" / "kept.json")
    path.unlink()
    path.symlink_to(tree / "evidence" / "kept.json")  # inside the root: verified, as before
    stored = _same_as_reference(tree, tmp_path)[0]
    dirs = _dirs(tree)
    assert stored.stats.hits.get(DIRSTAT_STAGE) == dirs - 1  # the others, whole
    # the link's target rewritten (the link's own stat unchanged): caught, never served
    _rewrite_keeping_size_and_mtime(tree / "evidence" / "kept.json")
    cache, _ = _same_as_reference(tree, tmp_path)
    assert cache.stats.hits.get(DIRSTAT_STAGE) == dirs - 1
    assert len(cache.keys(DIRSTAT_STAGE)) == dirs - 1  # no entry for the directory with a link


def test_nothing_modified_in_the_last_two_seconds_is_stored(tree: Path, tmp_path: Path) -> None:
    for p in (tree / "evidence").rglob("*.sigstore.json"):
        os.utime(p)  # now: unsettled (and its ctime too)
    cache, _ = _same_as_reference(tree, tmp_path)
    assert cache.keys(DIRSTAT_STAGE) == []
    again, _ = _same_as_reference(tree, tmp_path)
    assert DIRSTAT_STAGE not in again.stats.hits


@pytest.mark.parametrize("how", ["tampered", "planted", "foreign"])
def test_a_bad_entry_is_refused(tree: Path, tmp_path: Path, settled: None, how: str) -> None:
    _same_as_reference(tree, tmp_path)
    cache = Cache(tmp_path / "c", secret=SECRET)
    keys = cache.keys(DIRSTAT_STAGE)
    if how == "tampered":
        raw = cache.raw(DIRSTAT_STAGE, keys[0]) or b""
        cache.write_raw(DIRSTAT_STAGE, keys[0], raw[:-1] + bytes([raw[-1] ^ 0xFF]))
    elif how == "planted":  # another directory's files claimed for each, under another key
        forger = Cache(tmp_path / "c", secret=b"f" * 32)
        for key in keys:
            other = next(k for k in keys if k != key)
            raw = forger.raw(DIRSTAT_STAGE, other) or b""
            payload = raw[raw.index(b"\n", len(MAGIC)) + 1 :]
            forger.put(DIRSTAT_STAGE, key, "", payload, authenticated=True)
    facts, records, tree_keys, used = _tree_run(
        tree, tmp_path / "c", secret=b"o" * 32 if how == "foreign" else SECRET
    )
    assert (facts, records, tree_keys) == _reference(tree, tmp_path / "ref")
    assert used.stats.rejected.get(DIRSTAT_STAGE) == (1 if how == "tampered" else len(keys))


def test_problems_are_the_references(tree: Path, tmp_path: Path, settled: None) -> None:
    _same_as_reference(tree, tmp_path)
    outside = tmp_path / "outside.sigstore.json"
    outside.write_bytes(_bundle(tree, 1).read_bytes())
    _bundle(tree, 1).unlink()
    _bundle(tree, 1).parent.joinpath("escape.sigstore.json").symlink_to(outside)
    os.mkfifo(_bundle(tree, 9).parent / "pipe.sigstore.json")
    with pytest.raises(LoadError) as reference:
        _reference(tree, tmp_path / "ref")
    with pytest.raises(LoadError) as got:
        _tree_run(tree, tmp_path / "c")
    assert got.value.diagnostics == reference.value.diagnostics
    assert len(got.value.diagnostics) == 2


def test_the_build_keys_walk_is_handed_over_once(tmp_path: Path) -> None:
    (tmp_path / "e").mkdir()
    cache = Cache(tmp_path / "c", secret=SECRET)
    walked = safeio.walk(tmp_path / "e", suffixes=TREE_SUFFIXES)
    cache.hold_walk(walked, TREE_SUFFIXES)
    assert cache.take_walk(tmp_path / "e", (".yaml",)) is None  # another walk
    assert cache.take_walk(str(tmp_path / "e"), TREE_SUFFIXES) is walked
    assert cache.take_walk(tmp_path / "e", TREE_SUFFIXES) is None  # once
    cache.hold_walk(walked, TREE_SUFFIXES)
    cache.finish()  # a walk is one build's
    assert cache.take_walk(tmp_path / "e", TREE_SUFFIXES) is None


def _reads_counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The real paths of the files read from now on (`safeio.read_checked`: the build key's
    read and `find_files`' alike)."""
    read: list[str] = []
    real = safeio.read_checked

    def counting(path: str, shown: Path | str, *, limit: int = safeio.YAML_BYTES) -> bytes:
        read.append(path)
        return real(path, shown, limit=limit)

    monkeypatch.setattr(safeio, "read_checked", counting)
    return read


def _key_then_verify(
    repo: Path, cache: Cache
) -> tuple[list[Facts], tuple[Evidence, ...], tuple[str, ...]]:
    """The build's order: the build key hashes the walk it holds for the verify stage
    (`site.incremental.build_key`), which then takes that walk and finds its files."""
    from generator.core.cache import stat_tree_digest

    root, policy = _inputs(repo)
    evidence = repo / "evidence"
    walked = safeio.walk(evidence, suffixes=TREE_SUFFIXES)
    cache.hold_walk(walked, TREE_SUFFIXES)
    stat_tree_digest(cache, evidence, TREE_SUFFIXES, tree=walked)
    taken = cache.take_walk(evidence, TREE_SUFFIXES)
    assert taken is walked
    files, records, keys = verify_tree(
        taken, root=evidence, base=repo, trust_root=root, policy=policy,
        current_digests={}, cache=cache, jobs=1, sweep=True,
    )  # fmt: skip
    return _facts(files), records, keys


def test_a_cold_build_reads_each_bundle_once(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The build key reads every file of the walk it holds; the verify stage takes those bytes
    (`Cache.keep_read`/`take_read`) instead of reading each bundle again, and lets go of what
    it did not take."""
    bundles = sorted((tree / "evidence").rglob("*.sigstore.json"))
    expected = _reference(tree, tmp_path / "ref")
    cache = Cache(tmp_path / "c", secret=SECRET)
    read = _reads_counted(monkeypatch)
    assert _key_then_verify(tree, cache) == expected
    twice = {p for p in read if read.count(p) > 1}
    assert len(bundles) > 10 and not twice, twice
    assert {safeio.real_path(b) for b in bundles} <= set(read)
    assert cache._reads == {} and cache._read_bytes == 0  # nothing held on


def test_a_bundle_changed_after_the_build_keys_read_is_read_again(
    tree: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bytes kept under a stat stamp are taken only while the file still has that stamp: one
    rewritten after the build key read it (its ctime moves) is read again, never verified as
    the bytes the key hashed."""
    cache = Cache(tmp_path / "c", secret=SECRET)
    changed = safeio.real_path(_bundle(tree, 3))
    stamps: dict[str, list[int]] = {}
    keep = Cache.keep_read

    def keep_then_touch(self: Cache, real: str, stamp: list[int], data: bytes, sha: str) -> None:
        keep(self, real, stamp, data, sha)
        if real == changed:  # the stat the verify stage sees is another
            stamps[real] = [*stamp[:3], stamp[3] + 1]

    monkeypatch.setattr(Cache, "keep_read", keep_then_touch)
    take = Cache.take_read
    monkeypatch.setattr(
        Cache, "take_read", lambda self, real, stamp: take(self, real, stamps.get(real, stamp))
    )
    expected = _reference(tree, tmp_path / "ref")
    read = _reads_counted(monkeypatch)
    assert _key_then_verify(tree, cache) == expected
    assert read.count(changed) == 2 and all(read.count(p) == 1 for p in read if p != changed)


def test_no_more_than_the_bound_is_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from generator.core import cache as cache_module

    monkeypatch.setattr(cache_module, "READS_HELD", 10)
    cache = Cache(tmp_path / "c", secret=SECRET)
    cache.keep_read("/a", [1, 2, 3, 4], b"123456", "s1")
    cache.keep_read("/b", [1, 2, 3, 4], b"123456", "s2")  # over the bound: not kept
    assert cache.take_read("/b", [1, 2, 3, 4]) is None
    assert cache.take_read("/a", [1, 2, 3, 5]) is None  # another stamp: dropped, not given
    assert cache.take_read("/a", [1, 2, 3, 4]) is None  # handed out (or dropped) once
    cache.keep_read("/a", [1, 2, 3, 4], b"123456", "s1")
    cache.keep_read("/a", [1, 2, 3, 4], b"123456", "s1")  # one path kept twice counts once
    assert cache._read_bytes == 6
    assert cache.take_read("/a", [1, 2, 3, 4]) == (b"123456", "s1")
    assert cache._read_bytes == 0


def test_the_stat_memos_of_directories_found_together_are_written_together(
    tree: Path, tmp_path: Path, settled: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cold build finds every directory at once: their stat memos (`DIRMEMO_STAGE`) are read
    in one batch and stored in one transaction, not one query and one commit a directory (a
    commit is a journal written and synced: 1,000 of them at 1,000 x 20,000)."""
    batches: list[int] = []
    real = Cache._write

    def counting(self: Cache, stage: str, items: list[tuple[str, bytes]]) -> None:
        if stage == DIRMEMO_STAGE:
            batches.append(len(items))
        real(self, stage, items)

    monkeypatch.setattr(Cache, "_write", counting)
    cache, _ = _same_as_reference(tree, tmp_path)
    assert _dirs(tree) > 1 and batches == [_dirs(tree)]
    assert len(cache.keys(DIRMEMO_STAGE)) == _dirs(tree)
