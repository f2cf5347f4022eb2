"""The `argocd` deployer: `app-of-apps.yaml` plus `NNN-<component>/application.yaml`.

Follows the Argo CD `Application` API (argoproj.io/v1alpha1, reference:
https://argo-cd.readthedocs.io/en/stable/operator-manual/declarative-setup/ and
https://argo-cd.readthedocs.io/en/stable/user-guide/multiple_sources/). Each Application pulls its
chart pinned to the recipe's version and takes `values.yaml` from the bundle's Git repository
(a `ref: values` source); plain manifests are further directory sources. The sync wave is the
component's dependency depth, so independent components share a wave.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from generator.records import RecipeResult
from generator.render.common import (
    BundleFile,
    GitOpsTarget,
    Release,
    Rendered,
    component_dir,
    has_chart,
    header_comment,
    manifest_files,
    slug,
    yaml_bytes,
)
from generator.render.helm import values_file

API_VERSION = "argoproj.io/v1alpha1"
ARGOCD_NAMESPACE = "argocd"
IN_CLUSTER = "https://kubernetes.default.svc"
SYNC_WAVE = "argocd.argoproj.io/sync-wave"


def _sync_policy(extra: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "automated": {"prune": True, "selfHeal": True},
        "syncOptions": ["CreateNamespace=true", "ServerSideApply=true", *extra],
        "retry": {
            "limit": 5,
            "backoff": {"duration": "10s", "factor": 2, "maxDuration": "5m"},
        },
    }


def app_name(result: RecipeResult) -> str:
    return slug(f"aicr-{result.name}", 53)


def render(result: RecipeResult, manifests: Mapping[str, bytes], target: GitOpsTarget) -> Rendered:
    header = header_comment(result)
    files: dict[str, BundleFile] = {}
    releases: list[Release] = []
    for c in result.components:
        d = component_dir(c)
        pre = manifest_files(c, manifests, pre=True)
        post = manifest_files(c, manifests, pre=False)
        sources: list[dict[str, Any]] = []
        if has_chart(c):
            files[f"{d}/values.yaml"] = BundleFile(values_file(c.values, header))
            sources.append(
                {
                    # Argo CD names Helm OCI registries without the scheme.
                    "repoURL": str(c.repository).removeprefix("oci://"),
                    "chart": c.chart,
                    "targetRevision": c.version,
                    "helm": {
                        "releaseName": c.name,
                        "valueFiles": [f"$values/{target.join(d)}/values.yaml"],
                    },
                }
            )
            sources.append(
                {"repoURL": target.repo_url, "targetRevision": target.revision, "ref": "values"}
            )
        for sub, items in (("pre-manifests", pre), ("manifests", post)):
            if not items:
                continue
            for name, data in items:
                files[f"{d}/{sub}/{name}"] = BundleFile(data)
            sources.append(
                {
                    "repoURL": target.repo_url,
                    "targetRevision": target.revision,
                    "path": target.join(f"{d}/{sub}"),
                }
            )
        extra = ("SkipDryRunOnMissingResource=true",) if (pre or post) else ()
        app = {
            "apiVersion": API_VERSION,
            "kind": "Application",
            "metadata": {
                "name": c.name,
                "namespace": ARGOCD_NAMESPACE,
                "annotations": {SYNC_WAVE: str(c.depth)},
                "finalizers": ["resources-finalizer.argocd.argoproj.io"],
            },
            "spec": {
                "project": "default",
                "sources": sources,
                "destination": {"server": IN_CLUSTER, "namespace": c.namespace},
                "syncPolicy": _sync_policy(extra),
            },
        }
        files[f"{d}/application.yaml"] = BundleFile(yaml_bytes(app, header=header))
        releases.append(Release(c.name, c.name, c.namespace, d))

    root = {
        "apiVersion": API_VERSION,
        "kind": "Application",
        "metadata": {
            "name": app_name(result),
            "namespace": ARGOCD_NAMESPACE,
            "finalizers": ["resources-finalizer.argocd.argoproj.io"],
        },
        "spec": {
            "project": "default",
            "source": {
                "repoURL": target.repo_url,
                "targetRevision": target.revision,
                "path": target.path,
                "directory": {"recurse": True, "include": "*/application.yaml"},
            },
            "destination": {"server": IN_CLUSTER, "namespace": ARGOCD_NAMESPACE},
            "syncPolicy": _sync_policy(),
        },
    }
    files["app-of-apps.yaml"] = BundleFile(yaml_bytes(root, header=header))
    return Rendered(files, "app-of-apps.yaml", tuple(releases))
