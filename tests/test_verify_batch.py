"""The verify stage's two cache grains (`evidence/verify_cache.py`): one entry per directory of
the evidence tree, then one per file.

- a rebuild reads one entry per directory and verifies nothing;
- a file changed, added or removed in one directory re-verifies that file only (counted): the
  directory's other records come from their files' entries;
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
from pathlib import Path

import pytest

from generator.bench.synth import SynthOptions, synthesize
from generator.core.cache import Cache
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
    VERIFY_STAGE,
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
    assert cache.stats.misses == {VERIFY_STAGE: n, DIRS_STAGE: dirs, HEADS_STAGE: dirs}
    assert len(cache.keys(DIRS_STAGE)) == dirs and len(cache.keys(VERIFY_STAGE)) == n

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
    # one directory's entry is new: its other files come from their entries, one is verified
    assert cache.stats.misses == {DIRS_STAGE: 1, VERIFY_STAGE: 1, HEADS_STAGE: 1}
    others = len(_dirs(tree)) - 1  # their records read when used (below)
    assert cache.stats.hits == {VERIFY_STAGE: siblings - 1, HEADS_STAGE: others}
    assert records == _afresh(tree)
    assert cache.stats.hits == {DIRS_STAGE: others, VERIFY_STAGE: siblings - 1, HEADS_STAGE: others}
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
    assert VERIFY_STAGE not in cache.stats.misses  # made again from its files' entries


def test_a_planted_directory_entry_is_refused(tree: Path, tmp_path: Path) -> None:
    """Entries written with another key (say, a restored CI cache) claiming other records for
    a directory: not this machine's, so never used."""
    first, keys, _ = _run(tree, tmp_path / "c")
    forger = Cache(tmp_path / "c", secret=b"f" * 32)
    for key in forger.keys(DIRS_STAGE):
        # what another directory verified to, planted under this directory's key
        other = next(k for k in forger.keys(DIRS_STAGE) if k != key)
        raw = forger.raw(DIRS_STAGE, other) or b""
        payload = raw[raw.index(b"\n", len(b"AICR-CACHE 1\n")) + 1 :]
        forger.put(DIRS_STAGE, key, "", payload, authenticated=True)

    again, again_keys, cache = _run(tree, tmp_path / "c")
    assert (again, again_keys) == (first, keys)
    dirs = len(_dirs(tree))
    assert cache.stats.rejected == {DIRS_STAGE: dirs}
    # the heads are this machine's: only the records are made again, from their files' entries
    assert cache.stats.hits == {VERIFY_STAGE: len(first), HEADS_STAGE: dirs}


def test_entries_are_refused_under_another_machines_key(tree: Path, tmp_path: Path) -> None:
    _run(tree, tmp_path / "c", secret=b"o" * 32)
    records, _, cache = _run(tree, tmp_path / "c")
    assert records == _afresh(tree)
    dirs = len(_dirs(tree))
    assert cache.stats.rejected == {
        DIRS_STAGE: dirs,
        HEADS_STAGE: dirs,
        VERIFY_STAGE: len(records),
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


def test_sweep_removes_the_file_entries_of_files_gone_or_changed(
    tree: Path, tmp_path: Path
) -> None:
    """Every file's entry the tree still needs is kept through a sweep, whether it was read or
    stood behind its directory's entry; an edited file's old entry and a removed file's go."""
    _run(tree, tmp_path / "c", sweep=True)[2].finish()
    files = _files(tree)
    (tree / files[0].path).unlink()
    (tree / files[4].path).write_bytes(b'{"not": "a bundle"}')
    _, keys, cache = _run(tree, tmp_path / "c", sweep=True)
    assert len(cache.keys(VERIFY_STAGE)) == len(files) + 1  # the edited file's new entry
    cache.finish()
    wanted = set(keys)  # a file's verification key is its entry's key
    assert set(cache.keys(VERIFY_STAGE)) == wanted and len(wanted) == len(files) - 1
    again, _, cache = _run(tree, tmp_path / "c", sweep=True)
    assert cache.stats.misses == {} and again == _afresh(tree)  # nothing needed was swept


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
