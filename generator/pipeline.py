"""The pipeline: one function from a catalog and an evidence tree to the status of every recipe.

    run(inputs, memo) -> Outcome
        catalog   = load + validate + resolve   (memoized: keyed by the catalog's content)
        verified  = verify every evidence file  (memoized per file: its bytes, trust root, policy)
        status    = aggregate                   (consensus, ceilings, lanes, each run judged)

`aicr-catalog build` and `aicr-catalog status` both call `run`: they differ only in the
`Inputs` they pass (status may name one recipe and one profile), so what the site shows, what
the API publishes and what `status` prints are one computation.

Every memo key is derived (`generator.core.memo`): a stage receives one frozen input record,
and its key is the hash of that whole record's canonical form, file contents included. Nothing
a stage reads can be left out of its key, because a stage reads nothing but its record.

## Adding a stage

1. A frozen input record holding everything the stage reads (paths are keyed by content;
   an earlier stage's result enters as the record it was made from, or as a digest).
2. A function from that record to a frozen result.
3. One line in `run` (or, for a site-only stage, in `generator.site.build`), through
   `memo.stage(NAME, CODE, record, make)` when the result is worth keeping between builds.
4. The result as a field of `Outcome` when `build` or `status` shows it.
"""

from __future__ import annotations

import hashlib
import logging
import pickle
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from generator.core import safeio
from generator.core.errors import CatalogError, Diagnostic, Severity, ValidationError
from generator.core.memo import NOT_KEYED, PATH_ONLY, Memo, content
from generator.core.records import DEFAULT_PROFILE, Catalog, RecipeResult
from generator.evidence.model import Evidence
from generator.evidence.stage import VerificationRun
from generator.evidence.trustroot import PUBLIC_GOOD
from generator.evidence.verify_cache import Records
from generator.fast.loaded import LoadedTuple

if TYPE_CHECKING:  # sigstore loads when a stage runs (pandas only for the reference)
    from generator.aggregate import RecipeInput, RecipePart, Status, StoredPart
    from generator.catalog.lanes import Lanes

PROGRESS = logging.getLogger("aicr_catalog.build")  # `build` shows it on stderr

CATALOG_STAGE = "catalog"
CATALOG_CODE = ("catalog", "validate.py", "scale", "core", "fast", "pipeline.py")


# --- inputs -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Scope:
    """What is asked about: every recipe (the default), or one recipe (its evidence only, and a
    recipe that does not resolve is an error), and optionally one scale profile."""

    recipe: str | None = None
    profile: str | None = None


@dataclass(frozen=True, slots=True)
class Inputs:
    """Everything the pipeline reads. `jobs` is how, not what: it is in no key."""

    catalog: Path = field(metadata=content("the catalog"))
    evidence: Path = field(metadata=PATH_ONLY)  # keyed per file by the verify stage
    trust_roots: tuple[str, ...] = (PUBLIC_GOOD,)
    strict: bool = False
    scope: Scope = Scope()
    # pointer files may pull their artifacts (generator.core.net) only when the user asked
    online: bool = False
    rules: str | None = None  # --upstream-rules; None: what the tree's apiVersions say
    jobs: int | None = field(default=None, metadata=NOT_KEYED)


@dataclass(frozen=True, slots=True)
class CatalogInput:
    """The catalog stage's record: the tree (keyed by its content), the validation mode, the
    scope, and the recipes the evidence tree names (status reports on those too)."""

    catalog: Path = field(metadata=content("the catalog"))
    strict: bool = False
    scope: Scope = Scope()
    named: tuple[str, ...] = ()
    rules: str | None = None  # the upstream rules stated for the tree (None: detected)


# --- results ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ComponentHead:
    """What the component tables read of a resolved component (`ResolvedComponent`)."""

    name: str
    chart: str | None
    repository: str | None
    version: str | None


@dataclass(frozen=True, slots=True)
class ResultHead:
    """What every build reads of one recipe × profile result (`RecipeResult`): its names, its
    digest, the overlays it applies and its components' names and versions. The verify stage's
    current digests, the component qualification (`aggregate.combine`) and the site's
    components table and recipe rows are made from heads; the whole result is read when one of
    the rest is used (a changed recipe's page, its API file, its bundles)."""

    name: str
    scale_profile: str
    scale_profile_version: str
    digest: str
    applied_overlays: tuple[str, ...]
    components: tuple[ComponentHead, ...]

    @staticmethod
    def of(r: RecipeResult, shared: dict[Any, Any] | None = None) -> ResultHead:
        """`r`'s head; equal components and overlay chains are one object across the heads
        made with one `shared` (their pickle then holds each once: 24,000 components of 2,000
        results at 1,000 recipes are a few hundred distinct ones, and the heads unpickle in
        0.042 → 0.004 s, the stage's whole entry 0.075 → 0.044 s, collector paused)."""
        one: dict[Any, Any] = {} if shared is None else shared
        components = tuple(
            one.setdefault(c, c)
            for c in (ComponentHead(c.name, c.chart, c.repository, c.version) for c in r.components)
        )
        chain = one.setdefault(r.applied_overlays, r.applied_overlays)
        return ResultHead(
            r.name, r.scale_profile, r.scale_profile_version, r.digest, chain, components
        )


class StoredResults(Mapping[str, tuple[RecipeResult, ...]]):
    """Each recipe's results (recipe name → its results) as the catalog stage stores them: one
    pickle per recipe (the very bytes `results_digest` hashes), unpickled when the recipe is
    first looked up. Its names, length and membership read no pickle.

    A build after one evidence file changed took the catalog stage's whole result from the
    memo: 2,000 results (24,000 components) unpickled for one recipe's change, 0.24 CPU-s at
    1,000 × 20,000 (collector paused). What the other recipes are read for is in their heads
    (`Resolved.heads`). Measured at 1,000 × 20,000, one file removed then added back, two
    interleaved cycles against `integ` (CPU-s): the catalog stage 0.24-0.25 → 0.084-0.086,
    the site's records (`site_data`) 0.11 → 0.06, the build 3.31-3.52 → 2.99-3.27 user+sys,
    peak 377-394 → 307-326 MB; one recipe's results unpickled, of 1,000. The pickles are inside the stage's entry, which the cache
    authenticates before it is unpickled; they are unpickled only from such an entry, or from
    what this run made. Not a record: it loads, and counts the recipes it loaded (`loaded`,
    for tests). Equal, as a Mapping, to the plain dict of every recipe's results."""

    __slots__ = ("_held", "_pickles")
    loaded = 0  # recipes whose results were unpickled, every instance together (for tests)

    def __init__(
        self,
        pickles: Mapping[str, bytes],
        held: Mapping[str, tuple[RecipeResult, ...]] | None = None,
    ) -> None:
        self._pickles = dict(pickles)
        self._held: dict[str, tuple[RecipeResult, ...]] = dict(held or {})

    @staticmethod
    def of(by_recipe: Mapping[str, tuple[RecipeResult, ...]]) -> StoredResults:
        """The results in hand, each recipe's pickled (as `results_digest` pickles them)."""
        return StoredResults({n: _pickled(tuple(rs)) for n, rs in by_recipe.items()}, by_recipe)

    def pickled(self, name: str) -> bytes:
        return self._pickles[name]

    def __getitem__(self, name: str) -> tuple[RecipeResult, ...]:
        found = self._held.get(name)
        if found is None:
            loaded = pickle.loads(self._pickles[name])  # an authenticated entry's (see above)
            if not isinstance(loaded, tuple):  # pragma: no cover - written by `of` alone
                raise TypeError("a stored recipe's results are a tuple")
            found = self._held[name] = loaded
            StoredResults.loaded += 1
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(self._pickles)

    def __len__(self) -> int:
        return len(self._pickles)

    def __contains__(self, name: object) -> bool:
        return name in self._pickles

    def __reduce__(self) -> tuple[type[StoredResults], tuple[dict[str, bytes]]]:
        return StoredResults, (self._pickles,)  # stored as the pickles: none loaded


class LeafResults(LoadedTuple):
    """The results of `names` in `by_recipe`, in order, as one tuple read when first used
    (the render step passes them to a memoized stage that reads them only when it runs)."""

    __slots__ = ("_by_recipe", "_names", "_whole")

    def __init__(self, by_recipe: Mapping[str, Sequence[RecipeResult]], names: Sequence[str]):
        self._by_recipe, self._names = by_recipe, tuple(names)
        self._whole: tuple[RecipeResult, ...] | None = None

    def _tuple(self) -> tuple[RecipeResult, ...]:
        if self._whole is None:
            self._whole = tuple(r for n in self._names for r in self._by_recipe[n])
        return self._whole


@dataclass(frozen=True, slots=True)
class Resolved:
    """The catalog stage's result: the validated catalog, each recipe in scope resolved with
    every scale profile that applies to it (by name, in scope order), why any did not resolve,
    and the qualification lanes (None: the catalog has no lanes.yaml)."""

    catalog: Catalog
    by_recipe: Mapping[str, tuple[RecipeResult, ...]]
    failures: Mapping[str, str]
    problems: tuple[Diagnostic, ...]
    lanes: Lanes | None
    # each recipe's results as later stages' records name them (`results_digest`), made once
    # with them: a build that takes this stage's result from the memo does not pickle them again
    digests: Mapping[str, str] = field(default_factory=dict)
    # each recipe's results' heads (`ResultHead`), in `by_recipe`'s order: made from the
    # results when not given
    heads: Mapping[str, tuple[ResultHead, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.heads and self.by_recipe:
            heads = {n: tuple(map(ResultHead.of, rs)) for n, rs in self.by_recipe.items()}
            object.__setattr__(self, "heads", heads)

    def results(self) -> tuple[RecipeResult, ...]:
        """Every recipe's results (each recipe's read: see `result_heads`)."""
        return tuple(r for rs in self.by_recipe.values() for r in rs)

    def result_heads(self) -> tuple[ResultHead, ...]:
        """Every result's head, in `results()`'s order; no result is read."""
        return tuple(h for hs in self.heads.values() for h in hs)


@dataclass(frozen=True, slots=True)
class Outcome:
    """What `run` gives: the catalog and its recipes, the verification, the records in scope
    (in the order `status.runs` follows) and the status (None without lanes.yaml)."""

    resolved: Resolved
    verification: VerificationRun
    records: Records  # each directory's read when first used (`records.path(i)`: unread)
    status: Status | None
    trust_root: str  # the roots' names, as every output shows them
    demo: bool  # every root is a demo root: sample evidence counts
    shares: tuple[RecipeShare, ...] = ()  # each recipe's records and aggregate key
    aggregated: int = 0  # recipes aggregated by this run (the others came from the memo)
    # the derived key of the catalog stage's record ("" without a memo): `resolved` is a
    # function of it, so a later stage's record names the catalog and its results by it
    catalog_key: str = ""

    @property
    def catalog(self) -> Catalog:
        return self.resolved.catalog

    @property
    def recipes(self) -> tuple[RecipeResult, ...]:
        return self.resolved.results()


# --- the pipeline -------------------------------------------------------------------------------


def run(
    inputs: Inputs,
    memo: Memo | None = None,
    *,
    after_catalog: Callable[[Resolved, str], None] | None = None,
) -> Outcome:
    """load → validate → resolve → verify → aggregate, each stage's result reused when its
    input record is the one it was made from. Raises CatalogError (located diagnostics).

    `after_catalog(resolved, catalog_key)` runs between the catalog stage and the evidence
    stages: work that depends on the catalog alone (the site's bundles) is done there, while
    this process is small. The bundle workers fork then: forked after verification, with its
    records and the aggregation alive here, they copied the pages they wrote to (reference
    counts, allocations in the parent's free memory), and one cold build's process tree peaked
    at 2,289 MB PSS in `make bench` at 1,000 x 20,000 (the other two 1,613 and 1,770)."""
    memo = memo or Memo()
    record = CatalogInput(
        inputs.catalog, inputs.strict, inputs.scope, named_recipes(inputs.evidence), inputs.rules
    )
    resolved, catalog_key = memo.stage_and_key(
        CATALOG_STAGE,
        CATALOG_CODE,
        record,
        lambda: resolve_catalog(record),
        reused=lambda: PROGRESS.info(
            "catalog unchanged since the last build: validated and resolved then"
        ),
    )
    if after_catalog is not None:
        after_catalog(resolved, catalog_key)
    verification = verify(inputs, resolved, memo)
    records = in_scope(verification.records, inputs.scope)
    aggregation = aggregate(resolved, records, verification, memo)
    roots = verification.trust_roots
    if roots:  # no evidence: no trust root was read
        names, demo = verification.trust_root, all(r.demo for r in roots)
    else:
        names, demo = ", ".join(inputs.trust_roots), all(t == "demo" for t in inputs.trust_roots)
    return Outcome(
        resolved,
        verification,
        records,
        aggregation.status,
        names,
        demo,
        aggregation.shares,
        aggregation.made,
        catalog_key,
    )


def named_recipes(evidence: Path) -> tuple[str, ...]:
    """The recipes the evidence tree has a directory for (`evidence/<recipe>/…`)."""
    if not safeio.is_dir(evidence):
        return ()
    dirs = (safeio.Kind.DIR, safeio.Kind.DIR_LINK)  # a link to a directory counted, as before
    return tuple(e.name for e in safeio.listdir(evidence) if e.kind in dirs)


# --- catalog: load, validate, resolve -----------------------------------------------------------


def load_and_validate(
    root: Path,
    *,
    strict: bool = False,
    rules: str | None = None,
    resolved: dict[str, RecipeResult] | None = None,
) -> Catalog:
    """Load and validate the catalog (under the upstream `rules` stated, else those its
    apiVersions say); raise ValidationError carrying every located problem. `resolved`: where
    validation puts the leaves it resolved (`validate_catalog`)."""
    from generator.catalog.load import load_catalog
    from generator.validate import validate_catalog

    catalog, load_diags = load_catalog(root, rules)
    diags = tuple(load_diags) + tuple(validate_catalog(catalog, strict=strict, resolved=resolved))
    errors = [d for d in diags if d.severity is Severity.ERROR or strict]
    if errors:
        raise ValidationError(f"the catalog has {len(errors)} problem(s)", errors)
    return catalog


def resolve_catalog(record: CatalogInput) -> Resolved:
    """The catalog stage: load, validate, resolve every recipe in scope with every profile."""

    from generator.scale.qualify import LANES_FILE, lanes_of

    PROGRESS.info("load + validate %s", record.catalog)
    # an absolute root: a cached catalog is read again (manifests, signers, trust root) by
    # builds from other working directories
    checked: dict[str, RecipeResult] = {}  # the leaves validation resolved (default profile)
    catalog = load_and_validate(
        Path(safeio.abspath(record.catalog)),
        strict=record.strict,
        rules=record.rules,
        resolved=checked,
    )
    names = _in_scope(catalog, record)
    PROGRESS.info("resolve %d recipes", len(names))
    by_recipe: dict[str, tuple[RecipeResult, ...]] = {}
    failures: dict[str, str] = {}
    problems: list[Diagnostic] = []
    for name in names:
        results, failure = resolve_recipe(catalog, name, record.scope, checked.get(name))
        by_recipe[name] = results
        if failure is not None:
            failures[name] = failure.message
            problems.extend(failure.diagnostics or (_located(name, failure.message),))
    lanes = lanes_of(catalog.documents) if LANES_FILE in catalog.documents else None
    stored = StoredResults.of(by_recipe)  # each recipe's pickle: `results_digest`'s bytes
    digests = {name: hashlib.sha256(stored.pickled(name)).hexdigest() for name in by_recipe}
    shared: dict[Any, Any] = {}  # equal components and chains: one object in every head
    heads = {name: tuple(ResultHead.of(r, shared) for r in rs) for name, rs in by_recipe.items()}
    return Resolved(catalog, stored, failures, tuple(problems), lanes, digests, heads)


def results_digest(results: Sequence[RecipeResult]) -> str:
    """The sha256 of a recipe's results pickled (a pickle holds every field of every record:
    equal bytes are equal results), as the aggregate stage's record names them."""
    return hashlib.sha256(_pickled(tuple(results))).hexdigest()


def _located(name: str, message: str) -> Diagnostic:
    return Diagnostic(name, 0, 0, "$", message, "resolve")


def _in_scope(catalog: Catalog, record: CatalogInput) -> tuple[str, ...]:
    """The recipe asked for, else every leaf and every other recipe the evidence names."""
    if record.scope.recipe:
        return (record.scope.recipe,)
    extra = {n for n in record.named if n in catalog.overlays and n != "base"}
    return tuple(sorted(set(catalog.leaves()) | extra))


def profile_order(catalog: Catalog) -> list[str]:
    """The scale profiles, `standard` first, then by name."""
    names = sorted(catalog.profiles, key=lambda n: (n != DEFAULT_PROFILE, n))
    return names or [DEFAULT_PROFILE]


def resolve_recipe(
    catalog: Catalog, name: str, scope: Scope = Scope(), checked: RecipeResult | None = None
) -> tuple[tuple[RecipeResult, ...], CatalogError | None]:
    """The recipe resolved with every scale profile that applies to it (or the one in scope),
    and the first error. A profile whose `appliesTo` excludes the recipe is not offered, unless
    the scope names both. With a recipe in scope, an error is raised. `checked`: the recipe as
    validation resolved it at the default profile (`resolve.check_resolves`), completed with
    its digest rather than resolved again (the same result: tests/test_resolve_once.py).
    Measured at 1,000 leaves and two profiles (one process, `time.process_time`): validation's
    resolutions 0.58 CPU-s, the stage's 2,000 1.24."""
    from generator.catalog.resolve import profile_applies, resolve, with_digest

    overlay = catalog.overlays.get(name)
    explicit = bool(scope.recipe and scope.profile)
    results: list[RecipeResult] = []
    for profile in (scope.profile,) if scope.profile else profile_order(catalog):
        prof = catalog.profiles.get(profile)
        applies = overlay is None or prof is None or profile_applies(prof, overlay.criteria)
        if not applies and not explicit:
            continue
        try:
            if checked is not None and profile == DEFAULT_PROFILE:
                results.append(with_digest(checked))
            else:
                results.append(resolve(catalog, name, profile=profile))
        except CatalogError as e:
            if scope.recipe:
                raise
            return tuple(results), e
    return tuple(results), None


# --- verify -------------------------------------------------------------------------------------


def _has_evidence(paths: Sequence[Path]) -> bool:
    from generator.evidence.upstream import has_pointers

    return any(safeio.is_dir(p) and (_has_bundle(p) or has_pointers(p)) for p in paths)


def _has_bundle(directory: Path) -> bool:
    """Whether anything below `directory` is named `*.sigstore.json` (`any(rglob(...))`): the
    walk stops at the first one."""
    suffix = ".sigstore.json"
    return any(
        e.rel.endswith(suffix) for e in safeio.find(directory, suffixes=(suffix,), dirs=True)
    )


def verify(inputs: Inputs, resolved: Resolved, memo: Memo) -> VerificationRun:
    """Every evidence file in scope verified offline against the trust roots and the signer
    policy, each judged current against the resolved recipes' digests. Without evidence no
    trust root is read. Each file's result is kept in the memo (its path, bytes, trust root and
    policy), so a rebuild verifies only the files it has not seen."""
    evidence = inputs.evidence
    paths = [evidence / inputs.scope.recipe] if inputs.scope.recipe else [evidence]
    if not _has_evidence(paths):
        return VerificationRun((), Records.held(()), ())
    from generator.evidence.model import digest_key
    from generator.evidence.stage import verify_stage
    from generator.evidence.upstream import options_from_env

    PROGRESS.info("verify evidence in %s (trust root %s)", evidence, ", ".join(inputs.trust_roots))
    return verify_stage(
        paths,
        catalog_dir=Path(resolved.catalog.root),
        trust_roots=inputs.trust_roots,
        catalog=resolved.catalog,
        current={digest_key(h.name, h.scale_profile): h.digest for h in resolved.result_heads()},
        # upstream's allowlist.yaml beside the evidence, even when one recipe is asked for
        allowlists_under=[evidence],
        upstream=options_from_env(inputs.online),
        evidence_root=evidence,  # DIR/RECIPE is stored below DIR, whatever DIR is named
        jobs=inputs.jobs,
        base=evidence.parent,
        cache=memo.cache,
        sweep=not inputs.scope.recipe,  # the whole tree: unused directory entries are swept
    )


def in_scope(records: Records, scope: Scope) -> Records:
    """The records the scope's profile is about (all of them without one; unreadable files,
    which name no profile, are always shown), by their heads: none is read."""
    if not scope.profile:
        return records
    heads = records.heads()
    return records.select(
        [
            i
            for i, (recipe, profile) in enumerate(zip(heads.recipes, heads.profiles, strict=True))
            if recipe is None  # no statement
            or (profile or DEFAULT_PROFILE) == scope.profile
        ]
    )


# --- aggregate ----------------------------------------------------------------------------------

AGGREGATE_STAGE = "aggregate"
AGGREGATE_CODE = ("aggregate.py", "evidence", "validate.py", "catalog", "scale", "core", "fast")


@dataclass(frozen=True, slots=True)
class RecipeRuns:
    """The aggregate stage's record for one recipe: everything its part of the status is
    computed from (`generator.aggregate.RecipePart`): its resolved results (as the digest
    the catalog stage made with them, `Resolved.digests`, else their pickle), why it does not
    resolve, its evidence records, and the judge's inputs shared by every recipe (the lanes,
    the profiles' ladders, the demo roots), as a digest. A record verified through the cache
    enters as the key of its verification (`VerificationRun.keys`: its file's path, location
    and digest, the trust root, the signer policy, the verifier's code), which names the record
    as verified; what staleness then changes in it is a function of the recipe's results,
    which are here. Any other record (a pointer file's, a build without a cache) enters as its
    pickle: a pickle holds every field of a record, so equal bytes are equal records; each
    record is pickled on its own, so its bytes do not depend on what other records share."""

    recipe: str
    results: str | bytes  # `results_digest` (str), or the results' pickle (bytes)
    failure: str | None
    evidence: tuple[str | bytes, ...]  # a verification key (str) or a record's pickle (bytes)
    judge: str


@dataclass(frozen=True, slots=True)
class RecipeShare:
    """One recipe's share of an `Outcome`: its records' positions in `Outcome.records` and the
    derived key of its aggregate record ("" without a memo), which later stages key by."""

    recipe: str
    positions: tuple[int, ...]
    key: str


@dataclass(frozen=True, slots=True)
class Aggregation:
    status: Status | None
    shares: tuple[RecipeShare, ...] = ()
    made: int = 0  # recipes aggregated by this run (the others' parts came from the memo)


def _pickled(value: object) -> bytes:
    import pickle

    return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


def _keyed(
    names: Sequence[str],
    resolved: Resolved,
    positions: Sequence[Sequence[int]],
    records: Records,
    judge: str,
) -> list[RecipeRuns]:
    """Each recipe's `RecipeRuns` record (its memo key is derived from it): its results by
    the digest the catalog stage made (`Resolved.digests`; pickled here only without one),
    each record (at `positions`, the recipe's, in `records`) by the key of its verification
    when it has one, else by its pickle (see `RecipeRuns`): a record with a key is not read,
    nor are the results of a recipe with a digest.
    Taking the digest instead of pickling every recipe's results again: 0.05 → under 0.01 s
    CPU at 200 × 4,000 on an evidence-only rebuild (0.25 → 0.006 s profiled)."""

    keys = records.heads().keys

    def entry(i: int) -> str | bytes:
        return keys[i] or _pickled(records[i])

    def results(name: str) -> str | bytes:
        return resolved.digests.get(name) or _pickled(tuple(resolved.by_recipe.get(name, ())))

    return [
        RecipeRuns(n, results(n), resolved.failures.get(n), tuple(map(entry, where)), judge)
        for n, where in zip(names, positions, strict=True)
    ]


def _as_records(records: Sequence[Evidence], verification: VerificationRun) -> Records:
    """`records` as the verify stage's `Records`: themselves, or (a tuple of some of them) in
    hand with the verification key of each record of `verification` among them (by identity;
    a record judged anew is another object, and enters by its pickle)."""
    if isinstance(records, Records):
        return records
    run = verification.records
    keys = {id(r): run.key(i) for i, r in enumerate(run) if run.key(i)}
    return Records.held(records, [keys.get(id(r), "") for r in records])


def _stored(parts: Sequence[RecipePart], fresh: dict[int, RecipePart]) -> list[StoredPart]:
    """The parts as the stage stores them: each as heads and a pickle read when used
    (`generator.aggregate.StoredPart`), each kept in `fresh` by its stored form's identity
    (a part made by this run is used as made: in hand)."""
    from generator.aggregate import StoredPart

    out = []
    for part in parts:
        out.append(StoredPart.of(part))
        fresh[id(out[-1])] = part
    return out


def aggregate(
    resolved: Resolved,
    records: Sequence[Evidence],
    verification: VerificationRun,
    memo: Memo | None = None,
) -> Aggregation:
    """Consensus, ceilings and lane verdicts of every recipe × profile in scope, each run
    judged (`Status.runs` follows `records`); no status when the catalog has no lanes.

    Aggregated per recipe (a recipe's status depends on its results and its runs alone): each
    recipe's part is memoized under its `RecipeRuns` record, the recipes without one are
    aggregated together, and the parts are combined with the component qualification (the one
    result across recipes) computed again from them. The records (`Records`) are grouped and
    keyed by their heads; only the recipes aggregated here read theirs (in one batch)."""
    if resolved.lanes is None:
        return Aggregation(None)
    from generator.aggregate import RecipeInput, combine, recipe_of, recipe_parts

    memo = memo or Memo()
    held = _as_records(records, verification)
    catalog, lanes = resolved.catalog, resolved.lanes
    ladders = {name: p.ladder for name, p in catalog.profiles.items()}
    demo_roots = tuple(sorted(verification.demo_roots))
    groups: dict[str, list[int]] = {}
    heads = held.heads()
    for i, (recipe, path) in enumerate(zip(heads.recipes, heads.paths, strict=True)):
        groups.setdefault(recipe_of(recipe, path), []).append(i)
    names = sorted(set(resolved.by_recipe) | set(groups))
    positions = [tuple(groups.get(n, ())) for n in names]

    def recipe_input(i: int) -> RecipeInput:  # its results read here: made for the aggregated
        n = names[i]
        return RecipeInput(
            n, resolved.by_recipe.get(n, ()), held.select(positions[i]), resolved.failures.get(n)
        )

    judge = hashlib.sha256(_pickled((lanes, sorted(ladders.items()), demo_roots))).hexdigest()
    keyed = (
        _keyed(names, resolved, positions, held, judge)
        if memo.cache is not None
        else [None] * len(names)
    )
    made = 0
    fresh: dict[int, RecipePart] = {}  # the parts made here, by their stored form

    def make(todo: list[int]) -> Sequence[RecipePart | StoredPart]:
        nonlocal made
        made = len(todo)
        PROGRESS.info("aggregate status of %d of %d recipes", len(todo), len(names))
        held.select([i for t in todo for i in positions[t]]).need()  # one batch of reads
        inputs = [recipe_input(i) for i in todo]
        parts = recipe_parts(inputs, lanes, ladders, demo_roots=demo_roots)
        return _stored(parts, fresh) if memo.cache is not None else list(parts)

    stored, keys = memo.stage_many(AGGREGATE_STAGE, AGGREGATE_CODE, keyed, make)
    parts = [fresh.get(id(p)) or p for p in stored]
    # the component qualification from the results' heads: no recipe's results are read
    status = combine(parts, positions, resolved.result_heads(), demo=bool(demo_roots))
    shares = tuple(map(RecipeShare, names, positions, keys))
    return Aggregation(status, shares, made)


__all__ = [
    "CATALOG_STAGE",
    "CatalogInput",
    "Inputs",
    "Outcome",
    "Resolved",
    "Scope",
    "load_and_validate",
    "resolve_recipe",
    "run",
]
