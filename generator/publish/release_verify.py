"""`release verify DIR`: check a directory of downloaded release assets, offline.

What a release publishes (see `generator/publish/release.py` and `.github/workflows/release.yml`): flat,
uniquely named assets; `SHA256SUMS` naming each of them; `release-manifest.json`, signed keylessly
by the release workflow; and its Sigstore bundle `release-manifest.json.sigstore.json`.

The checks, in order; every problem is reported, none stops the others:

1. `SHA256SUMS` is well formed (`<64 hex>  <name>`, a name without a directory, each once) and
   every listed asset is present as a regular file whose sha256 matches (with `allow_missing`,
   absent assets are skipped: a partial download). A file in the directory that is not listed
   is refused too: nothing unlisted can ride along.
2. The manifest's Sigstore bundle verifies over the manifest's bytes with sigstore-python's
   public API (`Verifier.verify_artifact`) against a trust root file, offline, under the policy
   `Identity(identity, issuer)`: the certificate must name exactly the release workflow of the
   expected repository at the tag of the version, issued by GitHub Actions' OIDC issuer.
3. The signed manifest anchors the rest: its version is the expected one, and the sha256 it
   records for each bundle archive and for the site archive equals the file's (so an asset and
   its `SHA256SUMS` line rewritten together are still caught). `CHANGELOG.md` is informational
   and not covered by the signature.

Files are read only when they are regular files inside DIR (never through a link, never a FIFO
or a device), and small documents are read under a size cap.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from generator.core import safeio
from generator.core.errors import Diagnostic, printable
from generator.evidence.model import TrustRoot
from generator.evidence.trustroot import parse_trusted_root
from generator.publish.release import MANIFEST, SITE_ARCHIVE, SUMS

SIGNATURE = f"{MANIFEST}.sigstore.json"
GITHUB_ISSUER = "https://token.actions.githubusercontent.com"
DEFAULT_REPOSITORY = "NVIDIA/aicr-catalog"
WORKFLOW = ".github/workflows/release.yml"
DOC_LIMIT = 16 * 1024 * 1024  # SHA256SUMS, the manifest and its bundle
ASSET_LIMIT = 16 << 30  # an asset hashed in chunks (the site archive): 16 GiB
_SUM_LINE = re.compile(r"([0-9a-f]{64})  ([^/\\\x00-\x1f]+)")
_REPOSITORY = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100}")
_VERSION = re.compile(r"v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)")


def expected_identity(repository: str, version: str) -> str:
    """The certificate identity of `release.yml` run on the tag `version` of `repository`."""
    return f"https://github.com/{repository}/{WORKFLOW}@refs/tags/{version}"


@dataclass(frozen=True, slots=True)
class VerifyReport:
    directory: str
    version: str | None
    commit: str | None
    identity: str
    issuer: str
    trust_root: str
    verified_assets: tuple[str, ...]
    problems: tuple[Diagnostic, ...]

    @property
    def ok(self) -> bool:
        return not self.problems


class _Unreadable(Exception):
    pass


def _regular(path: Path) -> os.stat_result:
    try:
        st = safeio.lstat(path)
    except FileNotFoundError as e:
        raise _Unreadable("missing") from e
    except OSError as e:
        raise _Unreadable(f"cannot read: {e.strerror or e}") from e
    if stat.S_ISLNK(st.st_mode):
        raise _Unreadable("is a symbolic link, not a release asset")
    if not stat.S_ISREG(st.st_mode):
        raise _Unreadable("is not a regular file")
    return st


def _sha256(path: Path) -> str:
    _regular(path)
    try:
        return safeio.sha256(path, limit=ASSET_LIMIT)
    except safeio.Refusal as e:
        raise _Unreadable(e.message) from None


def _read_doc(path: Path) -> bytes:
    st = _regular(path)
    if st.st_size > DOC_LIMIT:
        raise _Unreadable(
            f"is {st.st_size} bytes, more than the {DOC_LIMIT} a release document has"
        )
    try:
        return safeio.read(path, limit=DOC_LIMIT)
    except safeio.Refusal as e:
        if e.rule == safeio.TOO_LARGE:
            raise _Unreadable(
                f"is more than the {DOC_LIMIT} bytes a release document has"
            ) from None
        raise _Unreadable(e.message) from None


def _problem(where: str, message: str, rule: str, line: int = 0) -> Diagnostic:
    return Diagnostic(printable(where), line, 1 if line else 0, "$", message, rule)


def parse_sums(text: str) -> tuple[dict[str, str], list[Diagnostic]]:
    """{asset name: sha256} from SHA256SUMS, with a located problem for every bad line."""
    sums: dict[str, str] = {}
    problems = []
    for n, line in enumerate(text.split("\n"), 1):
        if not line:
            continue
        m = _SUM_LINE.fullmatch(line)
        if m is None or m.group(2) in (".", ".."):
            problems.append(
                _problem(
                    SUMS, "not a '<sha256>  <asset name>' line for a flat asset", "release.sums", n
                )
            )
            continue
        name = m.group(2)
        if name in sums:
            problems.append(_problem(SUMS, f"{name} is listed twice", "release.sums", n))
            continue
        if name == SUMS:
            problems.append(_problem(SUMS, "SHA256SUMS cannot list itself", "release.sums", n))
            continue
        sums[name] = m.group(1)
    return sums, problems


def _check_signature(
    manifest: bytes, bundle_json: bytes, trust_root: TrustRoot, identity: str, issuer: str
) -> str | None:
    """None if the bundle verifies over `manifest` for `identity`/`issuer`, else why not."""
    from cryptography.exceptions import UnsupportedAlgorithm
    from sigstore.errors import Error
    from sigstore.models import Bundle
    from sigstore.verify import Verifier
    from sigstore.verify.policy import Identity

    try:
        bundle = Bundle.from_json(bundle_json)
    except (Error, ValueError, TypeError, KeyError, UnsupportedAlgorithm) as e:
        return f"not a Sigstore bundle: {str(e).splitlines()[0] if str(e) else type(e).__name__}"
    if trust_root.demo:  # the command refuses it already; the library does too, by content
        return "the trust root is the demo root, whose private keys are public: refused"
    try:
        # from the bytes read and judged once (trustroot.py), never from the path again
        verifier = Verifier(trusted_root=parse_trusted_root(trust_root.data))
        verifier.verify_artifact(manifest, bundle, Identity(identity=identity, issuer=issuer))
    except (Error, ValueError, OSError, UnsupportedAlgorithm) as e:
        return str(e).splitlines()[0] if str(e) else type(e).__name__
    return None


def _anchored(manifest: Mapping[str, Any]) -> dict[str, str]:
    """{asset name: sha256} that the signed manifest records (bundle archives and the site)."""
    out: dict[str, str] = {}
    site = manifest.get("site")
    if isinstance(site, Mapping) and isinstance(site.get("file"), str):
        out[site["file"]] = str(site.get("sha256"))
    for r in manifest.get("recipes") or []:
        if not isinstance(r, Mapping):
            continue
        profile = (r.get("scaleProfile") or {}).get("name")
        for deployer, digest in (r.get("bundles") or {}).items():
            out[f"{r.get('name')}-{profile}-{deployer}.tar.gz"] = str(digest)
    return out


def verify_release(
    directory: Path,
    trust_root: TrustRoot,
    *,
    version: str | None = None,
    repository: str = DEFAULT_REPOSITORY,
    identity: str | None = None,
    issuer: str = GITHUB_ISSUER,
    allow_missing: bool = False,
) -> VerifyReport:
    """Every check of the module docstring over `directory`; problems are collected, not raised.

    The identity is `identity` when given, else the release workflow of `repository` at the tag
    `version` (default: the version the manifest states, which the signature then binds)."""
    if not _REPOSITORY.fullmatch(repository):
        raise ValueError(f"repository '{repository}' is not OWNER/NAME")
    if version is not None and not _VERSION.fullmatch(version):
        raise ValueError(f"version '{version}' is not of the form vMAJOR.MINOR.PATCH")
    problems: list[Diagnostic] = []
    # 1. SHA256SUMS against the files
    listed = _check_sums(directory, allow_missing, problems)
    # 2. the manifest's signature
    manifest_bytes, manifest_doc = _read_manifest(directory, problems)
    stated = manifest_doc.get("version") if manifest_doc is not None else None
    want_version = version or (stated if isinstance(stated, str) else None)
    if identity is None:
        identity = expected_identity(repository, want_version or "<unknown version>")
    if manifest_bytes is not None:
        problems += _signature_problems(directory, manifest_bytes, trust_root, identity, issuer)
    # 3. what the signed manifest anchors
    if manifest_doc is not None:
        problems += _anchor_problems(manifest_doc, want_version, listed)
    commit = (manifest_doc or {}).get("commit")
    return VerifyReport(
        directory=str(directory),
        version=stated if isinstance(stated, str) else None,
        commit=commit if isinstance(commit, str) else None,
        identity=identity,
        issuer=issuer,
        trust_root=trust_root.name,
        verified_assets=listed.verified,
        problems=tuple(sorted(set(problems))),
    )


@dataclass(frozen=True, slots=True)
class _Listed:
    """What SHA256SUMS says and what the files hold: the sums listed, the sha256 of each
    listed file that could be read, and those that match."""

    sums: Mapping[str, str]
    actual: Mapping[str, str]
    verified: tuple[str, ...]


def _read_sums(directory: Path, problems: list[Diagnostic]) -> str:
    """The text of SHA256SUMS ("" when it cannot be read: then a problem says why)."""
    try:
        return _read_doc(directory / SUMS).decode("utf-8")
    except _Unreadable as e:
        problems.append(_problem(SUMS, f"{SUMS} {e}", "release.sums"))
    except UnicodeDecodeError:
        problems.append(_problem(SUMS, f"{SUMS} is not UTF-8 text", "release.sums"))
    return ""


def _check_sums(directory: Path, allow_missing: bool, problems: list[Diagnostic]) -> _Listed:
    """Each file SHA256SUMS lists against its sum; files it does not list; the manifest and
    its signature listed."""
    sums_text = _read_sums(directory, problems)
    sums, bad_lines = parse_sums(sums_text)
    problems += bad_lines
    actual: dict[str, str] = {}
    verified: list[str] = []
    for name, want in sorted(sums.items()):
        try:
            got = _sha256(directory / name)
        except _Unreadable as e:
            if str(e) == "missing" and allow_missing and name not in (MANIFEST, SIGNATURE):
                continue
            problems.append(_problem(name, f"listed in {SUMS} but {e}", "release.asset"))
            continue
        actual[name] = got
        if got != want:
            message = f"sha256 {got} does not match {want} in {SUMS}: the asset was altered"
            problems.append(_problem(name, message, "release.tampered"))
        else:
            verified.append(name)
    if sums_text:  # without SHA256SUMS, no file is "unlisted"
        problems += _unlisted(directory, sums)
    for name in (MANIFEST, SIGNATURE):
        if sums and name not in sums:
            problems.append(_problem(SUMS, f"{name} is not listed", "release.sums"))
    return _Listed(sums, actual, tuple(verified))


def _unlisted(directory: Path, sums: Mapping[str, str]) -> list[Diagnostic]:
    """The files of `directory` that SHA256SUMS does not list (or why it cannot be listed)."""
    try:
        present = [e.name for e in safeio.listdir(directory)]
    except safeio.Refusal as r:
        return [_problem(str(directory), r.message, "release.asset")]
    message = f"not listed in {SUMS}: not an asset of this release"
    return [
        _problem(name, message, "release.asset")
        for name in present
        if name != SUMS and name not in sums
    ]


def _read_manifest(
    directory: Path, problems: list[Diagnostic]
) -> tuple[bytes | None, dict[str, Any] | None]:
    """The manifest's bytes (None when unreadable) and its document (None unless a JSON
    object)."""
    try:
        manifest_bytes = _read_doc(directory / MANIFEST)
    except _Unreadable as e:
        problems.append(_problem(MANIFEST, f"{MANIFEST} {e}", "release.manifest"))
        return None, None
    try:
        loaded = json.loads(manifest_bytes)
    except (ValueError, RecursionError):
        problems.append(_problem(MANIFEST, "not JSON", "release.manifest"))
        return manifest_bytes, None
    if not isinstance(loaded, dict):
        problems.append(_problem(MANIFEST, "not a JSON object", "release.manifest"))
        return manifest_bytes, None
    return manifest_bytes, loaded


def _signature_problems(
    directory: Path, manifest: bytes, trust_root: TrustRoot, identity: str, issuer: str
) -> list[Diagnostic]:
    """Why the manifest's Sigstore bundle does not verify for `identity` ([] when it does)."""
    try:
        signature = _read_doc(directory / SIGNATURE)
    except _Unreadable as e:
        return [_problem(SIGNATURE, f"{SIGNATURE} {e}", "release.signature")]
    why = _check_signature(manifest, signature, trust_root, identity, issuer)
    if why is None:
        return []
    message = (
        f"the manifest's signature does not verify for {identity} "
        f"(issuer {issuer}, trust root {trust_root.name}): {why}"
    )
    return [_problem(SIGNATURE, message, "release.signature")]


def _anchor_problems(
    manifest_doc: Mapping[str, Any], want_version: str | None, listed: _Listed
) -> list[Diagnostic]:
    """The manifest's version, and the archives it records against the files and the sums."""
    problems: list[Diagnostic] = []
    stated = manifest_doc.get("version")
    if not isinstance(stated, str) or not _VERSION.fullmatch(stated):
        problems.append(_problem(MANIFEST, "states no version", "release.manifest"))
    elif want_version != stated:
        message = f"is the manifest of {stated}, not of {want_version}"
        problems.append(_problem(MANIFEST, message, "release.manifest"))
    anchored = _anchored(manifest_doc)
    if isinstance(stated, str) and SITE_ARCHIVE.format(version=stated) not in anchored:
        problems.append(_problem(MANIFEST, "records no site archive", "release.manifest"))
    actual = listed.actual
    for name, want in sorted(anchored.items()):
        if name in actual and actual[name] != want:
            message = f"sha256 {actual[name]} is not the {want} the signed manifest records"
            problems.append(_problem(name, message, "release.tampered"))
        if name not in listed.sums:
            message = f"recorded in the manifest but not listed in {SUMS}"
            problems.append(_problem(name, message, "release.sums"))
    for name in sorted(actual):
        if name.endswith(".tar.gz") and name not in anchored:
            message = "an archive the signed manifest does not record"
            problems.append(_problem(name, message, "release.asset"))
    return problems


def report_text(r: VerifyReport) -> str:
    lines = [d.format() for d in r.problems]
    if r.ok:
        lines.append(
            f"release {r.version} (commit {(r.commit or '?')[:12]}): verified "
            f"{len(r.verified_assets)} asset(s) against {SUMS}; manifest signed by {r.identity} "
            f"(issuer {r.issuer}, trust root {r.trust_root})"
        )
    else:
        lines.append(
            f"release verify {printable(r.directory)}: REFUSED, {len(r.problems)} problem(s)"
        )
    return "\n".join(lines) + "\n"
