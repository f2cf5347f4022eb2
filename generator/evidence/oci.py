"""A small ORAS-compatible client over the OCI distribution API, and a content-addressed cache.

What it does, and nothing more:

- `parse_reference("registry/repo@sha256:<hex>")`: a reference; `oci://` is accepted and ignored.
- `Registry.push_artifact(...)`: blobs (monolithic upload), then an OCI 1.1 image manifest with an
  `artifactType`, exactly as ORAS writes one (empty config `{}`); `push_referrer(...)` attaches a
  manifest whose `subject` is another manifest, and keeps the referrers tag
  (`sha256-<hex>`, OCI distribution spec 1.1) up to date when the registry has no referrers API
  (CNCF distribution 2.x has none).
- `pull(reference, cache=..., client=..., allow_tag=...)`: digest-pinned only unless a tag is
  explicitly allowed; every byte read (manifest, layer, referrer) is checked against its digest
  before it is kept; everything kept is stored once under `<cache>/blobs/sha256/<hex>`, and the
  subject -> referrers list under `<cache>/referrers/<hex>.json` (what it names is re-checked
  by digest when read). Without a client that is on (generator.core.net: the command was asked
  to use the network), or with `offline=True`, nothing but the cache is read.

Every request goes through `generator.core.net.Client` (deadlines, byte caps, same-host
redirects, classified errors). Artifacts are bounded: at most MAX_LAYERS layers, no blob named by
two, MAX_BLOB_BYTES for all of them, MAX_UNPACKED_BYTES unpacked together, MAX_REFERRERS
signatures. Every registry answer that is not success is a named `RegistryError` subclass (401,
403, 404, 5xx, timeout, unreachable, digest mismatch, unpinned, not cached, offline); no
traceback reaches the user, and no registry text is repeated (an error names the status and at
most a distribution-spec error code).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from generator.core import envvars, safeio
from generator.core.atomic import write_atomic
from generator.core.errors import CatalogError, Diagnostic
from generator.core.net import Client, NetError, NetKind, Redirects, Response, is_loopback
from generator.core.urls import quote, urlencode, urljoin, urlsplit
from generator.core.yamlio import load_json

MANIFEST_V1 = "application/vnd.oci.image.manifest.v1+json"
INDEX_V1 = "application/vnd.oci.image.index.v1+json"
EMPTY_MEDIA_TYPE = "application/vnd.oci.empty.v1+json"
EMPTY_CONFIG = b"{}"
LAYER_TAR_GZIP = "application/vnd.oci.image.layer.v1.tar+gzip"
SIGSTORE_BUNDLE_MEDIA_TYPE = "application/vnd.dev.sigstore.bundle.v0.3+json"
# upstream AICR's artifact type for a directory packaged by ORAS (its pkg/oci)
AICR_ARTIFACT_TYPE = "application/vnd.nvidia.aicr.artifact"
# this catalog's evidence bundle pushed as an artifact (one layer: the .sigstore.json)
CATALOG_ARTIFACT_TYPE = "application/vnd.aicr-catalog.evidence.v1"
TITLE = "org.opencontainers.image.title"
CREATED = "org.opencontainers.image.created"
REPRODUCIBLE_CREATED = "1970-01-01T00:00:00Z"
ORAS_UNPACK = "io.deis.oras.content.unpack"
ORAS_DIGEST = "io.deis.oras.content.digest"

MAX_MANIFEST_BYTES = 4 << 20
MAX_BLOB_BYTES = 64 << 20  # one blob, and every layer of one artifact together
MAX_UNPACKED_BYTES = 64 << 20  # one artifact's layers unpacked, every layer together
MAX_LAYERS = 64  # layers of one manifest
MAX_REFERRERS = 64  # referrers of one subject
MAX_FILES = 10_000  # files of one artifact
TOKEN_BYTES = 64 << 10  # an anonymous token answer

_DIGEST_RE = re.compile(r"^sha256:[0-9a-f]{64}$")
_REPO_RE = re.compile(
    r"^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$"
)
_TAG_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$")
_HOST_RE = re.compile(r"^[A-Za-z0-9.-]+(?::[0-9]+)?$|^\[[0-9a-fA-F:]+\](?::[0-9]+)?$")


# --- errors -----------------------------------------------------------------------------------


class RegistryError(CatalogError):
    """A registry operation failed; `rule` names which way (also the diagnostic's rule)."""

    rule = "oci.error"
    hint = "check the reference and the registry, then run the command again"

    def __init__(self, message: str, where: str = "") -> None:
        super().__init__(
            message, [Diagnostic(where or "(registry)", 0, 0, "$", message, self.rule)]
        )


class InvalidReference(RegistryError):
    rule = "oci.reference"
    exit_code = 2


class UnpinnedReference(RegistryError):
    """A tag-only reference where a digest is required."""

    rule = "oci.unpinned"
    exit_code = 2


class RegistryUnauthorized(RegistryError):
    rule = "oci.unauthorized"  # 401


class RegistryForbidden(RegistryError):
    rule = "oci.forbidden"  # 403


class RegistryNotFound(RegistryError):
    rule = "oci.not-found"  # 404


class RegistryServerError(RegistryError):
    rule = "oci.server-error"  # 5xx


class RegistryTimeout(RegistryError):
    rule = "oci.timeout"


class RegistryUnreachable(RegistryError):
    rule = "oci.unreachable"


class RegistryProtocolError(RegistryError):
    """Any other unexpected answer (status, header or body)."""

    rule = "oci.protocol"


class DigestMismatch(RegistryError):
    """Content read does not hash to the digest it was asked for (or a pointer names)."""

    rule = "oci.digest-mismatch"


class NetworkOff(RegistryError):
    """The registry would be needed, and the command was not asked to use the network."""

    rule = "oci.offline"
    exit_code = 2
    hint = "run the command again with --online, or pull the artifact first (evidence pull)"


class NotCached(RegistryError):
    """--offline and the content is not in the cache."""

    rule = "oci.not-cached"


class UnsafeArtifact(RegistryError):
    """A layer that cannot be unpacked safely (links, devices, paths leaving the directory)."""

    rule = "oci.unsafe-artifact"


# --- references -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Reference:
    registry: str  # host[:port]
    repository: str
    tag: str | None = None
    digest: str | None = None  # sha256:<hex>

    def __str__(self) -> str:
        out = f"{self.registry}/{self.repository}"
        if self.tag:
            out += f":{self.tag}"
        if self.digest:
            out += f"@{self.digest}"
        return out

    @property
    def name(self) -> str:
        return f"{self.registry}/{self.repository}"

    def at(self, digest: str) -> Reference:
        return Reference(self.registry, self.repository, None, digest)


def parse_reference(text: str) -> Reference:
    """`[oci://]host[:port]/repo[/...][:tag][@sha256:<hex>]`; raises InvalidReference."""
    raw = text.removeprefix("oci://")
    digest: str | None = None
    if "@" in raw:
        raw, digest = raw.split("@", 1)
        if not _DIGEST_RE.fullmatch(digest):
            raise InvalidReference(f"{text!r}: digest must be sha256:<64 lower-case hex>", text)
    host, sep, path = raw.partition("/")
    if (
        not sep
        or not path
        or not _HOST_RE.fullmatch(host)
        or ("." not in host and ":" not in host and host != "localhost")
    ):
        raise InvalidReference(
            f"{text!r}: expected REGISTRY/REPOSITORY (a registry host like ghcr.io or 127.0.0.1:5000)",
            text,
        )
    tag: str | None = None
    last = path.rsplit("/", 1)[-1]
    if ":" in last:
        path, tag = path.rsplit(":", 1)
        if not _TAG_RE.fullmatch(tag):
            raise InvalidReference(f"{text!r}: {tag!r} is not a valid tag", text)
    if not _REPO_RE.fullmatch(path):
        raise InvalidReference(f"{text!r}: {path!r} is not a valid repository name", text)
    return Reference(host, path, tag, digest)


def sha256_digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def check_digest(digest: str, where: str = "") -> str:
    if not _DIGEST_RE.fullmatch(digest):
        raise InvalidReference(f"{digest!r} is not a sha256:<64 lower-case hex> digest", where)
    return digest


# --- the cache --------------------------------------------------------------------------------


def default_cache_dir() -> Path:
    return envvars.cache_home() / "aicr-catalog" / "oci"


@dataclass(frozen=True, slots=True)
class Cache:
    """Content-addressed: `blobs/sha256/<hex>` holds bytes whose sha256 is <hex> (checked on read)."""

    root: Path

    def _blob(self, digest: str) -> Path:
        return self.root / "blobs" / "sha256" / check_digest(digest).removeprefix("sha256:")

    def get(self, digest: str) -> bytes | None:
        try:
            data = safeio.read(self._blob(digest), root=self.root, limit=safeio.ARCHIVE_BYTES)
        except safeio.Refusal:
            return None
        if sha256_digest(data) != digest:  # a damaged or tampered entry is not used
            return None
        return data

    def put(self, digest: str, data: bytes) -> None:
        if sha256_digest(data) != digest:
            raise DigestMismatch(f"refusing to cache content under {digest}: it hashes differently")
        write_atomic(self._blob(digest), data, root=self.root)

    def referrers(self, subject: str) -> list[str] | None:
        path = self.root / "referrers" / (check_digest(subject).removeprefix("sha256:") + ".json")
        try:
            doc = load_json(path, root=self.root, limit=safeio.YAML_BYTES)
        except CatalogError:
            return None
        if not isinstance(doc, list) or not all(
            isinstance(d, str) and _DIGEST_RE.fullmatch(d) for d in doc
        ):
            return None
        return list(doc)

    def put_referrers(self, subject: str, digests: list[str]) -> None:
        path = self.root / "referrers" / (check_digest(subject).removeprefix("sha256:") + ".json")
        data = json.dumps(sorted(set(digests)), allow_nan=False).encode()
        write_atomic(path, data, root=self.root)


# --- the client -------------------------------------------------------------------------------


@dataclass
class Registry:
    """One registry host, spoken to through `client` (generator.core.net: off unless the
    command was asked to use the network, deadlines, byte caps). `plain_http` for loopback
    registries (tests, local mirrors)."""

    host: str
    client: Client
    plain_http: bool = False
    _tokens: dict[str, str] = field(default_factory=dict)

    @classmethod
    def for_reference(
        cls, ref: Reference, *, client: Client, plain_http: bool | None = None
    ) -> Registry:
        if plain_http is None:  # loopback registries speak plain HTTP (tests, local mirrors)
            host = ref.registry
            hostname = host[: host.index("]") + 1] if host.startswith("[") else host.split(":")[0]
            plain_http = is_loopback(hostname)
        return cls(ref.registry, client, plain_http=plain_http)

    @property
    def base(self) -> str:
        return f"{'http' if self.plain_http else 'https'}://{self.host}"

    # -- transport

    def _send(
        self,
        method: str,
        url: str,
        what: str,
        hdrs: Mapping[str, str],
        data: bytes | None,
        limit: int,
        redirects: Redirects = Redirects.SAME_HOST,
    ) -> Response:
        """One request through the network client; no answer at all is a RegistryError."""
        try:
            return self.client.request(
                method, url, max_bytes=limit, headers=hdrs, data=data, redirects=redirects
            )
        except NetError as e:
            raise _from_net(e, what) from e

    def _refused(self, resp: Response, what: str) -> RegistryError:
        """The error for an answer that is not one of those asked for (classified: the
        registry's own text is never shown, only a distribution-spec error code)."""
        code = resp.status
        detail = _error_detail(resp)
        if code == 401:
            return RegistryUnauthorized(
                f"{what}: {self.host} answered 401 Unauthorized{detail}", what
            )
        if code == 403:
            return RegistryForbidden(f"{what}: {self.host} answered 403 Forbidden{detail}", what)
        if code == 404:
            return RegistryNotFound(f"{what}: {self.host} answered 404 Not Found{detail}", what)
        if 500 <= code <= 599:
            return RegistryServerError(
                f"{what}: {self.host} answered {code} (server error){detail}", what
            )
        return RegistryProtocolError(f"{what}: {self.host} answered {code}{detail}", what)

    def _request(
        self,
        method: str,
        url: str,
        *,
        what: str,
        scope: str,
        limit: int | None = None,  # default: MAX_MANIFEST_BYTES
        headers: Mapping[str, str] | None = None,
        data: bytes | None = None,
        ok: tuple[int, ...] = (200,),
        missing_ok: bool = False,
        redirects: Redirects = Redirects.SAME_HOST,
    ) -> Response | None:
        hdrs = dict(headers or {})
        for attempt in range(2):
            token = self._tokens.get(scope)
            if token:
                hdrs["Authorization"] = f"Bearer {token}"
            resp = self._send(method, url, what, hdrs, data, limit or MAX_MANIFEST_BYTES, redirects)
            if resp.status == 401 and attempt == 0 and self._anonymous_token(resp, scope, what):
                continue
            break
        if resp.status in ok:
            return resp
        if resp.status == 404 and missing_ok:
            return None
        raise self._refused(resp, what)

    def _anonymous_token(self, resp: Response, scope: str, what: str) -> bool:
        """Follow a `Bearer realm=...` challenge anonymously (public repositories); the token
        answer is read with a cap (TOKEN_BYTES) like every other body."""
        challenge = resp.header("WWW-Authenticate") or ""
        if not challenge.lower().startswith("bearer "):
            return False
        params = dict(re.findall(r'(\w+)="([^"]*)"', challenge))
        realm = params.get("realm")
        # a token service over plain HTTP only for a plain-HTTP (loopback) registry
        if not realm or not realm.startswith(
            ("https://", "http://" if self.plain_http else "https://")
        ):
            return False
        query = {"scope": params.get("scope", scope)}
        if "service" in params:
            query["service"] = params["service"]
        try:
            answer = self.client.request(
                "GET", f"{realm}?{urlencode(query)}", max_bytes=TOKEN_BYTES
            )
        except NetError as e:
            if e.kind is not NetKind.TOO_LARGE:  # off, stalled, unreachable: that is the error
                raise _from_net(e, what) from e
            return False  # an answer over the cap holds no token: the 401 stands
        try:
            doc = json.loads(answer.body) if answer.status == 200 else {}
        except ValueError:
            return False
        token = doc.get("token") or doc.get("access_token") if isinstance(doc, dict) else None
        if not isinstance(token, str) or not token or len(token) > TOKEN_BYTES:
            return False
        self._tokens[scope] = token
        return True

    # -- reading

    def get_manifest(self, repository: str, ref: str) -> tuple[bytes, str, str]:
        """(bytes, media type, digest) of a manifest by tag or digest; a digest is checked."""
        what = f"{self.host}/{repository} manifest {ref}"
        accept = ", ".join(
            [MANIFEST_V1, INDEX_V1, "application/vnd.docker.distribution.manifest.v2+json"]
        )
        resp = self._request(
            "GET",
            f"{self.base}/v2/{repository}/manifests/{quote(ref, safe=':')}",
            what=what,
            scope=f"repository:{repository}:pull",
            headers={"Accept": accept},
        )
        assert resp is not None
        data = resp.body
        actual = sha256_digest(data)
        if ref.startswith("sha256:") and actual != ref:
            raise DigestMismatch(
                f"{what}: the registry served content whose digest is {actual}", what
            )
        media = (resp.header("Content-Type") or "").split(";")[0].strip()
        return data, media, actual

    def get_blob(self, repository: str, digest: str, limit: int = MAX_BLOB_BYTES) -> bytes:
        what = f"{self.host}/{repository} blob {digest}"
        resp = self._request(
            "GET",
            f"{self.base}/v2/{repository}/blobs/{digest}",
            what=what,
            scope=f"repository:{repository}:pull",
            limit=limit,
            # registries hand blobs to a storage host (ghcr.io, Docker Hub): the body is checked
            # against `digest` below, and no credentials go to the other host
            redirects=Redirects.CONTENT_ADDRESSED,
        )
        assert resp is not None
        data = resp.body
        if sha256_digest(data) != digest:
            raise DigestMismatch(
                f"{what}: the registry served content whose digest is {sha256_digest(data)}", what
            )
        return data

    def referrers(
        self, repository: str, subject: str, artifact_type: str | None = None
    ) -> list[dict[str, Any]]:
        """Descriptors of the manifests whose subject is `subject`: the referrers API, else the
        referrers tag `sha256-<hex>` (OCI distribution 1.1 fallback)."""
        what = f"{self.host}/{repository} referrers of {subject}"
        scope = f"repository:{repository}:pull"
        url = f"{self.base}/v2/{repository}/referrers/{subject}"
        if artifact_type:
            url += "?" + urlencode({"artifactType": artifact_type})
        resp = self._request(
            "GET", url, what=what, scope=scope, headers={"Accept": INDEX_V1}, missing_ok=True
        )
        data: bytes | None = None
        if resp is not None and (resp.header("Content-Type") or "").startswith(INDEX_V1):
            data = resp.body
        else:
            tag = subject.replace(":", "-")
            resp = self._request(
                "GET",
                f"{self.base}/v2/{repository}/manifests/{tag}",
                what=what,
                scope=scope,
                headers={"Accept": INDEX_V1},
                missing_ok=True,
            )
            if resp is None:
                return []
            data = resp.body
        try:
            doc = json.loads(data)
            found = [m for m in doc.get("manifests", []) if isinstance(m, dict)]
        except (ValueError, AttributeError) as e:
            raise RegistryProtocolError(f"{what}: the referrers index is not JSON", what) from e
        if len(found) > MAX_REFERRERS:
            raise RegistryProtocolError(f"{what}: more than {MAX_REFERRERS} referrers listed", what)
        return [m for m in found if artifact_type is None or m.get("artifactType") == artifact_type]

    # -- writing

    def push_blob(self, repository: str, data: bytes) -> str:
        digest = sha256_digest(data)
        what = f"{self.host}/{repository} blob {digest}"
        scope = f"repository:{repository}:pull,push"
        head = self._request(
            "HEAD",
            f"{self.base}/v2/{repository}/blobs/{digest}",
            what=what,
            scope=scope,
            missing_ok=True,
        )
        if head is not None:
            return digest
        resp = self._request(
            "POST", f"{self.base}/v2/{repository}/blobs/uploads/", what=what, scope=scope, ok=(202,)
        )
        assert resp is not None
        location = resp.header("Location")
        if not location:
            raise RegistryProtocolError(f"{what}: upload answer has no Location header", what)
        url = urljoin(f"{self.base}/", location)
        if urlsplit(url).netloc != self.host:
            raise RegistryProtocolError(f"{what}: the upload location is on another host", what)
        url += ("&" if "?" in url else "?") + urlencode({"digest": digest})
        self._request(
            "PUT",
            url,
            what=what,
            scope=scope,
            headers={"Content-Type": "application/octet-stream"},
            data=data,
            ok=(201, 204),
        )
        return digest

    def put_manifest(self, repository: str, ref: str, data: bytes, media_type: str) -> Response:
        what = f"{self.host}/{repository} manifest {ref}"
        resp = self._request(
            "PUT",
            f"{self.base}/v2/{repository}/manifests/{quote(ref, safe=':')}",
            what=what,
            scope=f"repository:{repository}:pull,push",
            headers={"Content-Type": media_type},
            data=data,
            ok=(201,),
        )
        assert resp is not None
        served = resp.header("Docker-Content-Digest")
        if served and served != sha256_digest(data):
            raise DigestMismatch(
                f"{what}: the registry stored it under another digest, not {sha256_digest(data)}",
                what,
            )
        return resp


def _from_net(e: NetError, what: str) -> RegistryError:
    """A network client's error as the registry error of its class (its message is the
    client's own text, never the server's)."""
    message = f"{what}: {e.message}"
    if e.kind is NetKind.OFF:
        return NetworkOff(message, what)
    if e.kind in (NetKind.TIMEOUT, NetKind.DEADLINE):
        return RegistryTimeout(message, what)
    if e.kind in (NetKind.UNREACHABLE, NetKind.TLS, NetKind.URL):
        return RegistryUnreachable(f"{what}: cannot connect ({e.message})", what)
    return RegistryProtocolError(message, what)


# the error codes of the OCI distribution spec: the only registry text an error message repeats
_SPEC_CODES = frozenset(
    {
        "BLOB_UNKNOWN",
        "BLOB_UPLOAD_INVALID",
        "BLOB_UPLOAD_UNKNOWN",
        "DIGEST_INVALID",
        "MANIFEST_BLOB_UNKNOWN",
        "MANIFEST_INVALID",
        "MANIFEST_UNKNOWN",
        "NAME_INVALID",
        "NAME_UNKNOWN",
        "SIZE_INVALID",
        "UNAUTHORIZED",
        "DENIED",
        "UNSUPPORTED",
        "TOOMANYREQUESTS",
    }
)


def _error_detail(resp: Response) -> str:
    """`: <CODE>` when the error body names a distribution-spec error code, else nothing."""
    try:
        doc = json.loads(resp.body)
    except ValueError:
        return ""
    errors = doc.get("errors") if isinstance(doc, dict) else None
    if isinstance(errors, list) and errors and isinstance(errors[0], dict):
        code = errors[0].get("code")
        if isinstance(code, str) and code in _SPEC_CODES:
            return f": {code}"
    return ""


# --- packaging --------------------------------------------------------------------------------


def _json(obj: Any) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()


def untar_layer(blob: bytes, what: str, budget: int | None = None) -> dict[str, bytes]:
    """The regular files of a tar(.gz) layer; links, devices and paths leaving it are refused.

    `budget`: the bytes the layer may unpack to (default MAX_UNPACKED_BYTES; a caller unpacking
    several layers of one artifact passes what the earlier ones left). Inflating stops there."""
    limit = MAX_UNPACKED_BYTES if budget is None else max(budget, 0)
    try:
        return safeio.tar_files(
            blob, what=what, member_limit=limit, total_limit=limit, quote_names=False
        )
    except safeio.Oversize:  # over what the artifact's earlier layers left of its budget
        msg = f"{what}: the artifact's layers unpack to more than {MAX_UNPACKED_BYTES} bytes"
        raise UnsafeArtifact(msg, what) from None
    except safeio.Refusal as e:
        raise UnsafeArtifact(f"{what}: layer {e.message}", what) from None


@dataclass(frozen=True, slots=True)
class Pushed:
    reference: Reference  # registry/repo@digest
    digest: str
    media_type: str
    size: int


def push_artifact(
    registry: Registry,
    ref: Reference,
    *,
    artifact_type: str,
    layers: list[tuple[str, bytes, Mapping[str, str]]],
    annotations: Mapping[str, str] | None = None,
    subject: Pushed | None = None,
) -> Pushed:
    """Push blobs and an OCI 1.1 image manifest (empty config), tagged `ref.tag` if any."""
    registry.push_blob(ref.repository, EMPTY_CONFIG)
    descriptors: list[dict[str, Any]] = []
    for media_type, data, ann in layers:
        digest = registry.push_blob(ref.repository, data)
        d: dict[str, Any] = {"mediaType": media_type, "digest": digest, "size": len(data)}
        if ann:
            d["annotations"] = dict(ann)
        descriptors.append(d)
    manifest: dict[str, Any] = {
        "schemaVersion": 2,
        "mediaType": MANIFEST_V1,
        "artifactType": artifact_type,
        "config": {
            "mediaType": EMPTY_MEDIA_TYPE,
            "digest": sha256_digest(EMPTY_CONFIG),
            "size": 2,
            "data": "e30=",
        },
        "layers": descriptors,
        "annotations": {CREATED: REPRODUCIBLE_CREATED, **(annotations or {})},
    }
    if subject is not None:
        manifest["subject"] = {
            "mediaType": subject.media_type,
            "digest": subject.digest,
            "size": subject.size,
        }
    body = _json(manifest)
    digest = sha256_digest(body)
    resp = registry.put_manifest(ref.repository, ref.tag or digest, body, MANIFEST_V1)
    if subject is not None and resp.header("OCI-Subject") is None:
        _update_referrers_tag(
            registry,
            ref.repository,
            subject.digest,
            {
                "mediaType": MANIFEST_V1,
                "digest": digest,
                "size": len(body),
                "artifactType": artifact_type,
                **({"annotations": dict(annotations)} if annotations else {}),
            },
        )
    return Pushed(ref.at(digest), digest, MANIFEST_V1, len(body))


def _update_referrers_tag(
    registry: Registry, repository: str, subject: str, descriptor: dict[str, Any]
) -> None:
    """The OCI 1.1 referrers tag schema: an index tagged `sha256-<hex>` listing the referrers."""
    tag = subject.replace(":", "-")
    what = f"{registry.host}/{repository} referrers tag {tag}"
    resp = registry._request(
        "GET",
        f"{registry.base}/v2/{repository}/manifests/{tag}",
        what=what,
        scope=f"repository:{repository}:pull,push",
        headers={"Accept": INDEX_V1},
        missing_ok=True,
    )
    manifests: list[dict[str, Any]] = []
    if resp is not None:
        try:
            manifests = [
                m for m in json.loads(resp.body).get("manifests", []) if isinstance(m, dict)
            ]
        except (ValueError, AttributeError):
            manifests = []
    manifests = [m for m in manifests if m.get("digest") != descriptor["digest"]] + [descriptor]
    index = {"schemaVersion": 2, "mediaType": INDEX_V1, "manifests": manifests}
    registry.put_manifest(repository, tag, _json(index), INDEX_V1)


# --- pulling ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Pulled:
    """A pulled artifact: its manifest, the files of its layers, and its Sigstore referrers."""

    reference: Reference  # registry/repo@digest
    digest: str
    manifest: Mapping[str, Any]
    artifact_type: str
    files: Mapping[str, bytes]  # unpacked tar layers, and single-file layers by their title
    signatures: tuple[bytes, ...]  # Sigstore bundles attached as referrers (in digest order)
    from_cache: bool


def _pinned(ref: Reference, expect_digest: str | None, allow_tag: bool) -> Reference:
    """The reference pinned to `expect_digest` when given; a tag-only one only with
    `allow_tag`."""
    shown = str(ref)
    if expect_digest is not None:
        check_digest(expect_digest, shown)
        if ref.digest is not None and ref.digest != expect_digest:
            raise DigestMismatch(
                f"{shown}: the reference pins {ref.digest} but {expect_digest} is expected", shown
            )
        if ref.digest is None:
            ref = ref.at(expect_digest)
            shown = str(ref)
    if ref.digest is None and not allow_tag:
        raise UnpinnedReference(
            f"{shown} is tag-only: a tag can be moved to other content; pull by digest "
            "(REGISTRY/REPO@sha256:<hex>) or allow tags explicitly (--allow-tag)",
            shown,
        )
    return ref


def _store_layers(
    reg: Registry, ref: Reference, doc: Mapping[str, Any], cache: Cache, limit: int = MAX_BLOB_BYTES
) -> None:
    for layer in doc["layers"]:
        if cache.get(layer["digest"]) is None:
            cache.put(layer["digest"], reg.get_blob(ref.repository, layer["digest"], limit))


def _store_signatures(reg: Registry, ref: Reference, digest: str, cache: Cache) -> list[str]:
    """The subject's Sigstore bundle referrers, stored; their manifest digests."""
    shown = str(ref)
    sig_manifests: list[str] = []
    for desc in reg.referrers(ref.repository, digest, SIGSTORE_BUNDLE_MEDIA_TYPE):
        rdigest = desc.get("digest")
        if not isinstance(rdigest, str) or not _DIGEST_RE.fullmatch(rdigest):
            continue
        rdata, _, _ = reg.get_manifest(ref.repository, rdigest)
        cache.put(rdigest, rdata)
        rdoc = _manifest_doc(rdata, f"{shown} referrer {rdigest}")
        if (rdoc.get("subject") or {}).get("digest") != digest:
            continue  # an index entry whose manifest does not name this subject: ignored
        _store_layers(reg, ref, rdoc, cache, 1 << 20)
        sig_manifests.append(rdigest)
    return sig_manifests


def _download(ref: Reference, cache: Cache, reg: Registry) -> str:
    """The artifact, its layers and signature referrers into the cache; its manifest digest."""
    data, _, digest = reg.get_manifest(ref.repository, ref.digest or ref.tag or "")
    cache.put(digest, data)
    _store_layers(reg, ref, _manifest_doc(data, str(ref)), cache)
    sig_manifests = _store_signatures(reg, ref, digest, cache)
    cache.put_referrers(digest, sig_manifests)
    return digest


def pull(
    reference: str | Reference,
    *,
    cache: Cache,
    client: Client | None = None,
    offline: bool = False,
    allow_tag: bool = False,
    registry: Registry | None = None,
    expect_digest: str | None = None,
) -> Pulled:
    """Pull by digest, from the cache when it has every piece; else from the registry through
    `registry` or `client` (generator.core.net). Without either, or with a client that is off,
    or `offline`, only the cache is read (NetworkOff / NotCached name why).

    A tag-only reference is refused (UnpinnedReference) unless `allow_tag`; `expect_digest`
    (a pointer's `bundle.digest`) must then equal what the tag resolves to.
    """
    network = registry is not None or (client is not None and client.online)
    asked_offline = offline
    offline = offline or not network
    ref = parse_reference(reference) if isinstance(reference, str) else reference
    ref = _pinned(ref, expect_digest, allow_tag)
    shown = str(ref)
    if ref.digest is not None:
        hit = _from_cache(ref, cache)
        # a cached artifact with no signature yet is asked again when the network may be used:
        # the signature referrer is attached after the push
        if hit is not None and (hit.signatures or offline or not _expects_referrers(hit)):
            return hit
    if offline:
        if not asked_offline:
            raise NetworkOff(
                f"{shown}: not in the OCI cache, and this command was not asked to use the "
                "network (--online)",
                shown,
            )
        raise NotCached(
            f"{shown}: not in the cache {cache.root} and --offline forbids the network; "
            "pull it once without --offline",
            shown,
        )
    if registry is not None:
        reg = registry
    else:
        assert client is not None
        reg = Registry.for_reference(ref, client=client)
    digest = _download(ref, cache, reg)
    out = _from_cache(ref.at(digest), cache)
    if out is None:  # pragma: no cover - everything was just stored
        raise NotCached(f"{shown}: cache write did not take", shown)
    return Pulled(
        out.reference, out.digest, out.manifest, out.artifact_type, out.files, out.signatures, False
    )


def _expects_referrers(pulled: Pulled) -> bool:
    """Upstream summary bundles carry their signature as a referrer; this catalog's pushed
    bundles carry it inside (see generator.evidence.publish)."""
    return pulled.artifact_type != CATALOG_ARTIFACT_TYPE


def _manifest_doc(data: bytes, what: str) -> dict[str, Any]:
    try:
        doc = json.loads(data)
    except ValueError as e:
        raise RegistryProtocolError(f"{what}: manifest is not JSON ({e})", what) from e
    if (
        not isinstance(doc, dict)
        or doc.get("schemaVersion") != 2
        or not isinstance(doc.get("layers"), list)
    ):
        raise RegistryProtocolError(
            f"{what}: not an OCI image manifest (schemaVersion 2 with layers)", what
        )
    for layer in doc["layers"]:
        if (
            not isinstance(layer, dict)
            or not isinstance(layer.get("digest"), str)
            or not _DIGEST_RE.fullmatch(layer["digest"])
        ):
            raise RegistryProtocolError(f"{what}: a layer has no sha256 digest", what)
        if (
            not isinstance(layer.get("size"), int)
            or layer["size"] < 0
            or layer["size"] > MAX_BLOB_BYTES
        ):
            raise RegistryProtocolError(f"{what}: a layer's size is missing or too large", what)
    layers = doc["layers"]
    if len(layers) > MAX_LAYERS:
        raise RegistryProtocolError(f"{what}: more than {MAX_LAYERS} layers", what)
    if len({layer["digest"] for layer in layers}) != len(layers):
        raise UnsafeArtifact(f"{what}: one blob is named by more than one layer", what)
    if sum(layer["size"] for layer in layers) > MAX_BLOB_BYTES:
        raise RegistryProtocolError(
            f"{what}: the layers together are larger than {MAX_BLOB_BYTES} bytes", what
        )
    return doc


def _from_cache(ref: Reference, cache: Cache) -> Pulled | None:
    assert ref.digest is not None
    data = cache.get(ref.digest)
    sigs = cache.referrers(ref.digest)
    if data is None or sigs is None:
        return None
    shown = str(ref)
    manifest = _manifest_doc(data, shown)
    if len(sigs) > MAX_REFERRERS:
        raise RegistryProtocolError(
            f"{shown}: more than {MAX_REFERRERS} signature referrers", shown
        )
    files: dict[str, bytes] = {}
    budget = MAX_UNPACKED_BYTES  # every layer of the artifact together
    for layer in manifest["layers"]:
        blob = cache.get(layer["digest"])
        if blob is None:
            return None
        if len(blob) != layer["size"]:
            raise DigestMismatch(
                f"{shown}: layer {layer['digest']} is {len(blob)} bytes, the manifest says {layer['size']}",
                shown,
            )
        ann = layer.get("annotations") or {}
        media = layer.get("mediaType", "")
        if (
            media in (LAYER_TAR_GZIP, "application/vnd.oci.image.layer.v1.tar")
            or ann.get(ORAS_UNPACK) == "true"
        ):
            unpacked = untar_layer(blob, f"{shown} layer {layer['digest']}", budget)
            budget -= sum(len(c) for c in unpacked.values())
            if len(files) + len(unpacked) > MAX_FILES:
                raise UnsafeArtifact(f"{shown}: more than {MAX_FILES} files", shown)
            for name, content in unpacked.items():
                if name in files:
                    raise UnsafeArtifact(f"{shown}: a file is in two layers", shown)
                files[name] = content
        else:
            title = ann.get(TITLE)
            if not isinstance(title, str) or not title or "/" in title or title in (".", ".."):
                raise UnsafeArtifact(
                    f"{shown}: a single-file layer has no safe {TITLE} annotation", shown
                )
            files[title] = blob
    signatures = _cached_signatures(shown, sigs, cache)
    if signatures is None:
        return None
    artifact_type = manifest.get("artifactType") or (manifest.get("config") or {}).get(
        "mediaType", ""
    )
    return Pulled(ref, ref.digest, manifest, str(artifact_type), files, tuple(signatures), True)


def _cached_signatures(shown: str, sigs: list[str], cache: Cache) -> list[bytes] | None:
    """The Sigstore bundles of the cached referrers `sigs` (None when one is missing)."""
    signatures: list[bytes] = []
    for rdigest in sigs:
        rdata = cache.get(rdigest)
        if rdata is None:
            return None
        rdoc = _manifest_doc(rdata, f"{shown} referrer {rdigest}")
        if len(rdoc["layers"]) != 1:
            raise RegistryProtocolError(
                f"{shown}: Sigstore referrer {rdigest} must have exactly one layer", shown
            )
        blob = cache.get(rdoc["layers"][0]["digest"])
        if blob is None:
            return None
        signatures.append(blob)
    return signatures
