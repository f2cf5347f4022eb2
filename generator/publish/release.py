"""Stage 8, release: a versioned, reproducible set of archives from a clean tree at a tag.

Outputs (into a temporary directory, swapped into place only when complete):
`<recipe>-<profile>-<deployer>.tar.gz` for every leaf × profile × deployer, the site as
`aicr-catalog-site-<version>.tar.gz`, `release-manifest.json` (version, commit, every recipe
digest, bundle digest, evidence digest, status and scale ceiling), `CHANGELOG.md` against the
previous release, and `SHA256SUMS` over everything. Every file sits at the top level under a
unique name, so the directory is the list of release assets and `SHA256SUMS` names them as they
are published (the release workflow adds the manifest's Sigstore bundle; `release verify` checks
the lot: generator/publish/release_verify.py). The same commit and version give
byte-identical outputs: dates come from the commit, never from the clock.

Refused: a dirty tree, a tag that points elsewhere, a version not greater than the previous one,
the demo trust root however it is given (`demo`, or a path to the demo root, a copy or a link:
recognised by its content, see `generator.evidence.trustroot`), and any sample evidence counted
as qualification. `evidence[].sha256` in the manifest is the sha256 of the evidence file's bytes.
"""

from __future__ import annotations

import hashlib
import json
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.version import Version

from generator import __version__
from generator.core import markdown, names, proc, safeio, timeutil
from generator.core.atomic import TreeWriter, make_dirs
from generator.core.errors import CatalogError, ReleaseError, SiteError
from generator.core.outputs import OutputKind, check_output_dir, discard, make_temp_dir
from generator.core.yamlio import load_json
from generator.publish.diff import compare, materialize, snapshot, to_markdown
from generator.render.archive import archive_bytes
from generator.render.common import MODE_FILE, BundleFile, Deployer
from generator.site import apifiles
from generator.site.outdir import swap_in

VERSION_RE = re.compile(r"^v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)$")
SITE_ARCHIVE = "aicr-catalog-site-{version}.tar.gz"
MANIFEST = "release-manifest.json"
CHANGELOG = "CHANGELOG.md"
SUMS = "SHA256SUMS"
DEPLOYERS = frozenset(str(d) for d in Deployer)
TREE_PATHS = ("catalog", "evidence", "docs", "mkdocs.yml", "CONTRIBUTING.md", "SECURITY.md")
GIT_TIMEOUT = 300  # seconds for one git question (status, tags, rev-parse) of the release


@dataclass(frozen=True, slots=True)
class ReleaseReport:
    version: str
    commit: str
    previous: str | None
    files: tuple[str, ...]


def _git(repo: Path, *args: str) -> str:
    try:
        done = proc.git(repo, *args, timeout=GIT_TIMEOUT)
    except proc.ProcError as e:
        raise ReleaseError(f"git {' '.join(args)}: {e.message}") from None
    if not done.ok:
        raise ReleaseError(f"git {' '.join(args)}: {done.error_text()}")
    return done.text()


def _tags(repo: Path) -> list[str]:
    return [t for t in _git(repo, "tag", "--list", "v*").split() if names.valid(VERSION_RE, t)]


def check_preconditions(
    repo: Path, version: str, previous: str | None, trust_root: str
) -> tuple[str, str | None]:
    """(commit, previous) if the release may proceed; raises ReleaseError naming why not."""
    if not names.valid(VERSION_RE, version):
        raise ReleaseError(f"version '{version}' is not of the form vMAJOR.MINOR.PATCH")
    _refuse_demo(repo, trust_root)
    dirty = _git(repo, "status", "--porcelain", "--untracked-files=normal").splitlines()
    if dirty:
        shown = ", ".join(line[3:] for line in dirty[:5]) + (" …" if len(dirty) > 5 else "")
        raise ReleaseError(
            f"the working tree is not clean ({shown}); a release builds only from a clean tree"
        )
    commit = _git(repo, "rev-parse", "HEAD").strip()
    if version in _tags(repo):
        tagged = _git(repo, "rev-parse", f"{version}^{{commit}}").strip()
        if tagged != commit:
            raise ReleaseError(f"tag {version} points at {tagged[:12]}, not at HEAD {commit[:12]}")
    if previous is None:
        older = sorted((t for t in _tags(repo) if t != version), key=lambda t: Version(t[1:]))
        previous = older[-1] if older else None
    if previous is not None:
        if not names.valid(VERSION_RE, previous):
            raise ReleaseError(
                f"previous version '{previous}' is not of the form vMAJOR.MINOR.PATCH"
            )
        if Version(version[1:]) <= Version(previous[1:]):
            raise ReleaseError(
                f"version {version} is not greater than the previous release {previous}"
            )
    return commit, previous


def _refuse_demo(repo: Path, trust_root: str) -> None:
    """ReleaseError for the demo root, by name or by content (a path, a copy, a link to it):
    judged by the one function every command's trust root goes through."""
    from generator.evidence.trustroot import RootUse, load_trust_root

    try:
        load_trust_root(trust_root, repo / "catalog", use=RootUse.RELEASE)
    except CatalogError as e:
        raise ReleaseError(
            f"release refuses the demo trust root: sample evidence must never count as "
            f"qualification ({e.message})"
            if any(d.rule == "trust-root.demo" for d in e.diagnostics)
            else e.message
        ) from e


def _evidence_digests(tree: Path) -> dict[str, str]:
    """`evidence/...` path -> sha256 of the file's bytes, for every regular file (not a link)
    under the tree's evidence directory."""
    out: dict[str, str] = {}
    top = tree / "evidence"
    if not safeio.is_dir(top):
        return out
    for e in sorted(safeio.walk(top).entries, key=lambda e: safeio.order_key(e.rel)):
        if e.kind is safeio.Kind.FILE and e.stat is not None and stat.S_ISREG(e.stat.st_mode):
            data = safeio.read(e.path, root=top, where="the evidence", limit=safeio.OTHER_BYTES)
            out[f"evidence/{e.rel}"] = _sha(data)
    return out


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _site_archive(site: Path, version: str, epoch: int) -> bytes:
    files = {
        rel: BundleFile(data, MODE_FILE)
        for rel, data in safeio.files(site, where="the built site", limit=safeio.OTHER_BYTES)
    }
    return archive_bytes(files, f"aicr-catalog-site-{version}", mtime=epoch)


def _manifest(
    version: str,
    commit: str,
    epoch: int,
    site: Path,
    bundles: Mapping[str, bytes],
    site_file: str,
    site_bytes: bytes,
    evidence_sha256: Mapping[str, str],
) -> dict[str, Any]:
    """The release manifest of the built `site` (its API documents), its bundle archives and
    site archive, and the evidence files' sha256. Raises ReleaseError when sample evidence
    would count as qualification."""
    index = load_json(site / apifiles.RECIPES.path(), root=site, limit=safeio.ARCHIVE_BYTES)
    try:  # the evidence index and each recipe's file, checked against the index's sha256
        runs = list(apifiles.published_runs(site))
    except SiteError as e:
        raise ReleaseError(f"the built site's evidence records: {e}") from e
    counted_sample = [
        e["repositoryPath"]
        for e in runs
        if e.get("counted") and (e.get("sample") or e.get("trustRoot") == "demo")
    ]
    if counted_sample:
        raise ReleaseError(
            f"sample evidence would count as qualification: {', '.join(counted_sample)}"
        )
    return {
        "apiVersion": "aicr.run/v1",
        "kind": "ReleaseManifest",
        "version": version,
        "commit": commit,
        "sourceDateEpoch": epoch,
        "generator": {"name": "aicr-catalog", "version": __version__},
        "trustRoot": index.get("trustRoot"),
        "site": {"file": site_file, "sha256": _sha(site_bytes)},
        "recipes": _manifest_recipes(index, bundles),
        "evidence": [
            {
                "path": e["repositoryPath"],
                "sha256": evidence_sha256.get(e["repositoryPath"]),
                "state": e["state"],
                "counted": e["counted"],
                "class": e.get("class"),
            }
            for e in runs
        ],
    }


def _manifest_recipes(
    index: Mapping[str, Any], bundles: Mapping[str, bytes]
) -> list[dict[str, Any]]:
    """One manifest entry per recipe × profile of the API's index, with its bundles' sha256."""
    recipes = []
    for r in index["recipes"]:
        for p in r["profiles"]:
            prefix = f"{r['name']}-{p['name']}-"
            recipes.append(
                {
                    "name": r["name"],
                    "scaleProfile": {"name": p["name"], "version": p["version"]},
                    "digest": p["digest"],
                    "health": r["health"],
                    "consensus": p["consensus"],
                    "ceiling": p["ceiling"],
                    "ceilingNodes": p["ceilingNodes"],
                    "bundles": {
                        name.removeprefix(prefix).removesuffix(".tar.gz"): _sha(data)
                        for name, data in sorted(bundles.items())
                        if name.startswith(prefix)
                        and name.removeprefix(prefix).removesuffix(".tar.gz") in DEPLOYERS
                    },
                }
            )
    return recipes


def _changelog(
    repo: Path,
    version: str,
    previous: str | None,
    manifest: Mapping[str, Any],
    old_manifest: Mapping[str, Any] | None,
) -> str:
    lines = [f"# {version}", ""]
    if previous is None:
        lines += ["First release.", "", f"{len(manifest['recipes'])} recipe × profile rows."]
        return "\n".join(lines) + "\n"
    impact = compare(snapshot(repo, previous), snapshot(repo, "HEAD"), bundles=False)
    body = (
        to_markdown(impact)
        .replace("### Catalog impact", "## Changes since")
        .replace("`HEAD`", f"`{version}`")
    )
    lines += [body.rstrip(), ""]
    if old_manifest is not None:
        old = {(r["name"], r["scaleProfile"]["name"]): r for r in old_manifest["recipes"]}
        moved = []
        for r in manifest["recipes"]:
            o = old.get((r["name"], r["scaleProfile"]["name"]))
            if o and (o["consensus"], o["ceiling"]) != (r["consensus"], r["ceiling"]):
                md = markdown.text
                moved.append(
                    f"| {markdown.code(r['name'])} | {md(r['scaleProfile']['name'])} "
                    f"| {md(o['consensus'])} → {md(r['consensus'])} "
                    f"| {md(o['ceiling'] or '-')} → {md(r['ceiling'] or '-')} |"
                )
        if moved:
            lines += [
                "## Status and scale ceiling",
                "",
                "| recipe | profile | consensus | ceiling |",
                "| --- | --- | --- | --- |",
                *moved,
                "",
            ]
    return "\n".join(lines) + "\n"


def _build(root: Path, out: Path, trust_root: str, epoch: int) -> None:
    from generator.site.build import BuildOptions, build_site

    build_site(
        BuildOptions(
            catalog=root / "catalog",
            evidence=root / "evidence",
            out=out,
            docs=root / "docs",
            config=root / "mkdocs.yml",
            trust_root=trust_root,
            source_date_epoch=epoch,
        )
    )


def release(
    repo: Path,
    version: str,
    out: Path,
    *,
    previous: str | None = None,
    trust_root: str = "public-good",
) -> ReleaseReport:
    """The release assets of `version` into `out`: the site built from the tagged commit's
    tree, its bundle archives, the site archive, the manifest, the changelog against
    `previous` and SHA256SUMS; `out` is replaced only when all of them were made."""
    check_output_dir(out, OutputKind.RELEASE)
    commit, previous = check_preconditions(repo, version, previous, trust_root)
    epoch = timeutil.source_date_epoch(error=ReleaseError)
    if epoch is None:
        epoch = int(_git(repo, "log", "-1", "--format=%ct", commit).strip())
    out = safeio.resolve(out)
    make_dirs(out.parent)
    work = make_temp_dir(f".{out.name}-release-", out.parent)
    try:
        with materialize(repo, commit, TREE_PATHS) as tree:
            site = work / "site"
            _build(tree, site, trust_root, epoch)
            evidence_sha256 = _evidence_digests(tree)
        files = _bundle_files(site)
        bundles = dict(files)
        site_file = SITE_ARCHIVE.format(version=version)
        if site_file in files:
            raise ReleaseError(f"a bundle archive is named like the site archive {site_file}")
        files[site_file] = _site_archive(site, version, epoch)
        manifest = _manifest(
            version, commit, epoch, site, bundles, site_file, files[site_file], evidence_sha256
        )
        old_manifest = _previous_manifest(repo, previous, work, trust_root)
        files[MANIFEST] = (
            json.dumps(manifest, indent=2, sort_keys=True, allow_nan=False) + "\n"
        ).encode()
        files[CHANGELOG] = _changelog(repo, version, previous, manifest, old_manifest).encode()
        files[SUMS] = "".join(f"{_sha(files[n])}  {n}\n" for n in sorted(files)).encode()
        swap_in(_staged(work / "dist", files), out)  # the previous release stays whole until then
    finally:
        discard(work, ignore_errors=True)
    return ReleaseReport(version, commit, previous, tuple(sorted(files)))


def _bundle_files(site: Path) -> dict[str, bytes]:
    """The bundle archives the site offers for download, by file name (flat release assets)."""
    files: dict[str, bytes] = {}
    found = safeio.walk(site / "downloads", suffixes=(".tar.gz",)).entries
    for e in sorted(found, key=lambda e: safeio.order_key(e.rel)):
        name = e.rel.rpartition("/")[2]
        if not name.endswith(".tar.gz"):  # a link to a directory, listed by every walk
            continue
        if name in files:
            raise ReleaseError(f"two bundle archives are named {name}")
        files[name] = safeio.read(e.path, root=site, where="the site", limit=safeio.ARCHIVE_BYTES)
    return files


def _previous_manifest(
    repo: Path, previous: str | None, work: Path, trust_root: str
) -> dict[str, Any] | None:
    """The manifest the release `previous` would have (its site built again from its tree),
    for the changelog; None without a previous release."""
    if previous is None:
        return None
    with materialize(repo, previous, TREE_PATHS) as old_tree:
        old_site = work / "old-site"
        old_epoch = int(_git(repo, "log", "-1", "--format=%ct", previous).strip())
        _build(old_tree, old_site, trust_root, old_epoch)
        return _manifest(
            previous, previous, old_epoch, old_site, {}, "", b"", _evidence_digests(old_tree)
        )


def _staged(staged: Path, files: Mapping[str, bytes]) -> Path:
    """`files` written into the new directory `staged`, returned."""
    make_dirs(staged, exist_ok=False)
    with TreeWriter(staged) as tree:
        for name, data in files.items():
            tree.put(name, data)
    return staged
