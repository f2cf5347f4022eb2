"""Printed values escaped once: the site's Jinja environment (`jinja.environment`: its code
generator `_Printed` prints `finalize(value)` where Jinja prints `escape(finalize(value))`)
against Jinja's own (`jinja.environment_reference`), and `html_text` (plain strings looked up
among those escaped before) against `html_text_reference`. Every page template rendered for a
synthetic catalog's site and for the hand-made site of tests/test_site_pages.py (hostile text
among its records) gives the same string both ways, and so do small templates of every way a
value is printed (autoescape blocks, macros, set blocks, filters, includes) for drawn values."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import jinja2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markupsafe import Markup

from generator.bench.synth import SynthOptions, synthesize
from generator.core import text
from generator.evidence.view import Outcome
from generator.site import jinja, pages
from generator.site.build import BuildOptions, gather
from generator.site.model import LaneVerdict, SiteData
from tests.test_site_pages import site as hand_made


def _rendered_both_ways(site: SiteData, monkeypatch: pytest.MonkeyPatch) -> int:
    """Every template render of every page of `site`, compared with the reference's."""
    calls: list[tuple[str, dict[str, Any]]] = []
    made = jinja._render

    def recorded(env: Any, template: str, context: dict[str, Any]) -> str:
        calls.append((template, context))
        return made(env, template, context)

    monkeypatch.setattr(jinja, "_render", recorded)
    pages.all_pages(site, "# Contract\n\n## Why\n\nBecause.\n", ())
    monkeypatch.undo()
    for template, context in calls:
        assert jinja.render(template, **context) == jinja.render_reference(template, **context)
    return len({template for template, _ in calls})


def test_every_page_template_of_a_synthetic_site_renders_as_the_reference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synthesize(SynthOptions(4, 40, seed=3, jobs=1), tmp_path)
    options = BuildOptions(
        catalog=tmp_path / "catalog",
        evidence=tmp_path / "evidence",
        out=tmp_path / "site",
        trust_root=str(tmp_path / "trust" / "synth-root.json"),
        bundles=False,
    )
    assert _rendered_both_ways(gather(options, 1764800000), monkeypatch) >= 8


def test_every_page_template_of_the_hand_made_site_renders_as_the_reference(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert _rendered_both_ways(hand_made(), monkeypatch) >= 8


class _Html:
    """An object with its own HTML (`__html__`), as markupsafe reads it."""

    def __init__(self, html: str) -> None:
        self.html = html

    def __html__(self) -> str:
        return self.html


HOSTILE = st.text(
    alphabet=st.one_of(
        st.sampled_from("<>&\"'`\x00\x07\x0b\x7f\x85\ufdd0\uffff\t\n "), st.characters()
    ),
    max_size=12,
)
VALUES = st.one_of(
    HOSTILE,
    HOSTILE.map(Markup),
    HOSTILE.map(_Html),
    st.integers(),
    st.floats(allow_nan=True),
    st.none(),
    st.booleans(),
    st.lists(HOSTILE, max_size=3),
)
SOURCES = [
    "{{ v }}|{{ v }}",
    '<p title="{{ v }}">{{ v | dash }}</p>',
    "{% autoescape false %}{{ v }}{% endautoescape %}{{ v }}",
    "{% autoescape true %}{{ v }}{% endautoescape %}",
    "{% macro m(x) %}<b>{{ x }}</b>{% endmacro %}{{ m(v) }}{{ m(v) | upper }}",
    "{% set s %}<i>{{ v }}</i>{% endset %}{{ s }}{{ s | length }}",
    "{% for x in [v, v] %}{{ loop.index }}{{ x }}{% endfor %}",
    "{{ [v, 1] | join(', ') }}{{ v | string }}{{ v | e }}{{ v | safe }}",
    "{{ v | md }}{{ v | url_part }}{{ v | script_json }}{{ v | title }}",
    '{% set total = v %}{% include "pages/_untested.html.j2" %}{{ v }}',
]


@settings(max_examples=200, deadline=None)
@given(value=VALUES, source=st.sampled_from(SOURCES))
def test_any_value_is_printed_as_the_reference_prints_it(value: object, source: str) -> None:
    try:
        want = jinja.environment_reference().from_string(source).render(v=value)
    except (
        TypeError,
        ValueError,
        jinja2.TemplateError,
    ) as e:  # a filter refusing the value refuses it both ways
        with pytest.raises(type(e)):
            jinja.environment().from_string(source).render(v=value)
        return
    assert jinja.environment().from_string(source).render(v=value) == want


@settings(max_examples=300, deadline=None)
@given(value=VALUES)
def test_html_text_is_its_reference(value: object) -> None:
    for _ in range(2):  # escaped anew, then looked up
        got = text.html_text(value)
        assert got == text.html_text_reference(value) and type(got) is Markup


def test_html_text_forgets_when_full(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(text, "_ESCAPED_MAX", 4)
    text._ESCAPED.clear()
    for i in range(10):
        assert text.html_text(f"<{i}>") == f"&lt;{i}&gt;"
        assert len(text._ESCAPED) <= 4


# --- the chips, outcomes and signers made before ---------------------------------------------

CHIP_VALUES = st.one_of(
    HOSTILE, HOSTILE.map(Markup), st.sampled_from(list(LaneVerdict)), st.none(), st.integers()
)
BASES = st.sampled_from(["", "../", "../../", "<b>&"])


@settings(max_examples=300, deadline=None)
@given(
    kind=st.sampled_from(["verdict", "consensus", "<k>"]),
    values=st.lists(CHIP_VALUES, min_size=1, max_size=4),
    base=BASES,
)
def test_chips_made_before_are_made_as_the_reference(
    kind: str, values: list[object], base: str
) -> None:
    for value in [*values, *(str(v) for v in values if v is not None)] * 2:
        _alike(jinja.chip, jinja.chip_reference, kind, value, base)
    assert jinja.sample_chip(base) == jinja.sample_chip_reference(base)


def _alike(made: Any, reference: Any, *args: Any) -> None:
    """`made(*args)` is `reference(*args)`, or both refuse the arguments alike (a lone
    surrogate cannot be percent-encoded as UTF-8: the anchor refuses it either way)."""
    try:
        want = reference(*args)
    except UnicodeEncodeError:
        with pytest.raises(UnicodeEncodeError):
            made(*args)
        return
    got = made(*args)
    assert got == want and type(got) is type(want)


@settings(max_examples=300, deadline=None)
@given(
    status=st.one_of(HOSTILE, HOSTILE.map(Markup)),
    causes=st.lists(st.one_of(HOSTILE, HOSTILE.map(Markup)), max_size=2).map(tuple),
    detail=st.one_of(HOSTILE, HOSTILE.map(Markup)),
    base=BASES,
)
def test_outcomes_made_before_are_made_as_the_reference(
    status: str, causes: tuple[str, ...], detail: str, base: str
) -> None:
    plain = Outcome(str(status), tuple(str(c) for c in causes), str(detail))
    for o in [Outcome(status, causes, detail), plain] * 2:
        _alike(jinja.outcome, jinja.outcome_reference, o, base)


@settings(max_examples=300, deadline=None)
@given(
    identity=st.one_of(HOSTILE, HOSTILE.map(lambda t: "https://" + t), HOSTILE.map(Markup)),
    label=st.one_of(HOSTILE, HOSTILE.map(Markup), st.none()),
    cls=st.one_of(HOSTILE, HOSTILE.map(Markup), st.none()),
)
def test_signers_made_before_are_made_as_the_reference(
    identity: str, label: str | None, cls: str | None
) -> None:
    records: list[object] = [
        SimpleNamespace(signer_identity=identity, signer_label=label, signer_class=cls),
        {"signer_identity": str(identity), "signer_label": label, "signer_class": cls},
    ]
    for e in records * 2:
        _alike(jinja.signer, jinja.signer_reference, e)


JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), HOSTILE),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(HOSTILE, inner, max_size=4)
    ),
    max_leaves=12,
)


@settings(max_examples=400, deadline=None)
@given(value=JSON)
def test_script_json_is_its_reference(value: object) -> None:
    try:
        want = jinja.script_json_reference(value)
    except ValueError:  # NaN or infinity: refused both ways
        with pytest.raises(ValueError):
            jinja.script_json(value)
        return
    got = jinja.script_json(value)
    assert got == want and type(got) is Markup
