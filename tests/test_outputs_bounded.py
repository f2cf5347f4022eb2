"""Issue 29: no page and no API file grows with the catalog.

Two synthetic catalogs (generator/bench/synth.py), N and 2N leaf recipes with the same runs per
recipe, are built with the real build (no bundles, no cache). Every page and API file of the
larger build must stay in the size class of the smaller one's largest file of its kind: what
grows with the catalog is the number of files (one per recipe, per run, per page of the evidence
index), never a file. The evidence index is paged at 4 recipe names a page here and the
changelog page (and feed) lists its newest 20 entries and the signers page the newest recipe of
each signer, so both builds exceed the caps.

The two files that are one list of the whole catalog by design (recipes.json, the evidence
index) are held to a byte bound per recipe (PER_RECIPE); the engine's site-wide files are named
in GROWS; everything else is held to the size class, including any file added later.

A page's file is mostly the theme's fixed bytes (navigation, header, scripts: tens of KB at this
size), which hide a list that grows with the catalog. So each page both builds publish is also
compared on its own content (the bytes of its `<article>`, what the page template produced): the
N more recipes may add at most CONTENT_SLACK bytes to it. The site-wide pages whose content is
one row per recipe by design are named in PAGE_PER_RECIPE with a byte bound per added recipe.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from generator.bench.synth import SynthOptions, synthesize
from generator.cli import main
from generator.commands.build import cli_reference
from generator.site import changelog, pages, signers
from generator.site.build import BuildOptions, build_site
from tests.test_page_budget import MAX_CELLS, MAX_ELEMENTS, dom

EPOCH = 1767225600  # 2026-01-01T00:00:00Z
RUNS_PER_RECIPE = 6
SIZES = (8, 16)  # leaf recipes (two scale profiles each)
GROWTH = 1.25  # the largest file at 2N within 25% of the largest at N: the same size class
SLACK = 2_000  # bytes: counts and names in a page's text may take a few more digits
# The two lists that are one entry per recipe by design are held to a byte bound per recipe
# instead of the size class: the bound times 1,000 recipes stays under the API's 5 MB
# (docs/performance.md gives the sizes measured at 1,000 recipes x 20,000 runs).
RECIPE_BYTES = 3_000  # api/v1/recipes.json: a leaf recipe's row (two scale profiles)
ENTRY_BYTES = 500  # api/v1/evidence/index.json: a recipe name's entry
PER_RECIPE = {"api/v1/recipes.json": RECIPE_BYTES, "api/v1/evidence/index.json": ENTRY_BYTES}
API_BYTES = 5_000_000  # no API file over 5 MB (issue 29)
PAGE_BYTES = 1_500_000  # no page over 1.5 MB
HEADER_BYTES = 4_000  # what a list file holds besides its entries (lanes, profiles, notes)

# the engine's site-wide files: the search index (pages, not data) and the sitemap
GROWS = {"search/search_index.json", "sitemap.xml"}
# Site-wide pages whose content is one row per leaf recipe by design: the bytes of content each
# added recipe may add (so 1,000 recipes stay under PAGE_BYTES; docs/performance.md).
PAGE_PER_RECIPE = {
    "index.html": 200,  # the dashboard's list of every recipe (its page without scripts)
    "scale.html": 400,  # the heatmap: a row per recipe x profile pair with evidence
    "components.html": 500,  # each pinned version names the recipes that pin it
}
# what a site-wide page's content may add when the catalog doubles: counts take a digit more,
# a page of the evidence index may hold longer names
CONTENT_SLACK = 500


def _kind(rel: str) -> str:
    """A file's kind: pages and API files of one template or shape are compared together."""
    if rel.startswith("api/v1/"):
        parts = rel.split("/")
        return "/".join(parts[:-1]) + ("/index.json" if parts[-1] == "index.json" else "/*")
    parts = rel.split("/")
    return "/".join(parts[:-1]) + "/*.html"


def content_bytes(page: Path) -> int:
    """The bytes of a page's own content: its `<article>` element (the theme's navigation,
    header and scripts around it are the same whatever the catalog)."""
    text = page.read_bytes()
    start, end = text.find(b"<article"), text.rfind(b"</article>")
    assert 0 <= start < end, f"{page}: no <article>"
    return end - start


def _outputs(site: Path) -> Iterator[tuple[str, int]]:
    for p in sorted(site.rglob("*")):
        rel = p.relative_to(site).as_posix()
        if p.is_file() and (rel.endswith(".html") or rel.startswith("api/v1/")):
            if not rel.startswith("api/v1/schemas/") and rel not in GROWS | PER_RECIPE.keys():
                yield rel, p.stat().st_size


def _contents(site: Path) -> dict[str, int]:
    """Each published page's content bytes (`content_bytes`), by site-relative path."""
    return {p.relative_to(site).as_posix(): content_bytes(p) for p in sorted(site.rglob("*.html"))}


@pytest.fixture(scope="module")
def sites(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    mp = pytest.MonkeyPatch()
    mp.setattr(pages, "INDEX_PAGE_SIZE", 4)
    mp.setattr(changelog, "FEED_ENTRIES", 20)  # the changelog page and feed: the newest 20
    mp.setattr(signers, "NEWEST", 1)  # the recipes listed per signer: the newest one
    mp.setenv("SOURCE_DATE_EPOCH", str(EPOCH))
    built = {}
    try:
        for n in SIZES:
            root = tmp_path_factory.mktemp(f"synth{n}")
            synthesize(SynthOptions(n, n * RUNS_PER_RECIPE, seed=1, jobs=1), root)
            options = BuildOptions(
                catalog=root / "catalog",
                evidence=root / "evidence",
                out=root / "site",
                trust_root=str(root / "trust" / "synth-root.json"),
                source_date_epoch=EPOCH,
                bundles=False,
                jobs=1,
                cli_reference=cli_reference(main),
            )
            build_site(options)
            built[n] = root / "site"
    finally:
        mp.undo()
    return built


def test_no_page_and_no_api_file_grows_with_the_catalog(sites: dict[int, Path]) -> None:
    small, large = (dict(_outputs(sites[n])) for n in SIZES)
    assert len(large) > len(small) * 1.5  # the catalog doubled: its files did
    largest: dict[str, dict[str, tuple[int, str]]] = {}
    for n, files in ((SIZES[0], small), (SIZES[1], large)):
        for rel, size in files.items():
            best = largest.setdefault(_kind(rel), {})
            if size > best.get(str(n), (0, ""))[0]:
                best[str(n)] = (size, rel)
    report = {k: v for k, v in largest.items() if str(SIZES[0]) in v and str(SIZES[1]) in v}
    assert {"evidence/runs/*.html", "evidence/*.html", "evidence/pages/*.html"} <= set(report)
    assert {"api/v1/evidence/*", "api/v1/recipes/*"} <= set(report)
    grown = {
        kind: sizes
        for kind, sizes in report.items()
        if sizes[str(SIZES[1])][0] > GROWTH * sizes[str(SIZES[0])][0]
    }
    assert grown == {}, json.dumps(grown, indent=1)
    # and each file of both builds (the site-wide pages: dashboard, changelog, scale, ...)
    same = {
        rel: (small[rel], large[rel])
        for rel in small.keys() & large.keys()
        if large[rel] > GROWTH * small[rel] + SLACK
    }
    assert same == {}, same


def test_no_site_wide_page_content_grows_with_the_catalog(sites: dict[int, Path]) -> None:
    """Each page both builds publish (the site-wide pages and the first pages of the evidence
    index), compared on its own content (`content_bytes`), where the theme's fixed bytes cannot
    hide a list that grows: at most CONTENT_SLACK more bytes in the larger build, or, for the
    pages of PAGE_PER_RECIPE, at most their bound per added recipe."""
    small, large = (_contents(sites[n]) for n in SIZES)
    recipes = [_entries(sites[n], "api/v1/recipes.json") for n in SIZES]
    assert recipes[1] > recipes[0] > 0
    shared = small.keys() & large.keys()
    assert {"signers.html", "scale.html", "components.html", "index.html"} <= shared
    grown = {
        rel: (small[rel], large[rel])
        for rel in shared
        if rel not in PAGE_PER_RECIPE and large[rel] - small[rel] > CONTENT_SLACK
    }
    assert grown == {}, grown
    added = recipes[1] - recipes[0]
    per = {rel: (large[rel] - small[rel]) / added for rel in PAGE_PER_RECIPE}
    assert {rel: b for rel, b in per.items() if b > PAGE_PER_RECIPE[rel]} == {}, per
    # so at 1,000 recipes each of them stays under the page bound
    assert all(small[rel] + b * 1_000 <= PAGE_BYTES for rel, b in PAGE_PER_RECIPE.items())


def test_content_bytes_is_the_article(tmp_path: Path) -> None:
    page = tmp_path / "p.html"
    page.write_text("<nav>xx</nav><article class='a'>body</article><footer/>", encoding="utf-8")
    assert content_bytes(page) == len("<article class='a'>body")


def _entries(site: Path, rel: str) -> int:
    doc = json.loads((site / rel).read_bytes())
    return len(doc["recipes"])


@pytest.mark.parametrize("rel", sorted(PER_RECIPE))
def test_a_catalog_wide_list_grows_by_a_bounded_entry_per_recipe(
    sites: dict[int, Path], rel: str
) -> None:
    """recipes.json (the dashboard's data) and evidence/index.json are one list of the whole
    catalog: each entry within its bound, and what is not an entry within HEADER_BYTES, both
    on average and at the margin (the bytes the N more recipes of the larger build added)."""
    bound = PER_RECIPE[rel]
    small, large = ((sites[n] / rel).stat().st_size for n in SIZES)
    names = [_entries(sites[n], rel) for n in SIZES]
    assert names[1] > names[0] > 0
    for size, n in ((small, names[0]), (large, names[1])):
        assert size <= HEADER_BYTES + bound * n, (rel, size, n)
    assert (large - small) / (names[1] - names[0]) <= bound, (rel, small, large, names)
    # so at 1,000 recipes the list is under the bound of an API file
    assert HEADER_BYTES + bound * 1_000 <= API_BYTES


def test_no_api_file_and_no_page_is_over_its_bound(sites: dict[int, Path]) -> None:
    """Every file of both builds (the lists included) within the issue's bounds, and the
    retired api/v1/evidence.json is not published (docs/api.md)."""
    for site in sites.values():
        assert not (site / "api/v1/evidence.json").exists()
        over = {
            p.relative_to(site).as_posix(): p.stat().st_size
            for p in site.rglob("*")
            if p.is_file()
            and p.stat().st_size
            > (API_BYTES if p.relative_to(site).as_posix().startswith("api/") else PAGE_BYTES)
            and (p.suffix == ".html" or p.relative_to(site).as_posix().startswith("api/"))
        }
        assert over == {}


def test_the_evidence_index_is_paged_and_every_page_is_linked(sites: dict[int, Path]) -> None:
    for n, site in sites.items():
        index = json.loads((site / "api/v1/evidence/index.json").read_text(encoding="utf-8"))
        names = len(index["recipes"])
        count = -(-names // 4)
        assert count >= 2 and (site / "evidence/index.html").is_file()
        for k in range(2, count + 1):
            page = site / "evidence" / "pages" / f"{k}.html"
            assert page.is_file(), (n, k)
            prev = pages.index_page_url(k - 1).removeprefix("evidence/")
            assert f'href="../../evidence/{prev}" rel="prev"' in page.read_text(encoding="utf-8")
        assert not (site / "evidence" / "pages" / f"{count + 1}.html").exists()
        listed = sum(
            p.read_text(encoding="utf-8").count("<tr><td><a href=")
            for p in [site / "evidence/index.html", *(site / "evidence/pages").glob("*.html")]
        )
        assert listed == names  # every recipe name with evidence on exactly one page


def test_every_page_of_the_larger_catalog_is_within_the_dom_budget(
    sites: dict[int, Path],
) -> None:
    site = sites[SIZES[1]]
    over = {}
    for p in site.rglob("*.html"):
        d = dom(p)
        if d.elements > MAX_ELEMENTS or d.cells > MAX_CELLS:
            over[p.relative_to(site).as_posix()] = d
    assert over == {}
