"""The one-sentence answer to "is this recipe qualified at my scale, by whom, on what evidence?".

One `Summary` per recipe × scale profile, a pure function of the site's records: the recipe page
opens with it, the dashboard shows it on every row and `api/v1/recipes*.json` publish the same
text and parts. Signers are allowlist entries (their label and class), never identity strings.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from generator.core.records import Consensus, ScaleProfile
from generator.evidence.view import RunFacts, facts
from generator.site.model import LaneVerdict, LaneView, ProfileView, RecipeView

# Consensus states, strongest first: the order the dashboard sorts by and the legend lists.
CONSENSUS_ORDER: tuple[Consensus, ...] = (
    Consensus.CONFIRMED,
    Consensus.SINGLE,
    Consensus.PARTIAL,
    Consensus.UNTESTED,
    Consensus.CONTESTED,
    Consensus.FAILING,
)


@dataclass(frozen=True, slots=True)
class Signer:
    label: str
    cls: str  # first-party | partner | community | "" (not in the allowlist)

    def text(self) -> str:
        return f"{self.label}, {self.cls}" if self.cls else f"{self.label}, not allowlisted"


@dataclass(frozen=True, slots=True)
class Summary:
    text: str
    qualified: bool
    signers: tuple[Signer, ...]
    latest_run: str  # YYYY-MM-DD of the newest counted run of this profile, "" when none
    proposed: int  # thresholds still proposed on the lanes the qualification rests on
    next_step: str  # what the next rung needs, "" at the top of the ladder
    sample: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "qualified": self.qualified,
            "signers": [{"label": s.label, "class": s.cls or None} for s in self.signers],
            "latestRun": self.latest_run or None,
            "proposedThresholds": self.proposed,
            "next": self.next_step or None,
            "sample": self.sample,
        }


def _nodes(n: int) -> str:
    return f"{n:,} node" + ("" if n == 1 else "s")


def band(profile: ScaleProfile | None) -> str:
    """A profile's node band as text: "37–2,304 nodes"."""
    if profile is None:
        return ""
    return f"{profile.nodes_min:,}–{profile.nodes_max:,} nodes"


def _proposed(lanes: Sequence[LaneView], names: Sequence[str]) -> int:
    """Distinct KPIs whose threshold is still proposed on any of the lanes `names`."""
    by_lane = _proposed_by_lane(lanes)
    wanted = set(names)
    ids: set[str] = set()
    for lane in lanes:
        if lane.name in wanted:
            ids.update(by_lane[id(lane)])
    return len(ids)


def _proposed_reference(lanes: Sequence[LaneView], names: Sequence[str]) -> int:
    """`_proposed` reading every lane's KPIs on each call (the reference)."""
    wanted = set(names)
    ids: set[str] = set()
    for lane in lanes:
        if lane.name not in wanted:
            continue
        for k in lane.raw.get("kpis") or ():
            if isinstance(k, Mapping) and str(k.get("status", "")) == "proposed":
                ids.add(str(k.get("id", "")))
    return len(ids)


# the ladder `_proposed_by_lane` read last, and what it found: one site's lanes are read once
_LAST_LANES: list[tuple[Sequence[LaneView], dict[int, frozenset[str]]]] = []


def _proposed_by_lane(lanes: Sequence[LaneView]) -> dict[int, frozenset[str]]:
    """Each lane's proposed KPI ids, by the lane's identity, read once per `lanes` (the same
    object: every summary of a site is made against the site's `lanes`, 2,000 summaries at
    1,000 recipes, each of which read the KPIs of every lane: 0.09 of 0.18 profiled s). The
    lanes are held with their ids, so an id cannot be another lane's."""
    if _LAST_LANES and _LAST_LANES[0][0] is lanes:
        return _LAST_LANES[0][1]
    found = {
        id(lane): frozenset(
            str(k.get("id", ""))
            for k in lane.raw.get("kpis") or ()
            if isinstance(k, Mapping) and str(k.get("status", "")) == "proposed"
        )
        for lane in lanes
    }
    _LAST_LANES[:] = [(lanes, found)]
    return found


def _signers_text(signers: Sequence[Signer]) -> str:
    if len(signers) == 1:
        return f"1 signer, {signers[0].text()}"
    names = "; ".join(s.text() for s in signers)
    return f"{len(signers)} independent signers: {names}"


def summarise(
    recipe: RecipeView,
    p: ProfileView,
    profile: ScaleProfile | None,
    lanes: Sequence[LaneView],
) -> Summary:
    """The qualification summary of `recipe` at scale profile `p`."""
    ladder = tuple(profile.ladder) if profile is not None else tuple(s.lane for s in p.lanes)
    runs = facts(recipe.evidence)  # the runs' rows: the recipe's views are not loaded
    counted = [e for e in runs if e.counted and e.profile == p.profile]
    sample = any(e.sample for e in runs if e.profile == p.profile)
    latest = max((e.attested_at for e in counted if e.attested_at), default="")[:10]
    signers = _ceiling_signers(counted, p.ceiling)
    up_to = ladder[: ladder.index(p.ceiling) + 1] if p.ceiling in ladder else ()
    proposed = _proposed(lanes, up_to if up_to else ladder[:1])
    rest = ladder[ladder.index(p.ceiling) + 1 :] if p.ceiling in ladder else ladder
    next_step = _next_step(rest[0], p, lanes) if rest else ""
    prefix = "SAMPLE evidence, qualifies nothing: " if sample else ""
    where = f"on profile {p.profile}" + (f" ({band(profile)})" if profile else "")
    if p.ceiling:
        parts = [
            f"Qualified up to {_nodes(p.ceiling_nodes)} {where} by {_signers_text(signers)}",
            f"latest counted run {latest}" if latest else "",
            f"{proposed} threshold{'s' if proposed != 1 else ''} still proposed"
            if proposed
            else "",
            f"next rung: {next_step}" if next_step else "the top of this profile's ladder",
        ]
        if len(signers) == 1:
            parts.insert(1, "a second independent signer would make it CONFIRMED")
    else:
        why = _NOT_QUALIFIED.get(
            p.consensus, "no lane of its ladder has passing, counted evidence yet"
        )
        parts = [
            f"Not qualified {where}: {why}",
            f"latest counted run {latest}" if latest else "",
            f"first rung: {next_step}" if next_step else "",
        ]
    text = prefix + "; ".join(x for x in parts if x) + "."
    return Summary(
        text=text,
        qualified=bool(p.ceiling),
        signers=signers,
        latest_run=latest,
        proposed=proposed,
        next_step=next_step,
        sample=sample,
    )


_NOT_QUALIFIED: Mapping[str, str] = {
    Consensus.FAILING: "its counted runs fail",
    Consensus.CONTESTED: "its signers disagree",
}
# what the next rung needs, by its verdict (untested: a passing run)
_NEXT_STEP: Mapping[str, str] = {
    LaneVerdict.FAIL: "is failing: its latest counted runs report fail",
    LaneVerdict.CONTESTED: "is contested: its signers disagree (pass and fail)",
    LaneVerdict.STALE: "has only stale evidence (the recipe changed since): re-run it",
}


def _ceiling_signers(counted: Sequence[RunFacts], ceiling: str) -> tuple[Signer, ...]:
    """The distinct signers of the passing counted runs at the ceiling lane, by label."""
    at_ceiling = [
        e for e in counted if ceiling and e.lane == ceiling and e.outcome.status == "pass"
    ]
    seen: dict[str, Signer] = {}
    for e in sorted(at_ceiling, key=lambda e: e.signer_label or e.signer_identity):
        label = e.signer_label or e.signer_identity or "unknown signer"
        seen.setdefault(label, Signer(label, e.signer_class))
    return tuple(seen.values())


def _next_step(lane: str, p: ProfileView, lanes: Sequence[LaneView]) -> str:
    """What rung `lane` of the profile's ladder needs to be qualified."""
    nodes = next((ln.nodes for ln in lanes if ln.name == lane), 0)
    verdict = next((s.verdict for s in p.lanes if s.lane == lane), LaneVerdict.UNTESTED)
    needs = _NEXT_STEP.get(verdict, "needs a passing run from an allowlisted signer")
    return f"{lane} ({_nodes(nodes)}) {needs}"


def summaries(
    recipe: RecipeView, profiles: Mapping[str, ScaleProfile], lanes: Sequence[LaneView]
) -> dict[str, Summary]:
    """The summary of every profile of `recipe`, by profile name."""
    return {
        p.profile: summarise(recipe, p, profiles.get(p.profile), lanes) for p in recipe.profiles
    }
