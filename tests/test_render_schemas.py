"""What the bundles contain is valid: the project's deployer schemas, the published CRDs in
../shared/crds/, the bundle-info schema, and shell scripts through `bash -n` and shellcheck."""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from generator.catalog.load import load_catalog
from generator.catalog.resolve import resolve
from generator.render import Deployer, render_bundle, write_bundle
from tests.conftest import CATALOG, REPO
from tests.test_render import MANIFESTS, sample_result

SCHEMAS = REPO / "catalog" / "schemas"
REAL = (
    ("gb300-eks-ubuntu-training-slurm", "nvl72-2304"),
    ("h100-gke-cos-inference-dynamo", "standard"),
    ("gb200-aks-ubuntu-training-kubeflow", "standard"),
)
KIND_SCHEMA = {
    ("argoproj.io/v1alpha1", "Application"): "deployers/argocd-application.schema.json",
    ("helm.toolkit.fluxcd.io/v2", "HelmRelease"): "deployers/flux-helmrelease.schema.json",
    ("source.toolkit.fluxcd.io/v1", "HelmRepository"): "deployers/flux-helmrepository.schema.json",
    ("source.toolkit.fluxcd.io/v1", "OCIRepository"): "deployers/flux-ocirepository.schema.json",
    ("kustomize.toolkit.fluxcd.io/v1", "Kustomization"): "deployers/flux-kustomization.schema.json",
    (
        "kustomize.config.k8s.io/v1beta1",
        "Kustomization",
    ): "deployers/kustomize-kustomization.schema.json",
}
CRD_FILES = (
    "argocd-application.yaml",
    "flux-helmreleases.yaml",
    "flux-helmrepositories.yaml",
    "flux-ocirepositories.yaml",
    "flux-kustomizations.yaml",
)


@functools.cache
def validator(rel: str) -> Draft202012Validator:
    schema = json.loads((SCHEMAS / rel).read_text("utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


@functools.cache
def _real_trees() -> tuple[tuple[str, Deployer, Any], ...]:
    catalog, _ = load_catalog(CATALOG)
    out = []
    for name, profile in REAL:
        result = resolve(catalog, name, profile=profile)
        manifests = {
            rel: (CATALOG / rel).read_bytes()
            for c in result.components
            for rel in (*c.manifest_files, *c.pre_manifest_files)
        }
        for d in Deployer:
            out.append((f"{name}/{profile}", d, render_bundle(result, d, manifests)))
    return tuple(out)


def _async_sample() -> Any:
    """The sample with every release option a helmfile may state: gpu's chart installed
    without waiting (an async install, as August's rules mark kai-scheduler), its manifests and
    chart skipping helm-diff's validation."""
    result = sample_result()
    comps = tuple(
        dataclasses.replace(
            c, async_install_timeout=1200, self_ref_crds=True, manifests_use_chart_crds=True
        )
        if c.name == "gpu"
        else c
        for c in result.components
    )
    return dataclasses.replace(result, components=comps)


def all_trees() -> Iterator[tuple[str, Deployer, Any]]:
    for d in Deployer:
        yield "sample", d, render_bundle(sample_result(), d, MANIFESTS)
    for d in (Deployer.HELM, Deployer.HELMFILE):
        yield "sample-async", d, render_bundle(_async_sample(), d, MANIFESTS)
    yield from _real_trees()


def gitops_documents() -> Iterator[tuple[str, dict[str, Any]]]:
    """Every Argo CD / Flux / Kustomize document the deployers wrote (not copied manifests)."""
    for label, d, tree in all_trees():
        if d not in (Deployer.ARGOCD, Deployer.FLUX):
            continue
        for path, f in tree.items():
            if (
                not path.endswith(".yaml")
                or "/templates/" in path  # Helm templates of local charts, copied unchanged
                or path in ("recipe.yaml", "bundle-info.yaml")
                or path.endswith(("values.yaml", "/Chart.yaml"))
            ):
                continue
            for doc in yaml.safe_load_all(f.data):
                yield f"{label}/{d}/{path}", doc


def test_every_gitops_document_matches_the_project_schema() -> None:
    seen: set[tuple[str, str]] = set()
    for where, doc in gitops_documents():
        key = (doc["apiVersion"], doc["kind"])
        assert key in KIND_SCHEMA, f"{where}: no schema for {key}"
        seen.add(key)
        errors = [
            f"{e.json_path}: {e.message}" for e in validator(KIND_SCHEMA[key]).iter_errors(doc)
        ]
        assert errors == [], where
    assert seen == set(KIND_SCHEMA)  # every kind is exercised


def test_project_schemas_reject_what_they_should() -> None:
    app = next(doc for w, doc in gitops_documents() if doc["kind"] == "Application")
    bad = json.loads(json.dumps(app))
    bad["metadata"]["annotations"]["argocd.argoproj.io/sync-wave"] = 1  # must be a string
    assert not validator(KIND_SCHEMA[("argoproj.io/v1alpha1", "Application")]).is_valid(bad)
    hr = next(doc for w, doc in gitops_documents() if doc["kind"] == "HelmRelease")
    bad = json.loads(json.dumps(hr))
    del bad["spec"]["interval"]
    assert not validator(KIND_SCHEMA[("helm.toolkit.fluxcd.io/v2", "HelmRelease")]).is_valid(bad)


@functools.cache
def _crd_validators(shared: str) -> dict[tuple[str, str], Draft202012Validator]:
    out = {}
    for name in CRD_FILES:
        crd = yaml.safe_load((Path(shared) / "crds" / name).read_text("utf-8"))
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        for v in crd["spec"]["versions"]:
            if v.get("served"):
                out[(f"{group}/{v['name']}", kind)] = Draft202012Validator(
                    v["schema"]["openAPIV3Schema"]
                )
    return out


def test_every_gitops_document_matches_the_published_crd(shared_dir: Path) -> None:
    crds = _crd_validators(str(shared_dir))
    checked = 0
    for where, doc in gitops_documents():
        key = (doc["apiVersion"], doc["kind"])
        if key == ("kustomize.config.k8s.io/v1beta1", "Kustomization"):
            continue  # a Kustomize file, not a Kubernetes object: no CRD
        assert key in crds, f"{where}: {key} has no published CRD in ../shared/crds"
        errors = [f"{e.json_path}: {e.message}" for e in crds[key].iter_errors(doc)]
        assert errors == [], where
        checked += 1
    assert checked > 50


def test_bundle_info_matches_its_schema() -> None:
    for label, d, tree in all_trees():
        info = yaml.safe_load(tree["bundle-info.yaml"].data)
        errors = [
            f"{e.json_path}: {e.message}"
            for e in validator("bundle-info.schema.json").iter_errors(info)
        ]
        assert errors == [], f"{label}/{d}"


def test_helmfile_matches_its_schema() -> None:
    for label, d, tree in all_trees():
        if d is Deployer.HELMFILE:
            doc = yaml.safe_load(tree["helmfile.yaml"].data)
            errors = [
                f"{e.json_path}: {e.message}"
                for e in validator("deployers/helmfile.schema.json").iter_errors(doc)
            ]
            assert errors == [], label


def test_every_yaml_file_of_real_bundles_parses() -> None:
    for label, _d, tree in _real_trees():
        for path, f in tree.items():
            if path.endswith(".yaml"):
                data = f.data
                if b"{{" in data:  # a Helm template (Helm renders it): the YAML around its actions
                    data = re.sub(rb"\{\{.*?\}\}", b"", data, flags=re.S)
                list(yaml.safe_load_all(data))  # raises on a parse error
        assert "checksums.txt" in tree, label


def test_values_files_hold_exactly_the_merged_values() -> None:
    catalog, _ = load_catalog(CATALOG)
    for name, profile in REAL:
        result = resolve(catalog, name, profile=profile)
        trees = {d: t for label, d, t in _real_trees() if label == f"{name}/{profile}"}
        assert set(trees) == set(Deployer)
        for dep, tree in trees.items():
            info = yaml.safe_load(tree["bundle-info.yaml"].data)
            by_name = {c.name: c for c in result.components}
            seen = set()
            for r in info["releases"]:
                c = by_name[r["component"]]
                d = r["path"]
                seen.add(c.name)
                if f"{d}/Chart.yaml" in tree:  # local chart: values nested under the name
                    got = yaml.safe_load(tree[f"{d}/values.yaml"].data)
                    assert got == {c.name: dict(c.values)}, f"{name}/{profile}/{dep}/{d}"
                    continue
                assert r["name"] == c.name and c.chart is not None
                if dep is Deployer.FLUX:
                    got = yaml.safe_load(tree[f"{d}/helmrelease.yaml"].data)["spec"].get(
                        "values", {}
                    )
                else:
                    got = yaml.safe_load(tree[f"{d}/values.yaml"].data)
                assert got == dict(c.values), f"{name}/{profile}/{dep}/{c.name}"
            assert seen == set(by_name)


def _shellcheck() -> str:
    exe = shutil.which("shellcheck") or (
        "/usr/bin/shellcheck" if Path("/usr/bin/shellcheck").exists() else None
    )
    if exe is None:
        if os.environ.get("CI"):
            pytest.fail("shellcheck is required in CI (Debian package `shellcheck`)")
        pytest.skip("shellcheck is not installed (apt-get install shellcheck); CI runs this check")
    return exe


def _scripts(tmp_path: Path) -> list[Path]:
    scripts = []
    for label, d, tree in all_trees():
        if d is not Deployer.HELM:
            continue
        out = tmp_path / label.replace("/", "_")
        write_bundle(tree, out)
        scripts += sorted(out.rglob("*.sh"))
    return scripts


def test_scripts_pass_bash_n(tmp_path: Path) -> None:
    scripts = _scripts(tmp_path)
    assert len(scripts) > 20
    for s in scripts:
        proc = subprocess.run(["bash", "-n", str(s)], capture_output=True, text=True, check=False)
        assert proc.returncode == 0, f"{s}: {proc.stderr}"


def test_scripts_pass_shellcheck(tmp_path: Path) -> None:
    exe = _shellcheck()
    scripts = _scripts(tmp_path)
    proc = subprocess.run(
        [exe, "--severity=style", "--shell=bash", *map(str, scripts)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
