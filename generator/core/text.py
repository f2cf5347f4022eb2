"""Untrusted text, one escaper per output language: the one place that turns a string into XML,
HTML or a YAML scalar (Markdown: `core/markdown.py`, which this module re-exports).

A label, a recipe name, a file name or a remote message may hold any Unicode character. Each
output language has characters it cannot carry at all, not even as a character reference, and
characters that would end the construct the value was put in:

- `xml_text(s)` / `xml_attr(s)`: XML 1.0 character data and a double-quoted attribute value.
  `&`, `<`, `>` (and `"`, `'` in attributes) become references; every character XML 1.0 does not
  allow (C0 controls other than tab, LF and CR, lone surrogates, U+FFFE and U+FFFF) becomes
  U+FFFD, because XML 1.0 has no way to write them (`&#11;` is itself ill-formed); so do those
  it discourages and HTML refuses (DEL, C1 controls, U+FDD0-U+FDEF), as in `html_text`. In an
  attribute tab, LF and CR are written as references, so attribute-value normalisation keeps
  them.
- `html_text(s)`: the same for an HTML text node or a quoted attribute value, as `Markup`: the
  site's one HTML escaper (Jinja's `finalize` and every function that builds HTML call it), so
  no C0/C1 control, DEL, surrogate or non-character from a label, a message or a commit subject
  reaches a page raw.
- `yaml_scalar(s)`: a double-quoted YAML scalar (JSON string syntax, a subset of YAML 1.2 that
  YAML 1.1 parsers read the same), so a value holding a newline, `: `, `#`, `---` or a quote stays
  one scalar wherever a template prints it.
- `md_text(s)` / `md_code(s)` / `md_link_text(s)`: `core.markdown.text`, `.code` and `.link_text`.

Names people read (signer labels) are also judged here:

- `label_problem(s)`: why `s` cannot be a label: control and format characters (C0, C1, DEL,
  bidirectional overrides, zero-width characters), line and paragraph separators, surrogates,
  private-use and unassigned code points, or nothing visible at all.
- `skeletons(s)`: the confusable skeletons of a label (UTS #39's idea): NFKC, case-folded and,
  separately, upper-cased (Unicode's data is case-sensitive: `0` reads as `O`, not as `o`), then
  every character replaced by the representative of its confusable class (Unicode's confusables
  data as `confusable-homoglyphs`, pinned in pyproject.toml, ships it; classes joined
  transitively, so `l`, `I`, `1` and `|` are one class), runs of spaces collapsed. Two labels
  sharing a skeleton are one signer to a reader: the signer policy refuses the second.

Every writer of XML (the Atom feed, SVG badges, the sitemap) and of YAML scalars built from data
uses these; tests/test_text.py parses what they produce with real parsers, and
tests/test_architecture.py fails when a module imports another XML escaper.
"""

from __future__ import annotations

import functools
import importlib.resources
import json
import re
import unicodedata

from markupsafe import Markup, escape

from generator.core import markdown, safeio

# what an HTML page must not carry raw (HTML's "control" and "noncharacter" parse errors; form
# feed too, as XML): C0 but tab/LF/CR, DEL, C1, surrogates, U+FDD0-U+FDEF, U+FFFE, U+FFFF
_NOT_HTML = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufdd0-\ufdef\ufffe\uffff]"
)
# XML 1.0 (5th edition) allows none of the C0 ones, surrogates, U+FFFE and U+FFFF (production
# [2] Char) and discourages DEL, C1 and the other non-characters (section 2.2): the feed, the
# badges and the sitemap carry none of them either
_NOT_XML = _NOT_HTML
_TEXT = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_ATTR = {**_TEXT, '"': "&quot;", "'": "&apos;", "\t": "&#9;", "\n": "&#10;", "\r": "&#13;"}
_TEXT_RE = re.compile("[&<>]")
_ATTR_RE = re.compile("[&<>\"'\t\n\r]")
REPLACEMENT = "\ufffd"
# YAML 1.1/1.2 double-quoted scalars: what must be escaped (c-printable minus line breaks)
_YAML_NEEDS_ESCAPE = re.compile(
    '[^\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]|[\\\\"]'
)
_YAML_SHORT = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r", "\x00": "\\0"}


def xml_chars(s: object) -> str:
    """`s` with every character XML 1.0 cannot carry replaced by U+FFFD (nothing else changed)."""
    return _NOT_XML.sub(REPLACEMENT, str(s))


def xml_text(s: object) -> str:
    """`s` as XML 1.0 character data (an element's content)."""
    return _TEXT_RE.sub(lambda m: _TEXT[m.group()], xml_chars(s))


def xml_attr(s: object) -> str:
    """`s` as the content of a double- or single-quoted XML 1.0 attribute value (no quotes added)."""
    return _ATTR_RE.sub(lambda m: _ATTR[m.group()], xml_chars(s))


def html_chars(s: object) -> str:
    """`s` with every character an HTML page must not carry raw replaced by U+FFFD: C0 controls
    other than tab, LF and CR, DEL, C1 controls, lone surrogates and non-characters."""
    text = str(s)
    return _NOT_HTML.sub(REPLACEMENT, text) if _NOT_HTML.search(text) else text


def html_text(s: object) -> Markup:
    """`s` for an HTML text node or quoted attribute value: `&<>"'` escaped (markupsafe's
    `escape`, as Jinja's autoescape does), every character `html_chars` refuses replaced. The
    one HTML escaper of the site: the Jinja environment's `finalize` sends every printed value
    through it, and every Python function that builds HTML from data calls it. A `Markup`
    value is HTML this code made from escaped parts, and stays as it is.

    A plain string is looked up among those escaped before (`html_text_reference` of it: a
    function of its text alone): a page prints the same statuses, profiles, versions, lanes
    and names hundreds of times (a recipe page ~1,000 values). Measured with the site's code
    generator (`site.jinja._Printed`): see its docstring."""
    if type(s) is str:
        printed = _ESCAPED.get(s)
        if printed is None:
            if len(_ESCAPED) >= _ESCAPED_MAX:
                _ESCAPED.clear()
            printed = _ESCAPED[s] = html_text_reference(s)
        return printed
    return html_text_reference(s)


_ESCAPED: dict[str, Markup] = {}  # plain strings as `html_text_reference` escapes them
_ESCAPED_MAX = 1 << 16


def html_text_reference(s: object) -> Markup:
    """`html_text` escaping every value anew (its reference)."""
    if isinstance(s, Markup):
        return s
    if hasattr(s, "__html__"):
        return Markup(s.__html__())
    return escape(html_chars(s))


def html_unescape(s: str) -> str:
    """HTML text or an attribute value as `html.parser` reads it: character references
    resolved (python's `html.unescape`, the parser's own step). Only for reading HTML as a
    plugin that parses it would (`site.stamping`)."""
    import html

    return html.unescape(s)


def search_text(s: str) -> str:
    """`s` as material's search index writes a page's text: `&`, `<` and `>` escaped, quotes
    kept (python's `html.escape(s, quote=False)`, the plugin's own step). Only for making the
    entries that plugin would make (`site.stamping`); a page's HTML is `html_text`'s."""
    import html

    return html.escape(s, quote=False)


def _yaml_escape(m: re.Match[str]) -> str:
    c = m.group()
    if c in _YAML_SHORT:
        return _YAML_SHORT[c]
    n = ord(c)
    return f"\\x{n:02x}" if n < 0x100 else f"\\u{n:04x}" if n < 0x10000 else f"\\U{n:08x}"


def yaml_scalar(s: object) -> str:
    """`s` as one double-quoted YAML scalar that parses back to `str(s)`: `\\` and `"` escaped,
    and every character YAML would fold (line breaks) or does not allow raw (controls,
    surrogates, non-characters) written as an escape."""
    return '"' + _YAML_NEEDS_ESCAPE.sub(_yaml_escape, str(s)) + '"'


md_text = markdown.text
md_code = markdown.code
md_link_text = markdown.link_text


# --- labels: what a reader can tell apart ---------------------------------------------------

# Cc (C0, DEL, C1), Cf (format: bidi overrides, zero-width), Zl/Zp (separators), Cs, Co, Cn
_REFUSED_CATEGORIES = {"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"}


def label_problem(s: str) -> str | None:
    """Why `s` cannot be a label a reader tells apart from others, or None."""
    for c in s:
        if unicodedata.category(c) in _REFUSED_CATEGORIES:
            return (
                f"label holds the invisible or control character U+{ord(c):04X} "
                f"({unicodedata.name(c, unicodedata.category(c))}): labels are shown as they are"
            )
    if not s.strip():
        return "label shows nothing"
    return None


@functools.lru_cache(maxsize=1)
def _confusable_classes() -> dict[str, str]:
    """Each single character of Unicode's confusables data -> its class representative (the
    smallest code point of the class, classes joined transitively)."""
    # the data file of an installed package, read through the one door like any other file
    source = importlib.resources.files("confusable_homoglyphs").joinpath("confusables.json")
    data = json.loads(safeio.read_text(str(source), limit=safeio.OTHER_BYTES))
    parent: dict[str, str] = {}

    def find(c: str) -> str:
        while parent.get(c, c) != c:
            parent[c] = parent.get(parent[c], parent[c])
            c = parent[c]
        return c

    def union(x: str, y: str) -> None:
        a, b = find(x), find(y)
        if a != b:
            parent[max(a, b)] = min(a, b)
        parent.setdefault(x, x)
        parent.setdefault(y, y)

    for char, glyphs in data.items():
        if len(char) != 1:
            continue
        for g in glyphs:
            other = g.get("c", "")
            if len(other) != 1:
                continue  # a sequence (`rn` for `m`): not a one-character class
            union(char, other)
    return {c: find(c) for c in list(parent)}


def skeletons(s: str) -> tuple[str, str]:
    """The confusable skeletons of label `s`: of its case-folded and of its upper-cased form
    (see the module's docstring); two labels read alike when they share one."""
    classes = _confusable_classes()
    norm = unicodedata.normalize("NFKC", s)
    lower, upper = (
        " ".join("".join(classes.get(c, c) for c in cased).split())
        for cased in (norm.casefold(), norm.upper())
    )
    return "lower:" + lower, "upper:" + upper
