"""`aicr-catalog build`: validate, resolve, render, verify, aggregate and publish the static site."""

from __future__ import annotations

import contextlib
import functools
import logging
import platform
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, overload

import click

from generator.commands.common import (
    catalog_option,
    handles_errors,
    stated_rules,
    trust_root_option,
)
from generator.core import safeio
from generator.core.cache import PACKAGE, code_fingerprint, digest, fingerprint
from generator.core.errors import CatalogError
from generator.core.gitremote import remote_web_url
from generator.core.memo import NOT_KEYED
from generator.evidence.model import RootUse
from generator.site.audit import head_commit
from generator.site.entry import build_site
from generator.site.options import DEFAULT_DEPLOYERS, BuildOptions

if TYPE_CHECKING:  # the page module imports jinja: imported when the page is made
    from generator.site.pages import CommandHelp


@dataclass(frozen=True, slots=True)
class CliReference(Sequence["CommandHelp"]):
    """The CLI reference page's content (every command's `--help`), keyed by what it is made
    of and formatted only when a page is made from it.

    Formatting every command's help imports every command module (pandas, sigstore, the
    pipeline) and took 1.15 s of a 6.2 s no-change rebuild at 1,000 recipes, only so that the
    page's bytes entered the build's key. The help text is a function of the generator's code
    (the commands' own strings and the constants they show: `--upstream-rules` lists
    `generator.catalog.rules`, defaults come from other modules, so the whole package, not
    only cli.py and commands/), click's version and Python's (`textwrap`): `made_of` is their
    digest, and the build's key derives from it; `make` (not keyed) formats the help the first
    time the page asks for it. tests/test_cli_reference_key.py: an edited help string changes
    `made_of`."""

    made_of: str
    make: Callable[[], tuple[CommandHelp, ...]] = field(metadata=NOT_KEYED, compare=False)

    @overload
    def __getitem__(self, index: int) -> CommandHelp: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[CommandHelp]: ...

    def __getitem__(self, index: int | slice) -> CommandHelp | Sequence[CommandHelp]:
        return self.make()[index]

    def __len__(self) -> int:
        return len(self.make())


def reference_made_of(package: Path = PACKAGE) -> str:
    """The digest of what the CLI reference is made of (see `CliReference`)."""
    from importlib import metadata

    return digest(
        "cli-reference",
        code_fingerprint(package) if package != PACKAGE else fingerprint(),
        f"click=={metadata.version('click')}",
        f"python=={platform.python_version()}",
    )


def lazy_reference(root: click.Command) -> CliReference:
    """The reference of the CLI whose root command is `root`, formatted on first use."""
    return CliReference(reference_made_of(), functools.partial(_formatted, root))


@functools.cache
def _formatted(root: click.Command) -> tuple[CommandHelp, ...]:
    return cli_reference(root)


def cli_reference(
    cmd: click.Command,
    path: tuple[str, ...] = ("aicr-catalog",),
    parent: click.Context | None = None,
) -> tuple[CommandHelp, ...]:
    """Every command's `--help`, depth first in name order, at a fixed width (deterministic)."""
    ctx = click.Context(
        cmd, info_name=path[-1], parent=parent, terminal_width=100, max_content_width=100
    )
    from generator.site.pages import CommandHelp

    out = [CommandHelp(" ".join(path), cmd.get_help(ctx).rstrip())]
    if isinstance(cmd, click.Group):
        for name in sorted(cmd.list_commands(ctx)):
            sub = cmd.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                out.extend(cli_reference(sub, (*path, name), ctx))
    return tuple(out)


def _timeline_head(catalog_path: Path) -> str:
    """The commit `--timeline` runs to (the timeline module is imported only when asked)."""
    from generator.site.timeline import git_head

    return git_head(catalog_path)


class _Stderr(logging.Handler):
    """Writes to whatever stderr is at the time (click's test runner swaps it per invocation)."""

    def emit(self, record: logging.LogRecord) -> None:
        click.echo(f"build: {record.getMessage()}", err=True)


@contextlib.contextmanager
def show_progress() -> Iterator[None]:
    """Stage progress of the build on stderr (results stay on stdout), for this invocation only:
    a command run after it in the same process (the test runner, a library caller) prints none."""
    logger = logging.getLogger("aicr_catalog")
    handler = _Stderr(logging.INFO)
    saved = (logger.level, logger.propagate)
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(saved[0])
        logger.propagate = saved[1]


def _repository_link(catalog_path: Path, given: str) -> tuple[str, str]:
    """The repository every page links to (`--repo-url`, else the catalog's git remote) and a
    note saying where it came from ("" when given)."""
    if given:
        return given, ""
    url = remote_web_url(catalog_path)
    if url:
        return url, f"repository link: {url} (the git remote; --repo-url to choose another)"
    return "", "no repository link on the pages: no --repo-url and no git remote with a web address"


@click.command("build")
@catalog_option
@click.option(
    "--evidence",
    "evidence_path",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("evidence"),
    show_default=True,
    help="Directory of signed evidence (evidence/<recipe>/<source>/<digest>.sigstore.json).",
)
@click.option(
    "-o",
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("site"),
    show_default=True,
    help="Output directory; replaced only when the whole build succeeded.",
)
@trust_root_option(
    use=RootUse.EVIDENCE,
    help="Sigstore trust root evidence must chain to. Sample evidence counts only under demo.",
)
@click.option(
    "--strict", is_flag=True, help="Treat catalog warnings (e.g. unknown criteria) as errors."
)
@click.option(
    "--no-bundles", is_flag=True, help="Skip rendering bundle downloads (a faster preview)."
)
@click.option(
    "--no-cache",
    is_flag=True,
    help="Build from scratch: reuse nothing from .cache/ (bundles, verified evidence, the last "
    "build).",
)
@click.option(
    "--site-url",
    default="",
    metavar="URL",
    help="Where the site will be served, e.g. https://owner.github.io/repo/ (default: mkdocs.yml's "
    "site_url): the sitemap lists its pages and 404.html works at any depth under that path; "
    "without a site URL no sitemap is written (the build notes it).",
)
@click.option(
    "--repo-url",
    default="",
    metavar="URL",
    help="The catalog's source repository, linked from every page with how to install the CLI "
    "(default: the web address of the catalog's git remote, origin else the first; none when it "
    "has no remote with one, which the build notes).",
)
@click.option(
    "--timeline/--no-timeline",
    "with_timeline",
    default=False,
    help="Add the qualification timeline: the state of every recipe × profile at each commit "
    "of the catalog's git history that touched the catalog or the evidence, each change dated "
    "and explained on the recipe pages, in 'What changed', the Atom feed and "
    "api/v1/timeline.json. States are cached per commit under .cache/timeline/ (the first "
    "build computes every commit: about a minute of CPU for this repository; later builds "
    "only new commits, seconds). `make site` turns it on (docs/performance.md); it needs the "
    "full history (not a shallow clone).",
)
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=None,
    help="Processes for evidence verification and bundle rendering (default: every core); "
    "given explicitly, page generation uses them too (faster, about 500 MB more memory per "
    "process at 1,000 recipes).",
)
@click.option(
    "--online",
    is_flag=True,
    help="Let pointer files under --evidence pull their artifacts from the registries they name "
    "(default: the OCI cache only; a build uses no network unless asked).",
)
@handles_errors
def command(
    catalog_path: Path,
    evidence_path: Path,
    out: Path,
    trust_root: str,
    strict: bool,
    no_bundles: bool,
    no_cache: bool,
    site_url: str,
    repo_url: str,
    with_timeline: bool,
    jobs: int | None,
    online: bool,
) -> None:
    """Build the static site into OUT (default site/): dashboard, recipe, evidence and scale pages,
    the JSON API under api/v1/, badges and bundle downloads.

    Dates come from SOURCE_DATE_EPOCH (default: the last commit's time), so two builds of one
    commit are byte-identical. Exit codes: 0 built, 1 bad data (the located problems are printed
    and the previous site is left as it was), 2 usage.
    """
    root = click.get_current_context().find_root().command
    repo_url, repo_note = _repository_link(catalog_path, repo_url)
    options = BuildOptions(
        catalog=catalog_path,
        evidence=evidence_path,
        out=out,
        trust_root=trust_root,
        strict=strict,
        deployers=DEFAULT_DEPLOYERS,
        bundles=not no_bundles,
        cache_dir=None if no_cache else safeio.absolute(out).parent / ".cache" / "bundles",
        jobs=jobs,
        # the CLI reference page: every command's help from this very CLI
        cli_reference=lazy_reference(root),
        site_url=site_url,
        repo_url=repo_url,
        online=online,
        rules=stated_rules(),
        timeline_head=_timeline_head(catalog_path) if with_timeline else "",
        evidence_head=head_commit(evidence_path),
        catalog_head=head_commit(catalog_path),
    )
    if with_timeline and not options.timeline_head:
        raise click.UsageError("--timeline needs the catalog in a git repository with a commit")
    if repo_note:
        click.echo(f"note: build: {repo_note}", err=True)
    try:
        with show_progress():
            report = build_site(options)
    except CatalogError:  # reported by handles_errors (a corrupt trust root is usage: exit 2)
        click.echo(f"build failed; {out}/ was left unchanged", err=True)
        raise
    for note in report.notes:
        click.echo(f"note: {note.stage}: {note.message}", err=True)
    click.echo(
        f"built {report.out}/: {report.recipes} recipes, {report.rows} recipe × profile rows, "
        f"{report.evidence} evidence files, {report.pages} generated pages, {report.files} files"
    )
    sys.exit(0)
