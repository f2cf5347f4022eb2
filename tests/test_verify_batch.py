"""The verify stage's cache (`evidence/verify_cache.py`): one entry per directory of the
evidence tree, and, for a directory whose files changed, the entry it had last.

- a rebuild reads one entry per directory and verifies nothing;
- a file changed, added or removed in one directory re-verifies that file only (counted): the
  directory's other records come from the entry it had last (`LAST_STAGE` names it), also
  across swept builds; no entry per file is stored;
- the records are those of the reference (`_DirReader.make_reference`: an entry per file)
  whatever the sequence of changes;
- a tampered or planted directory entry is refused (its HMAC is not this machine's) and the
  records are the ones verification gives;
- whatever the sequence of changes, the records and keys are those of verifying every file
  afresh, and the keys handed downstream are the per-file keys, whichever grain served them;
- with `sweep`, a directory entry no longer used is deleted when the build finishes.
"""

from __future__ import annotations

import os
import shutil
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from generator.bench.synth import SynthOptions, synthesize
from generator.core.cache import MAGIC, Cache
from generator.evidence.model import (
    Evidence,
    FoundFile,
    RejectedEvidence,
    SignerPolicy,
    TrustRoot,
)
from generator.evidence.policy import read_policy
from generator.evidence.store import find_files, load
from generator.evidence.trustroot import load_trust_root
from generator.evidence.verify import verify_evidence
from generator.evidence.verify_cache import (
    DIRS_STAGE,
    HEADS_STAGE,
    LAST_STAGE,
    VERIFY_STAGE,
    _DirReader,
    directory,
    verify_cached,
)

SECRET = b"s" * 32


@pytest.fixture(scope="module")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("synth")
    synthesize(SynthOptions(3, 12, seed=7, jobs=1), out)
    return out


@pytest.fixture
def tree(synth: Path, tmp_path: Path) -> Path:
    """A copy of the synthetic repository the test may change."""
    shutil.copytree(synth, tmp_path / "repo")
    return tmp_path / "repo"


def _inputs(repo: Path) -> tuple[TrustRoot, SignerPolicy]:
    root = load_trust_root(str(repo / "trust" / "synth-root.json"))
    policy = read_policy(repo / "catalog" / "signers.yaml", "signers.yaml")
    return root, policy


def _files(repo: Path) -> tuple[FoundFile, ...]:
    return find_files([repo / "evidence"], base=repo, root=repo / "evidence")


def _run(
    repo: Path, cache_dir: Path, secret: bytes = SECRET, *, sweep: bool = False
) -> tuple[tuple[Evidence, ...], tuple[str, ...], Cache]:
    root, policy = _inputs(repo)
    cache = Cache(cache_dir, secret=secret)
    records, keys = verify_cached(
        _files(repo),
        trust_root=root,
        policy=policy,
        current_digests={},
        cache=cache,
        jobs=1,
        sweep=sweep,
    )
    return records, keys, cache


def _afresh(repo: Path) -> tuple[Evidence, ...]:
    root, policy = _inputs(repo)
    files = [load(f) for f in _files(repo)]
    return verify_evidence(files, trust_roots=root, policy=policy, current_digests={}, jobs=1)


def _dirs(repo: Path) -> Counter[str]:
    return Counter(directory(f) for f in _files(repo))


def test_files_are_grouped_by_recipe_directory(tree: Path) -> None:
    dirs = _dirs(tree)
    assert len(dirs) == 3 and all(d.startswith("evidence/") for d in dirs)
    assert sum(dirs.values()) == len(_files(tree))
    assert directory(FoundFile("x", "evidence/r/s/f.json", "", "", "", 0)) == "evidence/r"
    assert directory(FoundFile("loose.json", None, "", "", "", 0)) == "loose.json"


def test_a_rebuild_reads_one_entry_per_directory(tree: Path, tmp_path: Path) -> None:
    first, keys, cache = _run(tree, tmp_path / "c")
    n, dirs = len(first), len(_dirs(tree))
    assert first == _afresh(tree)
    assert cache.stats.misses == {
        VERIFY_STAGE: n,
        DIRS_STAGE: dirs,
        HEADS_STAGE: dirs,
        LAST_STAGE: dirs,
    }
    assert len(cache.keys(DIRS_STAGE)) == len(cache.keys(LAST_STAGE)) == dirs
    assert cache.keys(VERIFY_STAGE) == []  # each record stored once: in its directory's entry

    again, again_keys, cache = _run(tree, tmp_path / "c")
    assert cache.stats.hits == {HEADS_STAGE: dirs}  # no record read before one is used
    assert (again, again_keys) == (first, keys)
    # then one entry per directory: no file's entry read, nothing verified
    assert cache.stats.hits == {DIRS_STAGE: dirs, HEADS_STAGE: dirs}
    assert cache.stats.misses == {}


def test_a_changed_file_reverifies_that_file_only(tree: Path, tmp_path: Path) -> None:
    _, keys, _ = _run(tree, tmp_path / "c")
    files = _files(tree)
    changed = files[4]
    siblings = _dirs(tree)[directory(changed)]
    (tree / changed.path).write_bytes(b'{"not": "a bundle"}')

    records, new_keys, cache = _run(tree, tmp_path / "c")
    # one directory's entry is new: its other files come from the entry it had last, one is
    # verified
    assert cache.stats.misses == {DIRS_STAGE: 1, VERIFY_STAGE: 1, HEADS_STAGE: 1}
    others = len(_dirs(tree)) - 1  # their records read when used (below)
    last = {LAST_STAGE: 1, DIRS_STAGE: 1}  # the directory's last entry, named then read
    assert cache.stats.hits == {VERIFY_STAGE: siblings - 1, HEADS_STAGE: others, **last}
    assert records == _afresh(tree)
    assert cache.stats.hits == {
        DIRS_STAGE: others + 1,
        VERIFY_STAGE: siblings - 1,
        HEADS_STAGE: others,
        LAST_STAGE: 1,
    }
    assert isinstance(records[4], RejectedEvidence)
    assert [i for i, (a, b) in enumerate(zip(keys, new_keys, strict=True)) if a != b] == [4]


def test_a_removed_then_restored_file_verifies_nothing(tree: Path, tmp_path: Path) -> None:
    first, keys, _ = _run(tree, tmp_path / "c")
    gone = _files(tree)[7]
    data = (tree / gone.path).read_bytes()
    (tree / gone.path).unlink()

    fewer, fewer_keys, cache = _run(tree, tmp_path / "c")
    # the rest of its directory: per file
    assert cache.stats.misses == {DIRS_STAGE: 1, HEADS_STAGE: 1}
    assert fewer == _afresh(tree) and fewer_keys == keys[:7] + keys[8:]

    (tree / gone.path).write_bytes(data)
    back, back_keys, cache = _run(tree, tmp_path / "c")
    assert (back, back_keys) == (first, keys)
    dirs = len(_dirs(tree))
    assert cache.stats.misses == {} and cache.stats.hits == {DIRS_STAGE: dirs, HEADS_STAGE: dirs}


def test_a_tampered_directory_entry_is_refused(tree: Path, tmp_path: Path) -> None:
    first, keys, cache = _run(tree, tmp_path / "c")
    key = cache.keys(DIRS_STAGE)[0]
    raw = cache.raw(DIRS_STAGE, key) or b""
    cache.write_raw(DIRS_STAGE, key, raw[:-1] + bytes([raw[-1] ^ 0xFF]))

    again, again_keys, cache = _run(tree, tmp_path / "c")
    assert (again, again_keys) == (first, keys)
    assert cache.stats.rejected == {DIRS_STAGE: 1}
    # its records are in no other entry: that directory's files are verified again
    assert cache.stats.misses.get(VERIFY_STAGE) in set(_dirs(tree).values())


def test_a_planted_directory_entry_is_refused(tree: Path, tmp_path: Path) -> None:
    """Entries written with another key (say, a restored CI cache) claiming other records for
    a directory: not this machine's, so never used."""
    first, keys, _ = _run(tree, tmp_path / "c")
    forger = Cache(tmp_path / "c", secret=b"f" * 32)
    for key in forger.keys(DIRS_STAGE):
        # what another directory verified to, planted under this directory's key
        other = next(k for k in forger.keys(DIRS_STAGE) if k != key)
        raw = forger.raw(DIRS_STAGE, other) or b""
        payload = raw[raw.index(b"\n", len(MAGIC)) + 1 :]
        forger.put(DIRS_STAGE, key, "", payload, authenticated=True)

    again, again_keys, cache = _run(tree, tmp_path / "c")
    assert (again, again_keys) == (first, keys)
    dirs = len(_dirs(tree))
    assert cache.stats.rejected == {DIRS_STAGE: dirs}
    # the heads are this machine's: only the records are made again (verified: the entries
    # the directories had last are the ones refused)
    assert cache.stats.hits == {LAST_STAGE: dirs, HEADS_STAGE: dirs}
    assert cache.stats.misses[VERIFY_STAGE] == len(first)


def test_entries_are_refused_under_another_machines_key(tree: Path, tmp_path: Path) -> None:
    _run(tree, tmp_path / "c", secret=b"o" * 32)
    records, _, cache = _run(tree, tmp_path / "c")
    assert records == _afresh(tree)
    dirs = len(_dirs(tree))
    assert cache.stats.rejected == {
        DIRS_STAGE: dirs,
        HEADS_STAGE: dirs,
        LAST_STAGE: dirs,
    }


def test_sweep_keeps_the_directory_entries_used(tree: Path, tmp_path: Path) -> None:
    _run(tree, tmp_path / "c", sweep=True)[2].finish()
    (tree / _files(tree)[0].path).unlink()
    _, _, cache = _run(tree, tmp_path / "c", sweep=True)
    assert len(cache.keys(DIRS_STAGE)) == len(_dirs(tree)) + 1  # the old one, until finish
    cache.finish()
    assert len(cache.keys(DIRS_STAGE)) == len(_dirs(tree))
    # without `sweep` (a build of one recipe) nothing is deleted
    (tree / _files(tree)[0].path).unlink()
    _, _, cache = _run(tree, tmp_path / "c")
    cache.finish()
    assert len(cache.keys(DIRS_STAGE)) == len(_dirs(tree)) + 1


def test_sweep_removes_entries_per_file_and_keeps_each_directorys_last(
    tree: Path, tmp_path: Path
) -> None:
    """No entry per file is stored, and one an earlier build left is swept; each directory's
    `LAST_STAGE` entry is kept through a sweep, and goes with its directory."""
    _run(tree, tmp_path / "c", sweep=True)[2].finish()
    dirs = len(_dirs(tree))
    cache = Cache(tmp_path / "c", secret=SECRET)
    cache.get_or_make_many(VERIFY_STAGE, [("left", "by", "code before")], lambda todo: [1])
    assert len(cache.keys(VERIFY_STAGE)) == 1
    _, _, cache = _run(tree, tmp_path / "c", sweep=True)
    cache.finish()
    assert cache.keys(VERIFY_STAGE) == [] and len(cache.keys(LAST_STAGE)) == dirs
    gone = directory(_files(tree)[0])
    shutil.rmtree(tree / gone)
    _, _, cache = _run(tree, tmp_path / "c", sweep=True)
    cache.finish()
    assert len(cache.keys(LAST_STAGE)) == len(cache.keys(DIRS_STAGE)) == dirs - 1
    again, _, cache = _run(tree, tmp_path / "c", sweep=True)
    assert cache.stats.misses == {} and again == _afresh(tree)  # nothing needed was swept


def test_one_file_cycle_across_swept_builds_verifies_one_file(tree: Path, tmp_path: Path) -> None:
    """A file removed, then put back, each build swept and finished (a build's cycle): the
    first verifies nothing, the second the file put back alone (its record was swept with
    the directory's entry that held it), its siblings from the entry the directory had
    last."""
    first, keys, cache = _run(tree, tmp_path / "c", sweep=True)
    cache.finish()
    gone = _files(tree)[7]
    siblings = _dirs(tree)[directory(gone)]
    data = (tree / gone.path).read_bytes()
    (tree / gone.path).unlink()
    fewer, _, cache = _run(tree, tmp_path / "c", sweep=True)
    assert VERIFY_STAGE not in cache.stats.misses
    assert cache.stats.hits[VERIFY_STAGE] == siblings - 1
    assert fewer == _afresh(tree)
    cache.finish()
    (tree / gone.path).write_bytes(data)
    back, back_keys, cache = _run(tree, tmp_path / "c", sweep=True)
    assert cache.stats.misses[VERIFY_STAGE] == 1
    assert cache.stats.hits[VERIFY_STAGE] == siblings - 1
    assert (back, back_keys) == (first, keys)
    cache.finish()


def _changes(tree: Path) -> list[Callable[[], None]]:
    """A sequence of changes to the tree: a file rewritten, removed, put back, added, and a
    whole directory removed."""
    files = _files(tree)
    kept = (tree / files[7].path).read_bytes()

    def rewrite() -> None:
        (tree / files[4].path).write_bytes(b'{"not": "a bundle"}')

    def remove() -> None:
        (tree / files[7].path).unlink()

    def put_back() -> None:
        (tree / files[7].path).write_bytes(kept)

    def add() -> None:
        (tree / files[9].path).with_name("added.sigstore.json").write_bytes(kept)

    def remove_dir() -> None:
        shutil.rmtree(tree / directory(files[-1]))

    return [rewrite, remove, put_back, add, remove_dir]


@pytest.mark.parametrize("sweep", [False, True])
def test_make_is_the_reference_through_changes(
    synth: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sweep: bool
) -> None:
    """`_DirReader.make` (each directory's records from the entry it had last) and
    `make_reference` (from an entry per file) give the same records and keys, equal to those
    of verifying every file afresh, after each change of a sequence."""
    got: dict[str, list[tuple[tuple[Evidence, ...], tuple[str, ...]]]] = {}
    for way in ("make", "make_reference"):
        repo = tmp_path / way
        shutil.copytree(synth, repo)
        seen = got.setdefault(way, [])
        with monkeypatch.context() as m:
            m.setattr(_DirReader, "make", getattr(_DirReader, way))
            for change in [lambda: None, *_changes(repo)]:
                change()
                records, keys, cache = _run(repo, tmp_path / f"c-{way}", sweep=sweep)
                assert records == _afresh(repo)
                seen.append((tuple(records), keys))
                cache.finish()
    assert got["make"] == got["make_reference"]


# --- the records: judged by one constructor call, pickled through their constructors -----------


def test_judged_is_the_reference(synth: Path) -> None:
    import dataclasses

    from generator.evidence.model import VerifiedEvidence

    fields = [f.name for f in dataclasses.fields(VerifiedEvidence)]
    assert fields[-2:] == ["stale", "current_digest"]  # what `judged` relies on
    verified = [r for r in _afresh(synth) if isinstance(r, VerifiedEvidence)]
    assert verified
    for r in verified:
        for current in (None, r.statement.recipe_digest, "sha256:0", r.current_digest):
            got = r.judged(current)
            assert got == r.judged_reference(current)
            stale = current != r.statement.recipe_digest
            assert (got.stale, got.current_digest) == (stale, current)
        assert r.judged(r.current_digest) is r  # nothing to change: the record itself


def test_judgements_pickle_through_their_constructors() -> None:
    import pickle

    from generator.evidence.judge import Judgement, RowOutcome

    row = RowOutcome("failed", "threshold missed", "kpi x: 3 > 2")
    whole = Judgement(
        verdict="fail",
        reasons=("r1", "r2"),
        mismatches=("m",),
        causes=("threshold missed",),
        judged_kpis=frozenset({"x", "y"}),
        failed_kpis={"x": row},
        failed_checks={("deployment", "c"): RowOutcome("failed", "check failed", "c")},
    )
    for value in (row, whole, Judgement("pass", (), ())):
        reduced = value.__reduce__()
        assert reduced[0] is type(value) and type(value)(*reduced[1]) == value
        assert pickle.loads(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)) == value


# --- discovery: the absolute paths from the walk, the reference's answer -------------------------


def _found_facts(found: dict[Path, object]) -> list[tuple[Path, str, str, str]]:
    from generator.evidence.store import Found

    out = []
    for p, f in found.items():
        assert isinstance(f, Found)
        out.append((p, str(f.path), str(f.root), f.location))
    return out


@pytest.mark.parametrize(
    ("given", "root"),
    [
        (["evidence"], "evidence"),  # the build: the tree, its root known
        (["evidence"], None),
        (["."], None),  # a repository root
        (["evidence/{recipe}"], "evidence"),  # one recipe's build
        (["evidence/{recipe}"], None),
        (["evidence", "evidence/{recipe}"], "evidence"),  # overlapping arguments
        (["evidence/{recipe}", "{file}"], "evidence"),  # a file named explicitly
        (["./evidence/../evidence"], "evidence"),
        (["{absolute}/evidence"], "evidence"),
        (["evidence"], "{absolute}/evidence"),
        (["evidence"], "elsewhere"),  # a root the files are not in
    ],
)
def test_discovery_is_the_reference(
    tree: Path, monkeypatch: pytest.MonkeyPatch, given: list[str], root: str | None
) -> None:
    from generator.evidence import store

    monkeypatch.chdir(tree)
    first = _files(tree)[0]
    fill = {"recipe": directory(first).split("/")[1], "file": first.path, "absolute": str(tree)}
    paths = [Path(g.format(**fill)) for g in given]
    at = None if root is None else Path(root.format(**fill))
    fast = store._discover(paths, at)
    reference = store._discover_reference(paths, at)
    assert list(fast) == list(reference)  # the same files, in the same order
    assert _found_facts(fast) == _found_facts(reference)  # type: ignore[arg-type]
    for p, absolute, _ in store._discover_absolute(paths, at):
        assert absolute == os.path.abspath(p)
    assert len(fast) >= 4


def test_discovery_of_a_hostile_tree_is_the_reference(tmp_path: Path) -> None:
    from generator.evidence import store
    from tests.test_fast_walk import HOSTILE, _make

    outside = tmp_path / "outside"
    outside.mkdir()
    base = tmp_path / "tree"
    for rel, kind in HOSTILE:
        _make(base, rel, kind, outside)
    for root in (None, base, base / "a"):
        fast, reference = store._discover([base], root), store._discover_reference([base], root)
        assert list(fast) == list(reference) and fast
        assert _found_facts(fast) == _found_facts(reference)  # type: ignore[arg-type]
