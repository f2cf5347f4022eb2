"""`aicr-catalog query` / `resolve`: criteria or a recipe name → the resolved RecipeResult."""

from __future__ import annotations

import json
from pathlib import Path

import click

from generator.catalog.aicr_format import dump_recipe_result
from generator.catalog.resolve import recipe_document, resolve
from generator.commands.common import (
    EXIT_USAGE,
    F,
    catalog_option,
    criteria_from,
    criteria_options,
    fail,
    handles_errors,
    open_catalog,
)
from generator.core.canonical import dump_yaml
from generator.core.errors import CatalogError
from generator.core.records import DEFAULT_PROFILE, Criteria, Override


def parse_overrides(sets: tuple[str, ...], set_files: tuple[str, ...]) -> tuple[Override, ...]:
    """The overrides as `bundle` reads them (one syntax, one order: --set-file, then --set)."""
    from generator.catalog.overrides import parse_overrides as parse

    try:
        return parse(sets, set_files)
    except CatalogError as e:
        if e.diagnostics:
            click.echo(e.diagnostics_text(), err=True)
        fail(e.message, EXIT_USAGE)


def config_profile_option(f: F) -> F:
    return click.option(
        "--profile",
        "choice",
        default=None,
        metavar="NAME=VALUE",
        help="Upstream AICR's configuration profile (ADR-015, trees read under 2026-08 rules): "
        "the value of the profile the recipe declares (e.g. gpuStack=operator-managed); "
        "without it the declared default applies. A user's choice, not a scale profile.",
    )(f)


def scale_options(f: F) -> F:
    f = click.option(
        "--nodes",
        type=click.IntRange(min=1),
        default=None,
        help="Advisory node count: checked against the profile's band, never selects settings.",
    )(f)
    f = click.option(
        "--scale-profile",
        "profile",
        default=DEFAULT_PROFILE,
        show_default=True,
        help="The scale profile: the only way to get scale-specific settings.",
    )(f)
    return f


def override_options(f: F) -> F:
    f = click.option(
        "--set-file",
        "set_files",
        multiple=True,
        metavar="COMPONENT:PATH=FILE",
        help="Deep-merge a YAML/JSON object file into a component's values (repeatable).",
    )(f)
    f = click.option(
        "--set",
        "sets",
        multiple=True,
        metavar="COMPONENT:PATH=VALUE",
        help="Override one value (typed: true/false, integers, floats, else string; repeatable).",
    )(f)
    return f


def _print_query(
    recipe: str | None,
    crit: Criteria,
    profile: str,
    nodes: int | None,
    sets: tuple[str, ...],
    set_files: tuple[str, ...],
    catalog_path: Path,
    fmt: str,
    choice: str | None = None,
) -> None:
    """`query`'s work: resolve `recipe` or `crit` and print the result in `fmt`."""
    if recipe and crit.specificity():
        fail("give either --recipe or criteria, not both", EXIT_USAGE)
    if not recipe and not crit.specificity():
        fail(
            "give --recipe NAME or at least one criterion (--service, --accelerator, ...)",
            EXIT_USAGE,
        )
    catalog = open_catalog(catalog_path)
    overrides = parse_overrides(sets, set_files)
    result = resolve(
        catalog, recipe or crit, profile=profile, overrides=overrides, nodes=nodes, choice=choice
    )
    for note in result.notes:
        click.echo(f"note: {note}", err=True)
    if fmt == "aicr":
        click.echo(dump_recipe_result(result, catalog), nl=False)
        return
    doc = recipe_document(result)
    if fmt == "json":
        click.echo(json.dumps(doc, indent=2, sort_keys=True, allow_nan=False))
    else:
        click.echo(dump_yaml(doc), nl=False)


def _query(name: str, help_text: str | None = None) -> click.Command:
    @click.command(name, help=help_text)
    @click.option("--recipe", default=None, help="A leaf recipe name (instead of criteria).")
    @criteria_options
    @scale_options
    @config_profile_option
    @override_options
    @catalog_option
    @click.option(
        "--format",
        "fmt",
        type=click.Choice(["yaml", "json", "aicr"]),
        default="yaml",
        show_default=True,
        help="yaml/json: this project's RecipeResult (aicr.run/v1, with digest and values); "
        "aicr: upstream AICR's RecipeResult (aicr.nvidia.com/v1alpha1), as `aicr recipe` "
        "writes it.",
    )
    @handles_errors
    def command(
        recipe: str | None,
        service: str | None,
        accelerator: str | None,
        os: str | None,
        intent: str | None,
        platform: str | None,
        profile: str,
        nodes: int | None,
        choice: str | None,
        sets: tuple[str, ...],
        set_files: tuple[str, ...],
        catalog_path: Path,
        fmt: str,
    ) -> None:
        """Resolve criteria (or --recipe NAME) into a concrete recipe and print it.

        Upstream AICR query semantics: an overlay's wildcard matches any query value; a query's
        wildcard matches only overlay wildcards. Values are case-insensitive and take upstream's
        aliases (--gpu for --accelerator, self-managed, al2023). A criterion no overlay states is
        answered as upstream answers it (from the overlays that match), with a note on stderr
        listing the complete recipes for those criteria; under upstream's 2026-08 rules it is
        refused (exit 2), as upstream refuses it.

        Exit codes: 0 resolved, 1 no recipe / bad data / rejected override, 2 usage (an invalid
        criteria value or none at all included; upstream's `aicr query` exits 2 too, its
        `aicr recipe` 8).
        """
        crit = criteria_from(
            service=service, accelerator=accelerator, os=os, intent=intent, platform=platform
        )
        _print_query(recipe, crit, profile, nodes, sets, set_files, catalog_path, fmt, choice)

    return command


command = _query("query")
resolve_command = _query("resolve", "Alias of `query`: resolve criteria or a recipe name.")
