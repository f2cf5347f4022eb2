"""Bundles of upstream AICR's own components (../shared/upstream-aicr/v0.11.1): their manifests are
Helm templates (`{{- $gpuOp := index .Values "gpu-operator" }}`), shipped unchanged as local charts
whose values.yaml holds the component's values under its name, so Helm finds them.

The chart structure and values wiring are checked without Helm, and every local chart is also
rendered by Helm itself (`helm lint` and `helm template` of a real Helm binary, the `helm`
fixture: `.ci/get-helm` installs it in CI) and the objects are asserted.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from generator.core.records import Criteria, RecipeResult, ResolvedComponent
from generator.render import Deployer, render_bundle, write_bundle

UPSTREAM = ("upstream-aicr", "v0.11.1", "recipes")
GPU_MANIFESTS = (
    "components/gpu-operator/manifests/dcgm-exporter.yaml",
    "components/gpu-operator/manifests/kernel-module-params.yaml",
)
TCPXO_MANIFESTS = (
    "components/gke-nccl-tcpxo/manifests/nccl-tcpxo-installer.yaml",
    "components/gke-nccl-tcpxo/manifests/nri-device-injector.yaml",
)
KGW_MANIFESTS = ("components/kgateway/manifests/inference-gateway.yaml",)
SKYHOOK_MANIFESTS = ("components/skyhook-customizations/manifests/tuning.yaml",)
VALUES_KEY = re.compile(rb'index \.Values "([^"]+)"')


def _tree(shared_dir: Path) -> Path:
    return shared_dir.joinpath(*UPSTREAM)


def _values(tree: Path, component: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(
        (tree / "components" / component / "values.yaml").read_text()
    )
    return data


def _comp(name: str, order: int, depth: int, **kw: Any) -> ResolvedComponent:
    base: dict[str, Any] = {
        "name": name,
        "type": "Helm",
        "repository": None,
        "chart": None,
        "version": None,
        "namespace": name,
        "values": {},
        "manifest_files": (),
        "pre_manifest_files": (),
        "dependency_refs": (),
        "order": order,
        "depth": depth,
        "values_files": (),
    }
    base.update(kw)
    return ResolvedComponent(**base)


def upstream_result(tree: Path, *, gpu_values: dict[str, Any] | None = None) -> RecipeResult:
    """gpu-operator (chart + templated manifests), kgateway (chart + templated manifest with
    hooks), gke-nccl-tcpxo (manifest-only, objects in kube-system) and skyhook-customizations
    (manifest-only, templated), as upstream's overlays declare them."""
    gpu = _values(tree, "gpu-operator") if gpu_values is None else gpu_values
    if gpu_values is None:
        gpu["driver"] = {**gpu.get("driver", {}), "kernelModuleConfig": {"name": "gb200-params"}}
    kgw = _values(tree, "kgateway")
    kgw["nodeSelector"] = {"nodeGroup": "system"}
    components = (
        _comp(
            "gpu-operator",
            0,
            0,
            repository="https://helm.ngc.nvidia.com/nvidia",
            chart="gpu-operator",
            version="v25.10.1",
            values=gpu,
            manifest_files=GPU_MANIFESTS,
        ),
        _comp(
            "kgateway",
            1,
            0,
            repository="oci://cr.kgateway.dev/kgateway-dev/charts",
            chart="kgateway",
            version="v2.0.0",
            namespace="kgateway-system",
            values=kgw,
            manifest_files=KGW_MANIFESTS,
        ),
        _comp(
            "gke-nccl-tcpxo",
            2,
            1,
            namespace="kube-system",
            manifest_files=TCPXO_MANIFESTS,
            dependency_refs=("gpu-operator",),
        ),
        _comp(
            "skyhook-customizations",
            3,
            1,
            namespace="skyhook",
            values={"enabled": True},
            manifest_files=SKYHOOK_MANIFESTS,
            dependency_refs=("gpu-operator",),
        ),
    )
    return RecipeResult(
        name="h100-gke-cos-training",
        criteria=Criteria(service="gke", accelerator="h100", os="cos", intent="training"),
        applied_overlays=("base", "gke-cos", "h100-gke-cos-training"),
        mixins=(),
        constraints=(),
        components=components,
        validation={},
        scale_profile="standard",
        scale_profile_version="0.0.0",
        overrides=(),
        digest="sha256:" + "cd" * 32,
    )


def manifests_of(tree: Path) -> dict[str, bytes]:
    rels = (*GPU_MANIFESTS, *TCPXO_MANIFESTS, *KGW_MANIFESTS, *SKYHOOK_MANIFESTS)
    return {rel: (tree / rel).read_bytes() for rel in rels}


LOCAL = {
    "002-gpu-operator-post": ("gpu-operator", "gpu-operator", GPU_MANIFESTS),
    "004-kgateway-post": ("kgateway", "kgateway-system", KGW_MANIFESTS),
    "005-gke-nccl-tcpxo": ("gke-nccl-tcpxo", "kube-system", TCPXO_MANIFESTS),
    "006-skyhook-customizations": ("skyhook-customizations", "skyhook", SKYHOOK_MANIFESTS),
}


@pytest.mark.parametrize("deployer", list(Deployer))
def test_upstream_manifests_become_local_charts_wired_to_their_values(
    shared_dir: Path, deployer: Deployer
) -> None:
    tree = _tree(shared_dir)
    result = upstream_result(tree)
    bundle = render_bundle(result, deployer, manifests_of(tree))
    values = {c.name: c.values for c in result.components}
    info = yaml.safe_load(bundle["bundle-info.yaml"].data)
    assert [r["path"] for r in info["releases"]] == [
        "001-gpu-operator",
        "002-gpu-operator-post",
        "003-kgateway",
        "004-kgateway-post",
        "005-gke-nccl-tcpxo",
        "006-skyhook-customizations",
    ]
    for d, (component, namespace, rels) in LOCAL.items():
        chart = yaml.safe_load(bundle[f"{d}/Chart.yaml"].data)
        assert chart["apiVersion"] == "v2" and chart["name"] == d.split("-", 1)[1]
        release = next(r for r in info["releases"] if r["path"] == d)
        assert (release["component"], release["namespace"]) == (component, namespace)
        chart_values = yaml.safe_load(bundle[f"{d}/values.yaml"].data)
        assert chart_values == {component: values[component]}
        for rel in rels:
            name = rel.rsplit("/", 1)[1]
            data = bundle[f"{d}/templates/{name}"].data
            assert data == (tree / rel).read_bytes()  # byte for byte, never parsed
            # every `index .Values "<key>"` of the template finds its key in values.yaml
            assert set(VALUES_KEY.findall(data)) <= {k.encode() for k in chart_values}
    # no manifest is applied by kubectl (the README tells how to apply the GitOps root only)
    text = b"".join(
        f.data for p, f in bundle.items() if "/templates/" not in p and p != "README.md"
    )
    assert b"kubectl" not in text
    assert b"--namespace gke-nccl-tcpxo" not in text and b"namespace: gke-nccl-tcpxo" not in text


# --- rendered by Helm itself ------------------------------------------------------------------


def _helm_render(helm: Path, chart_dir: Path, release: str, namespace: str) -> list[dict[str, Any]]:
    """The objects `helm template` renders from a bundle's local chart (after `helm lint`)."""
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(chart_dir.parent),
        "HELM_CACHE_HOME": "/nonexistent",
    }
    lint = subprocess.run(
        [str(helm), "lint", str(chart_dir), "--namespace", namespace],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert lint.returncode == 0, lint.stdout + lint.stderr
    out = subprocess.run(
        [str(helm), "template", release, str(chart_dir), "--namespace", namespace],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def _by_kind(docs: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(d["kind"], d["metadata"]["name"]): d for d in docs}


@pytest.mark.parametrize("deployer", [Deployer.HELM, Deployer.ARGOCD, Deployer.FLUX])
def test_helm_renders_the_local_charts_with_the_components_values(
    shared_dir: Path, tmp_path: Path, deployer: Deployer, helm: Path
) -> None:
    tree = _tree(shared_dir)
    out = tmp_path / "b"
    write_bundle(render_bundle(upstream_result(tree), deployer, manifests_of(tree)), out)

    gpu = _by_kind(
        _helm_render(helm, out / "002-gpu-operator-post", "gpu-operator-post", "gpu-operator")
    )
    assert set(gpu) == {("ConfigMap", "dcgm-exporter"), ("ConfigMap", "gb200-params")}
    dcgm = gpu[("ConfigMap", "dcgm-exporter")]
    assert dcgm["metadata"]["namespace"] == "gpu-operator"  # .Release.Namespace
    assert dcgm["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "Helm"
    assert dcgm["metadata"]["labels"]["helm.sh/chart"] == "gpu-operator-post-0.1.0"
    assert "DCGM_FI_DEV_SM_CLOCK" in dcgm["data"]["dcgm-metrics.csv"]
    assert gpu[("ConfigMap", "gb200-params")]["metadata"]["namespace"] == "gpu-operator"

    kgw = _by_kind(
        _helm_render(helm, out / "004-kgateway-post", "kgateway-post", "kgateway-system")
    )
    params = kgw[("GatewayParameters", "system-proxy")]
    assert params["spec"]["kube"]["podTemplate"]["nodeSelector"] == {"nodeGroup": "system"}

    # manifest-only, objects declaring kube-system: the release namespace does not move them
    tcpxo = _helm_render(helm, out / "005-gke-nccl-tcpxo", "gke-nccl-tcpxo", "kube-system")
    assert {(d["kind"], d["metadata"]["namespace"]) for d in tcpxo} == {
        ("DaemonSet", "kube-system")
    }
    assert len(tcpxo) == 2

    sky = _by_kind(
        _helm_render(helm, out / "006-skyhook-customizations", "skyhook-customizations", "skyhook")
    )
    marker = (
        [("ConfigMap", "skyhook-customizations-aicr-sync")] if deployer is Deployer.ARGOCD else []
    )
    assert sorted(sky) == sorted([("Skyhook", "tuning"), *marker])


def test_helm_renders_nothing_when_the_values_turn_a_manifest_off(
    shared_dir: Path, tmp_path: Path, helm: Path
) -> None:
    """The templates are conditional on the component's values: without `dcgmExporter.config`
    and `driver.kernelModuleConfig` the gpu-operator-post chart renders no object at all."""
    tree = _tree(shared_dir)
    out = tmp_path / "b"
    result = upstream_result(tree, gpu_values={"driver": {"version": "580.82.07"}})
    write_bundle(render_bundle(result, Deployer.HELM, manifests_of(tree)), out)
    assert (
        _helm_render(helm, out / "002-gpu-operator-post", "gpu-operator-post", "gpu-operator") == []
    )


@pytest.mark.parametrize("deployer", [Deployer.ARGOCD, Deployer.FLUX, Deployer.HELMFILE])
def test_upstream_bundle_documents_match_the_schemas_and_published_crds(
    shared_dir: Path, deployer: Deployer
) -> None:
    from tests.test_render_schemas import KIND_SCHEMA, _crd_validators, validator

    tree = _tree(shared_dir)
    bundle = render_bundle(upstream_result(tree), deployer, manifests_of(tree))
    crds = _crd_validators(str(shared_dir))
    checked = 0
    for path, f in bundle.items():
        if not path.endswith(".yaml") or "/templates/" in path:
            continue
        if path in ("recipe.yaml", "bundle-info.yaml") or path.endswith(
            ("values.yaml", "Chart.yaml")
        ):
            continue
        for doc in yaml.safe_load_all(f.data):
            if path == "helmfile.yaml":
                errors = list(validator("deployers/helmfile.schema.json").iter_errors(doc))
                assert errors == [], path
                checked += 1
                continue
            key = (doc["apiVersion"], doc["kind"])
            assert list(validator(KIND_SCHEMA[key]).iter_errors(doc)) == [], path
            if key in crds:
                assert list(crds[key].iter_errors(doc)) == [], path
            checked += 1
    assert checked >= (1 if deployer is Deployer.HELMFILE else 6)


def test_argocd_local_charts_with_hooks_get_a_sync_marker(shared_dir: Path) -> None:
    """skyhook-customizations' only object is a helm.sh/hook: Argo CD would never auto-sync it.
    Its chart (and kgateway-post's) gets a ConfigMap that changes with the chart; charts without
    hooks get none, and the other deployers, whose Helm runs hooks itself, never do."""
    tree = _tree(shared_dir)
    result = upstream_result(tree)
    bundle = render_bundle(result, Deployer.ARGOCD, manifests_of(tree))
    markers = sorted(p for p in bundle if p.endswith("/templates/aicr-sync-marker.yaml"))
    assert markers == [
        "004-kgateway-post/templates/aicr-sync-marker.yaml",
        "006-skyhook-customizations/templates/aicr-sync-marker.yaml",
    ]
    marker = yaml.safe_load(bundle[markers[1]].data)
    assert marker["kind"] == "ConfigMap" and marker["metadata"] == {
        "name": "skyhook-customizations-aicr-sync",
        "namespace": "skyhook",
        "labels": {"app.kubernetes.io/managed-by": "aicr-catalog"},
    }
    readme = bundle["README.md"].data.decode()
    assert "(`004-kgateway-post`, `006-skyhook-customizations`) therefore carry" in readme
    digest = marker["data"]["chart-sha256"]
    assert len(digest) == 64
    # new values: a new digest, hence an out-of-sync Application and a sync that runs the hooks
    comps = list(result.components)
    comps[3] = replace(comps[3], values={"enabled": True, "tuning": {"x": 1}})
    again = render_bundle(
        replace(result, components=tuple(comps)), Deployer.ARGOCD, manifests_of(tree)
    )
    assert yaml.safe_load(again[markers[1]].data)["data"]["chart-sha256"] != digest
    assert again[markers[0]].data == bundle[markers[0]].data
    for deployer in (Deployer.HELM, Deployer.HELMFILE, Deployer.FLUX):
        other = render_bundle(result, deployer, manifests_of(tree))
        assert not [p for p in other if p.endswith("aicr-sync-marker.yaml")]
