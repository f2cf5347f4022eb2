"""`aicr-catalog pins`: check every component pin against its upstream repository, or bump one."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import NoReturn

import click

from generator.catalog.load import load_catalog
from generator.catalog.resolve import resolve
from generator.commands.common import catalog_option, handles_errors
from generator.core import safeio
from generator.core.atomic import append_text
from generator.core.errors import CatalogError, Severity
from generator.core.records import Catalog
from generator.pins.check import check_pins
from generator.pins.collect import catalog_pins, pin_key
from generator.pins.http import DEFAULT_RETRIES, DEFAULT_TIMEOUT, ETagCache, Fetcher
from generator.pins.model import ExitCode, Pin
from generator.pins.qualification import read_qualification
from generator.pins.report import FORMATTERS, format_markdown, problem_lines
from generator.pins.write import (
    PinWriteError,
    WritePlan,
    apply_write,
    parse_request,
    plan_write,
)
from generator.pins.write import format_plan as format_write_plan

HELP = """Check every component pin against its upstream repository.

\b
A pin is a chart version the catalog deploys: a registry default
(helm.defaultRepository/defaultChart/defaultVersion) or an overlay/mixin
componentRef that sets source, chart or version. For each pin it asks the
repository what it publishes -- a Helm repository's index.yaml, or an OCI
registry's tag list (GET /v2/<name>/tags/list, with the anonymous bearer-token
handshake) -- and reports: present or missing; the newest newer patch, minor
and major versions; the leaf recipes that deploy it; and whether the pinned
version is qualified at scale: with --status FILE (the JSON of `aicr-catalog
status --format json`) the largest lane qualified by current verified evidence,
"none" when no lane is, "(sample)" for demo evidence; without it "unknown".

\b
NETWORK: this command and `evidence sign` are the only parts of the project
that use the network. Requests have a timeout (--timeout), are retried with
exponential backoff on timeouts, connection errors, 429 and 5xx (--retries),
and are conditional (ETag) against a cache (--cache-dir), so a rerun is cheap.

\b
--write COMPONENT=VERSION (or FILE:COMPONENT=VERSION when the component is
pinned in several places) bumps the one pin in place, keeping comments and
layout, after checking that VERSION is published (skip with --no-check).
It prints the impact, computed as `aicr-catalog diff` computes it: the leaf
recipes (x scale profile) whose digest changes and the evidence that is current
now and becomes stale. --dry-run prints the impact and writes nothing.

\b
Exit codes:
  0  every pin exists upstream (with --write: the pin was bumped)
  1  a pin is missing upstream: chart or version not published
  2  usage error, or the catalog could not be read
  4  the check could not complete: unreachable, timeout, HTTP error, malformed
     index or tag list (a missing pin outranks this: 1)
"""


def _fail(message: str, code: ExitCode = ExitCode.USAGE) -> NoReturn:
    """Stop `pins` (printed by `handles_errors`): by default a usage error, as the catalog
    could not be read or the call was wrong."""
    raise CatalogError(message, exit_code=int(code))


def _load(root: Path) -> Catalog:
    """The catalog, or exit 2 with every load error located."""
    if not safeio.is_dir(root):
        _fail(
            f"catalog directory '{root}' not found; run from the repository root or pass --catalog"
        )
    try:
        catalog, diags = load_catalog(root)
    except CatalogError as e:  # an unreadable catalog is a usage error for pins (exit 2)
        raise e.as_usage() from e
    errors = [d for d in diags if d.severity is Severity.ERROR]
    for d in errors:
        click.echo(d.format(), err=True)
    if errors:
        _fail(
            f"the catalog at '{root}' has {len(errors)} load error(s); run `aicr-catalog validate`"
        )
    return catalog


def _progress(message: str) -> None:
    click.echo(message, err=True)


@click.command("pins", help=HELP)
@catalog_option
@click.option(
    "--format",
    "fmt",
    type=click.Choice(sorted(FORMATTERS)),
    default="text",
    show_default=True,
    help="text for people, json for tools, markdown for a job summary.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0.01),
    default=DEFAULT_TIMEOUT,
    show_default=True,
    metavar="S",
    help="Seconds to wait on each connect and read.",
)
@click.option(
    "--retries",
    type=click.IntRange(0, 10),
    default=DEFAULT_RETRIES,
    show_default=True,
    help="Retries after a timeout, connection error, 429 or 5xx (exponential backoff).",
)
@click.option(
    "--cache-dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path(".cache/pins"),
    show_default=True,
    help="ETag cache: responses kept here are revalidated, not downloaded again.",
)
@click.option("--no-cache", is_flag=True, help="Neither read nor write the ETag cache.")
@click.option(
    "--summary",
    "summary_path",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Also append the Markdown report to this file (e.g. $GITHUB_STEP_SUMMARY).",
)
@click.option(
    "--status",
    "status_path",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Status document (aicr-catalog status --format json) for the qualified-at-scale column.",
)
@click.option(
    "--write",
    "write_spec",
    default=None,
    metavar="[FILE:]COMPONENT=VERSION",
    help="Bump one pin in place and print the impact.",
)
@click.option("--dry-run", is_flag=True, help="With --write: print the impact, write nothing.")
@click.option(
    "--no-check",
    is_flag=True,
    help="With --write: do not check upstream that VERSION is published (offline).",
)
@click.option(
    "--evidence",
    "evidence_path",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("evidence"),
    show_default=True,
    help="With --write: the evidence tree checked for evidence made stale.",
)
@handles_errors
def command(
    catalog_path: Path,
    fmt: str,
    timeout: float,
    retries: int,
    cache_dir: Path,
    no_cache: bool,
    summary_path: Path | None,
    status_path: Path | None,
    write_spec: str | None,
    dry_run: bool,
    no_check: bool,
    evidence_path: Path,
) -> None:
    if write_spec is None and (dry_run or no_check):
        _fail("--dry-run and --no-check only apply with --write")
    catalog = _load(catalog_path)
    try:
        qualification = read_qualification(status_path) if status_path else None
    except CatalogError as e:
        _fail(e.message)
    cache = None if no_cache else ETagCache(cache_dir)
    with Fetcher(timeout=timeout, retries=retries, cache=cache, progress=_progress) as fetcher:
        if write_spec is not None:
            _write(
                catalog_path,
                catalog,
                write_spec,
                fetcher,
                fmt,
                dry_run=dry_run,
                check=not no_check,
                evidence_root=evidence_path,
            )
        pins, unresolved = catalog_pins(catalog, lambda leaf: resolve(catalog, leaf))
        for line in unresolved:
            click.echo(f"warning: recipe {line} (its pins are not attributed to it)", err=True)
        report = check_pins(pins, fetcher, qualification)
    click.echo(FORMATTERS[fmt](report), nl=False)
    if summary_path is not None:
        append_text(summary_path, format_markdown(report))
    sys.exit(int(report.exit_code))


def _write(
    root: Path,
    catalog: Catalog,
    spec: str,
    fetcher: Fetcher,
    fmt: str,
    *,
    dry_run: bool,
    check: bool,
    evidence_root: Path,
) -> NoReturn:
    try:
        request = parse_request(spec)
        plan = plan_write(root, catalog, request, evidence_root=evidence_root)
    except PinWriteError as e:
        _fail(f"--write {spec}: {e.message}")
    except CatalogError as e:
        raise e.as_usage() from e
    if check:
        _check_target(plan, fetcher)
    if not dry_run:
        apply_write(root, plan)
    click.echo(format_write_plan(plan, fmt, written=not dry_run), nl=False)
    sys.exit(int(ExitCode.OK))


def _check_target(plan: WritePlan, fetcher: Fetcher) -> None:
    """Refuse the bump (exit 1, or 4 when upstream cannot be asked) unless VERSION is published."""
    place = plan.place
    if not place.repository:
        _fail(f"--write: {place.component} has no repository to check; use --no-check")
    key = pin_key(place.component, plan.version, place.repository, place.chart)
    report = check_pins([Pin(key[0], key[2], key[3], key[1], (place.location,))], fetcher)
    if report.exit_code is ExitCode.OK:
        return
    for line in problem_lines(report):
        click.echo(line, err=True)
    _fail(
        f"--write: {place.component} {plan.version} is not confirmed upstream; nothing was written",
        report.exit_code,
    )
