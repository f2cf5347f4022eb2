"""`aicr-catalog build`: the whole pipeline into a static site, swapped in only when complete.

validate → resolve → render bundles → verify evidence → aggregate → generate pages and JSON →
`mkdocs build --strict` into a temporary directory → swap it into place. A build that fails
anywhere leaves the previous site untouched and raises a `CatalogError` whose diagnostics say
what failed and where. A lock file keeps two builds of the same output from running at once.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import re
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from generator import __version__
from generator.core import archive, atomic, safeio, yamlio
from generator.core.atomic import TreeWriter
from generator.core.cache import Cache, DerivedKeys, digest, fingerprint, listing_rows
from generator.core.errors import CatalogError, Diagnostic, LoadError, SiteError
from generator.core.memo import Memo, derive_key
from generator.core.outputs import (
    MARKER,
    OutputKind,
    commit_delta,
    discard,
    journal_path,
    make_temp_dir,
    marker_bytes,
    staging_prefix,
)
from generator.core.records import Catalog, Consensus, RecipeResult
from generator.core.timeutil import rfc3339
from generator.evidence.view import EvidenceView, RawFile, RunFacts, by_recipe, facts
from generator.fast.collector import collector_paused
from generator.fast.pool import parallel_map
from generator.pipeline import Inputs, LeafResults, Outcome, Resolved, ResultHead, run
from generator.render.bundled import Refusal
from generator.site import api, badges, changelog, islands, jinja, pages, stages, stamping
from generator.site.audit import evidence_added, statement_file, vouched_statement
from generator.site.csp import with_csp_utf8
from generator.site.engine import (
    ENGINE_STAGE,
    INDEX_FORMAT,
    BuiltPages,
    EngineOutput,
    Index,
)
from generator.site.engine import reused as reused_engine_output
from generator.site.engine import store as store_engine_output
from generator.site.entry import build_site
from generator.site.incremental import (
    GROUPS_STAGE,
    PAGES_STAGE,
    RecipeKeys,
    StoredGroup,
    StoredPage,
    api_reuse,
    as_recorded,
    last_record,
    previous_files,
)
from generator.site.model import (
    ComponentUse,
    Download,
    ProfileView,
    RecipeView,
    ResultSource,
    SiteData,
    StageNote,
)
from generator.site.options import (
    DEFAULT_DEPLOYERS,
    REPO,
    TEMPLATES,
    BuildOptions,
    BuildReport,
    source_date_epoch,
    static_docs,
)
from generator.site.outdir import swap_in
from generator.site.publish import (
    Block,
    Derived,
    FileTable,
    PublishCounts,
    Publisher,
    derived_source,
)
from generator.site.signers import signer_policy
from generator.site.timeline import Change, site_timeline

# --- gather -------------------------------------------------------------------------------------


def _profile_view(
    head: ResultHead,
    source: ResultSource,
    runs: Sequence[EvidenceView],
    status: stages.ProfileStatus | None,
    downloads: tuple[Download, ...],
    refusals: tuple[Refusal, ...] = (),
) -> ProfileView:
    counted = [e for e in facts(runs) if e.counted and e.profile == head.scale_profile]
    last = max((e.attested_at for e in counted if e.attested_at), default="")
    return ProfileView(
        profile=head.scale_profile,
        profile_version=head.scale_profile_version,
        source=source,
        consensus=status.consensus if status else Consensus.UNTESTED,
        ceiling=status.ceiling if status else "",
        ceiling_nodes=status.ceiling_nodes if status else 0,
        lanes=status.lanes if status else (),
        last_evidence=last[:10],
        downloads=downloads,
        refusals=refusals,
    )


PROGRESS = logging.getLogger("aicr_catalog.build")  # the CLI shows it on stderr


def pipeline_inputs(options: BuildOptions) -> Inputs:
    """What the build asks of the pipeline: every recipe, verified with its one trust root."""
    return Inputs(
        catalog=options.catalog,
        evidence=options.evidence,
        trust_roots=(options.trust_root,),
        strict=options.strict,
        online=options.online,
        rules=options.rules,
        jobs=options.jobs,
    )


def leaves(outcome: Outcome) -> dict[str, tuple[RecipeResult, ...]]:
    """The leaf recipes (the site's recipe pages) and their results, in catalog order (every
    leaf's results read: `leaf_heads` reads none)."""
    names = set(outcome.catalog.leaves())
    return {n: rs for n, rs in outcome.resolved.by_recipe.items() if n in names}


def leaf_heads(outcome: Outcome | Resolved) -> dict[str, tuple[ResultHead, ...]]:
    """`leaves` as the results' heads (`pipeline.ResultHead`): no recipe's results are read."""
    resolved = outcome.resolved if isinstance(outcome, Outcome) else outcome
    names = set(resolved.catalog.leaves())
    return {n: hs for n, hs in resolved.heads.items() if n in names}


def _source(
    by_recipe: Mapping[str, Sequence[RecipeResult]], head: ResultHead, i: int
) -> ResultSource:
    """The `i`th result of `head`'s recipe, read when first used."""
    return ResultSource(head.digest, lambda: by_recipe[head.name][i])


Rendered = tuple[
    dict[tuple[str, str], tuple[Download, ...]],
    dict[tuple[str, str], tuple[Refusal, ...]],
    StageNote | None,
]


def render_step(
    resolved: Resolved,
    catalog_key: str,
    options: BuildOptions,
    epoch: int,
    memo: Memo | None = None,
) -> Rendered:
    """Every leaf × profile × deployer as an archive (or the `bundle` command's refusal),
    unless bundles were not requested. With a memo and its store, the step's result is one
    memo entry keyed by the catalog stage's key (`stages.render_memoized`): the bundles depend
    on the catalog and the options, never on the evidence (`gather` has the pipeline run this
    between its catalog stage and its evidence stages: `pipeline.run`'s `after_catalog`)."""
    if not options.bundles:
        return (
            {},
            {},
            StageNote("render", "bundles were not requested for this build (--no-bundles)."),
        )
    # read only when the bundles are made (a memoized step taken from the memo reads none)
    results = LeafResults(resolved.by_recipe, tuple(leaf_heads(resolved)))
    cache = memo.cache if memo is not None else None
    if memo is not None and cache is not None and catalog_key:
        downloads, refusals, reused = stages.render_memoized(
            memo, catalog_key, resolved.catalog, results, options.deployers, epoch, options.jobs
        )
        if reused:
            PROGRESS.info("bundles unchanged since the last build: rendered then")
            return downloads, refusals, None
        PROGRESS.info(
            "render bundles: %d recipe × profile × %d deployers",
            len(results),
            len(options.deployers),
        )
        return downloads, refusals, None
    PROGRESS.info(
        "render bundles: %d recipe × profile × %d deployers", len(results), len(options.deployers)
    )
    return stages.render_bundles(
        resolved.catalog, results, options.deployers, epoch, cache, jobs=options.jobs
    )


def gather(options: BuildOptions, epoch: int, memo: Memo | None = None) -> SiteData:
    """The pipeline (`generator.pipeline.run`: load → validate → resolve → verify →
    aggregate), the bundles (rendered after resolve, before verify), and all of it as the
    site's records. Raises CatalogError on bad
    input; a recipe that does not resolve is an error here (the site has a page for it)."""
    made: list[Rendered] = []

    def bundles(resolved: Resolved, catalog_key: str) -> None:
        if resolved.failures:  # before the evidence is verified: the build stops here
            raise SiteError("some recipes do not resolve", resolved.problems)
        made.append(render_step(resolved, catalog_key, options, epoch, memo))

    outcome = run(pipeline_inputs(options), memo, after_catalog=bundles)
    downloads, refusals, render_note = made[0]
    judged, aggregate_note = stages.judged(
        outcome, options.evidence, memo.cache if memo is not None else None
    )
    notes = tuple(n for n in (render_note, aggregate_note) if n is not None)
    site = site_data(options, epoch, outcome, downloads, judged, notes, refusals)
    work = (
        ("recipes aggregated", outcome.aggregated),
        ("views judged", judged.made),
        ("evidence files read", outcome.verification.read),
    )
    return replace(site, timeline=timeline_step(options), work=work)


def timeline_step(options: BuildOptions) -> tuple[Change, ...]:
    """The qualification timeline stage: every change in the catalog's git history, states
    cached per commit under `.cache/timeline/` (none under --no-cache: computed each time)."""
    if not options.timeline_head:
        return ()
    PROGRESS.info("timeline: the qualification state at each commit (cached per commit)")
    cache = options.cache_dir.parent / "timeline" if options.cache_dir is not None else None
    return site_timeline(options.catalog, options.evidence, options.trust_root, cache)


def _recipe_views(
    outcome: Outcome,
    downloads: Mapping[tuple[str, str], tuple[Download, ...]],
    judged: stages.Aggregated,
    refusals: Mapping[tuple[str, str], tuple[Refusal, ...]],
) -> tuple[RecipeView, ...]:
    groups = by_recipe(judged.runs)  # each recipe's views read when first used
    # each leaf's health as the aggregate stage found it (memoized with the recipe's part),
    # the rules `stages.structural_health` applies: not computed again for every leaf
    aggregated = {h.recipe: h for h in outcome.status.health} if outcome.status else {}
    stored = outcome.resolved.by_recipe  # a leaf's results read when first used
    recipes = []
    for leaf, results in leaf_heads(outcome).items():
        runs = groups.get(leaf, ())
        found = aggregated.get(leaf) if results else None
        health, coverage, reasons = (
            (found.health, found.coverage, found.problems)
            if found is not None
            else stages.structural_health(stored[leaf])
        )
        views = tuple(
            _profile_view(
                r,
                _source(stored, r, i),
                runs,
                judged.statuses.get((leaf, r.scale_profile)),
                downloads.get((leaf, r.scale_profile), ()),
                refusals.get((leaf, r.scale_profile), ()),
            )
            for i, r in enumerate(results)
        )
        recipes.append(
            RecipeView(
                name=leaf,
                criteria=outcome.catalog.overlays[leaf].criteria,
                health=health,
                coverage=coverage,
                health_reasons=reasons,
                chain=results[0].applied_overlays if results else (),
                profiles=views,
                evidence=runs,
            )
        )
    return tuple(recipes)


def site_data(
    options: BuildOptions,
    epoch: int,
    outcome: Outcome,
    downloads: Mapping[tuple[str, str], tuple[Download, ...]],
    judged: stages.Aggregated,
    notes: tuple[StageNote, ...],
    refusals: Mapping[tuple[str, str], tuple[Refusal, ...]] | None = None,
) -> SiteData:
    """The pipeline's outcome as the site's records."""
    catalog = outcome.catalog
    shown = leaf_heads(outcome)
    return SiteData(
        recipes=_recipe_views(outcome, downloads, judged, refusals or {}),
        evidence=judged.runs,
        lanes=stages.lanes(outcome.resolved.lanes),
        profiles=tuple(catalog.profiles[n] for n in sorted(catalog.profiles)),
        components=_components(
            catalog, tuple(r for rs in shown.values() for r in rs), judged.components
        ),
        deployers=options.deployers,
        generated_at=rfc3339(epoch),
        source_date_epoch=epoch,
        generator_version=__version__,
        notes=notes,
        trust_root=outcome.trust_root,
        site_url=options.site_url,
        recipes_added=stages.recipes_added(
            options.catalog,
            {leaf: catalog.overlays[leaf].doc.rel for leaf in shown},
            options.catalog_head,
        ),
        signers=signer_policy(catalog, facts(judged.runs)),
        repo_url=options.repo_url,
        evidence_added=evidence_added(options.evidence, options.evidence_head),
    )


def _components(
    catalog: Catalog,
    results: tuple[ResultHead, ...],
    quals: Mapping[tuple[str, str], tuple[str, str]],
) -> tuple[ComponentUse, ...]:
    used: dict[tuple[str, str, str, str], set[str]] = {}
    for r in results:
        for c in r.components:
            key = (c.name, c.chart or "", c.repository or "", c.version or "")
            used.setdefault(key, set()).add(r.name)
    out = []
    for (name, chart, repo, version), recipes in sorted(used.items()):
        lane, profile = quals.get((name, version), ("", ""))
        reg = catalog.registry.components.get(name)
        display = reg.display_name if reg is not None else ""
        out.append(
            ComponentUse(name, chart, repo, version, tuple(sorted(recipes)), lane, profile, display)
        )
    return tuple(out)


# --- write --------------------------------------------------------------------------------------


def mkdocs_config(
    base: Path, docs_dir: Path, site_dir: Path, site_url: str = "", repo_url: str = ""
) -> dict[str, Any]:
    """The repository's mkdocs.yml with the build's directories (and `site_url`, when given)
    filled in."""
    try:
        config = yamlio.load_yaml(base, root=base.parent, rel=base.name).data or {}
    except LoadError as e:
        raise SiteError(f"cannot read {base.name}: {e}") from e
    config["docs_dir"] = str(docs_dir)
    config["site_dir"] = str(site_dir)
    if site_url:
        config["site_url"] = site_url if site_url.endswith("/") else site_url + "/"
    if repo_url:  # not the theme's repo_url: that makes every page call the GitHub API
        config["extra"] = {**(config.get("extra") or {}), "source_repository": repo_url}
    config["strict"] = True
    config["use_directory_urls"] = False
    theme = dict(config.get("theme") or {})
    theme["custom_dir"] = str(TEMPLATES / "overrides")
    # mkdocs reads these itself: refuse a link out of the templates or a special file first
    for _ in safeio.files(TEMPLATES / "overrides", where="the site templates"):
        pass
    theme["font"] = False
    config["theme"] = theme
    return config


def _write(root: Path, files: Mapping[str, bytes | str]) -> None:
    with TreeWriter(root) as tree:
        for rel, content in sorted(files.items()):
            tree.put(rel, content.encode("utf-8") if isinstance(content, str) else content)


def plotly_js() -> bytes:
    """The plotly.js the plotly package ships: one copy for the whole site.

    Added after `mkdocs build`, so the privacy plugin does not try to localise the map-tile URLs
    inside it (they are only fetched by map charts, which the site does not draw).
    """
    import plotly

    package = Path(plotly.__file__).parent
    return safeio.read(
        package / "package_data" / "plotly.min.js",
        root=package,
        where="the plotly package",
        limit=safeio.OTHER_BYTES,
    )


def _contract(options: BuildOptions) -> str | None:
    contract_path = options.docs / "scale-contract.md"
    if not safeio.lexists(contract_path):
        return None
    return safeio.read_text(contract_path, root=options.docs, where="the docs directory")


def generated_docs(site: SiteData, options: BuildOptions) -> dict[str, str]:
    return pages.all_pages(site, _contract(options), options.cli_reference)


# --- pages: rendered on every core, reused when their inputs are unchanged ----------------------

_PARALLEL_PAGES = 64  # below this many pages to render, a process pool costs more than it saves

Lifted = tuple[str, tuple[str, ...]]  # a page's Markdown skeleton and its data blocks


@dataclass(frozen=True, slots=True)
class PageContent:
    """What goes into one built page besides the engine's HTML: its data blocks and, for a
    stamped page, its fill (`islands.Fill`: its HTML-escaped title and, for a recipe or an
    evidence page, its body, table of contents and anchors). `key` names them (the page's
    cache key, or their digest), so a finished page is a function of `key`, the engine's HTML
    of `stamp` (of each of its variants, `_origins`) and the finishing code (`finish_pages`).
    A page the cache holds but this build did not read (`stored`) has no fill or blocks here:
    `Pages.fetch` gives them when needed."""

    key: str
    stamp: str = ""  # the built page it is made from (site-relative .html); "": its own
    fill: islands.Fill | None = None
    blocks: tuple[str, ...] = ()
    stored: bool = False


Fetched = Mapping[str, tuple[islands.Fill | None, tuple[str, ...]]]  # `Pages.fetch`


def _no_fetch(rels: Sequence[str]) -> dict[str, tuple[islands.Fill | None, tuple[str, ...]]]:
    if rels:
        raise SiteError(f"{rels[0]}: a page to fetch, but no page was left in the cache")
    return {}


class PageRenderer:
    """Renders pages of a plan and lifts their data blocks (`islands.lift`), in forked workers
    only when --jobs asks for them and there are enough. Not a record: it counts the pages'
    work, rendered, read from the cache and finished (`finish_pages`: the others were linked)."""

    def __init__(self, plan: Sequence[pages.PagePlan], jobs: int | None) -> None:
        self.plan, self.jobs = plan, jobs
        self.rendered = self.read = self.finished = 0

    def __call__(self, todo: list[int]) -> list[Lifted]:
        self.rendered += len(todo)
        # A forked worker copies every page of the site data it reads (reference counts are
        # writes), about 500 MB each at 1,000 recipes and 20,000 runs, for ~5 s saved cold.
        workers = min(self.jobs or 1, len(todo))
        if len(todo) < _PARALLEL_PAGES:
            workers = 1
        plan = self.plan
        return list(
            parallel_map(lambda i: islands.lift(plan[i].render()), todo, jobs=workers, chunksize=16)
        )


@dataclass(frozen=True, slots=True)
class Pages:
    """The generated pages, lifted: Markdown skeletons the engine builds (docs-relative .md)
    and what goes into each built page (site-relative .html: `PageContent`), the pages made
    from a stamp page's build among them (the engine never sees those: pages.PagePlan.stamp).
    `fetch` reads (or renders again) the title and blocks of pages left in the cache."""

    skeletons: Mapping[str, str]
    content: Mapping[str, PageContent]
    renderer: PageRenderer
    fetch: Callable[[Sequence[str]], Fetched] = _no_fetch
    # the stamp pages whose stamped pages bring a body of their own: each one's own fill
    # (site-relative .html; never published itself: `islands.STAMP_NAME`)
    own: Mapping[str, islands.Fill] = field(default_factory=dict)
    unstamped: int = 0  # recipe and evidence pages the engine builds: they cannot be stamped
    # the stamped recipe pages' entries of the search index (site-relative .html -> a JSON
    # list, "" for none: `stamping.search_entries`), put into the engine's (`search_index`)
    search: Mapping[str, str] = field(default_factory=dict)

    @property
    def count(self) -> int:
        """Pages generated: those the engine builds and those stamped from them."""
        return (
            len(self.skeletons)
            - len(self.own)  # the stamp pages never published
            + sum(1 for r, c in self.content.items() if c.stamp and c.stamp != r)
        )

    @property
    def rendered(self) -> int:
        """Pages rendered by this build so far (the others came from the cache)."""
        return self.renderer.rendered


def make_pages(
    site: SiteData,
    options: BuildOptions,
    recipe_keys: RecipeKeys | None = None,
    *,
    linkable: bool = False,
) -> Pages:
    """Render every page (site-wide pages always; with `recipe_keys`, a recipe's pages only
    when the cache has no entry for them). A stamped page the cache holds is not read here:
    `finish_pages` fetches it only when its finished page cannot be linked from the last build.
    `linkable`: the output holds a recorded build whose finished pages may be linked; a run's
    page, which the cache does not keep (`_kept_whole`), is then rendered only when fetched,
    else (nothing to link: every page is finished) with the others.
    With `recipe_keys`, the templates are compiled once and kept in the cache
    (`jinja.StoredBytecode`)."""
    store = recipe_keys.cache if recipe_keys is not None else None
    with collector_paused(), jinja.compiled_in(store):
        return _make_pages(site, options, recipe_keys, linkable)


def _make_pages(
    site: SiteData, options: BuildOptions, recipe_keys: RecipeKeys | None, linkable: bool
) -> Pages:
    plan = pages.site_plan(site, _contract(options), options.cli_reference)
    groups = pages.page_groups(site)
    render = PageRenderer(plan, options.jobs)
    if recipe_keys is None:
        for page_group in groups:
            plan += page_group.plans(site)
        cached = CachedPages({}, {}, {}, order=(range(len(plan)),))
    else:  # plans the pages of the groups whose pages are not known from their entry
        cached = _cached_pages(plan, groups, site, _KeyedPages(plan, recipe_keys, render, linkable))
    done, keys = cached.lifted, cached.keys
    todo = [i for i in range(len(plan)) if i not in done and i not in keys]
    done.update(zip(todo, render(todo), strict=True))
    out = _Assembly(site)
    for part in cached.order:  # the plan's order, whether a group was planned or not
        if isinstance(part, StoredGroup):  # known from its entry: every page left in the cache
            out.stored(part)
            continue
        for i in part:
            out.planned(plan[i], done.get(i), keys.get(i), cached.skeletons.get(i))
    if out.unstamped and (pages.STAMP_EVIDENCE or pages.STAMP_RECIPES):
        PROGRESS.info(
            "pages: %d recipe or evidence page(s) built by mkdocs one by one: their headings "
            "do not fit their stamp page's (pages.evidence_stamp, pages.recipe_stamp)",
            out.unstamped,
        )
    return Pages(
        out.skeletons, out.content, render, cached.fetch, out.own, out.unstamped, out.search
    )


class _Assembly:
    """What `_make_pages` gathers, page by page in the plan's order: the engine's skeletons
    (the stamp pages' first: built by the engine, never published, `stamping`), every page's
    content, the stamp pages' own fills, the stamped recipe pages' search entries and the
    count of recipe and evidence pages the engine builds one by one. Not a record."""

    def __init__(self, site: SiteData) -> None:
        self.skeletons: dict[str, str] = {}
        self.content: dict[str, PageContent] = {}
        self.own: dict[str, islands.Fill] = {}
        self.search: dict[str, str] = {}
        self.unstamped = 0
        stamps: dict[str, str] = {}
        if pages.STAMP_EVIDENCE:
            stamps[pages.EVIDENCE_STAMP] = islands.lift(pages.evidence_stamp_page(site))[0]
        if pages.STAMP_RECIPES:
            stamps.update(pages.recipe_stamp_pages())
        for rel, skeleton in stamps.items():
            self.skeletons[rel] = skeleton
            self.own[_html(rel)] = pages.stamp_fill(skeleton, rel, rel)

    def stored(self, part: StoredGroup) -> None:
        """The pages of a group known from its entry."""
        searches = part.searches or ("",) * len(part.rels)
        for rel, stamp, key, skeleton, entries in zip(
            part.rels, part.stamps, part.keys, part.skeletons, searches, strict=True
        ):
            if not stamp or stamp == rel:
                self.skeletons[rel] = skeleton
                self.unstamped += _per_recipe_page(rel)
            elif stamp in _BODY_STAMPS:
                self.search[_html(rel)] = entries
            self.content[_html(rel)] = PageContent(key, _html(stamp) if stamp else "", stored=True)

    def planned(
        self, page: pages.PagePlan, lifted: Lifted | None, key: str | None, shell: str | None
    ) -> None:
        """A page of the plan: rendered or read (`lifted`), or left in the cache unread (an
        engine page or a stamped recipe page: but its skeleton, `shell`)."""
        html, stamp = _html(page.rel), _html(page.stamp) if page.stamp else ""
        skeleton = lifted[0] if lifted is not None else shell
        if skeleton is not None and _engine_builds(page):
            self.skeletons[page.rel] = skeleton
            self.unstamped += _per_recipe_page(page.rel)
        elif skeleton is not None and page.stamp in _BODY_STAMPS:
            self.search[html] = stamping.search_entries(skeleton, html)
        if lifted is None:
            if key is None:
                raise SiteError(f"{page.rel}: a page left in the cache without its key")
            self.content[html] = PageContent(key, stamp, stored=True)
            return
        blocks = lifted[1]
        fill = pages.stamp_fill(lifted[0], page.rel, page.stamp) if page.stamp else None
        self.content[html] = PageContent(
            key or digest("lifted", repr(fill), *blocks), stamp, fill, blocks
        )


def _html(rel: str) -> str:
    return rel.removesuffix(".md") + ".html"


def _per_recipe_page(rel: str) -> int:
    """1 for a recipe's page or a recipe name's evidence page (`recipes/<slug>.md`,
    `evidence/<slug>.md`: the kinds that are stamped), else 0."""
    top, _, name = rel.partition("/")
    return int(top in ("recipes", "evidence") and "/" not in name and name != "index.md")


SKELETONS_STAGE = "page-skeletons"  # the Markdown skeleton of each page the engine builds


@dataclass(frozen=True, slots=True)
class CachedPages:
    """The pages `_cached_pages` keyed, by index in the plan: those read from the cache (or
    rendered and stored), the skeletons of the engine's pages whose blocks were left in the
    cache, every keyed page's cache key, and the fetch of the pages left there; and the
    pages in the order of the whole plan (`order`): runs of indices in the plan, and the
    groups of pages known from their entry (`StoredGroup`), which are not in the plan."""

    lifted: dict[int, Lifted]
    skeletons: dict[int, str]
    keys: dict[int, str]
    fetch: Callable[[Sequence[str]], Fetched] = _no_fetch
    order: tuple[range | StoredGroup, ...] = ()


def _cached_pages(
    plan: list[pages.PagePlan],
    groups: Sequence[pages.PageGroup],
    site: SiteData,
    keyed: _KeyedPages,
) -> CachedPages:
    """The site-wide pages in `plan`, keyed by what they are made of (`_site_parts`), and the
    pages made from one recipe name's data (`groups`), keyed by group first: a group whose
    entry the cache holds (`StoredGroup`, under `RecipeKeys.group_parts`: every input of every
    one of its pages) is known from it, its pages neither planned nor keyed one by one; the
    pages of the others are planned (added to `plan`) and keyed page by page (`_KeyedPages`),
    and their group's entry stored. A group's pages are planned again only when one of them is
    fetched (`finish_pages`: its finished page cannot be linked from the last build).

    The entries a group's entry names (its pages', its skeletons') count as served for the
    sweep, unread: a page left in the cache is read only when it is to be finished."""
    recipe_keys, cache = keyed.recipe_keys, keyed.cache
    site_pages = list(range(len(plan)))
    planned: dict[int, range] = {}  # a group's pages in `plan`, by its index in `groups`
    ran = False

    def plan_group(j: int) -> range:
        if j not in planned:
            start = len(plan)
            plan.extend(groups[j].plans(site))
            planned[j] = range(start, len(plan))
        return planned[j]

    def make(todo: list[int]) -> list[StoredGroup]:
        nonlocal ran
        ran = True  # the site-wide pages first: the pages are rendered in the plan's order
        keyed.add([*site_pages, *(i for j in todo for i in plan_group(j))])
        return [keyed.stored_group(planned[j]) for j in todo]

    parts = [recipe_keys.group_parts(g.kind, g.name, facts(g.runs)) for g in groups]
    stored = cache.get_or_make_many(GROUPS_STAGE, parts, make, sweep=True)
    if not ran:
        keyed.add(site_pages)
    known = {j: g for j, g in enumerate(stored) if j not in planned}
    cache.serve(DerivedKeys(PAGES_STAGE, tuple(k for g in known.values() for k in _whole(g))))
    shells = tuple(k for g in known.values() for k in g.shells if k)
    cache.serve(DerivedKeys(SKELETONS_STAGE, shells))
    by_html: dict[str, int] = {}  # a known group's page -> the group (made when first needed)

    def fetch(rels: Sequence[str]) -> Fetched:
        unplanned = [rel for rel in rels if rel not in keyed.by_html]
        if unplanned and not by_html:
            by_html.update(
                (rel.removesuffix(".md") + ".html", j) for j, g in known.items() for rel in g.rels
            )
        for rel in unplanned:
            if rel not in keyed.by_html:
                keyed.left(plan_group(by_html[rel]))
        return keyed.fetch(rels)

    order = (range(len(site_pages)), *(known.get(j) or planned[j] for j in range(len(groups))))
    return CachedPages(keyed.lifted, keyed.skeletons, keyed.keys, fetch, order)


class _KeyedPages:
    """Pages of a plan keyed one by one, in batches of indices (`add`): those read from the
    cache (or rendered by `render` and stored), each one's cache key, the skeletons of the
    engine's pages left in the cache, and the fetch of the pages left there. Not a record: it
    collects what each batch found.

    Only what the build needs is read: a stamped page the cache holds is left there unread
    (its key names its title and blocks), and of a page the engine builds only its Markdown
    skeleton (the engine's input, stored apart under the same key parts: `SKELETONS_STAGE`),
    not its data blocks, which `finish_pages` needs only when the finished page cannot be
    linked from the last build. The fetch reads a page left in the cache, or renders it again
    if its entry turns out bad or gone.

    Measured, one evidence file removed at 200 recipes x 4,000 runs: the pages of recipes the
    engine builds were read whole, 398 entries of ~55 KB each for their 2 KB skeletons."""

    def __init__(
        self,
        plan: list[pages.PagePlan],
        recipe_keys: RecipeKeys,
        render: PageRenderer,
        linkable: bool = False,
    ) -> None:
        self.plan, self.recipe_keys, self.render = plan, recipe_keys, render
        self.cache = recipe_keys.cache
        self.linkable = linkable  # a page not kept whole is rendered when fetched (`add`)
        self.parts: dict[int, tuple[str, ...]] = {}
        self.lifted: dict[int, Lifted] = {}
        self.skeletons: dict[int, str] = {}
        self.keys: dict[int, str] = {}
        self.by_html: dict[str, int] = {}  # a page left in the cache -> its index

    def add(self, indices: Sequence[int]) -> None:
        """Key the pages at `indices` that the cache keeps (`_page_parts`), read or render
        what the build needs of them now."""
        plan, cache, lifted = self.plan, self.cache, self.lifted
        parts = _page_parts(plan, self.recipe_keys, indices)
        self.parts.update(parts)
        cached = list(parts)
        kept = [i for i in cached if _kept_whole(plan[i].rel, plan[i].stamp)]
        held = cache.stored(PAGES_STAGE, [parts[i] for i in kept], sweep=True)
        self.keys.update((i, key) for i, (key, _) in zip(kept, held, strict=True))
        there = {i for i, (_, found) in zip(kept, held, strict=True) if found}
        # a run's page: keyed, never stored; rendered now only when nothing can be linked
        passing = [i for i in cached if not _kept_whole(plan[i].rel, plan[i].stamp)]
        derived = cache.derive(PAGES_STAGE, [parts[i] for i in passing])
        self.keys.update(zip(passing, derived.keys, strict=True))
        if self.linkable:
            there.update(passing)
        engine = [i for i in cached if _needs_skeleton(plan[i])]
        # a stamped page: read (rendered) only when the cache does not hold it
        read = [i for i in cached if i not in there and not _needs_skeleton(plan[i])]
        whole: set[int] = set()

        def make(todo: list[int]) -> list[bytes]:  # engine pages without a stored skeleton
            indices = [engine[j] for j in todo]
            whole.update(indices)
            lifted.update(zip(indices, self.get(indices), strict=True))
            return [lifted[i][0].encode() for i in indices]

        shells = cache.get_or_make_many(
            SKELETONS_STAGE, [parts[i] for i in engine], make, sweep=True
        )  # stored as UTF-8 bytes (see `StoredPage`)
        self.skeletons.update(
            (i, s.decode()) for i, s in zip(engine, shells, strict=True) if i not in whole
        )
        lifted.update(zip(read, self.get(read), strict=True))
        self.by_html.update(
            (plan[i].rel.removesuffix(".md") + ".html", i) for i in cached if i not in lifted
        )

    def left(self, indices: Sequence[int]) -> None:
        """The pages at `indices` as left in the cache, unread (fetched when needed)."""
        parts = _page_parts(self.plan, self.recipe_keys, indices)
        self.parts.update(parts)
        self.by_html.update((self.plan[i].rel.removesuffix(".md") + ".html", i) for i in parts)

    def get(self, indices: list[int]) -> list[Lifted]:
        """The pages at `indices` read from the cache, or rendered and stored; a page the
        cache does not keep whole (`_kept_whole`) rendered."""
        plan = self.plan
        passing = [i for i in indices if not _kept_whole(plan[i].rel, plan[i].stamp)]
        if not passing:
            return self._get_kept(indices)
        kept = [i for i in indices if _kept_whole(plan[i].rel, plan[i].stamp)]
        found = dict(zip(passing, self.render(passing), strict=True))
        found.update(zip(kept, self._get_kept(kept) if kept else (), strict=True))
        return [found[i] for i in indices]

    def _get_kept(self, indices: list[int]) -> list[Lifted]:
        render = self.render

        def make(todo: list[int]) -> list[StoredPage]:
            render.read -= len(todo)  # not in the cache (or a bad entry): rendered
            return [StoredPage(*page) for page in render([indices[j] for j in todo])]

        render.read += len(indices)
        parts = self.parts
        stored = self.cache.get_or_make_many(PAGES_STAGE, [parts[i] for i in indices], make)
        return [(page.skeleton, page.blocks) for page in stored]

    def fetch(self, rels: Sequence[str]) -> Fetched:
        """The fill and blocks of pages left in the cache (site-relative .html)."""
        plan, by_html = self.plan, self.by_html
        found = self.get([by_html[rel] for rel in rels])
        out: dict[str, tuple[islands.Fill | None, tuple[str, ...]]] = {}
        for rel, (skeleton, blocks) in zip(rels, found, strict=True):
            page = plan[by_html[rel]]
            fill = pages.stamp_fill(skeleton, page.rel, page.stamp) if page.stamp else None
            out[rel] = (fill, blocks)
        return out

    def stored_group(self, span: range) -> StoredGroup:
        """The entry of the group of pages at `span` (all keyed by `add`)."""
        plan = self.plan
        engine = [i for i in span if _needs_skeleton(plan[i])]
        derived = self.cache.derive(SKELETONS_STAGE, [self.parts[i] for i in engine])
        shells = dict(zip(engine, derived.keys, strict=True))
        skeletons = {
            i: self.lifted[i][0] if i in self.lifted else self.skeletons[i] for i in engine
        }
        searches = {
            i: stamping.search_entries(skeletons[i], _html(plan[i].rel))
            for i in engine
            if plan[i].stamp in _BODY_STAMPS
        }
        return StoredGroup(
            tuple(plan[i].rel for i in span),
            tuple(plan[i].stamp for i in span),
            tuple(self.keys[i] for i in span),
            tuple(shells.get(i, "") for i in span),
            tuple(skeletons.get(i, "") for i in span),
            tuple(searches.get(i, "") for i in span),
        )


def _kept_whole(rel: str, stamp: str) -> bool:
    """Whether the cache keeps the page at `rel` (docs-relative), of stamp `stamp`, whole
    (lifted: its skeleton and blocks, `StoredPage`), to be finished again without being
    rendered: every page but a run's (stamped from `pages.RUN_STAMP`, not that page itself).

    A run's page is keyed (its key names its content, and a finished page of the same source
    is linked from the last build) but rendered whenever it is to be finished: in a cold build
    with the others; in a build of an output that holds a recorded build, only when fetched
    (`finish_pages`: its finished page cannot be linked). At 1,000 x 20,000 that is 20,000 of
    the cold build's 22,019 pages, 340 of the pages stage's 384 MB, which every cold build
    pickled, hashed and wrote into the store to read back only when the site's chrome changes
    or its output is gone; a page is rendered in about the time it is read back (~100 us).
    Measured at 1,000 x 20,000 against the tree before (a169880), user + system CPU-s: cold
    builds, three interleaved pairs, 61.26 / 59.14 / 59.39 -> 59.51 / 56.39 / 56.80 (peak RSS
    of the largest process 1,693-1,714 -> 1,687-1,688 MiB; the store 836 -> 550 MB); a build after `--repo-url`
    changed (every page finished again, the runs' rendered rather than read back) 21.69 ->
    15.79, 25.5 -> 17.6 s wall; one-file rebuilds no slower (2.35-2.64 s against 2.54-2.88)."""
    return stamp != pages.RUN_STAMP or rel == stamp


def _whole(group: StoredGroup) -> Iterator[str]:
    """The keys of a group's pages that the cache keeps whole (`_kept_whole`)."""
    pages_ = zip(group.keys, group.rels, group.stamps, strict=True)
    return (k for k, rel, stamp in pages_ if _kept_whole(rel, stamp))


def _page_parts(
    plan: Sequence[pages.PagePlan], recipe_keys: RecipeKeys, indices: Sequence[int]
) -> dict[int, tuple[str, ...]]:
    """The key parts of the pages at `indices` that the cache keeps: a recipe's pages by
    their runs (`RecipeKeys.parts`), the site-wide ones by what they are made of."""
    parts: dict[int, tuple[str, ...]] = {}
    for i in indices:
        p = plan[i]
        if p.runs is not None:
            parts[i] = recipe_keys.parts(p.kind, p.name, p.rel, facts(p.runs))
        elif (site := _site_parts(recipe_keys, p)) is not None:
            parts[i] = site
    return parts


def _site_parts(recipe_keys: RecipeKeys, page: pages.PagePlan) -> tuple[str, ...] | None:
    """The key parts of a site-wide page: the build's evidence-independent inputs (the
    templates and the options among them), the finishing code, and the derived key
    (`generator.core.memo`) of the whole record it is made from (`pages.SitePage`: the page is
    a function of it). None for a page without one, or whose record holds a value no key can
    see: that page is rendered by every build."""
    if page.made_of is None:
        return None
    try:
        made_of = derive_key(PAGES_STAGE, recipe_keys.fp, page.made_of, _values_only)
    except TypeError:
        return None
    return (recipe_keys.fp, recipe_keys.base_key, page.kind, page.rel, made_of)


def _values_only(path: Path, where: str) -> str:
    raise TypeError(f"a page is made of values, not of files ({path}, {where})")


# stamped pages whose stamp has a table of contents: their skeleton is kept (read from the
# cache, stored in their group's entry) for their entries of the search index
_BODY_STAMPS = frozenset(pages.RECIPE_STAMPS.values())


def _needs_skeleton(page: pages.PagePlan) -> bool:
    """A page whose Markdown skeleton the build reads: one the engine builds, or a stamped
    recipe page (its search entries are made from it)."""
    return _engine_builds(page) or page.stamp in _BODY_STAMPS


def _engine_builds(page: pages.PagePlan) -> bool:
    """A page the engine builds itself (a stamp page among them), not one made from its stamp
    page's build."""
    return not page.stamp or page.stamp == page.rel


def site_files(site_dir: Path) -> dict[str, bytes]:
    return dict(safeio.files(site_dir, where="the built site", limit=safeio.OTHER_BYTES))


def _portable(config_file: Path, work: Path) -> bytes:
    """The mkdocs configuration without the build's temporary directory in it (the
    reference of `EngineInput.portable`, which takes it from the text before it is written)."""
    raw = safeio.read(config_file, root=work, where="the build's directory")
    return raw.replace(str(work).encode(), b"<work>")


AGAIN_DIR = "engine-again"  # where the engine runs again for a damaged cached output


@dataclass(frozen=True, slots=True)
class EngineInput:
    """What mkdocs reads, in memory: the docs tree it builds (`docs`: the static docs, then
    the Markdown skeletons over them, as `write` lays them down) and its configuration's text,
    whose directories are those of the build's temporary tree `work`. The tree is written only
    when mkdocs must run (`run_engine`): a rebuild that finds mkdocs' output in the cache
    writes no docs file.

    Measured (one evidence file removed, mkdocs' output reused): writing the 2,054 docs files
    of the 1,000-recipe site only to digest them took 1.9 profiled s (1.7 in `open`); 2,017
    such files written, digested and removed took 0.97-2.04 CPU-s (three runs, load 8), their
    digest in memory 0.006-0.009. `write_site` of a one-file rebuild at 200 recipes x 4,000
    runs (with `incremental.as_recorded`'s walk): 0.73-1.05 -> 0.48-0.49 CPU-s; at 1,000 x
    20,000 it is now 2.3 CPU-s."""

    work: Path
    static: Mapping[str, bytes]
    skeletons: Mapping[str, str]
    config: str
    again: str = ""  # the configuration of a run into `AGAIN_DIR` under `work` (`rerun`)

    @property
    def docs_dir(self) -> Path:
        return self.work / "docs"

    @property
    def config_file(self) -> Path:
        return self.work / "mkdocs.yml"

    def docs(self) -> Iterator[tuple[str, bytes]]:
        """Every file of the docs tree (relative path, bytes), sorted by path: a skeleton
        replaces a static doc of the same path, as the second write replaces the first."""
        for rel in sorted(self.static.keys() | self.skeletons.keys()):
            text = self.skeletons.get(rel)
            yield rel, text.encode("utf-8") if text is not None else self.static[rel]

    def docs_digest(self) -> str:
        """`tree_digest` of the docs tree `write` lays down, from the bytes in memory (the
        same sorted paths and digests; tests/test_site_incremental.py holds the two equal)."""
        h = hashlib.sha256()
        for rel, data in self.docs():
            sha = hashlib.sha256(data).hexdigest()
            h.update(f"{rel}\0{sha}\0\n".encode("utf-8", "surrogateescape"))
        return h.hexdigest()

    def portable(self) -> bytes:
        """The configuration without the build's temporary directory in it."""
        return self.config.encode("utf-8").replace(str(self.work).encode(), b"<work>")

    def write(self) -> None:
        """The docs tree and the configuration file, for mkdocs to read."""
        _write(self.docs_dir, dict(self.static))
        _write(self.docs_dir, self.skeletons)
        atomic.write_text(self.config_file, self.config, root=self.work)

    def rerun(self, epoch: int) -> dict[str, bytes]:
        """mkdocs' whole output built again into a directory of its own under `work` (not
        the site directory, where the publisher is writing): for a reused output whose
        cached file turned out bad (`generator.site.engine.reused`)."""
        if not self.again:
            raise SiteError("mkdocs' cached output is damaged and this build cannot run it again")
        config_file = self.work / "mkdocs-again.yml"
        self.write()
        atomic.write_text(config_file, self.again, root=self.work)
        run_mkdocs(config_file, epoch)
        return site_files(self.work / AGAIN_DIR)


def run_engine(
    engine: EngineInput, site_dir: Path, epoch: int, cache: Cache | None, base: str
) -> EngineOutput | None:
    """`mkdocs build --strict` into `site_dir`, or its output for the very same docs tree from
    the cache (then returned, not written: the caller publishes it, reading only the files it
    makes, `generator.site.engine`). The docs tree is written only when mkdocs runs; the key
    names its content (`EngineInput.docs_digest`).

    The Markdown skeletons hold no evidence data (it is in the islands), so a build that only
    added evidence usually finds the engine's output of the previous build. Returns the reused
    output (None when mkdocs ran)."""
    if cache is None or not cache.enabled or not base:
        engine.write()
        run_mkdocs(engine.config_file, epoch)
        return None
    ran = False

    def make() -> Index:
        nonlocal ran
        engine.write()
        run_mkdocs(engine.config_file, epoch)
        ran = True
        return store_engine_output(cache, site_files(site_dir))

    parts = (fingerprint("site"), base, engine.docs_digest(), engine.portable(), INDEX_FORMAT)
    index = cache.get_or_make(ENGINE_STAGE, (*parts, str(epoch)), make, sweep=True)
    if ran:
        return None
    output = reused_engine_output(cache, index, functools.partial(engine.rerun, epoch))
    if output is None:  # a file's entry is gone: the engine runs (its files stored again)
        make()
        return None
    PROGRESS.info("mkdocs: the same %d pages were built before; output reused", len(index))
    return output


def iter_published(
    site: SiteData, reuse: api.Reuse | None = None
) -> Iterator[tuple[str, bytes | Derived] | Block]:
    """Files served as they are (no page around them): API, badges, bundles, raw evidence;
    one at a time, so the largest (the API) is never all in memory at once. A file whose
    source's digest is known before it is made (an archive, a run's signed statement) comes as
    `Derived`: the publisher links the previous build's copy instead of making it again.

    With `reuse` (a build with a cache), a recipe's archives, and a recipe name's raw runs
    with their signed statements, come as one `Block` each (`_blocks`), keyed by what they are
    made from: a rebuild whose previous build published the same block keeps it whole
    (`Publisher.put_block`), so a one-file change costs a key per recipe, not an item per file.
    Without, the same files come one by one (the reference: `published_files`)."""
    yield "assets/plotly.min.js", plotly_js()
    yield from api.iter_api_files(site, reuse)
    yield from badges.iter_badge_files(site, reuse)
    yield changelog.FEED, changelog.atom(site, site.site_url)
    for block in _blocks(site, reuse):
        if reuse is None:
            yield from block.items()
        else:
            yield block


PUBLISHED_CODE = "site"  # the code that makes the blocks' files (this module, audit, stages)


def _blocks(site: SiteData, reuse: api.Reuse | None) -> Iterator[Block]:
    """Each recipe's archives, then each recipe name's runs (raw file and signed statement),
    as a `Block` whose key (with `reuse`; else "") names every input of every file it gives:
    the archives' paths and digests and the code that publishes them (`PUBLISHED_CODE`); the
    runs' source as the API's files of the same runs have it (`reuse.source`, kind
    "published-runs": the code, the build's inputs and each run's path, id, verdict and
    bytes' digest, which name its raw file's path and bytes and whether its signed statement
    is published), digested once for the runs however many files show them
    (`incremental.api_reuse`). Measured at 1,000 x 20,000 (one evidence file removed, CPU-s
    in-process): a key digested from each run's path, digest and statement flag, 20,000
    runs, 0.060-0.061 for the blocks -> 0.035-0.038."""
    code = fingerprint(PUBLISHED_CODE) if reuse is not None else ""
    for r in site.recipes:
        downloads = tuple(d for p in r.profiles for d in p.downloads)
        if downloads:
            key = ""
            if reuse is not None:
                key = digest("archives", code, *(f"{d.file}\0{d.sha256}" for d in downloads))
            yield Block(key, functools.partial(_archives, downloads))
    published: dict[str, str] = {}
    groups: dict[str, list[RunFacts]] = {}
    for e in facts(site.evidence):  # the rows: no recipe's views loaded
        if e.raw:
            rel = e.raw_file
            if rel in published:  # never let one file silently replace another
                raise SiteError(f"{e.path} and {published[rel]} would both be published as {rel}")
            published[rel] = e.path
            groups.setdefault(e.recipe, []).append(e)
    statement_code = fingerprint("site/audit.py")
    for name, runs in groups.items():
        key = reuse.source("published-runs", name, runs) if reuse is not None else ""
        yield Block(key, functools.partial(_runs, tuple(runs), statement_code))


def _signed(run: RunFacts) -> bool:
    """Whether the run's signed statement is published beside its raw file."""
    return run.raw is not None and run.state != "rejected" and run.raw.statement


def _archives(downloads: Sequence[Download]) -> Iterator[tuple[str, bytes | Derived]]:
    for d in downloads:
        # the bytes are read (from the build cache's store) only if not linked
        yield d.file, Derived(f"archive\0{d.sha256}", functools.partial(_content, d))


def _runs(runs: Sequence[RunFacts], statement_code: str) -> Iterator[tuple[str, bytes | Derived]]:
    # the runs' files read while their block is put (a `safeio.TreeReader` per evidence root,
    # closed with the block; a file made after that is read the reference way, `_read_raw`)
    readers: dict[str, safeio.TreeReader] = {}
    try:
        for e in runs:
            if e.raw is None:
                continue
            rel = e.raw_file
            reader = readers.get(e.raw.root)
            if reader is None:
                reader = readers[e.raw.root] = safeio.TreeReader(e.raw.root)
            # the bytes verified, read only when the previous build has no copy of them, and
            # then once for the raw file and its statement both (`_ReadOnce`)
            raw: Callable[[], bytes] = (
                _ReadOnce(e.raw, reader)
                if _signed(e)
                else functools.partial(_read_raw, e.raw, reader)
            )
            yield rel, Derived(derived_source("raw", e.raw.sha256), raw)
            if _signed(e):  # what was judged, as signed
                source = derived_source("statement", statement_code, e.raw.sha256)
                yield statement_file(rel), Derived(source, functools.partial(_statement, raw))
    finally:
        for reader in readers.values():
            reader.close()


def _read_raw(raw: RawFile, reader: safeio.TreeReader | None = None) -> bytes:
    """`stages.read_raw(raw)`: the bytes verified, else a LoadError. Read by `reader` first
    (one `openat` below the evidence root, no link followed) and taken when their sha256 is
    the one verified; anything else (a link, a file changed, the reader closed) is read and
    judged by `stages.read_raw`, the reference (tests/test_raw_read_once.py). Measured on the
    4,000 raw files of 200 x 4,000, a reader per recipe as `_runs` has it (one process,
    `time.process_time`, three interleaved runs): 0.133-0.138 -> 0.069-0.070 CPU-s."""
    if reader is not None and not raw.pointer:
        data = reader.read(raw.path, yamlio.MAX_FILE_BYTES)
        if data is not None and hashlib.sha256(data).hexdigest() == raw.sha256:
            return data
    return stages.read_raw(raw)


class _ReadOnce:
    """A run's raw bytes (`_read_raw`: those verified, else a LoadError), read on the first
    call and given to the second, then dropped: the raw file and its signed statement are
    published one after the other from one read. Before, each read the file and hashed it
    again: 40,000 reads for 20,000 signed runs in a cold build at 1,000 x 20,000."""

    __slots__ = ("_data", "_raw", "_reader")

    def __init__(self, raw: RawFile, reader: safeio.TreeReader | None = None) -> None:
        self._raw = raw
        self._reader = reader
        self._data: bytes | None = None

    def __call__(self) -> bytes:
        data = self._data
        if data is None:
            data = self._data = _read_raw(self._raw, self._reader)
            return data
        self._data = None  # the second call: nothing holds the bytes after it
        return data


def _content(download: Download) -> bytes:
    return download.content


def _statement(raw: Callable[[], bytes]) -> bytes | None:
    """A run's signed statement (generator/site/audit.py), from its raw file's bytes: only
    made for a run whose raw file holds one (`_signed`: `RawFile.statement`, which vouches
    for the bytes `raw` gives, `audit.vouched_statement`)."""
    return vouched_statement(raw())


def published_files(site: SiteData) -> dict[str, bytes]:
    """Every file `iter_published` gives, made."""
    out: dict[str, bytes] = {}
    for item in iter_published(site):
        assert not isinstance(item, Block), "without reuse, files come one by one"
        rel, data = item
        made = data.make() if isinstance(data, Derived) else data
        if made is not None:
            out[rel] = made
    return out


def finish_pages(
    site_dir: Path,
    made: Pages,
    publisher: Publisher | None = None,
    engine: EngineOutput | None = None,
    remade: Remade = (),
) -> None:
    """Put the data blocks back into the built pages and add the Content-Security-Policy;
    make each stamped page from its stamp's built page (`PageContent.stamp`).

    The pages are those mkdocs wrote into `site_dir`, or, when its output was reused, those of
    `engine` (whose other files are published as derived from their sha256). A finished page
    is published as `Derived` from the digest of its built HTML and its content's key: one the
    last build published from the same source is linked without its built HTML or its blocks
    being read, put in or hashed; the built HTML and the blocks of the pages to be made are
    fetched in one batch each."""
    put = publisher or Publisher(site_dir)
    for rel, source, make in remade:  # the search index, the sitemap (`engine_remade`)
        put.put_derived(rel, source, make)
    built = _built_pages(site_dir, put, engine)
    if engine is None:  # a stamp page the engine wrote is never published
        for rel in made.own:
            put.drop(rel)
    sources = _page_sources(built.shas, made.content, made.own.keys())
    stale = {rel for rel, source in sources.items() if put.recorded_source(rel) != source}
    stored = [rel for rel, page in made.content.items() if page.stored and rel in stale]
    fetched = dict(made.fetch(stored)) if stored else {}
    built.prefetch(_built_from(rel, made.content.get(rel), fetched) for rel in stale)
    for rel in sorted(sources):
        page = made.content.get(rel) or PageContent("")
        finish = functools.partial(_finish_page, rel, built, page, made, fetched)
        put.put_derived(rel, sources[rel], finish)
    if publisher is None:
        put.close()


def _built_pages(site_dir: Path, put: Publisher, engine: EngineOutput | None) -> BuiltPages:
    """The engine's built pages (site-relative .html): read from `site_dir`, or those of
    `engine`, whose other files are published here, each derived from its sha256 (read only
    when the last build did not publish it)."""
    if engine is None:
        return BuiltPages.of(
            dict(
                safeio.files(
                    site_dir, where="the built site", suffixes=(".html",), limit=safeio.OTHER_BYTES
                )
            )
        )
    for rel, sha in sorted(engine.shas.items()):
        if not rel.endswith(".html"):
            put.put_derived(rel, engine_source(sha), functools.partial(_engine_file, engine, rel))
    pages = {rel: sha for rel, sha in engine.shas.items() if rel.endswith(".html")}
    return BuiltPages(pages, engine.read)


def _engine_file(engine: EngineOutput, rel: str) -> bytes:
    return engine.read([rel])[rel]


def engine_source(sha: str) -> str:
    """The source of a file of the engine's output published as it is (not a page): its
    bytes' sha256, which the cached output's index names (`generator.site.engine`), so a
    file of a reused output the last build published is kept without being read."""
    return derived_source("engine-file", sha)


PAGE_CODE = "site"  # the finishing code (islands, csp, this module): part of every page's source


def _page_sources(
    built: Mapping[str, str], content: Mapping[str, PageContent], hidden: Collection[str] = ()
) -> dict[str, str]:
    """Every finished page's source identity (`derived_source`): the finishing code, the
    sha256 of the built HTML it is made from (`built`: by path) and its content's key (pages
    with no content: none). The stamp pages in `hidden` are not published."""
    code = fingerprint(PAGE_CODE)
    sources: dict[str, str] = {}
    for rel in (built.keys() | content.keys()) - set(hidden):
        page = content.get(rel) or PageContent("")
        shas = [built.get(origin) for origin in _origins(page.stamp or rel)]
        if None in shas:
            raise SiteError(f"{rel}: a page it is made from, of {page.stamp}, was not built")
        sources[rel] = derived_source("page", code, *shas, page.key)  # type: ignore[arg-type]
    return sources


def _built_from(rel: str, page: PageContent | None, fetched: Fetched) -> str:
    """The built page the finished page at `rel` is made from: its own, its stamp, or the
    variant of its stamp its layout picks (its fill read in `fetched` when left stored)."""
    if page is None or not page.stamp:
        return rel
    fill = fetched[rel][0] if page.stored and rel in fetched else page.fill
    return _origin(page.stamp, fill, rel) if fill is not None else page.stamp


def _origins(stamp: str) -> tuple[str, ...]:
    """The built pages a page stamped from `stamp` (site-relative .html) may be made from:
    the stamp's variants, one per layout (`pages.RECIPE_STAMPS`), or the stamp itself."""
    if stamp == _html(pages.RECIPE_STAMP):
        return tuple(_html(rel) for rel in pages.RECIPE_STAMPS.values())
    return (stamp,)


def _origin(stamp: str, fill: islands.Fill, rel: str) -> str:
    """The variant of `stamp` a page of `fill`'s layout is made from."""
    if not fill.template:
        return stamp
    variant = pages.RECIPE_STAMPS.get(fill.template)
    if variant is None or stamp != _html(pages.RECIPE_STAMP):
        raise SiteError(f"{rel}: no stamp page of its layout {fill.template!r}")
    return _html(variant)


def _finish_page(
    rel: str,
    built: BuiltPages,
    page: PageContent,
    made: Pages,
    fetched: Fetched,
) -> bytes:
    """One finished page: the built HTML (its stamp's, with its fill), its data blocks put
    back, the Content-Security-Policy added."""
    made.renderer.finished += 1
    fill, blocks = page.fill, page.blocks
    if page.stored:
        fill, blocks = fetched[rel] if rel in fetched else made.fetch([rel])[rel]
    if page.stamp:
        if fill is None:
            raise SiteError(f"{rel}: a stamped page without its fill")
        origin = _origin(page.stamp, fill, rel)
        html = islands.stamp(built[origin].decode("utf-8"), fill, rel, made.own.get(origin))
    else:
        html = built[rel].decode("utf-8")
    if blocks:
        html = islands.sink(html, blocks, rel)
    return with_csp_utf8(html)


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def _env(name: str, value: str) -> contextlib.AbstractContextManager[None]:
    """`name` set to `value` while mkdocs runs, through the environment's door."""
    from generator.core import envvars

    return envvars.setting(name, value)


_DOC_FILE = re.compile(r"Doc file '([^']+)'")


def _mkdocs_diagnostic(message: str) -> Diagnostic:
    """A mkdocs warning, located at the page it names (`docs/<page>`) when it names one."""
    found = _DOC_FILE.search(message)
    path = f"docs/{found.group(1)}" if found else "mkdocs.yml"
    return Diagnostic(path, 0, 0, "$", message, "site.mkdocs")


def run_mkdocs(config_file: Path, epoch: int) -> None:
    """`mkdocs build --strict` in-process; warnings become located diagnostics of a SiteError."""
    from mkdocs.commands.build import build
    from mkdocs.config import load_config
    from mkdocs.exceptions import MkDocsException

    handler = _Collect()
    logger = logging.getLogger("mkdocs")
    logger.addHandler(handler)
    try:
        with _env("SOURCE_DATE_EPOCH", str(epoch)):
            cfg = load_config(config_file=str(config_file), strict=True)
            cfg.plugins.on_startup(command="build", dirty=False)
            try:
                build(cfg)
            finally:
                cfg.plugins.on_shutdown()
    except (MkDocsException, SystemExit) as e:
        diags = [_mkdocs_diagnostic(m) for m in handler.messages]
        raise SiteError(f"mkdocs build --strict failed: {e}", diags) from e
    finally:
        logger.removeHandler(handler)


def build_all(
    options: BuildOptions, out: Path, epoch: int, memo: Memo, base: str
) -> tuple[BuildReport, Written]:
    """The build proper (under the lock): the pipeline and the bundles (`gather`) → pages →
    write. Returns the report and what was written (the new file table's sums and sources)."""
    # the collector is paused everywhere but around mkdocs, which makes cyclic garbage per page
    with collector_paused():
        site = gather(options, epoch, memo)
    cache = memo.cache
    recipe_keys = RecipeKeys(cache, site, base) if cache is not None and base else None
    linkable = cache is not None and last_record(cache, out) is not None
    # the pages go straight into `write_site`, which lets go of them once they are written
    written = write_site(
        site,
        make_pages(site, options, recipe_keys, linkable=linkable),
        options,
        out,
        epoch,
        cache,
        base,
        recipe_keys,
    )
    report = BuildReport(
        out=str(options.out),
        recipes=len(site.recipes),
        rows=sum(len(r.profiles) for r in site.recipes),
        evidence=len(site.evidence),
        pages=written.pages,
        files=written.files,
        notes=site.notes + written.notes,
        pages_rendered=written.rendered,
        engine_reused=written.engine_reused,
        files_written=written.counts.written,
        files_linked=written.counts.linked,
        files_derived=written.counts.derived_made,
        files_kept=written.counts.kept,
        files_removed=written.counts.removed,
        recipes_aggregated=dict(site.work).get("recipes aggregated", 0),
        views_judged=dict(site.work).get("views judged", 0),
        evidence_read=dict(site.work).get("evidence files read", 0),
        pages_read=written.read,
        pages_finished=written.finished,
    )
    return report, written


@dataclass(frozen=True, slots=True)
class Written:
    """What `write_site` did: the pages it was given (and how many of them were rendered by
    this build), files in the new site, whether mkdocs' output was reused, the sha256 of every
    file it published, the source of every derived file, and the publisher's counts."""

    pages: int
    rendered: int
    files: int
    engine_reused: bool
    sums: Mapping[str, str]
    sources: Mapping[str, str]
    counts: PublishCounts
    notes: tuple[StageNote, ...] = ()  # what the writing left out, and why
    read: int = 0  # pages read from the cache (`Pages`)
    finished: int = 0  # pages finished, not linked (`finish_pages`)
    table: FileTable | None = None  # the new file table (`Publisher.table`, `tree_table`)


def write_site(
    site: SiteData,
    made: Pages,
    options: BuildOptions,
    out: Path,
    epoch: int,
    cache: Cache | None,
    base: str,
    recipe_keys: RecipeKeys | None,
) -> Written:
    """The site's files (docs, mkdocs, the data blocks, the published files) into a temporary
    tree beside `out`, then published (`_publish`): the temporary tree is removed once it
    is in place, or when the build fails before that."""
    count = made.count
    PROGRESS.info(
        "pages: %d generated (%d rendered, %d reused), then mkdocs build --strict",
        count,
        made.rendered,
        count - made.rendered,
    )
    work = make_temp_dir(staging_prefix(out), out.parent)
    try:
        docs_dir, site_dir = work / "docs", work / "site"
        config = mkdocs_config(
            options.config, docs_dir, site_dir, options.site_url, options.repo_url
        )
        text = yaml.safe_dump(config, sort_keys=True)
        again = yaml.safe_dump({**config, "site_dir": str(work / AGAIN_DIR)}, sort_keys=True)
        inputs = EngineInput(work, static_docs(options), made.skeletons, text, again)
        engine = run_engine(inputs, site_dir, epoch, cache, base)
        del inputs
        engine_reused = engine is not None
        engine, remade = _site_wide(site_dir, engine, made, bool(config.get("site_url")))
        with collector_paused():
            publisher = _publisher(cache, out, site_dir)
            finish_pages(site_dir, made, publisher, engine, remade)
            stamping.forget()
            work_done = made.renderer  # its counts include the pages fetched and finished
            del engine, made  # the data blocks are in the pages now
            table = _publish(publisher, site, recipe_keys, out)
    finally:
        if not safeio.exists(journal_path(out)):  # a failed commit's journal needs its files
            discard(work, ignore_errors=True)
    notes = () if config.get("site_url") else (NO_SITEMAP,)
    return Written(
        count,
        work_done.rendered,
        len(publisher.files),
        engine_reused,
        publisher.sums,
        publisher.sources,
        publisher.counts(),
        notes,
        work_done.read,
        work_done.finished,
        table,
    )


def _publisher(cache: Cache | None, out: Path, site_dir: Path) -> Publisher:
    """The publisher of a build into `site_dir`: a delta of `out` when `out` is exactly what
    the last recorded build wrote (`as_recorded`), else a new tree reusing what it can."""
    known = previous_files(cache, out) if cache is not None else {}
    delta = bool(known) and as_recorded(out, known)
    return Publisher(site_dir, out if known else None, known, delta=delta)


def _publish(
    publisher: Publisher, site: SiteData, recipe_keys: RecipeKeys | None, out: Path
) -> FileTable | None:
    """Every published file beside the pages (one unchanged since the previous build of the
    output, by its recorded size, mtime, inode and source, is reused, not made), and the
    mark of a site; then the new site put in place, as a delta or as a new tree swapped in
    whole; returns its file table (with the blocks it published, `Publisher.put_block`; None
    for a build without a cache, which keeps no record)."""
    publisher.put_all(iter_published(site, api_reuse(recipe_keys, publisher.sums)))
    publisher.put(MARKER, marker_bytes(OutputKind.SITE))
    publisher.take_rest(engine_source)  # the engine's files, when it ran
    publisher.close()
    if not publisher.is_delta:
        if publisher.linked:
            PROGRESS.info(
                "%d files unchanged since the last build: linked (%d written)",
                publisher.linked,
                publisher.written,
            )
        PROGRESS.info("swap the finished site into %s", out)
        swap_in(publisher.root, out)
        if recipe_keys is None:  # no cache: no record of this build is kept
            return None
        return publisher.tree_table(listing_rows(out))  # the stat of the tree in place
    delta, table = publisher.delta(), publisher.table()
    PROGRESS.info(
        "%d files unchanged since the last build: kept in place; %d to move into %s, %d to remove",
        publisher.kept,
        len(delta.moves),
        out,
        len(delta.removals),
    )
    commit_delta(delta, out)
    return table


SITEMAP_FILES = ("sitemap.xml", "sitemap.xml.gz")
NO_SITEMAP = StageNote(
    "sitemap",
    "no sitemap.xml written: a sitemap lists absolute URLs and this build has no site URL "
    "(give --site-url, or site_url in mkdocs.yml)",
)


def _engine_files(
    site_dir: Path, engine: EngineOutput | None, rels: Sequence[str]
) -> dict[str, bytes]:
    """The files at `rels` of the engine's output (those it wrote)."""
    if engine is not None:
        return engine.read([rel for rel in rels if rel in engine.shas])
    return {
        rel: safeio.read(site_dir / rel, root=site_dir, where="the built site")
        for rel in rels
        if safeio.is_file(site_dir / rel)
    }


SEARCH_INDEX = "search/search_index.json"  # the theme's search plugin's


Remade = Sequence[tuple[str, str, Callable[[], bytes | None]]]  # `engine_remade`


def _site_wide(
    site_dir: Path, engine: EngineOutput | None, made: Pages, site_url: bool
) -> tuple[EngineOutput | None, Remade]:
    """The engine's output without the site-wide files made again for the stamped pages
    (`engine_remade`, returned), and without its sitemap when there is no site URL."""
    remade = engine_remade(site_dir, engine, made, site_url)
    if engine is not None:
        engine = engine.without([rel for rel, _, _ in remade])
    if not site_url:
        engine = without_sitemap(site_dir, engine)
    return engine, remade


def engine_remade(
    site_dir: Path, engine: EngineOutput | None, made: Pages, site_url: bool
) -> list[tuple[str, str, Callable[[], bytes | None]]]:
    """The engine's site-wide files that list pages (its search index; its sitemap and its
    gzip, with a site URL) as it writes them when it builds every page (`search_index`,
    `stamped_sitemap`): each one's path, source (`derived_source`: its own file's sha256 and
    what the stamped pages put in) and maker, for the publisher, which links the previous
    build's copy when the source is the same (nothing read). None without stamp pages."""
    if not made.own:
        return []
    rels = [SEARCH_INDEX, *(SITEMAP_FILES if site_url else ())]
    if engine is not None:
        shas = {rel: engine.shas[rel] for rel in rels if rel in engine.shas}
    else:
        shas = {
            rel: hashlib.sha256(data).hexdigest()
            for rel, data in _engine_files(site_dir, None, rels).items()
        }
    code = fingerprint(PAGE_CODE)
    # the pages stamped from the stamp pages (a run's page is in neither file: not these)
    listed = sorted(f"{r}\0{c.stamp}" for r, c in made.content.items() if c.stamp in made.own)
    pages_in = digest("stamped", *sorted(made.own), *listed)
    out: list[tuple[str, str, Callable[[], bytes | None]]] = []
    if SEARCH_INDEX in shas:
        search = digest("search", *sorted(f"{r}\0{e}" for r, e in made.search.items()))

        def index() -> bytes:
            found = _engine_files(site_dir, engine, (SEARCH_INDEX,))
            return search_index(found[SEARCH_INDEX], made)

        source = derived_source("engine-remade", code, shas[SEARCH_INDEX], pages_in, search)
        out.append((SEARCH_INDEX, source, index))
    maps = [rel for rel in SITEMAP_FILES if rel in shas]
    if "sitemap.xml" in maps:
        made_once: dict[str, bytes] = {}

        def sitemap(rel: str) -> bytes | None:
            if not made_once:
                made_once.update(stamped_sitemap(_engine_files(site_dir, engine, maps), made))
            return made_once.get(rel)

        for rel in maps:
            source = derived_source("engine-remade", code, *(shas[r] for r in maps), pages_in)
            out.append((rel, source, functools.partial(sitemap, rel)))
    return out


def search_index(data: bytes, made: Pages) -> bytes:
    """The search plugin's index as it writes it when the engine builds every page
    (`pages.STAMP_RECIPES` off): the stamp pages' entries left out, each stamped recipe page's
    (`Pages.search`) put in, each page's entries in the engine's order of files
    (`mkdocs.structure.files.file_sort_key`), written as the plugin writes them (compact
    JSON, `default=str`)."""
    import json

    index = json.loads(data)
    if not isinstance(index, dict) or set(index) != {"config", "docs"}:
        raise SiteError(f"the engine's {SEARCH_INDEX} is not a search index")
    by_page: dict[str, list[str]] = {}
    for entry in index["docs"]:
        page = str(entry["location"]).split("#", 1)[0]
        if page not in made.own:
            by_page.setdefault(page, []).append(
                json.dumps(entry, separators=(",", ":"), default=str, allow_nan=False)
            )
    for page, entries in made.search.items():
        if page in by_page:
            raise SiteError(f"the engine's {SEARCH_INDEX} already holds {page}")
        if entries:
            by_page[page] = [entries[1:-1]]  # a JSON list's items
    docs = ",".join(
        ",".join(by_page[page]) for page in sorted(by_page, key=lambda p: _file_key(p, ""))
    )
    config = json.dumps(index["config"], separators=(",", ":"), default=str, allow_nan=False)
    return f'{{"config":{config},"docs":[{docs}]}}'.encode()


_URL = re.compile(r"<url>.*?</url>", re.DOTALL)
_LOC = re.compile(r"<loc>([^<]*)</loc>")


def stamped_sitemap(files: Mapping[str, bytes], made: Pages) -> dict[str, bytes]:
    """The engine's sitemap (and its gzip) as the engine writes it when it builds every page
    (`pages.STAMP_EVIDENCE` off): the stamp pages' own entries left out, one entry per stamped
    page with a body of its own (an evidence page), made from its stamp's entry with its file
    name, in the engine's order of files (`mkdocs.structure.files.file_sort_key`)."""
    if "sitemap.xml" not in files:
        return {}
    text = files["sitemap.xml"].decode("utf-8")
    entries = _URL.findall(text)
    gaps = _URL.split(text)  # the text before, between and after the entries
    if len(entries) < 2 or len(set(gaps[1:-1])) != 1:
        raise SiteError("the engine's sitemap is not a list of entries with one separator")
    by_loc: dict[str, str] = {}
    for entry in entries:
        found = _LOC.search(entry)
        if found is None:
            raise SiteError("the engine's sitemap has an entry without a location")
        by_loc[found.group(1)] = entry
    prefix = ""
    for stamp in made.own:
        own = [loc for loc in by_loc if loc.endswith(stamp)]
        if len(own) != 1:
            raise SiteError(f"the engine's sitemap does not list the stamp page {stamp} once")
        prefix, entry = own[0].removesuffix(stamp), by_loc.pop(own[0])
        stem = stamp.rsplit("/", 1)[-1]
        for rel, page in made.content.items():
            if page.stamp == stamp:
                if prefix + rel in by_loc:
                    raise SiteError(f"the engine's sitemap already lists {rel}")
                by_loc[prefix + rel] = entry.replace(stem, rel.rsplit("/", 1)[-1])
    order = sorted(by_loc, key=lambda loc: _file_key(loc, prefix))
    out = [gaps[0], gaps[1].join(by_loc[loc] for loc in order), gaps[-1]]
    sitemap = "".join(out).encode("utf-8")
    result = {"sitemap.xml": sitemap}
    if "sitemap.xml.gz" in files:
        result["sitemap.xml.gz"] = _gzip_like(files["sitemap.xml.gz"], sitemap)
    return result


def _file_key(loc: str, prefix: str) -> tuple[Any, ...]:
    """`mkdocs.structure.files.file_sort_key` of the page at `loc` (its Markdown source)."""
    if not loc.startswith(prefix):
        raise SiteError(f"the engine's sitemap lists {loc} outside the site's URL")
    parts = loc[len(prefix) :].removesuffix(".html").split("/")
    return (tuple(parts[:-1]), parts[-1] != "index", parts[-1] + ".md")


def _gzip_like(old: bytes, data: bytes) -> bytes:
    """`data` gzipped as the engine gzips its sitemap, by `core.archive.gzip_named`: the name
    `sitemap.xml` in the header, the time in the header of its own gzip (`old`), level 9.
    `tests/test_site_stamp.py` holds the bytes to the engine's (the standard library's
    GzipFile)."""
    if len(old) < 10:
        raise SiteError("the engine's sitemap.xml.gz is not a gzip file")
    mtime = int.from_bytes(old[4:8], "little")
    return archive.gzip_named(data, name="sitemap.xml", mtime=mtime)


def without_sitemap(site_dir: Path, engine: EngineOutput | None) -> EngineOutput | None:
    """mkdocs' output without its sitemap, which is empty when there is no site URL (it lists
    only absolute URLs): a sitemap that lists nothing is never published."""
    if engine is not None:
        return engine.without(SITEMAP_FILES)
    with TreeWriter(site_dir) as tree:
        for rel in SITEMAP_FILES:
            tree.remove(rel)
    return None


# the records and the entry live apart (`generator.site.options`, `generator.site.entry`), so a
# no-change rebuild imports none of this module; named here for the callers that build a site
__all__ = [
    "DEFAULT_DEPLOYERS",
    "REPO",
    "TEMPLATES",
    "BuildOptions",
    "BuildReport",
    "CatalogError",
    "build_all",
    "build_site",
    "gather",
    "source_date_epoch",
    "static_docs",
]
