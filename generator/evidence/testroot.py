"""A private Sigstore-shaped trust root that signs offline: for tests and for the demo root.

Sigstore keyless signing needs three services; this module plays all three with local keys so
that the *unmodified* sigstore verifier can check what it signs:

1. **Certificate authority** (Fulcio's role): a self-signed CA issues a short-lived leaf
   certificate to an identity (SAN) with its OIDC issuer in Fulcio's extensions
   (1.3.6.1.4.1.57264.1.1 raw, 1.3.6.1.4.1.57264.1.8 as a UTF8String).
2. **Certificate Transparency log** (the CT log's role): signs an SCT over the *precertificate*
   — the leaf's TBSCertificate without the SCT-list extension, with the issuer key hash
   (RFC 6962 §3.2). The SCT is then embedded in the final leaf, which is the leaf's TBS plus
   that one extension appended last, so removing it gives back exactly the signed bytes.
3. **Transparency log** (Rekor v1's role): records a `dsse/0.0.1` entry. The log holds that one
   leaf, so the Merkle root is the leaf hash sha256(0x00 || body) and the inclusion proof is
   empty; the log key signs a checkpoint (signed note: origin, size 1, base64 root) and a
   signed entry timestamp (SET) over the RFC 8785 form of {body, integratedTime, logID,
   logIndex}.

`trusted_root_json()` publishes the CA certificate and the two log keys in Sigstore's
trusted_root.json format, so `TrustedRoot.from_file` + `Verifier(trusted_root=...)` verify the
bundles `sign_dsse()` makes, exactly as they verify public-good bundles.

Every signature uses deterministic ECDSA (RFC 6979) and every key and serial is derived from the
authority's seed and the inputs, so the same statement signed at the same time gives the same
bundle bytes. Nothing here is secret in a meaningful sense: an authority is only ever trusted
when a build is explicitly told to use its root (`--trust-root demo` or a file).
"""

from __future__ import annotations

import base64
import hashlib
import json
import struct
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import rfc8785
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID, ObjectIdentifier

from generator.core.timeutil import rfc3339
from generator.evidence.model import IN_TOTO_PAYLOAD_TYPE

TRUSTED_ROOT_MEDIA_TYPE = "application/vnd.dev.sigstore.trustedroot+json;version=0.1"
BUNDLE_MEDIA_TYPE = "application/vnd.dev.sigstore.bundle.v0.3+json"
KEY_DETAILS = "PKIX_ECDSA_P256_SHA_256"

OID_ISSUER_V1 = ObjectIdentifier("1.3.6.1.4.1.57264.1.1")
OID_ISSUER_V2 = ObjectIdentifier("1.3.6.1.4.1.57264.1.8")
OID_SCT_LIST = ObjectIdentifier("1.3.6.1.4.1.11129.2.4.2")

ROOT_NOT_BEFORE = datetime(2020, 1, 1, tzinfo=UTC)
ROOT_NOT_AFTER = datetime(2100, 1, 1, tzinfo=UTC)
LEAF_LIFETIME = timedelta(minutes=10)  # as Fulcio's
_CURVE = ec.SECP256R1()
_SIG = ec.ECDSA(hashes.SHA256(), deterministic_signing=True)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _derive_key(seed: bytes, label: str) -> ec.EllipticCurvePrivateKey:
    """A P-256 key derived from `seed` (sha256-expanded, reduced into the curve order)."""
    order = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
    material = hashlib.sha512(seed + b"\0" + label.encode()).digest()
    return ec.derive_private_key(int.from_bytes(material, "big") % (order - 1) + 1, _CURVE)


def _spki(key: ec.EllipticCurvePublicKey) -> bytes:
    return key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def key_id(key: ec.EllipticCurvePublicKey) -> bytes:
    """RFC 6962 key ID: sha256 of the DER SubjectPublicKeyInfo."""
    return hashlib.sha256(_spki(key)).digest()


def _der_octet_string(data: bytes) -> bytes:
    n = len(data)
    if n < 0x80:
        length = bytes([n])
    else:
        raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
        length = bytes([0x80 | len(raw)]) + raw
    return b"\x04" + length + data


def _u24(n: int) -> bytes:
    return n.to_bytes(3, "big")


@dataclass(frozen=True, slots=True)
class Authority:
    """The keys of one private trust root: CA, CT log and transparency log."""

    name: str  # shown in certificates and the checkpoint origin
    seed: bytes  # derives leaf keys and serials
    ca_key: ec.EllipticCurvePrivateKey
    ca_cert: x509.Certificate
    ct_key: ec.EllipticCurvePrivateKey
    rekor_key: ec.EllipticCurvePrivateKey

    @property
    def log_host(self) -> str:
        return f"rekor.{self.name}.invalid"

    @property
    def origin(self) -> str:
        """Checkpoint origin line: `<host> - <tree id>`."""
        tree_id = int.from_bytes(key_id(self.rekor_key.public_key())[:7], "big")
        return f"{self.log_host} - {tree_id}"


def make_authority(name: str, seed: bytes) -> Authority:
    """A fresh authority whose every key derives from `seed` (same seed, same authority)."""
    ca_key = _derive_key(seed, "ca")
    subject = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "aicr-catalog"),
            x509.NameAttribute(NameOID.COMMON_NAME, f"{name} CA (not Sigstore; test/demo only)"),
        ]
    )
    ski = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(ca_key.public_key())
        .serial_number(int.from_bytes(hashlib.sha256(seed + b"ca-serial").digest()[:16], "big"))
        .not_valid_before(ROOT_NOT_BEFORE)
        .not_valid_after(ROOT_NOT_AFTER)
        .add_extension(x509.BasicConstraints(ca=True, path_length=1), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=False,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(ski, critical=False)
        .sign(ca_key, hashes.SHA256(), ecdsa_deterministic=True)
    )
    return Authority(
        name=name,
        seed=seed,
        ca_key=ca_key,
        ca_cert=ca_cert,
        ct_key=_derive_key(seed, "ct"),
        rekor_key=_derive_key(seed, "rekor"),
    )


def _public_key_entry(key: ec.EllipticCurvePrivateKey, url: str) -> dict[str, Any]:
    pub = key.public_key()
    return {
        "baseUrl": url,
        "hashAlgorithm": "SHA2_256",
        "publicKey": {
            "rawBytes": _b64(_spki(pub)),
            "keyDetails": KEY_DETAILS,
            "validFor": {"start": rfc3339(ROOT_NOT_BEFORE)},
        },
        "logId": {"keyId": _b64(key_id(pub))},
    }


def trusted_root_json(authority: Authority) -> bytes:
    """The authority as a Sigstore trusted_root.json (sorted keys, trailing newline)."""
    doc = {
        "mediaType": TRUSTED_ROOT_MEDIA_TYPE,
        "tlogs": [_public_key_entry(authority.rekor_key, f"https://{authority.log_host}")],
        "certificateAuthorities": [
            {
                "subject": {"organization": "aicr-catalog", "commonName": authority.name},
                "uri": f"https://fulcio.{authority.name}.invalid",
                "certChain": {
                    "certificates": [
                        {
                            "rawBytes": _b64(
                                authority.ca_cert.public_bytes(serialization.Encoding.DER)
                            )
                        }
                    ]
                },
                "validFor": {"start": rfc3339(ROOT_NOT_BEFORE)},
            }
        ],
        "ctlogs": [_public_key_entry(authority.ct_key, f"https://ctfe.{authority.name}.invalid")],
        "timestampAuthorities": [],
    }
    return (json.dumps(doc, indent=2, sort_keys=True, allow_nan=False) + "\n").encode()


def _sct_extension(
    authority: Authority, precert_tbs: bytes, timestamp_ms: int
) -> x509.UnrecognizedExtension:
    """An embedded SCT list (RFC 6962 §3.3) with one SCT signed by the CT log key."""
    log_id = key_id(authority.ct_key.public_key())
    issuer_key_hash = key_id(authority.ca_key.public_key())
    # digitally-signed struct: version 0, signature_type certificate_timestamp(0), timestamp,
    # entry_type precert_entry(1), issuer_key_hash, TBSCertificate<1..2^24-1>, extensions<0..>.
    signed = (
        struct.pack("!BBQH", 0, 0, timestamp_ms, 1)
        + issuer_key_hash
        + _u24(len(precert_tbs))
        + precert_tbs
        + struct.pack("!H", 0)
    )
    signature = authority.ct_key.sign(signed, _SIG)
    # SignedCertificateTimestamp: version, log id, timestamp, no extensions,
    # hash sha256(4) + signature ecdsa(3), signature<0..2^16-1>.
    sct = (
        struct.pack("!B", 0)
        + log_id
        + struct.pack("!QH", timestamp_ms, 0)
        + struct.pack("!BBH", 4, 3, len(signature))
        + signature
    )
    sct_list = struct.pack("!H", len(sct) + 2) + struct.pack("!H", len(sct)) + sct
    return x509.UnrecognizedExtension(OID_SCT_LIST, _der_octet_string(sct_list))


# a code-signing leaf signs, and does nothing else
_LEAF_KEY_USAGE = x509.KeyUsage(
    digital_signature=True,
    content_commitment=False,
    key_encipherment=False,
    data_encipherment=False,
    key_agreement=False,
    key_cert_sign=False,
    crl_sign=False,
    encipher_only=False,
    decipher_only=False,
)


def issue_leaf(
    authority: Authority,
    public_key: ec.EllipticCurvePublicKey,
    *,
    identity: str,
    issuer: str,
    not_before: datetime,
    not_after: datetime,
    sct_time: datetime,
) -> x509.Certificate:
    """A Fulcio-shaped code-signing certificate for `identity`, with an embedded SCT."""
    san: x509.GeneralName = (
        x509.UniformResourceIdentifier(identity) if "://" in identity else x509.RFC822Name(identity)
    )
    serial_seed = f"{identity}\n{issuer}\n{not_before.isoformat()}".encode() + _spki(public_key)
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([]))
        .issuer_name(authority.ca_cert.subject)
        .public_key(public_key)
        .serial_number(
            int.from_bytes(hashlib.sha256(authority.seed + serial_seed).digest()[:16], "big")
        )
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(_LEAF_KEY_USAGE, critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CODE_SIGNING]), critical=False)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public_key), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(authority.ca_key.public_key()),
            critical=False,
        )
        .add_extension(x509.SubjectAlternativeName([san]), critical=True)
        .add_extension(x509.UnrecognizedExtension(OID_ISSUER_V1, issuer.encode()), critical=False)
        .add_extension(
            x509.UnrecognizedExtension(
                OID_ISSUER_V2, b"\x0c" + _der_octet_string(issuer.encode())[1:]
            ),
            critical=False,
        )
    )
    # The precertificate's TBS is what the CT log signs; the final certificate appends the SCT
    # list as its last extension, so dropping that extension reproduces these exact bytes.
    precert = builder.sign(authority.ca_key, hashes.SHA256(), ecdsa_deterministic=True)
    sct = _sct_extension(authority, precert.tbs_certificate_bytes, int(sct_time.timestamp() * 1000))
    return builder.add_extension(sct, critical=False).sign(
        authority.ca_key, hashes.SHA256(), ecdsa_deterministic=True
    )


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE pre-authentication encoding."""
    return b"DSSEv1 %d %s %d %s" % (
        len(payload_type),
        payload_type.encode(),
        len(payload),
        payload,
    )


def _checkpoint(authority: Authority, root_hash: bytes, tree_size: int) -> str:
    """A signed note: `origin\\nsize\\nroot\\n` + blank line + `— name base64(keyhint+sig)`."""
    note = f"{authority.origin}\n{tree_size}\n{_b64(root_hash)}\n"
    signature = authority.rekor_key.sign(note.encode(), _SIG)
    hint = key_id(authority.rekor_key.public_key())[:4]
    return f"{note}\n\u2014 {authority.log_host} {_b64(hint + signature)}\n"


def _rekor_body(
    envelope: dict[str, Any], payload: bytes, signature: bytes, cert_pem: bytes
) -> bytes:
    """The canonical Rekor `dsse` entry body of the envelope."""
    body: dict[str, Any] = {
        "apiVersion": "0.0.1",
        "kind": "dsse",
        "spec": {
            "envelopeHash": {
                "algorithm": "sha256",
                "value": hashlib.sha256(rfc8785.dumps(envelope)).hexdigest(),
            },
            "payloadHash": {"algorithm": "sha256", "value": hashlib.sha256(payload).hexdigest()},
            "signatures": [{"signature": _b64(signature), "verifier": _b64(cert_pem)}],
        },
    }
    return rfc8785.dumps(body)


def _tlog_entry(
    authority: Authority, canonical_body: bytes, integrated_time: int, log_index: int
) -> dict[str, Any]:
    """The bundle's transparency-log entry: a signed promise and a one-leaf inclusion proof."""
    log_id = key_id(authority.rekor_key.public_key())
    # One-leaf Merkle tree: the root is the leaf hash and the inclusion proof is empty.
    root_hash = hashlib.sha256(b"\x00" + canonical_body).digest()
    promise = rfc8785.dumps(
        {
            "body": _b64(canonical_body),
            "integratedTime": integrated_time,
            "logID": log_id.hex(),
            "logIndex": log_index,
        }
    )
    return {
        "logIndex": str(log_index),
        "logId": {"keyId": _b64(log_id)},
        "kindVersion": {"kind": "dsse", "version": "0.0.1"},
        "integratedTime": str(integrated_time),
        "inclusionPromise": {"signedEntryTimestamp": _b64(authority.rekor_key.sign(promise, _SIG))},
        "inclusionProof": {
            "logIndex": "0",
            "rootHash": _b64(root_hash),
            "treeSize": "1",
            "hashes": [],
            "checkpoint": {"envelope": _checkpoint(authority, root_hash, 1)},
        },
        "canonicalizedBody": _b64(canonical_body),
    }


def sign_dsse(
    authority: Authority,
    payload: bytes,
    *,
    identity: str,
    issuer: str,
    signed_at: datetime,
    payload_type: str = IN_TOTO_PAYLOAD_TYPE,
    log_index: int | None = None,
    cert_validity: tuple[datetime, datetime] | None = None,
) -> bytes:
    """A Sigstore v0.3 bundle (JSON bytes) of `payload` in a DSSE envelope, logged at `signed_at`.

    `cert_validity` overrides the leaf's (not_before, not_after) window, which by default opens
    one minute before `signed_at` and lasts ten minutes; tests use it to make an expired leaf.
    """
    signed_at = signed_at.astimezone(UTC).replace(microsecond=0)
    integrated_time = int(signed_at.timestamp())
    context = f"{identity}\n{issuer}\n{integrated_time}\n{payload_type}\n".encode() + payload
    leaf_key = _derive_key(authority.seed, "leaf:" + hashlib.sha256(context).hexdigest())
    not_before, not_after = cert_validity or (
        signed_at - timedelta(minutes=1),
        signed_at - timedelta(minutes=1) + LEAF_LIFETIME,
    )
    cert = issue_leaf(
        authority,
        leaf_key.public_key(),
        identity=identity,
        issuer=issuer,
        not_before=not_before,
        not_after=not_after,
        sct_time=not_before,
    )
    signature = leaf_key.sign(pae(payload_type, payload), _SIG)
    envelope: dict[str, Any] = {
        "payload": _b64(payload),
        "payloadType": payload_type,
        "signatures": [{"sig": _b64(signature)}],
    }
    cert_pem = cert.public_bytes(serialization.Encoding.PEM)
    canonical_body = _rekor_body(envelope, payload, signature, cert_pem)
    if log_index is None:
        log_index = int.from_bytes(hashlib.sha256(canonical_body).digest()[:4], "big")
    bundle = {
        "mediaType": BUNDLE_MEDIA_TYPE,
        "verificationMaterial": {
            "certificate": {"rawBytes": _b64(cert.public_bytes(serialization.Encoding.DER))},
            "tlogEntries": [_tlog_entry(authority, canonical_body, integrated_time, log_index)],
        },
        "dsseEnvelope": envelope,
    }
    return (json.dumps(bundle, indent=2, sort_keys=True, allow_nan=False) + "\n").encode()


def private_keys_json(authority: Authority) -> bytes:
    """The authority's secrets (seed and PEM keys) for a committed DEMO root."""

    def pem(key: ec.EllipticCurvePrivateKey) -> str:
        return key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ).decode()

    doc = {
        "WARNING": "DEMO MATERIAL: these private keys are public. Never trust this root for "
        "real evidence; it exists only to sign the sample evidence in this repository.",
        "name": authority.name,
        "seed": authority.seed.hex(),
        "caKey": pem(authority.ca_key),
        "caCertificate": authority.ca_cert.public_bytes(serialization.Encoding.PEM).decode(),
        "ctKey": pem(authority.ct_key),
        "rekorKey": pem(authority.rekor_key),
    }
    return (json.dumps(doc, indent=2, sort_keys=True, allow_nan=False) + "\n").encode()


def authority_from_json(raw: bytes) -> Authority:
    """Load an authority written by `private_keys_json`."""
    doc = json.loads(raw)

    def key(pem: str) -> ec.EllipticCurvePrivateKey:
        loaded = serialization.load_pem_private_key(pem.encode(), password=None)
        assert isinstance(loaded, ec.EllipticCurvePrivateKey)
        return loaded

    return Authority(
        name=doc["name"],
        seed=bytes.fromhex(doc["seed"]),
        ca_key=key(doc["caKey"]),
        ca_cert=x509.load_pem_x509_certificate(doc["caCertificate"].encode()),
        ct_key=key(doc["ctKey"]),
        rekor_key=key(doc["rekorKey"]),
    )
