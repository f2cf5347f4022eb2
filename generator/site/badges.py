"""SVG badges per recipe × scale profile, with a JSON sidecar carrying their dates.

Made in the same build as the pages, from the same records, so a badge never disagrees with the
page it links to. A badge names its recipe wherever it is embedded: its title and aria-label
always say recipe, scale profile and status; its visible label is "recipe · profile" when that
fits in `LABEL_MAX` characters, else the profile alone (the title still names the recipe).
Text is XML-escaped (`core.text`); widths come from a fixed per-character estimate so the
bytes do not depend on installed fonts.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from generator.core.records import Consensus
from generator.core.text import html_text, md_link_text, xml_attr, xml_text
from generator.core.urls import quote
from generator.evidence.view import facts
from generator.site import apifiles
from generator.site.api import Reuse, dumps
from generator.site.model import ProfileView, RecipeView, SiteData
from generator.site.pages import slug
from generator.site.publish import Derived

# Dark enough backgrounds for white 11px text (WCAG AA contrast >= 4.5:1).
COLOURS: dict[str, str] = {
    Consensus.CONFIRMED: "#1a7f37",
    Consensus.SINGLE: "#0969da",
    Consensus.PARTIAL: "#6f42c1",
    Consensus.CONTESTED: "#9a6700",
    Consensus.FAILING: "#cf222e",
    Consensus.UNTESTED: "#57606a",
}
LABEL_COLOUR = "#24292f"
# the longest visible label (recipe · profile) a badge carries; a longer one shows the profile
LABEL_MAX = 48


def _width(text: str) -> int:
    return 10 + sum(7 if c.isupper() or c in "mwMW@" else 6 for c in text)


def badge_svg(label: str, message: str, colour: str, title: str = "") -> str:
    """One badge: `label` on the left, `message` on `colour`; `title` (default "label: message")
    is its accessible name and tooltip."""
    lw, mw = _width(label), _width(message)
    total = lw + mw
    title = title or f"{label}: {message}"
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{total}" height="20" role="img" '
        f'aria-label="{xml_attr(title)}"><title>{xml_text(title)}</title>'
        f'<rect width="{lw}" height="20" fill="{LABEL_COLOUR}"/>'
        f'<rect x="{lw}" width="{mw}" height="20" fill="{colour}"/>'
        '<g fill="#fff" font-family="Verdana,DejaVu Sans,sans-serif" font-size="11">'
        f'<text x="{lw / 2:g}" y="14" text-anchor="middle">{xml_text(label)}</text>'
        f'<text x="{lw + mw / 2:g}" y="14" text-anchor="middle">{xml_text(message)}</text>'
        "</g></svg>\n"
    )


def _sample(recipe: RecipeView, p: ProfileView) -> bool:
    return any(e.sample for e in facts(recipe.evidence) if e.profile == p.profile)


def _message(recipe: RecipeView, p: ProfileView) -> str:
    """The badge's text; sample evidence says SAMPLE first, wherever the badge is embedded."""
    ceiling = f"{p.ceiling_nodes} nodes" if p.ceiling_nodes else "no ceiling"
    return ("SAMPLE · " if _sample(recipe, p) else "") + f"{p.consensus} · {ceiling}"


def label(recipe: RecipeView, p: ProfileView) -> str:
    """The badge's visible label: recipe and profile when it fits, else the profile."""
    full = f"{recipe.name} · {p.profile}"
    return full if len(full) <= LABEL_MAX else p.profile


def title(recipe: RecipeView, p: ProfileView) -> str:
    """The badge's accessible name: always the recipe, the scale profile and the status."""
    return f"AICR recipe {recipe.name}, scale profile {p.profile}: {_message(recipe, p)}"


def badge_record(recipe: RecipeView, p: ProfileView, site: SiteData) -> dict[str, Any]:
    runs = facts(recipe.evidence)
    attested = [e.attested_at for e in runs if e.counted and e.profile == p.profile]
    return {
        "recipe": recipe.name,
        "scaleProfile": {"name": p.profile, "version": p.profile_version},
        "digest": p.digest,
        "consensus": p.consensus,
        "ceiling": p.ceiling or None,
        "ceilingNodes": p.ceiling_nodes,
        "generatedAt": site.generated_at,
        "attestedAt": max(attested) if attested else None,
        "sample": _sample(recipe, p),
        "message": _message(recipe, p),
        "label": label(recipe, p),
        "title": title(recipe, p),
    }


@dataclass(frozen=True, slots=True)
class Embed:
    """How to embed one badge elsewhere (a README, a dashboard): Markdown and HTML that show the
    badge and link to the recipe page's row of that profile."""

    profile: str
    markdown: str
    html: str
    absolute: bool  # False: URLs relative to the site's root (no --site-url was given)


def site_base(site: SiteData) -> str:
    """The URL the site is served under, with a trailing slash; "" when not known."""
    url = site.site_url
    return url if not url or url.endswith("/") else url + "/"


def embeds(recipe: RecipeView, site: SiteData) -> tuple[Embed, ...]:
    """The embed snippets of each of `recipe`'s badges: absolute URLs under `--site-url` when it
    was given, else relative to the site's root (the page says so)."""
    base, s = site_base(site), quote(slug(recipe.name), safe="")
    out = []
    for p in recipe.profiles:
        part = quote(p.profile, safe="")
        img, page = f"{base}badges/{s}/{part}.svg", f"{base}recipes/{s}.html#profile-{part}"
        alt = title(recipe, p)
        markdown = f"[![{md_link_text(alt)}]({img})]({page})"
        html = (
            f'<a href="{html_text(page)}"><img src="{html_text(img)}" alt="{html_text(alt)}"></a>'
        )
        out.append(Embed(p.profile, markdown, html, bool(base)))
    return tuple(out)


def _svg(recipe: RecipeView, p: ProfileView) -> bytes:
    colour = COLOURS.get(p.consensus, COLOURS[Consensus.UNTESTED])
    return badge_svg(label(recipe, p), _message(recipe, p), colour, title(recipe, p)).encode()


def _json(recipe: RecipeView, p: ProfileView, site: SiteData) -> bytes:
    return dumps(badge_record(recipe, p, site))


def iter_badge_files(
    site: SiteData, reuse: Reuse | None = None
) -> Iterator[tuple[str, bytes | Derived]]:
    """Each recipe × profile's badge (SVG) and its record (JSON), as (path, bytes). With
    `reuse` (a build with a cache) both come as `Derived` from the recipe's runs: a badge shows
    its recipe's status, which depends on the recipe's runs and the build's other inputs alone,
    so an unchanged recipe's badges are linked from the previous site, not made."""
    for r in site.recipes:
        for p in r.profiles:
            at = {"name": slug(r.name), "profile": p.profile}
            svg, record = functools.partial(_svg, r, p), functools.partial(_json, r, p, site)
            if reuse is None:
                yield apifiles.BADGE_SVG.path(**at), svg()
                yield apifiles.BADGE_JSON.path(**at), record()
                continue
            for file, kind, make in (
                (apifiles.BADGE_SVG, "badge-svg", svg),
                (apifiles.BADGE_JSON, "badge-json", record),
            ):
                source = reuse.source(f"{kind}:{p.profile}", r.name, facts(r.evidence))
                yield file.path(**at), Derived(source, make)


def badge_files(site: SiteData) -> dict[str, bytes]:
    return {rel: data for rel, data in iter_badge_files(site) if isinstance(data, bytes)}
