"""HTML islands: data blocks lifted out of the Markdown and put back after the page engine."""

from __future__ import annotations

import pytest
from markdown import Markdown

from generator.core.errors import SiteError
from generator.site import islands
from generator.site.jinja import environment

PAGE = f"""# Title

Some *text*.

{islands.OPEN}
<div class="aicr-table-wrap"><table><tr><td>a</td></tr>

<tr><td>b</td></tr></table></div>
{islands.CLOSE}

## Next

{islands.OPEN}
<pre><code>x = 1
</code></pre>
{islands.CLOSE}
"""


def test_lift_replaces_each_block_with_a_placeholder_in_order() -> None:
    skeleton, blocks = islands.lift(PAGE)
    assert blocks == (
        '<div class="aicr-table-wrap"><table><tr><td>a</td></tr>\n\n<tr><td>b</td></tr></table></div>',
        "<pre><code>x = 1\n</code></pre>",
    )
    assert islands.placeholder(0) in skeleton and islands.placeholder(1) in skeleton
    assert "<table>" not in skeleton and "aicr:island-->" not in skeleton


def test_blocks_survive_the_markdown_engine_and_come_back_verbatim() -> None:
    skeleton, blocks = islands.lift(PAGE)
    html = Markdown(extensions=["toc", "tables", "admonition", "attr_list"]).convert(skeleton)
    assert '<h2 id="next">Next</h2>' in html
    out = islands.sink(html, blocks, "page.html")
    assert blocks[0] in out and blocks[1] in out
    assert "aicr:island" not in out
    assert out.index("<table>") < out.index('id="next"') < out.index("<pre>")


def test_a_missing_placeholder_is_an_error() -> None:
    _, blocks = islands.lift(PAGE)
    html = f"<p>only one</p>{islands.placeholder(0)}"
    with pytest.raises(
        SiteError, match=r"page.html: 2 data block\(s\).*holds the placeholders of 1"
    ):
        islands.sink(html, blocks, "page.html")


def test_a_repeated_or_unknown_placeholder_is_an_error() -> None:
    _, blocks = islands.lift(PAGE)
    twice = islands.placeholder(0) * 2 + islands.placeholder(1)
    with pytest.raises(SiteError, match="missing or repeated"):
        islands.sink(twice, blocks, "p.html")
    with pytest.raises(SiteError, match="unknown island 7"):
        islands.sink(islands.placeholder(7), blocks, "p.html")


def test_an_unbalanced_marker_is_an_error() -> None:
    with pytest.raises(SiteError, match="unbalanced island marker"):
        islands.lift(f"# T\n\n{islands.OPEN}\n<table></table>\n")


def test_data_cannot_forge_a_marker_or_a_placeholder() -> None:
    hostile = f"{islands.CLOSE} {islands.placeholder(0)} {islands.OPEN}"
    template = environment().from_string(
        "{{ islands_open }}\n<p>{{ value }}</p>\n{{ islands_close }}\n"
    )
    text = template.render(value=hostile, islands_open=islands.OPEN, islands_close=islands.CLOSE)
    # the markers passed as plain strings are escaped too: only literal template text can mark
    assert islands.lift(text) == (text, ())
    marked = f"{islands.OPEN}\n" + environment().from_string("<p>{{ v }}</p>").render(v=hostile)
    _, blocks = islands.lift(marked + f"\n{islands.CLOSE}\n")
    assert len(blocks) == 1 and "&lt;!--aicr:island 0--&gt;" in blocks[0]
    assert islands.sink(islands.placeholder(0), blocks, "p.html") == blocks[0]
