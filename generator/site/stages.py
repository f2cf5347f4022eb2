"""One small adapter per pipeline stage the site build calls.

The site never reaches into another stage's internals: each adapter calls that stage's public
function and turns its result into the site's records (`generator.site.model`). Nothing is
invented where a stage found nothing (a recipe without evidence is UNTESTED).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from generator.core.cache import Cache
from generator.core.errors import (
    CatalogError,
    Diagnostic,
    RenderError,
    ScaleError,
    Severity,
    ValidationError,
)
from generator.core.records import Catalog, RecipeResult
from generator.site.model import Check, Download, EvidenceRun, Kpi, Lane, LaneStatus, StageNote

if TYPE_CHECKING:
    from generator.evidence.model import Evidence


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


def lanes(catalog: Catalog) -> tuple[Lane, ...]:
    """The ladder of `scale/lanes.yaml`, ascending by node count, each lane's KPIs with units."""
    doc = catalog.documents.get("scale/lanes.yaml")
    if doc is None or not isinstance(doc.data, Mapping):
        return ()
    spec = doc.data.get("spec") or {}
    kpi_defs = {str(k.get("id")): k for k in spec.get("kpis") or () if isinstance(k, Mapping)}
    out = []
    for raw in spec.get("lanes") or ():
        if not isinstance(raw, Mapping) or "name" not in raw:
            continue
        kpis = []
        for kpi_id, t in sorted((raw.get("thresholds") or {}).items()):
            t = t if isinstance(t, Mapping) else {"value": t}
            d = kpi_defs.get(str(kpi_id), {})
            kpis.append(
                {
                    "id": str(kpi_id),
                    "title": str(d.get("title", "")),
                    "unit": str(d.get("unit", "")),
                    "threshold": {"operator": t.get("operator", ""), "value": t.get("value")},
                    "status": str(t.get("status", "")),
                }
            )
        criteria = {
            "racks": raw.get("racks"),
            "phases": list(raw.get("phases") or ()),
            "scenarios": list(raw.get("scenarios") or ()),
            "kpis": kpis,
        }
        gpus = raw.get("gpus")
        out.append(
            Lane(
                name=str(raw["name"]),
                nodes=int(raw.get("nodes") or 0),
                gpus=int(gpus) if gpus is not None else None,
                criteria_version=str(raw.get("criteriaVersion", "")),
                raw=criteria,
            )
        )
    return tuple(sorted(out, key=lambda lane: (lane.nodes, lane.name)))


# --- render -----------------------------------------------------------------------------------


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
    from generator.catalog.manifests import read_manifests
    from generator.render import GitOpsTarget, archive_name

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
        name = archive_name(result, deployer)
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

        target = GitOpsTarget()
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
        Check(phase, c.name, c.status, c.targets, c.message)
        for phase, cs in (st.phases.items() if st else ())
        for c in cs
    )
    kpis = tuple(
        Kpi(k.id, k.value, k.unit, k.operator, k.threshold, k.status or "")
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

    records: tuple[Evidence, ...]
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
    cache: Cache | None = None,
) -> tuple[Verified, StageNote | None]:
    """Verify every evidence file offline against the chosen trust root and the signer policy.

    `jobs` processes (default: every core); with a `generator.core.cache.Cache`, only files whose
    (path, bytes, trust root, policy) it has not seen are verified again.
    """
    from generator.evidence import upstream as pointers
    from generator.evidence import verify

    empty = Verified((), {}, trust_root, trust_root == "demo")
    has_pointers = pointers.has_pointers(evidence_dir)
    if not evidence_dir.is_dir() or not (
        any(evidence_dir.rglob("*.sigstore.json")) or has_pointers
    ):
        return empty, None
    from generator.evidence.policy import read_policy
    from generator.evidence.store import read_files
    from generator.evidence.trustroot import load_trust_root

    root = load_trust_root(trust_root, Path(catalog.root))
    policy = read_policy(Path(catalog.root) / "signers.yaml", "signers.yaml")
    # plus upstream's allowlist.yaml, when the evidence holds one
    policy = pointers.load_policy(Path(catalog.root), [evidence_dir])
    files = read_files([evidence_dir], base=evidence_dir.parent)
    current = {verify.digest_key(r.name, r.scale_profile): r.digest for r in results}
    if cache is not None:
        from generator.evidence.verify_cache import verify_cached

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
    if has_pointers:  # upstream pointers: pulled by digest, cache first
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
    consensus: str
    ceiling: str
    ceiling_nodes: int
    lanes: tuple[LaneStatus, ...]


@dataclass(frozen=True, slots=True)
class Aggregated:
    statuses: Mapping[tuple[str, str], ProfileStatus]
    components: Mapping[
        tuple[str, str], tuple[str, str]
    ]  # (component, version) -> (lane, profiles)
    runs: tuple[EvidenceRun, ...]


_EXCLUSION_TEXT = {
    "unverified": "not verified",
    "unallowlisted": "signer not in the allowlist",
    "invalid": "invalid statement",
    "stale": "stale: the recipe has changed since",
    "stale-criteria": "stale: the lane criteria have changed since",
    "sample-outside-demo": "sample evidence counts only under the demo trust root",
    "unknown-lane": "names a lane the ladder does not have",
    "verdict-mismatch": "its signed verdict is not what its raw results give under the lane criteria",
    "attested-after-logged": "attested after the transparency log recorded it",
}


def aggregate(
    catalog: Catalog, results: Sequence[RecipeResult], verified: Verified
) -> tuple[Aggregated, StageNote | None]:
    """Consensus, scale ceiling and lane verdicts per recipe × profile, from the status stage."""
    if not verified.records:  # nothing to count: every recipe × profile is UNTESTED
        return Aggregated({}, {}, ()), None
    from generator import aggregate as agg

    doc = catalog.documents.get("scale/lanes.yaml")
    if doc is None:  # no ladder to judge the runs against
        plain = [
            _run_from(r, verified.raw.get(r.path, b""), verified.trust_root)
            for r in verified.records
        ]
        note = StageNote(
            "aggregate",
            "the catalog has no scale/lanes.yaml: consensus and ceilings show UNTESTED.",
        )
        return Aggregated({}, {}, _sorted_runs(plain)), note
    from generator.scale.qualify import parse_lanes

    lanes_ = parse_lanes(doc)
    ladders = {name: p.ladder for name, p in catalog.profiles.items()}
    status = agg.aggregate(results, verified.records, lanes_, ladders, demo=verified.demo)

    # evidence runs, judged: counted, or why not
    runs: list[EvidenceRun] = []
    judged = agg.run_verdicts(status)
    stale_lanes: set[tuple[str, str, str]] = set()
    for i, rec in enumerate(verified.records):
        run = _run_from(rec, verified.raw.get(rec.path, b""), verified.trust_root)
        judged_run = judged.get(i)
        if judged_run is not None:
            exclusion, downgraded = judged_run
            if exclusion in ("stale", "stale-criteria"):
                run = replace(run, state="stale", reason=run.reason or _EXCLUSION_TEXT[exclusion])
                stale_lanes.add((run.recipe, run.profile or "standard", run.lane))
            elif exclusion:
                # verdict-mismatch and attested-after-logged name the disagreement themselves
                reason = run.reason or downgraded or _EXCLUSION_TEXT.get(exclusion, exclusion)
                run = replace(
                    run,
                    state="rejected",
                    reason=reason,
                    failure_class=run.failure_class or exclusion,
                )
            if downgraded and run.state == "verified":
                run = replace(run, reason=downgraded)
        runs.append(run)

    lanes_by: dict[tuple[str, str], list[LaneStatus]] = {}
    row: Any  # pandas' named tuples
    for row in status.lanes.itertuples(index=False):
        state = str(row.state)
        if bool(row.qualified):
            verdict = "pass"
        elif state in ("FAILING", "CONTESTED"):
            verdict = "fail" if state == "FAILING" else "contested"
        elif (row.recipe, row.profile, row.lane) in stale_lanes:
            verdict = "stale"
        else:
            verdict = "untested"
        runs_n = int(getattr(row, "passed", 0) or 0) + int(getattr(row, "failed", 0) or 0)
        lanes_by.setdefault((str(row.recipe), str(row.profile)), []).append(
            LaneStatus(str(row.lane), int(row.nodes), verdict, runs_n)
        )
    statuses = {}
    for row in status.recipes.itertuples(index=False):
        key = (str(row.recipe), str(row.profile))
        statuses[key] = ProfileStatus(
            consensus=str(row.consensus),
            ceiling=str(row.ceiling_lane or ""),
            ceiling_nodes=int(row.ceiling_nodes),
            lanes=tuple(lanes_by.get(key, ())),
        )
    comps = {}
    for row in status.components.itertuples(index=False):
        if row.lane:
            comps[(str(row.component), str(row.version))] = (
                str(row.lane),
                ", ".join(row.profiles),
            )
    return Aggregated(statuses, comps, _sorted_runs(runs)), None


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
