"""What a stamped evidence page puts into its stamp page's built HTML (`islands.Fill`).

Every recipe name's evidence page (`pages/evidence.md.j2`) is the same page but for its title,
its heading and its data block: the engine builds one stamp page of that template
(`pages.EVIDENCE_STAMP`, never published) and each evidence page is that page with its own
title, heading (the HTML the engine makes of its Markdown body), skip-link anchor and file
name put in (`islands.stamp`), and its data block put back (`islands.sink`). The body is made
here as mkdocs makes it (`mkdocs.structure.pages.Page.render`): the front matter split off by
mkdocs' own `meta.get_data`, the rest converted by python-markdown with the extensions and
their configuration mkdocs gives it for the site's mkdocs.yml (`EXTENSIONS`, `CONFIGS`;
tests/test_site_stamp.py holds them to the loaded configuration). mkdocs' own tree processors
only record anchors and rewrite links: a page whose body holds a link is not stamped.

A page is stamped only when its heading fits the stamp's layout (`fits`): its table of
contents is one level-1 heading and nothing else (the theme then draws no table of contents,
as for the stamp) and its body has no link or image. Any other page is built by the engine
one by one (`pages.evidence_stamp`: counted and reported by the build). The reference is the
engine building every evidence page (`pages.STAMP_EVIDENCE` off);
tests/test_site_stamp.py builds catalogs both ways and compares every file byte for byte.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from generator.core.errors import SiteError
from generator.site.islands import Fill

# mkdocs' built-in extensions first (`MarkdownExtensions(builtins=...)`), then mkdocs.yml's
EXTENSIONS = ("toc", "tables", "fenced_code", "admonition", "attr_list")
CONFIGS: dict[str, dict[str, Any]] = {"toc": {"permalink": False}}

_LINK = re.compile(r"<(a|img)\b", re.IGNORECASE)


@functools.lru_cache(maxsize=1)
def _markdown() -> Any:
    import markdown  # type: ignore[import-untyped]

    return markdown.Markdown(extensions=list(EXTENSIONS), extension_configs=CONFIGS)


@functools.lru_cache(maxsize=4096)
def convert(text: str) -> tuple[str, tuple[Any, ...]]:
    """A page body as mkdocs converts it: its HTML and its table of contents' tokens."""
    md = _markdown()
    md.reset()
    html = md.convert(text)
    return html, tuple(getattr(md, "toc_tokens", ()))


def split(skeleton: str) -> tuple[str, dict[str, Any]]:
    """A page's Markdown body and front matter, as mkdocs reads them."""
    from mkdocs.utils import meta

    body, fields = meta.get_data(skeleton)
    return body, fields


def fits(html: str, toc: tuple[Any, ...]) -> bool:
    """Whether a converted body fits an evidence page's stamp: one level-1 heading, nothing
    else in the table of contents, no link or image (mkdocs would rewrite or check those)."""
    return (
        len(toc) == 1
        and toc[0].get("level") == 1
        and not toc[0].get("children")
        and not _LINK.search(html)
    )


def fill(skeleton: str, stem: str, page: str) -> Fill:
    """What the page `skeleton` (at `<dir>/<stem>.md`) puts into its stamp's built HTML."""
    body, fields = split(skeleton)
    title = fields.get("title")
    if not isinstance(title, str) or not title:
        raise SiteError(f"{page}: a stamped page has no title in its front matter")
    html, toc = convert(body)
    if not fits(html, toc):
        raise SiteError(f"{page}: its heading does not fit its stamp page (pages.evidence_stamp)")
    return Fill(title, html, str(toc[0]["id"]), stem)


def heading_fits(markdown_line: str) -> bool:
    """Whether a page whose body is this heading (and data blocks) can be stamped."""
    return fits(*convert(markdown_line))
