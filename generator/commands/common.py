"""Options and helpers every command shares: the catalog path, loading, error reporting, exit codes."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click

from generator.errors import CatalogError, Severity
from generator.load import load_catalog
from generator.records import Catalog, Criteria

EXIT_OK, EXIT_DATA, EXIT_USAGE = 0, 1, 2
F = TypeVar("F", bound=Callable[..., Any])


def catalog_option(f: F) -> F:
    return click.option(
        "--catalog",
        "catalog_path",
        type=click.Path(path_type=Path, file_okay=False),
        default=Path("catalog"),
        show_default=True,
        help="Recipe tree to read (this repository's catalog/, or any AICR recipes directory).",
    )(f)


def criteria_options(f: F) -> F:
    for dim in reversed(("service", "accelerator", "os", "intent", "platform")):
        f = click.option(
            f"--{dim}",
            default=None,
            metavar="VALUE",
            help=f"Criteria: {dim} ('any' or omitted = wildcard).",
        )(f)
    return f


def criteria_from(**kw: str | None) -> Criteria:
    return Criteria(**{k: (None if v in (None, "", "any") else v) for k, v in kw.items()})


def fail(message: str, code: int = EXIT_DATA) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def report_error(e: CatalogError) -> NoReturn:
    click.echo(e.diagnostics_text() if e.diagnostics else f"error: {e.message}", err=True)
    if e.diagnostics:
        click.echo(f"error: {e.message}", err=True)
    sys.exit(e.exit_code)


def open_catalog(path: Path) -> Catalog:
    """Load a catalog for a command that needs a usable one: any load error stops with exit 1."""
    if not path.is_dir():
        fail(
            f"catalog directory '{path}' not found; run from the repository root or pass --catalog PATH",
            EXIT_USAGE,
        )
    try:
        catalog, diags = load_catalog(path)
    except CatalogError as e:
        report_error(e)
    errors = [d for d in diags if d.severity is Severity.ERROR]
    if errors:
        for d in errors:
            click.echo(d.format(), err=True)
        fail(
            f"the catalog at '{path}' has {len(errors)} load error(s); run `aicr-catalog validate` for all"
        )
    return catalog
