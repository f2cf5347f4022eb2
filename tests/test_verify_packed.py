"""The verify stage's stored records, cheap to load (`fast.packed`), and a rebuild that verifies
nothing imports no verifier.

- a record loaded from the cache holds its statement's predicate, component versions, checks
  and KPIs packed and unread, and reads as the record verification gives afresh (equal, same
  repr, every packed field equal to the plain value);
- the code that gives the stored form is in every verification key: an entry written by other
  code (another stored form) is never read, it is made again;
- a build whose every verification is cached, also after a file was removed, imports neither
  `generator.evidence.verify` nor sigstore (a separate process: this one imported them);
- each file's verification key is its entry's key, derived once.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from generator.bench.synth import SynthOptions, synthesize
from generator.core.cache import PACKAGE, Cache, code_fingerprint
from generator.evidence.model import Evidence, VerifiedEvidence
from generator.evidence.policy import read_policy
from generator.evidence.store import find_files, load
from generator.evidence.trustroot import load_trust_root
from generator.evidence.verify import verify_evidence
from generator.evidence.verify_cache import (
    DIRS_STAGE,
    HEADS_STAGE,
    VERIFY_CODE,
    VERIFY_STAGE,
    file_key_parts,
    verify_cached,
)
from generator.fast.packed import PackedMapping, PackedTuple

SECRET = b"p" * 32
PACKED = ("predicate", "component_versions", "phases", "kpis")


@pytest.fixture(scope="module")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("synth")
    synthesize(SynthOptions(2, 8, seed=11, jobs=1), out)
    return out


def _run(repo: Path, cache: Cache) -> tuple[Evidence, ...]:
    root = load_trust_root(str(repo / "trust" / "synth-root.json"))
    policy = read_policy(repo / "catalog" / "signers.yaml", "signers.yaml")
    files = find_files([repo / "evidence"], base=repo, root=repo / "evidence")
    records, keys = verify_cached(
        files, trust_root=root, policy=policy, current_digests={}, cache=cache, jobs=1
    )
    assert keys == cache.derive(VERIFY_STAGE, file_key_parts(files, root, policy)).keys
    return records


def _afresh(repo: Path) -> tuple[Evidence, ...]:
    root = load_trust_root(str(repo / "trust" / "synth-root.json"))
    policy = read_policy(repo / "catalog" / "signers.yaml", "signers.yaml")
    files = find_files([repo / "evidence"], base=repo, root=repo / "evidence")
    loaded = [load(f) for f in files]
    return verify_evidence(loaded, trust_roots=root, policy=policy, current_digests={}, jobs=1)


def test_a_stored_record_loads_unread_and_reads_as_verified_afresh(
    synth: Path, tmp_path: Path
) -> None:
    _run(synth, Cache(tmp_path / "c", secret=SECRET))
    cache = Cache(tmp_path / "c", secret=SECRET)
    stored = _run(synth, cache)
    assert cache.stats.hits == {HEADS_STAGE: 2} and not cache.stats.misses  # nothing read yet
    verified = [r for r in stored if isinstance(r, VerifiedEvidence)]
    assert verified
    assert cache.stats.hits == {DIRS_STAGE: 2, HEADS_STAGE: 2}  # from the cache, once used
    for r in verified:
        for name in PACKED:
            value = getattr(r.statement, name)
            assert isinstance(value, (PackedMapping, PackedTuple)), name
            assert value._value is None, name  # loaded, not unpickled
    afresh = _afresh(synth)
    assert stored == afresh and repr(stored) == repr(afresh)
    for r, a in zip(verified, afresh, strict=False):
        assert isinstance(a, VerifiedEvidence)
        assert dict(r.statement.predicate) == dict(a.statement.predicate)
        assert r.statement.predicate["recipe"]["name"] == r.statement.recipe
        assert dict(r.statement.phases) == dict(a.statement.phases)
        assert tuple(r.statement.kpis) == tuple(a.statement.kpis) and r.statement.kpis
        assert r.statement.component_versions == a.statement.component_versions


@pytest.mark.parametrize("changed", ["fast/packed.py", "evidence/model.py"])
def test_the_stored_forms_code_is_in_every_verification_key(changed: str, tmp_path: Path) -> None:
    """An entry stored by other code (a record pickled in another form) is never read: the
    code that gives the stored form is in the key, so the record is made again."""
    copy = tmp_path / "generator"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    before = code_fingerprint(copy, *VERIFY_CODE)
    (copy / changed).write_text((copy / changed).read_text() + "\n# another stored form\n")
    assert code_fingerprint(copy, *VERIFY_CODE) != before


_WARM = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from generator.core.cache import Cache
    from generator.evidence.stage import verify_stage

    repo = Path(sys.argv[1])
    run = verify_stage(
        [repo / "evidence"],
        catalog_dir=repo / "catalog",
        trust_roots=(str(repo / "trust" / "synth-root.json"),),
        current={},
        base=repo,
        evidence_root=repo / "evidence",
        cache=Cache(Path(sys.argv[2])),
        jobs=1,
    )
    loaded = sorted(m for m in sys.modules if m == "sigstore" or m == "generator.evidence.verify")
    print(len(run.records), ",".join(loaded) or "-")
    """
)


def _verify_in_a_process(repo: Path, cache: Path, key: Path) -> tuple[int, str]:
    env = {**os.environ, "AICR_CATALOG_CACHE_KEY": str(key)}
    out = subprocess.run(
        [sys.executable, "-c", _WARM, str(repo), str(cache)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    ).stdout.split()
    return int(out[0]), out[1]


def test_a_rebuild_that_verifies_nothing_imports_no_verifier(synth: Path, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(synth, repo)
    cache, key = tmp_path / "cache", tmp_path / "cache.key"
    first = _verify_in_a_process(repo, cache, key)
    assert first[1] == "generator.evidence.verify,sigstore"  # verified: imported
    assert _verify_in_a_process(repo, cache, key) == (first[0], "-")  # all cached
    gone = sorted((repo / "evidence").rglob("*.sigstore.json"))[0]
    gone.unlink()
    assert _verify_in_a_process(repo, cache, key) == (first[0] - 1, "-")  # one removed
    shutil.copy(sorted((synth / "evidence").rglob("*.sigstore.json"))[0], gone)
    assert _verify_in_a_process(repo, cache, key) == (first[0], "-")  # back: cached by file


def _stage(repo: Path, root: Path, cache: Cache) -> int:
    from generator.evidence.stage import verify_stage

    run = verify_stage(
        [repo / "evidence"],
        catalog_dir=repo / "catalog",
        trust_roots=(str(root),),
        current={},
        base=repo,
        evidence_root=repo / "evidence",
        cache=cache,
        jobs=1,
    )
    return len(run.records)


def test_only_a_root_parsed_before_by_this_machine_skips_the_parse(
    synth: Path, tmp_path: Path
) -> None:
    """The record of parsed roots holds the roots this machine's builds parsed: a root with
    other bytes is parsed (and refused when unusable), and a record planted without this
    machine's key is not read."""
    from generator.core.errors import UsageError
    from generator.evidence.verify_cache import ROOTS_STAGE, parsed_roots

    root = synth / "trust" / "synth-root.json"
    cache = Cache(tmp_path / "c", secret=SECRET)
    assert _stage(synth, root, cache) and parsed_roots(cache) == {load_trust_root(str(root)).sha256}
    bad = tmp_path / "bad-root.json"
    bad.write_text('{"mediaType": "not a trusted root"}')
    with pytest.raises(UsageError, match="not a usable Sigstore trusted root"):
        _stage(synth, bad, Cache(tmp_path / "c", secret=SECRET))
    import hashlib
    import json

    from generator.core.cache import digest, fingerprint

    forger = Cache(tmp_path / "c", secret=b"f" * 32)  # another machine's key
    listed = json.dumps([hashlib.sha256(bad.read_bytes()).hexdigest()]).encode()
    fp = fingerprint("evidence/trustroot.py")
    forger.put(ROOTS_STAGE, digest(ROOTS_STAGE), fp, listed, authenticated=True)
    cache = Cache(tmp_path / "c", secret=SECRET)
    assert parsed_roots(cache) == frozenset()  # refused
    with pytest.raises(UsageError, match="not a usable Sigstore trusted root"):
        _stage(synth, bad, cache)
