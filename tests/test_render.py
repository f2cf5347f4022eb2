"""generator.render: the four layouts, built from hand-made RecipeResults (no catalog needed)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from generator.core.errors import RenderError
from generator.core.records import Criteria, Override, RecipeResult, ResolvedComponent
from generator.render import (
    BundleFile,
    Deployer,
    GitOpsTarget,
    render_bundle,
    write_bundle,
)
from generator.render.bundle_verify import verify_bundle
from generator.render.common import checksums_text

DEPLOYERS = tuple(Deployer)

PRE = (
    b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: params\n  namespace: gpu\ndata:\n  a: b\n"
)
POST = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: after\n  namespace: gpu\n"
TUNING = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: tuning\n  namespace: tune\n"
MANIFESTS = {
    "components/gpu/manifests/params.yaml": PRE,
    "components/gpu/manifests/after.yaml": POST,
    "components/tuning/manifests/tuning.yaml": TUNING,
}


def comp(name: str, order: int, depth: int, **kw: Any) -> ResolvedComponent:
    base: dict[str, Any] = {
        "name": name,
        "type": "Helm",
        "repository": "https://charts.example.com/stable",
        "chart": name,
        "version": "1.0.0",
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


def sample_result(overrides: tuple[Override, ...] = ()) -> RecipeResult:
    """cert (depth 0), oci-op (depth 0, OCI), gpu (depth 1, pre + post manifests),
    tuning (depth 2, manifests only)."""
    components = (
        comp("cert", 0, 0, values={"installCRDs": True, "replicas": 2}),
        comp(
            "oci-op",
            1,
            0,
            repository="oci://ghcr.io/example/charts",
            chart="operator",
            version="v0.3.1",
            namespace="ops",
            values={"z": {"b": 1, "a": [1, "two", None]}, "a": 'it\'s "quoted"'},
        ),
        comp(
            "gpu",
            2,
            1,
            namespace="gpu",
            values={"driver": {"enabled": False, "version": "580.1"}, "ratio": 0.5},
            pre_manifest_files=("components/gpu/manifests/params.yaml",),
            manifest_files=("components/gpu/manifests/after.yaml",),
            dependency_refs=("cert", "oci-op"),
        ),
        comp(
            "tuning",
            3,
            2,
            repository=None,
            chart=None,
            version=None,
            namespace="tune",
            manifest_files=("components/tuning/manifests/tuning.yaml",),
            dependency_refs=("gpu",),
        ),
    )
    return RecipeResult(
        name="sample-recipe",
        criteria=Criteria(service="eks", accelerator="gb300"),
        applied_overlays=("base", "sample-recipe"),
        mixins=(),
        constraints=(),
        components=components,
        validation={},
        scale_profile="standard",
        scale_profile_version="1.0.0",
        overrides=overrides,
        digest="sha256:" + "ab" * 32,
    )


def docs(tree: dict[str, BundleFile] | Any, path: str) -> list[Any]:
    return [d for d in yaml.safe_load_all(tree[path].data) if d is not None]


def one(tree: Any, path: str) -> Any:
    (d,) = docs(tree, path)
    return d


@pytest.fixture(scope="module")
def trees() -> dict[Deployer, Any]:
    return {d: render_bundle(sample_result(), d, MANIFESTS) for d in DEPLOYERS}


# --- every deployer ----------------------------------------------------------------------------


def _is_chart_template(deployer: Deployer, path: str) -> bool:
    """argocd-helm's bundle is itself a chart: its top-level templates/ are Helm template text
    (`{{- if ... }}`), YAML only once rendered (test_argocd_helm_templates_render_to_yaml)."""
    return deployer is Deployer.ARGOCD_HELM and path.startswith("templates/")


@pytest.mark.parametrize("deployer", DEPLOYERS)
def test_every_yaml_file_parses(trees: dict[Deployer, Any], deployer: Deployer) -> None:
    tree = trees[deployer]
    yamls = [p for p in tree if p.endswith(".yaml") and not _is_chart_template(deployer, p)]
    assert yamls
    for p in yamls:
        assert docs(tree, p), p


def test_argocd_helm_templates_render_to_yaml(
    trees: dict[Deployer, Any], tmp_path: Path, helm: Path
) -> None:
    """Every template of the argocd-helm chart, rendered by a real Helm, is YAML: one
    Application per release folder, and the parent."""
    tree = trees[Deployer.ARGOCD_HELM]
    templates = sorted(p for p in tree if _is_chart_template(Deployer.ARGOCD_HELM, p))
    assert "templates/aicr-stack.yaml" in templates
    write_bundle(tree, tmp_path / "b")
    args = [str(helm), "template", "x", str(tmp_path / "b"), "--set", "repoURL=oci://r.example/n"]
    for t in templates:
        args += ["--show-only", t]
    done = subprocess.run(args, capture_output=True, text=True, check=True)
    rendered = [d for d in yaml.safe_load_all(done.stdout) if d is not None]
    assert len(rendered) == len(templates)
    assert all(d["kind"] == "Application" for d in rendered)
    names = {d["metadata"]["name"] for d in rendered}
    assert names == {"aicr-stack", *(r.split("-", 1)[1] for r in FOLDERS)}


@pytest.mark.parametrize("deployer", DEPLOYERS)
def test_shared_files_and_checksums(trees: dict[Deployer, Any], deployer: Deployer) -> None:
    tree = trees[deployer]
    for p in ("README.md", "recipe.yaml", "bundle-info.yaml", "checksums.txt"):
        assert p in tree
    lines = tree["checksums.txt"].data.decode().splitlines()
    listed = [line.split("  ", 1)[1] for line in lines]
    assert listed == sorted(listed)
    assert set(listed) == set(tree) - {"checksums.txt"}
    for line in lines:
        digest, path = line.split("  ", 1)
        assert hashlib.sha256(tree[path].data).hexdigest() == digest


@pytest.mark.parametrize("deployer", DEPLOYERS)
def test_bundle_info(trees: dict[Deployer, Any], deployer: Deployer) -> None:
    info = one(trees[deployer], "bundle-info.yaml")
    entry = {
        Deployer.HELM: "deploy.sh",
        Deployer.HELMFILE: "helmfile.yaml",
        Deployer.ARGOCD: "app-of-apps.yaml",
        Deployer.FLUX: "kustomization.yaml",
        Deployer.ARGOCD_HELM: "Chart.yaml",
    }[deployer]
    assert info["deployer"] == str(deployer)
    assert info["entrypoint"] == entry and entry in trees[deployer]
    assert info["recipe"]["name"] == "sample-recipe"
    assert info["recipe"]["digest"] == "sha256:" + "ab" * 32
    assert info["scaleProfile"] == {"name": "standard", "version": "1.0.0"}
    assert info["generator"]["name"] == "aicr-catalog"
    assert info["overrides"] == []
    components = [r["component"] for r in info["releases"]]
    # releases in deployment order, each component's releases together
    order = ["cert", "oci-op", "gpu", "tuning"]
    assert sorted(components, key=order.index) == components
    assert set(components) == set(order)
    for r in info["releases"]:
        assert any(p.startswith(r["path"] + "/") or p == r["path"] for p in trees[deployer])
    text = trees[deployer]["bundle-info.yaml"].data.decode().lower()
    for word in ("timestamp", "date", "created", "time:"):
        assert word not in text


def test_overrides_recorded_in_bundle_info() -> None:
    o = (Override("gpu", "driver.version", "590", "--set gpu:driver.version=590"),)
    tree = render_bundle(sample_result(o), "helm", MANIFESTS)
    info = one(tree, "bundle-info.yaml")
    assert info["overrides"] == [
        {
            "component": "gpu",
            "path": "driver.version",
            "value": "590",
            "origin": "--set gpu:driver.version=590",
        }
    ]
    assert "--set gpu:driver.version=590" in tree["README.md"].data.decode()


@pytest.mark.parametrize("deployer", DEPLOYERS)
def test_rendering_is_deterministic(deployer: Deployer) -> None:
    a = render_bundle(sample_result(), deployer, MANIFESTS)
    b = render_bundle(sample_result(), deployer, MANIFESTS)
    assert list(a) == list(b) == sorted(a)
    assert all(a[p] == b[p] for p in a)


FOLDERS = ("001-cert", "002-oci-op", "003-gpu-pre", "004-gpu", "005-gpu-post", "006-tuning")
LOCAL = {"003-gpu-pre": "gpu", "005-gpu-post": "gpu", "006-tuning": "tuning"}


@pytest.mark.parametrize("deployer", DEPLOYERS)
def test_folders_follow_the_numbered_release_layout(
    trees: dict[Deployer, Any], deployer: Deployer
) -> None:
    tree = trees[deployer]
    dirs = sorted({p.split("/", 1)[0] for p in tree if "/" in p and p[0].isdigit()})
    assert tuple(dirs) == FOLDERS
    info = one(tree, "bundle-info.yaml")
    assert [(r["name"], r["component"], r["path"]) for r in info["releases"]] == [
        ("cert", "cert", "001-cert"),
        ("oci-op", "oci-op", "002-oci-op"),
        ("gpu-pre", "gpu", "003-gpu-pre"),
        ("gpu", "gpu", "004-gpu"),
        ("gpu-post", "gpu", "005-gpu-post"),
        ("tuning", "tuning", "006-tuning"),
    ]


@pytest.mark.parametrize("deployer", DEPLOYERS)
def test_values_are_exactly_the_merged_values(
    trees: dict[Deployer, Any], deployer: Deployer
) -> None:
    result = sample_result()
    tree = trees[deployer]
    dirs = {"cert": "001-cert", "oci-op": "002-oci-op", "gpu": "004-gpu"}
    for c in result.components:
        if c.chart is None:
            continue
        d = dirs[c.name]
        if deployer is Deployer.FLUX:
            got = one(tree, f"{d}/helmrelease.yaml")["spec"].get("values", {})
        else:
            got = one(tree, f"{d}/values.yaml")
        assert got == dict(c.values), c.name


@pytest.mark.parametrize("deployer", DEPLOYERS)
def test_manifests_become_local_charts_byte_for_byte(
    trees: dict[Deployer, Any], deployer: Deployer
) -> None:
    tree = trees[deployer]
    assert tree["003-gpu-pre/templates/params.yaml"].data == PRE
    assert tree["005-gpu-post/templates/after.yaml"].data == POST
    assert tree["006-tuning/templates/tuning.yaml"].data == TUNING
    values = {c.name: dict(c.values) for c in sample_result().components}
    for d, component in LOCAL.items():
        chart = one(tree, f"{d}/Chart.yaml")
        release = d.split("-", 1)[1]
        assert chart["apiVersion"] == "v2" and chart["name"] == release
        assert chart["type"] == "application" and chart["version"] == "0.1.0"
        assert chart["annotations"]["aicr.run/component"] == component
        # the templates read `index .Values "<component>"`: values nest under the name
        assert one(tree, f"{d}/values.yaml") == {component: values[component]}
        assert [p for p in tree if p.startswith(f"{d}/templates/")]
    # no raw manifest outside a chart's templates/
    for p, f in tree.items():
        if f.data in (PRE, POST, TUNING):
            assert "/templates/" in p, p


@pytest.mark.parametrize("deployer", DEPLOYERS)
def test_no_unsafe_paths(trees: dict[Deployer, Any], deployer: Deployer) -> None:
    for p in trees[deployer]:
        assert not p.startswith("/") and ".." not in p.split("/")


@pytest.mark.parametrize("deployer", DEPLOYERS)
def test_chart_repository_prefix_is_stripped(deployer: Deployer) -> None:
    """`nvidia/nvsentinel` from `oci://ghcr.io/nvidia` is `oci://ghcr.io/nvidia/nvsentinel`, and
    `jetstack/cert-manager` from an HTTP repository is `cert-manager`, as upstream AICR does."""
    r = sample_result()
    comps = list(r.components)
    comps[0] = replace(comps[0], chart="jetstack/cert")
    comps[1] = replace(
        comps[1], repository="oci://ghcr.io/nvidia", chart="nvidia/nvsentinel", version="v1.1.0"
    )
    tree = render_bundle(replace(r, components=tuple(comps)), deployer, MANIFESTS)
    text = "\n".join(f.data.decode() for p, f in tree.items() if p != "recipe.yaml")
    assert "nvidia/nvidia" not in text and "jetstack/" not in text
    if deployer is Deployer.HELM:
        assert "helm upgrade --install oci-op oci://ghcr.io/nvidia/nvsentinel" in text
        assert "helm upgrade --install cert cert \\" in text
    elif deployer is Deployer.HELMFILE:
        rel = {x["name"]: x for x in one(tree, "helmfile.yaml")["releases"]}
        assert rel["oci-op"]["chart"] == "ghcr-io-nvidia/nvsentinel"
        assert rel["cert"]["chart"] == "charts-example-com-stable/cert"
    elif deployer is Deployer.ARGOCD:
        src = one(tree, "002-oci-op/application.yaml")["spec"]["sources"][0]
        assert (src["repoURL"], src["chart"]) == ("ghcr.io/nvidia", "nvsentinel")
        assert one(tree, "001-cert/application.yaml")["spec"]["sources"][0]["chart"] == "cert"
    elif deployer is Deployer.ARGOCD_HELM:
        src = one(tree, "templates/oci-op.yaml")["spec"]["source"]
        assert (src["repoURL"], src["chart"]) == ("ghcr.io/nvidia", "nvsentinel")
        assert one(tree, "templates/cert.yaml")["spec"]["source"]["chart"] == "cert"
    else:
        assert deployer is Deployer.FLUX
        oci = one(tree, "sources/ocirepository-oci-op-chart.yaml")
        assert oci["spec"]["url"] == "oci://ghcr.io/nvidia/nvsentinel"
        spec = one(tree, "001-cert/helmrelease.yaml")["spec"]["chart"]["spec"]
        assert spec["chart"] == "cert"


def test_a_template_declaring_its_namespace_is_not_given_create_namespace() -> None:
    ns = b"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: gpu\n"
    m = {**MANIFESTS, "components/gpu/manifests/params.yaml": ns}
    helm = render_bundle(sample_result(), "helm", m)
    assert "--create-namespace" not in helm["003-gpu-pre/install.sh"].data.decode()
    assert "--create-namespace" in helm["005-gpu-post/install.sh"].data.decode()
    hf = {
        x["name"]: x
        for x in one(render_bundle(sample_result(), "helmfile", m), "helmfile.yaml")["releases"]
    }
    assert hf["gpu-pre"]["createNamespace"] is False and hf["gpu-post"]["createNamespace"]
    argo = render_bundle(sample_result(), "argocd", m)
    opts = one(argo, "003-gpu-pre/application.yaml")["spec"]["syncPolicy"]["syncOptions"]
    assert "CreateNamespace=true" not in opts
    flux = render_bundle(sample_result(), "flux", m)
    assert one(flux, "003-gpu-pre/helmrelease.yaml")["spec"]["install"]["createNamespace"] is False


def test_manifest_name_collisions_and_helm_partials_fail_closed() -> None:
    r = sample_result()
    comps = list(r.components)
    comps[3] = replace(
        comps[3],
        manifest_files=("components/tuning/manifests/tuning.yaml", "other/tuning.yaml"),
    )
    m = {**MANIFESTS, "other/tuning.yaml": b"x: 1\n"}
    with pytest.raises(RenderError) as e:
        render_bundle(replace(r, components=tuple(comps)), "helm", m)
    assert [d.rule for d in e.value.diagnostics] == ["render.manifest-collision"]
    comps[3] = replace(comps[3], manifest_files=("components/tuning/manifests/_helpers.tpl",))
    m = {**MANIFESTS, "components/tuning/manifests/_helpers.tpl": b"x"}
    with pytest.raises(RenderError) as e:
        render_bundle(replace(r, components=tuple(comps)), "argocd", m)
    assert [d.rule for d in e.value.diagnostics] == ["render.manifest-name"]


def test_a_component_without_chart_and_only_pre_manifests_is_its_pre_chart() -> None:
    r = sample_result()
    comps = list(r.components)
    comps[3] = replace(
        comps[3],
        pre_manifest_files=("components/tuning/manifests/tuning.yaml",),
        manifest_files=(),
    )
    tree = render_bundle(replace(r, components=tuple(comps)), "helmfile", MANIFESTS)
    rel = [x["name"] for x in one(tree, "helmfile.yaml")["releases"]]
    assert rel[-1] == "tuning-pre" and "tuning" not in rel
    assert tree["006-tuning-pre/templates/tuning.yaml"].data == TUNING


def test_a_component_without_namespace_fails_closed() -> None:
    r = sample_result()
    comps = list(r.components)
    comps[3] = replace(comps[3], namespace="")
    with pytest.raises(RenderError) as e:
        render_bundle(replace(r, components=tuple(comps)), "helm", MANIFESTS)
    (d,) = e.value.diagnostics
    assert d.rule == "render.no-namespace" and "component tuning has no namespace" in d.message


def test_injected_release_colliding_with_a_component_fails_closed() -> None:
    r = sample_result()
    comps = list(r.components)
    comps[0] = replace(comps[0], name="gpu-post", namespace="cert")
    comps[2] = replace(comps[2], dependency_refs=("gpu-post", "oci-op"))
    with pytest.raises(RenderError) as e:
        render_bundle(replace(r, components=tuple(comps)), "flux", MANIFESTS)
    assert [d.rule for d in e.value.diagnostics] == ["render.release-collision"]


# --- helm --------------------------------------------------------------------------------------


def test_helm_layout_and_modes(trees: dict[Deployer, Any]) -> None:
    tree = trees[Deployer.HELM]
    for d in FOLDERS:
        assert tree[f"{d}/install.sh"].mode == 0o755
        assert f"{d}/values.yaml" in tree
    for d in LOCAL:
        assert f"{d}/Chart.yaml" in tree
    assert "004-gpu/Chart.yaml" not in tree  # the upstream chart is not vendored
    for p in ("deploy.sh", "undeploy.sh"):
        assert tree[p].mode == 0o755
    assert tree["README.md"].mode == 0o644


def test_helm_deploy_order_and_commands(trees: dict[Deployer, Any]) -> None:
    tree = trees[Deployer.HELM]
    deploy = tree["deploy.sh"].data.decode()
    positions = [deploy.index(f"bash {d}/install.sh") for d in FOLDERS]
    assert positions == sorted(positions)
    undeploy = tree["undeploy.sh"].data.decode()
    gone = [
        undeploy.index(f"removing {n}'")
        for n in ("tuning", "gpu-post", "gpu", "gpu-pre", "oci-op", "cert")
    ]
    assert gone == sorted(gone)
    assert "helm uninstall gpu-post --namespace gpu" in undeploy
    assert "kubectl" not in deploy + undeploy

    gpu = tree["004-gpu/install.sh"].data.decode()
    assert "helm upgrade --install gpu gpu" in gpu
    assert "--repo https://charts.example.com/stable" in gpu
    assert "--version 1.0.0" in gpu and "--wait" in gpu and "--create-namespace" in gpu
    assert "retry()" in gpu

    for d, release in (("003-gpu-pre", "gpu-pre"), ("005-gpu-post", "gpu-post")):
        local = tree[f"{d}/install.sh"].data.decode()
        assert (
            f"helm upgrade --install {release} ./ \\\n  --namespace gpu --create-namespace" in local
        )
        assert "--values values.yaml" in local and "--version" not in local
        assert "kubectl" not in local
    tuning = tree["006-tuning/install.sh"].data.decode()
    assert "helm upgrade --install tuning ./" in tuning and "--namespace tune" in tuning

    oci = tree["002-oci-op/install.sh"].data.decode()
    assert (
        "oci://ghcr.io/example/charts/operator" in oci and "--repo" not in oci.split("retry()")[1]
    )


def _run_with_fake_tools(bundle: Path, tmp: Path, script: str) -> tuple[str, list[str]]:
    """Run a bundle script with `helm` and `kubectl` replaced by recorders."""
    bindir = tmp / "bin"
    bindir.mkdir(exist_ok=True)
    log = tmp / "calls.log"
    (bindir / "kubectl").write_text(f'#!/bin/sh\necho "kubectl $*" >> "{log}"\nexit 0\n')
    (bindir / "helm").write_text(
        f'#!/bin/sh\necho "helm $* (in $(basename "$PWD"))" >> "{log}"\nexit 0\n'
    )
    for tool in ("helm", "kubectl"):
        (bindir / tool).chmod(0o755)
    env = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}", "AICR_RETRIES": "1"}
    proc = subprocess.run(
        ["bash", str(bundle / script)], env=env, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout, log.read_text().splitlines()


def test_helm_deploy_runs_in_order_with_fake_tools(tmp_path: Path) -> None:
    out = tmp_path / "bundle"
    write_bundle(render_bundle(sample_result(), "helm", MANIFESTS), out)
    stdout, calls = _run_with_fake_tools(out, tmp_path, "deploy.sh")
    assert "recipe sample-recipe deployed" in stdout
    installs = [(c.split()[3], c.split()[4]) for c in calls if c.startswith("helm upgrade")]
    assert installs == [
        ("cert", "cert"),
        ("oci-op", "oci://ghcr.io/example/charts/operator"),
        ("gpu-pre", "./"),
        ("gpu", "gpu"),
        ("gpu-post", "./"),
        ("tuning", "./"),
    ]
    # each release runs from its own folder, so `./` and `values.yaml` are that folder's
    assert [c.rsplit("(in ", 1)[1].rstrip(")") for c in calls] == list(FOLDERS)
    assert not [c for c in calls if c.startswith("kubectl")]


def test_helm_undeploy_removes_every_release_in_reverse(tmp_path: Path) -> None:
    out = tmp_path / "bundle"
    write_bundle(render_bundle(sample_result(), "helm", MANIFESTS), out)
    _, calls = _run_with_fake_tools(out, tmp_path, "undeploy.sh")
    removed = [c.split()[2] for c in calls if c.startswith("helm uninstall")]
    assert removed == ["tuning", "gpu-post", "gpu", "gpu-pre", "oci-op", "cert"]


def test_helm_deploy_refuses_a_tampered_bundle(tmp_path: Path) -> None:
    out = tmp_path / "bundle"
    write_bundle(render_bundle(sample_result(), "helm", MANIFESTS), out)
    (out / "001-cert" / "values.yaml").write_text("replicas: 99\n")
    proc = subprocess.run(
        ["bash", str(out / "deploy.sh")],
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": os.environ["PATH"]},
        check=False,
    )
    assert proc.returncode == 1
    assert "do not match checksums.txt" in proc.stderr


# --- helmfile ----------------------------------------------------------------------------------


def test_helmfile_releases_and_needs(trees: dict[Deployer, Any]) -> None:
    hf = one(trees[Deployer.HELMFILE], "helmfile.yaml")
    repos = {r["name"]: r for r in hf["repositories"]}
    assert repos["ghcr-io-example-charts"] == {
        "name": "ghcr-io-example-charts",
        "url": "ghcr.io/example/charts",
        "oci": True,
    }
    assert repos["charts-example-com-stable"]["url"] == "https://charts.example.com/stable"
    rel = {r["name"]: r for r in hf["releases"]}
    assert [r["name"] for r in hf["releases"]] == [
        "cert",
        "oci-op",
        "gpu-pre",
        "gpu",
        "gpu-post",
        "tuning",
    ]
    assert rel["gpu"]["version"] == "1.0.0"
    assert rel["gpu"]["chart"] == "charts-example-com-stable/gpu"
    assert rel["gpu"]["values"] == ["./004-gpu/values.yaml"]
    assert rel["gpu-pre"]["needs"] == ["cert/cert", "ops/oci-op"]
    assert rel["gpu"]["needs"] == ["gpu/gpu-pre"]
    assert rel["gpu-post"]["needs"] == ["gpu/gpu"]
    assert rel["tuning"]["needs"] == ["gpu/gpu-post"]
    for name, d in (
        ("gpu-pre", "003-gpu-pre"),
        ("gpu-post", "005-gpu-post"),
        ("tuning", "006-tuning"),
    ):
        # a local chart: Helm uses the chart's own values.yaml; no version, no repository
        assert rel[name]["chart"] == f"./{d}" and "version" not in rel[name]
        assert "values" not in rel[name]
    assert "needs" not in rel["cert"]
    assert rel["oci-op"]["chart"] == "ghcr-io-example-charts/operator"


# --- argocd ------------------------------------------------------------------------------------


def test_argocd_sync_waves_follow_depth_and_phase(trees: dict[Deployer, Any]) -> None:
    tree = trees[Deployer.ARGOCD]
    waves = {
        d: one(tree, f"{d}/application.yaml")["metadata"]["annotations"][
            "argocd.argoproj.io/sync-wave"
        ]
        for d in FOLDERS
    }
    # 3 x depth + 0 (pre), 1 (chart), 2 (post): a component's releases keep their order and
    # each waits for the last release of its dependencies
    assert waves == {
        "001-cert": "1",
        "002-oci-op": "1",
        "003-gpu-pre": "3",
        "004-gpu": "4",
        "005-gpu-post": "5",
        "006-tuning": "7",
    }


def test_argocd_sources_pinned_and_values_from_repo(trees: dict[Deployer, Any]) -> None:
    tree = trees[Deployer.ARGOCD]
    gpu = one(tree, "004-gpu/application.yaml")
    chart, ref = gpu["spec"]["sources"]
    assert chart["chart"] == "gpu" and chart["targetRevision"] == "1.0.0"
    assert chart["helm"]["valueFiles"] == ["$values/004-gpu/values.yaml"]
    assert chart["helm"]["releaseName"] == "gpu"
    assert ref["ref"] == "values"
    for d in LOCAL:
        app = one(tree, f"{d}/application.yaml")
        (src,) = app["spec"]["sources"]
        assert src["path"] == d and "chart" not in src
        assert src["helm"] == {"releaseName": d.split("-", 1)[1], "valueFiles": ["values.yaml"]}
        assert app["metadata"]["name"] == d.split("-", 1)[1]
    oci = one(tree, "002-oci-op/application.yaml")["spec"]["sources"][0]
    assert oci["repoURL"] == "ghcr.io/example/charts" and oci["chart"] == "operator"
    root = one(tree, "app-of-apps.yaml")
    assert root["spec"]["source"]["directory"]["include"] == "*/application.yaml"


def test_argocd_repo_target_is_applied() -> None:
    t = GitOpsTarget("https://git.example.org/ops.git", "v2", "clusters/a")
    tree = render_bundle(sample_result(), "argocd", MANIFESTS, target=t)
    gpu = one(tree, "004-gpu/application.yaml")["spec"]["sources"]
    assert gpu[0]["helm"]["valueFiles"] == ["$values/clusters/a/004-gpu/values.yaml"]
    assert gpu[1] == {
        "repoURL": "https://git.example.org/ops.git",
        "targetRevision": "v2",
        "ref": "values",
    }
    post = one(tree, "005-gpu-post/application.yaml")["spec"]["sources"][0]
    assert post["repoURL"] == "https://git.example.org/ops.git"
    assert post["path"] == "clusters/a/005-gpu-post" and post["targetRevision"] == "v2"
    assert one(tree, "app-of-apps.yaml")["spec"]["source"]["path"] == "clusters/a"
    assert one(tree, "bundle-info.yaml")["settings"] == {
        "repoURL": "https://git.example.org/ops.git",
        "targetRevision": "v2",
        "path": "clusters/a",
    }


# --- flux --------------------------------------------------------------------------------------


def test_flux_sources_releases_and_depends_on(trees: dict[Deployer, Any]) -> None:
    tree = trees[Deployer.FLUX]
    hr = one(tree, "sources/helmrepository-charts-example-com-stable.yaml")
    assert (
        hr["kind"] == "HelmRepository" and hr["spec"]["url"] == "https://charts.example.com/stable"
    )
    oci = one(tree, "sources/ocirepository-oci-op-chart.yaml")
    assert oci["kind"] == "OCIRepository"
    assert oci["spec"]["url"] == "oci://ghcr.io/example/charts/operator"
    assert oci["spec"]["ref"] == {"tag": "v0.3.1"}
    pre = one(tree, "003-gpu-pre/helmrelease.yaml")
    assert pre["spec"]["dependsOn"] == [{"name": "cert"}, {"name": "oci-op"}]
    gpu = one(tree, "004-gpu/helmrelease.yaml")
    assert gpu["spec"]["dependsOn"] == [{"name": "gpu-pre"}]
    assert gpu["spec"]["chart"]["spec"]["version"] == "1.0.0"
    post = one(tree, "005-gpu-post/helmrelease.yaml")
    assert post["spec"]["dependsOn"] == [{"name": "gpu"}]
    tuning = one(tree, "006-tuning/helmrelease.yaml")
    assert tuning["spec"]["dependsOn"] == [{"name": "gpu-post"}]
    for d in LOCAL:
        spec = one(tree, f"{d}/helmrelease.yaml")["spec"]
        assert spec["chart"]["spec"] == {
            "chart": f"./{d}",
            "sourceRef": {"kind": "GitRepository", "name": "flux-system"},
            "reconcileStrategy": "Revision",
            "interval": "1h",
        }
        assert "values" not in spec  # the chart's own values.yaml
        assert spec["releaseName"] == d.split("-", 1)[1]
    op = one(tree, "002-oci-op/helmrelease.yaml")
    assert op["spec"]["chartRef"]["kind"] == "OCIRepository" and "dependsOn" not in op["spec"]
    root = one(tree, "kustomization.yaml")
    assert root["resources"] == sorted(root["resources"])
    for r in root["resources"]:
        assert r in tree
    for p in tree:
        if p.startswith("sources/") or p.endswith("helmrelease.yaml"):
            assert p in root["resources"]
    # templates and charts are never applied as plain objects
    assert not [r for r in root["resources"] if "/templates/" in r or r.endswith("Chart.yaml")]


def test_flux_local_chart_paths_follow_the_repo_path() -> None:
    t = GitOpsTarget("https://git.example.org/ops.git", "v2", "clusters/a")
    tree = render_bundle(sample_result(), "flux", MANIFESTS, target=t)
    spec = one(tree, "005-gpu-post/helmrelease.yaml")["spec"]["chart"]["spec"]
    assert spec["chart"] == "./clusters/a/005-gpu-post"


# --- failures and writing ----------------------------------------------------------------------


def test_unsupported_component_type_fails_closed() -> None:
    r = sample_result()
    bad = replace(r, components=(replace(r.components[0], type="Kustomize"), *r.components[1:]))
    with pytest.raises(RenderError) as e:
        render_bundle(bad, "helm", MANIFESTS)
    assert [d.rule for d in e.value.diagnostics] == ["render.unsupported-type"]
    assert "cert has type Kustomize" in e.value.diagnostics[0].message


def test_unpinned_chart_and_missing_manifest_fail() -> None:
    r = sample_result()
    bad = replace(r, components=(replace(r.components[0], version=None), *r.components[1:]))
    with pytest.raises(RenderError) as e:
        render_bundle(bad, "flux", MANIFESTS)
    assert "cert has chart cert but no pinned version" in e.value.diagnostics[0].message
    with pytest.raises(RenderError) as e2:
        render_bundle(sample_result(), "helm", {})
    assert e2.value.diagnostics[0].rule == "render.missing-manifest"


def test_write_bundle_replaces_atomically(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_bundle(render_bundle(sample_result(), "helm", MANIFESTS), out)
    (out / "stale.txt").write_text("old")
    tree = render_bundle(sample_result(), "helmfile", MANIFESTS)
    write_bundle(tree, out)
    assert not (out / "stale.txt").exists()
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == list(
        tree
    )
    assert [p.name for p in tmp_path.iterdir()] == ["out"]  # no temporary left behind
    assert os.access(out / "README.md", os.R_OK)


def test_failed_write_leaves_previous_bundle(tmp_path: Path) -> None:
    out = tmp_path / "out"
    good = render_bundle(sample_result(), "helm", MANIFESTS)
    write_bundle(good, out)
    bad = {**good, "../escape.txt": BundleFile(b"x")}
    with pytest.raises(RenderError):
        write_bundle(bad, out)
    assert (out / "checksums.txt").read_bytes() == good["checksums.txt"].data
    assert not (tmp_path / "escape.txt").exists()


def test_checksums_text_format() -> None:
    files = {"b.txt": BundleFile(b"b"), "a/x": BundleFile(b""), "checksums.txt": BundleFile(b"z")}
    assert checksums_text(files).decode() == (
        f"{hashlib.sha256(b'').hexdigest()}  a/x\n{hashlib.sha256(b'b').hexdigest()}  b.txt\n"
    )


def test_sha256sum_accepts_checksums(tmp_path: Path) -> None:
    if shutil.which("sha256sum") is None:
        pytest.skip("sha256sum is not installed")
    write_bundle(render_bundle(sample_result(), "argocd", MANIFESTS), tmp_path / "b")
    proc = subprocess.run(
        ["sha256sum", "--check", "--strict", "checksums.txt"],
        cwd=tmp_path / "b",
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize(
    ("field", "value", "fragment"),
    [
        ("name", "gpu$(reboot)", "component name 'gpu$(reboot)' is not a DNS label"),
        ("namespace", "a b", "namespace of cert 'a b' is not a DNS label"),
        ("version", "1.0\nrm -rf /", "version of cert '1.0\\nrm -rf /' is not a plain token"),
        ("repository", "https://x/'y", 'repository of cert "https://x/\'y" is not a plain token'),
    ],
)
def test_unsafe_names_fail_closed(field: str, value: str, fragment: str) -> None:
    r = sample_result()
    bad = replace(r, components=(replace(r.components[0], **{field: value}), *r.components[1:]))
    with pytest.raises(RenderError) as e:
        render_bundle(bad, "helm", MANIFESTS)
    messages = [d.message for d in e.value.diagnostics if d.rule == "render.unsafe-name"]
    assert any(fragment in m for m in messages), messages


@settings(max_examples=25, deadline=None)
@given(
    st.dictionaries(
        st.from_regex(r"[a-z][a-z0-9-]{0,6}(/[a-z][a-z0-9.-]{0,6}){0,2}", fullmatch=True),
        st.binary(max_size=40),
        min_size=1,
        max_size=6,
    ).filter(
        lambda t: (
            not any(a != b and b.startswith(a + "/") for a in t for b in t)
            and "checksums.txt" not in t
        )
    )
)
def test_write_then_verify_round_trips(files: dict[str, bytes]) -> None:
    import tempfile

    tree = {p: BundleFile(d) for p, d in files.items()}
    tree["checksums.txt"] = BundleFile(checksums_text(tree))
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "b"
        write_bundle(tree, out)
        assert verify_bundle(out) == ()
        victim = sorted(files)[0]
        (out / victim).write_bytes(files[victim] + b"!")
        assert [d.rule for d in verify_bundle(out)] == ["bundle.modified"]


def test_unknown_deployer_is_a_render_error() -> None:
    with pytest.raises(RenderError, match="unknown deployer 'kustomize'; accepted: helm, helmfile"):
        render_bundle(sample_result(), "kustomize", MANIFESTS)


def test_bundle_documents_are_written_without_yaml_dump(monkeypatch: pytest.MonkeyPatch) -> None:
    """Counted work (issue 29): the plain YAML documents of a bundle go through the direct
    emitter; yaml.dump is asked only for one scalar's text at a time, once per distinct scalar
    and place, and for nothing when the same bundles are rendered again."""
    from generator.fast import yamlwrite

    calls: list[tuple[str, Any]] = []
    real = yamlwrite._dump

    def counting(obj: Any, dumper: Any, sort_keys: bool, style: Any) -> str:
        calls.append((dumper.__name__, obj))
        return real(obj, dumper, sort_keys, style)

    monkeypatch.setattr(yamlwrite, "_dump", counting)
    yamlwrite._MEMO.clear()
    yamlwrite._SCALARS.clear()
    first = {d: render_bundle(sample_result(), d, MANIFESTS) for d in DEPLOYERS}
    assert calls, "the scalars' texts come from libyaml"
    whole = [obj for name, obj in calls if name != "_BundleDumper"]
    assert whole == []  # no document went through yaml.dump (none holds a multi-line string)
    for _, obj in calls:  # each a probe of one scalar: {"k": x}, [x] or {x: None}
        assert len(obj) == 1
        (inner,) = obj.values() if isinstance(obj, dict) else obj
        assert not isinstance(inner, dict | list)
    probes = len(calls)
    yamlwrite._MEMO.clear()  # the documents again, from the scalars' memo
    again = {d: render_bundle(sample_result(), d, MANIFESTS) for d in DEPLOYERS}
    assert len(calls) == probes
    assert again == first


@settings(max_examples=800, deadline=None)
@given(
    st.lists(st.sampled_from(["", ".", "..", "...", "a", ".a", "a.", "/", "\\", "b/c"]), max_size=6)
)
def test_unsafe_path_is_its_reference(parts: list[str]) -> None:
    from generator.render.common import unsafe_path, unsafe_path_reference

    p = "".join(parts)
    assert unsafe_path(p) == unsafe_path_reference(p)
