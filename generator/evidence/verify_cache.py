"""Verification through the build cache: a file verified once is not verified again.

The verify stage's key parts: the file (its path, its location below the evidence root, its
bytes), the trust root, the signer policy and the verifier's code. A record is cached as
verified *before* staleness is judged (no current digests); `with_current_digests` then judges
every record against this build's recipes, so a changed recipe never needs a re-verification.
The cache authenticates its entries (HMAC with this machine's key): a cached "verified" cannot
be planted by writing to `.cache/`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence

from generator.core.cache import Cache, fingerprint
from generator.evidence import verify
from generator.evidence.model import Evidence, EvidenceFile, SignerPolicy, TrustRoot

VERIFY_STAGE = "verify"


def verify_cached(
    files: Sequence[EvidenceFile],
    *,
    trust_root: TrustRoot,
    policy: SignerPolicy,
    current_digests: Mapping[str, str],
    cache: Cache,
    jobs: int | None = None,
) -> tuple[Evidence, ...]:
    """`verify.verify_evidence`, verifying only the files the cache has not seen."""
    fp = fingerprint("evidence", "core/records.py", "core/canonical.py", "fast")
    policy_digest = hashlib.sha256(repr(policy).encode()).hexdigest()
    parts = [
        (
            fp,
            f.path,
            f.location or "",  # the path check judges the location below the evidence root
            hashlib.sha256(f.data).hexdigest(),
            trust_root.sha256,
            policy_digest,
        )
        for f in files
    ]

    def make(todo: list[int]) -> tuple[Evidence, ...]:
        return verify.verify_evidence(
            [files[i] for i in todo],
            trust_roots=trust_root,
            policy=policy,
            current_digests={},
            jobs=jobs,
        )

    records = cache.get_or_make_many(VERIFY_STAGE, parts, make)
    return verify.with_current_digests(records, current_digests)
