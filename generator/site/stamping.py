"""What a stamped page puts into its stamp page's built HTML (`islands.Fill`).

Every recipe name's evidence page (`pages/evidence.md.j2`) is the same page but for its title,
its heading and its data block, and every recipe's page (`pages/recipe.md.j2`) but for its
title, its body (headings, raw HTML, data blocks) and its table of contents. The engine builds
one stamp page per layout, never published (`pages.EVIDENCE_STAMP`, `pages.RECIPE_STAMPS`:
main.html and charts.html), and each page is its stamp with its own title, body (the HTML the
engine makes of its Markdown), table of contents (the theme's item, learned from the stamp's
two level-2 headings, once per heading), skip-link anchor and file name put in
(`islands.stamp`), and its data blocks put back (`islands.sink`). The body is made here as
mkdocs makes it (`mkdocs.structure.pages.Page.render`): the front matter split off by mkdocs'
own `meta.get_data`, the rest converted by python-markdown with the extensions and their
configuration mkdocs gives it for the site's mkdocs.yml (`EXTENSIONS`, `CONFIGS`;
tests/test_site_stamp.py holds them to the loaded configuration), the search plugin's
attributes taken out as it takes them out. mkdocs' own tree processors only record anchors
and rewrite Markdown links: a page whose Markdown makes a link or an image is not stamped.
A recipe page's entries of the search index are made by the theme's own `SearchIndex` from
the same body (`search_entries`), and the build puts them into the engine's index and its
pages into the sitemap as the engine writes them (`build.search_index`,
`build.stamped_sitemap`).

A page is stamped only when its headings fit its stamp's layout (`fits`, `fits_recipe`): an
evidence page's table of contents is one level-1 heading and nothing else; a recipe page's is
one level-1 heading over level-2 headings without children. Any other page is built by the
engine one by one (`pages.evidence_stamp`, `pages.recipe_stamp`: counted and reported by the
build). The reference is the engine building every page (`pages.STAMP_EVIDENCE` and
`pages.STAMP_RECIPES` off); tests/test_site_stamp.py builds catalogs both ways and compares
every file byte for byte, and hypothesis-made names page by page.

Measured (CPU; the machine shared, load 3-6): a recipe page's body is converted here in 1.8 ms
(the 200 x 4,000 synthetic catalog's recipe pages, ~2 KB of Markdown each) and its search
entries take ~1 ms more; mkdocs builds a page with a new Markdown instance, the theme's
templates, the search and privacy plugins and a file write. The bench's `pages` + `mkdocs`
stages (`generator.bench.run._measure_pages`, one process each): at 200 x 4,000, 422 -> 25
pages built by mkdocs, 5.25 -> 5.12 CPU-s (median of three interleaved pairs; pages 1.67 ->
2.45, mkdocs 3.58 -> 2.63); at 1,000 x 20,000, 2,030 -> 33 pages, 26.19 -> 22.57 CPU-s
(pages 9.84 -> 14.78, mkdocs 16.35 -> 7.79), the stages' peak 1,603 -> 1,558 MB. A cold
`--no-cache` build at 1,000 x 20,000 (three each, the bench's sampler): 86.1 -> 84.0 CPU-s,
peak 1,740 -> 1,713 MB (medians; the peak's spread is wide: 1,739-2,594 and 1,712-1,939).
"""

from __future__ import annotations

import functools
import re
from typing import Any

from generator.core.errors import SiteError
from generator.core.text import html_unescape, search_text
from generator.site.islands import Fill

# mkdocs' built-in extensions first (`MarkdownExtensions(builtins=...)`), then mkdocs.yml's
EXTENSIONS = ("toc", "tables", "fenced_code", "admonition", "attr_list")
CONFIGS: dict[str, dict[str, Any]] = {"toc": {"permalink": False}}

# material's search plugin takes these out of every page's content once it is indexed
_SEARCH_ATTRIBUTES = re.compile(r"\s?data-search-\w+=\"[^\"]+\"")
# what a recipe page's front matter holds (`pages/recipe.md.j2`): its layout picks the stamp
RECIPE_FIELDS = frozenset({"title", "template", "hide"})


@functools.lru_cache(maxsize=1)
def _markdown() -> Any:
    import markdown  # type: ignore[import-untyped]
    from markdown.treeprocessors import Treeprocessor  # type: ignore[import-untyped]

    class Links(Treeprocessor):  # type: ignore[misc]
        """Whether the Markdown made a link or an image (mkdocs rewrites and checks those;
        raw HTML is not in the tree, as it is not in mkdocs' own tree processors')."""

        found = False

        def run(self, root: Any) -> None:
            Links.found = any(True for _ in root.iter("a")) or any(True for _ in root.iter("img"))

    md = markdown.Markdown(extensions=list(EXTENSIONS), extension_configs=CONFIGS)
    md.treeprocessors.register(Links(md), "aicr-links", 0)
    md.aicr_links = Links
    return md


@functools.cache
def convert(text: str) -> tuple[str, tuple[Any, ...], bool]:
    """A page body as mkdocs converts it: its HTML, its table of contents' tokens and whether
    the Markdown made a link or an image (`convert_reference`), written directly when the body
    is of the few shapes a recipe or evidence page's body is made of (`direct`).

    Kept for the build (`forget`), unbounded: a build converts every stamped recipe page's
    body for its search entries first (`build._KeyedPages.stored_group`), then again for its
    fill, interleaved with the evidence pages' (`build._Assembly.planned`); a bound of 1,024
    pages, met at 1,000 recipes, made that second pass evict each recipe body just before it
    was needed (an LRU cache scanned in order). Measured, the two passes over the 1,000 x
    20,000 synthetic catalog's 2,000 recipe and evidence pages (one process, CPU, three
    interleaved pairs): 4.92/4.79/4.67 -> 2.90/2.92/2.87 s, 2,977 -> 2,002 conversions."""
    made = direct(text)
    return made if made is not None else convert_reference(text)


def convert_reference(text: str) -> tuple[str, tuple[Any, ...], bool]:
    """`convert` by python-markdown itself, configured as mkdocs configures it (the
    reference of `direct`)."""
    md = _markdown()
    md.reset()
    md.aicr_links.found = False
    html = md.convert(text)
    return html, tuple(getattr(md, "toc_tokens", ())), bool(md.aicr_links.found)


# --- a page body written directly -----------------------------------------------------------
#
# A recipe page's body (its data blocks lifted out: `islands.lift`) is headings, island markers
# and raw HTML blocks the template wrote (the criteria, the inheritance chain, the owned values'
# headings and notes), an evidence page's its heading and a marker. python-markdown spends
# ~1.8 ms on such a body, nearly all of it in machinery those shapes never use (the HTML
# block parser, the inline patterns tried on every heading, the tree and its serialiser).
# `direct` writes the same bytes for a body made only of blocks of these shapes, and returns
# None for any other body, which `convert_reference` converts:
#
# - a heading: one line, `#` or `##`, a space, words of ASCII letters and digits and the
#   escaped punctuation `md_inline` writes for `-`, `.` and `_`, one space between words. Its
#   inline text is the words unescaped (nothing in it is Markdown or HTML), its id the toc
#   extension's own `slugify` and `unique` of that text; the first block is the only level-1
#   heading, so the table of contents is it over the level-2 headings in order;
# - an island marker (`<!--aicr:island N-->`) alone;
# - raw HTML: one or more elements, each starting a line with a block-level tag and ending a
#   line with its own end tag, balanced, of a few tags (no void, CDATA or raw-text element),
#   double-quoted attribute values without `<`, `>` or `"`, text without `<` or `>` and with
#   `&` only in complete character references (python-markdown's HTML parser writes those it
#   reads back as it reads them): python-markdown keeps such a block as it is.
#
# Blocks are separated by blank lines; the body holds no tab, CR, STX or ETX and no line that
# starts or ends with a space (python-markdown's whitespace normalisation would change those),
# and no code fence (its fenced-code preprocessor runs before the HTML one). tests/
# test_stamp_direct.py holds `direct` to `convert_reference` on every recipe and evidence page
# of the repository's site and of a synthetic catalog, and on hypothesis-made bodies of these
# shapes and near them.
#
# Measured (one process, CPU, the same SiteData, three interleaved pairs against the code
# before): the 2,000 recipe and evidence bodies of the 1,000 x 20,000 synthetic catalog,
# 2.01 s through python-markdown, 0.26 s here, none left to it; the build's two passes over
# them (search entries, then fills: `convert`'s docstring) 2.87/2.86/2.86 -> 1.08/1.16/1.18 s.

_NOT_DIRECT = re.compile(r"[\t\r\x02\x03]|^ | $|```|~~~", re.MULTILINE)
_BLOCKS = re.compile(r"\n{2,}")
_WORD = r"(?:[A-Za-z0-9]|\\[-._])+"
_HEADING = re.compile(rf"(#{{1,2}}) ({_WORD}(?: {_WORD})*)")
_ESCAPED = re.compile(r"\\(.)")
_MARKER = re.compile(r"<!--aicr:island [0-9]+-->")
_RAW_TOKEN = re.compile(
    r'<(/?)([a-z][a-z0-9]*)((?: [a-z][a-z-]*(?:="[^"<>]*")?)*)>'
    r"|((?:[^<>&]|&(?:[A-Za-z][A-Za-z0-9]*|#[0-9]+|#[xX][0-9A-Fa-f]+);)+)"
)
_RAW_TOP = frozenset({"div", "dl", "ol", "ul", "p", "h3", "section", "figure", "table"})
_RAW_INNER = _RAW_TOP | {"dt", "dd", "li", "span", "code", "a", "strong", "em"}


def direct(text: str) -> tuple[str, tuple[Any, ...], bool] | None:
    """`convert_reference(text)` written directly, or None when `text` is not a body of the
    shapes it knows (see above)."""
    if _NOT_DIRECT.search(text):
        return None
    from markdown.extensions.toc import slugify, unique  # type: ignore[import-untyped]

    out: list[str] = []
    heads: list[dict[str, Any]] = []
    used: set[str] = set()
    counters: dict[str, int] = {}
    for n, block in enumerate(_BLOCKS.split(text.strip("\n"))):
        heading = _HEADING.fullmatch(block)
        if heading is not None:
            level = len(heading.group(1))
            if (level == 1) != (n == 0):
                return None
            name = _ESCAPED.sub(r"\1", heading.group(2))
            head_id = unique(slugify(name, "-"), used, counters)
            out.append(f'<h{level} id="{head_id}">{name}</h{level}>\n')
            heads.append(
                {
                    "level": level,
                    "id": head_id,
                    "name": name,
                    "html": name,
                    "data-toc-label": "",
                    "children": [],
                }
            )
        elif _MARKER.fullmatch(block) or _raw(block):
            out.append(block + "\n\n")
        else:
            return None
    if not heads:
        return None
    heads[0]["children"] = heads[1:]
    return "".join(out).strip(), (heads[0],), False


def _raw(block: str) -> bool:
    """Whether `block` is raw HTML python-markdown keeps as it is (see above)."""
    stack: list[str] = []
    at = 0
    line_start = True
    for token in _RAW_TOKEN.finditer(block):
        if token.start() != at:
            return False
        at = token.end()
        close, tag, text = token.group(1), token.group(2), token.group(4)
        if text is not None:
            if not stack and text != "\n":  # between elements: a line break only
                return False
            line_start = text.endswith("\n")
            continue
        if close:
            if not stack or stack.pop() != tag:
                return False
            if not stack and at != len(block) and block[at] != "\n":
                return False  # an element ends its line
        elif not stack:
            if not line_start or tag not in _RAW_TOP:
                return False
            stack.append(tag)
        elif tag not in _RAW_INNER:
            return False
        else:
            stack.append(tag)
        line_start = False
    return at == len(block) and not stack and bool(block)


def split(skeleton: str) -> tuple[str, dict[str, Any]]:
    """A page's Markdown body and front matter, as mkdocs reads them."""
    from mkdocs.utils import meta

    body, fields = meta.get_data(skeleton)
    return body, fields


def fits(html: str, toc: tuple[Any, ...], links: bool) -> bool:
    """Whether a converted body fits an evidence page's stamp: one level-1 heading, nothing
    else in the table of contents, no link or image (mkdocs would rewrite or check those)."""
    return len(toc) == 1 and toc[0].get("level") == 1 and not toc[0].get("children") and not links


def fits_recipe(toc: tuple[Any, ...], links: bool) -> bool:
    """Whether a converted body fits a recipe page's stamp: one level-1 heading whose
    children are level-2 headings without children of their own, no link or image."""
    if links or len(toc) != 1 or toc[0].get("level") != 1:
        return False
    heads = toc[0].get("children") or []
    return bool(heads) and all(h.get("level") == 2 and not h.get("children") for h in heads)


def _title(fields: dict[str, Any], page: str) -> str:
    title = fields.get("title")
    if not isinstance(title, str) or not title:
        raise SiteError(f"{page}: a stamped page has no title in its front matter")
    return title


def fill(skeleton: str, stem: str, page: str) -> Fill:
    """What the evidence page `skeleton` (at `<dir>/<stem>.md`) puts into its stamp's built
    HTML."""
    body, fields = split(skeleton)
    title = _title(fields, page)
    html, toc, links = convert(body)
    if not fits(html, toc, links):
        raise SiteError(f"{page}: its heading does not fit its stamp page (pages.evidence_stamp)")
    return Fill(title, _SEARCH_ATTRIBUTES.sub("", html), str(toc[0]["id"]), stem)


def recipe_fill(skeleton: str, stem: str, page: str) -> Fill:
    """What the recipe page `skeleton` (at `recipes/<stem>.md`) puts into its stamp's built
    HTML (the variant of its layout, `Fill.template`)."""
    body, fields = split(skeleton)
    title = _title(fields, page)
    template = fields.get("template")
    if set(fields) != RECIPE_FIELDS or fields.get("hide") != ["navigation"]:
        raise SiteError(f"{page}: its front matter is not a recipe page's: {sorted(fields)}")
    html, toc, links = convert(body)
    if not isinstance(template, str) or not fits_recipe(toc, links):
        raise SiteError(f"{page}: its headings do not fit its stamp page")
    heads = tuple((str(h["id"]), str(h["name"])) for h in toc[0]["children"])
    body_html = _SEARCH_ATTRIBUTES.sub("", html)
    return Fill(title, body_html, str(toc[0]["id"]), stem, heads, template)


def search_entries(skeleton: str, url: str) -> str:
    """The search index's entries of the page `skeleton` at `url` (site-relative .html), as
    material's search plugin makes them from mkdocs' page (its own `SearchIndex`), as JSON
    (a list, written as the plugin writes its index): "" for a page it leaves out."""
    return _search_entries(skeleton, url)


@functools.cache  # kept for the build, as `convert` (`forget`)
def _search_entries(skeleton: str, url: str) -> str:
    import json

    body, fields = split(skeleton)
    html, toc, _ = convert(body)
    entries = _sections(html, url, fields)
    if entries is None:
        entries = _search_index_entries(html, toc, url, fields)
    if not entries:
        return ""
    return json.dumps(entries, separators=(",", ":"), default=str, allow_nan=False)


def search_entries_reference(skeleton: str, url: str) -> str:
    """`search_entries` as material's search plugin makes them, whatever the page."""
    import json

    body, fields = split(skeleton)
    html, toc, _ = convert_reference(body)
    entries = _search_index_entries(html, toc, url, fields)
    if not entries:
        return ""
    return json.dumps(entries, separators=(",", ":"), default=str, allow_nan=False)


def _search_index_entries(
    html: str, toc: tuple[Any, ...], url: str, fields: dict[str, Any]
) -> list[dict[str, Any]]:
    """The entries material's `SearchIndex` makes of a page of this body, table of contents,
    address and front matter."""
    from types import SimpleNamespace

    from material.plugins.search.plugin import SearchIndex  # type: ignore[import-untyped]
    from mkdocs.structure.toc import get_toc

    page = SimpleNamespace(
        meta=fields,
        content=html,
        toc=get_toc([dict(t) for t in toc]),  # type: ignore[misc]
        url=url,
        title=fields.get("title"),
    )
    index = SearchIndex()
    index.add_entry_from_context(page)
    return list(index.entries)


# --- a page's search entries made directly ----------------------------------------------------
#
# material's `SearchIndex` parses the page's HTML with its `Parser` (html.parser: ~0.5 ms a
# recipe page) into sections, one per heading with an id, each a title and a text: the
# headings' text, the rest's text with `p`, `code`, `li`, `ol`, `ul` kept as bare tags (a kept
# element holding only white space dropped), runs of white space made one space. `_sections`
# does the same walk for HTML of a few shapes only, and returns None for any other, which
# `SearchIndex` itself parses: tags of lowercase names with double-quoted attribute values,
# comments, text without `<`; no void element, no `pre`, `sub`, `sup`, `script`, `style` or
# `object`, no `data-search-exclude` and no `class="linenodiv"` (what the parser skips), end
# tags that close the open element, every heading at the top (none inside another element)
# holding text only. Its steps are the parser's, transcribed (`handle_starttag`,
# `handle_endtag`, `handle_data`, `create_entry_for_section`); tests/test_stamp_direct.py holds
# it to `SearchIndex` on every recipe page of the repository's site and of a synthetic catalog
# and on hypothesis-made bodies. Measured (one process, CPU, the same SiteData, three pairs
# interleaved with the code before): the search entries, then the fills, of the 1,000 x 20,000
# synthetic catalog's 2,000 recipe and evidence pages, 1.21/1.15/1.15 -> 0.73/0.73/0.95 s (the
# entries alone 1.07/1.02/1.01 -> 0.59/0.59/0.80 s), every recipe page's entries made here.

_HTML_TOKEN = re.compile(
    r'<([a-z][a-z0-9]*)((?: [a-z][a-z-]*(?:="[^"<>]*")?)*)>'
    r"|</([a-z][a-z0-9]*)>"
    r"|<!--(?:[^-]|-(?!-))*-->"  # html.parser ends one at "--", space, ">"
    r"|([^<]+)"
)
_ATTRIBUTE = re.compile(r' ([a-z][a-z-]*)(?:="([^"<>]*)")?')
_KEPT = frozenset({"p", "code", "li", "ol", "ul"})
_NOT_SECTIONED = frozenset(
    {"pre", "sub", "sup", "script", "style", "object", "textarea", "title"}
    | {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param"}
    | {"source", "track", "wbr"}
)
_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})


def _sections(html: str, url: str, fields: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The entries `SearchIndex` makes of a page (see above), or None for HTML of another
    shape, or a page whose front matter or the plugin's setup asks for more."""
    from material.plugins.search import plugin  # type: ignore[import-untyped]

    if fields.get("search") or "tags" in fields or plugin.jieba:
        return None
    walk = _Walk()
    at = 0
    for token in _HTML_TOKEN.finditer(html):
        if token.start() != at:
            return None
        at = token.end()
        tag, close, data = token.group(1), token.group(3), token.group(4)
        if tag is not None:
            ok = walk.start(tag, token.group(2))
        elif close is not None:
            ok = walk.end(close)
        else:
            ok = data is None or walk.data(data)
        if not ok:
            return None
    if at != len(html) or walk.context or not walk.sections:
        return None
    return [
        {
            "location": url + "#" + section_id if section_id else url,
            "title": "".join(title or [str(fields.get("title"))]).strip(),
            "text": "".join(text).strip(),
        }
        for section_id, title, text in walk.sections
    ]


class _Walk:
    """material's search `Parser`'s steps over the tokens of HTML of the shapes `_sections`
    takes (each step False where the HTML is of another). Not a record: it collects."""

    def __init__(self) -> None:
        self.sections: list[tuple[str | None, list[str], list[str]]] = []  # id, title, text
        self.title: list[str] | None = None  # the open heading's title
        self.text: list[str] | None = None  # the current section's text
        self.context: list[str] = []

    def start(self, tag: str, attributes: str) -> bool:
        if tag in _NOT_SECTIONED:
            return False
        attrs = {k: html_unescape(v) for k, v in _ATTRIBUTE.findall(attributes)}
        if "data-search-exclude" in attrs or attrs.get("class") == "linenodiv":
            return False
        self.context.append(tag)
        if tag in _HEADINGS:
            if len(self.context) != 1 or "id" not in attrs:
                return False  # a heading inside an element, or not a section
            if tag != "h1" and not self.sections:
                return False  # the parser makes a section of the page's title first
            self.title, self.text = [], []
            self.sections.append((attrs["id"] if self.sections else None, self.title, self.text))
            return True
        if self.text is None or self.title is not None:
            return False  # a preface before any heading, or a tag inside a heading
        if tag in _KEPT:
            self.text.append(f"<{tag}>")
        return True

    def end(self, tag: str) -> bool:
        if not self.context or self.context[-1] != tag:
            return False
        self.context.pop()
        if tag in _HEADINGS:
            self.title = None
        elif tag in _KEPT and self.text is not None:
            text = self.text
            index = text.index(f"<{tag}>")  # the first, as the parser looks it up
            if any(not item.isspace() for item in text[index + 1 :]):
                text.append(f"</{tag}>")
            else:
                del text[index:]  # a kept element of white space only is dropped
        return True

    def data(self, data: str) -> bool:
        if self.text is None:
            return False  # a preface before any heading (the parser makes it a section)
        value = html_unescape(data)
        value = " " if value.isspace() else value.replace("\n", " ")
        if self.title is not None:
            self.title.append(search_text(value))
        elif not value.isspace():
            self.text.append(search_text(value))
        elif not self.text or not self.text[-1].isspace():
            self.text.append(value)
        return True


def headings_fit(markdown: str) -> bool:
    """Whether a page whose headings are these (and data blocks) fits a recipe page's stamp."""
    _, toc, links = convert(markdown)
    return fits_recipe(toc, links)


def forget() -> None:
    """Let go of the converted pages kept for a build (its fills and search entries)."""
    convert.cache_clear()
    _search_entries.cache_clear()


def heading_fits(markdown_line: str) -> bool:
    """Whether a page whose body is this heading (and data blocks) can be stamped."""
    return fits(*convert(markdown_line))
