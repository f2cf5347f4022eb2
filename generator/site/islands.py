"""HTML islands: data blocks that bypass the Markdown engine and go straight into the built HTML.

A generated page is Markdown with large HTML blocks of data (tables of runs, checks, charts).
python-markdown parses every such block to find where it ends; at catalog scale (hundreds of MB
of tables) that is most of a build. The page templates mark each data block:

    <!--aicr:island-->
    <div class="aicr-table-wrap">...</div>
    <!--/aicr:island-->

`lift` replaces every marked block with a one-line placeholder comment (an HTML comment is a
raw block Markdown passes through untouched) and returns the blocks; after `mkdocs build`,
`sink` puts them back in place of their placeholders. A placeholder that did not survive the
page engine, or one too many, is a `SiteError`: a page is never published with a hole or a
stray block.

Only HTML the templates produced, with every data value already escaped, is ever lifted: data
cannot forge a marker, because `<` in data is `&lt;`. Islands are excluded from the search
index, as their tables already were (`data-search-exclude`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from generator.core.errors import SiteError

OPEN = "<!--aicr:island-->"
CLOSE = "<!--/aicr:island-->"
_PLACEHOLDER = re.compile(r"<!--aicr:island (\d+)-->")
# The title of a stamp page (a page the engine builds once for many pages of one layout: every
# run's page is the built evidence/runs/index.html with its own title and data blocks). Lower
# case letters and dashes: the engine writes it as it is, and no escaped data can contain it.
STAMP_TITLE = "aicr-stamp-title"
# The name of an evidence page's stamp (`pages.EVIDENCE_STAMP`): upper case, so never a recipe
# page's file name (`pages.slug`), and never published itself.
STAMP_NAME = "AICR-STAMP"


def placeholder(index: int) -> str:
    return f"<!--aicr:island {index}-->"


def lift(markdown: str) -> tuple[str, tuple[str, ...]]:
    """The page with each marked block replaced by a placeholder block, and the blocks in order."""
    blocks: list[str] = []
    parts: list[str] = []
    pos = 0
    while (start := markdown.find(OPEN, pos)) != -1:
        end = markdown.find(CLOSE, start + len(OPEN))
        if end == -1:
            raise SiteError("a page template has an unbalanced island marker")
        block = markdown[start + len(OPEN) : end]
        block = block[1:] if block.startswith("\n") else block
        block = block[:-1] if block.endswith("\n") else block
        if OPEN in block:
            raise SiteError("a page template has an unbalanced island marker")
        parts += [markdown[pos:start], f"\n\n{placeholder(len(blocks))}\n\n"]
        blocks.append(block)
        pos = end + len(CLOSE)
    parts.append(markdown[pos:])
    skeleton = "".join(parts)
    if CLOSE in skeleton:
        raise SiteError("a page template has an unbalanced island marker")
    return skeleton, tuple(blocks)


def sink(html: str, blocks: Sequence[str], page: str) -> str:
    """`html` with every placeholder replaced by its block; each must appear exactly once."""
    seen: list[int] = []

    def put(match: re.Match[str]) -> str:
        index = int(match.group(1))
        if index >= len(blocks):
            raise SiteError(f"{page}: the built page has an unknown island {index}")
        seen.append(index)
        return blocks[index]

    out = _PLACEHOLDER.sub(put, html)
    if sorted(seen) != list(range(len(blocks))):
        raise SiteError(
            f"{page}: {len(blocks)} data block(s) were lifted out of the page but the built page "
            f"holds the placeholders of {len(set(seen))} (missing or repeated)"
        )
    return out


@dataclass(frozen=True, slots=True)
class Fill:
    """What a stamped page puts into its stamp page's built HTML: its title (as the theme
    writes it: the front matter's, already HTML-escaped) and, for a page whose heading is its
    own (`body` not None: an evidence or a recipe page), the HTML the engine makes of its
    Markdown body (`generator.site.stamping`), its heading's anchor (the skip link's target),
    the stem of its file name (its URL's last part, in the canonical link), its level-2
    headings (id, title as the table of contents shows it) and its layout (`template`: which
    of its stamp's variants it is made from)."""

    title: str
    body: str | None = None
    anchor: str = ""
    stem: str = ""
    heads: tuple[tuple[str, str], ...] = ()
    template: str = ""


def stamp(html: str, fill: Fill | str, page: str, own: Fill | None = None) -> str:
    """A page made from the engine's build of its stamp page: `html` with the stamp's title
    replaced by `fill`'s wherever the engine wrote it (head, header, heading). With a body
    (`fill.body`), `own` is the stamp page's own fill: its body, table of contents, skip link
    and file stem are replaced by the page's in one pass (`stamp_parts`). The data blocks go
    in with `sink` after. A plain string is a title alone."""
    if isinstance(fill, str):
        fill = Fill(fill)
    if fill.body is None:
        if STAMP_TITLE not in html:
            raise SiteError(f"{page}: its stamp page has no title placeholder")
        return html.replace(STAMP_TITLE, fill.title)
    if own is None or own.body is None:
        raise SiteError(f"{page}: a stamped body without its stamp page's own")
    if bool(fill.heads) != bool(own.heads):
        raise SiteError(f"{page}: its table of contents does not fit its stamp page's")
    parts, item, sep = stamp_parts(html, own, page)
    toc = sep.join("".join(_put(item, (f'href="#{i}"', title))) for i, title in fill.heads)
    values = (fill.body, toc, f"{fill.stem}.html", fill.title, f'href="#{fill.anchor}"')
    return "".join(_put(parts, values))


def _put(parts: list[str], values: Sequence[str]) -> list[str]:
    """Text, slot, text, ... with each slot replaced by its value."""
    out = [parts[0]]
    for slot, text in zip(parts[1::2], parts[2::2], strict=True):
        out += [values[int(slot)], text]
    return out


# the theme's table of contents item (material's partials/toc-item.html) begins with this
_TOC_ITEM = '<li class="md-nav__item">'


def stamp_parts(html: str, own: Fill, page: str) -> tuple[list[str], list[str], str]:
    """The stamp page's built HTML split at what a stamped page replaces: text, slot, text,
    ... (a slot is "0" body, "1" table of contents, "2" file name, "3" title, "4" skip link);
    and, for a stamp with headings, the table of contents' item (text, slot, ...: "0" its
    link, "1" its title) and what separates two items. The body, the table of contents (the
    items of its two headings) and the skip link must be there exactly once, the title at
    least once, and the stamp's name nowhere else: a stamp that does not fit is an error,
    never a page with the stamp's text left in."""
    if own.body is None:
        raise SiteError(f"{page}: its stamp page has no body")
    return _stamp_parts(html, own)


@functools.lru_cache(maxsize=8)
def _stamp_parts(html: str, own: Fill) -> tuple[list[str], list[str], str]:
    toc, item, sep = "\0", [""], ""  # no table of contents: a token never found
    if own.heads:
        (a, title_a), (b, title_b) = own.heads
        at, bt = html.find(f'href="#{a}"'), html.find(f'href="#{b}"')
        start, middle = html.rfind(_TOC_ITEM, 0, at), html.rfind(_TOC_ITEM, 0, bt)
        end_a, end = html.find("</li>", at) + 5, html.find("</li>", bt) + 5
        if min(at, bt, start, middle) < 0 or not start < end_a <= middle < end:
            raise SiteError("the stamp page's table of contents is not two items")
        toc, sep = html[start:end], html[end_a:middle]
        item = _split(html[start:end_a], (f'href="#{a}"', title_a))
        if _put(_split(html[middle:end], (f'href="#{b}"', title_b)), ("0", "1")) != _put(
            item, ("0", "1")
        ) or item[1::2] != ["0", "1"]:
            raise SiteError("the stamp page's table of contents items differ but for their heading")
    assert own.body is not None
    tokens = (own.body, toc, f"{own.stem}.html", own.title, f'href="#{own.anchor}"')
    parts = _split(html, tokens)
    counts = [parts[1::2].count(str(slot)) for slot in range(len(tokens))]
    body, contents, _, title, skip = counts
    rest = "".join(parts[0::2])
    if (
        body != 1
        or skip != 1
        or title < 1
        or contents != (1 if own.heads else 0)
        or STAMP_NAME in rest
        or STAMP_NAME.lower() in rest
    ):
        raise SiteError(
            "the stamp page's built HTML does not fit its stamped pages (body "
            f"{body}x, contents {contents}x, skip link {skip}x, title {title}x, or its name "
            "left elsewhere)"
        )
    return parts, item, sep


def _split(text: str, tokens: Sequence[str]) -> list[str]:
    """`text` split at each occurrence of any of `tokens` (the first listed wins where two
    begin at one place): text, slot (the token's index), text, ..."""
    pattern = re.compile("|".join(f"({re.escape(t)})" for t in tokens))
    parts: list[str] = []
    pos = 0
    for match in pattern.finditer(text):
        parts += [text[pos : match.start()], str((match.lastindex or 1) - 1)]
        pos = match.end()
    parts.append(text[pos:])
    return parts
