"""`aicr-catalog qualify`: a run's raw results, judged against one lane → the unsigned statement."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from generator.catalog.lanes import Verdict
from generator.catalog.resolve import resolve
from generator.commands.common import (
    EXIT_DATA,
    EXIT_OK,
    catalog_option,
    handles_errors,
    open_catalog,
)
from generator.core import safeio
from generator.core.atomic import write_atomic
from generator.core.errors import CatalogError, UsageError
from generator.core.records import DEFAULT_PROFILE
from generator.core.timeutil import source_date_epoch
from generator.scale.qualify import (
    CTRF_SUFFIX,
    KPI_FILE,
    PREFLIGHT_FILE,
    RUN_FILE,
    SNAPSHOT_FILE,
    attested_at_from,
    bundle_binding,
    lanes_of,
    parse_run,
    qualify,
)


def _read_results(directory: Path, phases: tuple[str, ...]) -> dict[str, bytes]:
    names = (RUN_FILE, KPI_FILE, SNAPSHOT_FILE, PREFLIGHT_FILE, *(p + CTRF_SUFFIX for p in phases))
    files: dict[str, bytes] = {}
    for name in names:
        path = directory / name
        if safeio.is_file(path):  # a link out of the results directory or a FIFO is refused
            files[name] = safeio.read(
                path, root=directory, where="the results directory", limit=safeio.OTHER_BYTES
            )
    return files


@click.command("qualify")
@click.option("--lane", required=True, help="Lane of catalog/scale/lanes.yaml, e.g. lane-2304.")
@click.option("--recipe", required=True, help="The leaf recipe that was deployed.")
@click.option(
    "--scale-profile",
    "profile",
    default=DEFAULT_PROFILE,
    show_default=True,
    help="Scale profile the recipe was resolved with; the lane must be on its ladder.",
)
@click.option(
    "--results",
    required=True,
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    help="The run's raw results: run.yaml, <phase>.ctrf.json, kpis.json, snapshot.yaml, "
    "preflight.json (docs/running-a-lane.md).",
)
@click.option(
    "--bundle",
    required=True,
    metavar="ARCHIVE|sha256:DIGEST",
    help="The bundle that was deployed: its archive (`aicr-catalog bundle`), whose digest and "
    "recipe are checked, or its sha256 digest.",
)
@click.option(
    "--preflight",
    "preflight_path",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    default=None,
    help="The preflight report (`preflight --format json` on the run's snapshot.yaml); "
    "default: preflight.json in --results.",
)
@click.option(
    "--output",
    "-o",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Write the statement here (default: stdout).",
)
@click.option(
    "--attested-at",
    default=None,
    metavar="RFC3339",
    help="Attestation date (default: finishedAt in run.yaml, else SOURCE_DATE_EPOCH).",
)
@click.option("--sample", is_flag=True, help="Mark the statement as sample data.")
@catalog_option
@handles_errors
def command(
    lane: str,
    recipe: str,
    profile: str,
    results: Path,
    bundle: str,
    preflight_path: Path | None,
    output: Path | None,
    attested_at: str | None,
    sample: bool,
    catalog_path: Path,
) -> None:
    """Evaluate a scale run's raw results against a lane and write the unsigned statement.

    The statement (in-toto Statement v1, predicate https://aicr.run/scale-qualification/v1)
    carries every check, every KPI with its threshold, value and pass/fail, and the verdict
    with its reasons. A run on fewer nodes than the lane, or with a check that ran on zero
    targets or was not executed, cannot pass. Neither can a run without a passing preflight
    report (exit 0) of the same recipe digest and profile version on the run's own snapshot,
    nor one whose bundle was rendered from another recipe: the statement records the digests
    of the preflight report and of the bundle. Sign it with `aicr-catalog evidence sign`.

    Exit codes: 0 verdict pass; 1 verdict fail (the statement is written either way) or bad
    data; 2 usage (unknown lane, lane not on the profile's ladder, unreadable results).
    """
    catalog = open_catalog(catalog_path)
    try:
        lanes = lanes_of(catalog.documents)
        result = resolve(catalog, recipe, profile=profile)
    except CatalogError as e:
        raise e.with_exit_code(EXIT_DATA) from e
    known = lanes.lane(lane)
    phases = known.phases if known is not None else lanes.phases
    ladder = catalog.profiles[profile].ladder if profile in catalog.profiles else ()
    try:
        files = _read_results(results, phases)
        if preflight_path is not None:
            files[PREFLIGHT_FILE] = safeio.read(preflight_path, limit=safeio.YAML_BYTES)
        run = parse_run(files, phases)
        binding = bundle_binding(bundle, lambda p: safeio.read(p, limit=safeio.ARCHIVE_BYTES))
        epoch = source_date_epoch()
        when = attested_at_from(None if epoch is None else str(epoch), run, attested_at)
        outcome = qualify(
            lanes, lane, result, ladder, run, bundle=binding, attested_at=when, sample=sample
        )
    except OSError as e:
        raise UsageError(f"--bundle {bundle}: {e.strerror}") from e
    except CatalogError as e:  # unreadable results, unknown lane, lane off the ladder, bad date
        raise e.as_usage() from e
    if output is None:
        click.echo(outcome.statement.decode())
    else:
        write_atomic(output, outcome.statement)
    click.echo(f"verdict: {outcome.verdict} ({recipe} × {profile} on {lane})", err=True)
    for reason in outcome.reasons:
        click.echo(f"  - {reason}", err=True)
    sys.exit(EXIT_OK if outcome.verdict is Verdict.PASS else EXIT_DATA)
