"""The `helmfile` deployer: one `helmfile.yaml` with `repositories`, `releases` pinned to chart
versions, values files per component and `needs` from the dependency graph.

A component's plain manifests become releases of their own (`<name>-pre-manifests` before the
chart, `<name>-manifests` after it): helmfile turns a directory of manifests into a chart.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from generator.records import RecipeResult, ResolvedComponent
from generator.render.common import (
    BundleFile,
    Release,
    Rendered,
    component_dir,
    dependency_names,
    has_chart,
    header_comment,
    is_oci,
    manifest_files,
    slug,
    yaml_bytes,
)
from generator.render.helm import values_file

HELM_TIMEOUT_SECONDS = 600


def repository_name(url: str) -> str:
    """A stable helmfile repository name for a chart repository URL."""
    return slug(url.removeprefix("oci://").split("://", 1)[-1])


def _last_release(c: ResolvedComponent) -> str:
    """The release that finishes component `c` (what dependants wait for)."""
    if c.manifest_files:
        return f"{c.name}-manifests"
    if has_chart(c):
        return c.name
    return f"{c.name}-pre-manifests"


def render(result: RecipeResult, manifests: Mapping[str, bytes]) -> Rendered:
    header = header_comment(result)
    files: dict[str, BundleFile] = {}
    repos: dict[str, dict[str, Any]] = {}
    releases_doc: list[dict[str, Any]] = []
    releases: list[Release] = []
    by_name = {c.name: c for c in result.components}

    for c in result.components:
        d = component_dir(c)
        pre = manifest_files(c, manifests, pre=True)
        post = manifest_files(c, manifests, pre=False)
        dep_needs = [
            f"{by_name[n].namespace}/{_last_release(by_name[n])}"
            for n in dependency_names(c, result)
        ]
        if pre:
            for name, data in pre:
                files[f"{d}/pre-manifests/{name}"] = BundleFile(data)
            rel = {
                "name": f"{c.name}-pre-manifests",
                "namespace": c.namespace,
                "chart": f"./{d}/pre-manifests",
                "createNamespace": True,
            }
            if dep_needs:
                rel["needs"] = list(dep_needs)
            releases_doc.append(rel)
            releases.append(Release(str(rel["name"]), c.name, c.namespace, f"{d}/pre-manifests"))
        if has_chart(c):
            repo_url = str(c.repository)
            repo_name = repository_name(repo_url)
            entry: dict[str, Any] = {"name": repo_name, "url": repo_url.removeprefix("oci://")}
            if is_oci(repo_url):
                entry["oci"] = True
            repos[repo_name] = entry
            files[f"{d}/values.yaml"] = BundleFile(values_file(c.values, header))
            needs = list(dep_needs)
            if pre:
                needs.append(f"{c.namespace}/{c.name}-pre-manifests")
            rel = {
                "name": c.name,
                "namespace": c.namespace,
                "chart": f"{repo_name}/{c.chart}",
                "version": c.version,
                "createNamespace": True,
                "values": [f"./{d}/values.yaml"],
            }
            if needs:
                rel["needs"] = needs
            releases_doc.append(rel)
            releases.append(Release(c.name, c.name, c.namespace, d))
        if post:
            for name, data in post:
                files[f"{d}/manifests/{name}"] = BundleFile(data)
            needs = list(dep_needs)
            if has_chart(c):
                needs = [f"{c.namespace}/{c.name}"]
            elif pre:
                needs = [f"{c.namespace}/{c.name}-pre-manifests"]
            rel = {
                "name": f"{c.name}-manifests",
                "namespace": c.namespace,
                "chart": f"./{d}/manifests",
                "createNamespace": True,
            }
            if needs:
                rel["needs"] = needs
            releases_doc.append(rel)
            releases.append(Release(str(rel["name"]), c.name, c.namespace, f"{d}/manifests"))

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
