"""`evidence push`: this catalog's signed bundles as OCI artifacts, with upstream-shaped pointers.

Each bundle that verifies offline (any signer the policy allows; stale is fine: currency is
judged when the pointer is read) is pushed to `REGISTRY/REPO` as an OCI 1.1 artifact:

    artifactType  application/vnd.aicr-catalog.evidence.v1
    config        the empty descriptor ({})
    layers        [the .sigstore.json, mediaType application/vnd.dev.sigstore.bundle.v0.3+json,
                   titled <sha256-of-statement>.sigstore.json]

and a pointer is written to `<pointers>/<recipe>/<source>/sha256-<manifest hex>.yaml` in upstream's
schema 1.0 (bundle.oci = REGISTRY/REPO, bundle.digest = the manifest digest, the predicate type,
the signer's identity/issuer/rekorLogIndex, attestedAt). What was pushed is also written into the
content-addressed cache, so reading the pointers needs no network afterwards. Files that do not
verify are not pushed; they are returned with the reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from generator.core.atomic import write_atomic
from generator.core.net import Client
from generator.core.timeutil import rfc3339
from generator.evidence import oci
from generator.evidence.model import Evidence, SignerPolicy, TrustRoot, VerifiedEvidence
from generator.evidence.pointer import render_pointer
from generator.evidence.store import read_files
from generator.evidence.verify import verify_evidence

RECIPE_ANNOTATION = "run.aicr.catalog.recipe"


@dataclass(frozen=True, slots=True)
class PushOutcome:
    path: str
    pushed: oci.Pushed | None
    pointer: Path | None
    problem: str | None = None


def _attested_at(r: VerifiedEvidence) -> str:
    if r.statement.attested_at:
        return r.statement.attested_at
    if r.integrated_time is not None:
        return rfc3339(r.integrated_time)
    return "1970-01-01T00:00:00Z"


def _push_one(
    reg: oci.Registry,
    target: oci.Reference,
    r: VerifiedEvidence,
    data: bytes,
    cache: oci.Cache,
    pointers: Path,
) -> PushOutcome:
    """One verified bundle pushed, the cache seeded with it, its pointer written."""
    title = r.statement_digest.removeprefix("sha256:") + ".sigstore.json"
    pushed = oci.push_artifact(
        reg,
        target,
        artifact_type=oci.CATALOG_ARTIFACT_TYPE,
        layers=[(oci.SIGSTORE_BUNDLE_MEDIA_TYPE, data, {oci.TITLE: title})],
        annotations={RECIPE_ANNOTATION: r.recipe},
    )
    # seed the cache with exactly what was pushed (checked by digest when read)
    manifest, _, _ = reg.get_manifest(target.repository, pushed.digest)
    cache.put(pushed.digest, manifest)
    cache.put(oci.sha256_digest(data), data)
    cache.put_referrers(pushed.digest, [])
    pointer = render_pointer(
        recipe=r.recipe,
        profile=None,
        oci=target.name,
        digest=pushed.digest,
        predicate_type=r.statement.predicate_type,
        identity=r.signer_identity,
        issuer=r.signer_issuer,
        rekor_log_index=r.log_index,
        attested_at=_attested_at(r),
    )
    where = pointers / r.recipe / r.source / (pushed.digest.replace(":", "-") + ".yaml")
    # a path anyone can predict: no link planted below --pointers is followed (core/atomic.py)
    write_atomic(where, pointer, root=pointers)
    return PushOutcome(r.path, pushed, where)


def push_evidence(
    paths: Sequence[Path],
    *,
    to: str,
    pointers: Path,
    trust_roots: Sequence[TrustRoot],
    policy: SignerPolicy,
    cache: oci.Cache,
    client: Client | None = None,
    registry: oci.Registry | None = None,
    base: Path | None = None,
) -> list[PushOutcome]:
    """Push every verified bundle under `paths`; raise RegistryError at the first registry failure."""
    target = oci.parse_reference(to)
    if target.tag or target.digest:
        raise oci.InvalidReference(
            f"{to}: give REGISTRY/REPO only; each bundle is addressed by its own digest", to
        )
    files = read_files(paths, base)
    by_path = {f.path: f for f in files}
    records: tuple[Evidence, ...] = verify_evidence(
        files, trust_roots=trust_roots, policy=policy, current_digests={}, jobs=1
    )
    reg = registry or oci.Registry.for_reference(target, client=client or Client.off("push"))
    out: list[PushOutcome] = []
    for r in sorted(records, key=lambda r: r.path):
        if not isinstance(r, VerifiedEvidence):
            out.append(PushOutcome(r.path, None, None, f"not pushed: {r.message} [{r.klass}]"))
            continue
        out.append(_push_one(reg, target, r, by_path[r.path].data, cache, pointers))
    return out
