"""The `helm` deployer: one numbered folder per release (see `common.folders`), each with its
`install.sh`, plus `deploy.sh` (serial, in deployment order) and `undeploy.sh` (reverse order).

An upstream chart's folder holds `values.yaml` and installs the pinned chart; a local chart's
folder is the chart itself (Chart.yaml, values.yaml, templates/) and installs `./`, so Helm
renders the component's manifest templates with its values. Each release waits for readiness
(`--wait`), but a chart the catalog's rules install without waiting
(`ResolvedComponent.async_install_timeout`): no `--wait`, and that timeout by default.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from generator.core.records import RecipeResult
from generator.render.common import (
    MODE_EXEC,
    BundleFile,
    Release,
    Rendered,
    Row,
    chart_reference,
    folders,
    header_comment,
    is_oci,
    local_chart_files,
    render_template,
    shared_part,
    yaml_bytes,
)


def values_file(values: Mapping[str, Any], header: str) -> bytes:
    """The merged Helm values, keys sorted (Helm reads a mapping; order carries no meaning),
    made once for all the deployers of one recipe (`common.shared_part`)."""
    return shared_part("values", values, header, lambda: values_file_reference(values, header))


def values_file_reference(values: Mapping[str, Any], header: str) -> bytes:
    """`values_file`, made every time."""
    return (
        yaml_bytes(dict(values), sort_keys=True, header=header)
        if values
        else (header + "{}\n").encode("utf-8")
    )


DEFAULT_TIMEOUT = "10m"  # install.sh's `helm --timeout` unless AICR_TIMEOUT says otherwise


def _helm_duration(seconds: int | None) -> str:
    """A `helm --timeout` duration: whole minutes as `20m`, else seconds; the default without."""
    if seconds is None:
        return DEFAULT_TIMEOUT
    return f"{seconds // 60}m" if seconds % 60 == 0 else f"{seconds}s"


def render(result: RecipeResult, manifests: Mapping[str, bytes]) -> Rendered:
    header = header_comment(result)
    short = header.removeprefix("# ").rstrip("\n")
    files: dict[str, BundleFile] = {}
    releases: list[Release] = []
    summary: list[Row] = []
    plan = folders(result, manifests)
    for step, f in enumerate(plan, start=1):
        c = f.component
        if f.local:
            files.update(local_chart_files(f, header))
            chart = None
        else:
            files[f"{f.dir}/values.yaml"] = BundleFile(values_file(c.values, header))
            chart = chart_reference(c)
        files[f"{f.dir}/install.sh"] = BundleFile(
            render_template(
                "install.sh.j2",
                header=short,
                component=c.name,
                phase=f.phase,
                step=step,
                total=len(plan),
                recipe=result.name,
                namespace=c.namespace,
                release=f.release,
                chart=chart,
                repo=None if (chart is None or is_oci(c.repository)) else c.repository,
                version=c.version,
                create_namespace=f.creates_namespace,
                wait=f.local or c.async_install_timeout is None,
                timeout=_helm_duration(None if f.local else c.async_install_timeout),
            ),
            MODE_EXEC,
        )
        releases.append(Release(f.release, c.name, c.namespace, f.dir))
        summary.append(Row(release=f.release, dir=f.dir, namespace=c.namespace))
    tools = ["helm", "sha256sum"]
    common = {
        "header": short,
        "recipe": result.name,
        "profile": result.scale_profile,
        "profile_version": result.scale_profile_version,
    }
    files["deploy.sh"] = BundleFile(
        render_template("deploy.sh.j2", folders=summary, tools=tools, **common), MODE_EXEC
    )
    files["undeploy.sh"] = BundleFile(
        render_template("undeploy.sh.j2", folders=list(reversed(summary)), **common), MODE_EXEC
    )
    return Rendered(files, "deploy.sh", tuple(releases))
