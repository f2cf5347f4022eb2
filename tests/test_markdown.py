"""generator.core.markdown: any string, put through `text()` or `code()`, renders as itself and
nothing else: no tag, link, image, emphasis or extra table cell (checked with a CommonMark
renderer with GFM tables), and no backtick closes a code span early."""

from __future__ import annotations

import html
import re

import markdown_it
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from generator.core import markdown

MD = markdown_it.MarkdownIt("commonmark").enable("table")

HOSTILE = [
    "<img src=x onerror=alert(1)>",
    "[click](https://evil.example)",
    "![i](https://evil.example/p.png)",
    "`code` and ``more``",
    "a | b | c",
    "**bold** _em_ ~~strike~~",
    "# heading",
    "<script>alert(1)</script>",
    "&lt;already&gt; &amp; &#96;",
    "line\nbreak\r\nand\u2028more",
    "\\`escaped\\`",
    "```",
    "` leading and trailing `",
    "https://autolink.example www.example.com user@example.com",
    "<https://angle.example>",
]

PRINTABLE = st.text(
    alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), min_size=1, max_size=40
)


def cell_html(md: str) -> str:
    """The HTML of the one cell of a one-column table holding `md`."""
    out = MD.render(f"| h |\n| --- |\n| {md} |\n")
    m = re.search(r"<td>(.*?)</td>", out, re.S)
    assert m is not None, out
    assert out.count("<td>") == 1, f"the value split the row: {out}"
    return m.group(1)


def visible(fragment: str) -> str:
    return html.unescape(re.sub(r"</?code>", "", fragment))


@pytest.mark.parametrize("value", HOSTILE)
def test_text_renders_literally(value: str) -> None:
    got = cell_html(markdown.text(value))
    assert "<" not in got.replace("&lt;", ""), got  # no element at all
    expected = re.sub(r"[\r\n\u2028]+", " ", value).strip()
    assert visible(got) == expected


@pytest.mark.parametrize("value", HOSTILE)
def test_code_renders_as_one_code_span(value: str) -> None:
    got = cell_html(markdown.code(value))
    assert got.startswith("<code>") and got.endswith("</code>") and got.count("<code>") == 1
    expected = re.sub(r"[\r\n\u2028]+", " ", value)
    assert visible(got).strip(" ") == expected.strip(" ")


@settings(max_examples=300, deadline=None)
@given(PRINTABLE)
def test_any_printable_string_is_inert(value: str) -> None:
    t = cell_html(markdown.text(value))
    assert "<" not in t.replace("&lt;", "")
    assert visible(t) == value.strip()
    c = cell_html(markdown.code(value))
    assert c.startswith("<code>") and c.endswith("</code>") and c.count("<code>") == 1
    # CommonMark strips one space on each side only when both are there
    assert visible(c).strip(" ") == value.strip(" ")


def test_code_fence_outgrows_the_longest_backtick_run() -> None:
    assert markdown.code("a``b") == "```a``b```"
    assert markdown.code("`x`") == "`` `x` ``"
    assert markdown.code("plain") == "`plain`"
    assert markdown.code("a|b") == "`a\\|b`"
    assert markdown.code("a|b", table=False) == "`a|b`"


def test_control_characters_are_shown_escaped() -> None:
    assert markdown.text("a\x1bb") == "a\\\\x1bb"
