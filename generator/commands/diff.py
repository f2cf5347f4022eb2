"""`aicr-catalog diff BASE [HEAD]`: the impact of a change on recipes, bundles, pins and evidence."""

from __future__ import annotations

import click

from generator.commands.common import handles_errors
from generator.core import safeio
from generator.publish.diff import FORMATTERS, WORKTREE, compare, repo_root, snapshot


@click.command("diff")
@click.argument("base")
@click.argument("head", required=False, default=WORKTREE)
@click.option(
    "--catalog",
    "catalog_rel",
    default="catalog",
    show_default=True,
    help="Catalog directory, relative to the repository root.",
)
@click.option(
    "--evidence",
    "evidence_rel",
    default="evidence",
    show_default=True,
    help="Evidence directory, relative to the repository root.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(sorted(FORMATTERS)),
    default="text",
    show_default=True,
    help="markdown is ready for a pull-request comment or job summary.",
)
@click.option("--no-bundles", is_flag=True, help="Skip re-rendering bundles of changed recipes.")
@handles_errors
def command(
    base: str, head: str, catalog_rel: str, evidence_rel: str, fmt: str, no_bundles: bool
) -> None:
    """Compare two git revisions (HEAD defaults to the working tree).

    Reports which leaf recipes' digests change and why (overlay, mixin, values file, manifest,
    registry entry, scale profile), which bundles change per deployer and profile, component pins
    added/removed/bumped, evidence added, and evidence made stale by the change, and changes to the
    signer policy (signers.yaml, the trust roots, upstream allowlists): they change which
    signatures count, so consensus can change (SINGLE to CONFIRMED) with no recipe changing.
    Revisions are read with `git archive`; your working tree is never touched.

    Exit codes: 0 compared (whether or not anything changed), 1 a revision's catalog cannot be
    read, 2 usage (not a git repository, unknown revision).
    """
    repo = repo_root(safeio.cwd())  # not a repository, an unknown revision: UsageError, exit 2
    before = snapshot(repo, base, catalog_rel, evidence_rel)
    after = snapshot(repo, head, catalog_rel, evidence_rel)
    click.echo(FORMATTERS[fmt](compare(before, after, bundles=not no_bundles)), nl=False)
