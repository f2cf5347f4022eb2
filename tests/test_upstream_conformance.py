"""Conformance with upstream AICR over its released tree (`../shared/upstream-aicr/v0.11.1`).

Three kinds of evidence that the project answers as upstream does:

1. An independent model of upstream's resolution, written in this file straight from upstream's
   Go code (`pkg/recipe/metadata_store.go` BuildRecipeResult, `metadata.go` Merge /
   mergeComponentRef / TopologicalSort / ApplyRegistryDefaults, `adapter.go`
   GetValuesForComponent, `pkg/bundler` enabled filtering) over the raw YAML, sharing no code
   with `generator/`. For every overlay's own criteria and upstream's documented queries, the
   project's answer must equal the model's: applied overlays, deployment order, components,
   versions, charts, sources, namespaces, values files, values (canonical JSON), dependencies,
   manifests, constraints and validation phases.
2. Fixed answers from upstream's own Go tests (deployment order guards, conformance invariants,
   inheritance chains, criteria parsing, constraint paths, merge and enabled rules).
3. The exchange format: upstream's `examples/recipes/*.yaml` read, and every answer written as
   upstream's RecipeResult and read back to the same recipe.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from generator.catalog.aicr_format import (
    API_VERSION,
    dump_recipe_result,
    load_recipe_result,
    recipe_result_document,
    recipe_result_from,
)
from generator.catalog.criteria import normalise_criteria
from generator.catalog.load import load_catalog
from generator.catalog.resolve import resolve
from generator.cli import main
from generator.core.errors import LoadError, Severity, UsageError
from generator.core.records import Catalog, Criteria, Override, RecipeResult
from generator.core.yamlio import parse_yaml
from generator.validate import constraint_name_ok, validate_catalog
from tests import upstream_oracle as uo

DIMS = ("service", "accelerator", "intent", "os", "platform")


@pytest.fixture
def tree(shared_dir: Path) -> Path:
    return shared_dir / "upstream-aicr" / "v0.11.1"


@pytest.fixture
def recipes(tree: Path) -> Path:
    return tree / "recipes"


@cache
def _load(recipes: Path) -> Catalog:
    cat, diags = load_catalog(recipes)
    assert [d for d in diags if d.severity is Severity.ERROR] == []
    return cat


@pytest.fixture
def catalog(recipes: Path) -> Catalog:
    return _load(recipes)


# ------------------------------------------------------------------ the model of upstream


def _canon(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


class Upstream:
    """upstream's resolution over the raw tree, transcribed from its Go code (see module doc)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.base: dict[str, Any] = {}
        self.overlays: dict[str, dict[str, Any]] = {}
        for p in sorted((root / "overlays").glob("*.yaml")):
            doc = yaml.safe_load(p.read_text())
            if doc.get("kind") not in (None, "", "RecipeMetadata"):
                continue
            if p.name == "base.yaml":
                self.base = doc
            else:
                self.overlays[doc["metadata"]["name"]] = doc
        reg = yaml.safe_load((root / "registry.yaml").read_text())
        self.registry = {c["name"]: c for c in reg["components"]}
        self._files: dict[str, str] = {}

    def _read(self, rel: str) -> Any:
        """A fresh copy of a values file's data (read once)."""
        if rel not in self._files:
            self._files[rel] = json.dumps(yaml.safe_load((self.root / rel).read_text()) or {})
        return json.loads(self._files[rel])

    @staticmethod
    def field_matches(recipe: str, query: str) -> bool:
        if recipe in ("", "any"):
            return True
        if query in ("", "any"):
            return False
        return recipe == query

    def matches(self, crit: dict[str, Any], query: dict[str, str]) -> bool:
        if not all(self.field_matches(str(crit.get(d, "")), query[d]) for d in DIMS):
            return False
        return int(crit.get("nodes", 0) or 0) == 0  # a query here has nodes 0

    @staticmethod
    def specificity(crit: dict[str, Any]) -> int:
        # YAML-loaded criteria: an absent field is "" there, which is not "any", so it counts
        return sum(1 for d in DIMS if crit.get(d, "") != "any") + (1 if crit.get("nodes") else 0)

    def chain(self, name: str) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        seen: set[str] = set()
        while name and name != "base":
            assert name not in seen, f"cycle at {name}"
            seen.add(name)
            o = self.overlays[name]
            out.append(o)
            name = (o.get("spec") or {}).get("base") or ""
        return list(reversed(out))

    @staticmethod
    def merge_ref(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
        out = dict(base)
        for key in ("namespace", "chart", "type", "source", "version", "tag", "valuesFile", "path"):
            if over.get(key):
                out[key] = over[key]
        if over.get("overrides"):
            out["overrides"] = {**(out.get("overrides") or {}), **over["overrides"]}
        for key in ("patches", "dependencyRefs", "expectedResources"):
            if over.get(key):
                out[key] = over[key]
        if over.get("manifestFiles"):
            files = list(out.get("manifestFiles") or [])
            files += [f for f in over["manifestFiles"] if f not in files]
            out["manifestFiles"] = files
        return out

    def merge(self, spec: dict[str, Any], other: dict[str, Any]) -> None:
        cons = {c["name"]: c for c in spec["constraints"]}
        cons.update({c["name"]: c for c in other.get("constraints") or []})
        spec["constraints"] = [cons[k] for k in sorted(cons)]
        refs = {r["name"]: r for r in spec["componentRefs"]}
        for r in other.get("componentRefs") or []:
            refs[r["name"]] = self.merge_ref(refs[r["name"]], r) if r["name"] in refs else dict(r)
        spec["componentRefs"] = [refs[k] for k in sorted(refs)]
        for phase, raw in (other.get("validation") or {}).items():
            spec["validation"][phase] = raw

    def registry_defaults(self, ref: dict[str, Any]) -> None:
        conf = self.registry.get(ref["name"])
        if conf is None:
            return
        kust = conf.get("kustomize") or {}
        if not ref.get("type"):
            ref["type"] = "Kustomize" if kust.get("defaultSource") else "Helm"
        if ref["type"] == "Helm":
            helm = conf.get("helm") or {}
            for key, default in (
                ("source", "defaultRepository"),
                ("version", "defaultVersion"),
                ("namespace", "defaultNamespace"),
            ):
                if not ref.get(key) and helm.get(default):
                    ref[key] = helm[default]
            # v0.11.1's code reads only helm.defaultNamespace and leaves a manifest-only
            # component's namespace empty although its data states `manifest.defaultNamespace`;
            # current upstream states it as helm.defaultNamespace (kube-system for
            # gke-nccl-tcpxo): we follow current upstream (docs/upstream-compatibility.md)
            manifest = conf.get("manifest") or {}
            if not ref.get("namespace") and manifest.get("defaultNamespace"):
                ref["namespace"] = manifest["defaultNamespace"]
            if not ref.get("chart") and helm.get("defaultChart"):
                ref["chart"] = helm["defaultChart"].rsplit("/", 1)[-1]

    @staticmethod
    def merge_values(dst: dict[str, Any], src: dict[str, Any]) -> None:
        for k, v in src.items():
            if isinstance(dst.get(k), dict) and isinstance(v, dict):
                Upstream.merge_values(dst[k], v)
            else:
                dst[k] = v

    def values(self, ref: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        vf = ref.get("valuesFile") or ""
        if vf:
            base_file = f"components/{ref['name']}/values.yaml"
            if vf != base_file and (self.root / base_file).is_file():
                out = self._read(base_file)
            layer = self._read(vf)
            if vf != base_file:
                self.merge_values(out, layer)
            else:
                out = layer
        if ref.get("overrides"):
            self.merge_values(out, json.loads(json.dumps(ref["overrides"])))
        return out

    @staticmethod
    def topological(refs: list[dict[str, Any]]) -> list[str]:
        indeg = {r["name"]: len(r.get("dependencyRefs") or []) for r in refs}
        users: dict[str, list[str]] = {}
        for r in refs:
            for d in r.get("dependencyRefs") or []:
                users.setdefault(d, []).append(r["name"])
        queue = sorted(n for n, k in indeg.items() if k == 0)
        out = []
        while queue:
            n = queue.pop(0)
            out.append(n)
            for u in users.get(n, []):
                indeg[u] -= 1
                if indeg[u] == 0:
                    queue.append(u)
            queue.sort()
        assert len(out) == len(refs), "cycle"
        return out

    def build(self, query: dict[str, str]) -> dict[str, Any]:
        matched = [
            o
            for o in self.overlays.values()
            if isinstance((o.get("spec") or {}).get("criteria"), dict)
            and self.matches(o["spec"]["criteria"], query)
        ]
        # upstream sorts by specificity only (ties in Go's map order); by name here
        matched.sort(key=lambda o: (self.specificity(o["spec"]["criteria"]), o["metadata"]["name"]))
        bspec = self.base["spec"]
        spec: dict[str, Any] = {
            "constraints": list(bspec.get("constraints") or []),
            "componentRefs": [dict(r) for r in bspec.get("componentRefs") or []],
            "validation": dict(bspec.get("validation") or {}),
        }
        applied = ["base"]
        for o in matched:
            for link in self.chain(o["metadata"]["name"]):
                name = link["metadata"]["name"]
                if name not in applied:
                    applied.append(name)
                    self.merge(spec, link.get("spec") or {})
        order = self.topological(spec["componentRefs"])
        for r in spec["componentRefs"]:
            self.registry_defaults(r)
        enabled = {
            r["name"]: r
            for r in spec["componentRefs"]
            if (r.get("overrides") or {}).get("enabled", True) is not False
        }
        return {
            "appliedOverlays": applied,
            "deploymentOrder": [n for n in order if n in enabled],
            "components": {
                n: {
                    "source": r.get("source") or "",
                    "chart": r.get("chart") or "",
                    "version": r.get("version") or "",
                    "namespace": r.get("namespace") or "",
                    "type": r.get("type") or "",
                    "valuesFile": r.get("valuesFile") or "",
                    "values": _canon(self.values(r)),
                    # as the overlays list them (upstream's output keeps that order)
                    "dependencyRefs": [d for d in r.get("dependencyRefs") or [] if d in enabled],
                    "manifestFiles": list(r.get("manifestFiles") or []),
                }
                for n, r in enabled.items()
            },
            "constraints": [
                {
                    k: str(c[k])
                    for k in ("name", "value", "severity", "remediation", "unit")
                    if c.get(k)
                }
                for c in spec["constraints"]
            ],
            "validation": _canon(spec["validation"]),
        }


def ours(result: RecipeResult) -> dict[str, Any]:
    """The project's answer in the model's terms."""
    chart_of = {c.name: (c.chart or "") if c.repository else "" for c in result.components}
    return {
        "appliedOverlays": list(result.applied_overlays),
        "deploymentOrder": [c.name for c in result.components],
        "components": {
            c.name: {
                "source": c.repository or "",
                "chart": chart_of[c.name],
                "version": c.version or "",
                "namespace": c.namespace,
                "type": c.type,
                "valuesFile": c.values_file or "",
                "values": _canon(c.values),
                "dependencyRefs": list(c.dependency_refs),
                "manifestFiles": list(c.manifest_files),
            }
            for c in result.components
        },
        "constraints": [
            {
                k: v
                for k, v in (
                    ("name", c.name),
                    ("value", c.value),
                    ("severity", c.severity),
                    ("remediation", c.remediation),
                    ("unit", c.unit),
                )
                if v
            }
            for c in result.constraints
        ],
        "validation": _canon(dict(result.validation)),
    }


def _query(**kw: str) -> dict[str, str]:
    return {d: kw.get(d, "any") for d in DIMS}


# upstream's documented queries: its examples/recipes criteria, the partial queries its docs
# and tests use (gke/h100/training and gke/training among them), and queries stating dimensions
# no overlay states (answered from the overlays that do match)
DOCUMENTED = [
    _query(service="gke", accelerator="h100", intent="training"),
    _query(service="gke", intent="training"),
    _query(service="eks", intent="training"),
    _query(service="kind", intent="training"),
    _query(service="aks", accelerator="h100", intent="training", os="ubuntu"),
    _query(service="eks", accelerator="gb200", intent="training", os="ubuntu"),
    _query(service="eks", accelerator="h100", intent="inference"),
    _query(service="eks", accelerator="h100", intent="training"),
    _query(service="kind", accelerator="h100", intent="training"),
    _query(service="eks", accelerator="h100", intent="training", os="ubuntu"),
    _query(service="gke", accelerator="h100", intent="inference"),
    _query(service="aks", accelerator="gb200", intent="training"),
    _query(service="eks", accelerator="b200", intent="training", os="rhel", platform="kubeflow"),
    _query(service="oke", accelerator="h100", intent="training"),
    _query(accelerator="h100"),
    _query(intent="inference"),
]


def _all_queries(recipes: Path) -> Iterator[tuple[str, dict[str, str]]]:
    for p in sorted((recipes / "overlays").glob("*.yaml")):
        crit = (yaml.safe_load(p.read_text()).get("spec") or {}).get("criteria")
        if isinstance(crit, dict):
            yield p.stem, {d: str(crit.get(d) or "any") for d in DIMS}
    for q in DOCUMENTED:
        yield "/".join(q[d] for d in DIMS if q[d] != "any"), q


def _oracle_queries(tree: Path) -> dict[tuple[str, ...], Path]:
    """The criteria of every successful recipe case upstream's CLI recorded (answered from the
    tree alone), normalised, with the case's folder."""
    out: dict[tuple[str, ...], Path] = {}
    index = tree / "oracle/index.json"
    if not index.is_file():
        return out
    for r in json.loads(index.read_text())["recipes"]:
        if r["exit_code"] != 0 or r["data"]:
            continue
        flags = r["criteria_flags"]
        given = {
            ("accelerator" if f == "--gpu" else f[2:]): v
            for f, v in zip(flags[::2], flags[1::2], strict=True)
        }
        crit = normalise_criteria(given)
        out[tuple(crit.get(d) or "any" for d in DIMS)] = tree / "oracle/recipes" / r["id"]
    return out


def test_every_overlay_and_documented_query_resolves_as_upstream(
    tree: Path, recipes: Path, catalog: Catalog
) -> None:
    """The model stands in for upstream only where upstream's recorded outputs have no case
    (those are compared with the real CLI's outputs above)."""
    model = Upstream(recipes)
    queries = list(_all_queries(recipes))
    assert len(queries) >= 40  # every overlay with criteria (39) and the documented ones
    recorded = _oracle_queries(tree)
    left = [(label, q) for label, q in queries if tuple(q[d] for d in DIMS) not in recorded]
    assert 0 < len(left) < len(queries)
    for label, q in left:
        expected = model.build(q)
        got = ours(resolve(catalog, normalise_criteria(q)))
        assert got == expected, label


def test_the_model_answers_as_upstreams_cli(tree: Path, recipes: Path) -> None:
    """The model itself, checked against upstream's recorded `aicr query` output for every
    recipe case: applied overlays, deployment order, constraints, and each component's source,
    chart, version, namespace, dependencies and values."""
    model = Upstream(recipes)
    recorded = _oracle_queries(tree)
    assert len(recorded) >= 25
    for key, folder in recorded.items():
        got = model.build(dict(zip(DIMS, key, strict=True)))
        up = json.loads((folder / "hydrated.json").read_text())
        assert got["appliedOverlays"] == up["metadata"]["appliedOverlays"], folder.name
        assert got["deploymentOrder"] == up["deploymentOrder"], folder.name
        assert _canon([{k: v for k, v in c.items() if v} for c in up["constraints"]]) == _canon(
            got["constraints"]
        ), folder.name
        assert set(got["components"]) == set(up["components"]), folder.name
        for n, c in up["components"].items():
            mine = got["components"][n]
            for f in ("source", "chart", "version", "dependencyRefs"):
                assert mine[f] == (c.get(f) or ([] if f == "dependencyRefs" else "")), (n, f)
            # the model follows later upstream for a manifest-only component's namespace
            # (`namespace-manifest-only` in tests/upstream_corpora/v0.11.1.yaml)
            if c.get("namespace") or n != "gke-nccl-tcpxo":
                assert mine["namespace"] == (c.get("namespace") or ""), (folder.name, n)
            assert mine["values"] == _canon(c.get("values") or {}), (folder.name, n)


def test_the_model_is_not_vacuous(recipes: Path) -> None:
    """The model answers differently for different queries, with layered values."""
    model = Upstream(recipes)
    kubeflow = model.build(
        _query(
            service="eks", accelerator="h100", os="ubuntu", intent="training", platform="kubeflow"
        )
    )
    assert "kubeflow-trainer" in kubeflow["deploymentOrder"]
    gpu = json.loads(kubeflow["components"]["gpu-operator"]["values"])
    # base values.yaml (driver.version, fullnameOverride) under values-eks-training.yaml
    base = yaml.safe_load((recipes / "components/gpu-operator/values.yaml").read_text())
    assert gpu["fullnameOverride"] == base["fullnameOverride"]
    assert gpu["driver"]["version"] == base["driver"]["version"]
    assert "devicePlugin" in gpu and "dcgm" in gpu and "toolkit" in gpu
    assert model.build(_query(service="gke", accelerator="h100", intent="training"))[
        "appliedOverlays"
    ] == ["base", "monitoring-hpa"]


# ------------------------------------------------------------------ upstream's Go tests


# TestDeploymentOrderGuards: (criteria, component -> required dependencies, ordered pairs)
ORDER_GUARDS = [
    (
        _query(service="eks", accelerator="h100", intent="inference"),
        {"gpu-operator": ["cert-manager", "kube-prometheus-stack", "skyhook-customizations"]},
        [("skyhook-customizations", "gpu-operator"), ("gpu-operator", "nvsentinel")],
    ),
    (
        _query(service="eks", accelerator="h100", intent="training"),
        {"gpu-operator": ["cert-manager", "kube-prometheus-stack", "skyhook-customizations"]},
        [("skyhook-customizations", "gpu-operator"), ("gpu-operator", "nvsentinel")],
    ),
    (
        _query(
            service="eks", accelerator="h100", intent="inference", os="ubuntu", platform="dynamo"
        ),
        {
            "dynamo-platform": [
                "dynamo-crds",
                "cert-manager",
                "kube-prometheus-stack",
                "gpu-operator",
                "kai-scheduler",
            ]
        },
        [("gpu-operator", "dynamo-platform"), ("kai-scheduler", "dynamo-platform")],
    ),
    (
        _query(
            service="eks", accelerator="gb200", intent="inference", os="ubuntu", platform="dynamo"
        ),
        {"dynamo-platform": ["dynamo-crds", "gpu-operator", "kai-scheduler"]},
        [("gpu-operator", "dynamo-platform"), ("gpu-operator", "nvsentinel")],
    ),
    (
        _query(
            service="eks", accelerator="h100", intent="training", os="ubuntu", platform="kubeflow"
        ),
        {"kubeflow-trainer": ["cert-manager", "kube-prometheus-stack", "gpu-operator"]},
        [("gpu-operator", "kubeflow-trainer"), ("gpu-operator", "nvsentinel")],
    ),
    (
        _query(
            service="eks", accelerator="gb200", intent="training", os="ubuntu", platform="kubeflow"
        ),
        {"kubeflow-trainer": ["cert-manager", "kube-prometheus-stack", "gpu-operator"]},
        [("gpu-operator", "kubeflow-trainer")],
    ),
    (
        _query(service="kind", accelerator="h100", intent="inference", platform="dynamo"),
        {
            "dynamo-platform": [
                "dynamo-crds",
                "cert-manager",
                "kube-prometheus-stack",
                "kai-scheduler",
            ]
        },
        [("kai-scheduler", "dynamo-platform"), ("gpu-operator", "nvsentinel")],
    ),
]


@pytest.mark.parametrize("query,deps,pairs", ORDER_GUARDS)
def test_deployment_order_guards(
    catalog: Catalog,
    query: dict[str, str],
    deps: dict[str, list[str]],
    pairs: list[tuple[str, str]],
) -> None:
    r = resolve(catalog, normalise_criteria(query))
    pos = {c.name: c.order for c in r.components}
    for comp, needed in deps.items():
        found = r.component(comp)
        assert found is not None
        assert set(needed) <= set(found.dependency_refs)
    for before, after in pairs:
        assert pos[before] < pos[after], (before, after)


# TestConformanceRecipeInvariants: components and conformance checks a recipe must have, and
# whether the K8s >= 1.34 (DRA GA) constraint applies
CONFORMANCE = [
    (
        _query(service="kind", accelerator="h100", intent="inference", platform="dynamo"),
        ["kgateway-crds", "kgateway", "dynamo-crds", "dynamo-platform", "prometheus-adapter"],
        ["inference-gateway", "robust-controller", "secure-accelerator-access", "pod-autoscaling"],
        True,
    ),
    (
        _query(service="kind", accelerator="h100", intent="training"),
        ["nvidia-dra-driver-gpu", "kai-scheduler", "prometheus-adapter"],
        ["gang-scheduling", "pod-autoscaling", "cluster-autoscaling", "dra-support"],
        True,
    ),
    (
        _query(
            service="eks", accelerator="h100", os="ubuntu", intent="inference", platform="dynamo"
        ),
        ["kgateway-crds", "kgateway", "dynamo-crds", "dynamo-platform"],
        ["inference-gateway", "ai-service-metrics", "accelerator-metrics"],
        True,
    ),
    (
        _query(service="eks", accelerator="h100", os="ubuntu", intent="training"),
        ["cert-manager", "gpu-operator", "kube-prometheus-stack", "kai-scheduler"],
        ["platform-health", "gpu-operator-health", "gang-scheduling"],
        False,
    ),
    (
        _query(service="gke", accelerator="h100", os="cos", intent="inference", platform="dynamo"),
        ["kgateway", "dynamo-platform", "nvidia-dra-driver-gpu"],
        ["inference-gateway", "gang-scheduling", "robust-controller"],
        True,
    ),
]


@pytest.mark.parametrize("query,components,checks,dra", CONFORMANCE)
def test_conformance_invariants(
    catalog: Catalog, query: dict[str, str], components: list[str], checks: list[str], dra: bool
) -> None:
    r = resolve(catalog, normalise_criteria(query))
    assert set(components) <= {c.name for c in r.components}
    assert set(checks) <= set(r.validation["conformance"]["checks"])
    k8s = [c.value for c in r.constraints if c.name == "K8s.server.version"]
    if dra:
        assert any("1.34" in v for v in k8s), k8s


def test_inheritance_chain_kubeflow(catalog: Catalog) -> None:
    """TestInheritanceChain(Kubeflow): the leaf's chain, each overlay once, gpu-operator's
    valuesFile inherited from eks-training, kubeflow-trainer added by the leaf."""
    r = resolve(catalog, "h100-eks-ubuntu-training-kubeflow")
    assert r.applied_overlays == (
        "base",
        "monitoring-hpa",
        "eks",
        "eks-training",
        "h100-eks-training",
        "h100-eks-ubuntu-training",
        "h100-eks-ubuntu-training-kubeflow",
    )
    gpu = r.component("gpu-operator")
    assert gpu is not None and gpu.values_file == "components/gpu-operator/values-eks-training.yaml"
    assert gpu.values_files == (
        "components/gpu-operator/values.yaml",
        "components/gpu-operator/values-eks-training.yaml",
    )
    assert r.component("kubeflow-trainer") is not None


def test_values_layering_keeps_the_base_file(catalog: Catalog, recipes: Path) -> None:
    """The issue's example: h100-eks-ubuntu-training-kubeflow keeps driver.version, devicePlugin,
    dcgm, toolkit and fullnameOverride from components/gpu-operator/values.yaml."""
    base = yaml.safe_load((recipes / "components/gpu-operator/values.yaml").read_text())
    layer = yaml.safe_load(
        (recipes / "components/gpu-operator/values-eks-training.yaml").read_text()
    )
    gpu = resolve(catalog, "h100-eks-ubuntu-training-kubeflow").component("gpu-operator")
    assert gpu is not None
    for key in ("devicePlugin", "dcgm", "toolkit", "fullnameOverride"):
        assert key in gpu.values and key in base
    assert gpu.values["driver"]["version"] == base["driver"]["version"]
    for key, value in layer.items():  # the valuesFile wins where it speaks (scalars)
        if not isinstance(value, dict):
            assert gpu.values[key] == value


def test_chart_prefix_and_oci_source(catalog: Catalog) -> None:
    """ApplyRegistryDefaults: `nvidia/nvsentinel` -> `nvsentinel`, whatever the source."""
    r = resolve(catalog, "h100-eks-ubuntu-training-kubeflow")
    nvs = r.component("nvsentinel")
    assert nvs is not None and nvs.chart == "nvsentinel"
    assert all("/" not in (c.chart or "") for c in r.components)


def test_manifest_only_component_takes_the_namespace_its_registry_entry_states(
    catalog: Catalog,
) -> None:
    """v0.11.1 states it as `manifest.defaultNamespace` (which v0.11.1's code ignored); current
    upstream as `helm.defaultNamespace: kube-system`. Both spellings give kube-system here."""
    r = resolve(catalog, "h100-gke-cos-training-kubeflow")
    tcpxo = r.component("gke-nccl-tcpxo")
    assert tcpxo is not None
    assert (tcpxo.repository, tcpxo.chart, tcpxo.namespace) == (None, None, "kube-system")
    assert tcpxo.manifest_files


# TestComponentRefIsEnabled and the bundler's filtering: `overrides.enabled: false` and
# `--set NAME:enabled=false` leave the component out; `--set NAME:enabled=true` puts it back
def _disable(catalog: Catalog, component: str, overlay: str) -> Catalog:
    from dataclasses import replace

    ov = catalog.overlays[overlay]
    refs = tuple(
        replace(r, overrides={**(r.overrides or {}), "enabled": False})
        if r.name == component
        else r
        for r in ov.component_refs
    )
    return replace(
        catalog, overlays={**catalog.overlays, overlay: replace(ov, component_refs=refs)}
    )


def test_enabled_false_drops_the_component_and_its_place_in_the_order(catalog: Catalog) -> None:
    leaf = "h100-eks-ubuntu-training-kubeflow"
    full = resolve(catalog, leaf)
    assert full.component("skyhook-operator") is not None
    off = resolve(
        catalog, leaf, overrides=(Override("skyhook-operator", "enabled", False, "--set"),)
    )
    assert off.component("skyhook-operator") is None
    assert off.disabled == ("skyhook-operator",)
    assert [c.name for c in off.components] == [
        c.name for c in full.components if c.name != "skyhook-operator"
    ]
    # upstream parses --set enabled with strconv.ParseBool
    off2 = resolve(
        catalog, leaf, overrides=(Override("skyhook-operator", "enabled", "F", "--set"),)
    )
    assert off2.component("skyhook-operator") is None
    disabled_cat = _disable(catalog, "skyhook-operator", "base")
    assert resolve(disabled_cat, leaf).component("skyhook-operator") is None
    back = resolve(
        disabled_cat, leaf, overrides=(Override("skyhook-operator", "enabled", True, "--set"),)
    )
    sky = back.component("skyhook-operator")
    assert sky is not None
    assert "enabled" not in {k for k in sky.values if k == "enabled" and sky.values[k] is True}


def test_cli_set_enabled_false(recipes: Path) -> None:
    runner = CliRunner()
    args = ["query", "--catalog", str(recipes), "--recipe", "h100-eks-ubuntu-training-kubeflow"]
    out = runner.invoke(main, [*args, "--format", "aicr", "--set", "nvsentinel:enabled=false"])
    assert out.exit_code == 0, out.output
    doc = yaml.safe_load(out.stdout)
    assert "nvsentinel" not in doc["deploymentOrder"]
    assert "nvsentinel" not in {c["name"] for c in doc["componentRefs"]}


# criteria parsing (pkg/recipe/criteria.go Parse*Type and criteria_test.go)
@pytest.mark.parametrize(
    "given,expected",
    [
        ({"service": "EKS"}, Criteria(service="eks")),
        ({"service": " eks "}, Criteria(service="eks")),
        ({"service": "self-managed"}, Criteria()),
        ({"service": "vanilla"}, Criteria()),
        ({"service": "Any"}, Criteria()),
        ({"os": "al2023"}, Criteria(os="amazonlinux")),
        ({"os": "AL2"}, Criteria(os="amazonlinux")),
        (
            {"accelerator": "H100", "intent": "Training"},
            Criteria(accelerator="h100", intent="training"),
        ),
        ({"platform": "KubeFlow"}, Criteria(platform="kubeflow")),
    ],
)
def test_criteria_parsing(given: dict[str, str], expected: Criteria) -> None:
    assert normalise_criteria(given) == expected


@pytest.mark.parametrize(
    "args,code",
    [
        (["--service", "EKS", "--gpu", "H100", "--intent", "training", "--os", "ubuntu"], 0),
        (["--service", "eks", "--accelerator", "h100", "--intent", "training"], 0),
        (["--service", "gke", "--accelerator", "h100", "--intent", "training"], 0),
        (["--service", "gke", "--intent", "training"], 0),
        (["--service", "eks", "--accelerator", "x100"], 2),
        (["--service", "openshift-ish"], 2),
        (["--intent", "serving"], 2),
    ],
)
def test_cli_criteria(recipes: Path, args: list[str], code: int) -> None:
    out = CliRunner().invoke(main, ["query", "--catalog", str(recipes), *args, "--format", "aicr"])
    assert out.exit_code == code, out.output
    if code == 0:
        doc = yaml.safe_load(out.stdout)
        assert doc["apiVersion"] == API_VERSION and doc["kind"] == "RecipeResult"
    else:
        assert "invalid" in out.stderr and "Traceback" not in out.output


def test_invalid_criteria_is_a_usage_error(catalog: Catalog) -> None:
    with pytest.raises(UsageError):
        resolve(catalog, Criteria(accelerator="tpu"))


# pkg/constraints ParseConstraintPath: {Type}.{Subtype}.{Key}, Key = the rest
@pytest.mark.parametrize(
    "name,ok",
    [
        ("K8s.server.version", True),
        ("OS.release.VERSION_ID", True),
        ("OS.sysctl./proc/sys/kernel/osrelease", True),
        ("SystemD.containerd.service.ActiveState", True),
        ("GPU.info.type", True),
        ("K8s", False),
        ("K8s.server", False),
        ("", False),
        ("K8s.server.ver sion", False),
    ],
)
def test_constraint_paths(name: str, ok: bool) -> None:
    assert constraint_name_ok(name) is ok


# ------------------------------------------------------------------ the tree itself


def test_the_tree_validates_clean_and_says_which_manifests_are_templates(
    catalog: Catalog,
) -> None:
    assert [d for d in validate_catalog(catalog) if d.severity is Severity.ERROR] == []
    kinds = {rel: m.kind for rel, m in catalog.manifests.items()}
    assert kinds["components/gpu-operator/manifests/dcgm-exporter.yaml"] == "template"
    assert kinds["components/gke-nccl-tcpxo/manifests/nri-device-injector.yaml"] == "plain"
    assert sum(1 for k in kinds.values() if k == "template") == 6
    assert all(catalog.files[rel].data is None for rel in kinds)  # bytes kept, never parsed
    assert set(catalog.defaulted) == {"signers.yaml", "scale/"}


def test_validate_and_list_through_the_cli(recipes: Path) -> None:
    runner = CliRunner()
    out = runner.invoke(main, ["validate", str(recipes)])
    assert out.exit_code == 0, out.output
    assert out.stdout.endswith(": ok\n")
    assert out.stderr.count("built-in defaults") == 1
    assert "6 manifest(s) are Helm templates" in out.stderr
    assert "components/gpu-operator/manifests/dcgm-exporter.yaml" in out.stderr
    listed = runner.invoke(main, ["list", "--catalog", str(recipes)])
    assert listed.exit_code == 0, listed.output
    assert "h100-eks-ubuntu-training-kubeflow" in listed.stdout


# ------------------------------------------------------------------ exchange format


def test_every_answer_round_trips_through_upstreams_recipe_result(catalog: Catalog) -> None:
    for leaf in catalog.leaves():
        r = resolve(catalog, leaf)
        text = dump_recipe_result(r, catalog)
        doc = parse_yaml(text.encode(), f"{leaf}.yaml")
        back, warnings = recipe_result_from(doc, catalog)
        assert warnings == ()
        assert [c.name for c in back.components] == [c.name for c in r.components]
        assert [_canon(c.values) for c in back.components] == [
            _canon(c.values) for c in r.components
        ]
        assert back.constraints == r.constraints and dict(back.validation) == dict(r.validation)
        assert back.applied_overlays == r.applied_overlays


def test_set_overrides_survive_the_round_trip(catalog: Catalog, tmp_path: Path) -> None:
    r = resolve(
        catalog,
        "h100-eks-ubuntu-training-kubeflow",
        overrides=(Override("gpu-operator", "driver.version", "999.1", "--set"),),
    )
    path = tmp_path / "recipe.yaml"
    path.write_text(dump_recipe_result(r, catalog))
    back, _ = load_recipe_result(path, catalog)
    gpu = back.component("gpu-operator")
    assert gpu is not None and gpu.values["driver"]["version"] == "999.1"
    assert gpu.values == r.component("gpu-operator").values  # type: ignore[union-attr]


def test_aks_training_example_matches_the_answer(tree: Path, catalog: Catalog) -> None:
    """upstream's aks-training example is current for what it shows of overlays, criteria,
    constraints and validation phases (its versions predate the tree)."""
    ex = yaml.safe_load((tree / "examples/recipes/aks-training.yaml").read_text())
    r = resolve(catalog, normalise_criteria(ex["criteria"]))
    doc = recipe_result_document(r, catalog)
    for key in ("criteria", "constraints", "validation"):
        assert _canon(doc[key]) == _canon(ex[key]), key
    assert doc["metadata"]["appliedOverlays"] == ex["metadata"]["appliedOverlays"]


@pytest.mark.parametrize(
    "name", ["eks-training.yaml", "kind.yaml", "eks-gb200-ubuntu-training-with-validation.yaml"]
)
def test_examples_read_as_upstreams_bundler_reads_them(
    tree: Path, catalog: Catalog, name: str
) -> None:
    path = tree / "examples/recipes" / name
    ex = yaml.safe_load(path.read_text())
    r, warnings = load_recipe_result(path, catalog)
    declared = {c["name"] for c in ex["componentRefs"]}
    assert {c.name for c in r.components} == declared
    # names in deploymentOrder that no componentRef declares are reported, not invented
    stray = [n for n in ex["deploymentOrder"] if n not in declared]
    assert [w.message.split("'")[1] for w in warnings] == stray
    assert [c.name for c in r.components] == [n for n in ex["deploymentOrder"] if n in declared]
    model = Upstream(tree / "recipes")
    for ref in ex["componentRefs"]:
        comp = r.component(ref["name"])
        assert comp is not None
        assert _canon(comp.values) == _canon(model.values(ref)), ref["name"]


def test_example_naming_a_missing_manifest_is_refused(tree: Path, catalog: Catalog) -> None:
    # aks-training.yaml names components/nvsentinel/manifests/allow-intra-namespace.yaml,
    # which the tree does not have: upstream's bundler fails reading it too
    with pytest.raises(LoadError) as e:
        load_recipe_result(tree / "examples/recipes/aks-training.yaml", catalog)
    assert "allow-intra-namespace.yaml" in e.value.message


# ------------------------------------------------------------------ rules the v0.11.1 tree
# does not exercise, on a small tree of the same layout (model and project compared again)

_H = "apiVersion: aicr.nvidia.com/v1alpha1\nkind: RecipeMetadata\n"
RULES_TREE = {
    "registry.yaml": """apiVersion: aicr.nvidia.com/v1alpha1
kind: ComponentRegistry
components:
  - name: alpha
    displayName: alpha
    helm: {defaultRepository: https://charts.example.com, defaultChart: example/alpha,
           defaultVersion: "1.0.0", defaultNamespace: alpha-system}
  - name: beta
    displayName: beta
    helm: {defaultRepository: oci://registry.example.com/charts, defaultChart: beta}
  - name: gamma
    displayName: gamma
  - name: delta
    displayName: delta
""",
    "overlays/base.yaml": _H
    + """metadata: {name: base}
spec:
  constraints:
    - {name: K8s.server.version, value: ">= 1.30"}
  componentRefs:
    - name: alpha
      valuesFile: components/alpha/values.yaml
      overrides: {x: {p: 1}}
    - name: beta
      valuesFile: components/beta/values.yaml
      dependencyRefs: [alpha]
  validation:
    conformance: {checks: [c-base], timeout: 10m}
""",
    # explicit `any`: upstream specificity 4, so applied before the specificity-5 overlays
    "overlays/generic.yaml": _H
    + """metadata: {name: generic}
spec:
  criteria: {intent: any}
  componentRefs:
    - name: alpha
      overrides: {x: {r: 9}, z: generic}
""",
    # {service: eks, intent: any} scores 4 upstream too: before eks (5) though it states eks
    "overlays/zz-any-eks.yaml": _H
    + """metadata: {name: zz-any-eks}
spec:
  criteria: {service: eks, intent: any}
  componentRefs:
    - name: alpha
      overrides: {x: {t: 7}}
""",
    "overlays/eks.yaml": _H
    + """metadata: {name: eks}
spec:
  criteria: {service: eks}
  componentRefs:
    - name: alpha
      valuesFile: components/alpha/values-eks.yaml
      overrides: {x: {q: 2}}
    - name: beta
      dependencyRefs: [gamma]
    - name: gamma
      manifestFiles: [components/gamma/manifests/m.yaml]
  validation:
    conformance: {checks: [c-eks]}
""",
    "overlays/eks-training.yaml": _H
    + """metadata: {name: eks-training}
spec:
  base: eks
  criteria: {service: eks, intent: training}
  constraints:
    - {name: OS.sysctl./proc/sys/kernel/osrelease, value: ">= 6.8"}
  componentRefs:
    - name: alpha
      overrides: {enabled: true, y: 3}
    - name: gamma
      manifestFiles: [components/gamma/manifests/n.yaml]
""",
    "overlays/h100-eks.yaml": _H
    + """metadata: {name: h100-eks}
spec:
  base: eks
  criteria: {service: eks, accelerator: h100}
  componentRefs:
    - name: beta
      overrides: {enabled: false}
    # delta waits for the disabled beta: upstream orders every declared component, then
    # leaves the disabled out, so delta still comes after gamma (not first among the ready)
    - name: delta
      dependencyRefs: [beta]
""",
    # no criteria: never matched (only ever applied as another overlay's base)
    "overlays/orphan.yaml": _H
    + """metadata: {name: orphan}
spec:
  componentRefs:
    - name: alpha
      overrides: {orphan: true}
""",
    "components/alpha/values.yaml": "x: {p: 0, s: 5}\nkeep: true\n",
    "components/alpha/values-eks.yaml": "x: {s: 6}\n",
    "components/beta/values.yaml": "b: 1\n",
    "components/gamma/manifests/m.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: m\n  namespace: {{ .Release.Namespace }}\n",
    "components/gamma/manifests/n.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: n}\n",
}


def test_merge_rules_on_a_small_tree(tmp_path: Path) -> None:
    root = tmp_path / "recipes"
    for rel, text in RULES_TREE.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    cat, diags = load_catalog(root)
    assert [d for d in diags if d.severity is Severity.ERROR] == []
    model = Upstream(root)
    queries = [
        _query(service="eks"),
        _query(service="eks", intent="training"),
        _query(service="eks", accelerator="h100"),
        _query(service="eks", accelerator="h100", intent="training"),
        _query(intent="inference"),
    ]
    for q in queries:
        assert ours(resolve(cat, normalise_criteria(q))) == model.build(q), q
    r = resolve(cat, Criteria(service="eks", intent="training"))
    assert r.applied_overlays == ("base", "generic", "zz-any-eks", "eks", "eks-training")
    alpha = r.component("alpha")
    assert alpha is not None
    # base values.yaml -> values-eks.yaml -> overrides merged key by key at the top level
    # (eks's `x` replaced generic's and base's `x` whole), then deep-merged onto the files
    assert alpha.values == {
        "x": {"p": 0, "s": 6, "q": 2},
        "keep": True,
        "z": "generic",
        "enabled": True,
        "y": 3,
    }
    assert (alpha.chart, alpha.namespace, alpha.version) == ("alpha", "alpha-system", "1.0.0")
    beta = r.component("beta")
    assert beta is not None and beta.dependency_refs == ("gamma",)  # replaced, not added to
    gamma = r.component("gamma")
    assert gamma is not None and gamma.manifest_files == (
        "components/gamma/manifests/m.yaml",
        "components/gamma/manifests/n.yaml",
    )
    assert r.validation == {"conformance": {"checks": ["c-eks"]}}  # the phase replaced whole
    assert "orphan" not in r.applied_overlays
    h100 = resolve(cat, Criteria(service="eks", accelerator="h100"))
    assert h100.component("beta") is None and h100.disabled == ("beta",)
    assert [c.name for c in h100.components] == ["alpha", "gamma", "delta"]


def test_evidence_verify_on_a_tree_without_signers(recipes: Path) -> None:
    """The built-in signer policy of a tree without signers.yaml allows nobody (fail closed)."""
    evidence = Path(__file__).resolve().parent.parent / "evidence"
    some = sorted(p for p in evidence.iterdir() if p.is_dir())[0]
    out = CliRunner().invoke(main, ["evidence", "verify", "--catalog", str(recipes), str(some)])
    assert out.exit_code == 1, out.output
    assert out.stderr.count("has no signers.yaml") == 1
    assert "0 verified" in out.stdout and "Traceback" not in out.output


# ------------------------------------------------------------------ upstream's real CLI as the
# oracle: every case of every recorded corpus (tests/upstream_corpora/*.yaml) run through this
# project's CLI and compared semantically (tests/upstream_oracle.py); a case agrees, or differs
# only by the corpus's listed differences, or is listed as known failing (strict xfail)


def _oracle_params() -> list[Any]:
    params: list[Any] = []
    for spec in uo.corpus_files():
        corpus = uo.load_corpus(spec)
        if not (corpus.oracle / "index.json").is_file():
            params.append(pytest.param(corpus, None, id=f"{corpus.name}:absent"))
            continue
        for case in corpus.cases():
            marks = []
            if case.id in corpus.known_failing:
                marks.append(pytest.mark.xfail(reason=corpus.known_failing[case.id], strict=True))
            params.append(pytest.param(corpus, case, id=f"{corpus.name}:{case.id}", marks=marks))
    return params


def _require_corpus(corpus: uo.Corpus) -> None:
    if (corpus.oracle / "index.json").is_file():
        return
    message = f"the recorded corpus {corpus.root} is absent"
    if os.environ.get("CI"):
        pytest.fail(f"{message}; the upstream conformance test must run under CI")
    pytest.skip(f"{message} (a clone without ../shared); CI is unset, so it is skipped")


class _Oracle:
    """Runs cases once per module (both tests below read the same outcomes)."""

    def __init__(self, scratch: Path, helm: Path) -> None:
        self.scratch, self.helm = scratch, helm
        self.outcomes: dict[tuple[str, str], uo.Outcome] = {}

    def run(self, case: uo.Case) -> uo.Outcome:
        key = (case.corpus.name, case.id)
        if key not in self.outcomes:
            self.outcomes[key] = uo.run_case(case, self.scratch, self.helm)
        return self.outcomes[key]


@pytest.fixture(scope="module")
def oracle_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[_Oracle]:
    """A scratch directory and the pinned Helm; every recipe tree loaded once per module (the
    CLI's loader memoised while this module's tests run: the trees do not change meanwhile)."""
    helm = uo.helm_binary()
    if helm is None:
        if os.environ.get("CI"):
            pytest.fail("no helm binary (run .ci/get-helm .tools); required under CI")
        pytest.skip("no helm binary (run .ci/get-helm .tools); CI is unset, so skipped")
    loaded: dict[tuple[Path, str | None], Any] = {}
    real = load_catalog

    def load_once(path: Path, rules: str | None = None) -> Any:
        key = (Path(path).resolve(), rules)
        if key not in loaded:
            loaded[key] = real(path, rules)
        return loaded[key]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("generator.commands.common.load_catalog", load_once)
        yield _Oracle(tmp_path_factory.mktemp("oracle"), helm)


@pytest.mark.parametrize("corpus,case", _oracle_params())
def test_upstream_oracle_case(corpus: uo.Corpus, case: uo.Case | None, oracle_env: _Oracle) -> None:
    _require_corpus(corpus)
    assert case is not None
    outcome = oracle_env.run(case)
    assert outcome.unexplained == [], "\n".join(
        [f"{case.id}: {len(outcome.unexplained)} unlisted difference(s) from upstream:"]
        + [f"  {f}" for f in outcome.unexplained[:40]]
    )


@pytest.mark.parametrize("spec", uo.corpus_files(), ids=lambda p: p.stem)
def test_every_listed_difference_is_used_and_documented(
    spec: Path, oracle_env: _Oracle, update_goldens: bool
) -> None:
    """The list is exactly what the corpus needs: each difference explains some finding, each
    known-failing case exists, and the documentation's table is the list."""
    corpus = uo.load_corpus(spec)
    _require_corpus(corpus)
    ids = [d.id for d in corpus.differences]
    assert len(ids) == len(set(ids)), "duplicate difference ids"
    for d in corpus.differences:
        assert d.upstream and d.ours and d.why, d.id
    text = uo.DOC.read_text()
    if update_goldens:
        uo.DOC.write_text(uo.write_doc_table(corpus, text))
        text = uo.DOC.read_text()
    assert uo.doc_table(corpus, text) == uo.table_rows(corpus), (
        f"{uo.DOC.name}'s table for {corpus.name} is not {spec.name}'s list "
        "(pytest --update-goldens rewrites it)"
    )
    cases = {c.id: c for c in corpus.cases()}
    assert set(corpus.known_failing) <= set(cases)
    used: set[str] = set()
    for case in cases.values():
        used |= set(oracle_env.run(case).explained)
    # a difference with paths must be shown by some case; one without is not visible in the
    # corpus (the model tests above check it)
    stale = [d.id for d in corpus.differences if d.paths and d.id not in used]
    assert stale == [], "listed differences no case shows"


def test_a_leading_line_break_is_its_own_finding() -> None:
    """Two strings that differ only by line breaks at their start are one finding with the
    `LEADING_BREAKS` suffix (the `leading-line-break` difference lists only that); any other
    difference of the same value keeps the plain path, which that difference does not explain."""
    out: list[uo.Finding] = []
    uo.compare("helm:x/csv", "# a\nb\n", "\n# a\nb\n", out)
    uo.compare("helm:x/csv2", "# a\nb\n", "\n# a\nc\n", out)
    uo.compare("helm:x/csv3", "# a\n", "# a\n", out)
    assert [f.path for f in out] == ["helm:x/csv" + uo.LEADING_BREAKS, "helm:x/csv2"]
    corpus = uo.load_corpus(uo.CORPORA / "main-9793720d.yaml")
    diff = next(d for d in corpus.differences if d.id == "leading-line-break")
    path = (
        "helm:gpu-operator-ocp/manifests/ConfigMap/gpu-operator/dcgm-exporter/data.dcgm-metrics.csv"
    )
    case = "bundle/ocp-inference-nim/helm"
    assert diff.explains(case, uo.Finding(path + uo.LEADING_BREAKS, "", "\n"))
    assert not diff.explains(case, uo.Finding(path, "a", "b"))


# node scheduling (upstream's bundler: nodeScheduling paths of the registry)
def test_scheduling_overrides_follow_the_registry_paths() -> None:
    from generator.catalog.overrides import NodeScheduling, scheduling_overrides

    entries = {
        "op": {
            "name": "op",
            "nodeScheduling": {
                "system": {"tolerationPaths": ["operator.tolerations"], "nodeSelectorPaths": ["s"]},
                "accelerated": {"tolerationPaths": ["ds.tolerations"]},
            },
        },
        "plain": {"name": "plain"},
    }
    default = scheduling_overrides(entries, ["op", "plain"], NodeScheduling())
    assert [(o.component, o.path, o.value) for o in default] == [
        ("op", "operator.tolerations", [{"operator": "Exists"}]),
        ("op", "ds.tolerations", [{"operator": "Exists"}]),
    ]
    given = scheduling_overrides(
        entries,
        ["op"],
        NodeScheduling(
            system_selectors=("role=system",),
            system_tolerations=("dedicated=system:NoSchedule",),
            accelerated_tolerations=("nvidia.com/gpu:NoExecute",),
        ),
    )
    assert {o.path: o.value for o in given} == {
        "operator.tolerations": [
            {"key": "dedicated", "operator": "Equal", "value": "system", "effect": "NoSchedule"}
        ],
        "s": {"role": "system"},
        "ds.tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}],
    }
    with pytest.raises(UsageError):
        scheduling_overrides(entries, [], NodeScheduling(system_tolerations=("a=b:Sometimes",)))


def test_bundle_help_lists_upstreams_scheduling_flags(tree: Path) -> None:
    ours = CliRunner().invoke(main, ["bundle", "--help"]).stdout
    upstream = (tree / "oracle/help/bundle.txt").read_text()
    for flag in (
        "--system-node-selector",
        "--system-node-toleration",
        "--accelerated-node-selector",
        "--accelerated-node-toleration",
    ):
        assert flag in upstream and flag in ours, flag


def test_bundle_reads_every_recipe_file_upstream_wrote(
    tree: Path, oracle_env: _Oracle, tmp_path: Path
) -> None:
    """`bundle --recipe <upstream's recipe.yaml>` works for every recipe upstream's CLI wrote
    (every leaf among them, GKE's manifest-only component without a namespace included), and
    both `--set` spellings (name, valueOverrideKeys) give the same bundle."""
    files = sorted((tree / "oracle/recipes").glob("*/recipe.yaml"))
    assert len(files) >= 30
    for f in files:
        if (f.parent / "data").is_dir():
            continue  # the synth case needs its --data tree (run by the oracle cases)
        out = tmp_path / f.parent.name
        args = ["bundle", "--recipe", str(f), "--catalog", str(tree / "recipes"), "-o", str(out)]
        run = uo.invoke(args)
        assert run.exit_code == 0, (f.parent.name, run.stderr[-600:])
    leaf = tree / "oracle/recipes/eks-h100-ubuntu-training/recipe.yaml"
    base = ["bundle", "--recipe", str(leaf), "--catalog", str(tree / "recipes")]
    values = []
    for key in ("gpu-operator", "gpuoperator"):
        out = tmp_path / f"set-{key}"
        run = uo.invoke([*base, "-o", str(out), "--set", f"{key}:driver.version=1.2.3"])
        assert run.exit_code == 0, run.stderr[-600:]
        (folder,) = [p for p in out.iterdir() if p.name.endswith("-gpu-operator")]
        values.append((folder / "values.yaml").read_text())
    assert values[0] == values[1] and "1.2.3" in values[0]


def test_a_tree_may_state_criteria_values_this_project_does_not_know(
    recipes: Path, tmp_path: Path
) -> None:
    """Upstream's later trees state values (a new service) this project has never heard of: the
    tree is read, `validate` warns, and a query naming the value resolves as upstream's would,
    with a warning; a value nothing knows stays an invalid request (exit 2)."""
    import shutil

    root = tmp_path / "recipes"
    shutil.copytree(recipes, root)
    (root / "overlays/newcloud.yaml").write_text(
        _H + "metadata: {name: newcloud}\nspec:\n  base: base\n  criteria: {service: newcloud}\n"
        "  componentRefs:\n    - name: cert-manager\n      overrides: {replicaCount: 3}\n"
    )
    runner = CliRunner()
    checked = runner.invoke(main, ["validate", str(root)])
    assert checked.exit_code == 0 and "[criteria.unknown-value]" in checked.output
    out = runner.invoke(
        main, ["query", "--catalog", str(root), "--service", "NewCloud", "--format", "aicr"]
    )
    assert out.exit_code == 0, out.output
    assert "service=newcloud is known only from this tree's overlays" in out.stderr
    doc = yaml.safe_load(out.stdout)
    assert doc["criteria"]["service"] == "newcloud"
    assert doc["metadata"]["appliedOverlays"] == ["base", "monitoring-hpa", "newcloud"]
    cert = next(r for r in doc["componentRefs"] if r["name"] == "cert-manager")
    assert cert["overrides"] == {"replicaCount": 3}
    bad = runner.invoke(main, ["query", "--catalog", str(root), "--service", "nocloud"])
    assert bad.exit_code == 2 and "newcloud" in bad.stderr


def test_list_leaves_out_an_overlay_whose_every_criterion_is_any(recipes: Path) -> None:
    listed = CliRunner().invoke(main, ["list", "--catalog", str(recipes)])
    assert listed.exit_code == 0, listed.output
    names = {line.split()[0] for line in listed.stdout.splitlines()[1:-1]}
    assert "monitoring-hpa" not in names and "h100-kind-training" in names


# ------------------------------------------------------------------ the site built from upstream's
# August tree answers as upstream's CLI does: its recipes' RecipeResults (the API) and its bundle
# downloads, compared with the recorded oracle through the same model and the same listed
# differences as the CLI's answers above

AUGUST_RECIPES = (
    "eks-h100-ubuntu-training-kubeflow",
    "ocp-inference-nim",
    "gke-h100-cos-training-slurm",
)
AUGUST_BUNDLES = (
    ("eks-h100-ubuntu-training-kubeflow", "helm"),
    ("oke-gb200-ubuntu-training-kubeflow", "argocd"),
)


@pytest.fixture(scope="module")
def august_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`build --catalog` on upstream's August tree, once per module."""
    corpus = uo.load_corpus(uo.CORPORA / "main-9793720d.yaml")
    _require_corpus(corpus)
    tmp = tmp_path_factory.mktemp("august-site")
    (tmp / "evidence").mkdir()
    site = tmp / "site"
    args = ["build", "--catalog", str(corpus.tree), "--evidence", str(tmp / "evidence")]
    args += ["-o", str(site), "--no-cache", "--site-url", "https://example.org/"]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    return site


def _site_name(corpus: uo.Corpus, case: str) -> str:
    up = json.loads((corpus.oracle / "recipes" / case / "hydrated.json").read_text())
    return str(up["metadata"]["appliedOverlays"][-1])


@pytest.mark.slow
def test_site_built_from_the_august_tree_answers_as_upstream(august_site: Path) -> None:
    """The site's RecipeResults (its API) are upstream's answers, but for the listed differences
    (the same model and list as `query --format json` above)."""
    corpus = uo.load_corpus(uo.CORPORA / "main-9793720d.yaml")
    for case in AUGUST_RECIPES:
        up = json.loads((corpus.oracle / "recipes" / case / "hydrated.json").read_text())
        api = august_site / "api" / "v1" / "recipes" / f"{_site_name(corpus, case)}.json"
        profiles = json.loads(api.read_text())["profiles"]
        ours = next(p["recipe"] for p in profiles if p["name"] == "standard")
        findings = uo.hydrated_findings(up, ours)
        assert uo.unexplained(corpus, f"recipe/{case}", findings) == [], case


@pytest.mark.slow
def test_site_bundles_from_the_august_tree_are_upstreams(august_site: Path, helm: Path) -> None:
    """The site renders its downloads through `bundle`'s own path (generator.render.bundled):
    the registry's default node-scheduling tolerations, the DRA driver's gpu-operator version
    annotation and the rest of what upstream's bundler adds are in them, as in upstream's."""
    import tarfile

    corpus = uo.load_corpus(uo.CORPORA / "main-9793720d.yaml")
    for case, deployer in AUGUST_BUNDLES:
        name = _site_name(corpus, case)
        archive = august_site / "downloads" / name / f"{name}-standard-{deployer}.tar.gz"
        out = august_site.parent / "x"
        with tarfile.open(archive) as tar:
            tar.extractall(out, filter="data")
        up_dir = corpus.oracle / "bundles" / case / deployer
        findings = uo.numbered_findings(deployer, up_dir, out / f"{name}-standard-{deployer}", helm)
        assert uo.unexplained(corpus, f"bundle/{case}/{deployer}", findings) == [], case


@pytest.mark.slow
def test_the_august_site_states_the_aks_refusal_instead_of_a_download(august_site: Path) -> None:
    """An AKS recipe's bundles are refused by `bundle` with default flags (the registry's
    wildcard-toleration validation): the site publishes none, and its API and recipe page give
    the rule, the message and the command that renders the bundle, for each deployer the site
    publishes elsewhere."""
    import html

    def detail(name: str) -> dict[str, Any]:
        doc = json.loads((august_site / "api" / "v1" / "recipes" / f"{name}.json").read_text())
        return dict(doc)

    eks = detail("h100-eks-ubuntu-training-kubeflow")
    assert all("refusedDownloads" not in p and p["downloads"] for p in eks["profiles"])
    deployers = {d["deployer"] for p in eks["profiles"] for d in p["downloads"]}
    name = "h100-aks-ubuntu-training-kubeflow"
    assert not (august_site / "downloads" / name).exists()
    page = html.unescape((august_site / "recipes" / f"{name}.html").read_text())
    assert "No bundles were rendered" not in page
    for profile in detail(name)["profiles"]:
        assert profile["downloads"] == []
        refused = profile["refusedDownloads"]
        assert {r["deployer"] for r in refused} == deployers
        for r in refused:
            assert r["rule"] == "bundle.wildcard-toleration" and "wildcard" in r["message"]
            assert "--accelerated-node-toleration nvidia.com/gpu:NoSchedule" in r["command"]
            assert r["command"] in page and r["message"] in page
    assert "bundle.wildcard-toleration" in page
    # the Reproduce block prints no command `bundle` refuses, but the one that renders it
    assert f"aicr-catalog bundle --recipe {name} --scale-profile" not in page
    assert page.count(refused[0]["command"]) == 2  # the refusals' table and the Reproduce block
