"""The qualification timeline: every change of every recipe × profile's qualification since the
first commit, dated, with the commit and the cause, from the catalog's git history.

A stage of its own, standalone: `timeline(repo)` lists the commits that touched the catalog or
the evidence (the signer policy is the catalog's `signers.yaml`), takes the state of every
recipe × profile at each (`snapshot_at`: the catalog and evidence of that commit, loaded,
resolved, verified and aggregated by this generator), and compares each state with the one
before (`changes`). A change names what moved (ceiling, consensus, the counted runs) and why:

- the ceiling drops or rises, the consensus weakens or strengthens;
- counted runs became stale because the recipe changed: a pin bump names the component and
  both versions, otherwise the digest change;
- counted runs were excluded because their signer left the allowlist (named);
- counted runs were removed from the evidence directory;
- a new counted run fails (or passes), by whom, on which lane.

States are cached per commit (`cache_dir`, one JSON file each, keyed by the generator's state
version and the trust root), so a build computes only the commits it has not seen: the history
is computed incrementally. A commit whose tree this generator cannot load is recorded as such
and compared with nothing (its neighbours are compared with each other).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from generator import __version__
from generator.core import atomic, outputs, proc, safeio
from generator.core.atomic import write_atomic
from generator.core.errors import CatalogError
from generator.core.timeutil import rfc3339

if TYPE_CHECKING:
    from generator.core.memo import Memo

# bump when what a state holds or how it is computed changes: cached states are then recomputed
STATE_VERSION = 1
CONSENSUS_STRENGTH = ("CONFIRMED", "SINGLE", "PARTIAL", "UNTESTED", "CONTESTED", "FAILING")


@dataclass(frozen=True, slots=True)
class Run:
    """A counted, stale or rejected run of a recipe × profile at one commit."""

    id: str  # the evidence file's path: the same run across commits, readable or not
    short: str
    signer: str  # allowlist label, else the identity
    lane: str
    outcome: str  # as judged: pass | fail | stale | rejected
    cause: str  # the judged cause, in a few words


@dataclass(frozen=True, slots=True)
class ProfileState:
    """One recipe × profile at one commit."""

    digest: str
    consensus: str
    ceiling: str  # "" when none
    ceiling_nodes: int
    pins: Mapping[str, str]  # component -> pinned version
    runs: tuple[Run, ...]  # every run of the recipe × profile, by id

    def counted(self) -> dict[str, Run]:
        return {r.id: r for r in self.runs if r.outcome in ("pass", "fail")}

    def of(self, run_id: str) -> Run | None:
        return next((r for r in self.runs if r.id == run_id), None)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The state of the whole catalog at one commit."""

    commit: str
    date: str  # the commit's committer date, RFC 3339 UTC
    subject: str
    problem: str  # "" when the tree loaded; else why this generator could not take its state
    signers: tuple[str, ...]  # the labels of the signer policy
    states: Mapping[str, ProfileState] = field(default_factory=dict)  # "recipe@profile"


@dataclass(frozen=True, slots=True)
class Change:
    """One change of one recipe × profile's qualification, at one commit."""

    id: str  # stable and unique: <recipe>@<profile>@<commit[:12]>
    recipe: str
    profile: str
    commit: str
    date: str
    subject: str
    direction: str  # loss | gain | change
    summary: str  # one line: what moved
    causes: tuple[str, ...]  # why, one sentence each
    before: ProfileState | None
    after: ProfileState | None

    @property
    def anchor(self) -> str:
        """The change's HTML id on its recipe page (only unreserved characters)."""
        return "change-" + "".join(ch if ch.isalnum() or ch in "._-" else "-" for ch in self.id)

    def to_json(self) -> dict[str, Any]:
        def state(s: ProfileState | None) -> dict[str, Any] | None:
            if s is None:
                return None
            return {
                "consensus": s.consensus,
                "ceiling": s.ceiling or None,
                "ceilingNodes": s.ceiling_nodes,
                "recipeDigest": s.digest,
                "countedRuns": sorted(s.counted()),
            }

        return {
            "id": self.id,
            "anchor": self.anchor,
            "recipe": self.recipe,
            "profile": self.profile,
            "commit": self.commit,
            "date": self.date,
            "subject": self.subject,
            "direction": self.direction,
            "summary": self.summary,
            "causes": list(self.causes),
            "before": state(self.before),
            "after": state(self.after),
        }


# --- git ----------------------------------------------------------------------------------------


def _git(repo: Path, *args: str, binary: bool = False) -> Any:
    limit = proc.ARCHIVE_BYTES if binary else proc.OUTPUT_BYTES
    try:
        out = proc.git(repo, *args, timeout=300, limit=limit)
    except proc.ProcError as e:
        raise CatalogError(f"git {' '.join(args[:2])}: {e.message}") from None
    if not out.ok:
        raise CatalogError(f"git {' '.join(args[:2])}: {out.stderr.decode(errors='replace')}")
    return out.stdout if binary else out.text()


def history(repo: Path, paths: Sequence[str]) -> list[tuple[str, str, str]]:
    """(commit, date, subject) of every commit that touched `paths`, oldest first."""
    text = _git(
        repo,
        "log",
        "--reverse",
        "--format=%H%x00%ct%x00%s",
        "--",
        *paths,
    )
    out = []
    for line in text.splitlines():
        commit, epoch, subject = line.split("\0", 2)
        # the committer time as Unix seconds, written by timeutil (no date parsed here)
        out.append((commit, rfc3339(int(epoch)), subject))
    return out


def _checkout(repo: Path, commit: str, paths: Sequence[str], into: Path) -> None:
    """`paths` as they were at `commit`, written under `into` (git archive; no work tree)."""
    present = [p for p in paths if _git(repo, "ls-tree", "--name-only", commit, p).strip()]
    if not present:
        return
    data = _git(repo, "archive", "--format=tar", commit, *present, binary=True)
    atomic.extract_tar(data, into)  # the one extractor of a git archive (no link followed)


# --- one state ----------------------------------------------------------------------------------


def snapshot_at(
    repo: Path,
    commit: str,
    date: str,
    subject: str,
    *,
    catalog: str = "catalog",
    evidence: str = "evidence",
    trust_root: str = "demo",
    recipe: str | None = None,
    memo: Memo | None = None,
) -> Snapshot:
    """The state at `commit` of every recipe × profile (of `recipe` only, when given); `memo`
    is the pipeline's (a file verified at an earlier commit is not verified again)."""
    with outputs.temp_dir("aicr-timeline-") as tmp:
        root = Path(tmp)
        _checkout(repo, commit, (catalog, evidence), root)
        try:
            head = (commit, date, subject)
            return _snapshot(root / catalog, root / evidence, trust_root, recipe, head, memo)
        except CatalogError as e:
            return Snapshot(commit, date, subject, e.message or "the catalog does not load", ())


def _snapshot(
    catalog_dir: Path,
    evidence_dir: Path,
    trust_root: str,
    recipe: str | None,
    head: tuple[str, str, str],
    memo: Memo | None,
) -> Snapshot:
    from generator.pipeline import Inputs, Scope, run
    from generator.site import stages
    from generator.site.signers import signer_policy

    if not safeio.is_dir(catalog_dir):
        return Snapshot(*head, "no catalog at this commit", ())
    inputs = Inputs(catalog_dir, evidence_dir, (trust_root,), scope=Scope(recipe), jobs=1)
    outcome = run(inputs, memo)
    if outcome.resolved.failures:
        return Snapshot(*head, "some recipes do not resolve", ())
    cat, results = outcome.catalog, outcome.recipes
    judged, _ = stages.judged(outcome, evidence_dir)
    policy = signer_policy(cat)
    states: dict[str, ProfileState] = {}
    for r in results:
        status = judged.statuses.get((r.name, r.scale_profile))
        runs = tuple(
            Run(
                e.path,
                Path(e.path).name[:12],
                e.signer_label or e.signer_identity,
                e.lane,
                e.outcome.status,
                e.outcome.cause,
            )
            for e in sorted(judged.runs, key=lambda e: e.path)
            # a file whose statement cannot be read (a signer refused) belongs to no profile
            if e.recipe == r.name and e.profile in (r.scale_profile, "")
        )
        states[f"{r.name}@{r.scale_profile}"] = ProfileState(
            digest=r.digest,
            consensus=str(status.consensus) if status else "UNTESTED",
            ceiling=status.ceiling if status else "",
            ceiling_nodes=status.ceiling_nodes if status else 0,
            pins={c.name: c.version or "" for c in r.components},
            runs=runs,
        )
    return Snapshot(*head, "", tuple(e.label for e in policy.entries), states)


# --- the cache ----------------------------------------------------------------------------------


def _cache_file(cache_dir: Path, trust_root: str, scope: str, commit: str) -> Path:
    return cache_dir / f"v{STATE_VERSION}-{__version__}" / trust_root / scope / f"{commit}.json"


def _dump(s: Snapshot) -> bytes:
    return json.dumps(asdict(s), sort_keys=True, separators=(",", ":"), allow_nan=False).encode()


def _load(data: bytes) -> Snapshot:
    raw = json.loads(data)
    states = {
        key: ProfileState(
            digest=v["digest"],
            consensus=v["consensus"],
            ceiling=v["ceiling"],
            ceiling_nodes=v["ceiling_nodes"],
            pins=v["pins"],
            runs=tuple(Run(**r) for r in v["runs"]),
        )
        for key, v in raw["states"].items()
    }
    return Snapshot(
        raw["commit"], raw["date"], raw["subject"], raw["problem"], tuple(raw["signers"]), states
    )


def snapshots(
    repo: Path,
    *,
    catalog: str = "catalog",
    evidence: str = "evidence",
    trust_root: str = "demo",
    cache_dir: Path | None = None,
    recipe: str | None = None,
    memo: Memo | None = None,
) -> Iterator[Snapshot]:
    """The state at every commit that touched the catalog or the evidence, oldest first; from
    `cache_dir` where it was computed before."""
    scope = "all" if recipe is None else f"recipe-{recipe}"
    for commit, date, subject in history(repo, (catalog, evidence)):
        path = None if cache_dir is None else _cache_file(cache_dir, trust_root, scope, commit)
        if path is not None and safeio.is_file(path):
            yield _load(safeio.read_own(path, limit=safeio.OTHER_BYTES))
            continue
        snap = snapshot_at(
            repo,
            commit,
            date,
            subject,
            catalog=catalog,
            evidence=evidence,
            trust_root=trust_root,
            recipe=recipe,
            memo=memo,
        )
        if path is not None:
            atomic.make_dirs(path.parent)
            write_atomic(path, _dump(snap))
        yield snap


# --- changes ------------------------------------------------------------------------------------


def _strength(consensus: str) -> int:
    return CONSENSUS_STRENGTH.index(consensus) if consensus in CONSENSUS_STRENGTH else 3


def _ceiling(s: ProfileState | None) -> str:
    if s is None or not s.ceiling:
        return "none"
    return f"{s.ceiling} ({s.ceiling_nodes:,} nodes)"


def _lost_run_causes(
    before: ProfileState, after: ProfileState, prev: Snapshot, cur: Snapshot
) -> list[str]:
    """Why runs counted before are not counted now: stale (a pin bump, else the recipe), their
    signer removed from the allowlist, or removed from the evidence."""
    causes: list[str] = []
    lost = [r for rid, r in before.counted().items() if rid not in after.counted()]
    removed_signers = set(prev.signers) - set(cur.signers)
    stale = [r for r in lost if (now := after.of(r.id)) is not None and now.outcome == "stale"]
    if stale:
        bumps = [
            f"{name} {before.pins.get(name) or '(none)'} → {after.pins.get(name) or '(none)'}"
            for name in sorted(set(before.pins) | set(after.pins))
            if before.pins.get(name) != after.pins.get(name)
        ]
        what = ("pin bump: " + ", ".join(bumps)) if bumps else "the recipe changed"
        causes.append(
            f"{len(stale)} counted run(s) became stale after {what} (recipe digest "
            f"{before.digest[7:19]} → {after.digest[7:19]})"
        )
    for r in lost:
        now = after.of(r.id)
        if now is None:
            causes.append(f"run {r.short} by {r.signer} ({r.lane}) removed from the evidence")
        elif now.outcome == "rejected" and r.signer in removed_signers:
            causes.append(f"signer removed from the allowlist: {r.signer} (run {r.short})")
        elif now.outcome == "rejected":
            causes.append(f"run {r.short} by {r.signer} no longer counted: {now.cause}")
    return causes


def _new_run_causes(before: ProfileState | None, after: ProfileState) -> list[str]:
    had = before.counted() if before is not None else {}
    causes = []
    for rid, r in sorted(after.counted().items()):
        if rid in had:
            continue
        why = f" ({r.cause})" if r.cause else ""
        kind = "failing" if r.outcome == "fail" else "passing"
        causes.append(f"new {kind} run {r.short} by {r.signer} on {r.lane}{why}")
    return causes


def _qualified(s: ProfileState | None) -> bool:
    return s is not None and (s.consensus != "UNTESTED" or bool(s.counted()))


def _moved(before: ProfileState | None, after: ProfileState | None) -> tuple[str, list[str]]:
    """(loss | gain | change, what moved): the ceiling and the consensus."""
    if before is None or after is None:
        added = before is None
        return ("gain" if added else "loss"), [
            "recipe × profile added" if added else "recipe × profile removed"
        ]
    moved: list[str] = []
    direction = "change"
    if after.ceiling_nodes != before.ceiling_nodes:
        up = after.ceiling_nodes > before.ceiling_nodes
        direction = "gain" if up else "loss"
        word = "rose" if up else "dropped"
        moved.append(f"ceiling {word}: {_ceiling(before)} → {_ceiling(after)}")
    if after.consensus != before.consensus:
        stronger = _strength(after.consensus) < _strength(before.consensus)
        if direction == "change":
            direction = "gain" if stronger else "loss"
        word = "stronger" if stronger else "weaker"
        moved.append(f"consensus {word}: {before.consensus} → {after.consensus}")
    return direction, moved


def compare(
    key: str,
    before: ProfileState | None,
    after: ProfileState | None,
    prev: Snapshot,
    cur: Snapshot,
) -> Change | None:
    """The change of one recipe × profile between two snapshots, or None."""
    recipe, profile = key.rsplit("@", 1)
    if not _qualified(before) and not _qualified(after):
        return None  # appears or goes untested, with no counted run: nothing qualified changed
    direction, moved = _moved(before, after)
    causes: list[str] = []
    if before is not None and after is not None:
        causes += _lost_run_causes(before, after, prev, cur)
    if after is not None:
        causes += _new_run_causes(before, after)
    if not moved and not causes:
        return None
    if not moved:
        moved.append("counted runs changed")
    return Change(
        id=f"{recipe}@{profile}@{cur.commit[:12]}",
        recipe=recipe,
        profile=profile,
        commit=cur.commit,
        date=cur.date,
        subject=cur.subject,
        direction=direction,
        summary="; ".join(moved),
        causes=tuple(causes),
        before=before,
        after=after,
    )


def changes(snaps: Iterator[Snapshot] | Sequence[Snapshot]) -> tuple[Change, ...]:
    """Every change between consecutive loadable snapshots, oldest first (by commit order)."""
    out: list[Change] = []
    prev: Snapshot | None = None
    for snap in snaps:
        if snap.problem:
            continue
        base = prev if prev is not None else Snapshot("", "", "", "", ())
        for key in sorted(set(base.states) | set(snap.states)):
            c = compare(key, base.states.get(key), snap.states.get(key), base, snap)
            if c is not None:
                out.append(c)
        prev = snap
    return tuple(out)


def timeline(
    repo: Path,
    *,
    catalog: str = "catalog",
    evidence: str = "evidence",
    trust_root: str = "demo",
    cache_dir: Path | None = None,
    recipe: str | None = None,
    memo: Memo | None = None,
) -> tuple[Change, ...]:
    """Every qualification change since the first commit (see the module)."""
    if proc.which("git") is None:
        raise CatalogError("the timeline needs git")
    return changes(
        snapshots(
            repo,
            catalog=catalog,
            evidence=evidence,
            trust_root=trust_root,
            cache_dir=cache_dir,
            recipe=recipe,
            memo=memo,
        )
    )


def git_head(path: Path) -> str:
    """The commit checked out in the repository holding `path`; "" when it is not in one."""
    try:
        return str(_git(path if safeio.is_dir(path) else path.parent, "rev-parse", "HEAD")).strip()
    except (CatalogError, OSError):  # no git, not a repository, or git did not answer
        return ""


def site_timeline(
    catalog: Path, evidence: Path, trust_root: str, cache_dir: Path | None
) -> tuple[Change, ...]:
    """The timeline of the repository holding `catalog` (the site's stage): the catalog and
    evidence directories as paths inside it; states cached under `cache_dir`."""
    top = Path(str(_git(catalog, "rev-parse", "--show-toplevel")).strip())
    if str(_git(top, "rev-parse", "--is-shallow-repository")).strip() == "true":
        # a shallow clone's history starts at its cut: every earlier change would be missing
        raise CatalogError(
            f"the timeline needs the repository's full history, and {top} is a shallow clone: "
            "run `git fetch --unshallow`, or build without it (--no-timeline; "
            "`make site TIMELINE=--no-timeline`)"
        )
    try:
        cat_rel = safeio.resolve(catalog).relative_to(safeio.resolve(top)).as_posix()
        ev_rel = safeio.resolve(evidence).relative_to(safeio.resolve(top)).as_posix()
    except ValueError as e:
        raise CatalogError(
            f"the timeline needs the catalog and evidence in one repository: {e}"
        ) from e
    return timeline(
        top, catalog=cat_rel, evidence=ev_rel, trust_root=trust_root, cache_dir=cache_dir
    )


def timeline_json(changes_: Sequence[Change]) -> dict[str, Any]:
    """`api/v1/timeline.json`'s body: every change, newest first."""
    ordered = sorted(changes_, key=lambda c: (c.date, c.id), reverse=True)
    return {"changes": [c.to_json() for c in ordered]}
