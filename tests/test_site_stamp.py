"""Stamped evidence pages (`generator.site.stamping`) are byte for byte the pages mkdocs builds.

The reference is the engine building every evidence page itself (`pages.STAMP_EVIDENCE` off).
Whole sites are built both ways and every file compared (the pages with their heading, title,
skip link and canonical link, the search index, the sitemap and its gzip, 404.html), with and
without a site URL; and evidence pages of hypothesis-made recipe names (Markdown and HTML
punctuation, entities, spaces, the stamp's own names) are built by mkdocs and stamped, and
compared page by page. A name whose heading does not fit the stamp is built by mkdocs (by
rule, `pages.evidence_stamp`), never stamped differently.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generator.bench.synth import SynthOptions, synthesize
from generator.site import build, islands, pages, stamping
from generator.site.build import BuildOptions, build_site
from tests.conftest import CATALOG, REPO

EPOCH = 1767225600


def _files(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _build(
    catalog: Path, evidence: Path, trust: str, out: Path, stamp: bool, url: str, cached: bool
) -> dict[str, bytes]:
    old = pages.STAMP_EVIDENCE, pages.STAMP_RECIPES
    pages.STAMP_EVIDENCE = pages.STAMP_RECIPES = stamp
    try:
        build_site(
            BuildOptions(
                catalog=catalog,
                evidence=evidence,
                out=out,
                trust_root=trust,
                source_date_epoch=EPOCH,
                bundles=False,
                site_url=url,
                cache_dir=out.parent / ".cache" / "bundles" if cached else None,
            )
        )
    finally:
        pages.STAMP_EVIDENCE, pages.STAMP_RECIPES = old
    return _files(out)


def _same(stamped: dict[str, bytes], engine: dict[str, bytes]) -> None:
    assert sorted(stamped) == sorted(engine)
    differ = [rel for rel in engine if stamped[rel] != engine[rel]]
    assert not differ, differ[:10]


@pytest.fixture(scope="module")
def synth(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("stamp-synth")
    synthesize(SynthOptions(5, 40, seed=5, jobs=1), root)
    return root


@pytest.mark.parametrize("url", ["https://example.org/catalog/", ""])
def test_a_synthetic_site_is_the_same_stamped_or_built_page_by_page(
    synth: Path, tmp_path: Path, url: str
) -> None:
    trust = str(synth / "trust" / "synth-root.json")
    args = (synth / "catalog", synth / "evidence", trust)
    engine = _build(*args, tmp_path / "engine" / "site", False, url, False)
    stamped = _build(*args, tmp_path / "stamped" / "site", True, url, False)
    _same(stamped, engine)
    evidence = [r for r in engine if r.startswith("evidence/") and r.count("/") == 1]
    assert len(evidence) > 5  # every recipe's and the index
    assert not any(islands.STAMP_NAME in rel for rel in stamped)
    if url:
        sitemap = engine["sitemap.xml"].decode()
        assert all(f"<loc>{url}{rel}</loc>" in sitemap for rel in evidence)
        assert "sitemap.xml.gz" in stamped
    # a cached build, then one again from its cache: the same bytes
    assert _build(*args, tmp_path / "cached" / "site", True, url, True) == engine
    assert _build(*args, tmp_path / "cached" / "site", True, url, True) == engine


def test_the_sample_site_is_the_same_stamped_or_built_page_by_page(tmp_path: Path) -> None:
    if not any((REPO / "evidence").rglob("*.sigstore.json")):
        pytest.skip("the repository has no sample evidence")
    shutil.copytree(CATALOG, tmp_path / "catalog")
    shutil.copytree(REPO / "evidence", tmp_path / "evidence")
    args = (tmp_path / "catalog", tmp_path / "evidence", "demo")
    url = "https://example.org/"
    engine = _build(*args, tmp_path / "engine" / "site", False, url, False)
    _same(_build(*args, tmp_path / "stamped" / "site", True, url, False), engine)


def test_the_converter_is_configured_as_mkdocs_configures_its_own(tmp_path: Path) -> None:
    from mkdocs.config import load_config

    config = build.mkdocs_config(REPO / "mkdocs.yml", tmp_path / "docs", tmp_path / "site")
    (tmp_path / "docs").mkdir()
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump(config))
    loaded = load_config(config_file=str(tmp_path / "mkdocs.yml"))
    assert tuple(loaded["markdown_extensions"]) == stamping.EXTENSIONS
    assert {k: v for k, v in loaded["mdx_configs"].items() if v} == stamping.CONFIGS


# --- hypothesis: names whose heading and title need escaping -------------------------------

TRICKY = [
    "a & b",
    "<b>x</b>",
    "x_y_z",
    "*emph* **strong**",
    "`code`",
    "[link](http://example.org)",
    "<http://example.org>",
    "a  b",
    "# x",
    "x {#custom}",
    "back\\slash",
    "&amp; &lt; &#39;",
    "quote \" and ' apostrophe",
    "Evidence",
    "AICR-STAMP",
    "aicr-stamp-title",
    "Ünïcödé 名前",
    "a | b | c",
    "----",
    "1. first",
]
NAMES = st.lists(
    st.one_of(
        st.sampled_from(TRICKY),
        st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=24),
    ),
    min_size=1,
    max_size=10,
    unique_by=pages.slug,
)


def _engine_pages(root: Path, names: list[str]) -> dict[str, Any]:
    """The evidence pages of `names` and the stamp page, built by mkdocs in one site."""
    site = SimpleNamespace(trust_root="sha256:test")
    docs: dict[str, str] = {"index.md": "# Home\n"}
    for name in names:
        rel = f"evidence/{pages.slug(name)}.md"
        docs[rel] = islands.lift(pages.evidence_page(name, (), site, False))[0]  # type: ignore[arg-type]
    docs[pages.EVIDENCE_STAMP] = islands.lift(pages.evidence_stamp_page(site))[0]  # type: ignore[arg-type]
    shutil.rmtree(root, ignore_errors=True)
    _run_engine(root, docs, "https://example.org/x/")
    return {"docs": docs, "site": root / "site"}


def _run_engine(root: Path, docs: dict[str, str], site_url: str) -> None:
    """mkdocs with the site's configuration (its nav the home page) over `docs` into
    `root`/site."""
    config = build.mkdocs_config(REPO / "mkdocs.yml", root / "docs", root / "site", site_url)
    config["nav"] = ["index.md"]
    for rel, text in docs.items():
        (root / "docs" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "docs" / rel).write_text(text)
    (root / "mkdocs.yml").write_text(yaml.safe_dump(config))
    build.run_mkdocs(root / "mkdocs.yml", EPOCH)


@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(names=NAMES)
def test_evidence_pages_of_any_name_are_stamped_as_mkdocs_builds_them(
    tmp_path: Path, names: list[str]
) -> None:
    built = _engine_pages(tmp_path / "h", names)
    stamp_html = (built["site"] / "evidence" / f"{islands.STAMP_NAME}.html").read_text()
    own = pages.stamp_fill(
        built["docs"][pages.EVIDENCE_STAMP], pages.EVIDENCE_STAMP, pages.EVIDENCE_STAMP
    )
    for name in names:
        rel = f"evidence/{pages.slug(name)}.md"
        html = rel.removesuffix(".md") + ".html"
        if not pages.evidence_stamp(name):
            continue  # the engine builds it: by rule, counted by the build
        fill = pages.stamp_fill(built["docs"][rel], rel, pages.EVIDENCE_STAMP)
        reference = (built["site"] / html).read_text()
        assert islands.stamp(stamp_html, fill, html, own) == reference, name


def test_tricky_names_are_stamped_or_built_by_rule(tmp_path: Path) -> None:
    """Every tricky name: stamped exactly, or (a heading that is not one level-1 heading
    without a link) built by the engine; the rule stamps most of them."""
    built = _engine_pages(tmp_path / "t", TRICKY)
    stamp_html = (built["site"] / "evidence" / f"{islands.STAMP_NAME}.html").read_text()
    own = pages.stamp_fill(
        built["docs"][pages.EVIDENCE_STAMP], pages.EVIDENCE_STAMP, pages.EVIDENCE_STAMP
    )
    stamped = 0
    for name in TRICKY:
        rel = f"evidence/{pages.slug(name)}.md"
        html = rel.removesuffix(".md") + ".html"
        if pages.evidence_stamp(name):
            fill = pages.stamp_fill(built["docs"][rel], rel, pages.EVIDENCE_STAMP)
            assert islands.stamp(stamp_html, fill, html, own) == (built["site"] / html).read_text()
            stamped += 1
    assert stamped >= len(TRICKY) - 2


def test_a_heading_that_does_not_fit_is_built_by_the_engine_counted(
    synth: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The rule's other side: a name whose heading does not fit (here made so for one recipe)
    has its evidence page built by mkdocs one by one, counted in the log; the site is the same."""
    import logging

    fits = stamping.heading_fits
    chosen = sorted(p.name for p in (synth / "evidence").iterdir() if p.is_dir())[0]
    monkeypatch.setattr(
        stamping, "heading_fits", lambda line: chosen not in line.replace("\\", "") and fits(line)
    )
    monkeypatch.setattr(pages, "_shape", lambda name: name)  # every name checked itself
    assert stamping.heading_fits("# a\n\n## b\n") is False
    assert fits("# a\n\n## b\n") is False and fits("# [a](b.md)\n") is False
    trust = str(synth / "trust" / "synth-root.json")
    args = (synth / "catalog", synth / "evidence", trust)
    caplog.set_level(logging.INFO, logger="aicr_catalog.build")
    stamped = _build(*args, tmp_path / "stamped" / "site", True, "https://example.org/", False)
    assert "1 recipe or evidence page(s) built by mkdocs one by one" in caplog.text
    _same(
        stamped, _build(*args, tmp_path / "engine" / "site", False, "https://example.org/", False)
    )


# --- hypothesis: recipe pages whose headings need escaping -----------------------------------


def _recipe_skeleton(name: str, chosen: str | None, template: str) -> str:
    """A page of `pages/recipe.md.j2`'s shape: its front matter, its name's heading, raw HTML
    (a link and an h3 among it), the configuration profile's heading and text, data blocks."""
    from markupsafe import escape

    from generator.site.jinja import front_matter_title, md_inline

    text = (
        f"---\ntitle: {front_matter_title(name)}\ntemplate: {template}\nhide:\n"
        f"  - navigation\n---\n\n# {md_inline(name)}\n\n<!--aicr:island 0-->\n\n"
        f'<div class="aicr-facts"><dl><div><dt>os</dt><dd>{escape(name)}</dd></div></dl></div>\n\n'
    )
    if chosen is not None:
        text += (
            f"## Configuration profile `{escape(chosen)}`\n\nThis recipe declares "
            f"`{escape(chosen)}`. {md_inline(name)}\n\n"
        )
    return text + (
        "## Scale profiles and status\n\n<!--aicr:island 1-->\n\n## Owned values by scale profile\n\n"
        f'<h3 id="owned-standard">standard {escape(name)}</h3>\n'
        '<p>Status (<a href="../legend.html#term-proposed">proposed</a>).</p>\n\n## Reproduce\n'
    )


RECIPES = st.lists(
    st.tuples(
        st.one_of(st.sampled_from(TRICKY), st.text(min_size=1, max_size=16).filter(str.strip)),
        st.one_of(st.none(), st.sampled_from(["gpu-a", "a&b", "x<y>", "`tick`", "under_score"])),
        st.sampled_from(sorted(pages.RECIPE_STAMPS)),
    ),
    min_size=1,
    max_size=8,
    unique_by=lambda case: pages.slug(case[0]),
)


@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(cases=RECIPES)
def test_recipe_pages_of_any_name_are_stamped_as_mkdocs_builds_them(
    tmp_path: Path, cases: list[tuple[str, str | None, str]]
) -> None:
    """Each page: its HTML stamped from its layout's stamp page is the engine's, and its
    search entries (`stamping.search_entries`) are those the engine's index holds for it, in
    order; a page whose headings do not fit is left to the engine (`pages.recipe_stamp`)."""
    import json

    root = tmp_path / "r"
    shutil.rmtree(root, ignore_errors=True)
    docs = {"index.md": "# Home\n", **pages.recipe_stamp_pages()}
    for name, chosen, template in cases:
        docs[f"recipes/{pages.slug(name)}.md"] = _recipe_skeleton(name, chosen, template)
    _run_engine(root, docs, "https://x.org/")
    site = root / "site"
    index = json.loads((site / "search" / "search_index.json").read_text())["docs"]
    for name, chosen, template in cases:
        rel = f"recipes/{pages.slug(name)}.md"
        html = rel.removesuffix(".md") + ".html"
        body = f"# {md_inline_(name)}\n\n## Scale profiles and status\n"
        if chosen is not None:
            body += f"\n## Configuration profile `{escape_(chosen)}`\n"
        if not pages.stampable(name) or not stamping.headings_fit(body):
            continue  # the engine builds it: by rule, counted by the build
        fill = pages.stamp_fill(docs[rel], rel, pages.RECIPE_STAMP)
        stamp = pages.RECIPE_STAMPS[template]
        own = pages.stamp_fill(docs[stamp], stamp, stamp)
        stamp_html = (site / stamp.removesuffix(".md")).with_suffix(".html").read_text()
        assert islands.stamp(stamp_html, fill, html, own) == (site / html).read_text(), name
        theirs = [e for e in index if e["location"].split("#")[0] == html]
        ours = stamping.search_entries(docs[rel], html)
        assert (json.loads(ours) if ours else []) == theirs, name


def md_inline_(value: str) -> str:
    from generator.site.jinja import md_inline

    return str(md_inline(value))


def escape_(value: str) -> str:
    from markupsafe import escape

    return str(escape(value))


@settings(max_examples=60, deadline=None)
@given(data=st.binary(max_size=20000), mtime=st.integers(min_value=0, max_value=2**32 - 1))
def test_the_sitemap_gzip_is_the_engines(data: bytes, mtime: int) -> None:
    """`build._gzip_like` composes, from zlib, the bytes `gzip.GzipFile` writes for the engine's
    sitemap (its name in the header, the engine's time, level 9)."""
    import gzip
    import io

    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, filename="sitemap.xml.gz", mode="wb", mtime=mtime) as gz:
        gz.write(data)
    engine = buf.getvalue()
    assert build._gzip_like(engine, data) == engine
