"""The one Jinja environment of the site.

Everything the site renders from recipe or evidence data goes through this environment:
`StrictUndefined` (a missing field is a bug, not an empty string), autoescape on for every
template (HTML and Markdown pages alike: data is always HTML-escaped), and explicit filters for
the other contexts a value can land in. Every printed value goes through `core.text.html_text`
(the environment's `finalize`; the functions below call it as `escape`), so no control
character from data reaches a page raw.


- `md`: inline Markdown text (HTML-escaped, then Markdown punctuation backslash-escaped);
- `url_part`: one path segment or query value of a URL (percent-encoded);
- `script_json`: JSON placed inside `<script>` or `<template>` (no `<`, `>`, `&`, U+2028/9 raw);
- `title`: a front-matter page title (HTML-escaped, then a YAML string: the theme does not
  escape titles).
"""

from __future__ import annotations

import contextlib
import enum
import json
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2
import jinja2.compiler
import jinja2.nodes
from markupsafe import Markup

from generator.core import safeio
from generator.core.errors import SiteError
from generator.core.text import html_text as escape
from generator.core.urls import quote
from generator.evidence.view import Outcome

if TYPE_CHECKING:
    from generator.core.cache import Cache

TEMPLATES = safeio.resolve(Path(__file__)).parent.parent.parent / "site_templates"

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|~>])")


def md_inline(value: object) -> Markup:
    """Text for an inline Markdown context: HTML-escaped, Markdown punctuation neutralised."""
    html = str(escape(str(value)))
    return Markup(_MD_SPECIAL.sub(r"\\\1", html))


def url_part(value: object) -> str:
    """A URL path segment or query value, percent-encoded (never a scheme-changing string)."""
    return quote(str(value), safe="")


# what JSON leaves raw but an HTML page must not carry (C0 is escaped by json.dumps already)
_JSON_RAW_CONTROLS = re.compile("[\x7f-\x9f\ufdd0-\ufdef\ufffe\uffff]")


def script_json(value: object) -> Markup:
    """JSON safe inside a `<script>`/`<template>` element and inside an HTML attribute (DEL, C1
    and non-characters written as `\\u` escapes: the data is the same, the page carries none).
    `script_json_reference`, but the steps that rewrite only characters outside ASCII are
    skipped for JSON that has none (a chart's figure, mostly), and the encoder is made once.
    Measured (one process, CPU, the 3,938 KPI figures of the 1,000 x 20,000 synthetic
    catalog's first 300 recipes, three pairs interleaved): 0.227/0.218/0.212 -> 0.166/0.172/0.164 s."""
    text = _SCRIPT_JSON.encode(value)
    if not text.isascii():  # what the next two steps rewrite is outside ASCII
        text = _JSON_RAW_CONTROLS.sub(_u_escape, text)
        text = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return Markup(
        text.replace("&", "\\u0026")
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("'", "\\u0027")
    )


_SCRIPT_JSON = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)


def _u_escape(m: re.Match[str]) -> str:
    return f"\\u{ord(m.group()):04x}"


def script_json_reference(value: object) -> Markup:
    """`script_json`, every step taken."""
    text = json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )
    text = _JSON_RAW_CONTROLS.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    text = (
        text.replace("&", "\\u0026")
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("'", "\\u0027")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )
    return Markup(text)


def front_matter_title(value: object) -> Markup:
    """A page title for YAML front matter: HTML-escaped first, because the theme writes the
    title into `<title>` and the page header without escaping; then a JSON (YAML) string."""
    return script_json(str(escape(str(value))))


def json_pretty(value: object) -> str:
    """Pretty, sorted JSON for display in a code block (the caller's autoescape applies)."""
    return json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False)


# The em dash as the generated HTML writes it: an entity, so that a page whose own text is
# ASCII is an ASCII string in memory, one byte per character (a str holding one "—" takes two
# bytes per character throughout): every run's page is, and at 1,000 x 20,000 the 20,000 runs'
# pages were held and finished as two-byte strings (see `runpage`). A reader sees the same dash.
EM_DASH = "&mdash;"


def _dash(value: object) -> object:
    return Markup(EM_DASH) if value is None or value == "" else value


# The chips and the signer: one way everywhere they appear (evidence, recipe, index, changelog
# pages). Python functions rather than template macros: an evidence page at 20,000 runs makes a
# million macro calls. `base` is the path from the page to the site root. Every value is
# HTML-escaped (markupsafe's `escape`, as autoescape does); an anchor is percent-encoded first.
# tests/test_site_chips.py holds them to the macros they replaced, for any value.


# Each is a function of its arguments' text (and type) alone, and a page shows the same few
# chips, outcomes and signers over and over (an evidence page one outcome and one signer per
# run, a recipe page ~50 chips): arguments of exact plain types are looked up among those made
# before (`_made`); any other (a `Markup` equals the same plain text and prints differently)
# is made anew. tests/test_site_chips.py holds each to its reference (`..._reference`).
# Measured (one process, CPU, the 1,000 x 20,000 synthetic SiteData, three pairs interleaved
# with the code before, the same pages): 1,000 recipe pages 3.20/2.97/2.90 -> 2.76/2.78/2.67 s,
# 1,000 evidence pages 0.38/0.34/0.33 -> 0.28/0.27/0.27 s.


def chip(kind: str, value: object, base: str) -> Markup:
    """A state chip linking to its legend entry: `value` (or "unknown") in class, anchor, text
    (`chip_reference`)."""
    if type(kind) is str and type(base) is str and (type(value) is str or _str_enum(value)):
        return _made(chip_reference, kind, type(value), value, base)
    return chip_reference(kind, value, base)


def _str_enum(value: object) -> bool:
    """A `StrEnum` member (a verdict, a state): printed as its value by every escaper."""
    return isinstance(value, enum.StrEnum) and type(value).__str__ is enum.StrEnum.__str__


_MADE: dict[tuple[Any, ...], Markup] = {}
_MADE_MAX = 1 << 14


def _made(make: Any, *key: Any) -> Markup:
    """`make` of `key` (its arguments, a type among them where a value's type matters), as
    made before."""
    made = _MADE.get((make, *key))
    if made is None:
        if len(_MADE) >= _MADE_MAX:
            _MADE.clear()
        args = [k for k in key if not isinstance(k, type)]
        made = _MADE[(make, *key)] = make(*args)
    return made


def chip_reference(kind: str, value: object, base: str) -> Markup:
    """`chip`, made anew."""
    v = value or "unknown"
    if not isinstance(v, str):
        v = str(v)
    text, low = escape(v), escape(v.lower())  # a Markup value stays as it is, as in a template
    anchor = url_part(v.lower().replace("/", "-"))  # only unreserved characters and %XX
    k, b = escape(kind), escape(base)
    return Markup(
        f'<a class="aicr-chip aicr-{low}" href="{b}legend.html#{k}-{anchor}"'
        f' title="{k} {text}: what it means">{text}</a>'
    )


def outcome(o: Any, base: str) -> Markup:
    """A judged outcome (`generator.evidence.view.Outcome`) shown one way everywhere: its chip,
    its causes in words beside it and the detail as the title; `data-outcome` and
    `data-causes` carry them for tests and scripts. No page shows a run's, check's or KPI's
    status any other way (tests/test_site_outcomes.py). (`outcome_reference`.)"""
    if (
        type(base) is str
        and type(o) is Outcome
        and type(o.status) is str
        and type(o.detail) is str
        and type(o.causes) is tuple
        and all(type(c) is str for c in o.causes)
    ):
        return _made(outcome_reference, o, base)
    return outcome_reference(o, base)


def outcome_reference(o: Any, base: str) -> Markup:
    """`outcome`, made anew."""
    status = o.status or "not judged"
    cause = escape(o.cause)
    detail = escape(o.detail)
    causes = f' <span class="aicr-cause">{cause}</span>' if o.causes else ""
    title = f' title="{detail}"' if o.detail else ""
    name = escape(status)
    slug = url_part(status.lower().replace(" ", "-").replace("/", "-"))
    badge = (
        f'<a class="aicr-chip aicr-{slug}" href="{escape(base)}legend.html#outcome-{slug}"'
        f' title="outcome {name}: what it means">{name}</a>'
    )
    return Markup(
        f'<span class="aicr-outcome" data-outcome="{name}" data-causes="{cause}"'
        f"{title}>{badge}{causes}</span>"
    )


def sample_chip(base: str) -> Markup:
    """The SAMPLE chip, linking to the legend's definition of sample evidence."""
    if type(base) is str:
        return _made(sample_chip_reference, base)
    return sample_chip_reference(base)


def sample_chip_reference(base: str) -> Markup:
    """`sample_chip`, made anew."""
    return Markup(
        f'<a class="aicr-chip aicr-sample" href="{escape(base)}legend.html#term-sample"'
        ' title="sample evidence: demo data, qualifies nothing">SAMPLE</a>'
    )


def _field(record: Any, name: str) -> Any:
    """A record's field as the templates read it: an attribute, else a mapping key."""
    return getattr(record, name) if hasattr(record, name) else record[name]


def signer(e: Any) -> Markup:
    """A signer shown one way everywhere: its allowlist label (else its identity), a link to the
    identity when it is https, and its class (or "not in the allowlist"); "—" when unsigned.
    (`signer_reference`.)"""
    identity = _field(e, "signer_identity")
    label = _field(e, "signer_label") or identity
    if not label:
        return Markup("—")
    cls = _field(e, "signer_class")
    if type(identity) is str and type(label) is str and type(cls) is str:
        return _made(_signer, identity, label, cls)
    return _signer(identity, label, cls)


def signer_reference(e: Any) -> Markup:
    """`signer`, made anew."""
    identity = _field(e, "signer_identity")
    label = _field(e, "signer_label") or identity
    if not label:
        return Markup("—")
    return _signer(identity, label, _field(e, "signer_class"))


def _signer(identity: Any, label: Any, cls: Any) -> Markup:
    i, lab = escape(identity), escape(label)
    if identity.startswith("https://"):
        inner = f'<a href="{i}" title="{i}">{lab}</a>'
    else:
        inner = f'<span title="{i}">{lab}</span>'
    c = escape(cls or "not in the allowlist")
    return Markup(
        f'<span class="aicr-signer">{inner} <span class="aicr-signer-class">({c})</span></span>'
    )


class _Printed(jinja2.compiler.CodeGenerator):
    """Jinja's code generator, but a printed value is `environment.finalize(value)` where
    Jinja writes `escape(environment.finalize(value))` under autoescape. The site's `finalize`
    (`html_text`) always returns a `Markup`, and markupsafe's `escape` of a `Markup` is a new
    `Markup` of the same text: the page is the same string, made without a second escape and
    a second `Markup` per value. Only for an environment whose `finalize` is `html_text`
    (`environment`); blocks of volatile autoescape keep Jinja's code.

    The reference is `environment_reference` (Jinja's own code generator, `html_text` as the
    finalize): tests/test_site_printed.py renders every page template of a synthetic and of a
    hand-made site, and small templates of every way a value is printed for drawn (hostile)
    values, both ways and requires equal strings. Measured (one process, CPU, the 1,000 x
    20,000 synthetic catalog's SiteData, three pairs interleaved with the code before, the
    same pages): its 1,000 recipe pages 3.77/3.86/3.86 -> 2.84/3.01/2.90 s and evidence pages
    0.57/0.57/0.55 -> 0.33/0.35/0.34 s with `html_text`'s look-up; that look-up alone 3.40/3.43
    and 0.60/0.43 s.
    """

    def _output_child_pre(self, node: jinja2.nodes.Expr, frame: Any, finalize: Any) -> None:
        if _marked(frame, finalize):
            self.write(finalize.src)
            return
        super()._output_child_pre(node, frame, finalize)

    def _output_child_post(self, node: jinja2.nodes.Expr, frame: Any, finalize: Any) -> None:
        if _marked(frame, finalize):
            self.write(")")
            return
        super()._output_child_post(node, frame, finalize)


def _marked(frame: Any, finalize: Any) -> bool:
    """Whether a printed value is the finalize's `Markup` as it is (see `_Printed`)."""
    ctx = frame.eval_ctx
    return bool(ctx.autoescape) and not ctx.volatile and finalize.src == "environment.finalize("


@cache
def environment(root: Path = TEMPLATES) -> jinja2.Environment:
    """The site's Jinja environment, built once per template root: `environment_reference`
    with each printed value escaped once (`_Printed`)."""
    env = _environment(root)
    env.code_generator_class = _Printed
    return env


@cache
def environment_reference(root: Path = TEMPLATES) -> jinja2.Environment:
    """The site's Jinja environment as Jinja makes it (the reference of `environment`)."""
    return _environment(root)


def _environment(root: Path) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FunctionLoader(safeio.template_source(root)),  # core/safeio.py
        undefined=jinja2.StrictUndefined,
        autoescape=True,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=escape,  # every printed value: escaped, controls replaced (Markup kept)
    )
    env.filters.update(
        md=md_inline,
        url_part=url_part,
        script_json=script_json,
        title=front_matter_title,
        json_pretty=json_pretty,
        dash=_dash,
    )
    env.globals.update(chip=chip, outcome=outcome, sample_chip=sample_chip, signer=signer)
    return env


def render(template: str, **context: Any) -> str:
    """Render `template` (a path under site_templates/) with `context`."""
    return _render(environment(), template, context)


def render_reference(template: str, **context: Any) -> str:
    """`render` through `environment_reference` (Jinja's own code: the reference)."""
    return _render(environment_reference(), template, context)


def _render(env: jinja2.Environment, template: str, context: dict[str, Any]) -> str:
    try:
        return env.get_template(template).render(**context)
    except jinja2.TemplateError as e:  # a template bug: say which template and where
        lineno = getattr(e, "lineno", None)
        where = f"{template}:{lineno}" if lineno else template
        raise SiteError(f"site template {where}: {e}") from e


# --- compiled templates, kept in the build cache -------------------------------------------------

TEMPLATES_STAGE = "templates"


@dataclass(frozen=True, slots=True)
class CompiledTemplate:
    """What a compiled template is made of, beside this module (the environment's options):
    the template (jinja's key of its name and file, and the checksum of its source), jinja's
    version and Python's (the code is marshalled)."""

    key: str
    checksum: str
    jinja: str
    python: str


class StoredBytecode(jinja2.BytecodeCache):
    """Jinja's compiled templates in the build cache (authenticated entries: the code is
    marshalled, and is loaded only from an entry this machine's key vouches for), keyed by the
    derived key of their `CompiledTemplate`. Not a record: it counts what it compiled.

    Every build compiled each template it rendered from its source, in every process: a
    rebuild after one evidence file changed renders a recipe's page, its evidence page and
    a few site-wide pages, and compiling their templates took ~0.12 CPU-s of it (recipe.md.j2
    alone 68 ms; 200 x 4,000, load ~2), whatever the catalog's size. Without a cache
    (`--no-cache`) jinja compiles them as before: the compiled code is the same."""

    def __init__(self, store: Cache) -> None:
        self.store = store
        self.compiled = self.loaded = 0

    def _key(self, bucket: jinja2.bccache.Bucket) -> str:
        from generator.core.cache import fingerprint
        from generator.core.memo import derive_key

        made_of = CompiledTemplate(bucket.key, bucket.checksum, jinja2.__version__, sys.version)
        code = fingerprint("site/jinja.py")
        parts = derive_key(TEMPLATES_STAGE, code, made_of, _values_only)
        return self.store.stored(TEMPLATES_STAGE, [(parts,)], sweep=True)[0][0]

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        data = self.store.get(TEMPLATES_STAGE, self._key(bucket), "", authenticated=True)
        if data is not None:
            bucket.bytecode_from_string(data)  # checks jinja's header and the checksum
            self.loaded += bucket.code is not None

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        self.compiled += 1
        data = bucket.bytecode_to_string()
        self.store.put(TEMPLATES_STAGE, self._key(bucket), "", data, authenticated=True)


def _values_only(path: Path, where: str) -> str:
    raise TypeError(f"a compiled template is made of values, not of files ({path}, {where})")


@contextlib.contextmanager
def compiled_in(store: Cache | None) -> Iterator[StoredBytecode | None]:
    """Templates loaded meanwhile are compiled once and kept in `store` (`StoredBytecode`);
    without a store (or a disabled one), compiled from their source as always."""
    env = environment()
    if store is None or not store.enabled or env.bytecode_cache is not None:
        yield None
        return
    env.bytecode_cache = kept = StoredBytecode(store)
    try:
        yield kept
    finally:
        env.bytecode_cache = None
