"""The records the site is generated from: one immutable view of everything a build gathered.

The stage adapters (`generator.site.stages`) turn the outputs of resolve, render, verify and
aggregate into these records; pages, JSON, charts and badges are pure functions of a `SiteData`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from generator.core.records import Consensus, Criteria, RecipeResult, ScaleProfile
from generator.evidence.view import EvidenceView
from generator.render.bundled import Refusal
from generator.render.cache import SealedArchive
from generator.site.options import StageNote as StageNote  # its home: a no-change build needs it
from generator.site.signers import SignerPolicyView
from generator.site.timeline import Change

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
    # the bytes (rendered by this build), or the render cache's entry that holds them, known by
    # its sealed digest: read only if the archive is published anew (`content`)
    body: bytes | SealedArchive = b""

    @property
    def content(self) -> bytes:
        """The archive's bytes: as given, or read from the render cache now."""
        return self.body if isinstance(self.body, bytes) else self.body.content()


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
    # the deployers `aicr-catalog bundle` refuses with default flags: no download, this instead
    refusals: tuple[Refusal, ...] = ()


@dataclass(frozen=True, slots=True)
class RecipeView:
    name: str
    criteria: Criteria
    health: str  # pass | warn | fail
    coverage: str  # R:n D:n P:n C:n
    chain: tuple[str, ...]  # applied overlays, root to leaf
    profiles: tuple[ProfileView, ...]
    # its runs (a `RecipeRuns` in a build with a cache: read when first used; `facts` reads
    # what the site-wide outputs need of them without loading them)
    evidence: Sequence[EvidenceView]
    health_reasons: tuple[str, ...] = ()  # why health is warn or fail; empty when pass


@dataclass(frozen=True, slots=True)
class LaneView:
    """A lane of `scale/lanes.yaml` as the site shows it (`generator.catalog.lanes.Lane`'s
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
class SiteData:
    recipes: tuple[RecipeView, ...]
    # every run, including those of unknown recipes (a `SiteRuns` in a build with a cache)
    evidence: Sequence[EvidenceView]
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
    signers: SignerPolicyView | None = None  # the signer policy (None: not gathered)
    # every qualification change in the catalog's git history (build --timeline), oldest first
    timeline: tuple[Change, ...] = ()
    repo_url: str = ""  # the catalog's source repository ("" when not known)
    # evidence path -> (commit, YYYY-MM-DD) that added the file (generator/site/audit.py)
    evidence_added: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    # what the build computed afresh rather than took from its memo, by what it counts
    # ("recipes aggregated", "views judged"): shown in the build's report, on no page
    work: tuple[tuple[str, int], ...] = ()
