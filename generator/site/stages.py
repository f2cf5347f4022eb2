"""The site's projections of the pipeline's results, and the one stage only the site runs.

`generator.pipeline.run` loads, validates, resolves, verifies and aggregates (for `build` and
`status` alike); this module turns its `Outcome` into the site's records
(`generator.site.model`) and renders the bundle archives. Nothing is invented where a stage
found nothing (a recipe without evidence is UNTESTED).
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import json
import os
import pickle
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from generator.core import safeio
from generator.core.cache import Cache, DerivedKeys
from generator.core.errors import CatalogError, Diagnostic, LoadError, RenderError
from generator.core.memo import Memo
from generator.core.records import DEFAULT_PROFILE, Catalog, Consensus, Override, RecipeResult
from generator.evidence.model import Evidence, FoundFile
from generator.evidence.view import (
    CheckRow,
    EvidenceView,
    KpiRow,
    RawFile,
    RecipeRuns,
    RowShare,
    RunFacts,
    RunRow,
    SiteRuns,
    evidence_view,
    facts,
)
from generator.evidence.view import Outcome as Judged
from generator.fast.loaded import LoadedTuple
from generator.fast.pool import parallel_map
from generator.render.bundled import Refusal
from generator.render.cache import SealedArchive
from generator.site.model import (
    Download,
    LaneOutcome,
    LaneVerdict,
    LaneView,
    StageNote,
)

if TYPE_CHECKING:  # the stages' modules (sigstore, plotly) load when a build calls them
    from generator.aggregate import LaneStatus as AggregatedLane
    from generator.aggregate import RecipeStatus
    from generator.catalog.lanes import Lane as QualificationLane
    from generator.catalog.lanes import Lanes
    from generator.evidence.stage import VerificationRun
    from generator.pipeline import Outcome, RecipeShare


def recipe_document(result: RecipeResult) -> Mapping[str, Any]:
    from generator.catalog.resolve import recipe_document as doc

    return doc(result)


def structural_health(results: Sequence[RecipeResult]) -> tuple[str, str, tuple[str, ...]]:
    """(pass | warn | fail, `R:n D:n P:n C:n`, why it is not pass) by the rules `aicr-catalog
    list` uses, from the leaf's resolution at its first profile (no second resolution); fail
    when it did not resolve."""
    from generator.validate import health_of

    if not results:
        return "fail", "R:0 D:0 P:0 C:0", ("the recipe does not resolve",)
    h = health_of(results[0])
    return h.health, h.coverage_text(), tuple(h.reasons)


def recipes_added(
    catalog_root: Path, files: Mapping[str, str], head: str
) -> tuple[tuple[str, str], ...]:
    """(recipe, YYYY-MM-DD) of each recipe whose overlay file the catalog's git history up to
    `head` shows being added (the newest addition), from one `git log`; empty when `head` is ""
    (the catalog is not in a git checkout: the changelog page says recipe additions come from
    that history). `head` is the build's `catalog_head` (audit.head_commit), so the history
    read is the one the build's key names."""
    from generator.core import proc

    if not head:
        return ()
    try:
        # --no-renames: an overlay renamed (or rewritten under a new name) is added there
        out = proc.git(catalog_root, "log", "--no-renames", "--diff-filter=A", "--format=@%cs",
                       "--name-only", "--relative", head, "--", ".", timeout=60)  # fmt: skip
    except proc.ProcError:  # no git, or it did not answer: no dates
        return ()
    if not out.ok:
        return ()
    added: dict[str, str] = {}
    date = ""
    for line in out.text().splitlines():
        if line.startswith("@"):
            date = line[1:]
        elif line and line not in added:
            added[line] = date
    by_file = {rel: name for name, rel in files.items()}
    return tuple(sorted((by_file[f], d) for f, d in added.items() if f in by_file and d))


# --- lanes ------------------------------------------------------------------------------------


def lanes(parsed: Lanes | None) -> tuple[LaneView, ...]:
    """The ladder of `scale/lanes.yaml` (as the pipeline parsed it), ascending by node count,
    each lane's KPIs with units; none when the catalog has no lanes.yaml."""
    if parsed is None:
        return ()
    return tuple(_lane_view(ln, parsed) for ln in parsed.lanes)


def _lane_view(lane: QualificationLane, lanes_: Lanes) -> LaneView:
    """One lane as the site shows it: its criteria as a plain mapping (`api/v1/lanes.json`)."""
    kpis = []
    for kpi_id, t in sorted(lane.thresholds, key=lambda kt: kt[0]):
        spec = lanes_.kpi(kpi_id)
        kpis.append(
            {
                "id": kpi_id,
                "title": spec.title if spec is not None else "",
                "unit": spec.unit if spec is not None else "",
                "threshold": {"operator": t.operator, "value": t.value},
                "status": t.status,
            }
        )
    criteria = {
        "racks": lane.racks,
        "phases": list(lane.phases),
        "scenarios": list(lane.scenarios),
        "kpis": kpis,
    }
    return LaneView(lane.name, lane.nodes, lane.gpus, lane.criteria_version, criteria)


_PARALLEL_RENDER = 24  # archives to build before a process pool pays for itself


def _render_one(
    job: tuple[RecipeResult, str, Mapping[str, bytes], int],
) -> tuple[bytes | None, str, tuple[Diagnostic, ...]]:
    """One archive (in a worker process): (bytes, "", ()) or (None, message, diagnostics).
    The build's process stores it (`_render`): a worker writes nothing."""
    from generator.render.cache import render_archive

    result, deployer, manifests, epoch = job
    try:
        return render_archive(result, deployer, manifests, mtime=epoch), "", ()
    except CatalogError as e:
        return None, e.message, e.diagnostics


Key = tuple[str, str]  # (recipe, scale profile)


def _bundled(
    catalog: Catalog, result: RecipeResult, deployers: Sequence[str]
) -> tuple[RecipeResult | None, tuple[Refusal, ...]]:
    """The recipe `aicr-catalog bundle --recipe NAME --scale-profile P` renders with default
    flags (`generator.render.bundled`, the command's own path), or None and one refusal per
    deployer when the command refuses it (the registry's wildcard-toleration validation)."""
    from generator.catalog.overrides import NodeScheduling
    from generator.catalog.resolve import resolve
    from generator.core.errors import UsageError
    from generator.render.bundled import bundled_recipe, workaround_command

    def build(extra: tuple[Override, ...]) -> RecipeResult:
        if not extra:  # the pipeline resolved it with these very inputs
            return result
        return resolve(catalog, result.name, profile=result.scale_profile, overrides=extra)

    try:
        return bundled_recipe(catalog, build, NodeScheduling()).result, ()
    except UsageError as e:
        rule = e.diagnostics[0].rule if e.diagnostics else ""
        if rule != REFUSAL_RULE:
            raise
        name, profile = result.name, result.scale_profile
        return None, tuple(
            Refusal(name, profile, d, rule, e.message, workaround_command(name, profile, d))
            for d in deployers
        )


REFUSAL_RULE = "bundle.wildcard-toleration"  # the refusals the site states instead of a download


def render_bundles(
    catalog: Catalog,
    results: Sequence[RecipeResult],
    deployers: Sequence[str],
    epoch: int = 0,
    cache: Cache | None = None,
    jobs: int | None = None,
) -> tuple[dict[Key, tuple[Download, ...]], dict[Key, tuple[Refusal, ...]], StageNote | None]:
    """Every leaf × profile × deployer as a reproducible archive (mtime = SOURCE_DATE_EPOCH),
    byte for byte what `aicr-catalog bundle --archive` writes with default flags: the recipe
    goes through the command's own path (`generator.render.bundled`); where the command refuses
    it, a refusal per deployer instead of an archive.

    With `cache`, an archive whose inputs (recipe digest, deployer, renderer) are unchanged
    is taken from the build cache's store (`generator.render.cache`) instead of being rendered
    again. Archives not in the cache are rendered on every core (`jobs`, default all).
    """
    downloads, refused, _ = _render(catalog, results, deployers, epoch, cache, jobs)
    return downloads, refused, None


Job = tuple[RecipeResult, str, Mapping[str, bytes], int]  # a render worker's archive to make


def _render(
    catalog: Catalog,
    results: Sequence[RecipeResult],
    deployers: Sequence[str],
    epoch: int,
    cache: Cache | None,
    jobs: int | None,
) -> tuple[dict[Key, tuple[Download, ...]], dict[Key, tuple[Refusal, ...]], dict[str, str]]:
    """`render_bundles`, and the render key of each archive, by its file in the site ({}
    without a cache). The archives rendered are stored in `cache`, and every archive's entry
    counts as served for the sweep at the cache's `finish` (the stage's entries no build of
    any output uses are deleted then)."""
    problems: list[Diagnostic] = []
    refused: dict[Key, tuple[Refusal, ...]] = {}
    pairs: list[tuple[RecipeResult, str]] = []  # every archive, in the order shown
    for result in results:
        try:
            bundled, refusals = _bundled(catalog, result, deployers)
        except CatalogError as e:
            problems.extend(e.diagnostics)
            continue
        if bundled is None:
            refused[(result.name, result.scale_profile)] = refusals
        else:
            pairs.extend((bundled, d) for d in deployers)
    keys = _render_keys(pairs, epoch) if cache is not None else {}
    # archives the cache holds (known by their sealed headers), and those rendered here
    made, work = _held(catalog, pairs, keys, epoch, cache, problems)
    rendered: list[tuple[str, bytes]] = []
    for (result, deployer, _, _), (data, message, diags) in zip(
        work, _render_all(work, jobs), strict=True
    ):
        if data is None:
            problems.extend(diags or (Diagnostic(result.name, 0, 0, "$", message, "render"),))
            continue
        made[((result.name, result.scale_profile), deployer)] = data
        if cache is not None:
            rendered.append((keys[((result.name, result.scale_profile), deployer)], data))
    if problems:
        raise RenderError("some bundles could not be rendered", problems)
    out: dict[Key, list[Download]] = {(r.name, r.scale_profile): [] for r in results}
    by_file: dict[str, str] = {}
    for result, deployer in pairs:
        key = (result.name, result.scale_profile)
        download = _download(result, deployer, made[(key, deployer)])
        out[key].append(download)
        if cache is not None:
            by_file[download.file] = keys[(key, deployer)]
    if cache is not None:
        from generator.render.cache import ARCHIVE_STAGE, store_archives

        store_archives(cache, rendered)
        cache.serve(DerivedKeys(ARCHIVE_STAGE, tuple(keys.values())))
    return {k: tuple(v) for k, v in out.items()}, refused, by_file


def _render_keys(
    pairs: Sequence[tuple[RecipeResult, str]], epoch: int
) -> dict[tuple[Key, str], str]:
    """The render key of each archive of `pairs` (`render.cache.render_key`)."""
    from generator.render import GitOpsTarget
    from generator.render.cache import render_key

    target = GitOpsTarget()
    return {((r.name, r.scale_profile), d): render_key(r, d, target, epoch) for r, d in pairs}


def _held(
    catalog: Catalog,
    pairs: Sequence[tuple[RecipeResult, str]],
    keys: Mapping[tuple[Key, str], str],
    epoch: int,
    cache: Cache | None,
    problems: list[Diagnostic],
) -> tuple[dict[tuple[Key, str], bytes | SealedArchive], list[Job]]:
    """The archives of `pairs` the cache holds, by their sealed headers (their bytes not read:
    `SealedArchive.content` reads them when they are published anew, or renders them again if
    then gone), and the others as render jobs (a recipe's manifests read only then, once)."""
    from generator.catalog.manifests import read_manifests
    from generator.render.cache import held_archives

    held = held_archives(cache, list(keys.values())) if cache is not None else {}
    made: dict[tuple[Key, str], bytes | SealedArchive] = {}
    work: list[Job] = []
    manifests: dict[Key, Mapping[str, bytes] | None] = {}
    for bundled, d in pairs:
        key = (bundled.name, bundled.scale_profile)
        rkey = keys.get((key, d), "")
        if cache is not None and rkey in held:
            sha, size = held[rkey]
            again = functools.partial(_render_again, catalog, bundled, d, epoch, cache)
            made[(key, d)] = SealedArchive(sha, size, rkey, cache, again)
            continue
        if key not in manifests:
            try:
                manifests[key] = read_manifests(catalog, bundled)
            except CatalogError as e:  # reported once; none of its archives is rendered
                problems.extend(e.diagnostics)
                manifests[key] = None
        got = manifests[key]
        if got is not None:
            work.append((bundled, d, got, epoch))
    return made, work


def _render_all(
    work: list[Job], jobs: int | None
) -> list[tuple[bytes | None, str, tuple[Diagnostic, ...]]]:
    workers = min(jobs or os.cpu_count() or 1, len(work))
    if len(work) < _PARALLEL_RENDER:
        workers = 1
    chunk = max(1, len(work) // (max(1, workers) * 4))
    return list(parallel_map(_render_one, work, jobs=workers, chunksize=chunk))


def _render_again(
    catalog: Catalog, bundled: RecipeResult, deployer: str, epoch: int, cache: Cache
) -> bytes:
    """An archive whose cache entry was known by its header but no longer holds its bytes:
    rendered again, and stored."""
    from generator.catalog.manifests import read_manifests
    from generator.render.cache import cached_archive

    manifests = read_manifests(catalog, bundled)
    return cached_archive(bundled, deployer, manifests, cache=cache, mtime=epoch)


def _download(result: RecipeResult, deployer: str, body: bytes | SealedArchive) -> Download:
    from generator.render import archive_name

    if isinstance(body, bytes):
        sha256, size = hashlib.sha256(body).hexdigest(), len(body)
    else:
        sha256, size = body.sha256, body.size
    return Download(
        deployer=deployer,
        profile=result.scale_profile,
        file=f"downloads/{result.name}/{archive_name(result, deployer)}",
        sha256=sha256,
        size=size,
        body=body,
    )


# --- render, memoized: the step's result as one entry ---------------------------------------------

RENDER_STAGE = "render"
# the code the render step's result comes from (the renderer's templates and the bundler's
# rules enter the record as `renderer_fingerprint`)
RENDER_CODE = ("render", "fast", "catalog", "site/stages.py", "site/model.py")


@dataclass(frozen=True, slots=True)
class RenderInput:
    """The render step's record: the catalog and its resolved recipes as the catalog stage's
    derived key (`Outcome.catalog_key`: the results, and so the leaves, are a function of it),
    the deployers, the archives' mtime and the renderer (its source, templates and rules). The
    archives are entries of the memo's own store (`render.cache`): each is checked to be there
    when the step's result is taken (`usable`)."""

    catalog: str
    deployers: tuple[str, ...]
    epoch: int
    renderer: str


@dataclass(frozen=True, slots=True)
class SealedDownload:
    """One archive of the render step's result as the memo keeps it: its download record
    without the bytes, and its render key (its entry in the store that holds them)."""

    recipe: str
    profile: str
    deployer: str
    file: str
    sha256: str
    size: int
    key: str

    def __reduce__(self) -> tuple[type[SealedDownload], tuple[Any, ...]]:
        return (SealedDownload, tuple(getattr(self, n) for n in self.__slots__))


@dataclass(frozen=True, slots=True)
class RenderedBundles:
    """The render step's result as the memo keeps it: every recipe × profile rendered (in the
    order shown), each archive's sealed download, and the refusals."""

    shown: tuple[Key, ...]
    downloads: tuple[SealedDownload, ...]
    refusals: tuple[tuple[Key, tuple[Refusal, ...]], ...]


def render_memoized(
    memo: Memo,
    catalog_key: str,
    catalog: Catalog,
    results: Sequence[RecipeResult],
    deployers: Sequence[str],
    epoch: int,
    jobs: int | None = None,
) -> tuple[dict[Key, tuple[Download, ...]], dict[Key, tuple[Refusal, ...]], bool]:
    """`render_bundles` as one memo entry (`RenderInput`): a build whose catalog, deployers,
    epoch and renderer are those of the entry (an evidence-only change) takes the archives'
    sealed digests from it, without bundling a recipe or reading one archive's entry (1,600
    archives at 200 × 4,000, one evidence file removed: the step 0.37 → 0.05 s CPU, collector
    paused, median of three; the reference is `render_bundles`, which a miss runs). Each
    archive's entry is still looked up in the store's index (`Cache.held`): when one is gone,
    the step is made again (the others come from the store) and stored over the entry. Returns
    the downloads, the refusals and whether the entry was taken."""
    from generator.render.cache import ARCHIVE_STAGE, renderer_fingerprint

    record = RenderInput(catalog_key, tuple(deployers), epoch, renderer_fingerprint())
    cache = memo.cache
    live: tuple[dict[Key, tuple[Download, ...]], dict[Key, tuple[Refusal, ...]]] | None = None

    def make() -> RenderedBundles:
        nonlocal live
        downloads, refused, keys = _render(catalog, results, deployers, epoch, cache, jobs)
        live = downloads, refused
        return _sealed(downloads, refused, keys)

    def usable(stored: RenderedBundles) -> bool:
        keys = {d.key for d in stored.downloads}
        return cache is not None and cache.held(ARCHIVE_STAGE, sorted(keys)) == keys

    stored, _ = memo.stage_and_key(RENDER_STAGE, RENDER_CODE, record, make, usable=usable)
    if live is not None:
        return *live, False
    if cache is None:  # pragma: no cover - `usable` takes no entry without a store
        raise AssertionError("a render step taken from a memo without a store")
    cache.serve(DerivedKeys(ARCHIVE_STAGE, tuple(d.key for d in stored.downloads)))
    return _unsealed(stored, catalog, results, deployers, epoch, cache), dict(stored.refusals), True


def _sealed(
    downloads: Mapping[Key, tuple[Download, ...]],
    refused: Mapping[Key, tuple[Refusal, ...]],
    keys: Mapping[str, str],
) -> RenderedBundles:
    sealed = []
    for (recipe, profile), ds in downloads.items():
        for d in ds:
            sealed.append(
                SealedDownload(
                    recipe, profile, d.deployer, d.file, d.sha256, d.size, keys.get(d.file, "")
                )
            )
    return RenderedBundles(tuple(downloads), tuple(sealed), tuple(refused.items()))


def _unsealed(
    stored: RenderedBundles,
    catalog: Catalog,
    results: Sequence[RecipeResult],
    deployers: Sequence[str],
    epoch: int,
    cache: Cache,
) -> dict[Key, tuple[Download, ...]]:
    """The downloads of a stored render step, each known by its sealed digest; should an
    archive's bytes be gone when it is published, its recipe is bundled and rendered again
    (`results` are read then, not before: a build taking the step from its entry reads no
    recipe's results for it)."""
    result_of = _ByKey(results)
    out: dict[Key, list[Download]] = {k: [] for k in stored.shown}
    for d in stored.downloads:
        key = (d.recipe, d.profile)
        again = functools.partial(
            _bundle_again,
            catalog,
            functools.partial(result_of, key),
            d.deployer,
            tuple(deployers),
            epoch,
            cache,
        )
        body = SealedArchive(d.sha256, d.size, d.key, cache, again)
        out[key].append(Download(d.deployer, d.profile, d.file, d.sha256, d.size, body))
    return {k: tuple(v) for k, v in out.items()}


class _ByKey:
    """`results` by (recipe, profile), indexed when first asked (reading them then). Not a
    record: it loads."""

    __slots__ = ("_by_key", "_results")

    def __init__(self, results: Sequence[RecipeResult]) -> None:
        self._results = results
        self._by_key: dict[Key, RecipeResult] = {}

    def __call__(self, key: Key) -> RecipeResult:
        if not self._by_key:
            self._by_key = {(r.name, r.scale_profile): r for r in self._results}
        return self._by_key[key]


def _bundle_again(
    catalog: Catalog,
    result_of: Callable[[], RecipeResult],
    deployer: str,
    deployers: tuple[str, ...],
    epoch: int,
    cache: Cache,
) -> bytes:
    """An archive of a stored render step whose entry no longer holds its bytes."""
    result = result_of()
    bundled, _ = _bundled(catalog, result, deployers)
    if bundled is None:  # the step was stored with an archive for it: the same inputs
        raise AssertionError(f"{result.name}: refused now, rendered when the step was stored")
    return _render_again(catalog, bundled, deployer, epoch, cache)


# --- verify: the raw files the site publishes ----------------------------------------------------


def raw_files(run: VerificationRun, evidence_dir: Path) -> dict[str, FoundFile]:
    """The files the site publishes as each run's raw download, by the run's path: a bundle
    as committed (its bytes at hand only when this build read them), a pointer's Sigstore
    bundle (else the pointer itself, `RawFile.pointer`); never what a link reads."""
    from generator.evidence.upstream import signed_bundle

    if not run.records:
        return {}
    inside = safeio.resolve(evidence_dir)
    folder = str(inside).rstrip(os.sep) + os.sep
    # `_stays_inside` by the real path the reader resolved, without a Path per file
    parent, real_parent = evidence_dir.parent, safeio.real_path(evidence_dir.parent)
    raw = {
        f.path: f
        for f in run.files
        if f.real.startswith(folder) and _no_link(f, parent, real_parent)
    }
    for rel in run.pointers:
        path = evidence_dir.parent / rel
        if _stays_inside(path, inside):
            data = signed_bundle(path) or safeio.read(
                path, root=evidence_dir, where="the evidence directory"
            )
            sha = hashlib.sha256(data).hexdigest()
            raw[rel] = FoundFile(rel, None, str(path), str(inside), sha, len(data), data)
    return raw


def _no_link(found: FoundFile, parent: Path, real_parent: str) -> bool:
    """The file (`parent` / its path) is not itself a symbolic link: its path is its real path
    (`real_parent` joined with its path, as the reader resolved it in this build's walk,
    `safeio.check_entry`), else `os.path.islink` says so. The reference was `islink` of every
    file (a Path and an `lstat` each): 20,000 of them at 1,000 x 20,000, 0.42 s profiled in
    `raw_files`. The 4,000 files at 200 x 4,000: 0.042-0.086 -> 0.004-0.009 s CPU (three
    runs, load 4-7); the 20,000 at 1,000 x 20,000: 0.181 -> 0.016 s (min of 3). `tests/test_stages_raw.py` holds the two to one answer."""
    if found.real == os.path.join(real_parent, found.path):
        return True
    return not safeio.is_link(parent / found.path, quiet=True)


def raw_file(
    found: FoundFile, pointers: frozenset[str] = frozenset(), vouched: str = ""
) -> RawFile:
    """A run's raw download by reference: where it is read from, the digest of the bytes
    verified, and whether they hold a signed statement (the bytes are read for that when this
    build did not read them already, and refused unless they are those verified); `vouched`:
    see `holds_statement`."""
    from generator.evidence.store import read_vouched

    data = found.data
    if data is None:
        data = read_vouched(found.real, found.root, found.sha256, found.path)
    statement = holds_statement(data, vouched)
    pointer = found.path in pointers
    return RawFile(found.real, found.root, found.sha256, found.size, statement, pointer)


def holds_statement(data: bytes, vouched: str = "") -> bool:
    """`audit.signed_statement(data) is not None` (the reference), without reading the payload
    as JSON again when its digest is `vouched`: the `statement_digest` of a record that holds a
    statement, the digest of the DSSE payload its statement was read from (so JSON). Only the
    envelope is read then, as `signed_statement` reads it. The views stage asks this of every
    run: at 200 x 4,000, 4,000 bundles of ~10 KB, min of 5, one process: signed_statement ~100
    us each (the bundle's JSON 29, the base64 22, the payload's JSON 50). Any other answer
    (another digest, none) is `signed_statement`'s (tests/test_views_made.py)."""
    from generator.site.audit import signed_statement

    if vouched:
        try:
            doc = json.loads(data)
            envelope = doc.get("dsseEnvelope") if isinstance(doc, dict) else None
            payload = envelope.get("payload") if isinstance(envelope, dict) else None
            if not isinstance(payload, str):
                return False
            signed = base64.b64decode(payload, validate=True)
        except (ValueError, binascii.Error, RecursionError):
            return False
        if "sha256:" + hashlib.sha256(signed).hexdigest() == vouched:
            return True
    return signed_statement(data) is not None


def read_raw(raw: RawFile) -> bytes:
    """The bytes of a run's raw download, read when it is published: only those verified
    (their sha256 is the view's), else a LoadError (the file changed during the build)."""
    from generator.evidence.store import read_vouched
    from generator.evidence.upstream import signed_bundle

    if not raw.pointer:
        return read_vouched(raw.path, raw.root, raw.sha256, raw.path)
    path = Path(raw.path)
    data = signed_bundle(path) or safeio.read(path, root=raw.root, where="the evidence directory")
    if hashlib.sha256(data).hexdigest() != raw.sha256:
        message = "the file changed while the build ran (its bytes are not those verified)"
        raise LoadError(message, [Diagnostic(raw.path, 0, 0, "$", message, "file.changed")])
    return data


def _stays_inside(path: Path, directory: Path, real: str = "") -> bool:
    """The file is inside `directory` and is not itself a link (links on its way may only lead
    inside). `real` is its real path when the reader resolved it already."""
    try:
        resolved = Path(real) if real else safeio.resolve(path, strict=True)
        return resolved.is_relative_to(directory) and not safeio.is_link(path)
    except OSError:
        return False


# --- aggregate --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ProfileStatus:
    consensus: Consensus
    ceiling: str
    ceiling_nodes: int
    lanes: tuple[LaneOutcome, ...]


@dataclass(frozen=True, slots=True)
class Aggregated:
    statuses: Mapping[tuple[str, str], ProfileStatus]
    components: Mapping[
        tuple[str, str], tuple[str, str]
    ]  # (component, version) -> (lane, profiles)
    # every run's view, by recipe name and as judged (`_sorted_runs`); with a cache, a
    # `SiteRuns`: the views of a recipe are loaded when first read, their rows at hand (`facts`)
    runs: Sequence[EvidenceView]
    made: int = 0  # run views judged by this build (the others came from the memo)


VIEWS_STAGE = "views"
ROWS_STAGE = "view-rows"  # each recipe's runs' summary rows, under its views' derived key
# what a run's view is made from: the view, the run as aggregated, the raw file's reference
VIEWS_CODE = (
    "evidence/view.py",
    "evidence/model.py",
    "aggregate.py",
    "site/stages.py",
    "site/audit.py",
)


def judged(
    outcome: Outcome, evidence_dir: Path, cache: Cache | None = None
) -> tuple[Aggregated, StageNote | None]:
    """The pipeline's status as the site shows it: consensus, scale ceiling and lane verdicts
    per recipe × profile, and every run's evidence record as counted (or why not). With
    `cache`, each recipe's run views are memoized (`_judged_runs`), and read only when a page
    or file of that recipe is made."""
    records = outcome.records
    if not records:  # nothing to count: every recipe × profile is UNTESTED
        return Aggregated({}, {}, ()), None
    raw = raw_files(outcome.verification, evidence_dir)
    pointers = frozenset(outcome.verification.pointers)
    trust_root = outcome.trust_root
    status = outcome.status
    if status is None:  # no lanes: nothing can be judged or counted
        plain = [
            evidence_view(r, trust_root=trust_root, raw=_raw(raw.get(r.path), pointers))
            for r in records
        ]
        note = StageNote(
            "aggregate",
            "the catalog has no scale/lanes.yaml: consensus and ceilings show UNTESTED.",
        )
        return Aggregated({}, {}, _sorted_runs(plain), len(plain)), note
    runs, made = _judged_runs(outcome, raw, pointers, cache)
    stale_lanes = {
        (r.recipe, r.profile or DEFAULT_PROFILE, r.lane) for r in facts(runs) if r.state == "stale"
    }
    statuses = {
        (r.recipe, r.profile): ProfileStatus(
            consensus=r.consensus,
            ceiling=r.ceiling_lane or "",
            ceiling_nodes=r.ceiling_nodes,
            lanes=tuple(_lane_outcome(r, ln, stale_lanes) for ln in r.lanes),
        )
        for r in status.recipes
    }
    comps = {
        (c.component, c.version): (c.lane, ", ".join(c.profiles))
        for c in status.components
        if c.lane
    }
    return Aggregated(statuses, comps, runs, made), None


def _raw(found: FoundFile | None, pointers: frozenset[str], vouched: str = "") -> RawFile | None:
    return None if found is None else raw_file(found, pointers, vouched)


def _raw_of(
    record: Evidence, raw: Mapping[str, FoundFile], pointers: frozenset[str]
) -> RawFile | None:
    """`record`'s raw file, the digest of the payload its statement was read from vouching
    that the payload is JSON (`holds_statement`; none when it holds no statement)."""
    vouched = record.statement_digest or "" if record.statement is not None else ""
    return _raw(raw.get(record.path), pointers, vouched)


@dataclass(frozen=True, slots=True)
class RecipeViews:
    """The views stage's record for one recipe (its memo key is derived from it,
    `generator.core.memo`): what its runs' views are made from. Its part of the status and its
    records enter as the key of its aggregate record (`RecipeShare.key`, a function of both),
    with the trust root the views show and each run's raw file reference (`_raw_key`: where
    its bytes are read from and their digest), in its records' order."""

    aggregate: str
    trust_root: str
    raws: tuple[str, ...]


def _judged_runs(
    outcome: Outcome,
    raw: Mapping[str, FoundFile],
    pointers: frozenset[str],
    cache: Cache | None,
) -> tuple[Sequence[EvidenceView], int]:
    """Every run's view as judged (`_sorted_runs`), and how many were made.

    Memoized per recipe under its `RecipeViews` record, in two entries under its derived key:
    its views (`StoredViews`, `VIEWS_STAGE`) and their summary rows (`RunRow`, `ROWS_STAGE`).
    A build reads every recipe's rows, and a recipe's views only when a page or file of it is
    made (`SiteRuns`: a recipe whose record is unchanged has pages and files whose keys are
    unchanged, and those keys are made from the rows). A recipe whose rows are not stored has
    its views made (or read, when stored) and both entries stored.

    Measured at 1,000 recipes x 20,000 runs, one evidence file removed and added back, three
    cycles interleaved with the code before (process CPU of `judged`, load 4-5): 0.46-0.49 ->
    0.22-0.23 s; the views read 47.4 MB (1,000 entries) -> none (the changed recipe's are
    made), the rows 14.7 MB. The reference is the plain tuple a build without a cache makes
    (tests/test_views_rows.py: the runs loaded whole equal it, field by field)."""
    records, status = outcome.records, outcome.status
    assert status is not None
    trust_root = outcome.trust_root

    def view(i: int, share: RowShare) -> EvidenceView:  # as judged: `RunStatus.judged_view`
        rec = records[i]
        return status.runs[i].judged_view(rec, trust_root, _raw_of(rec, raw, pointers), share)

    shares = outcome.shares
    if cache is None or not cache.enabled or not shares or not all(s.key for s in shares):
        every = RowShare()
        return _sorted_runs([view(i, every) for i in range(len(records))]), len(records)
    if sum(len(s.positions) for s in shares) != len(records):
        raise AssertionError("every record belongs to one recipe's share of the status")
    memo = Memo(cache)
    keys = [
        memo.key(
            VIEWS_STAGE,
            VIEWS_CODE,
            RecipeViews(
                s.key,
                trust_root,
                tuple(_raw_key(raw.get(records.path(i)), pointers) for i in s.positions),
            ),
        )
        for s in shares
    ]
    sources = [
        _ShareViews(cache, k, functools.partial(_made, view, s))
        for k, s in zip(keys, shares, strict=True)
    ]
    made = [0]

    def make_rows(todo: list[int]) -> list[tuple[RunRow, ...]]:
        rows, made[0] = _made_rows(cache, [keys[t] for t in todo], [sources[t] for t in todo])
        return rows

    rows = cache.get_or_make_many(ROWS_STAGE, [(k,) for k in keys], make_rows, sweep=True)
    cache.serve(cache.derive(VIEWS_STAGE, [(k,) for k in keys]))  # read when first used
    return _site_runs(shares, rows, sources), made[0]


def _made_rows(
    cache: Cache, keys: Sequence[str], sources: Sequence[_ShareViews]
) -> tuple[list[tuple[RunRow, ...]], int]:
    """The rows of the recipes whose rows the cache does not hold, from their views: read
    from the views stage, else made (and stored); and how many views were made."""
    made = 0

    def make_views(missing: list[int]) -> list[StoredViews]:
        nonlocal made
        out = [sources[j].make() for j in missing]
        made += sum(len(x.heads) for x in out)
        return out

    stored = cache.get_or_make_many(VIEWS_STAGE, [(k,) for k in keys], make_views, sweep=True)
    for source, entry in zip(sources, stored, strict=True):
        source.take(entry)
    return [tuple(map(RunRow.of, source.views())) for source in sources], made


def _made(
    view: Callable[[int, RowShare], EvidenceView], share: RecipeShare
) -> tuple[EvidenceView, ...]:
    """One recipe's views, made with their rows and outcomes shared (`RowShare`, as `shared`
    shares them; the reference is `views_reference`)."""
    rows = RowShare()
    return tuple(view(i, rows) for i in share.positions)


def views_reference(
    outcome: Outcome, evidence_dir: Path, positions: Sequence[int]
) -> tuple[EvidenceView, ...]:
    """The views of the records at `positions` as `_judged_runs` made them before
    `RunStatus.judged_view`: each record's `evidence_view` judged by its run
    (`RunStatus.judged`), then `shared` (tests/test_views_made.py)."""
    records, status = outcome.records, outcome.status
    assert status is not None
    raw = raw_files(outcome.verification, evidence_dir)
    pointers = frozenset(outcome.verification.pointers)
    views = []
    for i in positions:
        rec = records[i]
        made = evidence_view(
            rec, trust_root=outcome.trust_root, raw=_raw(raw.get(rec.path), pointers)
        )
        views.append(status.runs[i].judged(made))
    return shared(tuple(views))


class _ShareViews:
    """One recipe's views (its share of the records, in their order): taken as this build
    made or read them, else read from the views stage's entry when first asked for (made
    again should the entry be gone or bad). Once its views are in hand it lets go of what
    makes them (the build's records and status: a cold build holds every view already, and
    holding those too until the site is written would raise its peak). Not a record: it
    loads."""

    __slots__ = ("_cache", "_key", "_make", "_views")
    loaded = 0  # how many recipes' stored views were read when first asked for (for tests)

    def __init__(
        self, cache: Cache, key: str, make: Callable[[], tuple[EvidenceView, ...]]
    ) -> None:
        self._cache, self._key = cache, key
        self._make: Callable[[], tuple[EvidenceView, ...]] | None = make
        self._views: tuple[EvidenceView, ...] | None = None

    def make(self) -> StoredViews:
        """The views made (kept as made: their rows are in hand), as the stage stores them."""
        assert self._make is not None, "made once, then kept"
        self._views, self._make = self._make(), None
        return StoredViews.of(self._views)

    def take(self, stored: StoredViews) -> None:
        if self._views is None:
            self._views, self._make = stored.views(), None

    def views(self) -> tuple[EvidenceView, ...]:
        if self._views is None:
            type(self).loaded += 1
            stored = self._cache.get_or_make_many(
                VIEWS_STAGE, [(self._key,)], lambda _: [self.make()], sweep=True
            )[0]
            self.take(stored)
        assert self._views is not None
        return self._views


def _site_runs(
    shares: Sequence[RecipeShare],
    rows: Sequence[tuple[RunRow, ...]],
    sources: Sequence[_ShareViews],
) -> SiteRuns:
    """The runs as `_sorted_runs` orders their views, grouped by recipe name: each run known
    by its row, its view read from its recipe's entry when the group's views are first read.
    A run's place among ties is its record's (the sort is stable, over the records' order)."""
    placed: list[tuple[int, int, int]] = []  # (record, share, index in the share)
    for t, (share, mine) in enumerate(zip(shares, rows, strict=True)):
        if len(mine) != len(share.positions):
            raise AssertionError("a recipe's stored rows are not one per record of its share")
        placed.extend((i, t, j) for j, i in enumerate(share.positions))
    placed.sort()
    order = sorted(placed, key=lambda p: _run_order(rows[p[1]][p[2]]))
    groups: dict[str, list[tuple[int, int]]] = {}
    for _, t, j in order:
        groups.setdefault(rows[t][j].recipe, []).append((t, j))
    return SiteRuns(
        {
            name: RecipeRuns(
                tuple(rows[t][j] for t, j in at), functools.partial(_views_at, sources, tuple(at))
            )
            for name, at in groups.items()
        }
    )


def _views_at(
    sources: Sequence[_ShareViews], at: tuple[tuple[int, int], ...]
) -> tuple[EvidenceView, ...]:
    return tuple(sources[t].views()[j] for t, j in at)


def shared(views: tuple[EvidenceView, ...]) -> tuple[EvidenceView, ...]:
    """`views` with each set of equal rows (and equal outcomes) one object, so that a recipe's
    memo entry pickles each once and loading it builds each once: the rows of one recipe's
    runs repeat (at 200 × 4,000: 102,472 rows, 23,543 distinct; 102,472 outcomes, 45
    distinct). Loading the 200 entries: 0.32 → 0.15 s CPU, 12.7 → 9.7 MB (collector paused);
    making them costs 0.26 s more (done for the recipes whose runs changed). The reference is
    the views themselves: equal, value for value (`tests/test_site_incremental.py`), and
    alike where equality is not: a row is shared only with rows of the same `_exact` values
    (0.0 and -0.0 are equal floats that JSON writes apart: a `--no-cache` build, which shares
    nothing, wrote each run's own). That key costs 0.15 -> 0.18 s CPU for 200 recipes x 20
    runs (min of 3), made for the recipes whose runs changed.

    A build no longer calls it: its views are made with their rows shared as they are made
    (`RunStatus.judged_view`, `evidence.view.RowShare`, the same rule), a build without a cache
    too. It is the reference of that (`views_reference`, tests/test_views_made.py)."""
    outcomes: dict[Judged, Judged] = {}
    rows: dict[Any, Any] = {}

    def outcome(o: Judged) -> Judged:
        return outcomes.setdefault(o, o)

    def row(r: _Row) -> _Row:
        key = (r, _exact(r))
        found = rows.get(key)
        if found is None:
            o = outcome(r.outcome)
            found = rows[key] = r if o is r.outcome else r.judged(o)
        return cast(_Row, found)

    return tuple(
        replace(
            v,
            outcome=outcome(v.outcome),
            checks=tuple(map(row, v.checks)),
            kpis=tuple(map(row, v.kpis)),
        )
        for v in views
    )


_Row = TypeVar("_Row", CheckRow, KpiRow)

_FIELDS = EvidenceView.__slots__  # its constructor's arguments, in order (`view._values`)
_CHECKS, _KPIS = _FIELDS.index("checks"), _FIELDS.index("kpis")


@dataclass(frozen=True, slots=True)
class StoredViews:
    """One recipe's run views as the views stage stores them: each view's constructor
    arguments with its check and KPI rows left out (`heads`), and those rows of every view
    as one pickle (`rows`), unpickled only when a view's rows are first read (`LazyRows`).

    Only the pages and API files of a recipe read its runs' rows (a run's page, the recipe's
    KPI charts, a run's JSON record), and a rebuild makes those for the recipes whose runs
    changed: the others' rows are never unpickled. Loading the 200 recipes' views at 200 x
    4,000 (pickle.loads, collector paused, load ~5): 0.21 s whole, 0.045 s without the rows
    (0.15 s of rows; 5.2 of the 9.4 MB). The reference is the views themselves, as stored
    before: `views()` gives views equal to them, field by field (tests/test_views_stored.py).

    `rows` is a pickle inside the stage's entry, which the cache authenticates before it is
    unpickled (`Cache.get_or_make_many`); it is unpickled only from such an entry, or from
    what this build made."""

    heads: tuple[tuple[Any, ...], ...]
    rows: bytes

    @staticmethod
    def of(views: Sequence[EvidenceView]) -> StoredViews:
        heads = []
        rows = []
        for v in views:
            args = [getattr(v, name) for name in _FIELDS]
            rows.append((args[_CHECKS], args[_KPIS]))
            args[_CHECKS] = args[_KPIS] = ()
            heads.append(tuple(args))
        return StoredViews(
            tuple(heads), pickle.dumps(tuple(rows), protocol=pickle.HIGHEST_PROTOCOL)
        )

    def views(self) -> tuple[EvidenceView, ...]:
        """The views, each one's rows read from `rows` when first asked for."""
        rows = _RecipeRows(self.rows)
        out = []
        for i, head in enumerate(self.heads):
            args = list(head)
            args[_CHECKS], args[_KPIS] = LazyRows(rows, i, 0), LazyRows(rows, i, 1)
            out.append(EvidenceView(*args))
        return tuple(out)


class _RecipeRows:
    """The check and KPI rows of one recipe's views: unpickled on first use, all at once (the
    rows the views share stay shared: `shared`). Not a record: it loads."""

    __slots__ = ("_blob", "_rows")
    loaded = 0  # how many recipes' rows were unpickled (a count of work, for tests)

    def __init__(self, blob: bytes) -> None:
        self._blob = blob
        self._rows: tuple[tuple[tuple[Any, ...], tuple[Any, ...]], ...] | None = None

    def get(self, i: int, which: int) -> tuple[Any, ...]:
        if self._rows is None:
            type(self).loaded += 1
            self._rows = pickle.loads(self._blob)  # an authenticated entry's (`StoredViews`)
            self._blob = b""
        return self._rows[i][which]


class LazyRows(LoadedTuple):
    """A view's check or KPI rows, read from its recipe's stored rows when first used; equal
    to (and hashed as) the tuple of them, and pickled as that tuple (`fast.loaded.LoadedTuple`).
    Not a record: it loads."""

    __slots__ = ("_i", "_src", "_which")

    def __init__(self, src: _RecipeRows, i: int, which: int) -> None:
        self._src, self._i, self._which = src, i, which

    def _tuple(self) -> tuple[Any, ...]:
        return self._src.get(self._i, self._which)


def _exact(r: CheckRow | KpiRow) -> tuple[object, ...]:
    """What equality does not tell apart in a row and its published form does: a KPI's zeros
    by their sign (0.0 == -0.0: the only equal floats written apart; NaN equals nothing), a
    check's targets by their type (True == 1) and their zeros by sign (an integral float
    passes the schema's `integer`)."""
    if isinstance(r, KpiRow):
        return r.value == 0 and repr(r.value), r.threshold == 0 and repr(r.threshold)
    return type(r.targets), r.targets == 0 and repr(r.targets)


def _raw_key(found: FoundFile | None, pointers: frozenset[str]) -> str:
    """What a run's raw reference is made from (its statement flag is a function of the
    digest); "" without one."""
    if found is None:
        return ""
    fields = (found.path, found.real, found.root, found.sha256, str(found.size))
    return "\0".join((*fields, str(found.path in pointers)))


def _lane_outcome(
    recipe: RecipeStatus, lane: AggregatedLane, stale_lanes: set[tuple[str, str, str]]
) -> LaneOutcome:
    """A lane's verdict on the site: pass when qualified, fail or contested when its signers
    say so, stale when only stale evidence names it, else untested."""
    if lane.qualified:
        verdict = LaneVerdict.PASS
    elif lane.state is Consensus.FAILING:
        verdict = LaneVerdict.FAIL
    elif lane.state is Consensus.CONTESTED:
        verdict = LaneVerdict.CONTESTED
    elif (recipe.recipe, recipe.profile, lane.lane) in stale_lanes:
        verdict = LaneVerdict.STALE
    else:
        verdict = LaneVerdict.UNTESTED
    return LaneOutcome(lane.lane, lane.nodes, verdict, lane.passed + lane.failed)


_STATE_ORDER = {"verified": 0, "stale": 1, "rejected": 2}


def _run_order(e: RunFacts) -> tuple[Any, ...]:
    return (
        e.recipe,
        _STATE_ORDER.get(e.state, 3),
        e.profile,
        e.lane_nodes or 0,
        e.attested_at,
        e.path,
    )


def _sorted_runs(runs: Sequence[EvidenceView]) -> tuple[EvidenceView, ...]:
    """Per recipe: counted runs first, then stale, then rejected; each by profile and lane."""
    return tuple(sorted(runs, key=_run_order))
