"""Upstream rules by version (generator/catalog/rules.py): v0.11.1's and August 2026's
(`../shared/upstream-aicr/main-9793720d`), detected from a tree's apiVersions or stated with
--upstream-rules, and each August rule on the tree that exercises it: configuration profiles
(ADR-015), registry-default versions, phases merged field by field, dependencyRefs added, the
coverage refusal, null deleting a value, Slurm accounting, the RecipeResult written and read."""

from __future__ import annotations

import ast
import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from generator.catalog.load import load_catalog
from generator.catalog.resolve import merge_phase, resolve
from generator.catalog.rules import DEFAULT_RULES, MAIN_2026_08, RULES, V0_11_1, rules_of
from generator.cli import main
from generator.core.errors import ResolveError, Severity, UsageError
from generator.core.records import Catalog, Criteria, Override

REPO = Path(__file__).resolve().parent.parent
AKS_SLURM = ["--service", "aks", "--gpu", "h100", "--os", "ubuntu", "--intent", "training",
             "--platform", "slurm"]  # fmt: skip
GKE_SLURM = ["--service", "gke", "--gpu", "h100", "--os", "cos", "--intent", "training",
             "--platform", "slurm"]  # fmt: skip


@pytest.fixture
def august(shared_dir: Path) -> Path:
    return shared_dir / "upstream-aicr" / "main-9793720d" / "recipes"


@cache
def _load(root: Path, rules: str | None = None) -> Catalog:
    cat, diags = load_catalog(root, rules)
    assert [d.format() for d in diags if d.severity is Severity.ERROR] == []
    return cat


def _run(*args: str) -> tuple[int, str, str]:
    r = CliRunner().invoke(main, list(args))
    return r.exit_code, r.stdout, r.stderr


def _aicr(august: Path, *flags: str) -> dict[str, Any]:
    code, out, err = _run("query", *flags, "--catalog", str(august), "--format", "aicr")
    assert code == 0, err
    doc: dict[str, Any] = yaml.safe_load(out)
    return doc


def _ref(doc: dict[str, Any], name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(r for r in doc["componentRefs"] if r["name"] == name)
    return found


# ------------------------------------------------------------------ which rules


def test_rules_are_detected_from_the_tree(august: Path, shared_dir: Path) -> None:
    assert _load(august).rules == MAIN_2026_08.name
    assert _load(shared_dir / "upstream-aicr" / "v0.11.1" / "recipes").rules == V0_11_1.name
    assert _load(REPO / "catalog").rules == V0_11_1.name  # the project's own catalog
    assert rules_of(_load(august, V0_11_1.name)) is V0_11_1


def test_upstream_rules_option_states_them(august: Path) -> None:
    flags = ["query", *AKS_SLURM, "--catalog", str(august), "--format", "aicr"]
    code, out, _ = _run(*flags, "--upstream-rules", "v0.11.1")
    assert code == 0
    doc = yaml.safe_load(out)  # no profile, v0.11.1's header and merge rules
    assert doc["apiVersion"] == V0_11_1.recipe_api_version
    assert "selectedProfile" not in doc["metadata"]
    code, _, err = _run(*flags, "--upstream-rules", "nope")
    assert code == 2 and "nope" in err


def test_rule_switches_live_in_one_module() -> None:
    """No module but rules.py names an upstream version's rules: code reads a rule's field."""
    names = {r.name for r in RULES.values()} | {"main-9793720d"}
    offenders = []
    for path in sorted((REPO / "generator").rglob("*.py")):
        if path.name == "rules.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {
            id(n.body[0].value)
            for n in ast.walk(tree)
            if isinstance(n, ast.Module | ast.FunctionDef | ast.ClassDef)
            and n.body
            and isinstance(n.body[0], ast.Expr)
        }
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in docstrings
                and node.value in names
            ):
                offenders.append(f"{path.relative_to(REPO)}:{node.lineno}: {node.value!r}")
    assert offenders == []


# ------------------------------------------------------------------ the tree loads


def test_the_august_tree_validates(august: Path) -> None:
    code, out, err = _run("validate", str(august))
    assert code == 0, err
    assert "helm.unpinned" not in err + out


def test_every_leaf_lists_queries_and_bundles(august: Path, tmp_path: Path) -> None:
    code, _out, err = _run("list", "--catalog", str(august))
    assert code == 0, err
    cat = _load(august)
    failed = []
    for leaf in cat.leaves():
        try:
            resolve(cat, leaf)
        except (ResolveError, UsageError) as e:
            failed.append(f"{leaf}: {e.message}")
    assert failed == []
    out_dir = tmp_path / "b"
    code, _, err = _run(
        "bundle", *GKE_SLURM, "--catalog", str(august), "--deployer", "helm", "-o", str(out_dir)
    )
    assert code == 0, err


def test_registry_default_versions_pin_charts(august: Path) -> None:
    cat = _load(august)
    r = resolve(cat, Criteria(service="eks", accelerator="h100", os="ubuntu", intent="training"))
    assert all(c.version for c in r.components if c.repository), "every chart has a version"
    code, out, err = _run("validate", str(august), "--upstream-rules", V0_11_1.name)
    assert code == 1 and "helm.unpinned" in out + err  # v0.11.1 wanted the overlay's own
    assert "profile.ignored" in out + err


# ------------------------------------------------------------------ profiles


def test_profile_default_applies_and_is_recorded(august: Path) -> None:
    doc = _aicr(august, *AKS_SLURM)
    assert doc["apiVersion"] == MAIN_2026_08.profiled_api_version
    sel = doc["metadata"]["selectedProfile"]
    assert (sel["name"], sel["value"]) == ("gpuStack", "azure-managed")
    assert sel["ownedPaths"]["nvsentinel"] == [
        "enabled",
        "labeler.assumeDriverInstalled",
        "metadata-collector.runtimeClassName",
    ]
    assert _ref(doc, "nvsentinel")["overrides"]["labeler"] == {"assumeDriverInstalled": True}
    constraints = {c["name"]: c["value"] for c in doc["constraints"]}
    assert constraints["K8s.aks-gpu-pools.gpu-driver"] == "Install"
    gke = _aicr(august, *GKE_SLURM)
    assert gke["metadata"]["selectedProfile"]["advertiser"] == "external"
    assert _ref(gke, "gpu-operator")["overrides"]["devicePlugin"] == {"enabled": False}


def test_profile_choice_selects_another_value(august: Path) -> None:
    doc = _aicr(august, *AKS_SLURM, "--profile", "gpuStack=operator-managed")
    assert doc["metadata"]["selectedProfile"]["value"] == "operator-managed"
    op = _ref(doc, "gpu-operator")["overrides"]
    assert op["driver"] == {"enabled": True} and op["operator"] == {"runtimeClass": "nvidia"}
    dra = _ref(doc, "nvidia-dra-driver-gpu")["overrides"]
    assert dra["nvidiaDriverRoot"] == "/run/nvidia/driver"  # the fragment supersedes the overlay


@pytest.mark.parametrize(
    ("choice", "message"),
    [
        ("gpuStack=nope", "has no value 'nope'; valid values: azure-managed, operator-managed"),
        ("other=x", "declares profile 'gpuStack', not 'other'"),
        ("gpuStack = x", "must match [A-Za-z0-9._-]+"),
        (" gpuStack=x", "exact form name=value"),
    ],
)
def test_bad_profile_choice_is_an_invalid_request(august: Path, choice: str, message: str) -> None:
    code, _, err = _run("query", *AKS_SLURM, "--catalog", str(august), "--profile", choice)
    assert code == 2 and message in err


def test_profile_choice_without_a_declaration(august: Path) -> None:
    eks = ["--service", "eks", "--gpu", "h100", "--os", "ubuntu", "--intent", "training"]
    code, _, err = _run("query", *eks, "--catalog", str(august), "--profile", "gpuStack=x")
    assert code == 2 and "declares no profile" in err


# ------------------------------------------------------------------ merge and query rules


def test_phases_merge_field_by_field() -> None:
    base = {"checks": ["a", "b"], "constraints": [{"name": "x", "value": "1"}], "timeout": "5m"}
    assert merge_phase(base, {"checks": ["b", "c"]})["checks"] == ["a", "b", "c"]
    assert merge_phase(base, {"checks": []})["checks"] == []
    merged = merge_phase(base, {"constraints": [{"name": "x", "value": "2"}, {"name": "y"}]})
    assert merged["constraints"] == [{"name": "x", "value": "2"}, {"name": "y"}]
    assert merge_phase(base, {"timeout": ""})["timeout"] == "5m"


def test_slurm_leaves_keep_inherited_checks(august: Path) -> None:
    doc = _aicr(august, *AKS_SLURM)
    assert len(doc["validation"]["conformance"]["checks"]) == 11
    assert doc["validation"]["performance"] == {}  # `checks: []` cleared what it inherited


def test_dependency_refs_are_added(august: Path) -> None:
    aks = ["--service", "aks", "--gpu", "h100", "--os", "ubuntu", "--intent", "training"]
    deps = _ref(_aicr(august, *aks, "--platform", "kubeflow"), "gpu-operator")["dependencyRefs"]
    assert "network-operator" in deps and "nodewright-customizations" in deps


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--service", "eks", "--gpu", "h100", "--os", "al2", "--intent", "training"],
            "no recipe provides os 'amazonlinux' for criteria(service=eks, accelerator=h100, "
            "intent=training, os=amazonlinux)",
        ),
        (["--service", "gke"], "service 'gke' for criteria(service=gke) requires os (valid: cos)"),
    ],
)
def test_uncovered_dimensions_are_refused(august: Path, flags: list[str], message: str) -> None:
    code, _, err = _run("query", *flags, "--catalog", str(august))
    assert code == 2 and message in err


def test_null_deletes_a_value_and_accounting_is_configured(august: Path) -> None:
    code, out, err = _run("query", *GKE_SLURM, "--catalog", str(august), "--format", "json")
    assert code == 0, err
    refs = {c["name"]: c for c in json.loads(out)["spec"]["componentRefs"]}
    storage = refs["kube-prometheus-stack"]["values"]["prometheus"]["prometheusSpec"]
    assert "emptyDir" not in storage["storageSpec"]  # `emptyDir: null` deletes, as Helm does
    assert "slurm-accounting-mariadb" not in refs  # accounting disabled: not installed
    doc = _aicr(august, *GKE_SLURM)
    assert doc["configuration"] == {"slurm": {"accounting": {"mode": "disabled"}}}
    assert _ref(doc, "slinky-slurm")["overrides"]["accounting"] == {"enabled": False}


# ------------------------------------------------------------------ the RecipeResult


def test_recipe_result_carries_health_checks(august: Path) -> None:
    doc = _aicr(august, "--accelerator", "h100")
    assert doc["apiVersion"] == MAIN_2026_08.recipe_api_version
    assert doc["metadata"]["version"] == MAIN_2026_08.recipe_metadata_version
    asserts = _ref(doc, "gpu-operator")["healthCheckAsserts"]
    assert asserts == (august / "checks" / "gpu-operator" / "health-check.yaml").read_text()


def test_bundle_reads_both_headers(august: Path, tmp_path: Path) -> None:
    """`bundle --recipe` reads August's v1alpha3 file (as upstream wrote it) and our own."""
    ours = tmp_path / "ours.yaml"
    ours.write_text(yaml.safe_dump(_aicr(august, *GKE_SLURM)))
    upstream = august.parent / "oracle" / "bundles" / "aks-h100-ubuntu-inference-dynamo"
    for recipe in (ours, upstream / "recipe.yaml"):
        out = tmp_path / recipe.stem
        code, _, err = _run(
            "bundle", "--recipe", str(recipe), "--catalog", str(august), "--deployer", "helm",
            "-o", str(out), "--accelerated-node-toleration", "nvidia.com/gpu:NoSchedule",
        )  # fmt: skip
        assert code == 0, err


def test_default_rules_are_v0_11_1() -> None:
    assert DEFAULT_RULES is V0_11_1


def test_openshift_is_an_alias_of_ocp(august: Path) -> None:
    doc = _aicr(august, "--service", "OpenShift", "--intent", "inference", "--platform", "nim")
    assert doc["criteria"]["service"] == "ocp"


def test_argocd_helm_bundle_is_a_chart_of_applications(
    august: Path, tmp_path: Path, helm: Path
) -> None:
    """`--deployer argocd-helm` (upstream's since 2026): one chart whose templates are the Argo
    CD Applications, rendered here by a real Helm with install-time values."""
    import subprocess

    out = tmp_path / "b"
    code, _, err = _run(
        "bundle", *GKE_SLURM, "--catalog", str(august), "--deployer", "argocd-helm", "-o", str(out)
    )
    assert code == 0, err

    def template(*sets: str) -> list[dict[str, Any]]:
        args = [str(helm), "template", "x", str(out)]
        for s in sets:
            args += ["--set", s]
        done = subprocess.run(args, capture_output=True, text=True, check=True)
        return [d for d in yaml.safe_load_all(done.stdout) if d]

    apps = {a["metadata"]["name"]: a for a in template("repoURL=oci://r.example/ns")}
    assert "aicr-stack" in apps and "gpu-operator" in apps and "slinky-slurm-pre" in apps
    op = apps["gpu-operator"]["spec"]["source"]
    assert yaml.safe_load(op["helm"]["values"])["devicePlugin"]["enabled"] is False
    pre = apps["slinky-slurm-pre"]["spec"]["source"]
    assert pre["repoURL"] == "oci://r.example/ns/aicr-bundle" and pre["path"].endswith("-pre")
    apps = {
        a["metadata"]["name"]: a
        for a in template(
            "repoURL=oci://r.example/ns",
            "deployer.includeRootApp=false",
            "deployer.namePrefix=t1-",
            "gpu-operator.driver.version=580.1",
        )
    }
    assert "t1-aicr-stack" not in apps
    values = yaml.safe_load(apps["t1-gpu-operator"]["spec"]["source"]["helm"]["values"])
    assert values["driver"]["version"] == "580.1"  # install-time values over the static ones


def test_bundle_takes_the_profile_choice(august: Path, tmp_path: Path) -> None:
    aks = ["--service", "aks", "--gpu", "h100", "--os", "ubuntu", "--intent", "training"]
    flags = [*aks, "--platform", "kubeflow", "--catalog", str(august)]
    out = tmp_path / "b"
    keyed = ["--accelerated-node-toleration", "nvidia.com/gpu:NoSchedule"]  # AKS needs keyed
    choice = ["--profile", "gpuStack=operator-managed"]
    code, _, err = _run("bundle", *flags, *choice, *keyed, "-o", str(out))
    assert code == 0, err
    values = yaml.safe_load(next(out.glob("*-nvsentinel/values.yaml")).read_text())
    assert values["labeler"] == {"assumeDriverInstalled": False}
    recipe = yaml.safe_load((out / "recipe.yaml").read_text())
    assert recipe["metadata"]["selectedProfile"] == {
        "name": "gpuStack",
        "value": "operator-managed",
    }
    upstream = august.parent / "oracle" / "bundles" / "aks-h100-ubuntu-inference-dynamo"
    code, _, err = _run(
        "bundle", "--recipe", str(upstream / "recipe.yaml"), "--catalog", str(august),
        "--profile", "gpuStack=azure-managed", "-o", str(tmp_path / "c"),
    )  # fmt: skip
    assert code == 2 and "records the value" in err


def test_aks_refuses_a_wildcard_accelerated_toleration(august: Path, tmp_path: Path) -> None:
    """The registry's blocking validation (CheckWildcardAcceleratedToleration, AKS): exit 2
    until keyed tolerations are given, as upstream's bundler."""
    aks = ["--service", "aks", "--gpu", "h100", "--os", "ubuntu", "--intent", "inference",
           "--platform", "dynamo", "--catalog", str(august)]  # fmt: skip
    code, _, err = _run("bundle", *aks, "-o", str(tmp_path / "a"))
    assert code == 2 and "wildcard (keyless) accelerated-node toleration" in err
    keyed = ["--accelerated-node-toleration", "nvidia.com/gpu:NoSchedule"]
    code, _, err = _run("bundle", *aks, *keyed, "-o", str(tmp_path / "b"))
    assert code == 0, err


def test_bundle_annotates_the_dra_driver_with_the_gpu_operator_version(
    august: Path, tmp_path: Path
) -> None:
    """August's bundler (upstream #973): the DRA driver's pods carry the gpu-operator chart
    version, the annotations the values give kept; recorded as the bundler's own override."""
    out = tmp_path / "b"
    code, _, err = _run(
        "bundle",
        "--catalog",
        str(august),
        *("--service", "eks", "--accelerator", "h100", "--os", "ubuntu", "--intent", "training"),
        *("--platform", "kubeflow", "--deployer", "helm", "-o", str(out)),
    )
    assert code == 0, err
    info = yaml.safe_load((out / "bundle-info.yaml").read_text())
    gpu = next(r for r in info["releases"] if r["name"] == "gpu-operator")
    dra = next(r for r in info["releases"] if r["name"] == "nvidia-dra-driver-gpu")
    version = _installed_version(out / gpu["path"] / "install.sh")
    values = yaml.safe_load((out / dra["path"] / "values.yaml").read_text())
    for block in ("controller", "kubeletPlugin"):
        assert values[block]["podAnnotations"]["aicr.run/gpu-operator-chart-version"] == version
    origins = [o["origin"] for o in info["overrides"] if o["component"] == "nvidia-dra-driver-gpu"]
    assert any(o.startswith("bundler:") for o in origins)
    readme = (out / "README.md").read_text().splitlines()
    again = [line for line in readme if line.startswith("aicr-catalog bundle ")]
    assert again and not any("bundler" in line for line in again)  # no flag gives it


def test_dra_annotation_keeps_given_annotations_and_needs_both_components() -> None:
    from generator.catalog.overrides import dra_chart_version_overrides

    given = {"controller": {"podAnnotations": {"a": "b"}}}
    placed = {o.path: o.value for o in dra_chart_version_overrides({"gpu-operator": "v1"}, given)}
    assert placed["controller.podAnnotations"] == {
        "a": "b",
        "aicr.run/gpu-operator-chart-version": "v1",
    }
    assert placed["kubeletPlugin.podAnnotations"] == {"aicr.run/gpu-operator-chart-version": "v1"}
    assert dra_chart_version_overrides({}, given) == ()
    assert dra_chart_version_overrides({"gpu-operator": "v1"}, None) == ()


def _installed_version(install_sh: Path) -> str:
    words = install_sh.read_text().split()
    return words[words.index("--version") + 1]


def test_scheduling_tolerations_are_appended_to_the_recipes_own() -> None:
    """August: the default (or given) tolerations join those the recipe's overrides set at a
    registry path (BCM's control-plane ones), each once; None (v0.11.1) replaces them."""
    from generator.catalog.overrides import NodeScheduling, scheduling_overrides

    entries = {
        "dra": {"nodeScheduling": {"system": {"tolerationPaths": ["controller.tolerations"]}}}
    }
    cp = {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists"}
    own = {"dra": {"controller": {"tolerations": [cp, {"operator": "Exists"}]}}}
    appended = scheduling_overrides(entries, ["dra"], NodeScheduling(), own)
    assert [o.value for o in appended] == [[cp, {"operator": "Exists"}]]
    replaced = scheduling_overrides(entries, ["dra"], NodeScheduling(), None)
    assert [o.value for o in replaced] == [[{"operator": "Exists"}]]
    assert [o.value for o in scheduling_overrides(entries, ["dra"], NodeScheduling(), {})] == [
        [{"operator": "Exists"}]
    ]


BCM_TRAINING = ["--service", "bcm", "--accelerator", "h100", "--os", "ubuntu", "--intent",
                "training"]  # fmt: skip


def _bundle(august: Path, out: Path, deployer: str, *flags: str) -> Path:
    code, _, err = _run(
        "bundle", *BCM_TRAINING, "--catalog", str(august), "--deployer", deployer, "-o", str(out),
        *flags,
    )  # fmt: skip
    assert code == 0, err
    return out


def _helmfile_releases(out: Path) -> dict[str, dict[str, Any]]:
    doc = yaml.safe_load((out / "helmfile.yaml").read_text())
    return {r["name"]: r for r in doc["releases"]}


def test_async_components_install_without_waiting(august: Path, tmp_path: Path) -> None:
    """August's bundler installs its "async components" (kai-scheduler) without Helm's readiness
    wait and with a 20-minute timeout, in helm and helmfile bundles; every other release waits.
    Under v0.11.1's rules every release waits (the project's own catalog is read under them)."""
    policy = MAIN_2026_08.async_install
    assert policy is not None and policy.components == ("kai-scheduler",)
    assert V0_11_1.async_install is None
    releases = _helmfile_releases(_bundle(august, tmp_path / "hf", "helmfile"))
    doc = yaml.safe_load((tmp_path / "hf" / "helmfile.yaml").read_text())
    assert doc["helmDefaults"]["wait"] is True
    kai = releases["kai-scheduler"]
    assert (kai["wait"], kai["timeout"]) == (False, policy.timeout_seconds)
    waiting = [r for n, r in releases.items() if n != "kai-scheduler"]
    assert waiting and all("wait" not in r and "timeout" not in r for r in waiting)

    helm = _bundle(august, tmp_path / "helm", "helm")
    info = yaml.safe_load((helm / "bundle-info.yaml").read_text())
    scripts = {r["name"]: (helm / r["path"] / "install.sh").read_text() for r in info["releases"]}
    assert "--wait" not in scripts["kai-scheduler"].split("set -euo")[1]
    assert 'TIMEOUT="${AICR_TIMEOUT:-20m}"' in scripts["kai-scheduler"]
    others = [s for n, s in scripts.items() if n != "kai-scheduler"]
    assert others and all('--wait --timeout "${TIMEOUT}"' in s for s in others)
    assert all('TIMEOUT="${AICR_TIMEOUT:-10m}"' in s for s in others)

    for out in (helm, tmp_path / "hf"):  # the README says so
        assert "`kai-scheduler` is installed without waiting" in (out / "README.md").read_text()

    old = _bundle(august, tmp_path / "old", "helmfile", "--upstream-rules", "v0.11.1")
    assert "wait" not in _helmfile_releases(old)["kai-scheduler"]
    assert "without waiting" not in (old / "README.md").read_text()


def test_async_install_leaves_the_recipe_and_its_digest_alone(august: Path) -> None:
    """The install policy is the bundler's: the bundled recipe's values and digest are the
    resolved recipe's, only the marked components differ, by `async_install_timeout`."""
    from generator.catalog.overrides import NodeScheduling
    from generator.render.bundled import bundled_recipe

    cat = _load(august)
    crit = Criteria(service="bcm", accelerator="h100", os="ubuntu", intent="training")
    bundled = bundled_recipe(cat, lambda extra: resolve(cat, crit, overrides=extra),
                             NodeScheduling()).result  # fmt: skip
    marked = {c.name: c.async_install_timeout for c in bundled.components}
    assert marked.pop("kai-scheduler") == 1200
    assert set(marked.values()) == {None}
    plain = resolve(cat, crit, overrides=bundled.overrides)
    assert plain.digest == bundled.digest
    assert [c.values for c in plain.components] == [c.values for c in bundled.components]


def test_rebuild_keeps_the_choice_and_the_overrides(august: Path) -> None:
    """A module rendering a recipe it resolved itself (preflight, the release diff, the
    samples) goes through render_bundled with `rebuild`: when the bundler adds overrides the
    recipe is resolved again with its configuration-profile choice and its own overrides after
    the bundler's; a refusal is raised as `bundle` raises it."""
    from generator.catalog.overrides import NodeScheduling
    from generator.render.bundled import rebuild, render_bundled

    cat = _load(august)
    crit = Criteria(service="aks", accelerator="h100", os="ubuntu", intent="training")
    mine = Override("gpu-operator", "driver.version", "580.0.0", "gpu-operator:driver.version=x")
    result = resolve(cat, crit, overrides=(mine,), choice="gpuStack=operator-managed")
    with pytest.raises(UsageError) as refused:  # the wildcard accelerated toleration
        render_bundled(cat, rebuild(cat, result), "helm")
    assert refused.value.diagnostics[0].rule == "bundle.wildcard-toleration"
    keyed = NodeScheduling(accelerated_tolerations=("nvidia.com/gpu:NoSchedule",))
    bundled, tree = render_bundled(cat, rebuild(cat, result), "helm", scheduling=keyed)
    assert bundled.result.selected_profile is not None
    assert bundled.result.selected_profile.value == "operator-managed"
    assert bundled.result.overrides[-1] == mine  # the user's last, after the bundler's
    assert len(bundled.result.overrides) > 1 and "deploy.sh" in tree
    gpu = bundled.result.component("gpu-operator")
    assert gpu is not None and gpu.values["driver"]["version"] == "580.0.0"
