"""The records the site is generated from: one immutable view of everything a build gathered.

The stage adapters (`generator.site.stages`) turn the outputs of resolve, render, verify and
aggregate into these records; pages, JSON, charts and badges are pure functions of a `SiteData`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from generator.core.records import Consensus, Criteria, RecipeResult, ScaleProfile
from generator.evidence.model import RunState

UNTESTED = Consensus.UNTESTED


class LaneVerdict(StrEnum):
    """A lane's verdict for a recipe × profile as the site shows it (charts, API)."""

    PASS = "pass"  # qualified: its latest runs agree on pass (CONFIRMED or SINGLE)
    FAIL = "fail"  # FAILING
    CONTESTED = "contested"  # its signers disagree
    STALE = "stale"  # only stale evidence names it
    UNTESTED = "untested"


@dataclass(frozen=True, slots=True)
class Download:
    """One bundle archive published with the site."""

    deployer: str
    profile: str
    file: str  # path inside the site, e.g. downloads/<recipe>/<recipe>-<profile>-<deployer>.tar.gz
    sha256: str  # hex
    size: int
    content: bytes = b""


@dataclass(frozen=True, slots=True)
class CheckRow:
    """One check result of a run, as its evidence page lists it."""

    phase: str
    name: str
    status: str  # CTRF: passed failed skipped pending other
    targets: int | None
    message: str

    def to_json(self) -> dict[str, Any]:
        return {
            "phase": self.phase,
            "name": self.name,
            "status": self.status,
            "targets": self.targets,
        }


@dataclass(frozen=True, slots=True)
class KpiRow:
    """One KPI a run reported, as its evidence page lists it."""

    id: str
    value: float
    unit: str
    operator: str
    threshold: float
    status: str  # passed | failed | proposed | ""

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "value": self.value,
            "unit": self.unit,
            "threshold": {"operator": self.operator, "value": self.threshold},
            "status": self.status or None,
        }


@dataclass(frozen=True, slots=True)
class EvidenceView:
    """One evidence file, verified or not, as the site and its API show it (made from a
    verification record by `generator.site.stages.evidence_view`; `to_json()` is its published
    form, `api/v1/evidence.json` and each recipe's `evidence`)."""

    id: str  # stable and unique: <statement digest hex[:16]>-<sha256(path) hex[:8]>
    statement_digest: str  # "sha256:<hex>" of the statement, "" when unreadable
    path: str  # evidence/<recipe>/<source>/<digest>.sigstore.json (repository-relative)
    recipe: str
    state: RunState
    reason: str  # why rejected/stale ("" when verified)
    failure_class: str  # failure class: "stale", a verification failure, or "" when verified
    sample: bool
    predicate_type: str
    profile: str
    profile_version: str
    lane: str
    lane_nodes: int | None
    observed_nodes: int | None
    observed_gpus: int | None
    verdict: str  # pass | fail | "" (unknown)
    reasons: tuple[str, ...]
    recipe_digest: str
    bundle_digest: str
    attested_at: str
    signer_identity: str
    signer_issuer: str
    signer_class: str  # first-party | partner | community | "" (not allowlisted)
    signer_label: str
    trust_root: str
    tlog_index: int | None
    integrated_time: str
    checks: tuple[CheckRow, ...]
    kpis: tuple[KpiRow, ...]
    component_versions: Mapping[str, str]
    raw: bytes  # the .sigstore.json file as committed; b"" when it is not published

    @property
    def counted(self) -> bool:
        return self.state == RunState.VERIFIED

    @property
    def raw_file(self) -> str:
        """Where the site publishes the file: `evidence/raw/<id>.sigstore.json`, one flat
        directory (a directory per recipe and lab, as in the repository, would be thousands of
        directories to create and delete on every build)."""
        return f"evidence/raw/{self.id}.sigstore.json"

    @property
    def short(self) -> str:
        """The run's short name on pages: the first 12 hex of its statement digest."""
        return (self.statement_digest.removeprefix("sha256:") or self.id)[:12]

    def to_json(self) -> dict[str, Any]:
        """The run as the API publishes it (`catalog/schemas/api/evidence.schema.json`)."""
        from generator.site.pages import slug

        return {
            "id": self.id,
            "statementDigest": self.statement_digest or None,
            "recipe": self.recipe,
            # where the file is in the catalog's repository; on this site it is `raw`
            "repositoryPath": self.path,
            "url": f"evidence/{slug(self.recipe)}.html#run-{self.id}",
            "raw": self.raw_file if self.raw else None,
            "state": self.state,
            "counted": self.counted,
            "reason": self.reason or None,
            "class": self.failure_class or None,
            "sample": self.sample,
            "predicateType": self.predicate_type or None,
            "scaleProfile": {"name": self.profile or None, "version": self.profile_version or None},
            "lane": {"name": self.lane or None, "nodes": self.lane_nodes},
            "observed": {"nodes": self.observed_nodes, "gpus": self.observed_gpus},
            "verdict": self.verdict or None,
            "reasons": list(self.reasons),
            "recipeDigest": self.recipe_digest or None,
            "bundleDigest": self.bundle_digest or None,
            "componentVersions": dict(sorted(self.component_versions.items())),
            "attestedAt": self.attested_at or None,
            "signer": {
                "identity": self.signer_identity or None,
                "issuer": self.signer_issuer or None,
                "class": self.signer_class or None,
                "label": self.signer_label or None,
            },
            "trustRoot": self.trust_root or None,
            "tlog": {"index": self.tlog_index, "integratedTime": self.integrated_time or None},
            "checks": [c.to_json() for c in self.checks],
            "kpis": [k.to_json() for k in self.kpis],
        }


@dataclass(frozen=True, slots=True)
class LaneOutcome:
    """A lane's verdict for one recipe × profile."""

    lane: str
    nodes: int
    verdict: LaneVerdict
    runs: int  # distinct signers counted on it (passing and failing)


@dataclass(frozen=True, slots=True)
class ProfileView:
    """A leaf recipe at one scale profile."""

    profile: str
    profile_version: str
    result: RecipeResult
    document: Mapping[str, Any]  # the canonical RecipeResult document
    consensus: Consensus
    ceiling: str  # lane name or "" (none)
    ceiling_nodes: int  # 0 when none
    lanes: tuple[LaneOutcome, ...]
    last_evidence: str  # ISO date of the newest counted run, "" when none
    downloads: tuple[Download, ...]


@dataclass(frozen=True, slots=True)
class RecipeView:
    name: str
    criteria: Criteria
    health: str  # pass | warn | fail
    coverage: str  # R:n D:n P:n C:n
    chain: tuple[str, ...]  # applied overlays, root to leaf
    profiles: tuple[ProfileView, ...]
    evidence: tuple[EvidenceView, ...]
    health_reasons: tuple[str, ...] = ()  # why health is warn or fail; empty when pass


@dataclass(frozen=True, slots=True)
class LaneView:
    """A lane of `scale/lanes.yaml` as the site shows it (`generator.scale.qualify.Lane`'s
    projection: its criteria as a plain mapping)."""

    name: str
    nodes: int
    gpus: int | None
    criteria_version: str
    raw: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ComponentUse:
    name: str
    chart: str
    repository: str
    version: str
    recipes: tuple[str, ...]
    qualified_lane: str  # "" when no lane has qualified this version
    qualified_profile: str
    display_name: str = ""  # the registry's human-readable name


@dataclass(frozen=True, slots=True)
class StageNote:
    """A stage that did not run (not yet available) or ran with warnings, shown on the site."""

    stage: str
    message: str


@dataclass(frozen=True, slots=True)
class SiteData:
    recipes: tuple[RecipeView, ...]
    evidence: tuple[EvidenceView, ...]  # every run, including those of unknown recipes
    lanes: tuple[LaneView, ...]
    profiles: tuple[ScaleProfile, ...]
    components: tuple[ComponentUse, ...]
    deployers: tuple[str, ...]
    generated_at: str  # RFC 3339 from SOURCE_DATE_EPOCH
    source_date_epoch: int
    generator_version: str
    notes: tuple[StageNote, ...]
    trust_root: str
    site_url: str = ""  # where the site is served, "" when not given
    recipes_added: tuple[tuple[str, str], ...] = ()  # (recipe, date its overlay was added)
