"""`aicr-catalog samples generate`: (re)write the SAMPLE evidence in evidence/ with the demo root."""

from __future__ import annotations

import base64
import binascii
import json
import sys
from pathlib import Path

import click

from generator.catalog.resolve import resolve
from generator.commands.common import (
    EXIT_DATA,
    EXIT_OK,
    catalog_option,
    handles_errors,
    open_catalog,
)
from generator.core import safeio
from generator.core.atomic import remove, write_atomic
from generator.core.errors import CatalogError
from generator.evidence.sign import demo_authority
from generator.evidence.store import SUFFIX
from generator.scale.qualify import lanes_of
from generator.scale.samples import (
    PLAN,
    SampleEvidence,
    catalog_bundle_digest,
    catalog_preflight,
    generate,
    raw_results,
    recipe_before,
)


def is_sample_bundle(data: bytes) -> bool:
    """Whether a bundle's statement says it is sample data (only those are ever replaced)."""
    try:
        payload = json.loads(data)["dsseEnvelope"]["payload"]
        statement = json.loads(base64.b64decode(payload))
        return statement["predicate"]["sample"] is True
    except (ValueError, KeyError, TypeError, binascii.Error):
        return False


_write = write_atomic


def build(catalog_path: Path) -> tuple[SampleEvidence, ...]:
    catalog = open_catalog(catalog_path)
    try:
        lanes = lanes_of(catalog.documents)
        ladders = {name: p.ladder for name, p in catalog.profiles.items()}
        return generate(
            lanes,
            lambda name, profile: resolve(catalog, name, profile=profile),
            ladders,
            demo_authority(catalog_path),
            preflight=catalog_preflight(catalog),
            bundle_digest=catalog_bundle_digest(catalog),
        )
    except CatalogError as e:
        raise e.with_exit_code(EXIT_DATA) from e


@click.group("samples")
@handles_errors
def command() -> None:
    """SAMPLE evidence for demonstration, signed with the demo trust root (never a release)."""


@command.command("generate")
@catalog_option
@click.option(
    "--root",
    "root",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("."),
    show_default=True,
    help="Repository root: bundles are written under ROOT/evidence/<recipe>/<source>/.",
)
@click.option(
    "--raw",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Also write each run's raw results here (RAW/<recipe>/<profile>/<lane>/<signer>-<day>/), "
    "ready for `aicr-catalog qualify --results`.",
)
@click.option(
    "--check", is_flag=True, help="Write nothing; exit 1 if evidence/ differs from a regeneration."
)
@handles_errors
def generate_command(catalog_path: Path, root: Path, raw: Path | None, check: bool) -> None:
    """Regenerate the sample runs: raw results → qualify → sign with the demo root.

    Deterministic (fixed dates, deterministic ECDSA): running it twice gives the same bytes.
    Sample bundles no longer in the plan are removed; other evidence is never touched.

    Exit codes: 0 written (or, with --check, up to date); 1 drift or bad catalog data.
    """
    samples = build(catalog_path)
    wanted = {root / s.path: s.bundle for s in samples}
    existing = safeio.glob_tree(root / "evidence", f"*{SUFFIX}")
    evidence = root / "evidence"

    def read(p: Path) -> bytes:
        return safeio.read(p, root=evidence, where="the evidence directory")

    obsolete = [p for p in existing if p not in wanted and is_sample_bundle(read(p))]
    changed = [p for p, data in wanted.items() if not safeio.is_file(p) or read(p) != data]
    if check:
        for p in sorted(changed):
            click.echo(f"out of date: {p.relative_to(root).as_posix()}", err=True)
        for p in obsolete:
            click.echo(f"obsolete: {p.relative_to(root).as_posix()}", err=True)
        sys.exit(EXIT_DATA if changed or obsolete else EXIT_OK)
    for p in sorted(changed):
        _write(p, wanted[p], root=root)  # no link planted below the repository followed
    for p in obsolete:
        remove(p, missing_ok=False)
    if raw is not None:
        catalog = open_catalog(catalog_path)
        lanes = lanes_of(catalog.documents)
        for s in samples:
            lane = lanes.lane(s.run.lane)
            assert lane is not None
            recipe = resolve(catalog, s.run.recipe, profile=s.run.profile)
            if s.run.old_pins:
                recipe = recipe_before(recipe, s.run.old_pins)
            run_dir = (
                raw / s.run.recipe / s.run.profile / s.run.lane / f"{s.run.signer}-{s.run.day}"
            )
            files = raw_results(lanes, lane, recipe, s.run, catalog_preflight(catalog),
                                catalog_bundle_digest(catalog)(recipe))  # fmt: skip
            for name, data in files.items():
                _write(run_dir / name, data, root=raw)
    verdicts = sum(1 for s in samples if s.qualification.verdict == "pass")
    click.echo(
        f"{len(samples)} sample runs ({verdicts} pass, {len(samples) - verdicts} fail): "
        f"{len(changed)} written, {len(obsolete)} removed, {len(PLAN)} planned",
        err=True,
    )
    sys.exit(EXIT_OK)
