"""`aicr-catalog validate`: every problem in a recipe tree, located, in one run."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from generator.catalog.load import load_catalog
from generator.commands.common import (
    EXIT_DATA,
    EXIT_OK,
    announce_defaults,
    catalog_option,
    handles_errors,
    stated_rules,
    trust_root_option,
)
from generator.core import envvars, safeio
from generator.core.atomic import append_text
from generator.core.errors import CatalogError, Severity, UsageError
from generator.core.report import REPORTERS, markdown_summary
from generator.evidence.model import RootUse
from generator.evidence.trustroot import PUBLIC_GOOD
from generator.validate import validate_catalog


@click.command("validate")
@click.argument("path", required=False, type=click.Path(path_type=Path, file_okay=False))
@catalog_option
@click.option(
    "--strict", is_flag=True, help="Treat warnings (e.g. unknown criteria values) as errors."
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(sorted(REPORTERS)),
    default="text",
    show_default=True,
    help="text for people, json for tools, github for workflow annotations.",
)
@click.option(
    "--summary",
    "summary_path",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="Also write a Markdown summary here (defaults to $GITHUB_STEP_SUMMARY with --format github).",
)
@click.option(
    "--evidence",
    "evidence_dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Evidence directory that `status: qualified` owned values must name counted evidence "
    "in (default: evidence/ beside the catalog, when it exists).",
)
@trust_root_option(
    use=RootUse.EVIDENCE,
    name="trust_roots",
    multiple=True,
    help="Trust root(s) that evidence is verified with (default: public-good).",
)
@handles_errors
def command(
    path: Path | None,
    catalog_path: Path,
    strict: bool,
    fmt: str,
    summary_path: Path | None,
    evidence_dir: Path | None,
    trust_roots: tuple[str, ...],
) -> None:
    """Validate every file of a recipe tree: YAML, headers, schemas, references and semantics.

    PATH (or --catalog) is the catalog directory. Diagnostics are printed as
    `path:line:col: $.json.path: message [rule]`, sorted by file and line.

    Exit codes: 0 no errors, 1 errors found, 2 usage (e.g. PATH does not exist).
    """
    root = path or catalog_path
    if not safeio.is_dir(root):
        raise UsageError(f"catalog directory '{root}' not found")
    try:
        catalog, load_diags = load_catalog(root, stated_rules())
    except CatalogError as e:  # an unreadable tree is bad data, whatever the cause
        raise e.with_exit_code(EXIT_DATA) from e
    announce_defaults(catalog)
    templates = [rel for rel, m in catalog.manifests.items() if m.kind == "template"]
    if templates:
        plain = len(catalog.manifests) - len(templates)
        click.echo(
            f"note: {len(templates)} manifest(s) are Helm templates, rendered by Helm with the "
            f"component's values at deploy time and checked here without Helm (actions closed, "
            f"blocks balanced, YAML once masked): {', '.join(templates)}; {plain} plain YAML",
            err=True,
        )
    if evidence_dir is None and safeio.is_dir(safeio.absolute(root).parent / "evidence"):
        evidence_dir = safeio.absolute(root).parent / "evidence"
    diags = validate_catalog(  # an unreadable trust root or signer policy raises
        catalog,
        strict=strict,
        load_diagnostics=load_diags,
        evidence_dir=evidence_dir,
        trust_roots=trust_roots or (PUBLIC_GOOD,),
    )
    subject = f"validate {root}"
    click.echo(REPORTERS[fmt](diags, subject, root), nl=False)
    github_summary = envvars.get("GITHUB_STEP_SUMMARY")
    if summary_path is None and fmt == "github" and github_summary:
        summary_path = Path(github_summary)
    if summary_path is not None:
        append_text(summary_path, markdown_summary(diags, subject))
    sys.exit(EXIT_DATA if any(d.severity is Severity.ERROR for d in diags) else EXIT_OK)
