"""The whole evidence stage in one call, for the CLI and for later stages (status, site, release).

`verify_paths([repo/"evidence"], catalog_dir=Path("catalog"), trust_roots=("public-good", "demo"))`
reads the files, the signer policy and the trust roots, verifies every bundle, resolves the
recipes the verified statements name and marks stale evidence, then judges what each current
scale-qualification statement claims (`judge_claims`): a signed verdict or KPI status that is not
the one its raw results give under the catalog's lane criteria, or an attestedAt later than the
transparency log's time, makes it a rejected record (`verdict-mismatch`, `attested-after-logged`),
as `status`, the site and `release` judge it. It is the only function of the stage that reads
files; `verify.verify_evidence` stays a pure function of its inputs. Upstream pointer files found under the same paths are followed too (`generator.evidence.upstream`: the
pointed-to bundle is pulled by digest, cache first), with upstream's allowlist.yaml as part of
the signer policy.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from generator.core.errors import CatalogError
from generator.core.records import DEFAULT_PROFILE, Catalog, RecipeResult
from generator.evidence.judge import Judge, attested_after_logged
from generator.evidence.model import (
    Evidence,
    EvidenceFile,
    FailureClass,
    RejectedEvidence,
    TrustRoot,
    VerifiedEvidence,
)
from generator.evidence.pointer import is_pointer_name
from generator.evidence.store import read_files
from generator.evidence.trustroot import PUBLIC_GOOD, load_trust_root
from generator.evidence.upstream import (
    UpstreamOptions,
    cache_for,
    is_upstream,
    judge,
    load_policy,
    upstream_digests,
    verify_pointers,
)
from generator.evidence.verify import (
    digest_key,
    verify_evidence,
    with_current_digests,
)

SIGNERS_FILE = "signers.yaml"


@dataclass(frozen=True, slots=True)
class EvidenceRun:
    """The result of verifying a set of evidence files."""

    trust_roots: tuple[TrustRoot, ...]
    records: tuple[Evidence, ...]  # sorted by path
    files: tuple[EvidenceFile, ...]  # as read, for raw downloads


def resolve_current(records: Iterable[Evidence], catalog: Catalog) -> dict[str, RecipeResult]:
    """`<recipe>@<profile>` -> the current resolved recipe, for every pair the verified
    statements name. A recipe or profile that no longer resolves gets no entry."""
    from generator.catalog.resolve import resolve

    wanted = sorted(
        {
            (r.statement.recipe, r.statement.scale_profile or DEFAULT_PROFILE)
            for r in records
            if isinstance(r, VerifiedEvidence)
        }
    )
    out: dict[str, RecipeResult] = {}
    for recipe, profile in wanted:
        try:
            out[digest_key(recipe, profile)] = resolve(catalog, recipe, profile=profile)
        except CatalogError:
            continue
    return out


def current_digests(records: Iterable[Evidence], catalog: Catalog) -> dict[str, str]:
    """`<recipe>@<profile>` -> digest for every pair the verified statements name.

    A recipe or profile that no longer resolves gets no entry: its evidence is stale.
    """
    return {k: r.digest for k, r in resolve_current(records, catalog).items()}


def judge_claims(
    records: Iterable[Evidence], catalog: Catalog, current: Mapping[str, RecipeResult]
) -> tuple[Evidence, ...]:
    """The records with every current verified statement whose claims do not hold turned into
    a rejected record naming why (see the module). A catalog without lanes judges none."""
    from generator.scale.qualify import lanes_of

    records = tuple(records)
    try:
        judge = Judge(lanes_of(catalog.documents))
    except CatalogError:
        return records
    out: list[Evidence] = []
    for r in records:
        problem: tuple[FailureClass, str] | None = None
        if isinstance(r, VerifiedEvidence) and not r.stale:
            late = attested_after_logged(r.statement.attested_at, r.integrated_time)
            recipe = current.get(digest_key(r.recipe, r.profile or DEFAULT_PROFILE))
            if late is not None:
                problem = (FailureClass.ATTESTED_AFTER_LOGGED, late)
            elif recipe is not None:
                pins = {c.name: c.version for c in recipe.components}
                judged = judge(r.statement, recipe.criteria, pins)
                if judged is not None and not judged.consistent:
                    problem = (FailureClass.VERDICT_MISMATCH, judged.explain())
        if problem is not None and isinstance(r, VerifiedEvidence):
            r = RejectedEvidence(
                path=r.path,
                klass=problem[0],
                message=problem[1],
                statement_digest=r.statement_digest,
                statement=r.statement,
                signer_identity=r.signer_identity,
                signer_issuer=r.signer_issuer,
                trust_root=r.trust_root,
                log_index=r.log_index,
                integrated_time=r.integrated_time,
            )
        out.append(r)
    return tuple(out)


def verify_paths(
    paths: Sequence[Path],
    *,
    catalog_dir: Path,
    trust_roots: Sequence[str] = (PUBLIC_GOOD,),
    catalog: Catalog | None = None,
    jobs: int | None = None,
    base: Path | None = None,
    upstream: UpstreamOptions | None = None,
) -> EvidenceRun:
    """Verify the evidence files under `paths` (files or directories).

    `catalog_dir` holds signers.yaml and the demo trust root; `catalog` (loaded on demand from
    `catalog_dir` when needed and not given) resolves the current recipe digests. Paths in the
    records are relative to `base` (default: the working directory).
    `upstream`: how pointer files are followed (cache, offline, tags, allowlist, the hydrated
    upstream recipes their currency is judged against); default: cache first, network allowed.
    Raises UsageError (trust roots), ValidationError (signer policy), LoadError (files).
    """
    roots = tuple(load_trust_root(spec, catalog_dir) for spec in trust_roots)
    up = upstream or UpstreamOptions()
    # signers.yaml, plus upstream's allowlist.yaml when one is given or found (one policy)
    policy = load_policy(catalog_dir, paths, (up.allowlist,) if up.allowlist else ())
    # a pointer file given by name is read as a pointer below, not as a bundle
    bundles = [p for p in paths if not (p.is_file() and is_pointer_name(p.name))]
    files = read_files(bundles, base) if bundles else ()
    records = verify_evidence(
        files, trust_roots=roots, policy=policy, current_digests={}, jobs=jobs
    )
    # upstream pointer files (recipes/evidence/<recipe>/<source>/sha256-<hex>.yaml), pulled by digest
    pointed = verify_pointers(
        paths,
        trust_roots=roots,
        policy=policy,
        cache=cache_for(up.cache),
        offline=up.offline,
        allow_tag=up.allow_tag,
        base=base,
    )
    if any(isinstance(r, VerifiedEvidence) for r in (*records, *pointed)):
        if catalog is None:
            from generator.catalog.load import load_catalog

            catalog, _ = load_catalog(catalog_dir)
        ours = [*records, *(r for r in pointed if not is_upstream(r))]
        current = resolve_current(ours, catalog)
        digests = {k: r.digest for k, r in current.items()}
        records = judge_claims(with_current_digests(records, digests), catalog, current)
        pointed = judge_claims(
            judge(pointed, digests, upstream_digests(up.recipes)), catalog, current
        )
    records = (*records, *pointed)
    return EvidenceRun(
        trust_roots=roots,
        records=tuple(sorted(records, key=lambda r: r.path)),
        files=files,
    )
