"""One small adapter per pipeline stage the site build calls.

The site never reaches into another stage's internals: each adapter calls that stage's public
function and turns its result into the site's records (`generator.site.model`). A stage that is
not installed yet (an optional module that has not landed) is reported as a `StageNote` and its
part of the site says so; nothing is invented in its place (a recipe without evidence is
UNTESTED).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

from generator.aggregate import DEFAULT_PROFILE, Consensus, RecipeStatus, RunStatus
from generator.aggregate import LaneStatus as AggregatedLane
from generator.aggregate import aggregate as aggregate_status
from generator.core.errors import (
    CatalogError,
    Diagnostic,
    RenderError,
    ScaleError,
    Severity,
    ValidationError,
)
from generator.core.records import Catalog, RecipeResult
from generator.scale.qualify import LANES_FILE, Lanes, lanes_of
from generator.scale.qualify import Lane as QualificationLane
from generator.site.model import (
    CheckRow,
    Download,
    EvidenceRun,
    KpiRow,
    LaneOutcome,
    LaneVerdict,
    LaneView,
    StageNote,
)


def optional_stage(module: str) -> ModuleType | None:
    """The stage module if it is installed, else None."""
    try:
        found = importlib.util.find_spec(module)
    except ModuleNotFoundError:
        return None
    return importlib.import_module(module) if found is not None else None


# --- load + validate --------------------------------------------------------------------------


def load_and_validate(root: Path, *, strict: bool = False) -> Catalog:
    """Load and validate the catalog; raise ValidationError carrying every located problem."""
    from generator.catalog.load import load_catalog
    from generator.validate import validate_catalog

    catalog, load_diags = load_catalog(root)
    diags = tuple(load_diags) + tuple(validate_catalog(catalog, strict=strict))
    errors = [d for d in diags if d.severity is Severity.ERROR or strict]
    if errors:
        raise ValidationError(f"the catalog has {len(errors)} problem(s)", errors)
    return catalog


# --- resolve ----------------------------------------------------------------------------------


def resolve_leaf(
    catalog: Catalog, leaf: str
) -> tuple[tuple[RecipeResult, ...], tuple[Diagnostic, ...]]:
    """Every scale profile this leaf resolves with, `standard` first, then by name.

    A profile whose `appliesTo` excludes the leaf raises ScaleError: it is simply not offered.
    A leaf that does not resolve at all is reported with the resolver's diagnostics.
    """
    from generator.catalog.resolve import resolve

    names = sorted(catalog.profiles, key=lambda n: (n != "standard", n)) or ["standard"]
    results: list[RecipeResult] = []
    problems: list[Diagnostic] = []
    for profile in names:
        try:
            results.append(resolve(catalog, leaf, profile=profile))
        except ScaleError:
            continue
        except CatalogError as e:
            problems.extend(e.diagnostics)
            if not e.diagnostics:
                problems.append(Diagnostic(leaf, 0, 0, "$", e.message, "resolve"))
    return tuple(results), tuple(problems)


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


def recipes_added(catalog_root: Path, files: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """(recipe, YYYY-MM-DD) of each recipe whose overlay file the catalog's git history shows
    being added (the newest addition), from one `git log`; empty when the catalog is not in a
    git checkout (the changelog page says recipe additions come from that history)."""
    import subprocess

    try:
        out = subprocess.run(
            ["git", "-C", str(catalog_root), "log", "--diff-filter=A", "--format=@%cs",
             "--name-only", "--relative", "--", "."],
            capture_output=True, text=True, check=False, timeout=60,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return ()
    if out.returncode != 0:
        return ()
    added: dict[str, str] = {}
    date = ""
    for line in out.stdout.splitlines():
        if line.startswith("@"):
            date = line[1:]
        elif line and line not in added:
            added[line] = date
    by_file = {rel: name for name, rel in files.items()}
    return tuple(sorted((by_file[f], d) for f, d in added.items() if f in by_file and d))


# --- lanes ------------------------------------------------------------------------------------


def lanes(catalog: Catalog) -> tuple[LaneView, ...]:
    """The ladder of `scale/lanes.yaml` (parsed by its one strict parser), ascending by node
    count, each lane's KPIs with units; none when the catalog has no lanes.yaml."""
    if LANES_FILE not in catalog.documents:
        return ()
    parsed = lanes_of(catalog.documents)
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
    job: tuple[RecipeResult, str, Mapping[str, bytes], int, Path | None],
) -> tuple[bytes | None, str, tuple[Diagnostic, ...]]:
    """One archive (in a worker process): (bytes, "", ()) or (None, message, diagnostics)."""
    from generator.render.cache import cached_archive

    result, deployer, manifests, epoch, cache_dir = job
    try:
        return cached_archive(result, deployer, manifests, cache_dir=cache_dir, mtime=epoch), "", ()
    except CatalogError as e:
        return None, e.message, e.diagnostics


def render_bundles(
    catalog: Catalog,
    results: Sequence[RecipeResult],
    deployers: Sequence[str],
    epoch: int = 0,
    cache_dir: Path | None = None,
    jobs: int | None = None,
) -> tuple[dict[tuple[str, str], tuple[Download, ...]], StageNote | None]:
    """Every leaf × profile × deployer as a reproducible archive (mtime = SOURCE_DATE_EPOCH).

    With `cache_dir`, an archive whose inputs (recipe digest, deployer, renderer) are unchanged
    is read from the render stage's content-addressed cache instead of being rendered again.
    Archives not in the cache are rendered on every core (`jobs`, default all).
    """
    render = optional_stage("generator.render")
    if render is None:
        return {}, StageNote("render", "the bundle stage is not available in this build.")
    from generator.catalog.manifests import read_manifests

    problems: list[Diagnostic] = []
    work: list[tuple[RecipeResult, str, Mapping[str, bytes], int, Path | None]] = []
    for result in results:
        try:
            manifests = read_manifests(catalog, result)
        except CatalogError as e:
            problems.extend(e.diagnostics)
            continue
        work.extend((result, d, manifests, epoch, cache_dir) for d in deployers)
    workers = min(jobs or os.cpu_count() or 1, len(work))
    if workers > 1 and len(work) >= _PARALLEL_RENDER:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            done = list(pool.map(_render_one, work, chunksize=max(1, len(work) // (workers * 4))))
    else:
        done = [_render_one(job) for job in work]
    out: dict[tuple[str, str], list[Download]] = {(r.name, r.scale_profile): [] for r in results}
    for (result, deployer, _, _, _), (data, message, diags) in zip(work, done, strict=True):
        if data is None:
            problems.extend(diags or (Diagnostic(result.name, 0, 0, "$", message, "render"),))
            continue
        name = render.archive_name(result, deployer)
        out[(result.name, result.scale_profile)].append(
            Download(
                deployer=deployer,
                profile=result.scale_profile,
                file=f"downloads/{result.name}/{name}",
                sha256=hashlib.sha256(data).hexdigest(),
                size=len(data),
                content=data,
            )
        )
    if problems:
        raise RenderError("some bundles could not be rendered", problems)
    if cache_dir is not None:  # keep the archives of this build only
        from generator.render.cache import entry_name, sweep

        target = render.GitOpsTarget()
        sweep(cache_dir, {entry_name(r, d, target, epoch) for r, d, _, _, _ in work})
    return {k: tuple(v) for k, v in out.items()}, None


# --- verify -----------------------------------------------------------------------------------


def _iso(seconds: int | None) -> str:
    if seconds is None:
        return ""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _run_from(record: Any, raw: bytes, trust_root: str) -> EvidenceRun:
    """The site's view of one verification record (`VerifiedEvidence | RejectedEvidence`)."""
    from generator.evidence.model import VerifiedEvidence

    st = getattr(record, "statement", None)
    verified = isinstance(record, VerifiedEvidence)
    stale = bool(getattr(record, "stale", False))
    if verified:
        state, reason, klass = ("stale", record.message, "stale") if stale else ("verified", "", "")
    else:
        state, reason, klass = "rejected", record.message, str(record.klass)
    digest = getattr(record, "statement_digest", None) or ""
    # two files may hold the same statement (a copy under another signer's directory): the key
    # adds the path so ids, anchors and links stay unique and stable
    key = digest.removeprefix("sha256:")[:16] or "file"  # "file": no readable statement
    key = f"{key}-{hashlib.sha256(record.path.encode()).hexdigest()[:8]}"
    checks = tuple(
        CheckRow(phase, c.name, c.status, c.targets, c.message)
        for phase, cs in (st.phases.items() if st else ())
        for c in cs
    )
    kpis = tuple(
        KpiRow(k.id, k.value, k.unit, k.operator, k.threshold, k.status or "")
        for k in (st.kpis if st else ())
    )
    rule_label = getattr(record, "signer_label", "") or ""
    rule_class = getattr(record, "signer_class", "") or ""
    return EvidenceRun(
        id=key,
        statement_digest=digest,
        path=record.path,
        recipe=(st.recipe if st else record.path.split("/")[1] if "/" in record.path else ""),
        state=state,
        reason=reason,
        failure_class=klass,
        sample=bool(
            getattr(record, "sample", False)
            or (st.sample if st else False)
            or getattr(record, "trust_root", None) == "demo"  # signed under the demo root
        ),
        predicate_type=st.predicate_type if st else "",
        profile=(st.scale_profile or "") if st else "",
        profile_version=(st.scale_profile_version or "") if st else "",
        lane=(st.lane or "") if st else "",
        lane_nodes=st.lane_nodes if st else None,
        observed_nodes=st.observed_nodes if st else None,
        observed_gpus=st.observed_gpus if st else None,
        verdict=(st.verdict or "") if st else "",
        reasons=tuple(st.reasons) if st else (),
        recipe_digest=st.recipe_digest if st else "",
        bundle_digest=(st.bundle_digest or "") if st else "",
        attested_at=(st.attested_at or "") if st else "",
        signer_identity=getattr(record, "signer_identity", None) or "",
        signer_issuer=getattr(record, "signer_issuer", None) or "",
        signer_class=str(rule_class),
        signer_label=rule_label,
        trust_root=getattr(record, "trust_root", None) or trust_root,
        tlog_index=getattr(record, "log_index", None),
        integrated_time=_iso(getattr(record, "integrated_time", None)),
        checks=checks,
        kpis=kpis,
        component_versions=dict(st.component_versions) if st else {},
        raw=raw,
    )


@dataclass(frozen=True, slots=True)
class Verified:
    """What the verify stage gave: its records (for aggregate), the raw files, the root's name."""

    records: tuple[Any, ...]
    raw: Mapping[str, bytes]
    trust_root: str
    demo: bool


def verify_evidence(
    catalog: Catalog,
    evidence_dir: Path,
    results: Sequence[RecipeResult],
    trust_root: str,
    *,
    jobs: int | None = None,
    cache: Any = None,
) -> tuple[Verified, StageNote | None]:
    """Verify every evidence file offline against the chosen trust root and the signer policy.

    `jobs` processes (default: every core); with a `generator.core.cache.Cache`, only files whose
    (path, bytes, trust root, policy) it has not seen are verified again.
    """
    empty = Verified((), {}, trust_root, trust_root == "demo")
    pointers = optional_stage("generator.evidence.upstream")
    has_pointers = pointers is not None and pointers.has_pointers(evidence_dir)
    if not evidence_dir.is_dir() or not (
        any(evidence_dir.rglob("*.sigstore.json")) or has_pointers
    ):
        return empty, None
    verify = optional_stage("generator.evidence.verify")
    if verify is None:
        return empty, StageNote("verify", "the evidence verifier is not available in this build.")
    from generator.evidence.policy import read_policy
    from generator.evidence.store import read_files
    from generator.evidence.trustroot import load_trust_root

    root = load_trust_root(trust_root, Path(catalog.root))
    policy = read_policy(Path(catalog.root) / "signers.yaml", "signers.yaml")
    if pointers is not None:  # plus upstream's allowlist.yaml, when the evidence holds one
        policy = pointers.load_policy(Path(catalog.root), [evidence_dir])
    files = read_files([evidence_dir], base=evidence_dir.parent)
    current = {verify.digest_key(r.name, r.scale_profile): r.digest for r in results}
    if cache is not None:
        from generator.core.cache import verify_cached

        records = verify_cached(
            files, trust_root=root, policy=policy, current_digests=current, cache=cache, jobs=jobs
        )
    else:
        records = verify.verify_evidence(
            files, trust_roots=root, policy=policy, current_digests=current, jobs=jobs
        )
    inside = evidence_dir.resolve()
    raw = {
        f.path: f.data
        for f in files
        # never publish what a link reads
        if _stays_inside(evidence_dir.parent / f.path, inside, f.real)
    }
    if has_pointers and pointers is not None:  # upstream pointers: pulled by digest, cache first
        pointed = pointers.pointer_records(
            [evidence_dir],
            trust_roots=(root,),
            policy=policy,
            current_digests=current,
            base=evidence_dir.parent,
        )
        records = (*records, *pointed)
        for r in pointed:  # the run's raw download: its Sigstore bundle (else the pointer)
            path = evidence_dir.parent / r.path
            if _stays_inside(path, inside):
                raw[r.path] = pointers.signed_bundle(path) or path.read_bytes()
    return Verified(tuple(records), raw, root.name, root.demo), None


def _stays_inside(path: Path, directory: Path, real: str = "") -> bool:
    """The file is inside `directory` and is not itself a link (links on its way may only lead
    inside). `real` is its real path when the reader resolved it already."""
    try:
        resolved = Path(real) if real else path.resolve(strict=True)
        return resolved.is_relative_to(directory) and not path.is_symlink()
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
    runs: tuple[EvidenceRun, ...]


def aggregate(
    catalog: Catalog, results: Sequence[RecipeResult], verified: Verified
) -> tuple[Aggregated, StageNote | None]:
    """Consensus, scale ceiling and lane verdicts per recipe × profile, from the status stage."""
    if not verified.records:  # nothing to count: every recipe × profile is UNTESTED
        return Aggregated({}, {}, ()), None
    if LANES_FILE not in catalog.documents:  # no lanes: nothing can be judged or counted
        plain = [_run_from(r, verified.raw.get(r.path, b""), verified.trust_root)
                 for r in verified.records]  # fmt: skip
        note = StageNote(
            "aggregate",
            "the status stage is not available in this build: consensus and ceilings show "
            "UNTESTED.",
        )  # fmt: skip
        return Aggregated({}, {}, _sorted_runs(plain)), note
    ladders = {name: p.ladder for name, p in catalog.profiles.items()}
    status = aggregate_status(
        results, verified.records, lanes_of(catalog.documents), ladders, demo=verified.demo
    )
    runs = [
        _judged_run(verified, rec, run)
        for rec, run in zip(verified.records, status.runs, strict=True)
    ]
    stale_lanes = {
        (r.recipe, r.profile or DEFAULT_PROFILE, r.lane) for r in runs if r.state == "stale"
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
    return Aggregated(statuses, comps, _sorted_runs(runs)), None


def _judged_run(verified: Verified, record: Any, judged: RunStatus) -> EvidenceRun:
    """The site's view of one evidence record, judged: counted, or why not."""
    run = _run_from(record, verified.raw.get(record.path, b""), verified.trust_root)
    exclusion, downgraded = judged.exclusion, judged.downgraded
    if exclusion is not None and exclusion.is_stale:
        run = replace(run, state="stale", reason=run.reason or exclusion.label)
    elif exclusion is not None:
        # verdict-mismatch and attested-after-logged name the disagreement themselves
        reason = run.reason or downgraded or exclusion.label
        run = replace(
            run, state="rejected", reason=reason, failure_class=run.failure_class or str(exclusion)
        )
    if downgraded and run.state == "verified":
        run = replace(run, reason=downgraded)
    return run


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


def _sorted_runs(runs: Sequence[EvidenceRun]) -> tuple[EvidenceRun, ...]:
    """Per recipe: counted runs first, then stale, then rejected; each by profile and lane."""
    return tuple(
        sorted(
            runs,
            key=lambda e: (
                e.recipe,
                _STATE_ORDER.get(e.state, 3),
                e.profile,
                e.lane_nodes or 0,
                e.attested_at,
                e.path,
            ),
        )
    )
