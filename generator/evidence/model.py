"""Records of the evidence stage: statements, signer policy, trust roots, verification results.

Everything here is a frozen dataclass built once at a boundary (a parsed statement, a loaded
policy, a loaded trust root) and passed around read-only. The verification result of one file is
either a `VerifiedEvidence` or a `RejectedEvidence` (state in the type): consumers (status,
site, release) count only `VerifiedEvidence` whose `counted` is true.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from operator import attrgetter
from typing import Any

from generator.core import linearmatch
from generator.core.records import DEFAULT_PROFILE
from generator.fast.packed import packed_mapping, packed_tuple


def constructor_args(record: Any) -> tuple[Any, ...]:
    """A slotted record's field values in its constructor's order: what its `__reduce__`
    pickles, so that loading it is one constructor call instead of the generic state round
    trip of a frozen slotted dataclass (`dataclasses._dataclass_setstate`, a Python-level
    `object.__setattr__` per field: 1.75 s over 123,636 objects in a profiled evidence-only
    rebuild at 1,000 × 20,000). Loading the stored entries at 200 × 4,000, collector paused:
    verify 0.27 → 0.25 s, aggregate 0.074 → 0.059 s CPU. A field added to the record is in
    it (`tests/test_aggregate_by_recipe.py` round-trips every field).

    Read through one `operator.attrgetter` per type (made on first use), the reference being
    `getattr` of each slot (`constructor_args_reference`): 0.9 -> 0.3 µs for a record of 13
    fields (100,000 calls, CPU). Every build judges its 20,000 cached records (`judged`)."""
    getter = _GETTERS.get(type(record))
    if getter is None:
        getter = _GETTERS[type(record)] = _getter(type(record).__slots__)
    return getter(record)


def constructor_args_reference(record: Any) -> tuple[Any, ...]:
    """`constructor_args` by `getattr` of each slot (the reference)."""
    return tuple(getattr(record, name) for name in record.__slots__)


_GETTERS: dict[type, Callable[[Any], tuple[Any, ...]]] = {}


def _getter(names: Sequence[str]) -> Callable[[Any], tuple[Any, ...]]:
    """A function giving the values of `names` as a tuple (attrgetter of one name gives the
    value, of none is an error)."""
    if len(names) > 1:
        return attrgetter(*names)
    return lambda record: tuple(getattr(record, n) for n in names)


# in-toto / DSSE constants
IN_TOTO_PAYLOAD_TYPE = "application/vnd.in-toto+json"
STATEMENT_TYPE_V1 = "https://in-toto.io/Statement/v1"

# Our predicate (scale-qualification runs) and upstream AICR's recipe-evidence predicates.
SCALE_QUALIFICATION_V1 = "https://aicr.run/scale-qualification/v1"
RECIPE_EVIDENCE_V1 = "https://aicr.run/recipe-evidence/v1"
RECIPE_EVIDENCE_V2 = "https://aicr.run/recipe-evidence/v2"
RECIPE_EVIDENCE_V3 = "https://aicr.run/recipe-evidence/v3"
UPSTREAM_PREDICATE_TYPES: tuple[str, ...] = (
    RECIPE_EVIDENCE_V1,
    RECIPE_EVIDENCE_V2,
    RECIPE_EVIDENCE_V3,
)
PREDICATE_TYPES: tuple[str, ...] = (SCALE_QUALIFICATION_V1, *UPSTREAM_PREDICATE_TYPES)


class FailureClass(StrEnum):
    """Why an evidence file is not counted. The value is the `class` field of JSON output."""

    MALFORMED_BUNDLE = "malformed-bundle"  # not JSON / not a Sigstore bundle / no DSSE envelope
    SIGNATURE_INVALID = "signature-invalid"  # DSSE signature does not match the certificate key
    CERTIFICATE_UNTRUSTED = "certificate-untrusted"  # does not chain to the trust root
    TLOG_INVALID = "tlog-invalid"  # SCT, inclusion proof, checkpoint, SET or entry body invalid
    CERTIFICATE_EXPIRED = "certificate-expired"  # certificate not valid at the signing time
    SIGNER_NOT_ALLOWED = "signer-not-allowed"  # identity/issuer not in catalog/signers.yaml
    PAYLOAD_TYPE = "payload-type"  # DSSE payloadType is not in-toto, or `_type` is wrong
    PREDICATE_TYPE_UNKNOWN = "predicate-type-unknown"  # not one of PREDICATE_TYPES
    PREDICATE_SCHEMA = "predicate-schema"  # predicate fails its JSON Schema
    STALE = "stale"  # recipe digest differs from the current resolved recipe's
    PATH_MISMATCH = "path-mismatch"  # file not at evidence/<recipe>/<source>/<digest>.sigstore.json
    # judged against the catalog (`generator.evidence.judge`), after the signature verified:
    VERDICT_MISMATCH = "verdict-mismatch"  # signed verdict/KPI status is not the recomputed one
    ATTESTED_AFTER_LOGGED = "attested-after-logged"  # attestedAt later than the log's time

    # upstream pointers and summary bundles (generator/evidence/upstream.py)
    POINTER_INVALID = "pointer-invalid"  # pointer malformed, misplaced, or not what the bundle says
    BUNDLE_UNAVAILABLE = "bundle-unavailable"  # registry refused / unreachable / not cached offline
    BUNDLE_INVALID = "bundle-invalid"  # a file differs from manifest.json / predicate / CTRF


class SignerClass(StrEnum):
    FIRST_PARTY = "first-party"
    PARTNER = "partner"
    COMMUNITY = "community"


@dataclass(frozen=True, slots=True)
class CheckResult:
    """One check of one phase, with its CTRF status."""

    name: str
    status: str  # passed | failed | skipped | pending | other
    targets: int | None = None  # None when the predicate does not say (upstream)
    message: str = ""

    def __reduce__(self) -> tuple[type[CheckResult], tuple[str, str, int | None, str]]:
        # pickled as its constructor's arguments: the verify cache holds ~25 per run, and a
        # slotted dataclass's default state round trip costs ~3× this (`_dataclass_setstate`)
        return CheckResult, (self.name, self.status, self.targets, self.message)


@dataclass(frozen=True, slots=True)
class Kpi:
    id: str
    value: float
    unit: str
    operator: str
    threshold: float
    status: str | None  # passed | failed | proposed | None
    targets: int | None = None  # how many targets it was measured on (None: not said)

    def __reduce__(self) -> tuple[type[Kpi], tuple[Any, ...]]:
        # as `CheckResult.__reduce__`
        fields = (self.id, self.value, self.unit, self.operator, self.threshold, self.status)
        return Kpi, (*fields, self.targets)


@dataclass(frozen=True, slots=True)
class Statement:
    """A parsed in-toto Statement v1 carrying one of the accepted predicates.

    The common fields are lifted out of the predicate so that consumers need not know which
    predicate type it was; `predicate` keeps the whole predicate as signed.
    For upstream recipe-evidence predicates, fields they do not carry are empty/None and
    `phases` holds per-phase counts turned into synthetic summary checks.

    `predicate`, `component_versions`, `phases` and `kpis` are held packed (`fast.packed`,
    whatever dict or tuple they are given as): each pickles as one bytes object and is
    unpickled when first read, and reads as the dict or tuple it holds (equality, repr, no
    hash for a mapping). They were most of a stored record's objects, and a rebuild loads every
    verified record while reading few of them. The verify stage alone (`verify_stage` as
    `pipeline.verify` calls it, warm cache, collector paused, 200 x 4,000, load 3-3.7),
    median of 6-7 runs before -> after: nothing changed 0.67-0.73 -> 0.34-0.44 CPU-s, one
    file removed 0.565 -> 0.328; the 200 `verify-dirs` entries 19.6 -> 22.5 MB and the 4,000
    per-file entries 18.7 -> 24.5 MB (a packed value is a pickle of its own: strings repeated
    across the fields are no longer shared). At 1,000 x 20,000 (load 3.3-3.6, median of 4,
    with the keys derived once and no sigstore import, `verify_cache`): nothing changed 2.73 ->
    1.99 CPU-s, one file removed 2.90 -> 1.71; entries 97.2 -> 111.9 MB (directories) and
    92.9 -> 121.8 MB (files). The whole rebuild there with one file removed, paired (load
    3.3-4.1): 15.75 -> 13.93 CPU-s, peak RSS 1,401 -> 839 MB (67 packed values read: those of
    the changed recipe). A record stored in the form before is never read: `evidence/` and
    `fast/` are in every verification key (`verify_cache.VERIFY_CODE`).
    """

    predicate_type: str
    recipe: str
    recipe_digest: str  # "sha256:<hex>" (normalized; upstream bare hex gets the prefix)
    subjects: tuple[tuple[str, Mapping[str, str]], ...]  # (name, {alg: hex})
    predicate: Mapping[str, Any]
    scale_profile: str | None = None
    scale_profile_version: str | None = None
    lane: str | None = None
    lane_nodes: int | None = None
    criteria_version: str | None = None
    observed_nodes: int | None = None
    observed_gpus: int | None = None
    bundle_digest: str | None = None
    component_versions: Mapping[str, str] = field(default_factory=dict)
    # phase name -> its checks, phases in the order deployment, conformance, performance
    phases: Mapping[str, tuple[CheckResult, ...]] = field(default_factory=dict)
    kpis: Sequence[Kpi] = ()
    verdict: str | None = None  # pass | fail; derived from phase results for upstream
    reasons: tuple[str, ...] = ()
    attested_at: str | None = None
    sample: bool = False
    generator: str | None = None  # "name version"

    def __post_init__(self) -> None:
        # held packed (`fast.packed`): pickled as bytes, unpickled when first read
        object.__setattr__(self, "predicate", packed_mapping(self.predicate))
        object.__setattr__(self, "component_versions", packed_mapping(self.component_versions))
        object.__setattr__(self, "phases", packed_mapping(self.phases))
        object.__setattr__(self, "kpis", packed_tuple(self.kpis))

    def __reduce__(self) -> tuple[type[Statement], tuple[Any, ...]]:
        return Statement, constructor_args(self)  # loaded by one constructor call


@dataclass(frozen=True, slots=True)
class SignerRule:
    """One entry of catalog/signers.yaml: who may sign evidence, and how we name them."""

    label: str
    klass: SignerClass
    issuer: str  # exact OIDC issuer URL
    identity: str | None  # exact certificate identity (SAN), or
    identity_pattern: str | None  # an anchored regular expression over it
    trust_root: str | None = None  # only valid when verified with this trust root (e.g. demo)

    def matches(
        self,
        identity: str,
        issuer: str,
        trust_root: str,
        trust_digest: str = "",
        demo: bool = False,
    ) -> bool:
        """`trust_root` is the name of the root that verified the bundle (`demo`,
        `public-good`, `sha256:<16 hex>`); a rule's `trustRoot` may also give its full digest.
        Under a demo root (`demo`: its keys are public) only rules bound to a trust root apply,
        so the demo keys cannot sign as any real signer."""
        if issuer != self.issuer:
            return False
        if demo and self.trust_root is None:
            return False
        if self.trust_root is not None and self.trust_root not in (
            trust_root,
            f"sha256:{trust_digest}" if trust_digest else trust_root,
        ):
            return False
        if self.identity is not None:
            return identity == self.identity
        assert self.identity_pattern is not None
        return linearmatch.fullmatch(self.identity_pattern, identity)

    def describe(self) -> str:
        who = self.identity if self.identity is not None else f"/{self.identity_pattern}/"
        where = f" [trust root {self.trust_root}]" if self.trust_root else ""
        return f"{self.label} ({self.klass}): {who} via {self.issuer}{where}"


@dataclass(frozen=True, slots=True)
class SignerPolicy:
    """The allowlist. An empty policy allows nobody (fail closed)."""

    rules: tuple[SignerRule, ...]

    def match(
        self,
        identity: str,
        issuer: str,
        trust_root: str,
        trust_digest: str = "",
        demo: bool = False,
    ) -> SignerRule | None:
        for rule in self.rules:
            if rule.matches(identity, issuer, trust_root, trust_digest, demo):
                return rule
        return None

    def describe(self, trust_root: str | None = None, demo: bool = False) -> str:
        """The allowed signers (those usable under `trust_root`, when given), for messages."""
        rules = [
            r
            for r in self.rules
            if trust_root is None
            or r.trust_root == trust_root
            or (r.trust_root is None and not demo)
        ]
        if not rules:
            return "nobody (no signer in the policy applies)"
        return "; ".join(r.describe() for r in rules)


class RootUse(StrEnum):
    """What a command verifies with a root: the one thing that decides whether the demo root
    (recognised by content) may be used."""

    EVIDENCE = "evidence"  # accepted; what it verifies is SAMPLE, labelled everywhere
    RELEASE = "release"  # refused: a release and its evidence are never judged by demo keys


@dataclass(frozen=True, slots=True)
class TrustRoot:
    """A Sigstore trusted_root.json, named by its content (`generator.evidence.trustroot`).
    `demo` roots mark everything they verify as sample."""

    name: str  # "public-good", "demo" (by content, however given), else "sha256:<16 hex>"
    path: str  # absolute path of the trusted_root.json (TrustedRoot.from_file reads it)
    data: bytes  # the trusted_root.json bytes, as checked when loaded
    sha256: str  # hex of `data`
    demo: bool = False


@dataclass(frozen=True, slots=True)
class EvidenceFile:
    """One evidence file as read from disk. `path` is relative to the repository (POSIX).

    `location` is where the file is stored, `evidence/<...>` below the evidence root it was
    found under (see `store.read_files`): the verifier compares it, exactly, with the path the
    statement belongs at. None: `path` itself is compared.
    """

    path: str
    data: bytes
    location: str | None = None
    real: str = ""  # the file's real path (links resolved) when it was read from disk


@dataclass(frozen=True, slots=True)
class FoundFile:
    """One evidence file as the verify stage found it (`store.find_files`): where it is (as
    `EvidenceFile`), the directory its real path stays in, its bytes' sha256 and their size,
    and the bytes themselves when this build read them. `data` is None when the file's stat
    memo vouched for the digest (`store.FileMemo`): nothing was read, and `store.load` reads
    the bytes when they are needed, refusing them unless their sha256 is still `sha256`."""

    path: str
    location: str | None
    real: str
    root: str  # the real path of the directory the file must stay in
    sha256: str
    size: int
    data: bytes | None = None


@dataclass(frozen=True, slots=True)
class VerifiedEvidence:
    """A bundle whose signature, certificate, transparency log entry and signer all verified.

    `stale` evidence (recipe digest is not the current one) is shown but not counted; `sample`
    evidence (demo trust root, or `sample: true` in the predicate) is never released.
    """

    path: str
    statement_digest: str  # "sha256:<hex>" of the DSSE payload bytes
    statement: Statement
    signer_identity: str
    signer_issuer: str
    signer_label: str
    signer_class: SignerClass
    source: str  # first 32 hex of sha256(issuer + "\n" + identity)
    trust_root: str
    log_index: int
    integrated_time: int | None  # seconds since the epoch, from the transparency log
    sample: bool
    stale: bool
    current_digest: str | None  # the current recipe digest it was compared with

    def __reduce__(self) -> tuple[type[VerifiedEvidence], tuple[Any, ...]]:
        return VerifiedEvidence, constructor_args(self)  # loaded by one constructor call

    def judged(self, current_digest: str | None) -> VerifiedEvidence:
        """The record judged against `current_digest` (the current recipe's digest, None: no
        such recipe): `dataclasses.replace(self, current_digest=..., stale=...)` (the
        reference, `judged_reference`), by one constructor call, and `self` when nothing
        changes. `stale` and `current_digest` are the last fields (tests/test_verify_batch.py).
        Every build judges every cached record (20,000 at 1,000 recipes). Measured on the
        4,000 records of 200 × 4,000, collector paused: judged current 0.027 → 0.022 CPU-s,
        judged as stored (nothing changes) 0.025 → 0.002."""
        stale = current_digest != self.statement.recipe_digest
        if stale is self.stale and current_digest == self.current_digest:
            return self
        args: list[Any] = [*_VERIFIED_HEAD(self), stale, current_digest]
        return VerifiedEvidence(*args)

    def judged_reference(self, current_digest: str | None) -> VerifiedEvidence:
        """`judged` as `dataclasses.replace` gives it (the reference, for the tests)."""
        stale = current_digest != self.statement.recipe_digest
        return replace(self, current_digest=current_digest, stale=stale)

    @property
    def recipe(self) -> str:
        return self.statement.recipe

    @property
    def profile(self) -> str | None:
        return self.statement.scale_profile

    @property
    def lane(self) -> str | None:
        return self.statement.lane

    @property
    def counted(self) -> bool:
        """Whether status/consensus may count it: current (not stale)."""
        return not self.stale

    @property
    def klass(self) -> FailureClass | None:
        return FailureClass.STALE if self.stale else None

    @property
    def message(self) -> str:
        if not self.stale:
            return "verified"
        return (
            f"stale: signed for recipe digest {self.statement.recipe_digest}, current digest of "
            f"{self.statement.recipe} is {self.current_digest or 'unknown (recipe not found)'}; "
            "shown, not counted"
        )


# the fields `judged` keeps, in the constructor's order before the two it sets
_VERIFIED_HEAD = attrgetter(*VerifiedEvidence.__slots__[:-2])
if VerifiedEvidence.__slots__[-2:] != ("stale", "current_digest"):  # pragma: no cover
    raise AssertionError("VerifiedEvidence.judged sets its last two fields")


@dataclass(frozen=True, slots=True)
class RejectedEvidence:
    """A file that is not counted, with the failure class and a message saying why.

    Whatever could be read before the failure is kept (statement, signer) so pages can explain
    it; none of it is trustworthy unless `klass` is a post-signature class (signer-not-allowed,
    payload-type, predicate-type-unknown, predicate-schema, path-mismatch), for which the
    signature itself did verify.
    """

    path: str
    klass: FailureClass
    message: str
    statement_digest: str | None = None
    statement: Statement | None = None
    signer_identity: str | None = None
    signer_issuer: str | None = None
    trust_root: str | None = None
    log_index: int | None = None
    integrated_time: int | None = None

    def __reduce__(self) -> tuple[type[RejectedEvidence], tuple[Any, ...]]:
        return RejectedEvidence, constructor_args(self)  # loaded by one constructor call

    @property
    def recipe(self) -> str | None:
        return self.statement.recipe if self.statement else None

    @property
    def counted(self) -> bool:
        return False


Evidence = VerifiedEvidence | RejectedEvidence


class RunState(StrEnum):
    """What became of one evidence file: counted, shown as out of date, or not counted."""

    VERIFIED = "verified"
    STALE = "stale"
    REJECTED = "rejected"

    @classmethod
    def of(cls, record: Evidence) -> RunState:
        if isinstance(record, RejectedEvidence):
            return cls.REJECTED
        return cls.STALE if record.stale else cls.VERIFIED


# --- currency: each record judged against the current recipes' digests --------------------------
# (here, not in `verify`: a build whose every file's verification is cached judges currency
# without importing the verifier, and sigstore with it)


def digest_key(recipe: str, profile: str | None) -> str:
    """The `current_digests` key of a recipe resolved with a scale profile: `<recipe>@<profile>`."""
    return f"{recipe}@{profile or DEFAULT_PROFILE}"


def current_digest(statement: Statement, current_digests: Mapping[str, str]) -> str | None:
    """The current digest a statement must carry: `<recipe>@<profile>`, else `<recipe>`."""
    key = digest_key(statement.recipe, statement.scale_profile)
    return current_digests.get(key, current_digests.get(statement.recipe))


def with_current_digests(
    records: Iterable[Evidence], current_digests: Mapping[str, str]
) -> tuple[Evidence, ...]:
    """The records re-judged for staleness against other current digests (no re-verification)."""
    out: list[Evidence] = []
    for r in records:
        if isinstance(r, VerifiedEvidence):
            r = r.judged(current_digest(r.statement, current_digests))
        out.append(r)
    return tuple(out)
