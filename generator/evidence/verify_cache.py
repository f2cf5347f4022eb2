"""Verification through the build cache: a file verified once is not verified again, and a
file unchanged since an earlier build is not even read again.

The verify stage's key parts: the file (its path, its location below the evidence root, its
bytes' sha256), the trust root, the signer policy and the verifier's code. A record is cached
as verified *before* staleness is judged (no current digests); `with_current_digests` then
judges every record against this build's recipes, so a changed recipe never needs a
re-verification. The cache authenticates its entries (HMAC with this machine's key): a cached
"verified" cannot be planted by writing to `.cache/`.

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
from generator.evidence import verify
from generator.evidence.model import Evidence, FoundFile, SignerPolicy, TrustRoot
from generator.evidence.store import FileMemo, load

VERIFY_STAGE = "verify"
FILES_STAGE = "evidence-files"  # the stat memo of the evidence files (one entry per tree)


def verify_cached(
    files: Sequence[FoundFile],
    *,
    trust_root: TrustRoot,
    policy: SignerPolicy,
    current_digests: Mapping[str, str],
    cache: Cache,
    jobs: int | None = None,
) -> tuple[tuple[Evidence, ...], tuple[str, ...]]:
    """`verify.verify_evidence`, verifying (and reading) only the files the cache has not
    seen; with each record the key of its verification (which later stages key by: equal
    keys, equal records before staleness)."""
    fp = fingerprint("evidence", "core/records.py", "core/canonical.py", "fast")
    policy_digest = hashlib.sha256(repr(policy).encode()).hexdigest()
    parts = [
        (
            fp,
            f.path,
            f.location or "",  # the path check judges the location below the evidence root
            f.sha256,
            trust_root.sha256,
            policy_digest,
        )
        for f in files
    ]

    def make(todo: list[int]) -> tuple[Evidence, ...]:
        return verify.verify_evidence(
            [load(files[i]) for i in todo],
            trust_roots=trust_root,
            policy=policy,
            current_digests={},
            jobs=jobs,
        )

    records = cache.get_or_make_many(VERIFY_STAGE, parts, make)
    keys = tuple(cache.key(VERIFY_STAGE, "", *p) for p in parts)
    return verify.with_current_digests(records, current_digests), keys


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
