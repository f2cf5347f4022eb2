"""`aicr-catalog compat`: fail on a breaking change to published schemas or bundle layouts."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from generator import __version__, compat
from generator.commands.common import EXIT_DATA, EXIT_OK, catalog_option
from generator.schemas import SCHEMA_DIR


@click.command("compat")
@catalog_option
@click.option(
    "--update-baselines",
    is_flag=True,
    help="Rewrite catalog/schemas/baselines/ from the current schemas and layouts (at a release).",
)
def command(catalog_path: Path, update_baselines: bool) -> None:
    """Compare the published JSON Schemas and bundle layouts with their committed baselines.

    Breaking: a removed or renamed field or bundle path, a tightened type, a new required field,
    a removed enum value. They fail unless the major version changed or the break is listed in
    catalog/schemas/compat-exceptions.yaml (acknowledged: [{subject, path, kind, reason}]); an
    acknowledgement that matches no break fails as stale. Additive optional fields pass.

    Exit codes: 0 compatible, 1 breaking change or stale acknowledgement, 2 usage.
    """
    if update_baselines:
        written = compat.update_baselines(SCHEMA_DIR, catalog_path, __version__)
        click.echo(
            f"compat: wrote {len(written)} schema baseline(s) and the bundle layouts", err=True
        )
        return
    report = compat.check(SCHEMA_DIR, catalog_path, __version__)
    click.echo(compat.report_text(report), nl=False)
    sys.exit(EXIT_OK if report.ok else EXIT_DATA)
