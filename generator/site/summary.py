"""The one-sentence answer to "is this recipe qualified at my scale, by whom, on what evidence?".

One `Summary` per recipe × scale profile, a pure function of the site's records: the recipe page
opens with it, the dashboard shows it on every row and `api/v1/recipes*.json` publish the same
text and parts. Signers are allowlist entries (their label and class), never identity strings.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from generator.core.records import ScaleProfile
from generator.site.model import EvidenceRun, Lane, ProfileView, RecipeView

# Consensus states, strongest first: the order the dashboard sorts by and the legend lists.
CONSENSUS_ORDER = ("CONFIRMED", "SINGLE", "PARTIAL", "UNTESTED", "CONTESTED", "FAILING")


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


def _proposed(lanes: Sequence[Lane], names: Sequence[str]) -> int:
    """Distinct KPIs whose threshold is still proposed on any of the lanes `names`."""
    wanted = set(names)
    ids: set[str] = set()
    for lane in lanes:
        if lane.name not in wanted:
            continue
        for k in lane.raw.get("kpis") or ():
            if isinstance(k, Mapping) and str(k.get("status", "")) == "proposed":
                ids.add(str(k.get("id", "")))
    return len(ids)


def _signers_text(signers: Sequence[Signer]) -> str:
    if len(signers) == 1:
        return f"1 signer, {signers[0].text()}"
    names = "; ".join(s.text() for s in signers)
    return f"{len(signers)} independent signers: {names}"


def summarise(
    recipe: RecipeView,
    p: ProfileView,
    profile: ScaleProfile | None,
    lanes: Sequence[Lane],
) -> Summary:
    """The qualification summary of `recipe` at scale profile `p`."""
    ladder = tuple(profile.ladder) if profile is not None else tuple(s.lane for s in p.lanes)
    counted = [e for e in recipe.evidence if e.counted and e.profile == p.profile]
    sample = any(e.sample for e in recipe.evidence if e.profile == p.profile)
    latest = max((e.attested_at for e in counted if e.attested_at), default="")[:10]
    signers = _ceiling_signers(counted, p.ceiling)
    up_to = ladder[: ladder.index(p.ceiling) + 1] if p.ceiling in ladder else ()
    proposed = _proposed(lanes, up_to if up_to else ladder[:1])
    rest = ladder[ladder.index(p.ceiling) + 1 :] if p.ceiling in ladder else ladder
    next_step = _next_step(rest[0], p, lanes) if rest else ""
    where = f"on profile {p.profile}" + (f" ({band(profile)})" if profile else "")
    if p.ceiling:
        parts = _qualified_parts(p, where, signers, latest, proposed, next_step)
    else:
        why = {
            "FAILING": "its counted runs fail",
            "CONTESTED": "its signers disagree",
        }.get(p.consensus, "no lane of its ladder has passing, counted evidence yet")
        parts = [
            f"Not qualified {where}: {why}",
            f"latest counted run {latest}" if latest else "",
            f"first rung: {next_step}" if next_step else "",
        ]
    prefix = "SAMPLE evidence, qualifies nothing: " if sample else ""
    return Summary(
        text=prefix + "; ".join(x for x in parts if x) + ".",
        qualified=bool(p.ceiling),
        signers=signers,
        latest_run=latest,
        proposed=proposed,
        next_step=next_step,
        sample=sample,
    )


def _ceiling_signers(counted: Sequence[EvidenceRun], ceiling: str) -> tuple[Signer, ...]:
    """The signers of the counted passing runs at the ceiling lane, one per label, by label."""
    at_ceiling = [e for e in counted if ceiling and e.lane == ceiling and e.verdict == "pass"]
    seen: dict[str, Signer] = {}
    for e in sorted(at_ceiling, key=lambda e: e.signer_label or e.signer_identity):
        label = e.signer_label or e.signer_identity or "unknown signer"
        seen.setdefault(label, Signer(label, e.signer_class))
    return tuple(seen.values())


def _next_step(nxt: str, p: ProfileView, lanes: Sequence[Lane]) -> str:
    """What the next rung `nxt` of the ladder needs, by its verdict."""
    nodes = next((lane.nodes for lane in reversed(lanes) if lane.name == nxt), 0)
    where = f"{nxt} ({_nodes(nodes)})"
    verdict = next((s.verdict for s in reversed(p.lanes) if s.lane == nxt), "untested")
    if verdict == "fail":
        return f"{where} is failing: its latest counted runs report fail"
    if verdict == "contested":
        return f"{where} is contested: its signers disagree (pass and fail)"
    if verdict == "stale":
        return f"{where} has only stale evidence (the recipe changed since): re-run it"
    return f"{where} needs a passing run from an allowlisted signer"


def _qualified_parts(
    p: ProfileView,
    where: str,
    signers: Sequence[Signer],
    latest: str,
    proposed: int,
    next_step: str,
) -> list[str]:
    """The clauses of a qualified recipe's summary ("" for those that do not apply)."""
    parts = [
        f"Qualified up to {_nodes(p.ceiling_nodes)} {where} by {_signers_text(signers)}",
        f"latest counted run {latest}" if latest else "",
        f"{proposed} threshold{'s' if proposed != 1 else ''} still proposed" if proposed else "",
        f"next rung: {next_step}" if next_step else "the top of this profile's ladder",
    ]
    if len(signers) == 1:
        parts.insert(1, "a second independent signer would make it CONFIRMED")
    return parts


def summaries(
    recipe: RecipeView, profiles: Mapping[str, ScaleProfile], lanes: Sequence[Lane]
) -> dict[str, Summary]:
    """The summary of every profile of `recipe`, by profile name."""
    return {
        p.profile: summarise(recipe, p, profiles.get(p.profile), lanes) for p in recipe.profiles
    }
