"""Stage 2, validate: references and semantics over loaded records, every problem collected.

Schema and parse problems come from `load`; this stage adds what a schema cannot say: base chains,
mixins, component references and pins, file references, criteria values and ambiguity, constraint
syntax, and whether every leaf resolves (dependency references and cycles included).

Entry: `validate_catalog(catalog, ...) -> diagnostics`, every problem sorted. Each overlay and
mixin goes through the rules of `_OVERLAY_RULES` (each componentRefs entry through `_REF_RULES`),
one small function per rule; then the catalog-wide checks, and the leaves' resolution once
nothing else is an error. `leaf_health`/`health_of` grade a leaf for `list`, `status` and the site.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from packaging.version import InvalidVersion, Version

from generator.catalog import chartvalues
from generator.catalog.criteria import KNOWN_CRITERIA, normalise
from generator.catalog.resolve import chain, check_resolves, resolve
from generator.catalog.rules import rules_of
from generator.core import names, safeio
from generator.core.errors import (
    Diagnostic,
    ResolveError,
    ScaleError,
    Severity,
    sort_diagnostics,
)
from generator.core.records import (
    DIMENSIONS,
    WILDCARD,
    Catalog,
    ComponentRef,
    Overlay,
    RecipeResult,
)

# upstream's `ParseConstraintPath`: {Type}.{Subtype}.{Key}, split on the first two dots, the Key
# being the rest (`OS.sysctl./proc/sys/kernel/osrelease`)
_CONSTRAINT_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9]*\.[A-Za-z0-9][A-Za-z0-9_-]*\.\S+$")


def constraint_name_ok(name: str) -> bool:
    """`{Type}.{Subtype}.{Key}`, the Key any printable text without spaces."""
    return names.valid(_CONSTRAINT_NAME, name) and name.isprintable()


# upstream's measurement types (pkg/measurement), the Types a recipe constraint can read
MEASUREMENT_TYPES = ("K8s", "GPU", "OS", "SystemD", "NodeTopology")
SAFE_SOURCE = re.compile(r"^(https?|oci)://[A-Za-z0-9.-]+(:[0-9]+)?(/[A-Za-z0-9._~%+/-]*)?$")
SAFE_VERSION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.+_-]{0,127}$")
SAFE_CHART = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]{0,252}$")
CHECK_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,127}$")
OPERATORS = (">=", "<=", "==", "!=", ">", "<")
PHASE_LETTERS = (
    ("readiness", "R"),
    ("deployment", "D"),
    ("performance", "P"),
    ("conformance", "C"),
)


def _parse_version(text: str) -> Version:
    """A version, tolerant of a leading `v` (v1.34, v26.7.0)."""
    return Version(text.strip().removeprefix("v").removeprefix("V"))


def _split_operator(value: str) -> tuple[str | None, str]:
    """(`>=`, `1.34`) for `>= 1.34`; (None, value) for an exact value."""
    v = value.strip()
    for op in OPERATORS:
        if v.startswith(op):
            return op, v[len(op) :].strip()
    return None, v


def _constraint_value_problem(value: str) -> str | None:
    op, operand = _split_operator(value)
    if op is None:
        return None if operand else "constraint value is empty"
    if not operand:
        return f"operator '{op}' has no operand"
    if op in ("==", "!="):
        return None
    try:
        _parse_version(operand)
    except InvalidVersion:
        return f"'{operand}' is not a version or number, so '{op}' cannot compare it"
    return None


def _d(
    ov: Overlay, json_path: str, msg: str, rule: str, sev: Severity = Severity.ERROR
) -> Diagnostic:
    line, col = ov.doc.locate(json_path)
    return Diagnostic(ov.doc.rel, line, col, json_path, msg, rule, sev)


def _file_problem(root: Path, rel: str, catalog: Catalog) -> tuple[str, str] | None:
    """(rule, message) when a catalog file reference is unsafe or missing."""
    if rel.startswith("/") or re.match(r"^[A-Za-z]:[\\/]", rel) or rel.startswith("\\"):
        return (
            "ref.path-absolute",
            f"'{rel}' is an absolute path; use a path relative to the catalog",
        )
    parts = PurePosixPath(rel.replace("\\", "/")).parts
    if ".." in parts:
        return "ref.path-traversal", f"'{rel}' leaves the catalog through '..'"
    if rel in catalog.files:
        return None
    full = root / rel
    if safeio.is_link(full) or safeio.exists(full):
        real = Path(safeio.real_path(full))
        if not real.is_relative_to(Path(safeio.real_path(root))):
            return "ref.path-escape", f"'{rel}' is a symbolic link leading outside the catalog"
        return (
            "ref.file-unreadable",
            f"'{rel}' exists but could not be loaded (see its own diagnostic)",
        )
    return "ref.file-missing", f"'{rel}' does not exist in the catalog"


# ---------------------------------------------------------------- rules for one overlay or mixin
# Each rule is a small generator of diagnostics, run from the tables below; add a rule by adding
# a function and its table entry.

_OverlayRule = Callable[[Catalog, Overlay, bool], Iterator[Diagnostic]]
_RefRule = Callable[[Catalog, Overlay, ComponentRef], Iterator[Diagnostic]]


def _check_overlay(catalog: Catalog, ov: Overlay, strict: bool) -> Iterator[Diagnostic]:
    """Every rule of `_OVERLAY_RULES` over one overlay or mixin (`strict`: warnings as errors
    where a rule says so)."""
    for rule in _OVERLAY_RULES:
        yield from rule(catalog, ov, strict)


def _base_chain(catalog: Catalog, ov: Overlay, strict: bool) -> Iterator[Diagnostic]:
    """The base chain resolves (no missing base, no cycle), reported where it breaks; a base that
    could not be loaded, or a missing root overlay, has its own diagnostic."""
    if ov.kind != "RecipeMetadata" or ov.name == "base":
        return
    try:
        chain(catalog, ov.name)
    except ResolveError as e:
        root_missing = ov.base == "base" and "base" not in catalog.overlays
        if ov.base not in catalog.unloadable and not root_missing:
            yield from (d for d in e.diagnostics if d.path == ov.doc.rel)


def _mixins_exist(catalog: Catalog, ov: Overlay, strict: bool) -> Iterator[Diagnostic]:
    for i, m in enumerate(ov.mixins):
        if m not in catalog.mixins and m not in catalog.unloadable:
            yield _d(ov, f"$.spec.mixins[{i}]", f"mixin '{m}' does not exist", "mixin.missing")


def _duplicate_components(catalog: Catalog, ov: Overlay, strict: bool) -> Iterator[Diagnostic]:
    seen: dict[str, str] = {}
    for ref in ov.component_refs:
        if ref.name in seen:
            yield _d(
                ov,
                f"{ref.json_path}.name",
                f"component '{ref.name}' is listed twice (first at {seen[ref.name]})",
                "component.duplicate",
            )
        seen.setdefault(ref.name, ref.json_path)


def _component_refs(catalog: Catalog, ov: Overlay, strict: bool) -> Iterator[Diagnostic]:
    """Every rule of `_REF_RULES` over each componentRefs entry."""
    for ref in ov.component_refs:
        for rule in _REF_RULES:
            yield from rule(catalog, ov, ref)


def _ref_registered(catalog: Catalog, ov: Overlay, ref: ComponentRef) -> Iterator[Diagnostic]:
    reg = catalog.registry.components.get(ref.name)
    if reg is None and not ref.source and catalog.registry.doc is not None:
        yield _d(
            ov,
            f"{ref.json_path}.name",
            f"component '{ref.name}' is not in the registry and names no source",
            "component.unknown",
        )


def _profile_rules(catalog: Catalog, ov: Overlay, strict: bool) -> Iterator[Diagnostic]:
    """A configuration profile (ADR-015) under rules that do not read one is ignored: say so."""
    rules = rules_of(catalog)
    if ov.profile is not None and not rules.profiles:
        yield Diagnostic(
            ov.doc.rel,
            *ov.doc.locate("$.spec.profile"),
            "$.spec.profile",
            f"configuration profile '{ov.profile.name}' is ignored under upstream {rules.name} "
            "rules (read the tree under 2026-08 rules: --upstream-rules)",
            "profile.ignored",
            Severity.WARNING,
        )


def _ref_pinned(catalog: Catalog, ov: Overlay, ref: ComponentRef) -> Iterator[Diagnostic]:
    """A Helm chart needs a version: its own, or (August 2026 rules, upstream PR #1821) the
    registry's defaultVersion, which resolution then gives it."""
    reg = catalog.registry.components.get(ref.name)
    if rules_of(catalog).registry_versions and reg is not None and reg.version:
        return
    if (ref.type or "Helm") == "Helm" and ref.source and not ref.version:
        yield _d(
            ov,
            f"{ref.json_path}.source",
            f"Helm component '{ref.name}' names a source but pins no version",
            "helm.unpinned",
        )


def _ref_safe_values(catalog: Catalog, ov: Overlay, ref: ComponentRef) -> Iterator[Diagnostic]:
    for field, value, pattern, what in (
        ("source", ref.source, SAFE_SOURCE, "a plain URL"),
        ("version", ref.version, SAFE_VERSION, "a version"),
        ("chart", ref.chart, SAFE_CHART, "a plain chart name"),
    ):
        if value is not None and not names.valid(pattern, value):
            jp = f"{ref.json_path}.{field}"
            yield _d(ov, jp, f"{value!r} is not {what}", "component.unsafe-value")


def _ref_files(catalog: Catalog, ov: Overlay, ref: ComponentRef) -> Iterator[Diagnostic]:
    """The files a reference names are safe, present, and (a valuesFile) a mapping."""
    jp = ref.json_path
    files = [(f"{jp}.valuesFile", ref.values_file)] if ref.values_file else []
    files += [(f"{jp}.manifestFiles[{k}]", f) for k, f in enumerate(ref.manifest_files)]
    files += [(f"{jp}.preManifestFiles[{k}]", f) for k, f in enumerate(ref.pre_manifest_files)]
    root = Path(catalog.root)
    for path, rel in files:
        problem = _file_problem(root, rel, catalog)
        if problem:
            yield _d(ov, path, problem[1], problem[0])
        elif path.endswith(".valuesFile"):
            data = catalog.files[rel].data
            if data is not None and not isinstance(data, dict):
                yield _d(ov, path, f"values file '{rel}' must hold a mapping", "values.not-mapping")


def _ref_self_dependency(catalog: Catalog, ov: Overlay, ref: ComponentRef) -> Iterator[Diagnostic]:
    for k, dep in enumerate(ref.dependency_refs):
        if dep == ref.name:
            yield _d(
                ov,
                f"{ref.json_path}.dependencyRefs[{k}]",
                f"component '{ref.name}' depends on itself",
                "dependency.cycle",
            )


def _check_names_printable(catalog: Catalog, ov: Overlay, strict: bool) -> Iterator[Diagnostic]:
    """Validation check names hold no invisible or control characters."""
    for phase, raw in ov.validation.items():
        for i, check in enumerate(raw.get("checks") or ()):
            bad = sorted({f"U+{ord(ch):04X}" for ch in str(check) if not ch.isprintable()})
            if bad:
                yield _d(
                    ov,
                    f"$.spec.validation.{phase}.checks[{i}]",
                    f"{check!r} contains invisible or control characters ({', '.join(bad)})",
                    "name.unsafe-character",
                )


def _overlay_constraints(catalog: Catalog, ov: Overlay, strict: bool) -> Iterator[Diagnostic]:
    """Recipe constraints: well-formed, and of a type upstream can measure (a warning)."""
    for i, c in enumerate(ov.constraints):
        yield from _constraint(ov, f"$.spec.constraints[{i}]", c.name, c.value)
        kind = c.name.split(".", 1)[0]
        if constraint_name_ok(c.name) and kind not in MEASUREMENT_TYPES:
            yield _d(
                ov,
                f"$.spec.constraints[{i}].name",
                f"constraint type '{kind}' is not an upstream measurement type "
                f"({', '.join(MEASUREMENT_TYPES)}): upstream cannot evaluate it against a snapshot "
                "(ParseConstraintPath)",
                "constraint.type",
                Severity.WARNING,
            )


def _validation_constraints(catalog: Catalog, ov: Overlay, strict: bool) -> Iterator[Diagnostic]:
    for phase, raw in ov.validation.items():
        for i, c in enumerate(raw.get("constraints") or ()):
            yield from _constraint(
                ov,
                f"$.spec.validation.{phase}.constraints[{i}]",
                c["name"],
                str(c["value"]),
                check_names=True,
            )


def _criteria_missing(catalog: Catalog, ov: Overlay, strict: bool) -> Iterator[Diagnostic]:
    """An overlay without criteria that no overlay uses as its base is never applied."""
    if ov.kind == "RecipeMetadata" and ov.name != "base" and not ov.has_criteria:
        used_as_base = any(o.base == ov.name for o in catalog.overlays.values())
        if not used_as_base:
            yield _d(
                ov,
                "$.spec",
                "overlay has no criteria, so no query ever applies it and no overlay uses it "
                "as its base (upstream: FindMatchingOverlays skips overlays without criteria)",
                "criteria.missing",
                Severity.ERROR if strict else Severity.WARNING,
            )


def _criteria_nodes(catalog: Catalog, ov: Overlay, strict: bool) -> Iterator[Diagnostic]:
    if ov.nodes:
        yield _d(
            ov,
            "$.spec.criteria.nodes",
            f"criteria.nodes {ov.nodes}: upstream applies this overlay only to "
            f"`aicr recipe --nodes {ov.nodes}`; here --nodes is advisory (scale profiles choose "
            "scale settings), so no query applies it",
            "criteria.nodes",
            Severity.WARNING,
        )


def _criteria_values(catalog: Catalog, ov: Overlay, strict: bool) -> Iterator[Diagnostic]:
    """Each stated criteria value is written as upstream parses queries, and known."""
    sev = Severity.ERROR if strict else Severity.WARNING
    raw = (ov.doc.data.get("spec") or {}).get("criteria") if isinstance(ov.doc.data, dict) else None
    for d in DIMENSIONS:
        v = ov.criteria.get(d)
        if v is None:
            continue
        written = raw.get(d) if isinstance(raw, dict) else v
        canonical = normalise(d, str(written))
        if canonical != v:
            yield _d(
                ov,
                f"$.spec.criteria.{d}",
                f"{d} '{v}' is not written as upstream parses queries ('{canonical or WILDCARD}'), "
                "and upstream compares overlay criteria as written: no query matches it",
                "criteria.not-canonical",
                sev,
            )
            continue
        known = KNOWN_CRITERIA[d] | set(catalog.extra_criteria.get(d, ()))
        if v not in known:
            yield _d(
                ov,
                f"$.spec.criteria.{d}",
                f"unknown {d} '{v}'; known: {', '.join(sorted(known))} (extend them in criteria.yaml)",
                "criteria.unknown-value",
                sev,
            )


_REF_RULES: tuple[_RefRule, ...] = (
    _ref_registered,
    _ref_pinned,
    _ref_safe_values,
    _ref_files,
    _ref_self_dependency,
)
_OVERLAY_RULES: tuple[_OverlayRule, ...] = (
    _base_chain,
    _mixins_exist,
    _duplicate_components,
    _component_refs,
    _check_names_printable,
    _overlay_constraints,
    _validation_constraints,
    _criteria_missing,
    _criteria_nodes,
    _profile_rules,
    _criteria_values,
)


def _constraint(
    ov: Overlay, jp: str, name: str, value: str, *, check_names: bool = False
) -> Iterator[Diagnostic]:
    """A constraint's name and value. In validation phases (`check_names`), a constraint may also
    be named after the check it parameterises (upstream: `nccl-all-reduce-bw-net`)."""
    if not constraint_name_ok(name) and not (check_names and names.valid(CHECK_NAME, name)):
        form = "{Type}.{Subtype}.{Key}" + (" or a check name" if check_names else "")
        yield _d(
            ov,
            f"{jp}.name",
            f"constraint name '{name}' is not of the form {form}",
            "constraint.name",
        )
    problem = _constraint_value_problem(value)
    if problem:
        yield _d(ov, f"{jp}.value", problem, "constraint.value")


def _check_registry(catalog: Catalog) -> Iterator[Diagnostic]:
    """The registry's defaults that reach a bundle (chart, version, repository, namespace), by
    the renderer's own patterns (`names.TOKEN`, `names.DNS_LABEL`): what `bundle` and `build`
    would refuse is reported here, where it is written."""
    doc = catalog.registry.doc
    if doc is None:
        return
    for comp in catalog.registry.components.values():
        for key, value, pattern, what in (
            ("defaultRepository", comp.repository, names.TOKEN, "a plain repository URL"),
            ("defaultChart", comp.chart, names.TOKEN, "a plain chart name"),
            ("defaultVersion", comp.version, names.TOKEN, "a plain version"),
            ("defaultNamespace", comp.namespace, names.DNS_LABEL, "a DNS label"),
        ):
            if value is not None and not names.valid(pattern, value):
                jp = f"{comp.json_path}.helm.{key}"
                line, col = doc.locate(jp)
                msg = f"{value!r} is not {what}: bundles would refuse it"
                yield Diagnostic(doc.rel, line, col, jp, msg, "component.unsafe-value")


def _check_ambiguity(catalog: Catalog) -> Iterator[Diagnostic]:
    by_criteria: dict[tuple[tuple[str, str | None], ...], list[Overlay]] = {}
    for ov in catalog.overlays.values():
        if ov.name != "base":
            by_criteria.setdefault(ov.criteria.items(), []).append(ov)
    for group in by_criteria.values():
        if len(group) > 1:
            names = ", ".join(sorted(o.name for o in group))
            for ov in group:
                yield _d(
                    ov,
                    "$.spec.criteria",
                    f"overlays {names} have identical criteria (ambiguous)",
                    "criteria.ambiguous",
                )


def _check_leaves(
    catalog: Catalog, resolved: dict[str, RecipeResult] | None
) -> Iterator[Diagnostic]:
    """Each leaf resolved at the default profile; what resolves is put in `resolved`, if given
    (the result without its digest: `check_resolves`)."""
    for leaf in catalog.leaves():
        ov = catalog.overlays[leaf]
        try:
            result = check_resolves(catalog, leaf)
            if resolved is not None:
                resolved[leaf] = result
        except (ResolveError, ScaleError) as e:
            if e.diagnostics:
                yield from e.diagnostics
            elif not _chain_broken(catalog, leaf):
                yield _d(ov, "$", f"recipe does not resolve: {e.message}", "recipe.unresolvable")


def _chain_broken(catalog: Catalog, leaf: str) -> bool:
    try:
        chain(catalog, leaf)
    except ResolveError:
        return True
    return False


def _check_scale_data(catalog: Catalog) -> Iterator[Diagnostic]:
    """The project's own kinds: scale profiles, lanes, shared checks and the signer policy."""
    from generator.catalog.load import CATALOG_API_VERSIONS, check_header
    from generator.evidence.policy import policy_from
    from generator.scale.preflight import scale_diagnostics
    from generator.scale.qualify import check_lanes

    for _name, prof in sorted(catalog.profiles.items()):
        if prof.nodes_min > prof.nodes_max and prof.doc is not None:
            line, col = prof.doc.locate("$.spec.nodes")
            msg = f"nodes.min {prof.nodes_min} is greater than nodes.max {prof.nodes_max}"
            yield Diagnostic(prof.doc.rel, line, col, "$.spec.nodes", msg, "profile.nodes")
    lanes = catalog.documents.get("scale/lanes.yaml")
    if lanes is not None:
        head = check_header(lanes, "QualificationLanes", CATALOG_API_VERSIONS)
        yield from head if head else check_lanes(catalog.documents, catalog.profiles)
    signers = catalog.documents.get("signers.yaml")
    if signers is not None:
        head = check_header(signers, "SignerPolicy", ("aicr.run/v1",))
        yield from head if head else policy_from(signers)[1]
    if "scale/checks.yaml" in catalog.documents:
        yield from scale_diagnostics(catalog)


def validate_catalog(
    catalog: Catalog,
    strict: bool = False,
    load_diagnostics: Iterable[Diagnostic] = (),
    evidence_dir: Path | None = None,
    trust_roots: Sequence[str] = (),
    resolved: dict[str, RecipeResult] | None = None,
) -> tuple[Diagnostic, ...]:
    """Every problem in the catalog, sorted. `--strict` turns warnings into errors.

    `resolved`: where each leaf that resolves at the default profile is put, resolved without
    its digest (`resolve.check_resolves`), when validation gets as far as resolving leaves
    (no error before); the catalog stage completes them rather than resolving them again.

    `evidence_dir`: where the evidence that `status: qualified` owned values name is verified
    (with `trust_roots`); qualified values without an evidence directory are an error.
    """
    out: list[Diagnostic] = list(load_diagnostics)
    out.extend(_qualified(catalog, evidence_dir, trust_roots))
    for ov in (*catalog.overlays.values(), *catalog.mixins.values()):
        out.extend(_check_overlay(catalog, ov, strict))
    out.extend(_check_ambiguity(catalog))
    out.extend(_check_registry(catalog))
    out.extend(chartvalues.catalog_problems(catalog))
    if "base" not in catalog.overlays and "base" not in catalog.unloadable and catalog.overlays:
        out.append(
            Diagnostic(
                "overlays/base.yaml", 0, 0, "$", "the catalog has no base overlay", "base.missing"
            )
        )
    out.extend(_check_scale_data(catalog))
    if not any(d.severity is Severity.ERROR for d in out):
        out.extend(_check_leaves(catalog, resolved))
    if strict:
        out = [Diagnostic(d.path, d.line, d.col, d.json_path, d.message, d.rule) for d in out]
    return sort_diagnostics(out)


def _qualified(
    catalog: Catalog, evidence_dir: Path | None, trust_roots: Sequence[str]
) -> list[Diagnostic]:
    from generator.scale.qualify import qualified_diagnostics, verify_qualified_evidence

    if not any(
        ov.status == "qualified" for p in catalog.profiles.values() for ov in p.owned_values
    ):
        return []
    if evidence_dir is None or not safeio.is_dir(evidence_dir):
        return [Diagnostic("scale/profiles", 0, 0, "$", "owned values marked qualified cannot "
                           "be checked without the evidence directory (validate --evidence DIR)",
                           "scale.qualified-evidence")]  # fmt: skip
    records = verify_qualified_evidence(catalog.profiles, evidence_dir, catalog, trust_roots)
    return list(qualified_diagnostics(catalog.profiles, records, evidence_dir.name))


@dataclass(frozen=True, slots=True)
class LeafHealth:
    name: str
    health: str  # pass | warn | fail
    coverage: dict[str, int]
    reasons: tuple[str, ...]

    def coverage_text(self) -> str:
        return " ".join(f"{letter}:{self.coverage[phase]}" for phase, letter in PHASE_LETTERS)


def leaf_health(catalog: Catalog, leaf: str) -> LeafHealth:
    """Structural health of one leaf: resolves, constraints well-formed, charts pinned."""
    try:
        r = resolve(catalog, leaf)
    except (ResolveError, ScaleError) as e:
        return LeafHealth(leaf, "fail", {p: 0 for p, _ in PHASE_LETTERS}, (e.message,))
    return health_of(r)


def health_of(r: RecipeResult) -> LeafHealth:
    """Structural health of a resolved recipe (pass | warn); the one rule set `list`, `status`
    and the site share."""
    reasons: list[str] = []
    for c in r.constraints:
        if not constraint_name_ok(c.name) or _constraint_value_problem(c.value):
            reasons.append(f"constraint {c.name} is malformed")
    for comp in r.components:
        if comp.type == "Helm" and comp.repository and not comp.version:
            reasons.append(f"{comp.name} has no pinned chart version")
        elif comp.version:
            try:
                if _parse_version(comp.version).is_prerelease:
                    reasons.append(f"{comp.name} is pinned to a pre-release ({comp.version})")
            except InvalidVersion:
                reasons.append(f"{comp.name} version '{comp.version}' is not a semantic version")
    coverage = {p: len(r.validation.get(p, {}).get("checks") or ()) for p, _ in PHASE_LETTERS}
    return LeafHealth(r.name, "warn" if reasons else "pass", coverage, tuple(reasons))
