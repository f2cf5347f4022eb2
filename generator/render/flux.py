"""The `flux` deployer: `sources/` (a `HelmRepository` per chart repository, an `OCIRepository`
per `oci://` chart), one `HelmRelease` per component with `dependsOn` mirroring the recipe's
dependencies and the merged values inline, and a root `kustomization.yaml` listing them.

References followed (see also catalog/schemas/deployers/):
- HelmRelease helm.toolkit.fluxcd.io/v2: https://fluxcd.io/flux/components/helm/helmreleases/
- HelmRepository, OCIRepository source.toolkit.fluxcd.io/v1:
  https://fluxcd.io/flux/components/source/helmrepositories/ and .../ocirepositories/
- Kustomization kustomize.toolkit.fluxcd.io/v1: https://fluxcd.io/flux/components/kustomize/kustomizations/
- the root kustomization.yaml is a plain Kustomize file (kustomize.config.k8s.io/v1beta1).

A component's plain manifests are applied by a Flux `Kustomization` of their own (HelmRelease
`dependsOn` can only name HelmReleases, so these retry until the chart's CRDs exist).
`flux-kustomization.yaml` is an optional Flux `Kustomization` that points Flux at the bundle
inside the repository of the `flux-system` GitRepository; it is not part of `kustomization.yaml`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from generator.records import RecipeResult, ResolvedComponent
from generator.render.common import (
    BundleFile,
    GitOpsTarget,
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
            "url": f"{str(c.repository).rstrip('/')}/{c.chart}",
            "ref": {"tag": c.version},
            "interval": "1h",
            "layerSelector": {"mediaType": HELM_CHART_LAYER, "operation": "copy"},
        },
    }


def _helm_release(c: ResolvedComponent, deps: tuple[str, ...]) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "interval": "10m",
        "releaseName": c.name,
        "targetNamespace": c.namespace,
        "storageNamespace": c.namespace,
        "install": {"createNamespace": True, "remediation": {"retries": 3}},
        "upgrade": {"remediation": {"retries": 3}},
    }
    if is_oci(c.repository):
        spec["chartRef"] = {
            "kind": "OCIRepository",
            "name": oci_repository_name(c),
            "namespace": FLUX_NAMESPACE,
        }
    else:
        spec["chart"] = {
            "spec": {
                "chart": c.chart,
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
    if c.values:
        spec["values"] = _sorted(c.values)
    return {
        "apiVersion": HELM_RELEASE,
        "kind": "HelmRelease",
        "metadata": {"name": c.name, "namespace": FLUX_NAMESPACE},
        "spec": spec,
    }


def _sorted(obj: Any) -> Any:
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
    for c in result.components:
        d = component_dir(c)
        for sub, pre in (("pre-manifests", True), ("chart", None), ("manifests", False)):
            if pre is None:
                if not has_chart(c):
                    continue
                if is_oci(c.repository):
                    files[f"sources/ocirepository-{oci_repository_name(c)}.yaml"] = BundleFile(
                        yaml_bytes(_oci_repository(c), header=header)
                    )
                else:
                    helm_repos.add(str(c.repository))
                doc = _helm_release(c, dependency_names(c, result))
                files[f"{d}/helmrelease.yaml"] = BundleFile(yaml_bytes(doc, header=header))
                releases.append(Release(c.name, c.name, c.namespace, d))
                continue
            items = manifest_files(c, manifests, pre=pre)
            if not items:
                continue
            for name, data in items:
                files[f"{d}/{sub}/{name}"] = BundleFile(data)
            kname = f"{c.name}-{sub}"
            # no targetNamespace: it would also stamp a namespace onto cluster-scoped custom
            # resources (kustomize cannot know their scope); namespaced manifests name theirs
            kdoc = _kustomization(kname, _flux_path(target, f"{d}/{sub}"), None)
            files[f"{d}/{sub}-kustomization.yaml"] = BundleFile(yaml_bytes(kdoc, header=header))
            releases.append(Release(kname, c.name, c.namespace, f"{d}/{sub}"))
    for url in sorted(helm_repos):
        files[f"sources/helmrepository-{helm_repository_name(url)}.yaml"] = BundleFile(
            yaml_bytes(_helm_repository(url), header=header)
        )
    resources = sorted(
        p
        for p in files
        if p.startswith("sources/") or p.endswith(("/helmrelease.yaml", "-kustomization.yaml"))
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
