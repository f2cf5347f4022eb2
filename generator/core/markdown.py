"""Markdown for untrusted strings: the one place that escapes what goes into a Markdown output.

`validate --summary` (a job summary) and `diff --format markdown` (a pull-request comment) show
file names, recipe names and registry values taken from the pull request itself. GitHub renders
both as GitHub-flavoured Markdown with inline HTML, so an unescaped value can open a link, an
image, a heading or an HTML element, or close the code span it was put in. Every untrusted
string therefore goes through `text()` (prose and table cells) or `code()` (a code span), and
nothing else builds Markdown from data.

- `text(s)`: `&`, `<`, `>` become HTML character references, so no tag or entity survives; every
  other ASCII punctuation character is backslash-escaped (CommonMark allows that for all of
  them), so no emphasis, link, image, heading, list, table cell (`|`) or autolink (`www.`,
  `https:`, `user@host`) can start.
- `link_text(s)`: the same for the text of a link or an image mid-line (a badge's alt text):
  only `&`, `<`, `>` and what can open or close an inline construct (backslash, brackets, `*`,
  `_`, backtick, `!`, `~`, `|`) are escaped, so the text stays readable.
- `code(s)`: a code span whose backtick fence is longer than any run of backticks inside, so the
  value cannot close it; padded with a space when the value starts or ends with a backtick (the
  spaces are stripped again by the renderer). Inside a table `|` is written `\\|`, which GFM
  turns back into `|` without ending the cell.

Both collapse line breaks to a space (a newline would end a table row) and show other control
characters escaped, as located diagnostics do.
"""

from __future__ import annotations

import re
import string

from generator.core.errors import printable

_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_PUNCT = frozenset(string.punctuation) - set(_ENTITIES)
_LINE_BREAKS = re.compile(r"[\r\n\u2028\u2029\x85\v\f]+")
_TICKS = re.compile(r"`+")


def _one_line(s: str) -> str:
    return printable(_LINE_BREAKS.sub(" ", s))


def text(s: object) -> str:
    """`s` as inert Markdown text: shown literally, in prose or in a table cell."""
    return _escaped(s, _PUNCT)


def _escaped(s: object, punct: frozenset[str] | str) -> str:
    """`s` on one line, each entity-forming character written as its entity and each character
    of `punct` backslash-escaped."""
    out = []
    for ch in _one_line(str(s)):
        if ch in _ENTITIES:
            out.append(_ENTITIES[ch])
        elif ch in punct:
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


# what can start or end an inline construct inside a line (link, emphasis, code, HTML, entity,
# strikethrough, table cell); other punctuation is inert after the line's start
_INLINE = frozenset("\\[]*_`!~|")


def link_text(s: object) -> str:
    """`s` as inert text inside a link's or an image's brackets, mid-line (an image's alt text):
    only what could start or end an inline construct is escaped, so the text stays readable."""
    return _escaped(s, _INLINE)


def code(s: object, *, table: bool = True) -> str:
    """`s` in a code span that no backtick inside it can close (`table`: also safe in a cell)."""
    value = _one_line(str(s))
    if table:
        value = value.replace("|", "\\|")
    longest = max((len(m.group()) for m in _TICKS.finditer(value)), default=0)
    fence = "`" * (longest + 1)
    if not value:
        return text("")  # an empty code span is not one in CommonMark: show nothing
    pad = " " if value.startswith("`") or value.endswith("`") or value.strip(" ") == "" else ""
    return f"{fence}{pad}{value}{pad}{fence}"
