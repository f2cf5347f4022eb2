"""The `flux` deployer: `sources/` (a `HelmRepository` per chart repository, an `OCIRepository`
per `oci://` chart), one `HelmRelease` per numbered folder (see `common.folders`) and a root
`kustomization.yaml` listing them.

An upstream chart's HelmRelease carries the merged values inline. A local chart's HelmRelease
(a component's manifests, Helm templates) takes its chart from its folder in the `GitRepository`
that Flux already reconciles the bundle from (`flux-system`), so the charts come from the same
commit as the HelmReleases; helm-controller renders the templates with the folder's
`values.yaml`, and `reconcileStrategy: Revision` makes every new commit a new chart version.
`dependsOn` chains a component's releases (pre, chart, post) and makes its first release wait
for the last release of each dependency.

References followed (see also catalog/schemas/deployers/):
- HelmRelease helm.toolkit.fluxcd.io/v2: https://fluxcd.io/flux/components/helm/helmreleases/
- HelmRepository, OCIRepository source.toolkit.fluxcd.io/v1:
  https://fluxcd.io/flux/components/source/helmrepositories/ and .../ocirepositories/
- HelmChart from a GitRepository: https://fluxcd.io/flux/components/source/helmcharts/
- Kustomization kustomize.toolkit.fluxcd.io/v1: https://fluxcd.io/flux/components/kustomize/kustomizations/
- the root kustomization.yaml is a plain Kustomize file (kustomize.config.k8s.io/v1beta1).

`flux-kustomization.yaml` is an optional Flux `Kustomization` that points Flux at the bundle
inside the repository of the `flux-system` GitRepository; it is not part of `kustomization.yaml`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from generator.core.records import RecipeResult, ResolvedComponent
from generator.render.common import (
    BundleFile,
    Folder,
    GitOpsTarget,
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

FLUX_NAMESPACE = "flux-system"
HELM_RELEASE = "helm.toolkit.fluxcd.io/v2"
SOURCE = "source.toolkit.fluxcd.io/v1"
KUSTOMIZE = "kustomize.toolkit.fluxcd.io/v1"
HELM_CHART_LAYER = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"


def helm_repository_name(url: str) -> str:
    return slug(url.split("://", 1)[-1], 63)


def oci_repository_name(c: ResolvedComponent) -> str:
    return slug(f"{c.name}-chart", 63)


def _helm_repository(url: str) -> dict[str, Any]:
    return {
        "apiVersion": SOURCE,
        "kind": "HelmRepository",
        "metadata": {"name": helm_repository_name(url), "namespace": FLUX_NAMESPACE},
        "spec": {"url": url, "interval": "1h"},
    }


def _oci_repository(c: ResolvedComponent) -> dict[str, Any]:
    return {
        "apiVersion": SOURCE,
        "kind": "OCIRepository",
        "metadata": {"name": oci_repository_name(c), "namespace": FLUX_NAMESPACE},
        "spec": {
            "url": f"{str(c.repository).rstrip('/')}/{chart_leaf(c)}",
            "ref": {"tag": c.version},
            "interval": "1h",
            "layerSelector": {"mediaType": HELM_CHART_LAYER, "operation": "copy"},
        },
    }


def _helm_release(f: Folder, deps: tuple[str, ...], target: GitOpsTarget) -> dict[str, Any]:
    c = f.component
    spec: dict[str, Any] = {
        "interval": "10m",
        "releaseName": f.release,
        "targetNamespace": c.namespace,
        "storageNamespace": c.namespace,
        "install": {
            "createNamespace": f.creates_namespace,
            "remediation": {"retries": 3},
        },
        "upgrade": {"remediation": {"retries": 3}},
    }
    if c.owns_crds and not f.local:
        # the registry's ownsCRDs: the sole owner of its chart's CRDs, so an upgrade replaces
        # them (helm-controller's default, Skip, keeps day one's schema under a new controller)
        spec["upgrade"]["crds"] = "CreateReplace"
    if f.local:
        spec["chart"] = {
            "spec": {
                "chart": _flux_path(target, f.dir),
                "sourceRef": {"kind": "GitRepository", "name": FLUX_NAMESPACE},
                "reconcileStrategy": "Revision",
                "interval": "1h",
            }
        }
    elif is_oci(c.repository):
        spec["chartRef"] = {
            "kind": "OCIRepository",
            "name": oci_repository_name(c),
            "namespace": FLUX_NAMESPACE,
        }
    else:
        spec["chart"] = {
            "spec": {
                "chart": chart_leaf(c),
                "version": c.version,
                "sourceRef": {
                    "kind": "HelmRepository",
                    "name": helm_repository_name(str(c.repository)),
                    "namespace": FLUX_NAMESPACE,
                },
                "interval": "1h",
            }
        }
    if deps:
        spec["dependsOn"] = [{"name": d} for d in deps]
    if not f.local and c.values:
        spec["values"] = _sorted(c.values)
    return {
        "apiVersion": HELM_RELEASE,
        "kind": "HelmRelease",
        "metadata": {"name": f.release, "namespace": FLUX_NAMESPACE},
        "spec": spec,
    }


def _sorted(obj: Any) -> Any:
    t = type(obj)
    if t is str or t is int or t is bool or obj is None:  # the leaves, without the ABC checks
        return obj
    if isinstance(obj, Mapping):
        return {k: _sorted(obj[k]) for k in sorted(obj)}
    if isinstance(obj, list | tuple):
        return [_sorted(v) for v in obj]
    return obj


def _kustomization(name: str, path: str, namespace: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "interval": "10m",
        "retryInterval": "1m",
        "path": path,
        "prune": True,
        "wait": True,
        "sourceRef": {"kind": "GitRepository", "name": FLUX_NAMESPACE},
    }
    if namespace:
        spec["targetNamespace"] = namespace
    return {
        "apiVersion": KUSTOMIZE,
        "kind": "Kustomization",
        "metadata": {"name": name, "namespace": FLUX_NAMESPACE},
        "spec": spec,
    }


def _flux_path(target: GitOpsTarget, rel: str) -> str:
    """A Flux `spec.path`: relative to the GitRepository root, starting with `./`."""
    base = target.path.strip("/").removeprefix("./").strip("/")
    parts = [p for p in (base, rel) if p and p != "."]
    return "./" + "/".join(parts)


def render(result: RecipeResult, manifests: Mapping[str, bytes], target: GitOpsTarget) -> Rendered:
    header = header_comment(result)
    files: dict[str, BundleFile] = {}
    releases: list[Release] = []
    helm_repos: set[str] = set()
    by_name = {c.name: c for c in result.components}
    plan = folders(result, manifests)
    for f in plan:
        c = f.component
        prev = previous_release(f, plan)
        deps = (
            (prev,)
            if prev is not None
            else tuple(tail_release(by_name[n], plan) for n in dependency_names(c, result))
        )
        if f.local:
            files.update(local_chart_files(f, header))
        elif is_oci(c.repository):
            files[f"sources/ocirepository-{oci_repository_name(c)}.yaml"] = BundleFile(
                yaml_bytes(_oci_repository(c), header=header)
            )
        else:
            helm_repos.add(str(c.repository))
        doc = _helm_release(f, deps, target)
        files[f"{f.dir}/helmrelease.yaml"] = BundleFile(yaml_bytes(doc, header=header))
        releases.append(Release(f.release, c.name, c.namespace, f.dir))
    for url in sorted(helm_repos):
        files[f"sources/helmrepository-{helm_repository_name(url)}.yaml"] = BundleFile(
            yaml_bytes(_helm_repository(url), header=header)
        )
    resources = sorted(
        p for p in files if p.startswith("sources/") or p.endswith("/helmrelease.yaml")
    )
    root = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": resources,
    }
    files["kustomization.yaml"] = BundleFile(yaml_bytes(root, header=header))
    entry = _kustomization(slug(f"aicr-{result.name}", 63), _flux_path(target, ""), None)
    files["flux-kustomization.yaml"] = BundleFile(yaml_bytes(entry, header=header))
    return Rendered(files, "kustomization.yaml", tuple(releases))
