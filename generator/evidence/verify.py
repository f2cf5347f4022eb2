"""Offline verification of evidence bundles: a pure function from files to records.

`verify_evidence(files, trust_roots=..., policy=..., current_digests=...)` returns one
`VerifiedEvidence | RejectedEvidence` per file, in the order given. For each file:

1. the bundle is parsed with `sigstore.models.Bundle.from_json` (malformed-bundle);
2. `Verifier(trusted_root=TrustedRoot(<the pinned root bytes>)).verify_dsse(bundle, policy)` checks the
   certificate chain at the log's integrated time, the embedded SCT, the signer policy (our
   `catalog/signers.yaml`, applied inside sigstore's policy hook so it cannot be skipped), the
   inclusion proof, checkpoint and SET, and the DSSE signature — each failure is mapped to a
   failure class with sigstore's reason kept in the message;
3. `verify_dsse` does not look at the payload: its type, `_type`, `predicateType` and the
   predicate's schema are checked by `generator.evidence.statement`;
4. the file must sit at `evidence/<recipe>/<source>/<sha256-of-statement>.sigstore.json`;
5. the statement's recipe digest is compared with `current_digests[recipe]`: a mismatch is
   *stale* (a `VerifiedEvidence` with `stale=True`: shown, not counted).

Nothing here touches the network, and sigstore's production constructor (which reads a
writable cache copy of the root) is never used. Work is spread over a
process pool (`jobs`, default: every core). The result of the cryptographic check of one bundle
against one trust root is memoized in memory by content digest, so verifying an unchanged file
again in the same process costs a dictionary lookup. The memo is deliberately never written to
disk: a writable cache of verification results would be a way around verification. It keeps a
check without its payload bytes (`_kept`: their sha256 is what `verify_one` reads again), which
it held for the life of the process: 80 MB through a cold build at 1,000 x 20,000.

What is the same for every file is done once per process, never skipped: one `Verifier` per
trust root, whose verification keyrings are built once (`_KeyringsOnce`), and one compiled
check per statement schema (see `generator.evidence.statement`). Nothing signed is shared
between bundles (each has its own certificate, SCT, log entry, inclusion proof, checkpoint and
SET; in the synthetic 200 x 4,000 tree all 4,000 of each are distinct), so nothing signed is
memoized across bundles.

Workers check signatures only (`_check_to_send`) and send back small results: an accepted
bundle travels as its payload bytes, and the parent reads the statement from them once, with
every check (`_complete`: `statement.parse_statement`, what the in-process path runs). Before,
the worker checked the statement (one parse) and the parent parsed the same bytes again to
build it, unchecked: one JSON parse and one trust assumption more per file. The verify stage
at 200 x 4,000 (`pipeline.verify`, 2 workers, no cache, loaded 2-core machine, interleaved,
median of 3, parent + workers, against main 6500285): 4.99 -> 4.69 CPU-s (parent 0.76 -> 1.13,
workers 4.23 -> 3.56), the records identical (sha256 over their pickles). It does not raise
the stage's memory: at 1,000 x 20,000 (`verify_evidence` of every file, 2 workers, collector
paused, PSS summed over the process tree) the pool peaks at 1,004 MB with it and 1,006 MB with
it reverted, both at the pool's end (the parent holding every record, ~700 MB, the workers
~145 MB each), for 25.2 vs 25.8 CPU-s, the records' pickles identical.

Where the stage's CPU goes, per file at 200 x 4,000 (best of 3, in one process): in a worker,
sigstore's `Bundle.from_json` and `verify_dsse` ~850 us (the chain, the SCT, the SET, the
checkpoint and the DSSE signature: four EC signature checks and one chain build) and our part
~20-40 us (one `json.loads` of the bundle for the failure messages, the certificate's identity
and issuer, the result's pickle ~9 us); in the parent ~220 us: the result's unpickle ~12 us,
the payload's parse ~90 us (45 without the strings shared across statements:
`statement.loads_in_domain`), the compiled schema checks ~57 us (~25 since they are one
generated function each: `fast.schemacheck.generated_check`), the record's construction
~45 us, `verify_one` ~7 us.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import partial
from typing import Any

from cryptography import x509
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.x509.oid import ObjectIdentifier
from sigstore._internal.trust import CTKeyring, KeyringPurpose, RekorKeyring
from sigstore.errors import CertValidationError, Error, VerificationError
from sigstore.models import Bundle, TrustedRoot
from sigstore.verify import Verifier

from generator.core.timeutil import rfc3339
from generator.evidence.model import (
    Evidence,
    EvidenceFile,
    FailureClass,
    RejectedEvidence,
    SignerPolicy,
    SignerRule,
    Statement,
    TrustRoot,
    VerifiedEvidence,
    current_digest,
)
from generator.evidence.statement import StatementError, parse_statement
from generator.evidence.store import path_problem, source_id, stored_path
from generator.evidence.trustroot import parse_trusted_root
from generator.fast.collector import collector_paused
from generator.fast.pool import parallel_map, workers_for

_OID_ISSUER_V1 = ObjectIdentifier("1.3.6.1.4.1.57264.1.1")
_OID_ISSUER_V2 = ObjectIdentifier("1.3.6.1.4.1.57264.1.8")
_OID_OTHERNAME = ObjectIdentifier("1.3.6.1.4.1.57264.1.7")
# Below this many files the pool's start-up costs more than it saves.
PARALLEL_THRESHOLD = 64


# --- reading the certificate (for policy and for explaining failures) -------------------------


def cert_identity(cert: x509.Certificate) -> str:
    """The signer identity in the certificate's SAN (URI, e-mail or Sigstore other-name)."""
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except (x509.ExtensionNotFound, ValueError):  # absent, or undecodable extensions
        return ""
    values: list[str] = [
        *san.get_values_for_type(x509.UniformResourceIdentifier),
        *san.get_values_for_type(x509.RFC822Name),
        *(
            o.value.decode("utf-8", "replace")
            for o in san.get_values_for_type(x509.OtherName)
            if o.type_id == _OID_OTHERNAME
        ),
    ]
    return values[0] if values else ""


def _der_utf8(raw: bytes) -> str | None:
    """The text of a DER UTF8String (tag 0x0c), or None."""
    if len(raw) < 2 or raw[0] != 0x0C:
        return None
    length, offset = raw[1], 2
    if length & 0x80:
        n = length & 0x7F
        length, offset = int.from_bytes(raw[2 : 2 + n], "big"), 2 + n
    return raw[offset : offset + length].decode("utf-8", "replace")


def cert_issuer(cert: x509.Certificate) -> str:
    """The OIDC issuer from Fulcio's extension (v2 UTF8String, else the legacy raw v1)."""
    for oid in (_OID_ISSUER_V2, _OID_ISSUER_V1):
        try:
            ext = cert.extensions.get_extension_for_oid(oid).value
        except (x509.ExtensionNotFound, ValueError):
            continue
        raw = ext.value if isinstance(ext, x509.UnrecognizedExtension) else b""
        text = _der_utf8(raw) if oid == _OID_ISSUER_V2 else raw.decode("utf-8", "replace")
        if text:
            return text
    return ""


# --- the signer policy, inside sigstore's policy hook ---------------------------------------


class SignerNotAllowed(VerificationError):
    """Raised from inside `verify_dsse` when the certificate's signer is not allowlisted."""


class _AllowlistPolicy:
    """A sigstore `VerificationPolicy` backed by `SignerPolicy` (fails closed when empty)."""

    def __init__(
        self,
        policy: SignerPolicy,
        trust_root: TrustRoot,
        read: tuple[x509.Certificate, str, str] | None = None,
    ) -> None:
        self.policy = policy
        self.trust_root = trust_root
        self.matched: SignerRule | None = None
        # (certificate, identity, issuer) already read by the caller: reused only for that very
        # certificate object, so a different certificate is always read afresh
        self.read = read

    def verify(self, cert: x509.Certificate) -> None:
        if self.read is not None and cert is self.read[0]:
            identity, issuer = self.read[1], self.read[2]
        else:
            identity, issuer = cert_identity(cert), cert_issuer(cert)
        root = self.trust_root
        rule = self.policy.match(identity, issuer, root.name, root.sha256, root.demo)
        if rule is None:
            raise SignerNotAllowed(
                f"signed by {identity or '(no identity)'} via {issuer or '(no issuer)'}; "
                f"allowed: {self.policy.describe(root.name, root.demo)}"
            )
        self.matched = rule


# --- the cryptographic check (memoized by content) ------------------------------------------


@dataclass(frozen=True, slots=True)
class SignatureCheck:
    """What sigstore said about one bundle against the trust roots."""

    klass: FailureClass | None  # None: verified
    message: str
    trust_root: str | None = None
    payload_type: str = ""
    payload: bytes = b""  # b"" in the memo (`_kept`): its digest is what is read again
    payload_sha256: str = ""  # hex, of an accepted bundle's payload
    identity: str = ""
    issuer: str = ""
    rule: SignerRule | None = None
    log_index: int | None = None
    integrated_time: int | None = None
    # the payload read as an evidence statement (parsed here so it runs in the pool and is
    # memoized with the signature): the statement, or why it is not evidence
    statement: Statement | None = None
    statement_error: tuple[FailureClass, str] | None = None


_VERIFIERS: dict[str, Verifier] = {}
# (trust roots' digests, policy) -> bundle digest -> check. Two levels, so that the policy (a
# frozen dataclass whose hash is recomputed at each use) is hashed once per call, not per file.
_MEMO: dict[tuple[tuple[str, ...], SignerPolicy], dict[str, SignatureCheck]] = {}

_TLOG_MARKERS = (
    "failed to verify SCT",
    "invalid log entry",
    "log entry",
    "inclusion proof",
    "Inclusion proof",
    "SET:",
    "checkpoint",
    "not enough sources of verified time",
    "Unsupported DSSE log entry type",
)


class _KeyringsOnce(TrustedRoot):
    """sigstore's TrustedRoot, building each verification keyring once instead of per bundle.

    `rekor_keyring`/`ct_keyring` rebuild a `Keyring` (parsing every key) on each call, and
    `verify_dsse` asks for them for every bundle. With `KeyringPurpose.VERIFY` the keyring holds
    every key whose validity period has started (expired keys included: a bundle is judged at
    its own signing time), so once no key starts in the future it can no longer change and is
    kept. A keyring with a key that is not yet valid is rebuilt at every call, as sigstore does.
    """

    def __init__(self, root: TrustedRoot) -> None:
        super().__init__(root._inner)
        self._rekor: RekorKeyring | None = None
        self._ct: CTKeyring | None = None

    def _settled(self, tlogs: Sequence[Any]) -> bool:
        now = datetime.now(UTC)
        return all(not t.public_key.valid_for or t.public_key.valid_for.start <= now for t in tlogs)

    def rekor_keyring(self, purpose: KeyringPurpose) -> RekorKeyring:
        if purpose is not KeyringPurpose.VERIFY:
            return super().rekor_keyring(purpose)
        if self._rekor is None:
            keyring = super().rekor_keyring(purpose)
            if not self._settled(self._inner.tlogs):
                return keyring
            self._rekor = keyring
        return self._rekor

    def ct_keyring(self, purpose: KeyringPurpose) -> CTKeyring:
        if purpose is not KeyringPurpose.VERIFY:
            return super().ct_keyring(purpose)
        if self._ct is None:
            keyring = super().ct_keyring(purpose)
            if not self._settled(self._inner.ctlogs):
                return keyring
            self._ct = keyring
        return self._ct


def _verifier(root: TrustRoot) -> Verifier:
    """One Verifier per trust root per process, built from the bytes that were pinned when the
    root was loaded (`root.data`), never from its path again: a file swapped on disk since then
    changes nothing."""
    verifier = _VERIFIERS.get(root.sha256)
    if verifier is None:
        if hashlib.sha256(root.data).hexdigest() != root.sha256:
            raise VerificationError(f"trust root {root.name}: its bytes do not match its digest")
        verifier = Verifier(trusted_root=_KeyringsOnce(parse_trusted_root(root.data)))
        _VERIFIERS[root.sha256] = verifier
    return verifier


def _classify(
    exc: Exception, cert: x509.Certificate, integrated_time: int | None, root: TrustRoot
) -> tuple[FailureClass, str]:
    text = str(exc)
    if isinstance(exc, SignerNotAllowed):
        return FailureClass.SIGNER_NOT_ALLOWED, text
    if integrated_time is not None and isinstance(exc, CertValidationError | VerificationError):
        when = datetime.fromtimestamp(integrated_time, UTC)
        if not (cert.not_valid_before_utc <= when <= cert.not_valid_after_utc):
            return FailureClass.CERTIFICATE_EXPIRED, (
                f"certificate valid {rfc3339(cert.not_valid_before_utc)} to "
                f"{rfc3339(cert.not_valid_after_utc)} was not valid at signing time "
                f"{rfc3339(when)} (transparency log integrated time)"
            )
    if isinstance(exc, CertValidationError):
        return FailureClass.CERTIFICATE_UNTRUSTED, (
            f"certificate does not chain to trust root {root.name}: {text}"
        )
    if isinstance(exc, x509.ExtensionNotFound | UnsupportedAlgorithm):
        return FailureClass.CERTIFICATE_UNTRUSTED, f"certificate is not a code-signing leaf: {text}"
    if text.startswith("DSSE:"):
        return FailureClass.SIGNATURE_INVALID, f"signature does not verify: {text}"
    if any(marker in text for marker in _TLOG_MARKERS):
        return FailureClass.TLOG_INVALID, f"transparency evidence does not verify: {text}"
    if "Key usage" in text or "Extended usage" in text:
        return FailureClass.CERTIFICATE_UNTRUSTED, f"certificate is not a code-signing leaf: {text}"
    if isinstance(exc, ValueError | OSError):
        return FailureClass.MALFORMED_BUNDLE, f"bundle cannot be verified: {text}"
    return FailureClass.SIGNATURE_INVALID, f"signature does not verify: {text}"


def _log_position(doc: Mapping[str, Any]) -> tuple[int | None, int | None]:
    """(logIndex, integratedTime) of the bundle's one tlog entry (Bundle.from_json checked it)."""
    material = doc.get("verificationMaterial") or doc.get("verification_material") or {}
    entries = material.get("tlogEntries") or material.get("tlog_entries") or [{}]
    entry = entries[0]
    index = entry.get("logIndex", entry.get("log_index"))
    time = entry.get("integratedTime", entry.get("integrated_time"))
    try:
        return (
            int(index) if index is not None else None,
            int(time) if time not in (None, "", "0", 0) else None,
        )
    except (ValueError, TypeError):  # not a number (Bundle.from_json normally refuses it)
        return None, None


def check_signature(
    data: bytes, trust_roots: Sequence[TrustRoot], policy: SignerPolicy
) -> SignatureCheck:
    """Parse the bundle and run sigstore's `verify_dsse` against each root until one accepts."""
    return _check_signature(data, trust_roots, policy, build=True)


def _parse_bundle(data: bytes) -> tuple[Bundle, dict[str, Any]] | SignatureCheck:
    """The Sigstore bundle and its JSON document, or why it is not a DSSE bundle."""
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError) as e:  # incl. JSONDecodeError, Unicode, int digits
        return SignatureCheck(
            FailureClass.MALFORMED_BUNDLE, f"not a Sigstore bundle: not JSON ({e})"
        )
    try:
        bundle = Bundle.from_json(data)
    except (Error, ValueError, TypeError, KeyError, UnsupportedAlgorithm, x509.InvalidVersion) as e:
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        return SignatureCheck(FailureClass.MALFORMED_BUNDLE, f"not a Sigstore bundle: {first}")
    if not isinstance(doc, dict) or not (doc.get("dsseEnvelope") or doc.get("dsse_envelope")):
        return SignatureCheck(
            FailureClass.MALFORMED_BUNDLE,
            "bundle holds a message signature, not a DSSE envelope: it is not an attestation",
        )
    return bundle, doc


def _read_statement(
    payload_type: str, payload: bytes
) -> tuple[Statement | None, tuple[FailureClass, str] | None]:
    """The accepted payload read as an evidence statement, with every check: (statement, None)
    or (None, why it is not evidence)."""
    try:
        return parse_statement(payload_type, payload), None
    except StatementError as e:
        return None, (e.klass, e.message)


def _accepted(
    root: TrustRoot,
    hook: _AllowlistPolicy,
    payload_type: str,
    payload: bytes,
    read: tuple[str, str, int | None, int | None],
    build: bool,
) -> SignatureCheck:
    """The check of a bundle `root` accepted; with `build`, its payload read as an evidence
    statement (without, neither `statement` nor `statement_error` is set: see `_complete`)."""
    statement: Statement | None = None
    problem: tuple[FailureClass, str] | None = None
    if build:
        statement, problem = _read_statement(payload_type, payload)
    identity, issuer, log_index, integrated_time = read
    return SignatureCheck(
        klass=None,
        message="verified",
        statement=statement,
        statement_error=problem,
        trust_root=root.name,
        payload_type=payload_type,
        payload=payload,
        payload_sha256=hashlib.sha256(payload).hexdigest(),
        identity=identity,
        issuer=issuer,
        rule=hook.matched,
        log_index=log_index,
        integrated_time=integrated_time,
    )


def _most_telling(
    failures: Sequence[tuple[FailureClass, str]], trust_roots: Sequence[TrustRoot]
) -> tuple[FailureClass, str]:
    """One failure from a root the certificate did chain to, else the first."""
    chained = [f for f in failures if f[0] is not FailureClass.CERTIFICATE_UNTRUSTED]
    klass, message = (chained or failures)[0]
    if not chained and len(trust_roots) > 1:
        names = " or ".join(r.name for r in trust_roots)
        message = f"certificate does not chain to trust root {names}"
    return klass, message


def _check_signature(
    data: bytes, trust_roots: Sequence[TrustRoot], policy: SignerPolicy, *, build: bool
) -> SignatureCheck:
    """`check_signature`; with `build=False` an accepted bundle's payload is not read
    (`statement` and `statement_error` both None: `_complete` reads it)."""
    parsed = _parse_bundle(data)
    if isinstance(parsed, SignatureCheck):
        return parsed
    bundle, doc = parsed
    cert = bundle.signing_certificate
    identity, issuer = cert_identity(cert), cert_issuer(cert)
    # Unauthenticated until verify_dsse succeeds: used for explanations and then reported.
    log_index, integrated_time = _log_position(doc)
    failures: list[tuple[FailureClass, str]] = []
    for root in trust_roots:
        hook = _AllowlistPolicy(policy, root, (cert, identity, issuer))
        try:
            payload_type, payload = _verifier(root).verify_dsse(bundle, hook)
        except (Error, ValueError, OSError, x509.ExtensionNotFound, UnsupportedAlgorithm) as e:
            failures.append(_classify(e, cert, integrated_time, root))
            continue
        read = (identity, issuer, log_index, integrated_time)
        return _accepted(root, hook, payload_type, payload, read, build)
    klass, message = _most_telling(failures, trust_roots)
    return SignatureCheck(
        klass,
        message,
        identity=identity,
        issuer=issuer,
        log_index=log_index,
        integrated_time=integrated_time,
    )


# --- one file ---------------------------------------------------------------------------------


def verify_one(
    file: EvidenceFile,
    sig: SignatureCheck,
    trust_roots: Sequence[TrustRoot],
    current_digests: Mapping[str, str],
    check_paths: bool = True,
) -> Evidence:
    """Everything after the signature: payload, statement, predicate, path, currency."""
    if sig.klass is not None:
        return RejectedEvidence(
            path=file.path,
            klass=sig.klass,
            message=sig.message,
            signer_identity=sig.identity or None,
            signer_issuer=sig.issuer or None,
            log_index=sig.log_index,
            integrated_time=sig.integrated_time,
        )
    digest = "sha256:" + sig.payload_sha256
    seen = {
        "path": file.path,
        "statement_digest": digest,
        "signer_identity": sig.identity,
        "signer_issuer": sig.issuer,
        "trust_root": sig.trust_root,
        "log_index": sig.log_index,
        "integrated_time": sig.integrated_time,
    }
    statement = sig.statement
    if statement is None:
        assert sig.statement_error is not None
        klass, message = sig.statement_error
        return RejectedEvidence(klass=klass, message=message, **seen)  # type: ignore[arg-type]
    if check_paths:
        expected = stored_path(statement.recipe, sig.issuer, sig.identity, sig.payload_sha256)
        stored = file.location if file.location is not None else file.path
        problem = path_problem(stored, expected)
        if problem is not None:
            return RejectedEvidence(
                klass=FailureClass.PATH_MISMATCH,
                message=problem,
                statement=statement,
                **seen,  # type: ignore[arg-type]
            )
    if sig.rule is None or sig.log_index is None or sig.trust_root is None:
        # unreachable with sigstore calling the policy hook; fail closed if it ever does not
        return RejectedEvidence(
            klass=FailureClass.SIGNER_NOT_ALLOWED,
            message=f"signed by {sig.identity} via {sig.issuer}; the signer policy was not applied",
            statement=statement,
            **seen,  # type: ignore[arg-type]
        )
    current = current_digest(statement, current_digests)
    return verified_record(file.path, digest, statement, sig, trust_roots, current)


def verified_record(
    path: str,
    statement_digest: str,
    statement: Statement,
    sig: SignatureCheck,
    trust_roots: Sequence[TrustRoot],
    current: str | None,
) -> VerifiedEvidence:
    """The record of a statement whose signature verified under an allowed signer (one
    constructor for this catalog's bundles and upstream's pointed-to ones). Sample when a demo
    root verified it or it says so; stale unless `current` is the digest it was signed for."""
    assert sig.rule is not None and sig.log_index is not None and sig.trust_root is not None
    demo = any(r.demo for r in trust_roots if r.name == sig.trust_root)
    return VerifiedEvidence(
        path=path,
        statement_digest=statement_digest,
        statement=statement,
        signer_identity=sig.identity,
        signer_issuer=sig.issuer,
        signer_label=sig.rule.label,
        signer_class=sig.rule.klass,
        source=source_id(sig.issuer, sig.identity),
        trust_root=sig.trust_root,
        log_index=sig.log_index,
        integrated_time=sig.integrated_time,
        sample=demo or statement.sample,
        stale=current != statement.recipe_digest,
        current_digest=current,
    )


# --- many files, both cores -------------------------------------------------------------------


def _check_to_send(
    roots: tuple[TrustRoot, ...], policy: SignerPolicy, data: bytes
) -> SignatureCheck:
    """The signature check of one file in a worker, as small as it can be sent back: an
    accepted bundle travels as its payload bytes (already in the check), read as a statement by
    `_complete` in the parent; unpickling a Statement costs several times what reading it from
    those bytes does, and a statement parsed here would be parsed there again."""
    return _check_signature(data, roots, policy, build=False)


def _complete(check: SignatureCheck) -> SignatureCheck:
    """A check from a worker with its accepted payload read as a statement, with every check:
    what `check_signature` gives for the same bytes."""
    if check.klass is None and check.statement is None and check.statement_error is None:
        statement, problem = _read_statement(check.payload_type, check.payload)
        return replace(check, statement=statement, statement_error=problem)
    return check


def _kept(check: SignatureCheck) -> SignatureCheck:
    """A check as the memo keeps it: without its payload bytes, which nothing reads once the
    statement is read (`verify_one` reads their digest). The memo lives as long as the process;
    at 1,000 x 20,000 the payloads were 80 MB held through the whole cold build."""
    return replace(check, payload=b"") if check.payload else check


# Chunks small enough that the two processes finish together (the last chunk handed out decides
# when the pool is done), large enough that sending them costs little.
CHUNK_MIN, CHUNK_MAX = 16, 128


def _chunk_size(items: int, workers: int) -> int:
    return min(CHUNK_MAX, max(CHUNK_MIN, items // (workers * 8) or 1))


def verify_evidence(
    files: Sequence[EvidenceFile],
    *,
    trust_roots: TrustRoot | Sequence[TrustRoot],
    policy: SignerPolicy,
    current_digests: Mapping[str, str],
    check_paths: bool = True,
    jobs: int | None = None,
) -> tuple[Evidence, ...]:
    """One record per file, in the given order. See the module docstring for the checks.

    `current_digests` maps `<recipe>@<scale-profile>` (see `digest_key`; upstream evidence has
    no profile and uses `standard`) or a bare `<recipe>` to the digest of the current resolved
    recipe (the caller resolves recipes, e.g. with `generator.catalog.resolve.resolve`); a statement
    whose recipe is missing from it is stale. `with_current_digests` re-judges records for other
    digests without verifying again, so a caller can verify first and resolve only the
    (recipe, profile) pairs the verified statements name.
    `jobs` is the number of processes (default: all cores; 1 = in this process).
    """
    roots = (trust_roots,) if isinstance(trust_roots, TrustRoot) else tuple(trust_roots)
    if not roots:
        raise ValueError("verify_evidence needs at least one trust root")
    memo = _MEMO.setdefault((tuple(r.sha256 for r in roots), policy), {})
    keys = [hashlib.sha256(f.data).hexdigest() for f in files]
    todo: dict[str, bytes] = {}
    for key, f in zip(keys, files, strict=True):
        if key not in memo:
            todo.setdefault(key, f.data)
    if todo:
        pending = list(todo.items())
        datas = [d for _, d in pending]
        workers = workers_for(jobs, len(datas))
        if workers <= 1 or len(datas) < PARALLEL_THRESHOLD:
            checks = [check_signature(d, roots, policy) for d in datas]
        else:
            sent = parallel_map(
                partial(_check_to_send, roots, policy),
                datas,
                jobs=workers,
                chunksize=_chunk_size(len(datas), workers),
            )
            with collector_paused():  # the workers are forked by then, with their collector
                checks = [_complete(c) for c in sent]
        for (key, _), check in zip(pending, checks, strict=True):
            memo[key] = _kept(check)
    with collector_paused():
        return tuple(
            verify_one(f, memo[key], roots, current_digests, check_paths)
            for key, f in zip(keys, files, strict=True)
        )
