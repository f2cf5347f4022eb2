"""`aicr-catalog synth`: write a deterministic synthetic catalog with signed evidence (benchmarks)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from generator.bench.synth import TRUST_FILE, SynthOptions, synthesize
from generator.commands.common import handles_errors


@click.command("synth")
@click.option("--recipes", type=click.IntRange(min=1), required=True, help="Leaf recipes to make.")
@click.option(
    "--evidence", type=click.IntRange(min=0), default=0, show_default=True, help="Evidence files."
)
@click.option("--seed", type=int, default=0, show_default=True, help="Same seed, same bytes.")
@click.option(
    "--jobs", type=click.IntRange(min=1), default=None, help="Signing processes (default: cores)."
)
@click.option(
    "-o",
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    required=True,
    help="Output directory: new, empty, or one synth wrote before (it is replaced).",
)
@handles_errors
def command(recipes: int, evidence: int, seed: int, jobs: int | None, out: Path) -> None:
    """Write a SYNTHETIC catalog of RECIPES leaf recipes (both scale profiles apply to each) and
    EVIDENCE scale-qualification runs signed by a generated trust root, for benchmarks.

    OUT gets catalog/, evidence/ and trust/synth-root.json. Build it with
    `aicr-catalog build --catalog OUT/catalog --evidence OUT/evidence
    --trust-root OUT/trust/synth-root.json`. Exit codes: 0 written, 1 bad data, 2 usage.
    """
    report = synthesize(SynthOptions(recipes, evidence, seed, jobs), out)
    kinds = ", ".join(f"{n} {k}" for k, n in report.kinds.items()) or "none"
    click.echo(
        f"synthesized {report.out}/: {report.leaves} leaf recipes, {report.overlays} overlays, "
        f"{report.components} values files, {report.evidence} evidence files ({kinds})"
    )
    click.echo(
        f"build it: aicr-catalog build --catalog {out}/catalog --evidence {out}/evidence "
        f"--trust-root {out}/{TRUST_FILE}"
    )
    sys.exit(0)
