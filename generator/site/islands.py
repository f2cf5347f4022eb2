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

import re
from collections.abc import Sequence

from generator.core.errors import SiteError

OPEN = "<!--aicr:island-->"
CLOSE = "<!--/aicr:island-->"
_PLACEHOLDER = re.compile(r"<!--aicr:island (\d+)-->")
# The title of a stamp page (a page the engine builds once for many pages of one layout: every
# run's page is the built evidence/runs/index.html with its own title and data blocks). Lower
# case letters and dashes: the engine writes it as it is, and no escaped data can contain it.
STAMP_TITLE = "aicr-stamp-title"


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


def stamp(html: str, title: str, page: str) -> str:
    """A page made from the engine's build of its stamp page: `html` with the stamp's title
    replaced by `title` (already HTML-escaped: the theme writes titles unescaped) wherever the
    engine wrote it (head, header, heading). The data blocks go in with `sink` after."""
    if STAMP_TITLE not in html:
        raise SiteError(f"{page}: its stamp page has no title placeholder")
    return html.replace(STAMP_TITLE, title)
