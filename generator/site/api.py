"""The static JSON API under `api/v1/`, and its published schemas.

Every file is sorted-key JSON with a trailing newline, so two builds of the same inputs are
byte-identical. Shapes are defined by the JSON Schemas in `catalog/schemas/api/`, copied beside
the files (`api/v1/schemas/`).
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from generator.core import safeio
from generator.core.errors import SiteError
from generator.evidence.model import RunState
from generator.evidence.view import (
    CheckRow,
    EvidenceView,
    KpiRow,
    Outcome,
    RunFacts,
    by_recipe,
    facts,
)
from generator.fast.loaded import LoadedTuple
from generator.render.bundled import Refusal
from generator.site import apifiles
from generator.site.model import ProfileView, RecipeView, SiteData
from generator.site.pages import run_url, slug
from generator.site.publish import Derived
from generator.site.summary import CONSENSUS_ORDER, band, summarise
from generator.site.timeline import timeline_json

API_VERSION = "aicr.run/v1"
SCHEMAS = safeio.resolve(Path(__file__)).parent.parent.parent / "catalog" / "schemas" / "api"


def dumps(obj: object) -> bytes:
    """Sorted, compact JSON with a trailing newline (values YAML gave as dates become strings)."""
    return (_text(obj) + "\n").encode("utf-8")


def _text(obj: object) -> str:
    """`dumps` without its newline, as text: how a value is written wherever it is nested."""
    return json.dumps(
        obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str, allow_nan=False
    )


def dumps_spliced(doc: Mapping[str, Any], key: str, items: Sequence[str]) -> bytes:
    """`dumps({**doc, key: [...]})` for a list whose items are written already: `items` are
    each item's `_text`, put in at `key`'s place among the sorted top-level keys (sorted as
    `sort_keys` sorts them; `doc` must not hold `key`, and its keys must be strings).

    Compact JSON writes a nested value exactly as it writes it alone, so the bytes are those
    of the reference, `dumps` of the whole document (tests/test_api_records_held.py holds them
    equal, by hypothesis too). Each run's record is in two files (its recipe's evidence file and
    detail): written once, spliced into both. Measured on the site data of the 200 x 4,000
    synthetic catalog (one process, CPU, load 6): every API file 2.70 -> 1.19 s; the recipe
    files alone, three interleaved pairs, 2.49/1.80/1.48 s made whole against 1.41/1.05/0.89
    spliced (with the records held one recipe at a time)."""
    if key in doc or not all(type(k) is str for k in doc):
        raise TypeError(f"dumps_spliced: {key!r} in the document, or a key not a string")
    before = _text({k: v for k, v in doc.items() if k < key})[1:-1]
    after = _text({k: v for k, v in doc.items() if k > key})[1:-1]
    middle = f"{_text(key)}:[{','.join(items)}]"
    return ("{" + ",".join(x for x in (before, middle, after) if x) + "}\n").encode("utf-8")


def _profile_summary(recipe: RecipeView, p: ProfileView, site: SiteData) -> dict[str, Any]:
    s = slug(recipe.name)
    profile = next((x for x in site.profiles if x.name == p.profile), None)
    return {
        "name": p.profile,
        "version": p.profile_version,
        "digest": p.digest,
        "consensus": p.consensus,
        "ceiling": p.ceiling or None,
        "ceilingNodes": p.ceiling_nodes,
        "lastEvidence": p.last_evidence or None,
        "lanes": {s_.lane: s_.verdict for s_ in p.lanes},
        "badge": apifiles.BADGE_SVG.path(name=s, profile=p.profile),
        "band": band(profile) or None,
        "summary": summarise(recipe, p, profile, site.lanes).to_json(),
    }


def run_json(run: EvidenceView) -> dict[str, Any]:
    """One run in the API: the evidence record (`EvidenceView.to_json()`, as every JSON output
    shows it) and where this site shows and publishes it."""
    return {
        **run.to_json(),
        "url": run_url(run),
        "raw": run.raw_file if run.raw else None,
    }


# A run's record written from pieces (`record_text`): `_text(run_json(run))` costs ~85 µs a
# run, most of it the encoder writing the checks and KPIs, which are the same text over and
# over (equal rows are one object among a build's views, `evidence.view.RowShare`).
_ENCODE = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str, allow_nan=False
).encode  # `_text` (json.dumps makes this encoder each call; it keeps no state between calls)
# the C encoder's own string writer (for a string: the text the encoder writes); None: no C
_STRING: Callable[[str], str] | None = getattr(json.encoder, "c_encode_basestring", None)
_MEMO_MAX = 4096  # entries a memo of `RecordMemo` holds before it starts again


class _Unsure(Exception):
    """A value `record_text` does not write itself: the reference writes the record."""


class RecordMemo:
    """The pieces of records written so far, for `record_text`: each outcome's text (by the
    object: its memo holds it, so its id names it), each checks tuple's (by its rows' ids), and
    each KPI row's text but its value (by the fields that text shows). Not a record: it
    remembers. One per API build; each memo starts again past `_MEMO_MAX` entries."""

    __slots__ = ("checks", "kpis", "outcomes")

    def __init__(self) -> None:
        self.outcomes: dict[int, tuple[Outcome, str]] = {}
        self.checks: dict[tuple[int, ...], tuple[tuple[CheckRow, ...], str]] = {}
        self.kpis: dict[tuple[Any, ...], tuple[Outcome, str]] = {}


def record_text_reference(run: EvidenceView) -> str:
    """A run's record as every API file holds it: `run_json`, written as `_text` writes it."""
    return _text(run_json(run))


def record_text(run: EvidenceView, memo: RecordMemo) -> str:
    """`record_text_reference(run)`, written from pieces: compact sorted-key JSON writes a
    nested value exactly as it writes it alone, so each piece is the encoder's text of that
    value (`_ENCODE`) or, for a string, an integer, a float, true, false or null, what the
    encoder writes for it (the C encoder's string writer, `repr`); each outcome's text, each
    checks tuple's and each KPI row's but its value (which comes last in it) are written once
    (`RecordMemo`) and taken from the memo after. A view, row or outcome not of its exact
    class, a field of a type the writer does not expect (it checks each), a value the encoder
    refuses: the reference writes the record (and raises what it raises).

    tests/test_api_record_text.py holds it equal to the reference: every run of the
    repository's catalog and of a synthetic one, and drawn views (refusals too). Measured on the
    site data of the 200 x 4,000 synthetic catalog (one process, `process_time`, three rounds
    interleaved with the reference): its 4,000 records 0.31-0.39 -> 0.10 CPU-s; every API file
    0.58-0.60 -> 0.36-0.40 (1,000 x 20,000: ~1.9 CPU-s of records, about 1.3 of it cut)."""
    if _STRING is None or type(run) is not EvidenceView:
        return record_text_reference(run)
    try:
        return _record_text(run, memo)
    except (_Unsure, TypeError, ValueError):  # the reference writes it, or raises
        return record_text_reference(run)


def _record_text(run: EvidenceView, memo: RecordMemo) -> str:
    assert _STRING is not None
    s = _STRING
    state = run.state
    if type(state) is not RunState and type(state) is not str:
        raise _Unsure
    return "".join(
        (
            *_record_front(run, memo, state),
            '},"outcome":',
            _outcome_text(run.outcome, memo),
            ',"predicateType":',
            s(run.predicate_type) if run.predicate_type else "null",
            ',"raw":',
            s(run.raw_file) if run.raw else "null",
            ',"reason":',
            s(run.reason) if run.reason else "null",
            ',"reasons":',
            "[]" if type(run.reasons) is tuple and not run.reasons else _ENCODE(list(run.reasons)),
            ',"recipe":',
            s(run.recipe),
            ',"recipeDigest":',
            s(run.recipe_digest) if run.recipe_digest else "null",
            ',"repositoryPath":',
            s(run.path),
            ',"sample":',
            _bool(run.sample),
            ',"scaleProfile":{"name":',
            s(run.profile) if run.profile else "null",
            ',"version":',
            s(run.profile_version) if run.profile_version else "null",
            '},"signer":{"class":',
            s(run.signer_class) if run.signer_class else "null",
            ',"identity":',
            s(run.signer_identity) if run.signer_identity else "null",
            ',"issuer":',
            s(run.signer_issuer) if run.signer_issuer else "null",
            ',"label":',
            s(run.signer_label) if run.signer_label else "null",
            '},"state":',
            s(state),
            ',"statementDigest":',
            s(run.statement_digest) if run.statement_digest else "null",
            ',"tlog":{"index":',
            _int(run.tlog_index),
            ',"integratedTime":',
            s(run.integrated_time) if run.integrated_time else "null",
            '},"trustRoot":',
            s(run.trust_root) if run.trust_root else "null",
            ',"url":',
            s(run_url(run)),
            ',"verdict":',
            s(run.verdict) if run.verdict else "null",
            "}",
        )
    )


def _record_front(run: EvidenceView, memo: RecordMemo, state: object) -> tuple[str, ...]:
    """The record's text up to its outcome (keys in sorted order, as the encoder writes them)."""
    assert _STRING is not None
    s = _STRING
    return (
        '{"attestedAt":',
        s(run.attested_at) if run.attested_at else "null",
        ',"bundleDigest":',
        s(run.bundle_digest) if run.bundle_digest else "null",
        ',"checks":',
        _checks_text(_rows(run.checks), memo),
        ',"class":',
        s(run.failure_class) if run.failure_class else "null",
        ',"componentVersions":',
        _versions_text(run.component_versions),
        ',"counted":',
        "true" if state == RunState.VERIFIED else "false",
        ',"id":',
        s(run.id),
        ',"kpis":',
        _kpis_text(_rows(run.kpis), memo),
        ',"lane":{"name":',
        s(run.lane) if run.lane else "null",
        ',"nodes":',
        _int(run.lane_nodes),
        '},"observed":{"gpus":',
        _int(run.observed_gpus),
        ',"nodes":',
        _int(run.observed_nodes),
    )


def _versions_text(versions: Mapping[str, str]) -> str:
    """`dict(sorted(versions.items()))` as the encoder writes it: it sorts a dict's items
    itself (and refuses the same keys `sorted` does)."""
    if type(versions) is not dict:
        raise _Unsure
    return _ENCODE(versions)


def _int(value: object) -> str:
    """An integer or None as the encoder writes it (anything else: `_Unsure`)."""
    if value is None:
        return "null"
    if type(value) is int:
        return int.__repr__(value)
    raise _Unsure


def _bool(value: object) -> str:
    if value is True:
        return "true"
    if value is False:
        return "false"
    raise _Unsure


def _number(value: object) -> str:
    """An integer or a finite float as the encoder writes it (anything else: `_Unsure`)."""
    if type(value) is float:
        if value - value == 0.0:  # finite (inf - inf and nan - nan are nan)
            return float.__repr__(value)
        raise _Unsure
    if type(value) is int:
        return int.__repr__(value)
    raise _Unsure


def _outcome_text(outcome: Outcome, memo: RecordMemo) -> str:
    found = memo.outcomes.get(id(outcome))
    if found is not None and found[0] is outcome:
        return found[1]
    if type(outcome) is not Outcome:
        raise _Unsure
    text = _ENCODE(outcome.to_json())
    if len(memo.outcomes) >= _MEMO_MAX:
        memo.outcomes.clear()
    memo.outcomes[id(outcome)] = (outcome, text)
    return text


def _rows(rows: Sequence[Any]) -> Sequence[Any]:
    """A view's check or KPI rows as the plain tuple the fast path writes: a view of a stored
    recipe holds them as `LazyRows` (`fast.loaded.LoadedTuple`), which it loads here. Before,
    such a view's record was written twice, the fast path giving up at its rows (`_Unsure`)
    and the reference writing it whole: every record of a build that read its views from the
    cache, 1.44 s of py-spy samples in `_record_text` at 1,000 x 20,000 against 0.78 without
    the cache (`--jobs 1`). Measured: the 2,000 records of 100 x 2,000 from stored views, rows
    loaded first, three interleaved rounds: 0.186/0.179/0.180 -> 0.115/0.107/0.112 CPU-s."""
    return tuple(rows) if isinstance(rows, LoadedTuple) else rows


def _checks_text(checks: Sequence[CheckRow], memo: RecordMemo) -> str:
    """A run's checks (`[c.to_json() for c in checks]`), by its rows: the memo holds them, so
    their ids name them."""
    key = tuple(map(id, checks))
    found = memo.checks.get(key)
    if found is not None:
        return found[1]
    if type(checks) is not tuple or any(type(c) is not CheckRow for c in checks):
        raise _Unsure
    text = _ENCODE([c.to_json() for c in checks])
    if len(memo.checks) >= _MEMO_MAX:
        memo.checks.clear()
    memo.checks[key] = (checks, text)
    return text


def _kpis_text(kpis: Sequence[KpiRow], memo: RecordMemo) -> str:
    """A run's KPIs (`[k.to_json() for k in kpis]`): each row's text but its value is the
    same for rows alike in every field but the value (keys sorted: `value` comes last), kept
    by those fields (strings each, the threshold as written, the outcome by its id, which the
    memo's entry holds)."""
    if type(kpis) is not tuple:
        raise _Unsure
    memo_kpis = memo.kpis
    rows = []
    for k in kpis:
        if type(k) is not KpiRow:
            raise _Unsure
        kid, unit, operator, status, outcome = k.id, k.unit, k.operator, k.status, k.outcome
        if not (str is type(kid) is type(unit) is type(operator) is type(status)):
            raise _Unsure
        key = (kid, unit, operator, _number(k.threshold), status, id(outcome))
        value = _number(k.value)
        found = memo_kpis.get(key)
        if found is None or found[0] is not outcome:
            if type(outcome) is not Outcome:
                raise _Unsure
            whole = _ENCODE(k.to_json())
            tail = f'"value":{value}}}'
            if not whole.endswith(tail):
                raise _Unsure
            if len(memo_kpis) >= _MEMO_MAX:
                memo_kpis.clear()
            found = memo_kpis[key] = (outcome, whole[: -len(tail)] + '"value":')
        rows.append(found[1] + value + "}")
    return "[" + ",".join(rows) + "]"


def _recipe_summary(recipe: RecipeView, site: SiteData) -> dict[str, Any]:
    s = slug(recipe.name)
    return {
        "name": recipe.name,
        "url": f"recipes/{s}.html",
        "api": apifiles.RECIPE.path(name=s),
        "evidenceUrl": f"evidence/{s}.html",
        "criteria": recipe.criteria.to_json(),
        "health": recipe.health,
        "coverage": recipe.coverage,
        "healthReasons": list(recipe.health_reasons),
        "evidence": len(recipe.evidence),
        "sample": any(e.sample for e in facts(recipe.evidence)),
        "profiles": [_profile_summary(recipe, p, site) for p in recipe.profiles],
    }


def _header(site: SiteData, kind: str) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": kind,
        "generatedAt": site.generated_at,
        "generator": {"name": "aicr-catalog", "version": site.generator_version},
        "trustRoot": site.trust_root,
    }


def recipes_index(site: SiteData) -> dict[str, Any]:
    return {**_recipes_head(site), "recipes": [_recipe_summary(r, site) for r in site.recipes]}


def _recipes_head(site: SiteData) -> dict[str, Any]:
    """`recipes_index` but its recipes."""
    return {
        **_header(site, "RecipeIndex"),
        "lanes": [{"name": lane.name, "nodes": lane.nodes} for lane in site.lanes],
        "scaleProfiles": [
            {"name": p.name, "nodes": {"min": p.nodes_min, "max": p.nodes_max}}
            for p in site.profiles
        ],
        "consensusOrder": list(CONSENSUS_ORDER),
        "sample": any(e.sample for e in facts(site.evidence)),
        "notes": [{"stage": n.stage, "message": n.message} for n in site.notes],
    }


def _recipes_file(site: SiteData, reuse: Reuse | None) -> bytes:
    """api/v1/recipes.json (`recipes_index`). With `reuse.texts`, each recipe's summary is
    the text an earlier build made from the same inputs: those of the recipe's detail file
    (its source names everything the detail is made from, and the detail holds every field of
    the summary), spliced in (`dumps_spliced`); only a changed recipe's summary is made."""
    if reuse is None or reuse.texts is None:
        return dumps(recipes_index(site))
    parts = [
        (reuse.source("api-detail", r.name, r.evidence), functools.partial(_summary, r, site))
        for r in site.recipes
    ]
    return dumps_spliced(_recipes_head(site), "recipes", reuse.texts("api-summary", parts))


def _summary(recipe: RecipeView, site: SiteData) -> str:
    return _text(_recipe_summary(recipe, site))


def recipe_detail(
    recipe: RecipeView, site: SiteData, records: Mapping[str, dict[str, Any]] | None = None
) -> dict[str, Any]:
    """One recipe's API document; `records` are the evidence records by run id when the
    caller made them already (for the per-recipe evidence files)."""
    return {
        **_detail_head(recipe, site),
        "evidence": [
            records[e.id] if records is not None and e.id in records else run_json(e)
            for e in recipe.evidence
        ],
    }


def _detail_head(recipe: RecipeView, site: SiteData) -> dict[str, Any]:
    """`recipe_detail` but its runs."""
    profiles = []
    for p in recipe.profiles:
        refused = _refused(p.refusals)
        profiles.append(
            {
                **_profile_summary(recipe, p, site),
                "recipe": p.document,
                "downloads": [
                    {"deployer": d.deployer, "url": d.file, "sha256": d.sha256, "size": d.size}
                    for d in p.downloads
                ],
                **({"refusedDownloads": refused} if refused else {}),
            }
        )
    return {
        **_header(site, "RecipeDetail"),
        **{
            k: v
            for k, v in _recipe_summary(recipe, site).items()
            if k not in ("profiles", "evidence")
        },
        "appliedOverlays": list(recipe.chain),
        "profiles": profiles,
    }


def _refused(refusals: Sequence[Refusal]) -> list[dict[str, str]]:
    """The deployers `aicr-catalog bundle` refuses with default flags (the site publishes no
    download for them): the refusal's rule and message, and the command that renders it."""
    return [
        {"deployer": x.deployer, "rule": x.rule, "message": x.message, "command": x.command}
        for x in refusals
    ]


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def profiles_index(site: SiteData) -> dict[str, Any]:
    return {
        **_header(site, "ScaleProfileIndex"),
        "profiles": [
            {
                "name": p.name,
                "version": p.version,
                "description": p.description,
                "nodes": {"min": p.nodes_min, "max": p.nodes_max},
                "appliesTo": [c.to_json() for c in p.applies_to],
                "ownedValues": [
                    {
                        "component": v.component,
                        "path": v.path,
                        "value": _plain(v.value),
                        "rationale": v.rationale,
                        "status": v.status,
                    }
                    for v in p.owned_values
                ],
                "prerequisites": [_plain(x) for x in p.prerequisites],
                "ladder": list(p.ladder),
            }
            for p in site.profiles
        ],
    }


def lanes_index(site: SiteData) -> dict[str, Any]:
    return {
        **_header(site, "LaneIndex"),
        "lanes": [
            {
                "name": lane.name,
                "nodes": lane.nodes,
                "gpus": lane.gpus,
                "criteriaVersion": lane.criteria_version or None,
                "criteria": _plain(lane.raw),
            }
            for lane in site.lanes
        ],
    }


@dataclass(frozen=True, slots=True)
class Reuse:
    """What lets a build with a cache publish the files made from one recipe's data as
    `Derived` (`generator.site.publish`: linked from the previous build when their source is
    the same, not made): `source(kind, recipe, runs)`, a digest naming everything such a file
    is made from (the build's evidence-independent inputs, the site-wide facts it shows, the
    recipe's runs), and `sums`, the sha256 of each file published so far (the publisher's), which
    the evidence index takes its recipes' sums from."""

    source: Callable[[str, str, Sequence[RunFacts]], str]
    sums: Mapping[str, str]
    # `texts(kind, [(source, make), ...])`: each part of a site-wide file (`make()`, a value
    # that pickles) kept by an earlier build under the same kind and source, else made; None:
    # every part made
    texts: Callable[[str, Sequence[tuple[str, Callable[[], Any]]]], list[Any]] | None = None


class _Records(dict[str, str]):
    """Evidence records by run id, each written (`record_text`, with the API build's `memo`:
    `_text(run_json(run))`) the first time it is asked for: one recipe name's runs (`recipe_files` makes one per name and lets go of it once
    the name's files are made, so the API never holds more than one recipe's records). The
    runs are read when a record is first asked for (a recipe's views are loaded only when one
    of its files is made: `facts`)."""

    def __init__(self, runs: Sequence[EvidenceView], memo: RecordMemo | None = None) -> None:
        super().__init__()
        self._runs = runs
        self._memo = RecordMemo() if memo is None else memo
        self._by_id: dict[str, EvidenceView] | None = None

    @property
    def runs(self) -> dict[str, EvidenceView]:
        if self._by_id is None:
            self._by_id = {e.id: e for e in self._runs}
        return self._by_id

    def __missing__(self, key: str) -> str:
        record = self[key] = record_text(self.runs[key], self._memo)
        return record

    def __contains__(self, key: object) -> bool:
        return key in self.runs


def evidence_groups(site: SiteData) -> dict[str, Sequence[EvidenceView]]:
    """The runs of each recipe name with evidence (current leaves and not), in site order
    (each name's views read when first used: `evidence.view.by_recipe`)."""
    return by_recipe(site.evidence)


def _counts(runs: Sequence[RunFacts]) -> dict[str, int]:
    counts = {s: sum(1 for e in runs if e.state == s) for s in ("verified", "stale", "rejected")}
    return {"runs": len(runs), **counts, "counted": sum(1 for e in runs if e.counted)}


def recipe_evidence(
    site: SiteData,
    name: str,
    runs: Sequence[EvidenceView],
    known: bool,
    records: Mapping[str, dict[str, Any]],
) -> dict[str, Any]:
    """api/v1/evidence/<recipe>.json: the runs of one recipe name, each the record every JSON
    output shows (`run_json`). `known`: the name is a current leaf recipe; when not, its runs
    are shown, never counted."""
    return {**_evidence_head(site, name, runs, known), "evidence": [records[e.id] for e in runs]}


def _evidence_head(
    site: SiteData, name: str, runs: Sequence[EvidenceView], known: bool
) -> dict[str, Any]:
    """`recipe_evidence` but its runs."""
    rows = facts(runs)
    return {
        **_header(site, "RecipeEvidence"),
        "recipe": name,
        "known": known,
        "url": f"evidence/{slug(name)}.html",
        "sample": any(e.sample for e in rows),
        **_counts(rows),
    }


def recipe_files(
    site: SiteData, reuse: Reuse | None = None
) -> Iterator[tuple[str, bytes | Derived]]:
    """The files made from one recipe's data, name by name: each recipe name's evidence file
    (api/v1/evidence/<recipe>.json) and, for a current leaf recipe, its detail
    (api/v1/recipes/<recipe>.json); then the details of the recipes without runs, then the
    evidence index (api/v1/evidence/index.json: per recipe name its file, page, counts and the
    file's sha256). No file grows with the catalog: a recipe's file holds its own runs, the
    index one short entry per recipe name.

    A name's evidence records (`run_json`, shared by its two files) are made and written
    once (spliced into both files, `dumps_spliced`) and let go of as soon as its files are
    made: the API holds one recipe's records at a time, not every run's. The reference:
    `recipe_evidence` and `recipe_detail` made whole and `dumps` (the files are held equal to
    it in tests/test_api_records_held.py); before, every record was made first and held until
    the last detail.

    With `reuse`, each of these files is `Derived` from its runs, and the index takes its
    sha256 from the sums of what was published (each file is published before the index is
    made)."""
    known = {r.name: r for r in site.recipes}
    index_path = apifiles.EVIDENCE_INDEX.path()
    entries: list[dict[str, Any]] = []
    kept: list[tuple[str, Callable[[], _Entry]]] = []  # with `reuse.texts`: the entries' parts
    paths = {index_path: "the index"}  # a recipe named "index" must not replace it
    groups = evidence_groups(site)
    memo = RecordMemo()  # the pieces of records written, shared by every name's records
    for name, runs in groups.items():
        path = apifiles.RECIPE_EVIDENCE.path(recipe=slug(name))
        if path in paths:  # never let one recipe's file silently replace another's
            raise SiteError(f"the evidence of {name!r} and {paths[path]!r} would both be {path}")
        paths[path] = name
        records = _Records(runs, memo)
        sha = yield from _evidence_file(site, name, runs, name in known, records, reuse, path)
        if reuse is not None and reuse.texts is not None:  # its sha256: that of its source
            source = reuse.source(f"api-evidence:{name in known}", name, runs)
            kept.append((source, functools.partial(_entry, name, name in known, path, runs, sha)))
        else:
            entries.append(_index_entry(name, name in known, path, runs, sha))
        if name in known:
            yield _detail_file(known[name], site, records, reuse)
        records.clear()  # its files are made (the consumer takes each file as it is given)
    for r in site.recipes:
        if r.name not in groups:
            yield _detail_file(r, site, _Records(()), reuse)
    if reuse is not None and reuse.texts is not None:
        yield index_path, _spliced_index(site, reuse.texts("api-evidence-entry", kept))
        return
    index = {
        **_header(site, "RecipeEvidenceIndex"),
        "sample": any(e.sample for e in facts(site.evidence)),
        **_counts(facts(site.evidence)),
        "recipes": entries,
    }
    yield index_path, dumps(index)


# an evidence index entry as kept: its text, its runs' counts and whether one is a sample
_Entry = tuple[str, tuple[int, ...], bool]
_COUNTED = ("runs", "verified", "stale", "rejected", "counted")  # `_counts`' keys, in order


def _entry(name: str, known: bool, path: str, runs: Sequence[EvidenceView], sha: str) -> _Entry:
    entry = _index_entry(name, known, path, runs, sha)
    return _text(entry), tuple(entry[k] for k in _COUNTED), entry["sample"]


def _spliced_index(site: SiteData, entries: Sequence[_Entry]) -> bytes:
    """The evidence index (as `recipe_files` makes it whole) from its entries as kept: every
    run is in one recipe name's entry, so the site's counts are the sums of theirs."""
    totals = [sum(counts[i] for _, counts, _ in entries) for i in range(len(_COUNTED))]
    head = {
        **_header(site, "RecipeEvidenceIndex"),
        "sample": any(sample for *_, sample in entries),
        **dict(zip(_COUNTED, totals, strict=True)),
    }
    return dumps_spliced(head, "recipes", [text for text, *_ in entries])


def _evidence_file(
    site: SiteData,
    name: str,
    runs: Sequence[EvidenceView],
    known: bool,
    records: Mapping[str, str],
    reuse: Reuse | None,
    path: str,
) -> Generator[tuple[str, bytes | Derived], None, str]:
    """Yields one recipe name's evidence file (`recipe_evidence`, its records spliced in);
    returns its sha256 (as published)."""

    def make() -> bytes:
        head = _evidence_head(site, name, runs, known)
        return dumps_spliced(head, "evidence", [records[e.id] for e in runs])

    if reuse is None:
        data = make()
        yield path, data
        return hashlib.sha256(data).hexdigest()
    yield path, Derived(reuse.source(f"api-evidence:{known}", name, facts(runs)), make)
    return _published(reuse, path)


def _detail_file(
    r: RecipeView, site: SiteData, records: Mapping[str, str], reuse: Reuse | None
) -> tuple[str, bytes | Derived]:
    """One recipe's detail file (api/v1/recipes/<recipe>.json: `recipe_detail`, its records
    spliced in)."""

    def make() -> bytes:
        texts = [records[e.id] if e.id in records else record_text_reference(e) for e in r.evidence]
        return dumps_spliced(_detail_head(r, site), "evidence", texts)

    rel = apifiles.RECIPE.path(name=slug(r.name))
    if reuse is None:
        return rel, make()
    return rel, Derived(reuse.source("api-detail", r.name, facts(r.evidence)), make)


def _index_entry(
    name: str, known: bool, path: str, runs: Sequence[EvidenceView], sha: str
) -> dict[str, Any]:
    rows = facts(runs)
    return {
        "recipe": name,
        "known": known,
        "path": path,
        "url": f"evidence/{slug(name)}.html",
        "sample": any(e.sample for e in rows),
        **_counts(rows),
        "sha256": sha,
    }


def _published(reuse: Reuse, path: str) -> str:
    """The sha256 of `path` as published (its consumer publishes each file as it is given)."""
    sha = reuse.sums.get(path)
    if sha is None:
        raise SiteError(f"{path}: not published before the evidence index that lists it")
    return sha


def iter_api_files(
    site: SiteData, reuse: Reuse | None = None
) -> Iterator[tuple[str, bytes | Derived]]:
    """Every file of the JSON API as (site-relative path, bytes), one at a time.

    With `reuse` (a build with a cache), the files made from one recipe's data (its detail, its
    evidence file) come as `Derived`, named by what they are made from, and must be published
    (into `reuse.sums`) in the order given. Every path is one of the declared files
    (`apifiles.API_FILES`, which `aicr-catalog compat` holds to its baseline); an undeclared one
    is refused (SiteError).
    """
    for rel, data in _api_files(site, reuse):
        apifiles.declared(rel)
        yield rel, data


def _api_files(site: SiteData, reuse: Reuse | None) -> Iterator[tuple[str, bytes | Derived]]:
    yield apifiles.RECIPES.path(), _recipes_file(site, reuse)
    yield from recipe_files(site, reuse)
    yield apifiles.LANES.path(), dumps(lanes_index(site))
    yield apifiles.PROFILES.path(), dumps(profiles_index(site))
    if site.timeline:  # built with --timeline: every qualification change, newest first
        yield (
            apifiles.TIMELINE.path(),
            dumps({**_header(site, "Timeline"), **timeline_json(site.timeline)}),
        )
    for name, data in safeio.files(SCHEMAS, where="the schemas", suffixes=(".schema.json",)):
        if "/" not in name:
            yield apifiles.SCHEMA_COPY.path(schema=name), data


def api_files(site: SiteData) -> dict[str, bytes]:
    """Every file of the JSON API, site-relative path -> bytes."""
    return {rel: data for rel, data in iter_api_files(site) if isinstance(data, bytes)}
