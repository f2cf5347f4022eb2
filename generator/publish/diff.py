"""`diff BASE HEAD`: what a change does to resolved recipes, bundles, pins and evidence.

Both revisions are read with git itself (`git archive` into a temporary directory), never by
checking out over the user's tree; HEAD may be the working tree. The comparison is pure: two
`GitSnapshot`s in, one `Impact` out.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from generator.catalog.load import load_catalog
from generator.catalog.resolve import resolve_all
from generator.core import markdown, outputs, proc, safeio
from generator.core.atomic import copy_tree, extract_tar
from generator.core.errors import CatalogError, UsageError, printable
from generator.core.records import DEFAULT_PROFILE, Catalog, RecipeResult

WORKTREE = "WORKTREE"


@dataclass(frozen=True, slots=True)
class EvidenceRef:
    path: str  # repository-relative
    recipe: str
    profile: str
    digest: str  # the recipe digest the statement carries ("" if unreadable)


@dataclass(frozen=True, slots=True)
class GitSnapshot:
    """One git revision of the catalog: what it resolves to, its evidence and bundle inputs."""

    rev: str
    catalog: Catalog
    results: Mapping[tuple[str, str], RecipeResult]
    evidence: Mapping[str, EvidenceRef]
    manifests: Mapping[str, bytes]
    # the files that decide which signatures count (signers.yaml, the trust roots, upstream
    # allowlists), repository-relative path -> sha256 of the bytes (or why unreadable)
    policy: Mapping[str, str] = field(default_factory=dict)


ABSENT = "(absent)"


@dataclass(frozen=True, slots=True)
class PolicyChange:
    """A signer-policy file added, removed or changed: which evidence counts (and so a
    recipe's consensus: SINGLE can become CONFIRMED) changes without any recipe changing."""

    path: str
    change: str  # added | removed | changed


@dataclass(frozen=True, slots=True)
class ValueChange:
    """One changed value of a resolved recipe: where, and its old and new JSON text."""

    path: str  # e.g. components.gpu-operator.values.driver.version
    old: str  # JSON of the BASE value, or ABSENT
    new: str  # JSON of the HEAD value, or ABSENT


@dataclass(frozen=True, slots=True)
class RecipeChange:
    recipe: str
    profile: str
    change: str  # added | removed | changed
    base_digest: str | None
    head_digest: str | None
    reasons: tuple[str, ...]
    bundles: tuple[str, ...]  # deployers whose bundle bytes change
    values: tuple[ValueChange, ...] = ()  # every changed value, old → new


@dataclass(frozen=True, slots=True)
class PinChange:
    component: str
    change: str  # added | removed | bumped
    base: tuple[str, ...]
    head: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Impact:
    base: str
    head: str
    recipes: tuple[RecipeChange, ...]
    pins: tuple[PinChange, ...]
    evidence_added: tuple[str, ...]
    evidence_removed: tuple[str, ...]
    evidence_stale: tuple[str, ...]  # current at BASE, stale at HEAD
    policy: tuple[PolicyChange, ...] = ()

    def is_empty(self) -> bool:
        return not (
            self.recipes
            or self.pins
            or self.evidence_added
            or self.evidence_removed
            or self.evidence_stale
            or self.policy
        )


# ---------------------------------------------------------------- reading revisions


GIT_TIMEOUT = 600  # seconds for one git command (an archive of the catalog and evidence)


def _git(repo: Path, *args: str, limit: int = proc.OUTPUT_BYTES) -> bytes:
    try:
        done = proc.git(repo, *args, timeout=GIT_TIMEOUT, limit=limit)
    except proc.ProcError as e:
        if e.rule == proc.NOT_FOUND:
            raise UsageError("git is not installed") from None
        raise UsageError(f"git {' '.join(args)}: {e.message}") from None
    if not done.ok:
        raise UsageError(f"git {' '.join(args)}: {done.error_text()}")
    return done.stdout


def repo_root(start: Path) -> Path:
    return Path(_git(start, "rev-parse", "--show-toplevel").decode().strip())


@contextmanager
def materialize(repo: Path, rev: str, paths: Sequence[str]) -> Iterator[Path]:
    """A temporary directory holding `paths` as they are at `rev` (or in the working tree)."""
    with outputs.temp_dir("aicr-diff-") as tmp:
        out = Path(tmp)
        if rev == WORKTREE:
            for p in paths:
                src = repo / p
                if safeio.exists(src):
                    copy_tree(src, out / p)
            yield out
            return
        _git(repo, "rev-parse", "--verify", f"{rev}^{{commit}}")
        present = [p for p in paths if _git(repo, "ls-tree", "--name-only", rev, "--", p).strip()]
        if present:
            data = _git(
                repo, "archive", "--format=tar", rev, "--", *present, limit=proc.ARCHIVE_BYTES
            )
            extract_tar(data, out)
        yield out


def _evidence_refs(root: Path, evidence_dir: str) -> dict[str, EvidenceRef]:
    from generator.evidence.statement import StatementError, parse_statement

    out: dict[str, EvidenceRef] = {}
    base = root / evidence_dir
    if not safeio.is_dir(base):
        return out
    for path in safeio.glob_tree(base, "*.sigstore.json"):
        rel = path.relative_to(root).as_posix()
        parts = path.relative_to(base).parts
        recipe = parts[0] if parts else ""
        try:
            raw = safeio.read(path, root=base, where="the evidence directory")
            env = json.loads(raw)["dsseEnvelope"]
            st = parse_statement(env["payloadType"], base64.b64decode(env["payload"]))
            out[rel] = EvidenceRef(
                rel, st.recipe, st.scale_profile or DEFAULT_PROFILE, st.recipe_digest
            )
        except (OSError, ValueError, KeyError, TypeError, StatementError, safeio.Refusal):
            out[rel] = EvidenceRef(rel, recipe, DEFAULT_PROFILE, "")
    return out


def _manifests(catalog_dir: Path, catalog: Catalog) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for rel in catalog.files:
        if "/manifests/" in f"/{rel}":
            out[rel] = safeio.read(catalog_dir / rel, root=catalog_dir, where="the catalog")
    return out


def _policy_files(root: Path, catalog_rel: str, evidence_rel: str) -> dict[str, str]:
    """sha256 of every file that decides which signatures count, by repository path."""
    from generator.evidence.allowlist import ALLOWLIST_FILE
    from generator.evidence.trustroot import TRUST_DIR
    from generator.evidence.upstream import SIGNERS_FILE

    found: list[tuple[Path, Path]] = []
    cat_dir, ev_dir = root / catalog_rel, root / evidence_rel
    if safeio.lexists(cat_dir / SIGNERS_FILE):
        found.append((cat_dir / SIGNERS_FILE, cat_dir))
    if safeio.is_dir(cat_dir / TRUST_DIR):
        trust = safeio.glob_tree(cat_dir / TRUST_DIR, "*")
        found += [(p, cat_dir) for p in trust if not safeio.is_dir(p)]
    if safeio.is_dir(ev_dir):
        found += [(p, ev_dir) for p in safeio.glob_tree(ev_dir, ALLOWLIST_FILE)]
    out: dict[str, str] = {}
    for path, tree in found:
        rel = path.relative_to(root).as_posix()
        try:
            out[rel] = hashlib.sha256(
                safeio.read(path, root=tree, limit=safeio.OTHER_BYTES)
            ).hexdigest()
        except safeio.Refusal as r:
            out[rel] = f"unreadable: {r.rule}"
    return out


def snapshot(
    repo: Path, rev: str, catalog_rel: str = "catalog", evidence_rel: str = "evidence"
) -> GitSnapshot:
    with materialize(repo, rev, [catalog_rel, evidence_rel]) as root:
        cat_dir = root / catalog_rel
        if not safeio.is_dir(cat_dir):
            raise UsageError(f"revision {rev} has no {catalog_rel}/ directory")
        catalog, _diags = load_catalog(cat_dir)
        results = resolve_all(catalog)
        return GitSnapshot(
            rev,
            catalog,
            results,
            _evidence_refs(root, evidence_rel),
            _manifests(cat_dir, catalog),
            _policy_files(root, catalog_rel, evidence_rel),
        )


def policy_changes(base: GitSnapshot, head: GitSnapshot) -> tuple[PolicyChange, ...]:
    out: list[PolicyChange] = []
    for rel in sorted(set(base.policy) | set(head.policy)):
        b, h = base.policy.get(rel), head.policy.get(rel)
        if b != h:
            out.append(
                PolicyChange(rel, "added" if b is None else "removed" if h is None else "changed")
            )
    return tuple(out)


# ---------------------------------------------------------------- comparing


def _doc_shas(catalog: Catalog) -> dict[str, str]:
    out = {o.doc.rel: o.doc.sha256 for o in (*catalog.overlays.values(), *catalog.mixins.values())}
    for p in catalog.profiles.values():
        if p.doc is not None:
            out[p.doc.rel] = p.doc.sha256
    return out


def _reasons(
    base: GitSnapshot, head: GitSnapshot, b: RecipeResult, h: RecipeResult
) -> tuple[str, ...]:
    reasons: list[str] = []
    if b.applied_overlays != h.applied_overlays:
        reasons.append(
            f"applied overlays changed: {' → '.join(b.applied_overlays)} ⇒ {' → '.join(h.applied_overlays)}"
        )
    bshas = _doc_shas(base.catalog)
    for name in h.applied_overlays:
        ov = head.catalog.overlays.get(name)
        if ov is not None and bshas.get(ov.doc.rel) not in (None, ov.doc.sha256):
            reasons.append(f"overlay {ov.doc.rel} changed")
    for name in h.mixins:
        mx = head.catalog.mixins.get(name)
        if mx is not None and bshas.get(mx.doc.rel) not in (None, mx.doc.sha256):
            reasons.append(f"mixin {mx.doc.rel} changed")
    for rel in sorted(set(b.file_digests) | set(h.file_digests)):
        kind = "manifest" if "/manifests/" in f"/{rel}" else "values file"
        bd, hd = b.file_digests.get(rel), h.file_digests.get(rel)
        if bd is None:
            reasons.append(f"{kind} {rel} added")
        elif hd is None:
            reasons.append(f"{kind} {rel} removed")
        elif bd != hd:
            reasons.append(f"{kind} {rel} changed")
    breg, hreg = base.catalog.registry.components, head.catalog.registry.components
    for comp in sorted({c.name for c in h.components}):
        if comp in breg and comp in hreg and breg[comp] != hreg[comp]:
            fields = [
                f
                for f in ("repository", "chart", "version", "namespace")
                if getattr(breg[comp], f) != getattr(hreg[comp], f)
            ]
            detail = ", ".join(
                f"{f} {getattr(breg[comp], f)} → {getattr(hreg[comp], f)}" for f in fields
            )
            reasons.append(f"registry entry {comp} changed" + (f" ({detail})" if detail else ""))
    bcomp = {c.name: c for c in b.components}
    for c in h.components:
        old = bcomp.get(c.name)
        if old is None:
            reasons.append(f"component {c.name} added")
        elif old.version != c.version:
            reasons.append(f"component {c.name} {old.version} → {c.version}")
    for name in sorted(set(bcomp) - {c.name for c in h.components}):
        reasons.append(f"component {name} removed")
    if (b.scale_profile_version, b.scale_profile) != (h.scale_profile_version, h.scale_profile):
        reasons.append(
            f"scale profile {h.scale_profile} {b.scale_profile_version} → {h.scale_profile_version}"
        )
    return tuple(dict.fromkeys(reasons)) or ("resolved content changed",)


def _plain(obj: Any) -> Any:
    """A record as plain JSON data (dataclasses, mappings and tuples unwrapped)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: _plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, Mapping):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_plain(v) for v in obj]
    return obj


def _view(result: RecipeResult) -> dict[str, Any]:
    """What a recipe resolves to, keyed so that a change has a readable path: components and
    constraints by name, everything but the digest itself."""
    doc = _plain(result)
    doc.pop("digest", None)
    doc.pop("file_digests", None)
    doc["components"] = {c["name"]: c for c in doc["components"]}
    for c in doc["components"].values():
        c.pop("name", None)
    doc["constraints"] = {
        str(c.get("name", i)): c for i, c in enumerate(doc.get("constraints") or [])
    }
    doc["files"] = dict(sorted(result.file_digests.items()))
    return dict(doc)


def _flatten(value: Any, path: str, out: dict[str, Any]) -> None:
    if isinstance(value, dict) and value:
        for k in sorted(value):
            _flatten(value[k], f"{path}.{k}" if path else str(k), out)
    else:
        out[path] = value


def _json_text(value: Any) -> str:
    return json.dumps(
        value, sort_keys=True, ensure_ascii=False, separators=(", ", ": "), allow_nan=False
    )


def value_changes(old: RecipeResult | None, new: RecipeResult | None) -> tuple[ValueChange, ...]:
    """Every leaf value that differs between two resolutions of a recipe, old → new."""
    before: dict[str, Any] = {}
    after: dict[str, Any] = {}
    if old is not None:
        _flatten(_view(old), "", before)
    if new is not None:
        _flatten(_view(new), "", after)
    out = []
    for path in sorted(set(before) | set(after)):
        if path in before and path in after and before[path] == after[path]:
            continue
        out.append(
            ValueChange(
                path,
                _json_text(before[path]) if path in before else ABSENT,
                _json_text(after[path]) if path in after else ABSENT,
            )
        )
    return tuple(out)


def _bundle_changes(
    base: GitSnapshot, head: GitSnapshot, b: RecipeResult, h: RecipeResult
) -> tuple[str, ...]:
    """The deployers whose bundle (as `bundle` renders it with default flags, through
    generator/render/bundled.py, with each revision's own manifests) differs between the two
    revisions; a bundle one side cannot render (or refuses) differs unless both fail alike."""
    try:
        from generator.render import Deployer
    except ImportError:  # pragma: no cover - the render stage is part of the package
        return ()
    return tuple(
        str(dep) for dep in Deployer if _bundle_key(base, b, dep) != _bundle_key(head, h, dep)
    )


def _bundle_key(snap: GitSnapshot, result: RecipeResult, deployer: str) -> Any:
    from generator.render.bundled import rebuild, render_bundled

    try:
        _, tree = render_bundled(
            snap.catalog, rebuild(snap.catalog, result), deployer, manifests=dict(snap.manifests)
        )
    except CatalogError as e:
        return ("refused", e.message)
    return _tree_key(tree)


def _tree_key(tree: Any) -> Any:
    files = getattr(tree, "files", tree)
    return sorted((k, getattr(v, "data", v), getattr(v, "mode", 0)) for k, v in files.items())


def _pins(snap: GitSnapshot) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for r in snap.results.values():
        for c in r.components:
            if c.version:
                out.setdefault(c.name, set()).add(c.version)
    for comp in snap.catalog.registry.components.values():
        if comp.version:
            out.setdefault(comp.name, set()).add(comp.version)
    return out


def compare(base: GitSnapshot, head: GitSnapshot, *, bundles: bool = True) -> Impact:
    recipes: list[RecipeChange] = []
    for key in sorted(set(base.results) | set(head.results)):
        b, h = base.results.get(key), head.results.get(key)
        if b is not None and h is not None and b.digest == h.digest:
            continue
        if b is None and h is not None:
            recipes.append(
                RecipeChange(key[0], key[1], "added", None, h.digest, ("new recipe",), ())
            )
        elif h is None and b is not None:
            recipes.append(
                RecipeChange(key[0], key[1], "removed", b.digest, None, ("recipe removed",), ())
            )
        elif b is not None and h is not None:
            deps = _bundle_changes(base, head, b, h) if bundles else ()
            recipes.append(
                RecipeChange(
                    key[0],
                    key[1],
                    "changed",
                    b.digest,
                    h.digest,
                    _reasons(base, head, b, h),
                    deps,
                    value_changes(b, h),
                )
            )
    bp, hp = _pins(base), _pins(head)
    pins: list[PinChange] = []
    for comp in sorted(set(bp) | set(hp)):
        bv, hv = tuple(sorted(bp.get(comp, ()))), tuple(sorted(hp.get(comp, ())))
        if bv == hv:
            continue
        change = "added" if not bv else "removed" if not hv else "bumped"
        pins.append(PinChange(comp, change, bv, hv))
    added = tuple(sorted(set(head.evidence) - set(base.evidence)))
    removed = tuple(sorted(set(base.evidence) - set(head.evidence)))
    stale = []
    for rel, ev in sorted(head.evidence.items()):
        key = (ev.recipe, ev.profile)
        b, h = base.results.get(key), head.results.get(key)
        if b is not None and ev.digest == b.digest and (h is None or h.digest != ev.digest):
            stale.append(rel)
    return Impact(
        base.rev,
        head.rev,
        tuple(recipes),
        tuple(pins),
        added,
        removed,
        tuple(stale),
        policy_changes(base, head),
    )


# ---------------------------------------------------------------- reporting


def to_json(impact: Impact) -> dict[str, Any]:
    return {
        "base": impact.base,
        "head": impact.head,
        "recipes": [
            {
                "recipe": r.recipe,
                "scaleProfile": r.profile,
                "change": r.change,
                "baseDigest": r.base_digest,
                "headDigest": r.head_digest,
                "reasons": list(r.reasons),
                "bundlesChanged": list(r.bundles),
                # old/new are the JSON values; a key is missing where the value is absent
                "values": [_value_json(v) for v in r.values],
            }
            for r in impact.recipes
        ],
        "pins": [
            {
                "component": p.component,
                "change": p.change,
                "base": list(p.base),
                "head": list(p.head),
            }
            for p in impact.pins
        ],
        "evidence": {
            "added": list(impact.evidence_added),
            "removed": list(impact.evidence_removed),
            "madeStale": list(impact.evidence_stale),
        },
        # which signatures count: a change here can change consensus with no recipe changing
        "signerPolicy": [{"path": p.path, "change": p.change} for p in impact.policy],
    }


def _value_json(v: ValueChange) -> dict[str, Any]:
    out: dict[str, Any] = {"path": v.path}
    if v.old != ABSENT:
        out["old"] = json.loads(v.old)
    if v.new != ABSENT:
        out["new"] = json.loads(v.new)
    return out


def to_text(impact: Impact) -> str:
    lines = [f"diff {impact.base}..{impact.head}"]
    if impact.is_empty():
        return lines[0] + ": no change to resolved recipes, pins, evidence or signer policy\n"
    if impact.recipes:
        lines.append(f"recipes ({len(impact.recipes)} changed):")
        for r in impact.recipes:
            lines.append(
                f"  {r.change} {printable(r.recipe)} [{printable(r.profile)}]"
                + (
                    f" {_short(r.base_digest)} → {_short(r.head_digest)}"
                    if r.change == "changed"
                    else ""
                )
            )
            lines += [f"    - {printable(why)}" for why in r.reasons]
            lines += [
                f"    {printable(v.path)}: {printable(v.old)} → {printable(v.new)}"
                for v in r.values
            ]
            if r.bundles:
                lines.append(f"    bundles changed: {', '.join(r.bundles)}")
    if impact.pins:
        lines.append("pins:")
        for p in impact.pins:
            lines.append(
                printable(
                    f"  {p.change} {p.component}: {', '.join(p.base) or '-'} → "
                    f"{', '.join(p.head) or '-'}"
                )
            )
    for title, items in (
        ("evidence added", impact.evidence_added),
        ("evidence removed", impact.evidence_removed),
        ("evidence made stale", impact.evidence_stale),
    ):
        if items:
            lines.append(f"{title}:")
            lines += [f"  {printable(e)}" for e in items]
    if impact.policy:
        lines.append(f"signer policy ({POLICY_NOTE}):")
        lines += [f"  {p.change} {printable(p.path)}" for p in impact.policy]
    return "\n".join(lines) + "\n"


POLICY_NOTE = "which signatures count changes: consensus may change with no recipe changing"


MARKDOWN_VALUES_PER_RECIPE = 200  # a pull-request comment holds at most 65,536 characters


def to_markdown(impact: Impact) -> str:
    """The impact as GitHub-flavoured Markdown; every name and value from the revisions goes
    through `generator.core.markdown`, so nothing in them can become markup."""
    md, code = markdown.text, markdown.code
    out = [f"### Catalog impact: {code(impact.base)} → {code(impact.head)}", ""]
    if impact.is_empty():
        return "\n".join(
            [*out, "No change to resolved recipes, pins, evidence or signer policy.", ""]
        )
    if impact.recipes:
        out += ["| recipe | profile | change | why | bundles |", "| --- | --- | --- | --- | --- |"]
        for r in impact.recipes:
            why = "<br>".join(md(w) for w in r.reasons)
            out.append(
                f"| {code(r.recipe)} | {md(r.profile)} | {md(r.change)} | {why} "
                f"| {md(', '.join(r.bundles))} |"
            )
        out.append("")
        valued = [r for r in impact.recipes if r.values]
        for r in valued:
            out += [
                f"**{code(r.recipe)} \\[{md(r.profile)}\\]**: {len(r.values)} value(s) changed",
                "",
                "| value | old | new |",
                "| --- | --- | --- |",
            ]
            shown = r.values[:MARKDOWN_VALUES_PER_RECIPE]
            out += [f"| {code(v.path)} | {code(v.old)} | {code(v.new)} |" for v in shown]
            if len(r.values) > len(shown):
                out.append(
                    f"| … {len(r.values) - len(shown)} more (see `diff --format json`) | | |"
                )
            out.append("")
    if impact.pins:
        out += ["| component | change | old | new |", "| --- | --- | --- | --- |"]
        out += [
            f"| {code(p.component)} | {md(p.change)} | {md(', '.join(p.base) or '-')} "
            f"| {md(', '.join(p.head) or '-')} |"
            for p in impact.pins
        ]
        out.append("")
    for title, items in (
        ("Evidence added", impact.evidence_added),
        ("Evidence removed", impact.evidence_removed),
        ("Evidence made stale", impact.evidence_stale),
    ):
        if items:
            out += [f"**{title}**", "", *[f"- {code(e, table=False)}" for e in items], ""]
    if impact.policy:
        out += [f"**Signer policy** ({md(POLICY_NOTE)})", ""]
        out += [f"- {md(p.change)} {code(p.path, table=False)}" for p in impact.policy]
        out.append("")
    return "\n".join(out)


def _short(d: str | None) -> str:
    return (d or "-").removeprefix("sha256:")[:12]


FORMATTERS = {
    "text": to_text,
    "json": lambda i: json.dumps(to_json(i), indent=2, sort_keys=True, allow_nan=False) + "\n",
    "markdown": to_markdown,
}
