"""The one Jinja environment of the site.

Everything the site renders from recipe or evidence data goes through this environment:
`StrictUndefined` (a missing field is a bug, not an empty string), autoescape on for every
template (HTML and Markdown pages alike: data is always HTML-escaped), and explicit filters for
the other contexts a value can land in:

- `md`: inline Markdown text (HTML-escaped, then Markdown punctuation backslash-escaped);
- `url_part`: one path segment or query value of a URL (percent-encoded);
- `script_json`: JSON placed inside `<script>` or `<template>` (no `<`, `>`, `&`, U+2028/9 raw);
- `title`: a front-matter page title (HTML-escaped, then a YAML string: the theme does not
  escape titles).
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import quote

import jinja2
from markupsafe import Markup, escape

from generator.core.errors import SiteError

TEMPLATES = Path(__file__).resolve().parent.parent.parent / "site_templates"

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|~>])")


def md_inline(value: object) -> Markup:
    """Text for an inline Markdown context: HTML-escaped, Markdown punctuation neutralised."""
    html = str(escape(str(value)))
    return Markup(_MD_SPECIAL.sub(r"\\\1", html))


def url_part(value: object) -> str:
    """A URL path segment or query value, percent-encoded (never a scheme-changing string)."""
    return quote(str(value), safe="")


def script_json(value: object) -> Markup:
    """JSON safe inside a `<script>`/`<template>` element and inside an HTML attribute."""
    text = json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )
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


def _dash(value: object) -> object:
    return "—" if value is None or value == "" else value


@cache
def environment(root: Path = TEMPLATES) -> jinja2.Environment:
    """The site's Jinja environment, built once per template root."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(root)),
        undefined=jinja2.StrictUndefined,
        autoescape=True,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        md=md_inline,
        url_part=url_part,
        script_json=script_json,
        title=front_matter_title,
        json_pretty=json_pretty,
        dash=_dash,
    )
    return env


def render(template: str, **context: Any) -> str:
    """Render `template` (a path under site_templates/) with `context`."""
    try:
        return environment().get_template(template).render(**context)
    except jinja2.TemplateError as e:  # a template bug: say which template and where
        lineno = getattr(e, "lineno", None)
        where = f"{template}:{lineno}" if lineno else template
        raise SiteError(f"site template {where}: {e}") from e
