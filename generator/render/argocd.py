"""The `argocd` deployer: `app-of-apps.yaml` plus one `NNN-<release>/application.yaml` per
numbered folder (see `common.folders`).

Follows the Argo CD `Application` API (argoproj.io/v1alpha1, reference:
https://argo-cd.readthedocs.io/en/stable/operator-manual/declarative-setup/ and
https://argo-cd.readthedocs.io/en/stable/user-guide/multiple_sources/). An upstream chart's
Application pulls the chart pinned to the recipe's version and takes `values.yaml` from the
bundle's Git repository (a `ref: values` source). A local chart's Application (a component's
manifests, Helm templates) points at its folder in the bundle's repository, which Argo CD
renders as a Helm chart with the folder's `values.yaml`. The sync wave is
3 x the component's dependency depth + 0 (pre), 1 (chart) or 2 (post): independent components
share waves, a component's releases keep their order and wait for its dependencies.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from generator.records import RecipeResult
from generator.render.common import (
    BundleFile,
    Folder,
    GitOpsTarget,
    Release,
    Rendered,
    chart_leaf,
    folders,
    header_comment,
    local_chart_files,
    slug,
    yaml_bytes,
)
from generator.render.helm import values_file

API_VERSION = "argoproj.io/v1alpha1"
ARGOCD_NAMESPACE = "argocd"
IN_CLUSTER = "https://kubernetes.default.svc"
SYNC_WAVE = "argocd.argoproj.io/sync-wave"


def _sync_policy(extra: tuple[str, ...] = (), *, create_namespace: bool = True) -> dict[str, Any]:
    create = ("CreateNamespace=true",) if create_namespace else ()
    return {
        "automated": {"prune": True, "selfHeal": True},
        "syncOptions": [*create, "ServerSideApply=true", *extra],
        "retry": {
            "limit": 5,
            "backoff": {"duration": "10s", "factor": 2, "maxDuration": "5m"},
        },
    }


def app_name(result: RecipeResult) -> str:
    return slug(f"aicr-{result.name}", 53)


def _sources(f: Folder, target: GitOpsTarget) -> list[dict[str, Any]]:
    c = f.component
    if f.local:
        return [
            {
                "repoURL": target.repo_url,
                "targetRevision": target.revision,
                "path": target.join(f.dir),
                "helm": {"releaseName": f.release, "valueFiles": ["values.yaml"]},
            }
        ]
    return [
        {
            # Argo CD names Helm OCI registries without the scheme.
            "repoURL": str(c.repository).removeprefix("oci://"),
            "chart": chart_leaf(c),
            "targetRevision": c.version,
            "helm": {
                "releaseName": f.release,
                "valueFiles": [f"$values/{target.join(f.dir)}/values.yaml"],
            },
        },
        {"repoURL": target.repo_url, "targetRevision": target.revision, "ref": "values"},
    ]


def render(result: RecipeResult, manifests: Mapping[str, bytes], target: GitOpsTarget) -> Rendered:
    header = header_comment(result)
    files: dict[str, BundleFile] = {}
    releases: list[Release] = []
    for f in folders(result, manifests):
        c = f.component
        if f.local:
            files.update(local_chart_files(f, header))
        else:
            files[f"{f.dir}/values.yaml"] = BundleFile(values_file(c.values, header))
        # a local chart's objects may be custom resources of a chart synced just before
        extra = ("SkipDryRunOnMissingResource=true",) if f.local else ()
        options = _sync_policy(extra, create_namespace=f.creates_namespace)
        app = {
            "apiVersion": API_VERSION,
            "kind": "Application",
            "metadata": {
                "name": f.release,
                "namespace": ARGOCD_NAMESPACE,
                "annotations": {SYNC_WAVE: str(f.wave)},
                "finalizers": ["resources-finalizer.argocd.argoproj.io"],
            },
            "spec": {
                "project": "default",
                "sources": _sources(f, target),
                "destination": {"server": IN_CLUSTER, "namespace": c.namespace},
                "syncPolicy": options,
            },
        }
        files[f"{f.dir}/application.yaml"] = BundleFile(yaml_bytes(app, header=header))
        releases.append(Release(f.release, c.name, c.namespace, f.dir))

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
