"""Options and helpers every command shares: the catalog path, loading, error reporting, exit codes."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click

from generator.catalog.criteria import normalise_criteria
from generator.catalog.load import load_catalog
from generator.core.errors import CatalogError, Severity
from generator.core.records import Catalog, Criteria

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
    """--service, --accelerator (alias --gpu, as upstream), --os, --intent, --platform."""
    for dim in reversed(("service", "accelerator", "os", "intent", "platform")):
        names = (f"--{dim}", "--gpu") if dim == "accelerator" else (f"--{dim}",)
        extra = " --gpu is an alias, as upstream." if dim == "accelerator" else ""
        f = click.option(
            *names,
            dim,
            default=None,
            metavar="VALUE",
            help=(
                f"Criteria: {dim} ('any' or omitted = wildcard; case-insensitive, upstream's "
                f"aliases accepted).{extra}"
            ),
        )(f)
    return f


def criteria_from(**kw: str | None) -> Criteria:
    """Query criteria normalised as upstream parses them (trim, case folding, aliases such as
    `self-managed` = any service and `al2023` = amazonlinux). Whether each value is known is
    checked by `resolve`, against the catalog's sets (invalid -> exit 2)."""
    return normalise_criteria(kw)


def fail(message: str, code: int = EXIT_DATA) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def report_error(e: CatalogError) -> NoReturn:
    """Print a pipeline error; exit 2 for invalid input (UsageError), else 1."""
    click.echo(e.diagnostics_text() if e.diagnostics else f"error: {e.message}", err=True)
    if e.diagnostics:
        click.echo(f"error: {e.message}", err=True)
    sys.exit(e.exit_code)


def announce_defaults(catalog: Catalog) -> None:
    """Say once, on stderr, which of the project's own files the tree lacks (an upstream tree)."""
    if catalog.defaulted:
        click.echo(
            f"note: {catalog.root} has no {', '.join(catalog.defaulted)} (this project's own "
            "files; an upstream AICR tree has none): using built-in defaults (the scale profile "
            "'standard' only, no qualification lanes)",
            err=True,
        )


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
    announce_defaults(catalog)
    return catalog
