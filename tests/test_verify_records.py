"""The verify stage's records read per directory when first used (`verify_cache.Records`).

- The reference is the tuple of records verified afresh and judged current: whatever the
  order in which records are read (one by one, a recipe's at once, all of them), each is that
  record, value for value, and every record's heads (path, recipe, profile, verification key)
  are its own, before any is read.
- Nothing is read (no directory's entry taken from the store, authenticated or unpickled)
  until a record is used; one record reads its directory alone; `need` reads every directory
  a selection needs in one batch.
- Pickled, records travel in hand, as `Records`.
- Through the pipeline: a rebuild after one evidence file was removed reads no directory's
  records (the aggregate stage makes the changed recipe's part from the records it made), and
  its records and status are those of a build without a cache.
"""

from __future__ import annotations

import pickle
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generator.bench.synth import SynthOptions, synthesize
from generator.core import safeio
from generator.core.cache import Cache
from generator.core.memo import Memo
from generator.evidence import store
from generator.evidence.model import Evidence, VerifiedEvidence, with_current_digests
from generator.evidence.policy import read_policy
from generator.evidence.store import TREE_SUFFIXES, find_files, load
from generator.evidence.trustroot import load_trust_root
from generator.evidence.verify import verify_evidence
from generator.evidence.verify_cache import (
    DIRS_STAGE,
    HEADS_STAGE,
    LAST_STAGE,
    Records,
    verify_tree,
)
from generator.pipeline import Inputs, run

SECRET = b"r" * 32


@pytest.fixture(scope="module")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("synth")
    synthesize(SynthOptions(4, 40, seed=5, jobs=1), out)
    return out


def _current(repo: Path) -> dict[str, str]:
    """Current digests that make some records stale and leave others current (judged on read)."""
    out: dict[str, str] = {}
    for i, r in enumerate(_afresh(repo, {})):
        if isinstance(r, VerifiedEvidence) and i % 3:
            out[f"{r.statement.recipe}@{r.statement.scale_profile or 'standard'}"] = (
                r.statement.recipe_digest if i % 2 else "sha256:" + "0" * 64
            )
    return out


def _afresh(repo: Path, current: dict[str, str]) -> tuple[Evidence, ...]:
    """The reference: every file verified, judged current, at once."""
    root = load_trust_root(str(repo / "trust" / "synth-root.json"))
    policy = read_policy(repo / "catalog" / "signers.yaml", "signers.yaml")
    evidence = repo / "evidence"
    files = [load(f) for f in find_files([evidence], base=repo, root=evidence)]
    records = verify_evidence(files, trust_roots=root, policy=policy, current_digests={}, jobs=1)
    return with_current_digests(records, current)


def _records(repo: Path, cache: Cache, current: dict[str, str]) -> Records:
    root = load_trust_root(str(repo / "trust" / "synth-root.json"))
    policy = read_policy(repo / "catalog" / "signers.yaml", "signers.yaml")
    evidence = repo / "evidence"
    _, records, _ = verify_tree(
        safeio.walk(evidence, suffixes=TREE_SUFFIXES),
        root=evidence,
        base=repo,
        trust_root=root,
        policy=policy,
        current_digests=current,
        cache=cache,
        jobs=1,
    )
    return records


@pytest.fixture(scope="module")
def warm(synth: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A cache holding every directory's records (made by one run)."""
    where = tmp_path_factory.mktemp("warm")
    _records(synth, Cache(where, secret=SECRET), {})
    return where


@pytest.fixture(scope="module")
def reference(synth: Path) -> tuple[dict[str, str], tuple[Evidence, ...]]:
    current = _current(synth)
    return current, _afresh(synth, current)


def _heads(r: Evidence) -> tuple[str, str | None, str | None]:
    st_ = r.statement
    return (r.path, *((st_.recipe, st_.scale_profile) if st_ is not None else (None, None)))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_each_record_is_the_references_whatever_the_order_it_is_read_in(
    synth: Path,
    warm: Path,
    reference: tuple[dict[str, str], tuple[Evidence, ...]],
    data: st.DataObject,
) -> None:
    current, expected = reference
    records = _records(synth, Cache(warm, secret=SECRET), current)
    n = len(expected)
    assert len(records) == n and bool(records)
    assert [(records.path(i), records.recipe(i), records.profile(i)) for i in range(n)] == [
        _heads(r) for r in expected
    ]
    reads = data.draw(st.lists(st.integers(0, n - 1) | st.lists(st.integers(0, n - 1)), max_size=8))
    for read in reads:
        if isinstance(read, int):
            assert records[read] == expected[read]
        else:
            chosen = records.select(read)
            if data.draw(st.booleans()):
                chosen.need()
            assert len(chosen) == len(read) and tuple(chosen) == tuple(expected[i] for i in read)
            assert [chosen.path(j) for j in range(len(read))] == [expected[i].path for i in read]
            heads = chosen.heads()
            assert list(zip(heads.paths, heads.recipes, heads.profiles, strict=True)) == [
                _heads(expected[i]) for i in read
            ]
    # read whole: value for value, and type for type, the records read at once
    assert tuple(records) == expected and records == expected
    assert [type(r) for r in records] == [type(r) for r in expected]
    assert records[2:5] == expected[2:5] and records[-1] == expected[-1]


def test_made_records_are_the_references(
    synth: Path, tmp_path: Path, reference: tuple[dict[str, str], tuple[Evidence, ...]]
) -> None:
    """On a cold cache every directory is made (in hand from the start), its heads stored."""
    current, expected = reference
    cache = Cache(tmp_path / "c", secret=SECRET)
    records = _records(synth, cache, current)
    assert cache.stats.misses[DIRS_STAGE] == cache.stats.misses[HEADS_STAGE] == 4
    assert records == expected and all(records.key(i) for i in range(len(records)))


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """How many directories each batch of `DIRS_STAGE` reads asked for."""
    batches: list[int] = []
    real = Cache.get_or_make_many

    def counted(self: Cache, stage: str, parts: Any, *args: Any, **kwargs: Any) -> Any:
        if stage == DIRS_STAGE:
            batches.append(len(parts))
        return real(self, stage, parts, *args, **kwargs)

    monkeypatch.setattr(Cache, "get_or_make_many", counted)
    yield batches


def test_nothing_is_read_until_a_record_is_used(
    synth: Path,
    warm: Path,
    reference: tuple[dict[str, str], tuple[Evidence, ...]],
    reads: list[int],
) -> None:
    current, expected = reference
    cache = Cache(warm, secret=SECRET)
    records = _records(synth, cache, current)
    heads = [(records.path(i), records.recipe(i), records.key(i)) for i in range(len(records))]
    assert len(heads) == len(expected) and records and not records.select([])
    assert reads == [] and DIRS_STAGE not in cache.stats.hits  # nothing read: no entry
    assert cache.stats.hits[HEADS_STAGE] == 4  # the heads, one small entry per directory
    assert records[0] == expected[0]
    assert reads == [1] and cache.stats.hits[DIRS_STAGE] == 1  # its directory alone
    assert records[1] == expected[1] and reads == [1]  # in hand now
    last = len(records) - 1
    both = records.select([last, last - 1, 0])
    both.need()
    assert reads == [1, 1]  # the last directory: the first is in hand
    everything = records.select(range(len(records)))
    everything.need()
    assert reads == [1, 1, 2] and cache.stats.hits[DIRS_STAGE] == 4  # the rest, one batch
    assert everything == expected


def test_records_pickle_in_hand(
    synth: Path, warm: Path, reference: tuple[dict[str, str], tuple[Evidence, ...]]
) -> None:
    current, expected = reference
    records = _records(synth, Cache(warm, secret=SECRET), current)
    some = records.select([5, 0, 17])
    back = pickle.loads(pickle.dumps(some, protocol=pickle.HIGHEST_PROTOCOL))
    assert type(back) is Records and back == tuple(expected[i] for i in (5, 0, 17))
    assert [back.path(i) for i in range(3)] == [some.path(i) for i in range(3)]
    assert [back.key(i) for i in range(3)] == [some.key(i) for i in range(3)]
    whole = pickle.loads(pickle.dumps(records))
    assert whole == expected and whole.plus(()) == expected


def test_a_one_file_rebuild_reads_no_directorys_records(
    synth: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store, "SETTLED_NS", 0)
    repo = tmp_path / "repo"
    shutil.copytree(synth, repo)

    def inputs() -> Inputs:
        return Inputs(repo / "catalog", repo / "evidence", (str(repo / "trust/synth-root.json"),))

    run(inputs(), Memo(Cache(tmp_path / "cache", secret=SECRET)))
    gone = sorted((repo / "evidence").rglob("*.sigstore.json"))[9]
    gone.unlink()
    memo = Memo(Cache(tmp_path / "cache", secret=SECRET))
    outcome = run(inputs(), memo)
    assert memo.cache is not None
    assert outcome.aggregated == 1  # the changed recipe's part, from the records it made
    # no other directory's records read: the changed one's last entry alone (its records)
    assert memo.cache.stats.hits[DIRS_STAGE] == 1 and memo.cache.stats.hits[LAST_STAGE] == 1
    assert memo.cache.stats.misses[DIRS_STAGE] == 1
    reference = run(inputs())  # no cache
    assert outcome.records == reference.records and outcome.status == reference.status
