"""`aicr-catalog release verify DIR`: check downloaded release assets and the manifest's signature."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from generator.commands.common import (
    EXIT_DATA,
    EXIT_OK,
    EXIT_USAGE,
    fail,
    handles_errors,
    trust_root_option,
)
from generator.core import safeio
from generator.core.errors import UsageError
from generator.evidence.model import RootUse
from generator.publish.release_verify import (
    DEFAULT_REPOSITORY,
    GITHUB_ISSUER,
    WORKFLOW,
    report_text,
    verify_release,
)


@click.command("verify")
@click.argument("directory", type=click.Path(path_type=Path, file_okay=False))
@click.option(
    "--version",
    "version",
    default=None,
    metavar="vX.Y.Z",
    help="The release you expect (default: the version the signed manifest states).",
)
@click.option(
    "--repository",
    default=DEFAULT_REPOSITORY,
    show_default=True,
    metavar="OWNER/NAME",
    help=f"The repository whose {WORKFLOW} must have signed the manifest.",
)
@click.option(
    "--identity",
    default=None,
    metavar="URI",
    help="The exact certificate identity expected (default: "
    "https://github.com/OWNER/NAME/.github/workflows/release.yml@refs/tags/VERSION).",
)
@click.option(
    "--issuer",
    default=GITHUB_ISSUER,
    show_default=True,
    metavar="URL",
    help="The exact OIDC issuer expected.",
)
@trust_root_option(
    use=RootUse.RELEASE,
    help="Sigstore trusted_root.json to verify against, offline; the demo root is refused, "
    "however given (a path, copy or link to it is recognised by content).",
)
@click.option(
    "--allow-missing",
    is_flag=True,
    help="Skip assets listed in SHA256SUMS that were not downloaded (the manifest and its "
    "bundle are always required).",
)
@handles_errors
def verify_command(
    directory: Path,
    version: str | None,
    repository: str,
    identity: str | None,
    issuer: str,
    trust_root: str,
    allow_missing: bool,
) -> None:
    """Verify a directory of downloaded release assets, offline.

    Checks every asset against SHA256SUMS (a missing, altered or unlisted file fails), then the
    Sigstore bundle release-manifest.json.sigstore.json over release-manifest.json: it must chain
    to the trust root and name exactly the release workflow of the repository at the version's
    tag, issued by GitHub Actions. The digests the signed manifest records for the bundle and
    site archives must match the files.

    Exit codes: 0 verified, 1 refused (tampered, missing or unlisted asset, bad signature, wrong
    identity or issuer), 2 usage (DIR missing, unreadable trust root, the demo root however given).
    """
    from generator.evidence.trustroot import load_trust_root

    if not safeio.is_dir(directory):
        fail(f"'{directory}' is not a directory", EXIT_USAGE)
    try:
        root = load_trust_root(trust_root, use=RootUse.RELEASE)
        report = verify_release(
            directory,
            root,
            version=version,
            repository=repository,
            identity=identity,
            issuer=issuer,
            allow_missing=allow_missing,
        )
    except UsageError as e:
        fail(e.message, EXIT_USAGE)
    except ValueError as e:
        fail(str(e), EXIT_USAGE)
    click.echo(report_text(report), nl=False)
    sys.exit(EXIT_OK if report.ok else EXIT_DATA)
