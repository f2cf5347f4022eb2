"""The `helm` deployer: one folder per component with `values.yaml` and `install.sh`, plus
`deploy.sh` (serial, in deployment order) and `undeploy.sh` (reverse order)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from generator.records import RecipeResult
from generator.render.common import (
    MODE_EXEC,
    BundleFile,
    Release,
    Rendered,
    chart_reference,
    component_dir,
    has_chart,
    header_comment,
    is_oci,
    manifest_files,
    render_template,
    yaml_bytes,
)


def values_file(values: Mapping[str, Any], header: str) -> bytes:
    """The merged Helm values, keys sorted (Helm reads a mapping; order carries no meaning)."""
    return (
        yaml_bytes(dict(values), sort_keys=True, header=header)
        if values
        else (header + "{}\n").encode("utf-8")
    )


def render(result: RecipeResult, manifests: Mapping[str, bytes]) -> Rendered:
    header = header_comment(result)
    short = header.removeprefix("# ").rstrip("\n")
    files: dict[str, BundleFile] = {}
    releases: list[Release] = []
    summary: list[dict[str, Any]] = []
    total = len(result.components)
    for c in result.components:
        d = component_dir(c)
        pre = manifest_files(c, manifests, pre=True)
        post = manifest_files(c, manifests, pre=False)
        for name, data in pre:
            files[f"{d}/pre-manifests/{name}"] = BundleFile(data)
        for name, data in post:
            files[f"{d}/manifests/{name}"] = BundleFile(data)
        chart = has_chart(c)
        if chart:
            files[f"{d}/values.yaml"] = BundleFile(values_file(c.values, header))
        files[f"{d}/install.sh"] = BundleFile(
            render_template(
                "install.sh.j2",
                header=short,
                name=c.name,
                step=c.order + 1,
                total=total,
                recipe=result.name,
                namespace=c.namespace,
                release=c.name,
                chart=chart_reference(c) if chart else None,
                repo=None if (not chart or is_oci(c.repository)) else c.repository,
                version=c.version,
                pre_manifests=[n for n, _ in pre],
                manifests=[n for n, _ in post],
            ),
            MODE_EXEC,
        )
        releases.append(Release(c.name, c.name, c.namespace, d))
        summary.append(
            {
                "name": c.name,
                "dir": d,
                "namespace": c.namespace,
                "release": c.name,
                "chart": chart,
                "manifests": [n for n, _ in post],
                "pre_manifests": [n for n, _ in pre],
            }
        )
    # kubectl is always needed: namespaces are ensured with it before each component
    tools = ["helm", "kubectl", "sha256sum"]
    common = {
        "header": short,
        "recipe": result.name,
        "profile": result.scale_profile,
        "profile_version": result.scale_profile_version,
    }
    files["deploy.sh"] = BundleFile(
        render_template("deploy.sh.j2", components=summary, tools=tools, **common), MODE_EXEC
    )
    files["undeploy.sh"] = BundleFile(
        render_template("undeploy.sh.j2", components=list(reversed(summary)), **common), MODE_EXEC
    )
    return Rendered(files, "deploy.sh", tuple(releases))
