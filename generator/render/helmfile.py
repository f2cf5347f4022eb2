"""The `helmfile` deployer: one `helmfile.yaml` with `repositories` and one release per numbered
folder (see `common.folders`): upstream charts pinned to their versions with the folder's
`values.yaml`, local charts (a component's manifests, Helm templates) as `./NNN-<release>`
charts that Helm renders with the folder's own `values.yaml`. `needs` chains a component's
releases (pre, chart, post) and makes its first release wait for the last release of each
dependency. Every release waits for readiness (`helmDefaults`), but a chart the catalog's rules
install without waiting (`ResolvedComponent.async_install_timeout`): `wait: false` and that
timeout.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from generator.core.records import RecipeResult
from generator.render.common import (
    PHASE_MAIN,
    PHASE_POST,
    BundleFile,
    Folder,
    Release,
    Rendered,
    chart_leaf,
    dependency_names,
    folders,
    header_comment,
    is_oci,
    local_chart_files,
    previous_release,
    slug,
    tail_release,
    yaml_bytes,
)
from generator.render.helm import values_file

HELM_TIMEOUT_SECONDS = 600


def repository_name(url: str) -> str:
    """A stable helmfile repository name for a chart repository URL."""
    return slug(url.removeprefix("oci://").split("://", 1)[-1])


def _release_options(f: Folder) -> dict[str, Any]:
    """What a release states beyond `helmDefaults`."""
    c = f.component
    out: dict[str, Any] = {}
    if not f.local and c.async_install_timeout is not None:
        # installed without waiting for readiness (the catalog's rules, upstream's "async
        # components"): the timeout still bounds the release's hooks
        out["wait"] = False
        out["timeout"] = c.async_install_timeout
    if (f.phase == PHASE_MAIN and not f.local and c.self_ref_crds) or (
        f.phase == PHASE_POST and c.manifests_use_chart_crds
    ):
        # objects of CRDs the chart itself installs: helm-diff cannot map them on a fresh
        # cluster (the registry's hasSelfRefCRDs / manifestsUseChartCRDs, as upstream)
        out["disableValidation"] = True
    return out


def render(result: RecipeResult, manifests: Mapping[str, bytes]) -> Rendered:
    header = header_comment(result)
    files: dict[str, BundleFile] = {}
    repos: dict[str, dict[str, Any]] = {}
    releases_doc: list[dict[str, Any]] = []
    releases: list[Release] = []
    by_name = {c.name: c for c in result.components}
    plan = folders(result, manifests)

    for f in plan:
        c = f.component
        prev = previous_release(f, plan)
        if prev is not None:
            needs = [f"{c.namespace}/{prev}"]
        else:
            needs = [
                f"{by_name[n].namespace}/{tail_release(by_name[n], plan)}"
                for n in dependency_names(c, result)
            ]
        rel: dict[str, Any] = {"name": f.release, "namespace": c.namespace}
        if f.local:
            files.update(local_chart_files(f, header))
            rel["chart"] = f"./{f.dir}"
            rel["createNamespace"] = f.creates_namespace
        else:
            repo_url = str(c.repository)
            repo_name = repository_name(repo_url)
            entry: dict[str, Any] = {"name": repo_name, "url": repo_url.removeprefix("oci://")}
            if is_oci(repo_url):
                entry["oci"] = True
            repos[repo_name] = entry
            files[f"{f.dir}/values.yaml"] = BundleFile(values_file(c.values, header))
            rel["chart"] = f"{repo_name}/{chart_leaf(c)}"
            rel["version"] = c.version
            rel["createNamespace"] = True
            rel["values"] = [f"./{f.dir}/values.yaml"]
        if needs:
            rel["needs"] = needs
        rel.update(_release_options(f))
        releases_doc.append(rel)
        releases.append(Release(f.release, c.name, c.namespace, f.dir))

    doc = {
        "helmDefaults": {
            "wait": True,
            "timeout": HELM_TIMEOUT_SECONDS,
            "createNamespace": True,
        },
        "repositories": [repos[k] for k in sorted(repos)],
        "releases": releases_doc,
    }
    files["helmfile.yaml"] = BundleFile(yaml_bytes(doc, header=header))
    return Rendered(files, "helmfile.yaml", tuple(releases))
