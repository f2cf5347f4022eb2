"""core/text.py: every escaper's output parses back, with a real parser, to the value (XML 1.0
characters it cannot carry become U+FFFD), whatever the value holds."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from generator.core import text

# every code point class that matters: C0/C1 controls, surrogates, non-characters, astral
ANY_TEXT = st.text(
    alphabet=st.one_of(
        st.characters(min_codepoint=0, max_codepoint=0x7F),
        st.characters(codec=None),
        st.sampled_from(["\v", "\f", "\x00", "\x1b", "\ufffe", "\uffff", "\u2028", "&", "<", '"']),
    ),
    max_size=40,
)


def _xml_expected(s: str) -> str:
    return "".join(
        "\ufffd"
        if (ord(c) < 0x20 and c not in "\t\n\r")
        or 0x7F <= ord(c) <= 0x9F  # DEL and C1: discouraged by XML 1.0, refused by HTML
        or 0xD800 <= ord(c) <= 0xDFFF
        or 0xFDD0 <= ord(c) <= 0xFDEF
        or c in "\ufffe\uffff"
        else c
        for c in s
    )


@settings(max_examples=300, deadline=None)
@given(ANY_TEXT, ANY_TEXT)
def test_xml_text_and_attr_parse_back(body: str, attr: str) -> None:
    doc = f'<?xml version="1.0"?><a b="{text.xml_attr(attr)}">{text.xml_text(body)}</a>'
    root = ET.fromstring(doc.encode("utf-8", "surrogatepass").decode("utf-8", "replace"))
    # an XML parser normalises CR LF and lone CR in content to LF
    expected = _xml_expected(body).replace("\r\n", "\n").replace("\r", "\n")
    assert (root.text or "") == expected
    assert root.get("b") == _xml_expected(attr)


def test_vertical_tab_and_nul_become_replacement_characters() -> None:
    assert text.xml_text("a\vb\x00c") == "a\ufffdb\ufffdc"
    assert text.xml_attr('x"\v<') == "x&quot;\ufffd&lt;"
    assert text.html_text("<b>\v'") == "&lt;b&gt;\ufffd&#39;"  # markupsafe's, as autoescape
    assert text.html_text("a\x7fb\x85c\ufdd0\ttab\nline") == "a\ufffdb\ufffdc\ufffd\ttab\nline"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=40))
def test_yaml_scalar_is_one_scalar(s: str) -> None:
    for template in ("key: {v}\n", "- {v}\n", "{{a: {v}}}\n"):
        doc = yaml.safe_load(template.format(v=text.yaml_scalar(s)))
        value = doc["key"] if isinstance(doc, dict) and "key" in doc else doc
        value = value[0] if isinstance(value, list) else value
        value = value["a"] if isinstance(value, dict) else value
        assert value == s


def test_every_xml_writer_escapes_through_core_text() -> None:
    """A module that writes XML (a feed, an SVG) escapes through `core.text`; no module but
    core/text.py imports another XML/HTML escaper (`xml.sax.saxutils`, `html.escape`)."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "generator"
    writers, stray = [], []
    for path in sorted(root.rglob("*.py")):
        src = path.read_text(encoding="utf-8")
        rel = path.relative_to(root).as_posix()
        if rel == "core/text.py":
            continue
        if "xml.sax.saxutils" in src or "from html import" in src or "html.escape(" in src:
            stray.append(rel)
        if ("<?xml" in src or "<svg" in src) and "generator.core.text" not in src:
            writers.append(rel)
    assert stray == [], f"escape XML/HTML through generator.core.text: {stray}"
    assert writers == [], f"XML writers not escaping through generator.core.text: {writers}"
