"""The verify stage in one call: `verify_stage(paths, ...)` -> `VerificationRun`.

`evidence verify`/`show`, `status`, `build` and `validate --evidence` all verify through this
function; they differ only in what they pass:

- **current digests.** `status` and `build` know the recipes in scope and pass their digests
  (`current`, keyed by `digest_key`); a statement for a recipe outside them is stale. The CLI
  passes none: the catalog is loaded when a statement verified, and exactly the
  (recipe, profile) pairs the verified statements name are resolved (`resolve_current`).
- **claims.** With `claims` (a function giving the catalog's lanes), every current
  scale-qualification statement is judged again (`judge_claims`): a signed verdict or KPI status
  its raw results do not give, or an attestedAt later than the transparency log's time, makes it
  a rejected record (`verdict-mismatch`, `attested-after-logged`). `status` and `build` leave
  that to `aggregate`, which judges the same rules per run and explains them in its own words.
- **signer policy.** The catalog's signers.yaml as `load` read it when a loaded catalog is given
  (else read from `catalog_dir`), plus upstream's allowlist.yaml when one is given or found under
  `allowlists_under` (default: the paths).
- **upstream pointers** (`generator.evidence.upstream`) are followed with `upstream` (the CLI's
  flags; `status` and `build` pass `options_from_env(online)`): from the cache only unless
  `online`.
- **cache.** `build` passes its `generator.core.cache.Cache`: files it has verified before
  (same path, bytes, trust root and policy) are not verified again, and files whose stat is
  the one an earlier build read them at are not read again (`store.FileMemo`).

It is the only function of the stage that reads files; `verify.verify_evidence` stays a pure
function of its inputs. Layering: this module imports nothing from `generator.scale` (the lanes
parser is handed in as `claims`), so the scale stage may call it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from generator.catalog.lanes import Lanes
from generator.core import safeio
from generator.core.errors import CatalogError, ValidationError
from generator.core.records import DEFAULT_PROFILE, Catalog, RecipeResult
from generator.evidence.judge import Judge, attested_after_logged
from generator.evidence.model import (
    Evidence,
    FailureClass,
    FoundFile,
    RejectedEvidence,
    SignerPolicy,
    TrustRoot,
    VerifiedEvidence,
    digest_key,
    with_current_digests,
)
from generator.evidence.pointer import in_tree, is_pointer_name
from generator.evidence.policy import policy_from
from generator.evidence.store import TREE_SUFFIXES, find_files, load
from generator.evidence.trustroot import PUBLIC_GOOD, load_trust_root
from generator.evidence.upstream import (
    SIGNERS_FILE,
    UpstreamOptions,
    cache_for,
    is_upstream,
    judge,
    load_policy,
    upstream_digests,
    verify_pointers,
)
from generator.evidence.verify_cache import Records

if TYPE_CHECKING:
    from generator.core.cache import Cache


@dataclass(frozen=True, slots=True)
class VerificationRun:
    """What the verify stage gave: one record per evidence file or pointer file."""

    trust_roots: tuple[TrustRoot, ...]
    # the bundles in the order they were read, then the pointer files by path (`by_path()`
    # sorts them all); each directory's read when first used, each one's path, recipe,
    # profile and key at hand unread (`verify_cache.Records`: `records.path(i)`)
    records: Records
    files: tuple[FoundFile, ...]  # the bundles as found, for raw downloads
    pointers: tuple[str, ...] = ()  # paths of the records that came from pointer files
    # the verify stage's key of each record ("": not verified through the cache, as a pointer
    # file's record): equal keys, equal records before staleness is judged
    keys: tuple[str, ...] = ()
    read: int = 0  # bundles whose bytes were read (the others' digests came from the stat memo)

    def by_path(self) -> tuple[Evidence, ...]:
        return tuple(sorted(self.records, key=lambda r: r.path))

    @property
    def trust_root(self) -> str:
        """The roots' names, as outputs show them (`demo`, `public-good, demo`)."""
        return ", ".join(r.name for r in self.trust_roots)

    @property
    def demo_roots(self) -> frozenset[str]:
        return frozenset(r.name for r in self.trust_roots if r.demo)


# -- the signer policy --------------------------------------------------------------------------


def signer_policy(
    catalog_dir: Path,
    catalog: Catalog | None = None,
    allowlists_under: Iterable[Path] = (),
    allowlist: Path | None = None,
) -> SignerPolicy:
    """signers.yaml (as `load` read it when `catalog` is given, else from `catalog_dir`), with
    upstream's allowlist.yaml given or found under `allowlists_under`. Raises ValidationError."""
    doc = catalog.documents.get(SIGNERS_FILE) if catalog is not None else None
    signers: SignerPolicy | None = None
    if doc is not None:
        signers, diags = policy_from(doc)
        if diags:
            raise ValidationError(f"the signer policy {SIGNERS_FILE} is invalid", diags)
    extra = (allowlist,) if allowlist else ()
    return load_policy(catalog_dir, allowlists_under, extra, signers=signers)


# -- currency and claims ------------------------------------------------------------------------


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


def _claim_problem(
    r: VerifiedEvidence, judge_: Judge, current: Mapping[str, RecipeResult]
) -> tuple[FailureClass, str] | None:
    late = attested_after_logged(r.statement.attested_at, r.integrated_time)
    if late is not None:
        return FailureClass.ATTESTED_AFTER_LOGGED, late
    recipe = current.get(digest_key(r.recipe, r.profile or DEFAULT_PROFILE))
    if recipe is None:
        return None
    pins = {c.name: c.version for c in recipe.components}
    judged = judge_(r.statement, recipe.criteria, pins)
    if judged is not None and not judged.consistent:
        return FailureClass.VERDICT_MISMATCH, judged.explain()
    return None


def _rejected(r: VerifiedEvidence, klass: FailureClass, message: str) -> RejectedEvidence:
    return RejectedEvidence(
        path=r.path,
        klass=klass,
        message=message,
        statement_digest=r.statement_digest,
        statement=r.statement,
        signer_identity=r.signer_identity,
        signer_issuer=r.signer_issuer,
        trust_root=r.trust_root,
        log_index=r.log_index,
        integrated_time=r.integrated_time,
    )


def judge_claims(
    records: Iterable[Evidence], lanes: Lanes, current: Mapping[str, RecipeResult]
) -> tuple[Evidence, ...]:
    """The records with every current verified statement whose claims do not hold turned into
    a rejected record naming why (see the module)."""
    judge_ = Judge(lanes)
    out: list[Evidence] = []
    for r in records:
        if isinstance(r, VerifiedEvidence) and not r.stale:
            problem = _claim_problem(r, judge_, current)
            if problem is not None:
                r = _rejected(r, *problem)
        out.append(r)
    return tuple(out)


# -- the stage ----------------------------------------------------------------------------------


def _trust_roots(
    specs: Sequence[str], catalog_dir: Path, cache: Cache | None
) -> tuple[TrustRoot, ...]:
    """Each `--trust-root` loaded; with a cache, a root sigstore parsed in an earlier build
    (the same bytes) is not parsed again (`verify_cache.parsed_roots`)."""
    if cache is None:
        return tuple(load_trust_root(spec, catalog_dir) for spec in specs)
    from generator.evidence.verify_cache import keep_parsed_roots, parsed_roots

    before = parsed_roots(cache)
    roots = tuple(load_trust_root(spec, catalog_dir, parsed=before) for spec in specs)
    keep_parsed_roots(cache, before, roots)
    return roots


def _read_bundles(
    paths: Sequence[Path], base: Path | None, root: Path | None, cache: Cache | None
) -> tuple[FoundFile, ...]:
    """The bundles under `paths`: with a cache, those unchanged since an earlier build are not
    read (their stat memo vouches for their digest, `store.FileMemo`)."""
    # a pointer file given by name is read as a pointer, not as a bundle
    bundles = [p for p in paths if not (safeio.is_file(p) and is_pointer_name(p.name))]
    if not bundles:
        return ()
    if cache is None:
        return find_files(bundles, base, root)
    from generator.evidence.verify_cache import file_memo, keep_file_memo

    memo = file_memo(cache, bundles)
    files = find_files(bundles, base, root, memo)
    keep_file_memo(cache, bundles, memo)
    return files


def _evidence_tree(
    paths: Sequence[Path], root: Path | None, cache: Cache | None, roots: tuple[TrustRoot, ...]
) -> safeio.Tree | None:
    """The walk of the evidence root when the stage verifies the whole of it through the cache
    with one trust root (`verify_cache.verify_tree`, at the grain of a directory): the one the
    build key took (`Cache.take_walk`), else taken now; None otherwise (file by file)."""
    if cache is None or len(roots) != 1 or root is None or len(paths) != 1 or os.sep != "/":
        return None
    top = paths[0]
    if safeio.abspath(top) != safeio.abspath(root) or not safeio.is_dir(top):
        return None
    held = cache.take_walk(top, TREE_SUFFIXES)
    return held if held is not None else safeio.walk(top, suffixes=TREE_SUFFIXES)


def _bundles(
    paths: Sequence[Path],
    tree: safeio.Tree | None,
    roots: tuple[TrustRoot, ...],
    policy: SignerPolicy,
    current: Mapping[str, str],
    base: Path | None,
    root: Path | None,
    cache: Cache | None,
    jobs: int | None,
    sweep: bool,
) -> tuple[tuple[FoundFile, ...], Records, tuple[str, ...]]:
    """The bundles found, their records and their keys: at the grain of a directory when the
    stage has the walk of the whole evidence root (`_evidence_tree`), else file by file."""
    if tree is None:
        files = _read_bundles(paths, base, root, cache)
        records, keys = _verify_files(files, roots, policy, current, jobs, cache, sweep)
        return files, records, keys
    assert cache is not None and root is not None
    from generator.evidence.verify_cache import verify_tree

    return verify_tree(
        tree,
        root=root,
        base=base,
        trust_root=roots[0],
        policy=policy,
        current_digests=current,
        cache=cache,
        jobs=jobs,
        sweep=sweep,
    )


def _verify_files(
    files: Sequence[FoundFile],
    roots: tuple[TrustRoot, ...],
    policy: SignerPolicy,
    current: Mapping[str, str],
    jobs: int | None,
    cache: Cache | None,
    sweep: bool = False,
) -> tuple[Records, tuple[str, ...]]:
    """Each file's record, and the key of its verification ("" each without the cache)."""
    if cache is not None and len(roots) == 1:
        from generator.evidence.verify_cache import verify_cached

        return verify_cached(
            files,
            trust_root=roots[0],
            policy=policy,
            current_digests=current,
            cache=cache,
            jobs=jobs,
            sweep=sweep,
        )
    from generator.evidence.verify import verify_evidence  # sigstore: when files are verified

    records = verify_evidence(
        [load(f) for f in files],
        trust_roots=roots,
        policy=policy,
        current_digests=current,
        jobs=jobs,
    )
    return Records.held(records), ("",) * len(records)


def _judge_against_catalog(
    records: tuple[Evidence, ...],
    pointed: tuple[Evidence, ...],
    catalog: Catalog,
    upstream: Mapping[str, str],
    claims: Callable[[Catalog], Lanes] | None,
) -> tuple[tuple[Evidence, ...], tuple[Evidence, ...]]:
    """Currency from the pairs the statements name, then (with `claims`) the claims."""
    current = resolve_current([*records, *(r for r in pointed if not is_upstream(r))], catalog)
    digests = {k: r.digest for k, r in current.items()}
    records = with_current_digests(records, digests)
    pointed = judge(pointed, digests, upstream)
    if claims is not None:
        try:
            lanes = claims(catalog)
        except CatalogError:  # a catalog without lanes judges no claims
            return records, pointed
        records = judge_claims(records, lanes, current)
        pointed = judge_claims(pointed, lanes, current)
    return records, pointed


def _judge_current(
    records: Records,
    pointed: tuple[Evidence, ...],
    current: Mapping[str, str] | None,
    upstream_current: Mapping[str, str],
    catalog: Catalog | None,
    catalog_dir: Path,
    claims: Callable[[Catalog], Lanes] | None,
) -> tuple[Records, tuple[Evidence, ...]]:
    """Each verified record judged current: against `current` when given (pointers only; the
    files were judged while verified, and are not read here), else against the recipes the
    statements name (every record read)."""
    if current is not None:
        return records, judge(pointed, current, upstream_current)
    if any(isinstance(r, VerifiedEvidence) for r in (*records, *pointed)):
        if catalog is None:
            from generator.catalog.load import load_catalog

            catalog, _ = load_catalog(catalog_dir)
        keys = [records.key(i) for i in range(len(records))]
        judged, pointed = _judge_against_catalog(
            tuple(records), pointed, catalog, upstream_current, claims
        )
        return Records.held(judged, keys), pointed
    return records, pointed


def verify_stage(
    paths: Sequence[Path],
    *,
    catalog_dir: Path,
    trust_roots: Sequence[str] = (PUBLIC_GOOD,),
    catalog: Catalog | None = None,
    current: Mapping[str, str] | None = None,
    claims: Callable[[Catalog], Lanes] | None = None,
    allowlists_under: Sequence[Path] | None = None,
    upstream: UpstreamOptions | None = None,
    jobs: int | None = None,
    base: Path | None = None,
    cache: Cache | None = None,
    evidence_root: Path | None = None,
    sweep: bool = False,
) -> VerificationRun:
    """Verify the evidence files and pointer files under `paths` (files or directories).

    `catalog_dir` holds signers.yaml and the demo trust root; `catalog` (loaded from it on
    demand when `current` is None and a statement verified) resolves the current recipes.
    `current`: the current digests by `digest_key` (None: those the statements name, see the
    module); `claims` (only without `current`) judges what current statements claim. Paths in
    the records are relative to `base` (default: the working directory). `jobs`: processes
    (default: every core). `cache`: a build cache (used with one trust root only).
    `evidence_root`: the evidence directory the files are stored under (`status --evidence DIR`).
    `sweep`: `paths` are the whole evidence tree, so the cache's per-directory entries this
    call did not use are deleted when the build finishes (`verify_cache.verify_cached`).
    Raises UsageError (trust roots), ValidationError (signer policy), LoadError (files).
    """
    if claims is not None and current is not None:
        raise ValueError("claims are judged against the recipes the statements name: no current")
    roots = _trust_roots(trust_roots, catalog_dir, cache)
    up = upstream or UpstreamOptions()
    search = paths if allowlists_under is None else allowlists_under
    policy = signer_policy(catalog_dir, catalog, search, up.allowlist)
    tree = _evidence_tree(paths, evidence_root, cache, roots)
    files, records, keys = _bundles(
        paths, tree, roots, policy, current or {}, base, evidence_root, cache, jobs, sweep
    )
    pointed = verify_pointers(
        in_tree(tree, cache) if tree is not None else paths,  # the walk's: found once a walk
        trust_roots=roots,
        policy=policy,
        cache=cache_for(up.cache),
        online=up.online,
        allow_tag=up.allow_tag,
        base=base,
    )
    upstream_current = upstream_digests(up.recipes) if pointed else {}
    records, pointed = _judge_current(
        records, pointed, current, upstream_current, catalog, catalog_dir, claims
    )
    return VerificationRun(
        trust_roots=roots,
        records=records.plus(pointed),
        files=files,
        pointers=tuple(r.path for r in pointed),
        keys=(*keys, *("",) * len(pointed)),
        read=sum(1 for f in files if f.data is not None),
    )
