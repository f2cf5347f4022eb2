"""`aicr-catalog preflight`: check an observed cluster (an AICR Snapshot) against a resolved recipe."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import NoReturn

import click

from generator.catalog.load import load_catalog
from generator.catalog.resolve import resolve, select_profile
from generator.commands.common import handles_errors
from generator.commands.query import parse_overrides
from generator.core import safeio
from generator.core.errors import CatalogError, Severity, UsageError
from generator.core.records import DEFAULT_PROFILE, DIMENSIONS, WILDCARD, Catalog, Criteria
from generator.render.bundled import rebuild, render_bundled
from generator.scale.preflight import (
    CHECKS_FILE,
    Format,
    checkset_from,
    preflight,
    render,
    rendered_values,
)
from generator.scale.snapshot import parse_snapshot

EXIT_USAGE = 2


def _usage(message: str, e: CatalogError | None = None) -> NoReturn:
    """Every refusal of preflight's inputs is a usage error (exit 2), its diagnostics kept."""
    raise UsageError(message, e.diagnostics if e is not None else ()) from e


def parse_recipe(text: str) -> Criteria | str:
    """`NAME` (a leaf recipe) or criteria `service=eks,accelerator=gb300,...`."""
    if "=" not in text:
        return text.strip()
    values: dict[str, str | None] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or key not in DIMENSIONS or not value:
            raise click.BadParameter(
                f"{part!r} is not DIMENSION=VALUE with DIMENSION one of {', '.join(DIMENSIONS)}",
                param_hint="--recipe",
            )
        if key in values:
            raise click.BadParameter(f"{key} is given twice", param_hint="--recipe")
        values[key] = None if value == WILDCARD else value
    return Criteria(**values)


def _catalog(catalog_path: Path) -> Catalog:
    """The catalog preflight checks against; any load problem is a usage error (exit 2)."""
    if not safeio.is_dir(catalog_path):
        _usage(f"catalog directory '{catalog_path}' not found; pass --catalog PATH")
    try:
        catalog, load_diags = load_catalog(catalog_path)
    except CatalogError as e:
        _usage(f"the catalog at '{catalog_path}' cannot be read", e)
    errors = [d for d in load_diags if d.severity is Severity.ERROR]
    if errors:
        for d in errors:
            click.echo(d.format(), err=True)
        _usage(f"the catalog at '{catalog_path}' has {len(errors)} load error(s)")
    return catalog


@click.command("preflight")
@click.option(
    "--recipe",
    required=True,
    metavar="NAME|CRITERIA",
    help="A leaf recipe name, or criteria such as service=eks,accelerator=gb300,intent=training.",
)
@click.option(
    "--scale-profile",
    "profile",
    default=DEFAULT_PROFILE,
    show_default=True,
    help="The scale profile the recipe is resolved with.",
)
@click.option(
    "--nodes",
    type=click.IntRange(min=1),
    default=None,
    help="Declared GPU nodes: checked against the profile's band; defaults to the snapshot's count.",
)
@click.option(
    "--snapshot",
    "snapshot_path",
    required=True,
    type=click.Path(path_type=Path, dir_okay=False),
    help="An AICR Snapshot (YAML or JSON) of the cluster.",
)
@click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="COMPONENT:PATH=VALUE",
    help="Override one value, as for `query` (repeatable).",
)
@click.option(
    "--set-file",
    "set_files",
    multiple=True,
    metavar="COMPONENT:PATH=FILE",
    help="Deep-merge a YAML/JSON file into a component's values, as for `query` (repeatable).",
)
@click.option(
    "--catalog",
    "catalog_path",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("catalog"),
    show_default=True,
    help="Recipe tree to read.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice([f.value for f in Format]),
    default="text",
    show_default=True,
    help="text for people, json (catalog/schemas/preflight-report.schema.json) for tools, "
    "github for workflow annotations.",
)
@handles_errors
def command(
    recipe: str,
    profile: str,
    nodes: int | None,
    snapshot_path: Path,
    sets: tuple[str, ...],
    set_files: tuple[str, ...],
    catalog_path: Path,
    fmt: str,
) -> None:
    """Check a cluster snapshot against a recipe resolved with a scale profile.

    Evaluates the recipe's constraints, the profile's prerequisites and the shared checks of
    catalog/scale/checks.yaml. Each finding is owned by the catalog (a defect in the resolved
    configuration) or by the infrastructure (a prerequisite the catalog never changes); a reading
    the snapshot lacks is `unavailable`, never `pass`.

    \b
    Exit codes:
      0  no failed or unverified error-severity check
      1  a catalog-owned check failed (the resolved configuration is wrong)
      3  infrastructure checks failed (and no catalog-owned one)
      4  insufficient data: nothing failed, but error-severity checks lack readings
         (listed, each with how to collect it: `aicr-catalog snapshot`)
      2  usage, or unreadable input (catalog, snapshot, unknown recipe or profile,
         --nodes outside the profile's band)
    """
    query = parse_recipe(recipe)
    catalog = _catalog(catalog_path)
    checks_doc = catalog.documents.get(CHECKS_FILE)
    if checks_doc is None:
        _usage(f"the catalog has no {CHECKS_FILE}: preflight has nothing to check")
    overrides = parse_overrides(sets, set_files)
    try:
        checks = checkset_from(checks_doc)
        result = resolve(catalog, query, profile=profile, overrides=overrides, nodes=nodes)
    except CatalogError as e:
        _usage(e.message, e)
    try:
        raw = safeio.read(snapshot_path, limit=safeio.OTHER_BYTES)  # a FIFO cannot block
    except safeio.Refusal as e:
        _usage(f"cannot read snapshot '{snapshot_path}': {e.message}")
    try:
        snapshot = parse_snapshot(raw, snapshot_path.name)
        scale = select_profile(catalog, result.scale_profile, result.criteria, nodes)
        # one source: the configuration checks read the values the recipe's bundle ships, as
        # `bundle` renders it with default flags (generator/render/bundled.py)
        _, bundle = render_bundled(catalog, rebuild(catalog, result), "helm")
        values = {comp: vals[0] for comp, vals in rendered_values(bundle).items()}
        report = preflight(result, scale, checks, snapshot, nodes, values)
    except CatalogError as e:
        _usage(e.message, e)
    click.echo(render(report, Format(fmt), str(snapshot_path)), nl=False)
    sys.exit(report.exit_code)
