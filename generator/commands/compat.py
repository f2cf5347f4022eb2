"""`aicr-catalog compat`: fail on a breaking change to published schemas, bundle layouts or CLI."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from generator import __version__
from generator.catalog.schemas import SCHEMA_DIR
from generator.commands.common import EXIT_DATA, EXIT_OK, catalog_option, handles_errors
from generator.core.errors import UsageError
from generator.publish import compat


@click.command("compat")
@catalog_option
@click.option(
    "--update-baselines",
    is_flag=True,
    help="Rewrite catalog/schemas/baselines/ from the current schemas, layouts and CLI "
    "(when a major version is cut; see docs/compatibility.md).",
)
@click.option(
    "--baseline-new",
    is_flag=True,
    help="Add baselines for the published schemas and JSON API files that have none (a new "
    "schema or file is additive), leaving every other baseline as it is.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "github"]),
    default="text",
    show_default=True,
    help="text for people, json for tools, github for workflow annotations on the files.",
)
@handles_errors
def command(catalog_path: Path, update_baselines: bool, baseline_new: bool, fmt: str) -> None:
    """Check every published JSON Schema against its metaschema, and the schemas, the JSON API's
    files, bundle layouts and command line against their committed baselines.

    Breaking (docs/compatibility.md): a removed or renamed field, schema, API file (one under
    api/v1/ no longer published, or holding another kind), bundle path, command, option or
    argument; for schemas the tool reads, a tightened type, a new required field, a
    removed enum value; for schemas of what it writes, a loosening (a field dropped from
    required, a widened type, an added enum value); for the CLI, a changed default or type, a
    removed choice, a new required option, a changed set of exit codes. A published schema
    or API file without a baseline fails too (nothing about it would be checked;
    --baseline-new adds it).
    They fail unless the
    major version changed or the break is listed in catalog/schemas/compat-exceptions.yaml
    (acknowledged: [{subject, path, kind, reason}]); an acknowledgement that matches no break
    fails as stale. An invalid schema always fails. Additive changes pass.

    Exit codes: 0 compatible, 1 breaking change, invalid schema or stale acknowledgement,
    2 usage.
    """
    from generator.cli import main

    surface = compat.cli_surface(main)
    if update_baselines:
        try:
            written = compat.update_baselines(SCHEMA_DIR, catalog_path, __version__, cli=surface)
        except ValueError as e:
            raise UsageError(str(e)) from e
        click.echo(
            f"compat: wrote {len(written)} schema baseline(s), the bundle layouts and the CLI",
            err=True,
        )
        return
    if baseline_new:
        try:
            added = compat.add_baselines(SCHEMA_DIR)
        except ValueError as e:
            raise UsageError(str(e)) from e
        files = compat.add_api_file_baselines(SCHEMA_DIR)
        click.echo(
            f"compat: added {len(added)} schema baseline(s): {', '.join(added) or 'none'}", err=True
        )
        if files:
            click.echo(
                f"compat: added {len(files)} API file baseline(s): {', '.join(files)}", err=True
            )
        return
    report = compat.check(SCHEMA_DIR, catalog_path, __version__, cli=surface)
    if fmt == "json":
        out = compat.report_json(report)
    elif fmt == "github":
        out = compat.report_github(report, SCHEMA_DIR, main)
    else:
        out = compat.report_text(report)
    click.echo(out, nl=False)
    sys.exit(EXIT_OK if report.ok else EXIT_DATA)
