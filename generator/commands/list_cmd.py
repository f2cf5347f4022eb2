"""`aicr-catalog list`: the leaf recipes with criteria, structural health and check coverage."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from generator.commands.common import catalog_option, handles_errors, open_catalog
from generator.core.records import DIMENSIONS, WILDCARD
from generator.validate import leaf_health


@click.command("list")
@catalog_option
@click.option(
    "--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True
)
@handles_errors
def command(catalog_path: Path, fmt: str) -> None:
    """List leaf recipes: criteria, structural health (pass|warn|fail) and coverage R:n D:n P:n C:n.

    Coverage counts the declared checks per validation phase: Readiness, Deployment,
    Performance, Conformance. Exit codes: 0 listed, 1 the catalog does not load, 2 usage.
    """
    catalog = open_catalog(catalog_path)
    rows: list[dict[str, Any]] = []
    for leaf in catalog.leaves():
        h = leaf_health(catalog, leaf)
        crit = catalog.overlays[leaf].criteria
        rows.append(
            {
                "name": leaf,
                "criteria": crit.to_json(),
                "health": h.health,
                "coverage": h.coverage,
                "coverageText": h.coverage_text(),
                "reasons": list(h.reasons),
            }
        )
    if fmt == "json":
        click.echo(json.dumps({"recipes": rows}, indent=2, sort_keys=True, allow_nan=False))
        return
    header = ["RECIPE", *(d.upper() for d in DIMENSIONS), "HEALTH", "COVERAGE"]
    table = [header] + [
        [
            r["name"],
            *(r["criteria"].get(d, WILDCARD) for d in DIMENSIONS),
            r["health"],
            r["coverageText"],
        ]
        for r in rows
    ]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        click.echo("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    click.echo(f"{len(rows)} leaf recipe(s)")
