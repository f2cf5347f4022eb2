"""The records the site is generated from: one immutable view of everything a build gathered.

The stage adapters (`generator.site.stages`) turn the outputs of resolve, render, verify and
aggregate into these records; pages, JSON, charts and badges are pure functions of a `SiteData`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
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


class ResultSource:
    """A recipe × profile result (`RecipeResult`) and its canonical document, each made when
    first used: the result by `load` (a recipe's stored results, `pipeline.StoredResults`),
    its digest known without it. Not a record: it loads. Equal to another by their results;
    pickled as the result in hand."""

    __slots__ = ("_document", "_load", "_result", "digest")

    def __init__(self, digest: str, load: Callable[[], RecipeResult]) -> None:
        self.digest, self._load = digest, load
        self._result: RecipeResult | None = None
        self._document: Mapping[str, Any] | None = None

    @staticmethod
    def held(result: RecipeResult, document: Mapping[str, Any] | None = None) -> ResultSource:
        """The result in hand (and its document, when given: made from it when first used)."""
        source = ResultSource(result.digest, lambda: result)
        source._result, source._document = result, document
        return source

    def result(self) -> RecipeResult:
        if self._result is None:
            self._result = self._load()
            if self._result.digest != self.digest:  # pragma: no cover - heads made with it
                raise AssertionError(f"{self._result.name}: a result unlike its head")
        return self._result

    def document(self) -> Mapping[str, Any]:
        if self._document is None:
            from generator.catalog.resolve import recipe_document

            self._document = recipe_document(self.result())
        return self._document

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ResultSource):
            return NotImplemented
        return self.digest == other.digest and self.result() == other.result()

    def __hash__(self) -> int:
        return hash(self.digest)

    def __repr__(self) -> str:
        return f"ResultSource({self.digest!r})"

    def __reduce__(self) -> tuple[Callable[[RecipeResult], ResultSource], tuple[RecipeResult]]:
        return ResultSource.held, (self.result(),)


@dataclass(frozen=True, slots=True)
class ProfileView:
    """A leaf recipe at one scale profile. Its result and the result's document are read from
    `source` when first used (`ResultSource`): a build after one evidence file changed reads
    those of the changed recipe, the others' pages and API files coming from the cache."""

    profile: str
    profile_version: str
    source: ResultSource
    consensus: Consensus
    ceiling: str  # lane name or "" (none)
    ceiling_nodes: int  # 0 when none
    lanes: tuple[LaneOutcome, ...]
    last_evidence: str  # ISO date of the newest counted run, "" when none
    downloads: tuple[Download, ...]
    # the deployers `aicr-catalog bundle` refuses with default flags: no download, this instead
    refusals: tuple[Refusal, ...] = ()

    @property
    def result(self) -> RecipeResult:
        return self.source.result()

    @property
    def document(self) -> Mapping[str, Any]:
        """The canonical RecipeResult document."""
        return self.source.document()

    @property
    def digest(self) -> str:
        """The result's digest (no result is read)."""
        return self.source.digest


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
