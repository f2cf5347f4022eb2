"""Signing evidence statements: Sigstore keyless (CI), or offline with the demo trust root.

- `sign_keyless` is Sigstore's keyless flow through sigstore-python's public API: an ambient
  OIDC identity token (as a CI job has: GitHub Actions, GitLab, Buildkite, ... detected by
  `sigstore.oidc.detect_credential`), a Fulcio certificate, a Rekor entry. It needs the network
  and an identity token, so it cannot run in this repository's tests.
- `sign_offline` signs with a private authority (`generator/evidence/testroot.py`): the
  committed demo root for sample evidence, or a root a test generated.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from generator.core import safeio, timeutil
from generator.core.atomic import write_atomic
from generator.core.errors import Diagnostic, UsageError
from generator.evidence import testroot
from generator.evidence.testroot import Authority
from generator.evidence.trustroot import (
    DEMO,
    DEMO_KEYS_FILE,
    DEMO_SEED,
    PROJECT_CATALOG,
    TRUST_DIR,
)

# The identities the demo root signs as; catalog/signers.yaml allows them only with trustRoot demo.
DEMO_ISSUER = "https://oidc.demo.aicr.invalid"
DEMO_IDENTITY = (
    "https://github.com/aicr-demo/qualification-lab/.github/workflows/qualify.yml@refs/heads/main"
)


def _usage(message: str, rule: str = "evidence.sign") -> UsageError:
    return UsageError(message, [Diagnostic("<statement>", 0, 0, "$", message, rule)])


def signing_time(statement: bytes) -> datetime:
    """When an offline signature is logged: the predicate's attestedAt, else SOURCE_DATE_EPOCH.

    Deterministic on purpose: the same statement gives the same demo bundle on any machine.
    """
    try:
        attested = json.loads(statement).get("predicate", {}).get("attestedAt")
    except (ValueError, AttributeError):
        attested = None
    if isinstance(attested, str):
        try:
            return timeutil.parse_rfc3339(attested).astimezone(UTC)
        except timeutil.TimeError:
            pass
    epoch = timeutil.source_date_epoch(error=UsageError)
    if epoch is not None:
        return datetime.fromtimestamp(epoch, UTC)
    raise _usage("the statement has no predicate.attestedAt and SOURCE_DATE_EPOCH is not set")


def demo_authority(catalog: Path | None = None) -> Authority:
    """The committed demo authority (its keys are public DEMO material)."""
    path = (catalog or PROJECT_CATALOG) / TRUST_DIR / DEMO / DEMO_KEYS_FILE
    try:
        raw = safeio.read(
            path, root=path.parent, where="the demo trust root", limit=safeio.TRUST_ROOT_BYTES
        )
    except safeio.Refusal as e:
        raise _usage(f"demo trust root keys not found: {path.name}: {e.message}") from e
    return testroot.authority_from_json(raw)


def write_demo_root(directory: Path) -> tuple[Path, ...]:
    """(Re)generate the demo root files; deterministic, so `git diff --exit-code` checks them."""
    authority = testroot.make_authority("aicr-demo", DEMO_SEED)
    root = directory / "trusted_root.json"
    keys = directory / DEMO_KEYS_FILE
    write_atomic(root, testroot.trusted_root_json(authority), root=directory)
    write_atomic(keys, testroot.private_keys_json(authority), root=directory)
    return root, keys


def sign_offline(
    statement: bytes,
    authority: Authority,
    *,
    identity: str = DEMO_IDENTITY,
    issuer: str = DEMO_ISSUER,
    signed_at: datetime | None = None,
) -> bytes:
    """A Sigstore bundle of `statement`, signed by a private authority."""
    return testroot.sign_dsse(
        authority,
        statement,
        identity=identity,
        issuer=issuer,
        signed_at=signed_at or signing_time(statement),
    )


def sign_keyless(statement: bytes) -> bytes:  # pragma: no cover - needs network and an OIDC token
    """Sigstore public-good keyless signing with the ambient identity token of a CI job."""
    from sigstore import dsse
    from sigstore.errors import Error
    from sigstore.models import ClientTrustConfig
    from sigstore.oidc import IdentityError, IdentityToken, detect_credential
    from sigstore.sign import SigningContext

    try:
        token = detect_credential()
    except IdentityError as e:
        raise _usage(f"no ambient identity token: {e}") from e
    if token is None:
        raise _usage(
            "no ambient identity token: keyless signing runs in CI (e.g. GitHub Actions with "
            "`permissions: id-token: write`); use --trust-root demo to sign sample evidence"
        )
    try:
        context = SigningContext.from_trust_config(ClientTrustConfig.production())
        with context.signer(IdentityToken(token), cache=False) as signer:
            bundle = signer.sign_dsse(dsse.Statement(statement))
    except (Error, ValueError, OSError) as e:
        raise _usage(f"keyless signing failed: {e}") from e
    return (bundle.to_json() + "\n").encode()
