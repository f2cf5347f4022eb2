"""What `aicr-catalog build` is asked to do and what it reports, and the inputs every build
reads before anything else: the records of the site build, in a module that imports no stage.

A build that finds nothing changed (`generator.site.entry`) needs these and nothing of the
pipeline, so they live apart from `generator.site.build` (which imports the pipeline, jinja
and the page engine): a no-change rebuild does not import those.
"""

from __future__ import annotations

import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from generator.core import proc, safeio, timeutil
from generator.core.cache import Cache, scope_of
from generator.core.errors import SiteError
from generator.core.memo import IN_BUILD_KEY, NOT_KEYED, PATH_ONLY, Memo
from generator.core.memo import content as keyed_by_content

if TYPE_CHECKING:
    from generator.site import pages

REPO = safeio.resolve(Path(__file__)).parent.parent.parent
TEMPLATES = REPO / "site_templates"
DEFAULT_DEPLOYERS = ("helm", "helmfile", "argocd", "flux")


@dataclass(frozen=True, slots=True)
class BuildOptions:
    """What `aicr-catalog build` was asked to do. The build's keys are derived from this whole
    record (`generator.core.memo`): a field added here is in every key the moment it exists;
    a path is keyed by its content unless its metadata says otherwise."""

    catalog: Path = field(metadata=keyed_by_content("the catalog"))
    evidence: Path = field(metadata=PATH_ONLY)  # keyed by the tree (build) and per run (pages)
    out: Path = field(metadata=NOT_KEYED)  # the record of the last build is kept per output
    docs: Path = field(default=REPO / "docs", metadata=keyed_by_content("the docs directory"))
    config: Path = field(default=REPO / "mkdocs.yml", metadata=keyed_by_content("mkdocs.yml"))
    trust_root: str = "public-good"
    source_date_epoch: int | None = None
    strict: bool = False
    deployers: tuple[str, ...] = DEFAULT_DEPLOYERS
    bundles: bool = True
    # the build cache's bundle directory (`.cache/` is its parent); None: --no-cache
    cache_dir: Path | None = field(default=None, metadata=NOT_KEYED)
    # the CLI reference page: every command's help, produced by the CLI (commands/build.py
    # `CliReference`: keyed by what it is made of, formatted when the page is made)
    cli_reference: Sequence[pages.CommandHelp] = ()
    # where the site is served (https://owner.github.io/repo/): the sitemap lists its pages and
    # 404.html links its assets from it, so it works at any depth under a sub-path
    site_url: str = ""
    repo_url: str = ""  # the catalog's source repository, linked from every page
    # the commit the qualification timeline runs to (build --timeline; generator/site/timeline.py):
    # "" builds no timeline; a commit keys the build to the history up to it
    timeline_head: str = ""
    # the commit checked out in the repository holding the evidence directory: run pages show
    # the commit that added each evidence file, from the history up to it (site/audit.py), so a
    # new commit (the file committed after a build, an amend) keys a new build; "" shows none.
    # Keyed by the whole build's key (`incremental.BuildInputs.heads`), not by the key every
    # page shares (`SiteInputs`): what a page shows of the history is in its own key (a run's
    # commit and date, `RecipeKeys`; the changelog's entries, its `SitePage` record), so a new
    # commit re-renders the pages whose history changed, not all of them
    evidence_head: str = field(default="", metadata=IN_BUILD_KEY)
    # the same for the catalog: the changelog dates each recipe by the commit that added it
    catalog_head: str = field(default="", metadata=IN_BUILD_KEY)
    # processes for verification and rendering (default: every core); page generation uses
    # them only when given (forked page workers copy the site data they read)
    jobs: int | None = field(default=None, metadata=NOT_KEYED)
    # pointer files under evidence/ may pull their artifacts (generator.core.net); else the
    # OCI cache only: a build uses no network unless `build --online` asked for it
    online: bool = False
    rules: str | None = None  # --upstream-rules; None: what the tree's apiVersions say


@dataclass(frozen=True, slots=True)
class StageNote:
    """A stage that did not run (not yet available) or ran with warnings, shown on the site."""

    stage: str
    message: str


@dataclass(frozen=True, slots=True)
class BuildReport:
    out: str
    recipes: int
    rows: int
    evidence: int
    pages: int
    files: int
    notes: tuple[StageNote, ...]
    pages_rendered: int = 0  # pages rendered by this build (the others came from the cache)
    engine_reused: bool = False  # mkdocs' output for the same Markdown came from the cache
    # what publishing did (`site/publish.py`): files written by this build, linked from the
    # previous tree, and derived files (archives, signed statements) made rather than linked
    files_written: int = 0
    files_linked: int = 0
    files_derived: int = 0
    # a delta (`write_site`: the output was exactly what the last build wrote): files left in
    # place as they were, and files removed; the files written are the ones renamed into place
    files_kept: int = 0
    files_removed: int = 0
    # recipes whose status was aggregated again (the others' came from the memo: a recipe's
    # status depends on its results and its runs alone, `generator.pipeline.aggregate`)
    recipes_aggregated: int = 0
    # run views judged again (the others' came from the memo, `generator.site.stages.judged`)
    # and evidence files whose bytes were read (the others' digests came from their stat memo,
    # `generator.evidence.store.FileMemo`)
    views_judged: int = 0
    evidence_read: int = 0
    # pages of one recipe's data read from the cache (a stamped page, a run's, is read only
    # when its finished page cannot be linked), and pages finished by this build: data blocks put back
    # into the built HTML (the others were linked from the previous tree: `finish_pages`)
    pages_read: int = 0
    pages_finished: int = 0


# --- time ---------------------------------------------------------------------------------------


def source_date_epoch(explicit: int | None, repo: Path) -> int:
    """SOURCE_DATE_EPOCH from the option, the environment, the last git commit, else 0."""
    if explicit is not None:
        return explicit
    env = timeutil.source_date_epoch(error=SiteError)
    if env is not None:
        return env
    try:
        out = proc.git(repo, "log", "-1", "--format=%ct", timeout=10)
    except proc.ProcError:  # no git, or it did not answer
        return 0
    text = out.text().strip()
    return int(text) if out.ok and text.isdigit() else 0


# --- inputs ------------------------------------------------------------------------------------


def memo_for(options: BuildOptions) -> Memo:
    """The build's memo (`.cache/` beside the bundle cache); one that keeps nothing under
    --no-cache."""
    if options.cache_dir is None:
        return Memo(None)
    # outputs beside each other share the cache; each sweeps only what no output uses
    return Memo(Cache(options.cache_dir.parent, scope=scope_of(options.out)))


def _is_file(e: safeio.Entry) -> bool:
    """Whether a walked entry is a regular file, or a link to one (`Path.is_file()`)."""
    if e.kind is safeio.Kind.FILE:
        return e.stat is not None and stat.S_ISREG(e.stat.st_mode)
    return e.kind is safeio.Kind.LINK and safeio.is_file(e.path, quiet=True)


def static_docs(options: BuildOptions) -> dict[str, bytes]:
    """Hand-written docs and the site's assets, copied into the build's docs tree."""
    files: dict[str, bytes] = {}
    if safeio.is_dir(options.docs):
        tree = safeio.walk(options.docs)
        for e in sorted(tree.entries, key=lambda e: safeio.order_key(e.rel)):
            if _is_file(e):  # published as is: a link out of docs/ is refused unread
                files[e.rel] = safeio.read(
                    e.path, root=options.docs, where="the docs directory", limit=safeio.OTHER_BYTES
                )
    # the repository's own CONTRIBUTING.md and SECURITY.md are the site's pages of those names
    # (beside the docs directory, else this checkout's)
    # read as every input is: a link leaving the repository (`-> /proc/self/environ`) is refused
    for name, page in (("CONTRIBUTING.md", "contributing.md"), ("SECURITY.md", "security.md")):
        source = options.docs.parent / name
        if not safeio.lexists(source):
            source = REPO / name
        files[page] = safeio.read(
            source, root=source.parent, where="the repository", limit=safeio.TEXT_BYTES
        )
    for rel, data in safeio.files(TEMPLATES / "assets", where="the site templates"):
        files["assets/" + rel] = data
    return files


__all__ = [
    "DEFAULT_DEPLOYERS",
    "REPO",
    "TEMPLATES",
    "BuildOptions",
    "BuildReport",
    "StageNote",
    "memo_for",
    "source_date_epoch",
    "static_docs",
]
