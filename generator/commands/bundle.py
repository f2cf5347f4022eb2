"""`aicr-catalog bundle`: render a resolved recipe into a deployment bundle; `bundle verify DIR`
checks a bundle against its checksums.txt."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import click

from generator.catalog.aicr_format import load_recipe_result
from generator.catalog.overrides import NodeScheduling, parse_overrides
from generator.catalog.resolve import resolve
from generator.commands.common import (
    EXIT_DATA,
    EXIT_USAGE,
    catalog_option,
    criteria_from,
    criteria_options,
    fail,
    handles_errors,
    open_catalog,
)
from generator.core import safeio
from generator.core.atomic import write_atomic
from generator.core.errors import CatalogError, Severity
from generator.core.outputs import OutputKind, check_output_dir
from generator.core.records import DEFAULT_PROFILE, Catalog, Criteria, Override, RecipeResult
from generator.render import (
    BundleFile,
    Deployer,
    GitOpsTarget,
    archive_bytes,
    archive_name,
    write_bundle,
)
from generator.render.bundle_verify import verify_bundle
from generator.render.bundled import Build, render_bundled
from generator.render.common import DEFAULT_REPO_PATH, DEFAULT_REPO_URL, DEFAULT_REVISION

DIMENSIONS = ("service", "accelerator", "os", "intent", "platform")


RECIPE_FILE_SUFFIXES = (".yaml", ".yml", ".json")


def recipe_file(recipe: str | None) -> Path | None:
    """`--recipe` as a RecipeResult file: a value ending in .yaml/.yml/.json or naming a path
    (with a `/`). Recipe names have neither; criteria (`DIM=VALUE,…`) never end in a suffix."""
    if recipe and (recipe.endswith(RECIPE_FILE_SUFFIXES) or "/" in recipe):
        return Path(recipe)
    return None


def read_recipe_file(path: Path, catalog: Catalog, overrides: Sequence[Override]) -> RecipeResult:
    """An upstream RecipeResult file (`aicr recipe` output, or `query --format aicr`) as a
    resolved recipe, its values built from `catalog` as upstream's bundler builds them; the
    reader's warnings go to stderr."""
    if not safeio.is_file(path):
        fail(f"--recipe {path}: no such file", EXIT_USAGE)
    result, warnings = load_recipe_result(path, catalog, tuple(overrides))
    for w in warnings:
        click.echo(w.format(), err=True)
    return result


def _query(recipe: str | None, crit: Criteria) -> str | Criteria:
    if recipe and crit.specificity():
        fail("give either --recipe or criteria options, not both", EXIT_USAGE)
    if recipe and "=" in recipe:
        pairs: dict[str, str] = {}
        for item in recipe.split(","):
            key, _, value = item.partition("=")
            if key.strip() not in DIMENSIONS or not value.strip():
                fail(
                    f"--recipe {recipe!r}: criteria are DIM=VALUE[,DIM=VALUE…] with DIM one of "
                    f"{', '.join(DIMENSIONS)}",
                    EXIT_USAGE,
                )
            pairs[key.strip()] = value.strip()
        return criteria_from(**pairs)
    if recipe:
        return recipe
    if crit.specificity():
        return crit
    fail(
        "give --recipe NAME (or --recipe service=eks,accelerator=… / criteria options)", EXIT_USAGE
    )


def _write_archive(data: bytes, out_dir: Path, name: str) -> Path:
    write_atomic(out_dir / name, data, mode=0o644, root=out_dir)
    return out_dir / name


@click.group(name="bundle", invoke_without_command=True)
@click.option(
    "--recipe",
    default=None,
    metavar="NAME|DIM=VALUE,…|FILE",
    help="A leaf recipe name, criteria such as service=eks,accelerator=gb300, or a RecipeResult "
    "file (*.yaml, *.yml, *.json, or a path with /) such as upstream AICR's recipe.yaml, whose "
    "valuesFiles and manifests are read from --catalog.",
)
@criteria_options
@click.option(
    "--deployer",
    "-d",
    type=click.Choice([d.value for d in Deployer]),
    default="helm",
    show_default=True,
    help="Bundle layout.",
)
@click.option(
    "--scale-profile",
    "profile",
    default=DEFAULT_PROFILE,
    show_default=True,
    help="The scale profile: the only way to get scale-specific settings.",
)
@click.option(
    "--nodes",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Estimated number of GPU nodes, 0 = unset (upstream AICR's default): when > 0, "
    "written at the registry's nodeScheduling.nodeCountPaths and, when the recipe is resolved, "
    "checked against the scale profile's band. Never selects settings.",
)
@click.option(
    "--profile",
    "choice",
    default=None,
    metavar="NAME=VALUE",
    help="Upstream AICR's configuration profile (ADR-015; trees read under 2026-08 rules): the "
    "value of the profile the recipe declares; default: the declared default. Not with a "
    "RecipeResult file, which records the value it was generated with.",
)
@click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="COMPONENT:PATH=VALUE",
    help="Override one value (typed: true/false, integers, floats, else string; repeatable).",
)
@click.option(
    "--set-file",
    "set_files",
    multiple=True,
    metavar="COMPONENT:PATH=FILE",
    help="Deep-merge a YAML/JSON object into a component's values (repeatable; "
    "COMPONENT=FILE merges at the root).",
)
@click.option(
    "--output",
    "-o",
    "out",
    type=click.Path(path_type=Path),
    default=None,
    help="Output directory (replaced atomically).",
)
@click.option(
    "--archive",
    is_flag=True,
    help="Write only DIR/<recipe>-<profile>-<deployer>.tar.gz (reproducible) instead of the tree.",
)
@click.option(
    "--repo",
    "repo_url",
    default=DEFAULT_REPO_URL,
    show_default=True,
    help="argocd/flux: Git repository the bundle will be pushed to.",
)
@click.option(
    "--revision",
    default=DEFAULT_REVISION,
    show_default=True,
    help="argocd/flux: Git revision (branch, tag or commit).",
)
@click.option(
    "--repo-path",
    default=DEFAULT_REPO_PATH,
    show_default=True,
    help="argocd/flux: directory of the bundle inside the repository.",
)
@click.option(
    "--system-node-selector",
    "system_selectors",
    multiple=True,
    metavar="KEY=VALUE",
    help="Node selector for system components, written at the registry's "
    "nodeScheduling.system.nodeSelectorPaths (repeatable). Default: none.",
)
@click.option(
    "--system-node-toleration",
    "system_tolerations",
    multiple=True,
    metavar="KEY=VALUE:EFFECT",
    help="Toleration for system components (KEY:EFFECT tolerates any value), written at the "
    "registry's nodeScheduling.system.tolerationPaths (repeatable). Default: "
    "[{operator: Exists}], as upstream AICR.",
)
@click.option(
    "--accelerated-node-selector",
    "accelerated_selectors",
    multiple=True,
    metavar="KEY=VALUE",
    help="Node selector for accelerated (GPU) nodes, written at the registry's "
    "nodeScheduling.accelerated.nodeSelectorPaths (repeatable). Default: none.",
)
@click.option(
    "--accelerated-node-toleration",
    "accelerated_tolerations",
    multiple=True,
    metavar="KEY=VALUE:EFFECT",
    help="Toleration for accelerated (GPU) nodes, written at the registry's "
    "nodeScheduling.accelerated.tolerationPaths (repeatable). Default: "
    "[{operator: Exists}], as upstream AICR.",
)
@click.option(
    "--workload-gate",
    "workload_gate",
    default=None,
    metavar="KEY=VALUE:EFFECT",
    help="Taint the skyhook operator's runtime requires (KEY:EFFECT without a value), written "
    "as that string at the registry's nodeScheduling.accelerated.taintStrPaths. A day-2 option "
    "for cluster scaling. Default: none.",
)
@click.option(
    "--workload-selector",
    "workload_selectors",
    multiple=True,
    metavar="KEY=VALUE",
    help="Label selector of the workloads skyhook-customizations must not evict (repeatable), "
    "written at the registry's podScheduling.workload.workloadSelectorPaths. Default: none; "
    "without it a training recipe with skyhook-customizations gets upstream's warning.",
)
@catalog_option
@click.pass_context
@handles_errors
def command(
    ctx: click.Context,
    /,
    recipe: str | None,
    service: str | None,
    accelerator: str | None,
    os: str | None,
    intent: str | None,
    platform: str | None,
    deployer: str,
    profile: str,
    nodes: int,
    choice: str | None,
    sets: tuple[str, ...],
    set_files: tuple[str, ...],
    out: Path | None,
    archive: bool,
    repo_url: str,
    revision: str,
    repo_path: str,
    catalog_path: Path,
    workload_gate: str | None,
    **scheduling: tuple[str, ...],  # the five repeatable node-scheduling options
) -> None:
    """Render a recipe into a deployment bundle (helm, helmfile, argocd, argocd-helm or flux).

    The bundle holds the deployer's files, README.md, recipe.yaml, bundle-info.yaml and
    checksums.txt; the same recipe, profile and overrides always give the same bytes.
    Overrides naming an unknown or disabled component, or contradicting a value owned by the
    scale profile, are rejected (exit 1).

    Node scheduling as upstream AICR's bundler: tolerations (default [{operator: Exists}]),
    node selectors, workload gate and selector, node count at the registry's paths (overrides).

    Exit codes: 0 written, 1 the recipe does not resolve or render / rejected override, 2 usage.
    """
    if ctx.invoked_subcommand is not None:
        return
    crit = criteria_from(
        service=service, accelerator=accelerator, os=os, intent=intent, platform=platform
    )
    from_file = recipe_file(recipe)
    query = _bundle_query(recipe, crit, from_file, profile, choice)
    if out is None:
        fail("give the output directory with -o DIR", EXIT_USAGE)
    overrides = _user_overrides(sets, set_files)
    inputs = (catalog_path,) if from_file is None else (catalog_path, from_file)
    if not archive:  # before any work: a refused output directory is a usage error
        check_output_dir(out, OutputKind.BUNDLE, inputs)
    catalog = open_catalog(catalog_path)
    flags = NodeScheduling(**scheduling, workload_gate=workload_gate, nodes=nodes)
    build = _build(catalog, from_file, query, profile, overrides, flags, choice)
    target = GitOpsTarget(repo_url, revision, repo_path)
    result, tree = _rendered(catalog, build, deployer, flags, target, from_file)
    _write_bundle(tree, result, deployer, out, inputs, archive=archive)


def _rendered(
    catalog: Catalog,
    build: Build,
    deployer: str,
    scheduling: NodeScheduling,
    target: GitOpsTarget,
    from_file: Path | None,
) -> tuple[RecipeResult, Mapping[str, BundleFile]]:
    """The bundled recipe and its bundle (generator/render/bundled.py: usage errors and
    refusals, exit 2, before anything is rendered); the registry's selector warnings on stderr."""
    bundled, tree = render_bundled(
        catalog,
        build,
        deployer,
        scheduling=scheduling,
        target=target,
        recipe_file=None if from_file is None else str(from_file),
    )
    for warning in bundled.warnings:
        click.echo(f"warning: {warning}", err=True)
    return bundled.result, tree


def _user_overrides(sets: tuple[str, ...], set_files: tuple[str, ...]) -> tuple[Override, ...]:
    try:
        return parse_overrides(sets, set_files)
    except CatalogError as e:
        click.echo(e.diagnostics_text(), err=True)
        fail(e.message, EXIT_USAGE)


def _build(
    catalog: Catalog,
    from_file: Path | None,
    query: str | Criteria | None,
    profile: str,
    overrides: tuple[Override, ...],
    scheduling: NodeScheduling,
    choice: str | None = None,
) -> Build:
    """The recipe to bundle, with the overrides `generator.render.bundled` adds (node
    scheduling, the bundler's own) before the user's: resolved, or read from a RecipeResult
    file."""

    def build(extra: tuple[Override, ...]) -> RecipeResult:
        if from_file is not None:
            return read_recipe_file(from_file, catalog, (*extra, *overrides))
        assert query is not None
        return resolve(
            catalog,
            query,
            profile=profile,
            overrides=(*extra, *overrides),
            nodes=scheduling.nodes or None,
            choice=choice,
        )

    return build


def _bundle_query(
    recipe: str | None, crit: Criteria, from_file: Path | None, profile: str, choice: str | None
) -> str | Criteria | None:
    """What to resolve: a name or criteria; None for a RecipeResult file (whose values are
    final, so a scale profile given with it is a usage error; `--nodes` only writes the
    registry's node-count paths, as upstream's)."""
    if from_file is None:
        return _query(recipe, crit)
    if crit.specificity():
        fail("give either --recipe or criteria options, not both", EXIT_USAGE)
    if choice is not None:
        fail(
            "--profile applies when a recipe is resolved; a RecipeResult file records the value "
            "it was generated with",
            EXIT_USAGE,
        )
    if profile != DEFAULT_PROFILE:
        fail(
            "--scale-profile does not apply to a RecipeResult file: its values "
            "are final (change them with --set)",
            EXIT_USAGE,
        )
    return None


def _write_bundle(
    tree: Mapping[str, BundleFile],
    result: RecipeResult,
    deployer: str,
    out: Path,
    inputs: tuple[Path, ...],
    *,
    archive: bool,
) -> None:
    """Write the bundle (a directory, or a reproducible archive in `out`) and say so."""
    what = (
        f"{deployer}, {result.name}, {result.scale_profile} {result.scale_profile_version}, "
        f"{result.digest}"
    )
    if archive:
        name = archive_name(result, deployer)
        path = _write_archive(archive_bytes(tree, name.removesuffix(".tar.gz")), out, name)
        click.echo(f"wrote {path} ({len(tree)} files, {what})")
    else:
        write_bundle(tree, out, inputs)
        click.echo(f"wrote {out}/ ({len(tree)} files, {what})")


@command.command(name="verify")
@click.argument("directory", type=click.Path(path_type=Path))
@handles_errors
def verify_command(directory: Path) -> None:
    """Check a bundle directory against its checksums.txt: every changed, missing or unlisted
    file is named.

    This project's bundles (with bundle-info.yaml) are closed-world: a file not listed is an
    error. Upstream AICR bundles list only what was written before checksums.txt (recipe.yaml
    and attestation/ come after): each file not listed is a warning, not covered and not
    verified, and everything listed must match.

    Exit codes: 0 intact (warnings allowed), 1 mismatches, 2 not a directory."""
    if not safeio.is_dir(directory):
        fail(f"'{directory}' is not a directory", EXIT_USAGE)
    diags = verify_bundle(directory)
    for d in diags:
        click.echo(d.format(), err=True)
    errors = [d for d in diags if d.severity is Severity.ERROR]
    if errors:
        fail(f"{directory}: {len(errors)} problem(s) against checksums.txt", EXIT_DATA)
    count = sum(
        1
        for line in safeio.read_text(
            directory / "checksums.txt", root=directory, limit=safeio.CHECKSUMS_BYTES
        ).splitlines()
        if line.strip()
    )
    uncovered = len(diags) - len(errors)
    tail = f"; {uncovered} file(s) not covered (named above)" if uncovered else ""
    click.echo(f"{directory}: {count} files match checksums.txt{tail}")
