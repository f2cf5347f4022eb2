"""Render a resolved recipe into a deployment bundle (stage `render`).

`render_bundle` is pure: it turns a `RecipeResult` (plus the raw bytes of the catalog manifests it
names) into a `BundleTree`, a mapping of relative path -> bytes and mode, including `README.md`,
`recipe.yaml`, `bundle-info.yaml` and `checksums.txt`. `write_bundle` and `archive_bytes` are the
only writers.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, assert_never

from generator import __version__
from generator.catalog.overrides import BUNDLER_ORIGIN, SCHEDULING_ORIGIN
from generator.core import safeio
from generator.core.atomic import TreeWriter, make_dirs
from generator.core.errors import RenderError
from generator.core.outputs import OutputKind, check_output_dir, discard, make_temp_dir, swap_in
from generator.core.records import RecipeResult
from generator.fast.yamlwrite import block, emitted_block
from generator.render import argocd, argocd_helm, flux, helm, helmfile
from generator.render.archive import archive_bytes, archive_name
from generator.render.argocd import SYNC_MARKER
from generator.render.common import (
    BUNDLE_INFO,
    CHECKSUMS,
    GENERATOR_NAME,
    RECIPE_FILE,
    BundleFile,
    BundleTree,
    Deployer,
    GitOpsTarget,
    Release,
    Rendered,
    Row,
    bundle_info,
    chart_reference,
    check_paths,
    check_renderable,
    checksums_text,
    deployer_of,
    has_chart,
    header_comment,
    recipe_parts,
    render_template,
    shared_part,
    yaml_bytes,
)

__all__ = [
    "BundleFile",
    "BundleTree",
    "Deployer",
    "GitOpsTarget",
    "archive_bytes",
    "archive_name",
    "render_bundle",
    "write_bundle",
]


def _deployer_files(
    result: RecipeResult, deployer: Deployer, manifests: Mapping[str, bytes], target: GitOpsTarget
) -> Rendered:
    if deployer is Deployer.HELM:
        return helm.render(result, manifests)
    if deployer is Deployer.HELMFILE:
        return helmfile.render(result, manifests)
    if deployer is Deployer.ARGOCD:
        return argocd.render(result, manifests, target)
    if deployer is Deployer.FLUX:
        return flux.render(result, manifests, target)
    if deployer is Deployer.ARGOCD_HELM:
        return argocd_helm.render(result, manifests)
    assert_never(deployer)


def _settings(deployer: Deployer, target: GitOpsTarget) -> dict[str, Any]:
    if deployer in (Deployer.ARGOCD, Deployer.FLUX):
        return {"repoURL": target.repo_url, "targetRevision": target.revision, "path": target.path}
    return {}


def _command(
    result: RecipeResult, deployer: Deployer, target: GitOpsTarget, recipe_file: str | None
) -> str:
    recipe = recipe_file if recipe_file is not None else result.name
    parts = [GENERATOR_NAME, "bundle", "--recipe", recipe, "--deployer", str(deployer)]
    if recipe_file is None:  # a RecipeResult file's values are final: no scale profile
        parts += ["--scale-profile", result.scale_profile]
    scheduling: list[str] = []
    for o in result.overrides:
        if o.origin.startswith(BUNDLER_ORIGIN):  # the bundler's own: no flag gives it
            continue
        if o.origin.startswith(SCHEDULING_ORIGIN):
            # node-scheduling overrides (one per registry path) come from the flags they name;
            # the default tolerations need none
            rest = o.origin.removeprefix(SCHEDULING_ORIGIN).strip()
            if rest.startswith("--") and rest not in scheduling:
                scheduling.append(rest)
            continue
        parts += o.origin.split(" ", 1) if o.origin.startswith("--") else ["--set", o.origin]
    parts += [p for rest in scheduling for p in rest.split()]
    if deployer in (Deployer.ARGOCD, Deployer.FLUX) and target != GitOpsTarget():
        parts += ["--repo", target.repo_url, "--revision", target.revision]
        parts += ["--repo-path", target.path]
    parts += ["-o", "DIR"]
    return " ".join(shlex.quote(p) for p in parts)


def _readme(
    result: RecipeResult,
    deployer: Deployer,
    rendered: Rendered,
    target: GitOpsTarget,
    recipe_file: str | None,
) -> bytes:
    by_name = {c.name: c for c in result.components}
    comps = []
    no_wait = []
    for r in rendered.releases:
        c = by_name[r.component]
        local = r.name != c.name or not has_chart(c)
        if not local and c.async_install_timeout is not None:
            no_wait.append(Row(release=r.name, minutes=c.async_install_timeout // 60))
        comps.append(
            Row(
                release=r.name,
                component=c.name,
                chart="local chart (manifests)" if local else chart_reference(c),
                version="" if local else c.version,
                namespace=c.namespace,
                dir=r.path,
            )
        )
    return render_template(
        "README.md.j2",
        recipe=result.name,
        deployer=str(deployer),
        generator=GENERATOR_NAME,
        generator_version=__version__,
        command=_command(result, deployer, target, recipe_file),
        digest=result.digest,
        profile=result.scale_profile,
        profile_version=result.scale_profile_version,
        entrypoint=rendered.entrypoint,
        overrides=[o.origin for o in result.overrides],
        components=comps,
        no_wait=no_wait,
        gitops=Row(repo_url=target.repo_url, revision=target.revision, path=target.path),
        sync_markers=sorted(
            p.split("/", 1)[0] for p in rendered.files if p.endswith(f"/templates/{SYNC_MARKER}")
        ),
        oci_registries=sorted(
            {
                str(c.repository).removeprefix("oci://")
                for c in result.components
                if has_chart(c) and str(c.repository or "").startswith("oci://")
            }
        ),
    )


def _recipe_file(result: RecipeResult, header: str) -> bytes:
    """recipe.yaml: each recipe's own (it names the digest), so dumped without a memo key, its
    components' values indented from the texts their values.yaml dumped (`yamlwrite.block`,
    from the memo across recipes) instead of written again. Reference:
    `_recipe_file_reference`. Measured: render_bundle of the 1,600 bundles of 200 x 4,000,
    one process (process_time, memos emptied between passes, median of five), three runs
    interleaved with the code before: 1.120/1.136/1.155 -> 1.097/1.093/1.046 CPU-s."""
    from generator.catalog.resolve import recipe_document

    blocks: dict[int, tuple[Any, str]] = {}
    for c in result.components:
        text = block(c.values, sort_keys=True)
        if text is not None:
            blocks[id(c.values)] = (c.values, text)
    doc = recipe_document(result)
    return yaml_bytes(doc, sort_keys=True, header=header, memo=False, blocks=blocks)


def _recipe_file_reference(result: RecipeResult, header: str) -> bytes:
    """`_recipe_file`, every line written."""
    from generator.catalog.resolve import recipe_document

    return yaml_bytes(recipe_document(result), sort_keys=True, header=header)


def _bundle_info_file(
    result: RecipeResult, info: dict[str, Any], releases: tuple[Release, ...], header: str
) -> bytes:
    """bundle-info.yaml: each archive's own (it names the deployer), so dumped without a memo
    key; its `releases`, the same for the recipe's deployers (the folders are the recipe's),
    written once for them (`shared_part`, found again only for equal releases) and indented
    into each (`dump_yaml(blocks=)`). Reference: `_bundle_info_file_reference`. Measured:
    render_bundle of the 1,600 bundles of 200 x 4,000, one process (process_time, memos
    emptied between passes, median of five), three runs interleaved with the code before:
    1.104/1.108/1.069 -> 1.056/1.072/1.035 CPU-s."""
    seen: dict[tuple[Release, ...], str | None] = shared_part("releases", result, header, dict)
    listed = info["releases"]
    text = seen.get(releases, "")
    if text == "":
        text = seen[releases] = emitted_block(listed, sort_keys=False)
    blocks = {id(listed): (listed, text)} if text is not None else None
    return yaml_bytes(info, header=header, memo=False, blocks=blocks)


def _bundle_info_file_reference(
    result: RecipeResult, info: dict[str, Any], releases: tuple[Release, ...], header: str
) -> bytes:
    """`_bundle_info_file`, every line written."""
    return yaml_bytes(info, header=header)


def render_bundle(
    result: RecipeResult,
    deployer: Deployer | str,
    manifests: Mapping[str, bytes] | None = None,
    *,
    target: GitOpsTarget | None = None,
    recipe_file: str | None = None,
) -> BundleTree:
    """The complete bundle of `result` for `deployer` as path -> file. Pure and deterministic.

    `manifests` maps each catalog-relative manifest path the recipe names to its raw bytes.
    `recipe_file` is the RecipeResult file `result` was read from, if any (for the README's
    regenerate command).
    Raises RenderError (with every problem found) when the recipe cannot be expressed.
    """
    dep = deployer_of(deployer)
    tgt = target or GitOpsTarget()
    given = manifests or {}
    parts = recipe_parts(result, given)  # this recipe's parts, shared by its deployers' bundles
    if not parts.renderable:  # what it checks is the recipe's alone: once for its deployers
        check_renderable(result, dep)
        parts.renderable = True
    rendered = _deployer_files(result, dep, given, tgt)
    files: dict[str, BundleFile] = dict(rendered.files)
    for fixed in (RECIPE_FILE, BUNDLE_INFO, CHECKSUMS, "README.md"):
        if fixed in files:
            raise RenderError(f"deployer {dep} wrote the reserved file {fixed}")
    header = header_comment(result)
    files["README.md"] = BundleFile(_readme(result, dep, rendered, tgt, recipe_file))
    files[RECIPE_FILE] = BundleFile(
        shared_part(
            RECIPE_FILE,
            result,
            header,
            lambda: _recipe_file(result, header),
        )
    )
    info = bundle_info(result, dep, rendered, _settings(dep, tgt))
    files[BUNDLE_INFO] = BundleFile(_bundle_info_file(result, info, rendered.releases, header))
    files[CHECKSUMS] = BundleFile(checksums_text(files))
    check_paths(tuple(files))
    return {p: files[p] for p in sorted(files)}


def write_bundle(tree: BundleTree, out_dir: Path, inputs: Iterable[Path] = ()) -> None:
    """Write `tree` to `out_dir`, replacing it atomically: build in a sibling temporary directory,
    then swap it in, so a failure leaves the previous bundle intact. `out_dir` must be missing,
    empty or a previous bundle, and outside `inputs` (generator/core/outputs.py)."""
    check_paths(tuple(tree))
    out_dir = Path(out_dir)
    check_output_dir(out_dir, OutputKind.BUNDLE, inputs)
    parent = safeio.absolute(out_dir).parent
    make_dirs(parent)
    tmp = make_temp_dir(f".{out_dir.name}.", parent)
    try:
        with TreeWriter(tmp) as writer:
            for rel in sorted(tree):
                writer.put(rel, tree[rel].data, tree[rel].mode)
            writer.chmod_dirs(0o755)  # the new tree's root (mkdtemp's 0700) and each below it
        swap_in(tmp, out_dir)
    except BaseException:
        discard(tmp, ignore_errors=True)
        raise
