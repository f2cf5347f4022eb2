"""`aicr-catalog status`: structural health, consensus and scale ceiling, from verified evidence."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from generator import pipeline
from generator.aggregate import (
    CheckStatus,
    ComponentQualification,
    LaneStatus,
    RecipeStatus,
    RunStatus,
    Status,
)
from generator.catalog.lanes import Lane, Lanes
from generator.commands.common import (
    EXIT_OK,
    EXIT_USAGE,
    announce_defaults,
    catalog_option,
    fail,
    handles_errors,
    stated_rules,
    trust_root_option,
)
from generator.core import safeio
from generator.core.errors import ResolveError, ScaleError, printable
from generator.core.records import Consensus
from generator.evidence.model import Evidence, RootUse
from generator.evidence.trustroot import PUBLIC_GOOD
from generator.evidence.view import evidence_view
from generator.scale.qualify import lanes_of


def gather(
    catalog_path: Path,
    evidence_dir: Path,
    recipe: str | None,
    profile: str | None,
    trust: Sequence[str],
    online: bool = False,
) -> tuple[Status, Sequence[Evidence], Lanes, str]:
    """The status pipeline for the CLI: `generator.pipeline.run`, the very computation `build`
    publishes, scoped to one recipe and profile when given. Gives the status, the evidence
    records it was aggregated from (`RunStatus.index` is a position in them), the lanes and the
    trust root's name."""
    if not safeio.is_dir(catalog_path):
        fail(
            f"catalog directory '{catalog_path}' not found; run from the repository root or "
            "pass --catalog PATH",
            EXIT_USAGE,
        )
    inputs = pipeline.Inputs(
        catalog=catalog_path,
        evidence=evidence_dir,
        trust_roots=tuple(trust) or (PUBLIC_GOOD,),
        scope=pipeline.Scope(recipe, profile),
        online=online,
        rules=stated_rules(),
    )
    outcome = pipeline.run(inputs)
    announce_defaults(outcome.catalog)
    if outcome.status is None or outcome.resolved.lanes is None:
        lanes_of(outcome.catalog.documents)  # raises: the catalog has no lanes
        raise AssertionError("unreachable: a catalog with lanes has a status")
    return outcome.status, outcome.records, outcome.resolved.lanes, outcome.trust_root


# ---------------------------------------------------------------- the JSON document (a projection of the records)

SAMPLE_BANNER = (
    "SAMPLE: evidence verified with the demo trust root is sample data for demonstration; "
    "it is not a real qualification and a release refuses it"
)


class _Runs:
    """Each run's evidence record as counted (`RunStatus.judged`), made when first shown."""

    def __init__(self, evidence: Sequence[Evidence], trust_root: str) -> None:
        self.evidence, self.trust_root = evidence, trust_root

    def record(self, r: RunStatus) -> dict[str, Any]:
        view = evidence_view(self.evidence[r.index], trust_root=self.trust_root)
        return r.judged(view).to_json()

    def counted(self, r: RunStatus) -> dict[str, Any]:
        """A run counted on a lane: its record, its verdict as counted and, when that is not
        the signed one, the disagreement."""
        return {
            **self.record(r),
            "effectiveVerdict": str(r.effective),
            "downgraded": r.downgraded or None,
        }

    def excluded(self, r: RunStatus) -> dict[str, Any]:
        """A run not counted: its record and the exclusion (its `reason` says why)."""
        return {**self.record(r), "exclusion": str(r.exclusion or "")}


def _lane_json(ln: LaneStatus, runs: _Runs | None) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "lane": ln.lane,
        "nodes": ln.nodes,
        "onLadder": ln.on_ladder,
        "state": str(ln.state),
        "qualified": ln.qualified,
        "passed": ln.passed,
        "failed": ln.failed,
    }
    if runs is not None:
        entry["phases"] = {phase: str(state) for phase, state in ln.phases}
        entry["runs"] = [runs.counted(r) for r in ln.runs]
    return entry


def _check_json(c: CheckStatus) -> dict[str, Any]:
    return {
        "lane": c.lane,
        "phase": c.phase,
        "check": c.check,
        "state": str(c.state),
        "passed": c.passed,
        "failed": c.failed,
        "required": c.required,
    }


def _recipe_json(r: RecipeStatus, runs: _Runs | None) -> dict[str, Any]:
    item: dict[str, Any] = {
        "recipe": r.recipe,
        "profile": r.profile,
        "profileVersion": r.profile_version,
        "digest": r.digest,
        "health": r.health,
        "coverage": r.coverage,
        "consensus": str(r.consensus),
        "ceiling": {"lane": r.ceiling_lane, "nodes": r.ceiling_nodes},
        "blockedAt": None
        if r.blocked_lane is None
        else {"lane": r.blocked_lane, "state": str(r.blocked_state)},
        "runs": r.runs,
        "signers": r.signers,
        "excluded": r.excluded,
        "sample": r.sample,
        "lanes": [_lane_json(ln, runs) for ln in r.lanes],
    }
    if runs is not None:
        item["checks"] = [_check_json(c) for c in r.checks]
        item["excludedEvidence"] = [runs.excluded(x) for x in r.excluded_evidence]
    return item


def _component_json(c: ComponentQualification) -> dict[str, Any]:
    return {
        "component": c.component,
        "version": c.version,
        "lane": c.lane,
        "nodes": c.nodes,
        "profiles": list(c.profiles),
        "qualifiedBy": list(c.qualified_by),
        "recipes": c.recipes,
    }


def _lane_definition_json(ln: Lane) -> dict[str, Any]:
    return {
        "name": ln.name,
        "nodes": ln.nodes,
        "racks": ln.racks,
        "gpus": ln.gpus,
        "criteriaVersion": ln.criteria_version,
        "proposedThresholds": sorted(k for k, t in ln.thresholds if t.status == "proposed"),
    }


def status_document(
    status: Status,
    evidence: Sequence[Evidence],
    lanes: Lanes,
    trust_root: str,
    *,
    detail: bool = False,
) -> dict[str, Any]:
    """The `aicr-catalog status --format json` document (catalog/schemas/status.schema.json).

    `evidence` are the records `status` was aggregated from. `detail` adds per-lane runs,
    phases, checks and excluded evidence to every recipe row; each run is its evidence record
    as every JSON output shows it (`EvidenceView.to_json()`, as counted) and how it counted.
    """
    runs = _Runs(evidence, trust_root) if detail else None
    doc: dict[str, Any] = {
        "apiVersion": "aicr.run/v1",
        "kind": "Status",
        "trustRoot": trust_root,
        "sample": status.demo,
        "lanes": [_lane_definition_json(ln) for ln in lanes.lanes],
        "health": [
            {
                "recipe": h.recipe,
                "status": h.health,
                "coverage": h.coverage,
                "problems": list(h.problems),
            }
            for h in status.health
        ],
        "recipes": [_recipe_json(r, runs) for r in status.recipes],
        "components": [_component_json(c) for c in status.components],
    }
    if status.demo:
        doc["sampleNote"] = SAMPLE_BANNER
    return doc


# ---------------------------------------------------------------- text reporter


def _ceiling(r: dict[str, Any]) -> str:
    c = r["ceiling"]
    text = f"{c['lane']} ({c['nodes']:,} nodes)" if c["lane"] else "none"
    if r["blockedAt"]:
        text += f"; next rung {r['blockedAt']['lane']} is {r['blockedAt']['state']}"
    return text


LEGEND = (
    "consensus over distinct verified signers (allowlist entries), latest logged run each: CONFIRMED ≥2 pass and none fail; "
    "SINGLE 1 pass; CONTESTED pass and fail; FAILING fail only; UNTESTED no run; PARTIAL some "
    "required checks untested. ceiling: the largest lane that, with every rung below it, is qualified."
)


def render_text(doc: dict[str, Any], detail: bool) -> str:
    """The status document as text: a table of every recipe, or each recipe in detail."""
    sample = "SAMPLE " if doc["sample"] else ""
    lines = _preamble(doc)
    if not detail:
        lines += _table(doc)
    for r in doc["recipes"] if detail else ():
        lines += _recipe_detail(r, sample)
    lines += _components_text(doc, sample)
    return "\n".join(printable(line) for line in lines) + "\n"  # statement text: one line each


def _preamble(doc: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    if doc["sample"]:
        lines += [f"*** {doc['sampleNote']} ***", ""]
    lines.append(f"trust root: {doc['trustRoot']}")
    proposed = sorted({k for ln in doc["lanes"] for k in ln["proposedThresholds"]})
    if proposed:
        lines.append(
            f"lane criteria: {len(proposed)} KPI thresholds are proposed (not yet calibrated on "
            "hardware): " + ", ".join(proposed)
        )
    lines.append("")
    return lines


def _table(doc: dict[str, Any]) -> list[str]:
    """One row per recipe × profile, the health problems, the legend."""
    header = f"{'recipe':44} {'profile':11} {'health':6} {'coverage':16} {'consensus':10} "
    header += f"{'ceiling':10} {'runs':>4} {'signers':>7} {'excluded':>8}"
    lines = [header]
    for r in doc["recipes"]:
        ceiling = r["ceiling"]["lane"] or "-"
        tag = " SAMPLE" if r["sample"] else ""
        lines.append(
            f"{r['recipe']:44} {r['profile']:11} {r['health'] or '-':6} "
            f"{r['coverage'] or '-':16} {r['consensus']:10} {ceiling:10} {r['runs']:>4} "
            f"{r['signers']:>7} {r['excluded']:>8}{tag}"
        )
    failing = [h for h in doc["health"] if h["status"] != "pass"]
    for h in failing:
        lines.append(f"health {h['status']}: {h['recipe']}: " + "; ".join(h["problems"]))
    return [*lines, "", LEGEND, ""]


def _recipe_detail(r: dict[str, Any], sample: str) -> list[str]:
    """One recipe × profile in detail: its axes, lanes and runs, unsettled checks, exclusions."""
    lines = [
        f"{r['recipe']} × {r['profile']} {r['profileVersion']}  {r['digest']}",
        f"  health     {r['health'] or '-'}  {r['coverage'] or ''}",
        f"  consensus  {sample}{r['consensus']}  ({r['runs']} counted runs, "
        f"{r['signers']} signers, {r['excluded']} not counted)",
        f"  ceiling    {sample}{_ceiling(r)}",
        "  lanes:",
    ]
    for ln in r["lanes"]:
        lines += _lane_text(ln)
    lines += _checks_text(r.get("checks", ()))
    excluded = r.get("excludedEvidence", ())
    if excluded:
        lines.append("  not counted (shown only):")
        for x in excluded:
            message = (x["reason"] or "").split("; allowed: ")[0]  # the allowlist: signers.yaml
            lines.append(f"    {x['exclusion']:13} {x['lane']['name'] or '-':10} {message}")
            lines.append(f"                  {x['repositoryPath']}")
    return [*lines, ""]


def _lane_text(ln: dict[str, Any]) -> list[str]:
    phases = " · ".join(f"{p} {s}" for p, s in sorted(ln.get("phases", {}).items()))
    mark = "qualified" if ln["qualified"] else "not qualified"
    off = "" if ln["onLadder"] else " (not on this profile's ladder)"
    lines = [
        f"    {ln['lane']:10} {ln['nodes']:>5,} nodes  {ln['state']:9} {mark}{off}"
        + (f"  [{phases}]" if phases else "")
    ]
    for run in ln.get("runs", ()):
        tag = "SAMPLE " if run["sample"] else ""
        lines.append(
            f"      {tag}{run['effectiveVerdict']:4}  {run['signer']['label'] or '?'} "
            f"[{run['signer']['class'] or '?'}]  {run['attestedAt'] or '-'}"
        )
        reasons = [*run["reasons"], *([run["downgraded"]] if run["downgraded"] else [])]
        lines += [f"            - {reason}" for reason in reasons]
    return lines


_SETTLED = (Consensus.CONFIRMED, Consensus.UNTESTED, Consensus.SINGLE)


def _checks_text(checks: Sequence[dict[str, Any]]) -> list[str]:
    """The contested or failing checks, and how many required ones are untested."""
    lines: list[str] = []
    unsettled = [c for c in checks if c["state"] not in _SETTLED]
    if unsettled:
        lines.append("  contested or failing checks:")
        for c in unsettled:
            lines.append(
                f"    {c['lane']:10} {c['phase']}/{c['check']}  {c['state']} "
                f"({c['passed']} pass, {c['failed']} fail)"
            )
    untested = sum(1 for c in checks if c["state"] == Consensus.UNTESTED)
    if untested:
        lines.append(f"  untested required checks: {untested}")
    return lines


def _components_text(doc: dict[str, Any], sample: str) -> list[str]:
    if not doc["components"]:
        return []
    lines = ["component qualification (largest lane with current, passing evidence):"]
    for c in doc["components"]:
        where = (
            f"{sample}{c['lane']} ({c['nodes']:,} nodes) under {', '.join(c['profiles'])}"
            if c["lane"]
            else "not yet qualified at scale"
        )
        lines.append(f"  {c['component']:28} {c['version']:18} {where}")
    return lines


@click.command("status")
@click.argument("recipe", required=False)
@click.option(
    "--scale-profile",
    "profile",
    default=None,
    help="Only this scale profile (default: every profile that applies to the recipe).",
)
@trust_root_option(
    use=RootUse.EVIDENCE,
    name="trust",
    multiple=True,
    help="Trust root to verify evidence with (default public-good; repeatable, as for "
    "`evidence verify`). Sample evidence counts only when a demo root verified it.",
)
@click.option(
    "--evidence",
    "evidence_dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("evidence"),
    show_default=True,
    help="Evidence directory (evidence/<recipe>/<source>/<digest>.sigstore.json).",
)
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)
@click.option(
    "--online",
    is_flag=True,
    help="Let pointer files under --evidence pull their artifacts from the registries they name "
    "(default: the OCI cache only).",
)
@catalog_option
@handles_errors
def command(
    recipe: str | None,
    profile: str | None,
    trust: tuple[str, ...],
    evidence_dir: Path,
    fmt: str,
    catalog_path: Path,
    online: bool,
) -> None:
    """Status of every leaf recipe (or RECIPE in detail) on three separate axes.

    Structural health (pass|warn|fail, coverage R:n D:n P:n C:n); consensus over distinct
    verified signers (a signer is an entry of signers.yaml, however many identities it
    matches), latest run per signer by the transparency log's time (CONFIRMED, SINGLE,
    CONTESTED, FAILING, UNTESTED, PARTIAL); and the scale ceiling per recipe × profile: the
    largest lane such that every lane of the ladder up to it has current, verified, passing
    evidence. Verdicts and KPI statuses are recomputed from the signed raw results against the
    lane criteria; a run that claims otherwise (verdict-mismatch) or was attested after it was
    logged is invalid. Stale, unverified, invalid and unallowlisted evidence is listed, never
    counted. Evidence verified with the demo trust root (by content, however given) is SAMPLE
    data and labelled so.

    Exit codes: 0 status computed; 1 bad catalog data; 2 usage (unknown recipe, profile or
    trust root).
    """
    try:
        status, evidence, lanes, root = gather(
            catalog_path, evidence_dir, recipe, profile, trust, online
        )
    except (ResolveError, ScaleError) as e:  # an unknown recipe or profile: usage (exit 2)
        raise e.as_usage() from e
    detail = recipe is not None
    doc = status_document(status, evidence, lanes, root, detail=detail)
    if fmt == "json":
        click.echo(json.dumps(doc, indent=2, sort_keys=True, allow_nan=False))
    else:
        click.echo(render_text(doc, detail), nl=False)
    sys.exit(EXIT_OK)
