"""The chips and the signer are Python functions; they must write what the Jinja macros they
replaced wrote, for any value (the macro text is kept here as the reference)."""

from __future__ import annotations

from dataclasses import dataclass

import jinja2
from hypothesis import given
from hypothesis import strategies as st

from generator.core.text import html_text
from generator.site import jinja as site_jinja

MACROS = """\
{% macro chip(kind, value, base) -%}
{%- set v = (value or "unknown") | string -%}
<a class="aicr-chip aicr-{{ v | lower }}" href="{{ base }}legend.html#{{ kind }}-{{ v | lower | replace("/", "-") | url_part }}" title="{{ kind }} {{ v }}: what it means">{{ v }}</a>
{%- endmacro %}
{% macro sample_chip(base) -%}
<a class="aicr-chip aicr-sample" href="{{ base }}legend.html#term-sample" title="sample evidence: demo data, qualifies nothing">SAMPLE</a>
{%- endmacro %}
{% macro signer(e) -%}
{%- set label = e.signer_label or e.signer_identity -%}
{%- if not label -%}—{%- else -%}
<span class="aicr-signer">{% if e.signer_identity.startswith("https://") %}<a href="{{ e.signer_identity }}" title="{{ e.signer_identity }}">{{ label }}</a>{% else %}<span title="{{ e.signer_identity }}">{{ label }}</span>{% endif %} <span class="aicr-signer-class">({{ e.signer_class or "not in the allowlist" }})</span></span>
{%- endif -%}
{%- endmacro %}
"""


def _reference() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.DictLoader({"m": MACROS}),
        undefined=jinja2.StrictUndefined,
        autoescape=True,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=html_text,  # as the site's environment: every printed value, controls replaced
    )
    env.filters["url_part"] = site_jinja.url_part
    return env


REF = _reference().get_template("m").module
TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30)
HOSTILE = st.sampled_from(['"><script>', "a/b", "PASS", "Fail", "&amp;", "https://x/'y", ""])


@given(kind=st.sampled_from(["verdict", "state", "consensus", "health"]), value=TEXT | HOSTILE)
def test_chip_writes_what_the_macro_wrote(kind: str, value: str) -> None:
    for base in ("", "../"):
        assert str(site_jinja.chip(kind, value, base)) == str(REF.chip(kind, value, base))


def test_chip_of_nothing_is_unknown() -> None:
    assert ">unknown</a>" in site_jinja.chip("state", None, "../")
    assert str(site_jinja.chip("state", None, "")) == str(REF.chip("state", None, ""))


def test_sample_chip_writes_what_the_macro_wrote() -> None:
    for base in ("", "../", '"'):
        assert str(site_jinja.sample_chip(base)) == str(REF.sample_chip(base))


@dataclass
class _Run:
    signer_identity: str
    signer_label: str
    signer_class: str


@given(
    identity=TEXT | HOSTILE | st.builds(lambda s: "https://" + s, TEXT),
    label=TEXT | HOSTILE,
    klass=TEXT | st.sampled_from(["first-party", "partner", ""]),
)
def test_signer_writes_what_the_macro_wrote(identity: str, label: str, klass: str) -> None:
    for run in (
        _Run(identity, label, klass),
        {"signer_identity": identity, "signer_label": label, "signer_class": klass},
    ):
        assert str(site_jinja.signer(run)) == str(REF.signer(run))
