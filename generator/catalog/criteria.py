"""Criteria values: the known sets, and query values normalised as upstream AICR parses them.

Upstream (`pkg/recipe/criteria.go`, `Parse<Dimension>Type`) trims and case-folds every value
given in a query, maps a few aliases (`self-managed`, `self`, `vanilla` -> any service; `al2`,
`al2023` -> amazonlinux), treats an empty value and `any` as the wildcard, and rejects anything
else as invalid input. This project knows more values than upstream's enums (see DESIGN.md
section 4); a catalog may declare more in its `criteria.yaml` (beside its `registry.yaml`), and
aliases for them: `service: {values: [togetherai], aliases: {together: togetherai}}`
(`tree_criteria` reads and checks them; the short form `service: [togetherai]` adds values only).

Overlay criteria are not normalised (upstream compares them as written); `validate` warns when
one is not in its canonical form.

Entry: `normalise_criteria(values) -> Criteria` for a query (`normalise` for one value), then
`check_known(criteria, extra, aliases) -> Criteria`, which maps the tree's aliases and raises
UsageError for a value no set knows; its answer is the query every later stage sees.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from generator.core.errors import Diagnostic, UsageError
from generator.core.records import DIMENSIONS, WILDCARD, Catalog, Criteria, Document

# upstream v0.11.1's enums (GetCriteria<Dimension>Types)
UPSTREAM_VALUES: dict[str, frozenset[str]] = {
    "service": frozenset("aks eks gke kind oke".split()),
    "accelerator": frozenset("a100 b200 gb200 h100 l40".split()),
    "os": frozenset("amazonlinux cos rhel ubuntu".split()),
    "intent": frozenset("inference training".split()),
    "platform": frozenset("dynamo kubeflow".split()),
}

# this project's known values: upstream's and more (DESIGN.md section 4)
KNOWN_CRITERIA: dict[str, frozenset[str]] = {
    "service": frozenset("eks gke aks oke ocp kind lke bcm metal3 generic k0s rke2".split()),
    "accelerator": frozenset("h100 h200 gb200 gb300 b200 a100 l40 l40s rtx-pro-6000 vr200".split()),
    "os": frozenset("ubuntu rhel cos amazonlinux ol talos sles".split()),
    "intent": frozenset("training inference".split()),
    "platform": frozenset("dynamo kubeflow nim runai slurm".split()),
}

# upstream's aliases (`openshift` since 2026); None is the wildcard
ALIASES: dict[str, dict[str, str | None]] = {
    "service": {"self-managed": None, "self": None, "vanilla": None, "openshift": "ocp"},
    "os": {"al2": "amazonlinux", "al2023": "amazonlinux"},
}


def normalise(dim: str, value: str | None) -> str | None:
    """A query value as upstream parses it (trimmed, case-folded, aliased); None = wildcard.
    Says nothing about whether the value is known: see `check_known`."""
    if value is None:
        return None
    v = value.strip().lower()
    if v in ("", WILDCARD):
        return None
    aliases = ALIASES.get(dim, {})
    if v in aliases:
        return aliases[v]
    return v


def normalise_criteria(values: Mapping[str, str | None]) -> Criteria:
    return Criteria(**{d: normalise(d, values.get(d)) for d in DIMENSIONS})


def _known_values(dim: str, extra: Mapping[str, Sequence[str]] | None = None) -> frozenset[str]:
    return KNOWN_CRITERIA[dim] | frozenset((extra or {}).get(dim, ()))


def check_known(
    criteria: Criteria,
    extra: Mapping[str, Sequence[str]] | None = None,
    aliases: Mapping[str, Mapping[str, str]] | None = None,
) -> Criteria:
    """The query with the tree's aliases (`criteria.yaml`) mapped to their values; raises
    UsageError (exit 2, as upstream's invalid-request) for a value no set knows."""
    diags: list[Diagnostic] = []
    messages: list[str] = []
    mapped: dict[str, str | None] = {}
    for dim, given in criteria.items():
        value = (aliases or {}).get(dim, {}).get(given, given) if given is not None else None
        mapped[dim] = value
        if value is None:
            continue
        known = _known_values(dim, extra)
        if value not in known:
            msg = (
                f"invalid {dim} '{value}'; known: {', '.join(sorted(known))}"
                f" (or any; a catalog extends the sets in criteria.yaml)"
            )
            messages.append(msg)
            diags.append(Diagnostic(f"--{dim}", 0, 0, "$", msg, "criteria.invalid"))
    if diags:
        raise UsageError("; ".join(messages), diags)
    return Criteria(**mapped)


def tree_values(catalog: Catalog) -> dict[str, tuple[str, ...]]:
    """The criteria values a tree's own overlays state (as written, wildcards left out): an
    upstream tree may use values this project has never heard of (upstream's later services),
    which its queries must reach as upstream's would."""
    out: dict[str, set[str]] = {d: set() for d in DIMENSIONS}
    for o in catalog.overlays.values():
        for d, v in o.criteria.items():
            if v is not None:
                out[d].add(v)
    return {d: tuple(sorted(vs)) for d, vs in out.items() if vs}


def known_to(catalog: Catalog) -> dict[str, tuple[str, ...]]:
    """Everything a query against `catalog` may name beyond KNOWN_CRITERIA: its `criteria.yaml`
    and its overlays' own values."""
    tree = tree_values(catalog)
    return {
        d: tuple(sorted({*catalog.extra_criteria.get(d, ()), *tree.get(d, ())})) for d in DIMENSIONS
    }


def unfamiliar(criteria: Criteria, catalog: Catalog) -> tuple[str, ...]:
    """The query's values known only from the tree's overlays (neither this project's sets nor
    the catalog's criteria.yaml name them): accepted, with a warning."""
    return tuple(
        f"{d}={v}"
        for d, v in criteria.items()
        if v is not None
        and v not in KNOWN_CRITERIA[d]
        and v not in catalog.extra_criteria.get(d, ())
    )


def tree_criteria(
    doc: Document,
) -> tuple[dict[str, tuple[str, ...]], dict[str, dict[str, str]], tuple[Diagnostic, ...]]:
    """The values and aliases a tree's `criteria.yaml` (schema-valid) adds, per dimension, and
    its problems, located: a value listed twice, an alias that shadows a value or one of
    upstream's aliases (or `any`), an alias to a value no set knows. A refused entry adds
    nothing."""
    values: dict[str, tuple[str, ...]] = {}
    aliases: dict[str, dict[str, str]] = {}
    diags: list[Diagnostic] = []
    spec: dict[str, Any] = doc.data.get("spec") or {}
    for dim in sorted(spec):
        entry = spec[dim]
        base = f"$.spec.{dim}"
        listed = entry if isinstance(entry, list) else (entry or {}).get("values") or []
        vpath = base if isinstance(entry, list) else f"{base}.values"
        kept: list[str] = []
        for i, v in enumerate(listed):
            if v in kept:
                diags.append(
                    _located(
                        doc, f"{vpath}[{i}]", f"{dim} '{v}' is listed twice", "duplicate-value"
                    )
                )
            else:
                kept.append(v)
        values[dim] = tuple(kept)
        known = KNOWN_CRITERIA[dim] | frozenset(kept)
        raw_aliases = {} if isinstance(entry, list) else (entry or {}).get("aliases") or {}
        for alias, target in raw_aliases.items():
            problem = _alias_problem(dim, alias, target, known)
            if problem is not None:
                diags.append(_located(doc, f"{base}.aliases.{alias}", *problem))
            else:
                aliases.setdefault(dim, {})[alias] = target
    return values, aliases, tuple(diags)


def _alias_problem(
    dim: str, alias: str, target: str, known: frozenset[str]
) -> tuple[str, str] | None:
    if alias == WILDCARD or alias in known:
        return f"alias '{alias}' shadows the {dim} value '{alias}'", "alias-shadows"
    if alias in ALIASES.get(dim, {}):
        return f"alias '{alias}' shadows upstream's {dim} alias '{alias}'", "alias-shadows"
    if target not in known:
        msg = (
            f"alias '{alias}' names an unknown {dim} '{target}'; known: {', '.join(sorted(known))}"
        )
        return msg, "alias-unknown-value"
    return None


def _located(doc: Document, json_path: str, message: str, rule: str) -> Diagnostic:
    line, col = doc.locate(json_path)
    return Diagnostic(doc.rel, line, col, json_path, message, f"criteria.{rule}")
