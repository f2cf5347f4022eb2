"""The escapers and label checks (`generator/core/text.py`), pinned for `make mutation` (#32).

tests/test_text.py parses what the escapers write back with real parsers (a property: any
correct escape passes); these pin the exact form: which escape each character gets in a YAML
scalar (short, two, four hex digits), that an HTML text node keeps tab and newline as they are,
and the label refusals with their reasons. The confusable classes hold single characters only:
a sequence (`rn` for `m`) joins no class, so no class grows through it.
"""

from __future__ import annotations

import pytest
from markupsafe import Markup

from generator.core.text import (
    _confusable_classes,
    html_text,
    label_problem,
    skeletons,
    xml_attr,
    xml_text,
    yaml_scalar,
)


def test_html_text_escapes_markup_and_keeps_white_space() -> None:
    assert (
        html_text("a\tb\nc\r<&>\"'") == "a\tb\nc\r&lt;&amp;&gt;&#34;&#39;"
    )  # markupsafe's spelling
    assert html_text("v\x0bt") == "v\ufffdt"
    assert xml_attr("a\tb\nc\r") == "a&#9;b&#10;c&#13;"
    assert xml_text("a\tb\"'") == "a\tb\"'"


class _Html:
    """An object that renders itself as HTML (the `__html__` protocol Jinja and markupsafe
    honour), without being a `Markup` string."""

    def __str__(self) -> str:
        return "<b>raw</b>"

    def __html__(self) -> str:
        return "<i>made</i>"


def test_html_text_keeps_html_an_object_made_and_markup_as_it_is() -> None:
    made = html_text(_Html())
    assert made == "<i>made</i>" and isinstance(made, Markup)  # its HTML, not str() escaped
    kept = html_text(Markup("<b>&amp;</b>"))
    assert kept == "<b>&amp;</b>" and isinstance(kept, Markup)  # not escaped a second time


@pytest.mark.parametrize(
    ("raw", "escaped"),
    [
        ("\\", "\\\\"),
        ('"', '\\"'),
        ("\n", "\\n"),
        ("\t", "\\t"),
        ("\r", "\\r"),
        ("\x00", "\\0"),
        ("\x01", "\\x01"),
        ("\x7f", "\\x7f"),
        ("\x85", "\\x85"),
        ("\u2028", "\\u2028"),
        ("\ud800", "\\ud800"),
        ("\ufeff", "\\ufeff"),
        ("\uffff", "\\uffff"),
        ("plain: #x ---", "plain: #x ---"),
        ("\xff\u0100\U0001f600", "\xff\u0100\U0001f600"),
    ],
)
def test_yaml_scalar_escapes_each_character_its_shortest_way(raw: str, escaped: str) -> None:
    assert yaml_scalar(raw) == f'"{escaped}"'


@pytest.mark.parametrize(
    ("label", "why"),
    [
        ("a\u200bb", "U+200B (ZERO WIDTH SPACE)"),
        ("a\x07", "U+0007 (Cc)"),
        ("\u202eevil", "U+202E (RIGHT-TO-LEFT OVERRIDE)"),
        ("   ", "label shows nothing"),
        ("", "label shows nothing"),
    ],
)
def test_label_problems_name_the_character(label: str, why: str) -> None:
    problem = label_problem(label)
    assert problem is not None and why in problem


@pytest.mark.parametrize("label", ["Release workflow", "ci-bot (NVIDIA)", "Ünïcödé ok"])
def test_visible_labels_are_accepted(label: str) -> None:
    assert label_problem(label) is None


def test_the_classes_are_of_single_characters() -> None:
    classes = _confusable_classes()
    assert classes and all(len(k) == 1 and len(v) == 1 for k, v in classes.items())
    assert all(classes[v] == v for v in classes.values())  # a representative is its own class
    assert all(v <= k for k, v in classes.items())  # the smallest code point of the class
    assert classes["l"] == classes["I"] == classes["1"] == classes["|"]
    assert classes["0"] == classes["O"] != classes["o"]


def test_look_alikes_share_a_skeleton_and_others_do_not() -> None:
    assert skeletons("paypal") == skeletons("pаypаl")  # two Cyrillic a
    assert skeletons("Release  bot") == skeletons("release bot")
    assert skeletons("alpha")[0] != skeletons("beta")[0]
    assert skeletons("ab")[1] != skeletons("ba")[1]
