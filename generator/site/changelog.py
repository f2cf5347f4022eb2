"""What changed in the catalog, as a page (`changelog.html`) and an Atom feed (`changelog.xml`).

Entries come from the records the build already has, dated by the evidence itself: each
evidence run (new evidence, counted or not, and why not), each scale ceiling (dated by the
newest counted run on its lane), and each recipe with the date its overlay file was added in the
catalog's git history. Newest first; same inputs (and history), same bytes.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

from generator.core.text import xml_attr, xml_text
from generator.core.timeutil import midnight_rfc3339
from generator.evidence.view import RunFacts, facts
from generator.site.model import SiteData

FEED = "changelog.xml"
FEED_ENTRIES = 200


@dataclass(frozen=True, slots=True)
class Entry:
    date: str  # YYYY-MM-DD or an RFC 3339 time
    kind: str  # evidence | ceiling | recipe
    title: str
    link: str  # site-relative
    key: str  # stable and unique


# the site `entries` was last asked about, and its entries: the page and the feed are made from
# one site, one after the other (20,000 runs at 1,000 recipes: 0.13 profiled s each time)
_LAST: list[tuple[SiteData, tuple[Entry, ...]]] = []


def entries(site: SiteData) -> list[Entry]:
    """Every dated change the site knows, newest first: evidence runs, qualification changes
    (the timeline; without it, each current ceiling dated by its newest run), new recipes.
    Made once for a site (the same object: records are frozen), as `entries_reference` makes
    them."""
    if _LAST and _LAST[0][0] is site:
        return list(_LAST[0][1])
    out = entries_reference(site)
    _LAST[:] = [(site, tuple(out))]
    return out


def entries_reference(site: SiteData) -> list[Entry]:
    """`entries`, made each time (the reference)."""
    out = _evidence_entries(site) + _timeline_entries(site)
    if not site.timeline:
        out += _ceiling_entries(site)
    out += _recipe_entries(site)
    out.sort(key=lambda x: (x.date, x.kind, x.key), reverse=True)
    return out


# the site `newest` was last asked about, and what it found (the page and the feed ask alike)
_NEWEST: list[tuple[SiteData, int, tuple[Entry, ...], int]] = []


def newest(site: SiteData, n: int | None = None) -> tuple[list[Entry], int]:
    """The `n` newest of `entries(site)`, and how many entries there are: what the changelog
    page and the feed show. The entry of a run is made only for the `n` newest dated runs
    (`heapq.nlargest` over the runs' rows by the entries' order: an evidence entry sorts by
    its date, then its key, `run-<id>`, unique), the few others (ceilings, changes, recipes)
    all made and the lot sorted as `entries` sorts them. The reference is `entries_reference`
    cut at `n` (tests/test_site_pages.py). At 1,000 recipes x 20,000 runs every build made
    20,000 entries for the 200 shown (0.08-0.10 CPU-s)."""
    n = FEED_ENTRIES if n is None else n  # read when called: the bound is the module's
    if _NEWEST and _NEWEST[0][0] is site and _NEWEST[0][1] == n:
        return list(_NEWEST[0][2]), _NEWEST[0][3]
    dated = [e for e in facts(site.evidence) if e.attested_at]
    top = heapq.nlargest(n, dated, key=lambda e: (e.attested_at, f"run-{e.id}"))
    out = [_evidence_entry(e) for e in top] + _timeline_entries(site)
    if not site.timeline:
        out += _ceiling_entries(site)
    out += _recipe_entries(site)
    total = len(out) - len(top) + len(dated)
    out.sort(key=lambda x: (x.date, x.kind, x.key), reverse=True)
    _NEWEST[:] = [(site, n, tuple(out[:n]), total)]
    return out[:n], total


def _evidence_entries(site: SiteData) -> list[Entry]:
    """One entry per dated run, with its judged outcome and why, linking to the run's page."""
    return [_evidence_entry(e) for e in facts(site.evidence) if e.attested_at]


def _evidence_entry(e: RunFacts) -> Entry:
    from generator.site.pages import run_url

    judged = e.outcome
    state = "counted" if e.counted else "not counted"
    why = f": {judged.cause}" if judged.causes else ""
    who = e.signer_label or e.signer_identity or "unknown signer"
    sample = "SAMPLE " if e.sample else ""
    return Entry(
        e.attested_at,
        "evidence",
        f"{sample}evidence: {e.recipe} × {e.profile or 'standard'} {e.lane or '?'} "
        f"{judged.status}{why} by {who} ({state})",
        run_url(e),
        f"run-{e.id}",
    )


def _ceiling_entries(site: SiteData) -> list[Entry]:
    """Without the timeline (no --timeline): the current ceiling, dated by its newest run."""
    from generator.site.pages import slug as slug_of

    out: list[Entry] = []
    for r in site.recipes:
        runs = facts(r.evidence)
        for p in r.profiles:
            if not p.ceiling:
                continue
            dates = [
                e.attested_at
                for e in runs
                if e.counted and e.profile == p.profile and e.lane == p.ceiling and e.attested_at
            ]
            if not dates:
                continue
            sample = "SAMPLE " if any(e.sample for e in runs if e.profile == p.profile) else ""
            out.append(
                Entry(
                    max(dates),
                    "ceiling",
                    f"{sample}ceiling: {r.name} × {p.profile} qualified up to {p.ceiling} "
                    f"({p.ceiling_nodes:,} nodes), {p.consensus}",
                    f"recipes/{slug_of(r.name)}.html#summary-{p.profile}",
                    f"ceiling-{r.name}-{p.profile}-{p.ceiling}",
                )
            )
    return out


def _recipe_entries(site: SiteData) -> list[Entry]:
    """One entry per recipe added (by the commit that added it)."""
    from generator.site.pages import slug as slug_of

    known = {r.name for r in site.recipes}
    return [
        Entry(
            date, "recipe", f"new recipe: {name}", f"recipes/{slug_of(name)}.html", f"recipe-{name}"
        )
        for name, date in site.recipes_added
        if name in known
    ]


def _timeline_entries(site: SiteData) -> list[Entry]:
    """One entry per qualification change (generator/site/timeline.py): dated by its commit,
    with an id unique to the recipe × profile and the commit, losses as well as gains."""
    from generator.site.pages import slug as slug_of

    sample = {e.recipe for e in facts(site.evidence) if e.sample}
    out = []
    for c in site.timeline:
        why = f": {'; '.join(c.causes)}" if c.causes else ""
        tag = "SAMPLE " if c.recipe in sample else ""
        out.append(
            Entry(
                c.date,
                f"qualification {c.direction}",
                f"{tag}{c.direction}: {c.recipe} × {c.profile}: {c.summary}{why} "
                f"(commit {c.commit[:12]})",
                f"recipes/{slug_of(c.recipe)}.html#{c.anchor}",
                f"change-{c.id}",
            )
        )
    return out


def atom(site: SiteData, site_url: str = "") -> bytes:
    """The Atom feed of the newest entries; links are absolute under `site_url` when given."""
    base = site_url if not site_url or site_url.endswith("/") else site_url + "/"
    items, _ = newest(site)
    updated = items[0].date if items else site.generated_at
    page = base + "changelog.html"

    lines = [
        '<?xml version="1.0" encoding="utf-8"?>',
        '<feed xmlns="http://www.w3.org/2005/Atom">',
        "<title>AICR Recipe Catalog: what changed</title>",
        f"<id>{xml_text(base + FEED) if base else 'urn:aicr-catalog:changelog'}</id>",
        f'<link rel="self" href="{xml_attr(base + FEED)}"/>',
        f'<link rel="alternate" href="{xml_attr(page)}"/>',
        f"<updated>{xml_text(midnight_rfc3339(updated))}</updated>",
        "<author><name>AICR Recipe Catalog</name></author>",
    ]
    for x in items:
        lines += [
            "<entry>",
            f"<title>{xml_text(x.title)}</title>",
            f"<id>urn:aicr-catalog:{xml_text(x.key)}</id>",
            f'<link href="{xml_attr(base + x.link)}"/>',
            f"<updated>{xml_text(midnight_rfc3339(x.date))}</updated>",
            f'<category term="{xml_attr(x.kind)}"/>',
            "</entry>",
        ]
    lines.append("</feed>")
    return ("\n".join(lines) + "\n").encode("utf-8")
