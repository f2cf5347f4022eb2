"""Verification through the build cache: a file verified once is not verified again, and a
file unchanged since an earlier build is not even read again.

The verify stage's key of a file: the file (its path, its location below the evidence root,
its bytes' sha256), the trust root, the signer policy and the verifier's code. That key is
handed downstream (`VerificationRun.keys`: the aggregate stage keys each record by it). A
record is cached as verified *before* staleness is judged (no current digests);
`with_current_digests` then judges every record against this build's recipes, so a changed
recipe never needs a re-verification. The cache authenticates its entries (HMAC with this
machine's key): a cached "verified" cannot be planted by writing to `.cache/`.

Two grains. The records of one directory of the tree (`evidence/<recipe>`: every file of one
recipe) are one entry of `DIRS_STAGE`, its key derived from the keys of its files, in order:
a rebuild reads and authenticates one entry per recipe, not one per file. A directory whose
files changed (one added, removed or rewritten) has a new key; its records come from the
per-file entries (`VERIFY_STAGE`, one per file, keyed by its file's key), and only a file
with neither entry is verified. Both grains are stored, so one changed file re-verifies one
file. Measured on the verify stage alone (`verify_stage`, its collector paused as in a build,
warm cache, nothing changed): see `verify_cached`.

A file's verification key is the key of its entry (`VERIFY_STAGE`): derived once from its parts
(`Cache.derive`), handed downstream, named in its directory's key and counted as served for
the sweep (`Cache.serve`), where the entry's key was before derived again from it (20,000 more
keys at 1,000 recipes). The verifier (`generator.evidence.verify`, and sigstore with it) is
imported only when a file is verified, and a trust root sigstore parsed in an earlier build is
not parsed again (`parsed_roots`): a build whose every verification is cached imports neither
(0.4-0.5 CPU-s of imports on the 2-core machine under load 3-4.5).

The sha256 of a file comes from its stat memo when the memo vouches for it (`store.FileMemo`:
same device, inode, size, mtime and ctime as when an earlier build read it); the memo is an
authenticated entry too, so a digest cannot be planted for a file either. A file is read only
when the memo cannot vouch for it, or when its verification must be made (`store.load`, which
refuses bytes whose digest is not the one the key was made from).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from generator.core.cache import Cache, digest, fingerprint
from generator.evidence.model import (
    Evidence,
    FoundFile,
    SignerPolicy,
    TrustRoot,
    with_current_digests,
)
from generator.evidence.store import FileMemo, load

VERIFY_STAGE = "verify"  # one entry per file
# the code a verification is a function of (in each file's key): the verifier, its records
# (`evidence/model.py`, whose stored form `fast/packed.py` gives), and what they are made with
VERIFY_CODE = ("evidence", "core/records.py", "core/canonical.py", "fast")
DIRS_STAGE = "verify-dirs"  # one entry per directory of the evidence tree (`evidence/<recipe>`)
FILES_STAGE = "evidence-files"  # the stat memo of the evidence files (one entry per tree)
ROOTS_STAGE = "trust-roots"  # the trust roots sigstore parsed (one entry)


def verify_cached(
    files: Sequence[FoundFile],
    *,
    trust_root: TrustRoot,
    policy: SignerPolicy,
    current_digests: Mapping[str, str],
    cache: Cache,
    jobs: int | None = None,
    sweep: bool = False,
) -> tuple[tuple[Evidence, ...], tuple[str, ...]]:
    """`verify.verify_evidence`, verifying (and reading) only the files the cache has not
    seen; with each record the key of its verification (which later stages key by: equal
    keys, equal records before staleness).

    Two grains (see the module): one entry per directory (`DIRS_STAGE`), then, for the
    directories whose entry is missing, one per file (`VERIFY_STAGE`), then verification of
    the files with neither. `sweep`: `files` are the whole evidence tree, so the directory
    and file entries of files no longer in it (an edited file's old bytes, a removed file) are
    deleted when the build finishes (`Cache.finish`); before, the entry per file was never
    swept and the cache grew with every evidence change.

    Measured on `verify_stage` alone (warm cache, nothing changed, collector paused as in a
    build), before -> after: 200 x 4,000, median of 6 (load 4-5), 1.03 -> 0.73 CPU-s;
    1,000 x 20,000, median of 3 and of 6 (load 4.4), 3.47 -> 2.80 CPU-s. Entries read and
    authenticated, and pickles loaded, 20,000 -> 1,000 (one per recipe directory)."""
    parts = file_key_parts(files, trust_root, policy)
    derived, groups = cache.derive(VERIFY_STAGE, parts), directories(files)
    keys = derived.keys
    if sweep:  # every file's entry is used (read, or behind its directory's): the rest go
        cache.serve(derived)

    def make_dirs(todo: list[int]) -> list[tuple[Evidence, ...]]:
        wanted = [i for g in todo for i in groups[g]]

        def make_files(missing: list[int]) -> tuple[Evidence, ...]:  # positions in `wanted`
            from generator.evidence.verify import verify_evidence  # sigstore: only now

            return verify_evidence(
                [load(files[wanted[j]]) for j in missing],
                trust_roots=trust_root,
                policy=policy,
                current_digests={},
                jobs=jobs,
            )

        # each file's entry is stored under its verification key (`derived`)
        made = cache.get_or_make_many(VERIFY_STAGE, [parts[i] for i in wanted], make_files)
        by_file = dict(zip(wanted, made, strict=True))
        return [tuple(by_file[i] for i in groups[g]) for g in todo]

    batches = cache.get_or_make_many(
        DIRS_STAGE, [tuple(keys[i] for i in g) for g in groups], make_dirs, sweep=sweep
    )
    at = {
        i: record
        for g, b in zip(groups, batches, strict=True)
        for i, record in zip(g, b, strict=True)
    }
    verified = tuple(at[i] for i in range(len(files)))
    return with_current_digests(verified, current_digests), keys


def file_key_parts(
    files: Sequence[FoundFile], trust_root: TrustRoot, policy: SignerPolicy
) -> list[tuple[str, ...]]:
    """The parts of each file's verification key: the verifier's code, its path, its location
    (the path check judges it), its bytes' sha256, the trust root and the signer policy."""
    fp = fingerprint(*VERIFY_CODE)
    policy_digest = hashlib.sha256(repr(policy).encode()).hexdigest()
    root = trust_root.sha256
    return [(fp, f.path, f.location or "", f.sha256, root, policy_digest) for f in files]


def directory(found: FoundFile) -> str:
    """The directory a file's verification is stored with: `evidence/<recipe>` of its location
    (its path without one); a file directly under the evidence root is its own."""
    return "/".join((found.location or found.path).split("/", 2)[:2])


def directories(files: Sequence[FoundFile]) -> list[tuple[int, ...]]:
    """The positions of `files` grouped by `directory`, each group in the files' order, the
    groups in the order of their first file."""
    groups: dict[str, list[int]] = {}
    for i, f in enumerate(files):
        groups.setdefault(directory(f), []).append(i)
    return [tuple(g) for g in groups.values()]


def _memo_key(paths: Iterable[Path]) -> str:
    return digest(FILES_STAGE, *sorted(str(p.resolve()) for p in paths))


_MEMO_CODE = ("evidence/store.py", "evidence/verify_cache.py")


def file_memo(cache: Cache, paths: Iterable[Path]) -> FileMemo:
    """The stat memo of the evidence files under `paths` (empty when there is none, or its
    entry is not this machine's)."""
    raw = cache.get(FILES_STAGE, _memo_key(paths), fingerprint(*_MEMO_CODE), authenticated=True)
    try:
        entries = json.loads(raw) if raw is not None else {}
    except ValueError:
        entries = {}
    return FileMemo(entries if isinstance(entries, dict) else {})


def keep_file_memo(cache: Cache, paths: Iterable[Path], memo: FileMemo) -> None:
    """Store what this build found (the files it vouched for and those it read, settled)."""
    if memo.changed:
        data = json.dumps(
            memo.after, separators=(",", ":"), sort_keys=True, allow_nan=False
        ).encode()
        key, fp = _memo_key(paths), fingerprint(*_MEMO_CODE)
        cache.put(FILES_STAGE, key, fp, data, authenticated=True)


_ROOTS_CODE = ("evidence/trustroot.py",)


def parsed_roots(cache: Cache) -> frozenset[str]:
    """The sha256 of the trust roots that sigstore's model parsed in earlier builds
    (`trustroot.load_trust_root(parsed=...)`): an authenticated entry, so a root cannot be
    planted as parsed; empty when there is none, or its entry is not this machine's or this
    code's (`trustroot.py` is in its key)."""
    key = digest(ROOTS_STAGE)
    raw = cache.get(ROOTS_STAGE, key, fingerprint(*_ROOTS_CODE), authenticated=True)
    try:
        listed = json.loads(raw) if raw is not None else []
    except ValueError:
        listed = []
    if not isinstance(listed, list):
        return frozenset()
    return frozenset(d for d in listed if isinstance(d, str))


def keep_parsed_roots(cache: Cache, before: frozenset[str], roots: Iterable[TrustRoot]) -> None:
    """Record `roots` as parsed (`load_trust_root` parsed each, or it was recorded before)."""
    now = before | {r.sha256 for r in roots}
    if now != before:
        data = json.dumps(sorted(now), separators=(",", ":"), allow_nan=False).encode()
        key = digest(ROOTS_STAGE)
        cache.put(ROOTS_STAGE, key, fingerprint(*_ROOTS_CODE), data, authenticated=True)
