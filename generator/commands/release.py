"""`aicr-catalog release`: versioned, reproducible release assets from a clean tree."""

from __future__ import annotations

from pathlib import Path

import click

from generator.commands.common import handles_errors, trust_root_option
from generator.commands.release_verify import verify_command
from generator.core import safeio
from generator.evidence.model import RootUse
from generator.publish.diff import repo_root
from generator.publish.release import release


@click.group("release", invoke_without_command=True)
@click.option("--version", "version", metavar="vX.Y.Z", help="The version to release (required).")
@click.option(
    "--previous",
    default=None,
    metavar="vX.Y.W",
    help="The previous release for the changelog (default: the highest older v* tag).",
)
@click.option(
    "-o",
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("dist"),
    show_default=True,
    help="Output directory; replaced only when the release is complete.",
)
@trust_root_option(
    use=RootUse.RELEASE,
    help="Trust root for evidence; the demo root is refused, however given (judged by content).",
)
@click.pass_context
@handles_errors
def command(
    ctx: click.Context, version: str | None, previous: str | None, out: Path, trust_root: str
) -> None:
    """Build every bundle archive, the site archive, SHA256SUMS, the release manifest and the
    changelog against the previous release, from the committed tree at HEAD.
    `release verify DIR` checks downloaded release assets (see its --help).

    Refuses (exit 1): a dirty tree, a tag VERSION that points elsewhere, a version not greater
    than the previous one, the demo trust root, and sample or unverified evidence counted as
    qualification. The same commit and version give byte-identical outputs.

    Exit codes: 0 released, 1 refused or bad data, 2 usage.
    """
    if ctx.invoked_subcommand is not None:
        return
    if version is None:
        raise click.UsageError("Missing option '--version'.")
    report = release(
        repo_root(safeio.cwd()), version, out, previous=previous, trust_root=trust_root
    )
    click.echo(
        f"released {report.version} at {report.commit[:12]} into {out}/: {len(report.files)} files"
        + (f" (changelog against {report.previous})" if report.previous else " (first release)")
    )


command.add_command(verify_command)
