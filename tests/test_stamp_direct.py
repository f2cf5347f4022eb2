"""`stamping.direct` (a page body written as HTML directly) against its reference,
python-markdown configured as mkdocs configures it (`stamping.convert_reference`): the same
HTML, table of contents and link flag for every recipe and evidence page of a synthetic catalog
and of the repository's sample site, and for hypothesis-made bodies of the shapes it knows
(headings, island markers, raw HTML blocks with hostile text) and near them (unescaped text,
stray spaces and tabs, single line breaks, unbalanced tags, inline Markdown), where it either
writes the reference's bytes or leaves the body to the reference (None)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from generator.bench.synth import SynthOptions, synthesize
from generator.core.text import html_text
from generator.site import islands, pages, stamping
from generator.site.build import BuildOptions, gather
from generator.site.jinja import md_inline
from generator.site.model import SiteData
from tests.conftest import CATALOG, REPO


def _same_or_left(body: str) -> bool:
    """Whether `direct` wrote the reference's conversion of `body` (True) or left it (False);
    a difference fails."""
    made = stamping.direct(body)
    if made is None:
        return False
    assert made == stamping.convert_reference(body), body
    return True


def _bodies(site: SiteData) -> list[str]:
    """The Markdown body of every recipe page and recipe name's evidence page of `site`; each
    recipe page's search entries are checked against the plugin's on the way."""
    out = []
    for recipe in site.recipes:
        for text in (
            pages.recipe_page(recipe, site),
            pages.evidence_page(recipe.name, recipe.evidence, site, True),
        ):
            skeleton = islands.lift(text)[0]
            out.append(stamping.split(skeleton)[0])
            _same_entries(skeleton)
    return out


def _same_entries(skeleton: str, url: str = "recipes/x.html") -> bool:
    """Whether the search entries were made directly (True) or by the plugin (False); a
    difference from the plugin's fails."""
    body, fields = stamping.split(skeleton)
    made = stamping._search_entries.__wrapped__(skeleton, url)
    assert made == stamping.search_entries_reference(skeleton, url), skeleton
    return stamping._sections(stamping.convert(body)[0], url, fields) is not None


def _gather(root: Path, catalog: Path, evidence: Path, trust: str) -> SiteData:
    options = BuildOptions(
        catalog=catalog, evidence=evidence, out=root / "site", trust_root=trust, bundles=False
    )
    return gather(options, 1764800000)


def test_every_page_of_a_synthetic_catalog_is_written_as_the_reference(tmp_path: Path) -> None:
    synthesize(SynthOptions(6, 60, seed=11, jobs=1), tmp_path)
    site = _gather(
        tmp_path,
        tmp_path / "catalog",
        tmp_path / "evidence",
        str(tmp_path / "trust" / "synth-root.json"),
    )
    bodies = _bodies(site)
    assert len(bodies) >= 12
    assert all(_same_or_left(body) for body in bodies)  # and none left to the reference
    assert all(_same_entries(FRONT + body) for body in bodies[::2])  # the recipe pages'


def test_every_page_of_the_sample_site_is_written_as_the_reference_or_left(
    tmp_path: Path,
) -> None:
    if not any((REPO / "evidence").rglob("*.sigstore.json")):
        pytest.skip("the repository has no sample evidence")
    shutil.copytree(CATALOG, tmp_path / "catalog")
    shutil.copytree(REPO / "evidence", tmp_path / "evidence")
    site = _gather(tmp_path, tmp_path / "catalog", tmp_path / "evidence", "demo")
    written = [_same_or_left(body) for body in _bodies(site)]
    assert sum(written) >= len(written) // 2  # most pages are of the shapes it knows


# --- hypothesis: bodies of the known shapes and near them ------------------------------------

TEXT = st.text(
    alphabet=st.one_of(
        st.sampled_from("abcXYZ019 -._&<>\"'`*#[](){}!|~\\:;/="),
        st.characters(blacklist_categories=("Cs",)),
    ),
    max_size=12,
)
CLEAN = st.text(alphabet=st.sampled_from("abcXYZ019 -._&<>\"'`*#[](){}!|~:;/=é名"), max_size=12)
FRONT = '---\ntitle: "a <b> &amp; c"\ntemplate: main.html\nhide:\n  - navigation\n---\n\n'
NAME = st.lists(
    st.text(alphabet=st.sampled_from("abcXYZ019-._"), min_size=1, max_size=6),
    min_size=1,
    max_size=3,
).map(" ".join)


def _heading(level: int, name: str) -> str:
    return f"{'#' * level} {md_inline(name)}"


def _raw_blocks(text: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """Raw HTML blocks as `pages/recipe.md.j2` writes them, of drawn (escaped) text."""
    e = text.map(lambda t: str(html_text(t)))
    return st.one_of(
        st.builds(
            lambda a, b: (
                '<div class="aicr-facts">\n<dl class="aicr-criteria">\n'
                f'<div><dt>{a}<span class="aicr-vh">: </span></dt><dd>{b}</dd></div>\n'
                "</dl>\n</div>"
            ),
            e,
            e,
        ),
        st.builds(
            lambda a, b: (
                f'<ol class="aicr-chain">\n<li><code>{a}</code></li>\n</ol>'
                + (f"\n<p>Mixins: <code>{b}</code></p>" if b else "")
            ),
            e,
            e,
        ),
        st.builds(
            lambda a, b: (
                f'<h3 id="owned-{a}">{a} {b}</h3>\n<p>Each value of {b} '
                '(<a href="../legend.html#term-proposed">proposed vs qualified</a>).</p>'
            ),
            e,
            e,
        ),
        st.builds(lambda a: f"<p>No bundles were rendered in this build. {a}</p>", e),
        # shapes the search entries take apart: kept elements empty or nested, headings
        st.builds(lambda a: f"<p>{a}</p>\n<ol>\n<li>{a}</li>\n<li><code>{a}</code></li>\n</ol>", e),
        st.builds(lambda a: f"<div><p> </p><ul><li>\n</li></ul>{a}</div>", e),
        st.builds(lambda a: f'<h3 id="{a}">{a}</h3>', e),
        st.builds(lambda a: f"<h3>{a}</h3>\n<p><span>{a}</span></p>", e),
        st.builds(lambda a: f"<div data-search-exclude><p>{a}</p></div>", e),
        st.builds(lambda a: f'<div class="linenodiv"><p>{a}</p></div>', e),
        st.builds(lambda a: f'<div><h3 id="n">{a}</h3></div>', e),
    )


def _body(text: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    block = st.one_of(
        NAME.map(lambda n: _heading(2, n)),
        st.integers(0, 20).map(lambda n: f"<!--aicr:island {n}-->"),
        _raw_blocks(text),
    )
    return st.builds(
        lambda head, blocks, gaps: (
            head + "".join(g + b for g, b in zip(gaps, blocks, strict=False)) + "\n"
        ),
        NAME.map(lambda n: _heading(1, n)),
        st.lists(block, max_size=10),
        st.lists(st.sampled_from(["\n\n", "\n\n\n", "\n\n\n\n"]), min_size=10, max_size=10),
    )


@settings(max_examples=300, deadline=None)
@given(body=_body(CLEAN))
def test_bodies_of_the_known_shapes_are_written_as_the_reference(body: str) -> None:
    assume("~~~" not in body and "```" not in body)  # a fence anywhere: left, by rule
    assert _same_or_left(body)
    _same_entries(FRONT + body)


@settings(max_examples=300, deadline=None)
@given(
    body=_body(TEXT),
    at=st.integers(0, 10_000),
    insert=st.sampled_from(
        ["", " ", "\t", "\n", "\r", "\x02", "<", "&", "</p>", "<br>", "*", "`", "```\n", "{: #x}"]
    ),
)
def test_bodies_near_the_known_shapes_are_written_as_the_reference_or_left(
    body: str, at: int, insert: str
) -> None:
    at %= len(body) + 1
    _same_or_left(body[:at] + insert + body[at:])
    _same_entries(FRONT + body[:at] + insert + body[at:])


@pytest.mark.parametrize(
    "body",
    [
        "# a\n\n<p>x</p> tail\n",  # text after an element's end tag
        "# a\n\n<p>x</p>\ntext\n",
        "# a\n\n<p>x\n\ny</p>\n",  # a blank line inside an element
        "# a\n\n<span>x</span>\n",  # not a block-level tag
        "# a\n\n<p>x</div>\n",
        "# a\n\n<p>&#39 x</p>\n",  # an incomplete character reference
        "# a\n\n## b\n\n# c\n",  # a second level-1 heading
        "## b\n",
        "# a *b*\n",
        "# a\n    <p>x</p>\n",
        "# a\n\n <p>x</p>\n",
        "# a\n\n<script>x</script>\n",
        "# a\n\n<p>x<br>y</p>\n",
    ],
)
def test_bodies_of_other_shapes_are_left_to_the_reference(body: str) -> None:
    assert stamping.direct(body) is None
    assert stamping.convert(body) == stamping.convert_reference(body)


@pytest.mark.parametrize(
    "body",
    [
        "# a\n\n<!-- x -- > y -->\n\n<p>z</p>\n",  # html.parser ends the comment at "-- >"
        "# a\n\n<!-- x --!> y -->\n\n<p>z</p>\n",
        "# a\n\n<!---->\n\n<p>z</p>\n",
        "# a\n\n<p>a<!-- b -->c</p>\n",
        "# a\n\n<p title='q'>z</p>\n",  # a single-quoted attribute value
        "# a\n\n<p>x &amp y &#39 z &lt;b&gt;</p>\n",
        '# a\n\n<p>x</p>\n\n## b\n\n<h3 id="c&amp;d">e</h3>\n\n<ol>\n<li> </li>\n</ol>\n',
        "\n\n  # a\n\n<p>z</p>\n",  # white space before the first heading
    ],
)
def test_search_entries_of_other_html_are_the_plugins(body: str) -> None:
    _same_entries(FRONT + body)
