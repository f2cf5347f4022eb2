"""Upstream AICR's evidence flow inside this catalog's evidence stage.

`verify_pointers(paths, ...)` finds pointer files (`<recipe>/<source>/sha256-<hex>.yaml`, see
`generator.evidence.pointer`) under the given paths, pulls each pointed-to artifact by digest
(`generator.evidence.oci`: from the cache first; the network only when `online`, through one
`generator.core.net.Client` for the run), verifies it and
returns one `VerifiedEvidence | RejectedEvidence` per pointer, with the pointer's path:

- an upstream summary bundle (a tar layer with manifest.json + recipe.yaml) is verified by
  `generator.evidence.summary` (signature, manifest, predicate, CTRF);
- this catalog's own bundle pushed with `evidence push` (one `.sigstore.json` layer) is verified
  exactly as a file under evidence/ is.

Then the pointer itself must agree with what was verified: its signer is the certificate's
identity and issuer, its recipe, profile and predicateType are the statement's, and it sits at
`<recipe>/<source>/<digest>.yaml` for that signer. Upstream evidence is current when its
`recipe.digest` is upstream's digest of the current hydrated recipe (`upstream_digests`, from
`--upstream-recipes DIR` holding `<recipe>.yaml` as upstream `aicr recipe` writes them);
this catalog's pushed evidence is judged against this catalog's digests, as always.

`load_policy(catalog_dir, roots)` is signers.yaml plus every upstream allowlist.yaml found
(`<dir>/allowlist.yaml` or `<dir>/recipes/evidence/allowlist.yaml` of a given directory).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from generator.core import envvars, safeio
from generator.core.errors import Diagnostic, ValidationError
from generator.core.net import Client
from generator.evidence import oci
from generator.evidence.model import (
    RECIPE_EVIDENCE_V3,
    UPSTREAM_PREDICATE_TYPES,
    Evidence,
    FailureClass,
    RejectedEvidence,
    SignerPolicy,
    Statement,
    TrustRoot,
    VerifiedEvidence,
)
from generator.evidence.pointer import (
    Pointer,
    discover,
    is_pointer_name,
    location_problem,
    parse_pointer,
)
from generator.evidence.recipedigest import DigestError, recipe_digest
from generator.evidence.store import SUFFIX, Found, display_path, read_one

if TYPE_CHECKING:  # sigstore: imported when a pointer is verified, not to key a build (state_key)
    from generator.evidence.verify import SignatureCheck

SIGNERS_FILE = "signers.yaml"
CACHE_ENV = "AICR_CATALOG_OCI_CACHE"


@dataclass(frozen=True, slots=True)
class UpstreamOptions:
    """How pointer files are followed: the cache, network or not, tags, the allowlist, the
    hydrated upstream recipes the currency of upstream evidence is judged against."""

    cache: Path | None = None  # default: $AICR_CATALOG_OCI_CACHE, else ~/.cache/aicr-catalog/oci
    online: bool = False  # the network only when the command's user asked for it (--online)
    allow_tag: bool = False
    allowlist: Path | None = None
    recipes: Path | None = None


def cache_for(path: Path | None) -> oci.Cache:
    if path is not None:
        return oci.Cache(path)
    env = envvars.get(CACHE_ENV)
    return oci.Cache(Path(env) if env else oci.default_cache_dir())


def allowlists(paths: Iterable[Path]) -> list[Path]:
    from generator.evidence.allowlist import ALLOWLIST_FILE

    out: list[Path] = []
    for p in paths:
        if safeio.is_file(p) and p.name == ALLOWLIST_FILE:
            out.append(p)
            continue
        if safeio.is_file(p) and is_pointer_name(p.name) and len(p.parents) > 3:
            p = p.parents[2]  # <root>/<recipe>/<source>/<file>: the allowlist sits in <root>
        if not safeio.is_dir(p):
            continue
        for candidate in (p / ALLOWLIST_FILE, p / "recipes" / "evidence" / ALLOWLIST_FILE):
            if safeio.is_file(candidate) and candidate not in out:
                out.append(candidate)
    return out


def load_policy(
    catalog_dir: Path,
    paths: Iterable[Path] = (),
    extra: Sequence[Path] = (),
    signers: SignerPolicy | None = None,
) -> SignerPolicy:
    """signers.yaml (`signers` when the caller holds it already), combined with the
    allowlist.yaml files given or found under `paths`."""
    policy = signers if signers is not None else _read_signers(catalog_dir)
    given = {safeio.resolve(p) for p in extra}
    files = list(extra) + [p for p in allowlists(paths) if safeio.resolve(p) not in given]
    if len(files) > 1:
        raise ValidationError(
            "more than one upstream allowlist found",
            [
                Diagnostic(
                    display_path(f), 0, 0, "$", "one allowlist.yaml per run", "allowlist.many"
                )
                for f in files
            ],
        )
    if not files:
        return policy
    from generator.evidence.allowlist import combine, read_allowlist

    shown = display_path(files[0])
    rules, slugs = read_allowlist(files[0], shown)
    return combine(policy, rules, slugs, shown)


def _read_signers(catalog_dir: Path) -> SignerPolicy:
    from generator.evidence.policy import read_policy  # jsonschema: not to key a build

    signers = catalog_dir / SIGNERS_FILE
    # a tree without this project's signers.yaml (upstream AICR's recipes/): only the allowlist
    if safeio.exists(signers) or safeio.is_link(signers):
        return read_policy(signers, SIGNERS_FILE)
    return SignerPolicy(rules=())


def upstream_digests(directory: Path | None) -> dict[str, str]:
    """`<recipe>` -> `sha256:<hex>` upstream v3 digest of each `<recipe>.yaml` in `directory`."""
    if directory is None:
        return {}
    out: dict[str, str] = {}
    if not safeio.is_dir(directory):
        return out
    for f in (Path(e.path) for e in safeio.listdir(directory) if e.name.endswith(".yaml")):
        try:
            raw = safeio.read(f, root=directory, where="the upstream recipes directory")
            out[f.stem] = "sha256:" + recipe_digest(raw, RECIPE_EVIDENCE_V3)
        except (safeio.Refusal, DigestError):
            continue  # not a recipe: its evidence stays stale, with the reason shown
    return out


def _reject(
    pointer_path: str,
    klass: FailureClass,
    message: str,
    sig: SignatureCheck | None = None,
    statement: Statement | None = None,
) -> RejectedEvidence:
    return RejectedEvidence(
        path=pointer_path,
        klass=klass,
        message=message,
        statement_digest=("sha256:" + hashlib.sha256(sig.payload).hexdigest())
        if sig and sig.payload
        else None,
        statement=statement,
        signer_identity=(sig.identity or None) if sig else None,
        signer_issuer=(sig.issuer or None) if sig else None,
        trust_root=sig.trust_root if sig else None,
        log_index=sig.log_index if sig else None,
        integrated_time=sig.integrated_time if sig else None,
    )


def _disagreement(p: Pointer, sig: SignatureCheck, st: Statement) -> str | None:
    if (p.identity, p.issuer) != (sig.identity, sig.issuer):
        return (
            f"pointer names signer {p.identity} via {p.issuer}, the certificate says "
            f"{sig.identity} via {sig.issuer}"
        )
    if p.recipe != st.recipe:
        return f"pointer is for recipe {p.recipe}, the statement for {st.recipe}"
    if p.predicate_type != st.predicate_type:
        return f"pointer says predicateType {p.predicate_type}, the statement {st.predicate_type}"
    if st.predicate_type in UPSTREAM_PREDICATE_TYPES and (p.profile or None) != (
        st.scale_profile or None
    ):
        return f"pointer profile {p.profile!r} is not the predicate's {st.scale_profile!r}"
    return None


def _read_pointer(pointer_path: Path, shown: str) -> Pointer | RejectedEvidence:
    """The pointer file parsed and where it sits checked, or why it is not a pointer."""
    raw, problem = read_one(Found(pointer_path, pointer_path.parent, pointer_path.name), shown)
    if problem is not None or raw is None:
        return _reject(
            shown, FailureClass.POINTER_INVALID, problem.message if problem else "unreadable"
        )
    p, diags = parse_pointer(raw, shown)
    if p is None:
        return _reject(shown, FailureClass.POINTER_INVALID, "; ".join(d.format() for d in diags))
    where = location_problem(p, shown)
    if where is not None:
        return _reject(shown, FailureClass.POINTER_INVALID, where)
    return p


def _pull(p: Pointer, shown: str, how: _Pulling) -> oci.Pulled | RejectedEvidence:
    try:
        return oci.pull(
            p.oci,
            cache=how.cache,
            client=how.client,
            allow_tag=how.allow_tag,
            expect_digest=p.digest,
            registry=how.registry,
        )
    except oci.DigestMismatch as e:
        return _reject(shown, FailureClass.BUNDLE_INVALID, f"{e.message} [{e.rule}]")
    except oci.RegistryError as e:
        return _reject(shown, FailureClass.BUNDLE_UNAVAILABLE, f"{e.message} [{e.rule}]")


def _one_bundle(
    shown: str,
    pulled: oci.Pulled,
    files: Mapping[str, bytes],
    trust_roots: Sequence[TrustRoot],
    policy: SignerPolicy,
) -> tuple[SignatureCheck, Statement] | RejectedEvidence:
    """This catalog's own bundle, pushed with `evidence push`: one .sigstore.json layer named
    after its statement's sha256, verified as a file under evidence/ is."""
    bundles = [name for name in files if name.endswith(SUFFIX)]
    if len(files) != 1 or len(bundles) != 1:
        return _reject(
            shown,
            FailureClass.BUNDLE_INVALID,
            f"{pulled.reference} is neither an upstream summary bundle (manifest.json + recipe.yaml) "
            f"nor one {SUFFIX} file: it holds {', '.join(sorted(files)) or 'nothing'}",
        )
    from generator.evidence.verify import check_signature

    sig = check_signature(files[bundles[0]], trust_roots, policy)
    if sig.klass is not None:
        return _reject(shown, sig.klass, sig.message, sig)
    if sig.statement is None:
        assert sig.statement_error is not None
        return _reject(shown, sig.statement_error[0], sig.statement_error[1], sig)
    if bundles[0] != hashlib.sha256(sig.payload).hexdigest() + SUFFIX:
        return _reject(
            shown,
            FailureClass.BUNDLE_INVALID,
            f"{bundles[0]} is not named after its statement's sha256",
            sig,
            sig.statement,
        )
    return sig, sig.statement


def _verify_artifact(
    shown: str, pulled: oci.Pulled, trust_roots: Sequence[TrustRoot], policy: SignerPolicy
) -> tuple[SignatureCheck, Statement] | RejectedEvidence:
    """The pulled artifact verified: an upstream summary bundle, else one of our bundles."""
    from generator.evidence.summary import MANIFEST, RECIPE, verify_summary

    files = dict(pulled.files)
    prefix = "summary-bundle/"  # an artifact packed from the emit directory, not the bundle
    if files and all(name.startswith(prefix) for name in files):
        files = {name.removeprefix(prefix): data for name, data in files.items()}
    if not (MANIFEST in files and RECIPE in files):
        return _one_bundle(shown, pulled, files, trust_roots, policy)
    result = verify_summary(
        files,
        pulled.signatures,
        trust_roots=trust_roots,
        policy=policy,
        artifact_digest=pulled.digest,
    )
    sig, statement = result.signature, result.statement
    if result.problem is not None:
        return _reject(shown, result.problem[0], result.problem[1], sig, statement)
    assert statement is not None
    return sig, statement


@dataclass(frozen=True, slots=True)
class _Pulling:
    """How pointed-to artifacts are pulled."""

    cache: oci.Cache
    client: Client
    allow_tag: bool
    registry: oci.Registry | None


def _verify_pointer(
    pointer_path: Path,
    shown: str,
    *,
    trust_roots: Sequence[TrustRoot],
    policy: SignerPolicy,
    how: _Pulling,
) -> Evidence:
    p = _read_pointer(pointer_path, shown)
    if isinstance(p, RejectedEvidence):
        return p
    pulled = _pull(p, shown, how)
    if isinstance(pulled, RejectedEvidence):
        return pulled
    verified = _verify_artifact(shown, pulled, trust_roots, policy)
    if isinstance(verified, RejectedEvidence):
        return verified
    sig, statement = verified
    bad = _disagreement(p, sig, statement)
    if bad is not None:
        return _reject(shown, FailureClass.POINTER_INVALID, bad, sig, statement)
    if sig.rule is None or sig.log_index is None or sig.trust_root is None:
        return _reject(
            shown,
            FailureClass.SIGNER_NOT_ALLOWED,
            "the signer policy was not applied",
            sig,
            statement,
        )
    if statement.bundle_digest is None:
        statement = replace(statement, bundle_digest=pulled.digest)
    digest = "sha256:" + hashlib.sha256(sig.payload).hexdigest()
    from generator.evidence.verify import verified_record

    # stale (current None) until judged by `judge`
    return verified_record(shown, digest, statement, sig, trust_roots, None)


def verify_pointers(
    paths: Sequence[Path],
    *,
    trust_roots: Sequence[TrustRoot],
    policy: SignerPolicy,
    cache: oci.Cache,
    online: bool = False,
    allow_tag: bool = False,
    base: Path | None = None,
    registry: oci.Registry | None = None,
) -> tuple[Evidence, ...]:
    """One record per pointer file found under `paths` (sorted by path). The network (one
    `generator.core.net.Client` for them all) only when `online`; else from the cache only, and
    a pointer whose artifact is not cached is rejected as unavailable."""
    client = Client.on() if online else Client.off("pointer files are read from the cache")
    how = _Pulling(cache, client, allow_tag, registry)
    out = [
        _verify_pointer(f, display_path(f, base), trust_roots=trust_roots, policy=policy, how=how)
        for f in discover(list(paths))
    ]
    return tuple(sorted(out, key=lambda r: r.path))


def is_upstream(record: Evidence) -> bool:
    st = record.statement
    return st is not None and st.predicate_type in UPSTREAM_PREDICATE_TYPES


def judge(
    records: Iterable[Evidence], catalog_digests: Mapping[str, str], upstream: Mapping[str, str]
) -> tuple[Evidence, ...]:
    """Currency: upstream predicates against upstream's digest of the current recipe, this
    catalog's against its own digests (as `verify.with_current_digests`)."""
    from generator.evidence.model import current_digest

    out: list[Evidence] = []
    for r in records:
        if isinstance(r, VerifiedEvidence):
            current = (
                upstream.get(r.statement.recipe)
                if is_upstream(r)
                else current_digest(r.statement, catalog_digests)
            )
            r = replace(r, current_digest=current, stale=current != r.statement.recipe_digest)
        out.append(r)
    return tuple(out)


RECIPES_ENV = "AICR_CATALOG_UPSTREAM_RECIPES"


def options_from_env(online: bool = False) -> UpstreamOptions:
    """For `status` and `build`: $AICR_CATALOG_OCI_CACHE, $AICR_CATALOG_UPSTREAM_RECIPES=DIR
    (the options `evidence verify` takes as flags); the network only with `online` (the
    command's --online flag, never the environment)."""
    recipes = envvars.get(RECIPES_ENV)
    return UpstreamOptions(online=online, recipes=Path(recipes) if recipes else None)


def pointer_records(
    paths: Sequence[Path],
    *,
    trust_roots: Sequence[TrustRoot],
    policy: SignerPolicy,
    current_digests: Mapping[str, str],
    options: UpstreamOptions | None = None,
    base: Path | None = None,
) -> tuple[Evidence, ...]:
    """The records of the pointer files under `paths`, judged for currency (see `judge`)."""
    opts = options or options_from_env()
    pointed = verify_pointers(
        paths,
        trust_roots=trust_roots,
        policy=policy,
        cache=cache_for(opts.cache),
        online=opts.online,
        allow_tag=opts.allow_tag,
        base=base,
    )
    if not pointed:
        return ()
    return judge(pointed, current_digests, upstream_digests(opts.recipes))


def has_pointers(directory: Path) -> bool:
    return safeio.is_dir(directory) and any(discover([directory]))


def state_key(directory: Path, online: bool = False, pointers: Sequence[Path] | None = None) -> str:
    """What a build's pointer records depend on besides the files under `directory`: the
    options from the environment, the upstream recipes, and which pointed-to artifacts the cache
    holds (a bundle pulled since the last build changes the records, not the evidence tree).
    `pointers`: the pointer files under `directory` when the caller walked it already
    (`pointer.in_tree`); else they are found here."""
    opts = options_from_env(online)
    cache = cache_for(opts.cache)
    cached: list[str] = []
    if pointers is None:
        pointers = discover([directory]) if safeio.is_dir(directory) else []
    for f in pointers:
        try:
            p, _ = parse_pointer(safeio.read(f, root=directory, where="the evidence"), f.name)
        except safeio.Refusal:
            continue
        if (
            p is not None
            and cache.get(p.digest) is not None
            and cache.referrers(p.digest) is not None
        ):
            cached.append(p.digest)
    return json.dumps(
        {
            "online": opts.online,
            "cache": str(cache.root),
            "recipes": upstream_digests(opts.recipes),
            "cached": sorted(cached),
        },
        sort_keys=True,
        allow_nan=False,
    )


def signed_bundle(pointer_file: Path, options: UpstreamOptions | None = None) -> bytes | None:
    """The Sigstore bundle a pointer's artifact carries (its referrer, or its one .sigstore.json
    or attestation.intoto.jsonl), from the cache only: for the site's raw download of a run."""
    opts = options or options_from_env()
    try:
        p, _ = parse_pointer(safeio.read(pointer_file), pointer_file.name)
        if p is None:
            return None
        pulled = oci.pull(p.oci, cache=cache_for(opts.cache), offline=True, expect_digest=p.digest)
    except (OSError, safeio.Refusal, oci.RegistryError):
        return None
    if pulled.signatures:
        return pulled.signatures[0]
    for name in sorted(pulled.files):
        if name.endswith((SUFFIX, "attestation.intoto.jsonl")):
            return pulled.files[name]
    return None
