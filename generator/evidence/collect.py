"""The whole evidence stage in one call, for the CLI and for later stages (status, site, release).

`verify_paths([repo/"evidence"], catalog_dir=Path("catalog"), trust_roots=("public-good", "demo"))`
reads the files, the signer policy and the trust roots, verifies every bundle, resolves the
recipes the verified statements name and marks stale evidence. It is the only function of the
stage that reads files; `verify.verify_evidence` stays a pure function of its inputs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from generator.errors import CatalogError
from generator.evidence.model import (
    Evidence,
    EvidenceFile,
    SignerPolicy,
    TrustRoot,
    VerifiedEvidence,
)
from generator.evidence.policy import read_policy
from generator.evidence.store import read_files
from generator.evidence.trustroot import PUBLIC_GOOD, load_trust_root
from generator.evidence.verify import (
    DEFAULT_PROFILE,
    digest_key,
    verify_evidence,
    with_current_digests,
)
from generator.records import Catalog

SIGNERS_FILE = "signers.yaml"


@dataclass(frozen=True, slots=True)
class EvidenceRun:
    """The result of verifying a set of evidence files."""

    trust_roots: tuple[TrustRoot, ...]
    records: tuple[Evidence, ...]  # sorted by path
    files: tuple[EvidenceFile, ...]  # as read, for raw downloads


def current_digests(records: Iterable[Evidence], catalog: Catalog) -> dict[str, str]:
    """`<recipe>@<profile>` -> digest for every pair the verified statements name.

    A recipe or profile that no longer resolves gets no entry: its evidence is stale.
    """
    from generator.resolve import resolve

    wanted = sorted(
        {
            (r.statement.recipe, r.statement.scale_profile or DEFAULT_PROFILE)
            for r in records
            if isinstance(r, VerifiedEvidence)
        }
    )
    digests: dict[str, str] = {}
    for recipe, profile in wanted:
        try:
            result = resolve(catalog, recipe, profile=profile)
        except CatalogError:
            continue
        digests[digest_key(recipe, profile)] = result.digest
    return digests


def verify_paths(
    paths: Sequence[Path],
    *,
    catalog_dir: Path,
    trust_roots: Sequence[str] = (PUBLIC_GOOD,),
    catalog: Catalog | None = None,
    jobs: int | None = None,
    base: Path | None = None,
) -> EvidenceRun:
    """Verify the evidence files under `paths` (files or directories).

    `catalog_dir` holds signers.yaml and the demo trust root; `catalog` (loaded on demand from
    `catalog_dir` when needed and not given) resolves the current recipe digests. Paths in the
    records are relative to `base` (default: the working directory).
    Raises UsageError (trust roots), ValidationError (signer policy), LoadError (files).
    """
    roots = tuple(load_trust_root(spec, catalog_dir) for spec in trust_roots)
    signers = catalog_dir / SIGNERS_FILE
    # a tree without this project's signers.yaml (upstream AICR's recipes/): nobody is allowed
    policy = (
        read_policy(signers, SIGNERS_FILE)
        if signers.exists() or signers.is_symlink()
        else SignerPolicy(rules=())
    )
    files = read_files(paths, base)
    records = verify_evidence(
        files, trust_roots=roots, policy=policy, current_digests={}, jobs=jobs
    )
    if any(isinstance(r, VerifiedEvidence) for r in records):
        if catalog is None:
            from generator.load import load_catalog

            catalog, _ = load_catalog(catalog_dir)
        records = with_current_digests(records, current_digests(records, catalog))
    return EvidenceRun(
        trust_roots=roots,
        records=tuple(sorted(records, key=lambda r: r.path)),
        files=files,
    )
