"""The JSON API holds one recipe's evidence records at a time (`api.recipe_files`), each
written once and spliced into its two files (`api.dumps_spliced`).

The cold build's peak memory at 1,000 recipes x 20,000 runs was in publishing the API: every
run's record (`run_json`) was made for the per-recipe evidence files and held until the last
recipe's detail. Counted here, not timed: the most records held at once (by live `_Records`),
each record made once, and the files byte-identical to the reference (every record made first,
the detail from its own records), with and without a cache's reuse; the splice equal to the
whole document's `dumps` for drawn documents.
"""

from __future__ import annotations

import hashlib
import weakref
from dataclasses import replace
from typing import Any, ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from generator.evidence.view import EvidenceView
from generator.site import api, apifiles
from generator.site.model import RecipeView, SiteData
from generator.site.pages import slug
from generator.site.publish import Derived
from tests.test_site_pages import site as one_recipe_site

RECIPES = ("alpha", "beta", "gamma", "delta")  # each with runs; "stray" has runs, no recipe


def _runs(name: str, n: int) -> tuple[EvidenceView, ...]:
    base = one_recipe_site().evidence
    return tuple(
        replace(base[i % len(base)], id=f"{name}-{i:04d}", recipe=name, path=f"evidence/{name}/{i}")
        for i in range(n)
    )


def many_site() -> SiteData:
    """Four recipes with 3, 5, 7 and 9 runs, one with none, and runs of an unknown name."""
    s = one_recipe_site()
    (recipe,) = s.recipes
    recipes: list[RecipeView] = []
    runs: list[EvidenceView] = []
    for k, name in enumerate(RECIPES):
        mine = _runs(name, 3 + 2 * k)
        recipes.append(replace(recipe, name=name, evidence=mine))
        runs += mine
    recipes.append(replace(recipe, name="quiet", evidence=()))
    stray = _runs("stray", 4)
    # the site's order interleaves names (as verification finds them)
    everything = [e for pair in zip(runs, stray, strict=False) for e in pair] + runs[len(stray) :]
    return replace(s, recipes=tuple(recipes), evidence=tuple(everything))


class _Counted(api._Records):
    """`_Records` counting every record made and the most held at once by live ones."""

    live: ClassVar[list[weakref.ref[_Counted]]] = []
    made_total = 0
    most = 0

    def __init__(self, runs: Any, memo: api.RecordMemo | None = None) -> None:
        super().__init__(runs, memo)
        _Counted.live.append(weakref.ref(self))

    def __missing__(self, key: str) -> dict[str, Any]:
        record = super().__missing__(key)
        _Counted.made_total += 1
        _Counted.most = max(_Counted.most, sum(len(r() or ()) for r in _Counted.live))
        return record


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> type[_Counted]:
    monkeypatch.setattr(api, "_Records", _Counted)
    _Counted.live = []
    _Counted.made_total = _Counted.most = 0
    return _Counted


def _reference(s: SiteData) -> dict[str, bytes]:
    """The API's files made the reference way: every record made first and held."""
    records = {e.id: api.run_json(e) for e in s.evidence}
    known = {r.name for r in s.recipes}
    out: dict[str, bytes] = {}
    entries = []
    for name, runs in api.evidence_groups(s).items():
        path = apifiles.RECIPE_EVIDENCE.path(recipe=slug(name))
        out[path] = api.dumps(api.recipe_evidence(s, name, runs, name in known, records))
        sha = hashlib.sha256(out[path]).hexdigest()
        entries.append(api._index_entry(name, name in known, path, runs, sha))
    for r in s.recipes:
        out[apifiles.RECIPE.path(name=slug(r.name))] = api.dumps(api.recipe_detail(r, s))
    index = {
        **api._header(s, "RecipeEvidenceIndex"),
        "sample": any(e.sample for e in s.evidence),
        **api._counts(s.evidence),
        "recipes": entries,
    }
    out[apifiles.EVIDENCE_INDEX.path()] = api.dumps(index)
    return out


def test_one_recipes_records_at_a_time_each_made_once(counted: type[_Counted]) -> None:
    s = many_site()
    files = dict(api.recipe_files(s))
    largest = max(len(runs) for runs in api.evidence_groups(s).values())
    assert largest == 9 and len(s.evidence) == 28
    # the reference held all 28 at the end; one name's runs now, each made once
    assert counted.most == largest
    assert counted.made_total == len(s.evidence)
    assert files == _reference(s)
    assert set(files) == set(_reference(s))
    whole = api.api_files(s)
    assert {k: v for k, v in whole.items() if k in files} == files


def test_with_reuse_the_same_files_and_the_same_bound(counted: type[_Counted]) -> None:
    """Derived files, each made by its consumer as it is given (as the publisher does), and
    the index taking each evidence file's sha256 from what was published."""
    s = many_site()
    sums: dict[str, str] = {}
    reuse = api.Reuse(lambda kind, name, runs: f"{kind}:{name}:{len(runs)}", sums)
    files: dict[str, bytes] = {}
    for rel, data in api.recipe_files(s, reuse):
        made = data.make() if isinstance(data, Derived) else data
        assert isinstance(made, bytes)
        files[rel] = made
        sums[rel] = hashlib.sha256(made).hexdigest()
    assert files == _reference(s)
    assert counted.most == 9 and counted.made_total == len(s.evidence)


def test_a_consumer_making_a_file_late_still_gets_its_bytes() -> None:
    """The records are let go of once a name's files are given; a `Derived` made later (no
    publisher does) makes its records again, the same."""
    s = many_site()
    reuse = api.Reuse(lambda kind, name, runs: kind, _AnySums())
    given = list(api.recipe_files(s, reuse))
    late = {
        rel: data.make() if isinstance(data, Derived) else data
        for rel, data in given
        if rel != apifiles.EVIDENCE_INDEX.path()
    }
    reference = _reference(s)
    assert late == {k: v for k, v in reference.items() if k in late}


def test_the_indexes_spliced_from_kept_parts_are_the_same_bytes() -> None:
    """With `Reuse.texts`, each recipe's summary (the recipe index) and entry (the evidence
    index) is kept by its source: a second build makes none of them, a changed recipe's alone
    again, and every file is the reference's."""
    s = many_site()
    kept: dict[tuple[str, str], Any] = {}
    made: list[str] = []

    def texts(kind: str, parts: Any) -> list[Any]:
        for source, make in parts:
            if (kind, source) not in kept:
                made.append(kind)
                kept[kind, source] = make()
        return [kept[kind, source] for source, _ in parts]

    def source(kind: str, name: str, runs: Any) -> str:
        return f"{kind}:{name}:{[e.id for e in runs]}"

    def files(site: SiteData) -> dict[str, bytes]:
        sums: dict[str, str] = {}
        out: dict[str, bytes] = {}
        for rel, data in api.iter_api_files(site, api.Reuse(source, sums, texts)):
            made_ = data.make() if isinstance(data, Derived) else data
            assert isinstance(made_, bytes)
            out[rel] = made_
            sums[rel] = hashlib.sha256(made_).hexdigest()
        return out

    assert files(s) == api.api_files(s)
    names = len(api.evidence_groups(s))
    assert sorted(made) == ["api-evidence-entry"] * names + ["api-summary"] * len(s.recipes)
    made.clear()
    assert files(s) == api.api_files(s) and made == []
    # one run fewer for one recipe: its summary and its entry made again, no other
    (gone,) = [e for e in s.evidence if e.recipe == "beta"][:1]
    beta = next(r for r in s.recipes if r.name == "beta")
    fewer = replace(beta, evidence=tuple(e for e in beta.evidence if e is not gone))
    s2 = replace(
        s,
        recipes=tuple(fewer if r is beta else r for r in s.recipes),
        evidence=tuple(e for e in s.evidence if e is not gone),
    )
    assert files(s2) == api.api_files(s2)
    assert sorted(made) == ["api-evidence-entry", "api-summary"]


class _AnySums(dict[str, str]):
    def get(self, key: str, default: Any = None) -> str:
        return "0" * 64


_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)


@given(
    doc=st.dictionaries(st.text(max_size=12), _json, max_size=6),
    key=st.text(max_size=12),
    items=st.lists(_json, max_size=4),
)
@settings(max_examples=300, deadline=None)
def test_spliced_json_is_the_whole_documents_dumps(
    doc: dict[str, Any], key: str, items: list[Any]
) -> None:
    doc.pop(key, None)
    texts = [api.dumps(x).decode("utf-8")[:-1] for x in items]
    assert api.dumps_spliced(doc, key, texts) == api.dumps({**doc, key: items})


def test_splicing_refuses_a_document_holding_its_key() -> None:
    with pytest.raises(TypeError):
        api.dumps_spliced({"evidence": 1}, "evidence", [])
    with pytest.raises(TypeError):
        api.dumps_spliced({1: 1}, "evidence", [])  # type: ignore[dict-item]
