"""Markdown pages of the site, generated from a `SiteData` with the one Jinja environment.

Pages are Markdown with HTML blocks for data (tables, lists): every value is HTML-escaped by
autoescape, inline Markdown text goes through the `md` filter, so what a recipe or an evidence
file says is shown as text and never interpreted. The output is engine-neutral Markdown that
`mkdocs build` (or any Markdown site generator) turns into HTML.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from generator.core import names
from generator.core.errors import SiteError
from generator.core.records import ScaleProfile
from generator.evidence.view import EvidenceView, RunFacts, by_recipe, facts
from generator.site import islands
from generator.site.audit import statement_file
from generator.site.charts import (
    NOT_IN_LADDER,
    chart_html,
    chart_id,
    kpi_figures,
    ladder_figure,
    lane_verdicts,
    verdict_heatmap,
)
from generator.site.islands import STAMP_TITLE
from generator.site.jinja import md_inline, render
from generator.site.model import LaneVerdict, LaneView, ProfileView, RecipeView, SiteData
from generator.site.runpage import run_markdown
from generator.site.summary import band, summaries

_SAFE_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,200}$")


def slug(name: str) -> str:
    """The file name of a recipe's pages: its name when it is URL- and file-safe."""
    if names.valid(_SAFE_NAME, name) and ".." not in name:
        return name
    import hashlib

    return "r-" + hashlib.sha256(name.encode()).hexdigest()[:16]


def _updated(runs: Iterable[RunFacts]) -> str:
    """The date of the newest run shown (YYYY-MM-DD), "" when none: when the page's data last
    changed, as far as the evidence says."""
    dates = [r.attested_at[:10] for r in runs if re.match(r"^\d{4}-\d{2}-\d{2}", r.attested_at)]
    return max(dates, default="")


def has_sample(runs: Sequence[RunFacts]) -> bool:
    """Whether any of `runs` is SAMPLE evidence (read from their rows: `facts`)."""
    return any(r.sample for r in facts(runs))


@dataclass(frozen=True, slots=True)
class _Phase:
    name: str
    checks: tuple[str, ...]
    constraints: tuple[str, ...]
    timeout: str


def _phases(validation: Mapping[str, Mapping[str, Any]]) -> tuple[_Phase, ...]:
    out = []
    for name in sorted(validation):
        phase = validation[name] or {}
        checks = tuple(
            str(c.get("name", c)) if isinstance(c, Mapping) else str(c)
            for c in phase.get("checks") or ()
        )
        constraints = tuple(
            str(c.get("name", c)) if isinstance(c, Mapping) else str(c)
            for c in phase.get("constraints") or ()
        )
        timeout = phase.get("timeout")
        out.append(_Phase(name, checks, constraints, "" if timeout is None else str(timeout)))
    return tuple(out)


def ladders(site: SiteData) -> dict[str, tuple[str, ...]]:
    return {p.name: p.ladder for p in site.profiles}


def _lane_matrix(recipe: RecipeView, site: SiteData) -> dict[str, list[str]]:
    lad = ladders(site)
    return {
        p.profile: lane_verdicts(p.lanes, lad.get(p.profile, ()), site.lanes)
        for p in recipe.profiles
    }


def _recipe_charts(recipe: RecipeView, site: SiteData) -> tuple[list[Markup], list[Markup]]:
    """The recipe page's charts: its lane ladder (counted evidence only) and one per KPI."""
    charts: list[Markup] = []
    if site.lanes and recipe.profiles:
        charts.append(
            chart_html(
                chart_id(recipe.name, "ladder"),
                ladder_figure(recipe, site.lanes, ladders(site)),
                f"Lane verdicts of {recipe.name} per scale profile (counted evidence only).",
            )
        )
    kpi_charts = [
        chart_html(chart_id(recipe.name, "kpi", str(i), kpi_id), figure, caption)
        for i, (kpi_id, figure, caption) in enumerate(kpi_figures(recipe), 1)
    ]
    return charts, kpi_charts


def owned_status(p: ProfileView, declared: str) -> str:
    """The status word of a profile's owned values on one recipe, from the judged record (the
    profile's scale ceiling on this recipe, which counts only verified, current, passing
    evidence), never from the profile file alone; the file's word is added when it differs."""
    if p.ceiling_nodes:
        judged, text = "qualified", f"qualified up to {p.ceiling_nodes:,} nodes ({p.ceiling})"
    else:
        judged, text = (
            "proposed",
            "proposed: no lane of this profile has counted passing evidence here",
        )
    if declared != judged:
        text += f"; the profile file says {declared}"
    return text


def _owned_values(profiles: Mapping[str, ScaleProfile], name: str) -> tuple[Any, ...]:
    prof = profiles.get(name)
    return prof.owned_values if prof else ()


def recipe_page(recipe: RecipeView, site: SiteData) -> str:
    standard = recipe.profiles[0].result if recipe.profiles else None
    profiles = {p.name: p for p in site.profiles}
    charts, kpi_charts = _recipe_charts(recipe, site)
    sums = summaries(recipe, profiles, site.lanes)
    owned = [
        {
            "name": p.profile,
            "version": p.profile_version,
            "owned": [(v, owned_status(p, v.status)) for v in _owned_values(profiles, p.profile)],
            "consensus": p.consensus,
            "sample": sums[p.profile].sample,
        }
        for p in recipe.profiles
    ]
    ctx = {
        "name": recipe.name,
        "slug": slug(recipe.name),
        "criteria_items": [(d, v) for d, v in recipe.criteria.to_json().items()],
        "summaries": [(p, sums[p.profile], band(profiles.get(p.profile))) for p in recipe.profiles],
        "health": recipe.health,
        "health_reasons": recipe.health_reasons,
        "coverage": recipe.coverage,
        "profiles": recipe.profiles,
        "chain": recipe.chain,
        "mixins": standard.mixins if standard else (),
        "components": standard.components if standard else (),
        "constraints": standard.constraints if standard else (),
        "phases": _phases(standard.validation) if standard else (),
        "profile_owned": owned,
        "config_profile": standard.selected_profile if standard else None,
        "evidence": recipe.evidence,
        "downloads": tuple(d for p in recipe.profiles for d in p.downloads),
        "refusals": tuple(x for p in recipe.profiles for x in p.refusals),
        "lane_matrix": _lane_matrix(recipe, site),
    }
    render_note = next((n.message for n in site.notes if n.stage == "render"), "")
    return render(
        "pages/recipe.md.j2",
        r=ctx,
        charts=charts,
        kpi_charts=kpi_charts,
        ladder=site.lanes,
        deployers=site.deployers,
        sample=has_sample(recipe.evidence),
        render_note=render_note,
        epoch=site.source_date_epoch,
        history_on=bool(site.timeline),
        history=sorted(
            (c for c in site.timeline if c.recipe == recipe.name),
            key=lambda c: (c.date, c.id),
            reverse=True,
        ),
        repo_url=site.repo_url,
        trust_root=site.trust_root,
        updated=_updated(facts(recipe.evidence)),
        embeds=_embeds(recipe, site),
    )


def run_url(run: RunFacts) -> str:
    """Where the site shows one run in full (site-relative): its own page, named by its id.
    Every link to a run's detail (pages, changelog, feed, API) is this address."""
    return f"evidence/runs/{run.id}.html"


def _embeds(recipe: RecipeView, site: SiteData) -> tuple[Any, ...]:
    from generator.site import badges  # badges names its files with `slug`, from here

    return badges.embeds(recipe, site)


def evidence_page(name: str, runs: Sequence[EvidenceView], site: SiteData, known: bool) -> str:
    """The runs of one recipe name, one summary row each (anchor `#run-<id>`) linking to the
    run's own page; `known` is False for a name that is not a current leaf."""
    ctx = {"name": name, "slug": slug(name), "known": known}
    return render(
        "pages/evidence.md.j2",
        r=ctx,
        runs=runs,
        trust_root=site.trust_root,
        sample=has_sample(runs),
        updated=_updated(facts(runs)),
    )


def run_page(run: EvidenceView, site: SiteData, recipe: RecipeView | None) -> str:
    """One run in full: facts, checks and KPIs, raw bundle and statement, commit
    (`evidence/runs/<id>.md`); `recipe` is its current leaf recipe, None when there is none.
    Written by `runpage.run_markdown`, the same text as the template (`run_page_reference`)."""
    return run_markdown(**run_context(run, site, recipe))


def run_page_reference(run: EvidenceView, site: SiteData, recipe: RecipeView | None) -> str:
    """`run_page` through its template, `pages/run.md.j2` (the reference of the fast path)."""
    return render("pages/run.md.j2", **run_context(run, site, recipe))


def run_context(run: EvidenceView, site: SiteData, recipe: RecipeView | None) -> dict[str, Any]:
    """What a run's page is made from (the template's context)."""
    name = run.recipe
    # the recipe digest of each profile today, and the bundle archives published for it: a
    # run's digests are shown against these, so a stale run's digest is never called current
    current = {p.profile: p.digest for p in recipe.profiles} if recipe else {}
    downloads = {
        "sha256:" + d.sha256: d for p in (recipe.profiles if recipe else ()) for d in p.downloads
    }
    statements = {}
    if run.raw and run.state != "rejected" and run.raw.statement:
        statements[run.id] = statement_file(run.raw_file)
    added = site.evidence_added
    return {
        "r": {"name": name, "slug": slug(name), "known": recipe is not None},
        "e": run,
        "base": "../../",
        "current": current,
        "downloads": downloads,
        "trust_root": site.trust_root,
        "sample": run.sample,
        "statements": statements,
        "added": {run.id: added[run.path]} if run.path in added else {},
        "commit_url": site.repo_url + "/commit/"
        if site.repo_url.startswith("https://github.com/")
        else "",
    }


INDEX_PAGE_SIZE = 100  # recipe names per page of the evidence index


@dataclass(frozen=True, slots=True)
class IndexPage:
    """One page of the evidence index: its number of `count`, the names it spans, and the
    site-relative addresses of its neighbours ("" when none)."""

    number: int
    count: int
    size: int
    recipes: int
    first: str
    last: str
    prev: str
    next: str


def index_page_url(number: int) -> str:
    """Page 1 is evidence/index.html; the others evidence/pages/<n>.html (no recipe slug can
    name a directory's page, so no recipe's evidence page is ever replaced)."""
    return "evidence/index.html" if number == 1 else f"evidence/pages/{number}.html"


@dataclass(frozen=True, slots=True)
class IndexRow:
    """One recipe name of the evidence index: its counts and newest attestation. A record, not
    a dict: its page's key (`SitePage`) is derived from it, and a record's canonical form is
    made field by field where a dict's items are sorted one by one (an index page of 100 rows
    as dicts: 5 ms a key)."""

    name: str
    slug: str
    known: bool
    sample: bool
    runs: int
    counted: int
    verified: int
    stale: int
    rejected: int
    newest: str


def _index_rows(site: SiteData) -> list[IndexRow]:
    """One row per recipe name with evidence, by name: its counts and newest attestation."""
    known = {r.name for r in site.recipes}
    groups: dict[str, list[RunFacts]] = {}
    for e in facts(site.evidence):
        groups.setdefault(e.recipe, []).append(e)
    rows = []
    for name in sorted(groups):
        runs = groups[name]
        states = [str(e.state) for e in runs]
        rows.append(
            IndexRow(
                name=name,
                slug=slug(name),
                known=name in known,
                sample=has_sample(runs),
                runs=len(runs),
                counted=sum(1 for e in runs if e.counted),
                verified=states.count("verified"),
                stale=states.count("stale"),
                rejected=states.count("rejected"),
                newest=max((e.attested_at for e in runs), default=""),
            )
        )
    return rows


def evidence_index_pages(site: SiteData) -> list[tuple[str, SitePage]]:
    """The evidence index, `INDEX_PAGE_SIZE` recipe names to a page: (docs-relative path,
    what it is made from) per page. No page grows with the catalog; page 1 always exists."""
    rows = _index_rows(site)
    chunks = [rows[i : i + INDEX_PAGE_SIZE] for i in range(0, len(rows), INDEX_PAGE_SIZE)]
    chunks = chunks or [[]]
    counts = {
        "verified": sum(r.verified for r in rows),
        "stale": sum(r.stale for r in rows),
        "rejected": sum(r.rejected for r in rows),
        "runs": sum(r.runs for r in rows),
        "counted": sum(r.counted for r in rows),
    }  # the rows' sums (one per recipe name), not a pass over every run for each count
    note = next((n.message for n in site.notes if n.stage == "verify"), "")
    sample = has_sample(site.evidence)
    out: list[tuple[str, SitePage]] = []
    for n, chunk in enumerate(chunks, 1):
        page = IndexPage(
            n,
            len(chunks),
            INDEX_PAGE_SIZE,
            len(rows),
            chunk[0].name if chunk else "",
            chunk[-1].name if chunk else "",
            index_page_url(n - 1) if n > 1 else "",
            index_page_url(n + 1) if n < len(chunks) else "",
        )
        made_of = _template(
            "pages/evidence_index.md.j2",
            page=page,
            rows=chunk,
            base="../" if n == 1 else "../../",
            counts=counts,
            trust_root=site.trust_root,
            note=note,
            sample=sample,
        )
        out.append((index_page_url(n).removesuffix(".html") + ".md", made_of))
    return out


@dataclass(frozen=True, slots=True)
class RecipeLink:
    """A recipe in a list of links: its name and its pages' file name (a record: `IndexRow`)."""

    name: str
    slug: str


def dashboard_page(site: SiteData) -> str:
    return dashboard_inputs(site).render()


def dashboard_inputs(site: SiteData) -> SitePage:
    rows = sum(len(r.profiles) for r in site.recipes)
    return _template(
        "pages/index.md.j2",
        rows=rows,
        recipes=len(site.recipes),
        all_recipes=[RecipeLink(r.name, slug(r.name)) for r in site.recipes],
        notes=site.notes,
        sample=has_sample(site.evidence),
        base="",
    )


def _prerequisites(
    profiles: Iterable[ScaleProfile | ProfileRow],
) -> list[tuple[str, list[dict[str, str]]]]:
    by_owner: dict[str, list[dict[str, str]]] = {}
    for p in profiles:
        for item in p.prerequisites:
            owner = str(item.get("owner") or "infrastructure")
            expected = item.get("expected", item.get("value", ""))
            by_owner.setdefault(owner, []).append(
                {
                    "profile": p.name,
                    "id": str(item.get("id") or item.get("name") or ""),
                    "title": str(item.get("title") or item.get("description") or ""),
                    "expected": "" if expected is None else str(expected),
                    "remediation": str(item.get("remediation") or ""),
                }
            )
    return [
        (o, sorted(v, key=lambda i: (i["profile"], i["id"]))) for o, v in sorted(by_owner.items())
    ]


def _demote_headings(markdown: str) -> str:
    """Shift every ATX heading of an included document one level down (outside code fences)."""
    out, fenced = [], False
    for line in markdown.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        if not fenced and re.match(r"^#{1,5} ", line):
            line = "#" + line
        out.append(line)
    return "\n".join(out)


def _strip_front_matter_and_title(markdown: str) -> str:
    text = markdown
    if text.startswith("---\n"):
        end = text.find("\n---\n", 4)
        if end != -1:
            text = text[end + 5 :]
    lines = text.lstrip("\n").splitlines()
    if lines and lines[0].startswith("# "):
        lines = lines[1:]
    return "\n".join(lines).strip("\n")


def scale_page(site: SiteData, contract_markdown: str | None) -> str:
    return scale_inputs(site, contract_markdown).render()


def scale_inputs(site: SiteData, contract_markdown: str | None) -> SitePage:
    """The scale page's inputs: the lanes, the profiles, the verdict rows of every recipe ×
    profile with evidence, the contract's Markdown (`_scale` makes the page of them)."""
    rows = []
    lad = ladders(site)
    for r in site.recipes:
        for p in r.profiles:
            row = lane_verdicts(p.lanes, lad.get(p.profile, ()), site.lanes)
            if any(v not in (LaneVerdict.UNTESTED, NOT_IN_LADDER) for v in row):
                rows.append((f"{r.name} @ {p.profile}", row))
    return SitePage(
        "scale",
        {
            "lanes": tuple(map(_lane_context, site.lanes)),
            "rows": rows,
            "total": sum(len(r.profiles) for r in site.recipes),
            "profiles": tuple(map(ProfileRow.of, site.profiles)),
            "contract_markdown": contract_markdown,
            "sample": has_sample(site.evidence),
        },
    )


@dataclass(frozen=True, slots=True)
class ProfileRow:
    """What the scale page shows of a scale profile (`ScaleProfile` without its parsed
    document: the page's key is derived from this, and a profile's document, with its line
    index, made the scale page's key cost 47 ms at 200 recipes)."""

    name: str
    version: str
    nodes_min: int
    nodes_max: int
    description: str
    ladder: tuple[str, ...]
    prerequisites: tuple[Mapping[str, Any], ...]

    @staticmethod
    def of(p: ScaleProfile) -> ProfileRow:
        return ProfileRow(
            p.name, p.version, p.nodes_min, p.nodes_max, p.description, p.ladder, p.prerequisites
        )


def _scale(
    lanes: tuple[ScaleLane, ...],
    rows: list[tuple[str, list[Any]]],
    total: int,
    profiles: tuple[ProfileRow, ...],
    contract_markdown: str | None,
    sample: bool,
) -> str:
    if lanes and rows:
        heatmap = chart_html(
            chart_id("scale", "heatmap"),
            verdict_heatmap(rows, lanes, "Recipe × lane verdicts"),
            f"Lane verdicts of the {len(rows)} recipe × profile pairs with evidence "
            f"({total - len(rows)} more have none and are UNTESTED at every lane).",
        )
    else:
        heatmap = Markup(render("pages/_untested.html.j2", total=total))  # our own escaped HTML
    contract = None
    if contract_markdown is not None:
        # The project's own documentation (docs/scale-contract.md), included as Markdown.
        contract = Markup(_demote_headings(_strip_front_matter_and_title(contract_markdown)))
    return render(
        "pages/scale.md.j2",
        lanes=lanes,
        heatmap=heatmap,
        has_chart=bool(lanes and rows),
        profiles=profiles,
        prerequisites=_prerequisites(profiles),
        contract=contract,
        sample=sample,
    )


@dataclass(frozen=True, slots=True)
class ScaleKpi:
    """A lane's KPI threshold as the scale page shows it."""

    id: str
    operator: str
    threshold: str
    unit: str
    proposed: bool


@dataclass(frozen=True, slots=True)
class ScaleLane:
    """A lane as the scale page shows it: its size, criteria version, KPI thresholds and
    scenarios (not its whole parsed criteria: the page's key is derived from this, and the
    lanes' criteria made the scale page's key cost 36 ms at 200 recipes)."""

    name: str
    nodes: int
    gpus: int | None
    criteria_version: str
    kpis: tuple[ScaleKpi, ...]
    scenarios: tuple[str, ...]


def _lane_context(lane: LaneView) -> ScaleLane:
    """One lane of the scale page: its size, criteria version, KPI thresholds and scenarios."""
    kpis = []
    for k in lane.raw.get("kpis") or ():
        if not isinstance(k, Mapping):
            continue
        threshold = k.get("threshold")
        op = k.get("operator", "")
        value = threshold
        if isinstance(threshold, Mapping):
            op = threshold.get("operator", op)
            value = threshold.get("value")
        kpis.append(
            ScaleKpi(
                id=str(k.get("id") or k.get("name") or ""),
                operator=str(op or ""),
                threshold="" if value is None else str(value),
                unit=str(k.get("unit") or ""),
                proposed=str(k.get("status", "")) == "proposed" or bool(k.get("proposed")),
            )
        )
    scenarios = tuple(
        str(s.get("name", s)) if isinstance(s, Mapping) else str(s)
        for s in lane.raw.get("scenarios") or ()
    )
    return ScaleLane(
        name=lane.name,
        nodes=lane.nodes,
        gpus=lane.gpus,
        criteria_version=lane.criteria_version,
        kpis=tuple(kpis),
        scenarios=scenarios,
    )


def components_page(site: SiteData) -> str:
    """Component × pinned version: what it is, where it comes from, which recipes pin that
    version and how far current evidence has qualified it (SAMPLE when the evidence is)."""
    return components_inputs(site).render()


@dataclass(frozen=True, slots=True)
class VersionRow:
    """One pinned version of a component on the components page (a record: see `IndexRow`)."""

    anchor: str
    version: str
    qualified_lane: str
    qualified_profile: str
    sample: bool
    recipes: tuple[str, ...]
    recipe_links: tuple[tuple[str, str], ...]


@dataclass(frozen=True, slots=True)
class ComponentRow:
    """One component on the components page, its versions pinned by recipes."""

    name: str
    display: str
    chart: str
    repository: str
    link: str
    versions: tuple[VersionRow, ...]


def components_inputs(site: SiteData) -> SitePage:
    """The components page's record. A version is SAMPLE when a counted SAMPLE run of its
    qualified profile is among its recipes' runs: the recipe × profile pairs that have one are
    found in one pass over the runs, where each version looked through every run of every
    recipe pinning it (at 1,000 recipes x 20,000 runs, ~0.07 CPU-s of every build)."""
    by_name = {r.name: r for r in site.recipes}
    sampled = {
        (name, e.profile)
        for name, r in by_name.items()
        for e in facts(r.evidence)
        if e.sample and e.counted
    }
    groups: dict[str, list[VersionRow]] = {}
    info: dict[str, dict[str, str]] = {}
    for c in site.components:
        sample = any((n, c.qualified_profile) in sampled for n in c.recipes)
        info.setdefault(
            c.name,
            {
                "name": c.name,
                "display": c.display_name or c.name,
                "chart": c.chart,
                "repository": c.repository,
                "link": c.repository if c.repository.startswith("https://") else "",
            },
        )
        groups.setdefault(c.name, []).append(
            VersionRow(
                anchor=f"{c.name}-{slug(c.version or 'unpinned')}",
                version=c.version,
                qualified_lane=c.qualified_lane,
                qualified_profile=c.qualified_profile,
                sample=sample and bool(c.qualified_lane),
                recipes=c.recipes,
                recipe_links=tuple((n, slug(n)) for n in c.recipes),
            )
        )
    comps = [ComponentRow(**info[name], versions=tuple(groups[name])) for name in sorted(groups)]
    return _template(
        "pages/components.md.j2",
        components=comps,
        total=len(site.recipes),
        sample=any(v.sample for versions in groups.values() for v in versions),
    )


def changelog_page(site: SiteData) -> str:
    return changelog_inputs(site).render()


def changelog_inputs(site: SiteData) -> SitePage:
    from generator.site import changelog

    # the newest entries only, as the feed: the page must not grow with the catalog (issue 29)
    shown, total = changelog.newest(site)
    return _template(
        "pages/changelog.md.j2",
        entries=shown,
        total=total,
        feed=changelog.FEED,
        sample=has_sample(site.evidence),
    )


@dataclass(frozen=True, slots=True)
class CommandHelp:
    """One command of the CLI reference: its full path and its `--help` text."""

    path: str
    help: str


def cli_page(commands: Sequence[CommandHelp]) -> str:
    """The CLI reference, from the help texts the CLI itself produced (see commands/build.py)."""
    return cli_inputs(commands).render()


def cli_inputs(commands: Sequence[CommandHelp]) -> SitePage:
    """The CLI reference's inputs: the help texts, as what they are made of when the build
    gives them so (`commands.build.CliReference`: formatted only when the page is made)."""
    return _template("pages/cli.md.j2", commands=commands)


def signers_page(site: SiteData) -> str:
    """The signer policy as a directory (generator/site/signers.py)."""
    return signers_inputs(site).render()


def signers_inputs(site: SiteData) -> SitePage:
    from generator.site import signers

    policy = site.signers or signers.SignerPolicyView((), 0, False)
    return SitePage("signers", {"policy": policy, "trust_root": site.trust_root})


def _signers(policy: Any, trust_root: str) -> str:
    from generator.site import signers

    return render(
        "pages/signers.md.j2",
        policy=policy,
        trust_root=trust_root,
        slug=slug,
        newest=signers.NEWEST,
    )


@dataclass(frozen=True, slots=True)
class PagePlan:
    """One generated page: where it goes, what it depends on, and how to render it.

    `runs` is None for a page made from the whole site; otherwise the page is a function of
    the build's evidence-independent inputs and exactly these runs, which is what lets the
    build reuse it when none of them changed. A site-wide page is a function of the build's
    evidence-independent inputs and its `made_of` (`SitePage`), reused when that is unchanged;
    one without (None) is rendered by every build."""

    rel: str
    kind: str
    name: str
    runs: Sequence[EvidenceView] | None
    render: Callable[[], str]
    # the stamp page this page is made from ("": the engine builds the page itself): its Markdown
    # carries only its title, and its data blocks go into the stamp's built HTML (islands.stamp)
    stamp: str = ""
    made_of: SitePage | None = None


@dataclass(frozen=True, slots=True)
class SitePage:
    """What a site-wide page is made from: its maker (a name in `MAKERS`: a function of its
    keyword arguments alone, through the site's templates) and those arguments. The page is
    `render()`, so a build keys it by this record, with the build's evidence-independent
    inputs (the templates, the generator's code: `build._site_parts`), and a page whose
    record is unchanged is read from the cache, not rendered again.

    Measured, one evidence file removed at 200 recipes x 4,000 runs: the 11 site-wide pages
    were rendered by every build (the CLI reference alone formats every command's help)."""

    maker: str
    inputs: Mapping[str, Any]

    def render(self) -> str:
        return MAKERS[self.maker](**self.inputs)


def _template(template: str, **context: Any) -> SitePage:
    """A page that is its template rendered with `context`."""
    return SitePage("template", {"template": template, **context})


MAKERS: Mapping[str, Callable[..., str]] = {
    "template": render,
    "scale": _scale,
    "signers": _signers,
}


def _site_page(rel: str, name: str, made_of: SitePage, stamp: str = "") -> PagePlan:
    return PagePlan(rel, "site", name, None, made_of.render, stamp, made_of)


RUN_STAMP = "evidence/runs/index.md"  # the engine builds this one; each run's page is stamped


def run_stamp_page() -> str:
    """The page the engine builds for every run's page: its title is the placeholder each run's
    page replaces; published itself as `stamp_title` says."""
    return run_stamp_inputs().render()


def run_stamp_inputs() -> SitePage:
    return _template("pages/run_stamp.md.j2", title=STAMP_TITLE, own="Evidence runs")


# Every recipe name's evidence page is stamped from one page the engine builds of the same
# template for a name no recipe's page can have (`islands.STAMP_NAME`): never published itself
# (`generator.site.stamping`). Off: the engine builds every evidence page (the reference).
STAMP_EVIDENCE = True
EVIDENCE_STAMP = f"evidence/{islands.STAMP_NAME}.md"


def evidence_stamp(name: str) -> str:
    """The stamp page of `name`'s evidence page, "" when the engine must build it itself: its
    heading (`# Evidence for <name>`, as the template writes it) does not fit the stamp's
    layout (`stamping.fits`: a table of contents of that one heading, no link)."""
    if not STAMP_EVIDENCE or not stampable(name):
        return ""
    from generator.site import stamping

    line = f"# Evidence for {md_inline(_shape(name))}\n"
    return EVIDENCE_STAMP if stamping.heading_fits(line) else ""


# A name of these characters only is Markdown text whatever it is (`md_inline` escapes the
# punctuation among them; in a code span it is literal): its heading has the shape of any
# other such name's, so the rule is checked once for all of them (the page's own fill is
# checked again when it is made, `stamping.fill`).
_PLAIN = re.compile(r"[a-z0-9][a-z0-9._-]*")


def _shape(name: str) -> str:
    return "x" if _PLAIN.fullmatch(name) else name


def stampable(name: str) -> bool:
    """Whether a page named `name` may be stamped at all: not when the name holds a character
    `str.isprintable` refuses (a control character such as CR or LF, a line or paragraph
    separator, a space other than U+0020): Markdown may end its heading line there, and
    mkdocs' title of the page would not be the name (hypothesis found "0\r" in
    tests/test_site_stamp.py). The engine builds such a page itself, by rule."""
    return name.isprintable()


def evidence_stamp_page(site: SiteData) -> str:
    """The page the engine builds for every stamped evidence page (`EVIDENCE_STAMP`)."""
    return evidence_page(islands.STAMP_NAME, (), site, True)


# Every recipe's page likewise, from one of two pages the engine builds (never published), one
# per layout (`template`): what its front matter names picks the one (`Fill.template`). Off:
# the engine builds every recipe page (the reference).
STAMP_RECIPES = True
RECIPE_STAMP = f"recipes/{islands.STAMP_NAME}.md"
RECIPE_STAMPS = {  # layout -> the stamp page of that layout
    "main.html": RECIPE_STAMP,
    "charts.html": f"recipes/{islands.STAMP_NAME}-CHARTS.md",
}


def recipe_stamp(recipe: RecipeView) -> str:
    """The stamp page of `recipe`'s page, "" when the engine must build it itself: its
    headings (its name's, the configuration profile's when it has one, as the template writes
    them) do not make a table of contents of one level-1 heading over level-2 headings
    (`stamping.fits_recipe`)."""
    if not STAMP_RECIPES or not stampable(recipe.name):
        return ""
    from generator.core.text import html_text
    from generator.site import stamping

    text = f"# {md_inline(_shape(recipe.name))}\n\n## Scale profiles and status\n"
    standard = recipe.profiles[0].result if recipe.profiles else None
    chosen = standard.selected_profile if standard else None
    if chosen is not None:
        text += f"\n## Configuration profile `{html_text(_shape(chosen.name))}`\n"
    return RECIPE_STAMP if stamping.headings_fit(text) else ""


def recipe_stamp_pages() -> dict[str, str]:
    """The pages the engine builds for every stamped recipe page (docs-relative .md ->
    Markdown): a recipe page's front matter and two level-2 headings, from which the table of
    contents' item is learned (`islands.stamp_parts`)."""
    name = islands.STAMP_NAME
    return {
        rel: (
            f'---\ntitle: "{name}"\ntemplate: {template}\nhide:\n  - navigation\n---\n\n'
            f"# {name}\n\n## {name}-A\n\n## {name}-B\n"
        )
        for template, rel in RECIPE_STAMPS.items()
    }


def stamp_fill(skeleton: str, rel: str, stamp: str) -> islands.Fill:
    """What the page at `rel` (docs-relative .md) puts into its stamp page's built HTML."""
    stem = rel.rsplit("/", 1)[-1].removesuffix(".md")
    if stamp == EVIDENCE_STAMP:
        from generator.site import stamping

        return stamping.fill(skeleton, stem, rel)
    if stamp in RECIPE_STAMPS.values():
        from generator.site import stamping

        return stamping.recipe_fill(skeleton, stem, rel)
    return islands.Fill(stamped_title(skeleton))


def stamped_title(skeleton: str) -> str:
    """The HTML-escaped title of a stamped page, from its Markdown's front matter: `title`
    (as the `title` filter wrote it: a JSON string of HTML-escaped text), or `stamp_title` for
    the stamp page itself."""
    head = skeleton.split("\n---\n", 1)[0].splitlines()
    fields = dict(line.split(": ", 1) for line in head if ": " in line)
    value = fields.get("stamp_title") or fields.get("title")
    if value is None:
        raise SiteError("a stamped page has no title in its front matter")
    title = json.loads(value)
    if not isinstance(title, str):
        raise SiteError("a stamped page's title is not a string")
    return title


def _run_plans(
    runs: Iterable[EvidenceView], site: SiteData, recipe: RecipeView | None
) -> list[PagePlan]:
    """The page of each run (`run_url`): a function of that run alone."""
    return [
        PagePlan(
            run_url(e).removesuffix(".html") + ".md",
            "run",
            e.id,
            (e,),
            lambda e=e: run_page(e, site, recipe),  # type: ignore[misc]
            RUN_STAMP,
        )
        for e in runs
    ]


def site_plan(
    site: SiteData, contract_markdown: str | None, commands: Sequence[CommandHelp]
) -> list[PagePlan]:
    """The site-wide pages (`SitePage`: each made from the whole site), in a stable order."""
    plan = [
        _site_page("index.md", "index", dashboard_inputs(site)),
        _site_page("scale.md", "scale", scale_inputs(site, contract_markdown)),
        _site_page("components.md", "components", components_inputs(site)),
        _site_page("cli.md", "cli", cli_inputs(commands)),
        _site_page("legend.md", "legend", _template("pages/legend.md.j2", base="")),
        _site_page("changelog.md", "changelog", changelog_inputs(site)),
        _site_page("signers.md", "signers", signers_inputs(site)),
        _site_page("compare.md", "compare", _template("pages/compare.md.j2")),
        _site_page(RUN_STAMP, "runs", run_stamp_inputs(), RUN_STAMP),
    ]
    plan[3:3] = [
        _site_page(rel, "evidence", made_of) for rel, made_of in evidence_index_pages(site)
    ]
    return plan


@dataclass(frozen=True, slots=True)
class PageGroup:
    """The pages made from one recipe name's data: a current leaf's (`kind` "recipe": its
    page, its evidence page and the page of each of its runs) or a name's that is not one
    (`kind` "orphan": its evidence page and its runs' pages). Every page of the group is a
    function of the build's evidence-independent inputs, the kind, the name and `runs` (the
    recipe's view is made from those): what lets a build know the group's pages unchanged
    from one key (`incremental.RecipeKeys.group_parts`) without planning them (`plans`)."""

    kind: str
    name: str
    runs: Sequence[EvidenceView]  # read when its pages are planned (`facts` keys them)
    recipe: RecipeView | None = None

    def plans(self, site: SiteData) -> list[PagePlan]:
        """The group's pages, in a stable order."""
        runs, recipe = self.runs, self.recipe
        if recipe is None:
            name = self.name
            evidence = PagePlan(
                f"evidence/{slug(name)}.md",
                "orphan",
                name,
                runs,
                lambda: evidence_page(name, runs, site, False),
                evidence_stamp(name),
            )
            return [evidence, *_run_plans(runs, site, None)]
        return [
            PagePlan(
                f"recipes/{slug(recipe.name)}.md",
                "recipe",
                recipe.name,
                runs,
                lambda: recipe_page(recipe, site),
                recipe_stamp(recipe),
            ),
            PagePlan(
                f"evidence/{slug(recipe.name)}.md",
                "evidence",
                recipe.name,
                runs,
                lambda: evidence_page(recipe.name, runs, site, True),
                evidence_stamp(recipe.name),
            ),
            *_run_plans(runs, site, recipe),
        ]


def page_groups(site: SiteData) -> list[PageGroup]:
    """The pages made from one recipe name's data, grouped by name: each current leaf's in
    catalog order, then the names with evidence that are not current leaves, sorted."""
    groups = [PageGroup("recipe", r.name, r.evidence, r) for r in site.recipes]
    known = {r.name for r in site.recipes}
    orphans = {n: runs for n, runs in by_recipe(site.evidence).items() if n not in known}
    groups += [PageGroup("orphan", name, runs) for name, runs in sorted(orphans.items())]
    return groups


def page_plan(
    site: SiteData, contract_markdown: str | None, commands: Sequence[CommandHelp]
) -> tuple[PagePlan, ...]:
    """Every generated page, in a stable order: the site-wide pages, then per recipe its page,
    its evidence page and the page of each of its runs, then the evidence and run pages of
    names that are not current leaves (`page_groups`)."""
    plan = site_plan(site, contract_markdown, commands)
    for group in page_groups(site):
        plan += group.plans(site)
    return tuple(plan)


def all_pages(
    site: SiteData, contract_markdown: str | None, commands: Sequence[CommandHelp]
) -> dict[str, str]:
    """Every generated page: docs-relative path -> Markdown text."""
    return {p.rel: p.render() for p in page_plan(site, contract_markdown, commands)}
