"""Loading a recipe tree: documents, records, file safety, headers, and upstream AICR's own layout."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from generator.catalog.load import check_header, load_catalog, read_file
from generator.catalog.resolve import resolve
from generator.cli import main
from generator.core.errors import LoadError
from generator.core.records import Criteria
from generator.core.yamlio import parse_yaml
from generator.validate import validate_catalog

MINIMAL = Path(__file__).resolve().parent / "cases" / "minimal"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A writable copy of the minimal catalog."""
    root = tmp_path / "catalog"
    shutil.copytree(MINIMAL, root)
    return root


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# ---------------------------------------------------------------- what gets loaded


def test_minimal_catalog_loads_every_kind_without_diagnostics() -> None:
    catalog, diags = load_catalog(MINIMAL)
    assert diags == ()
    assert list(catalog.overlays) == [
        "base",
        "eks",
        "eks-training",
        "gb300-eks-training",
        "gb300-eks-ubuntu-training-slurm",
        "h100-eks-ubuntu-training",
    ]
    assert list(catalog.mixins) == ["platform-slurm"]
    assert sorted(catalog.registry.components) == [
        "cert-manager",
        "gpu-operator",
        "network-operator",
        "nfd",
        "slinky-slurm-operator",
    ]
    assert catalog.leaves() == ("gb300-eks-ubuntu-training-slurm", "h100-eks-ubuntu-training")
    assert catalog.unloadable == frozenset()


def test_component_files_are_keyed_by_posix_relative_path() -> None:
    catalog, _ = load_catalog(MINIMAL)
    manifest = "components/network-operator/manifests/nic-cluster-policy.yaml"
    assert set(catalog.files) == {
        "components/cert-manager/values.yaml",
        "components/gpu-operator/values.yaml",
        "components/network-operator/values.yaml",
        "components/nfd/values.yaml",
        "components/slinky-slurm-operator/values.yaml",
        manifest,
    }
    # manifests are kept as bytes (Helm renders them), never understood: no parsed data, the
    # digest of the bytes, and their kind; values files are one mapping
    raw = (MINIMAL / manifest).read_bytes()
    assert catalog.files[manifest].data is None
    assert catalog.files[manifest].sha256 == hashlib.sha256(raw).hexdigest()
    assert catalog.manifests[manifest].kind == "plain"
    assert catalog.files["components/nfd/values.yaml"].data == {
        "worker": {"tolerations": [{"operator": "Exists"}]}
    }


def test_overlay_records_carry_their_fields_and_locations() -> None:
    catalog, _ = load_catalog(MINIMAL)
    base = catalog.overlays["base"]
    assert base.base is None and base.doc.rel == "overlays/base.yaml"
    gpu = base.component_refs[2]
    assert (gpu.name, gpu.values_file, gpu.dependency_refs) == (
        "gpu-operator",
        "components/gpu-operator/values.yaml",
        ("nfd", "cert-manager"),
    )
    assert gpu.json_path == "$.spec.componentRefs[2]"
    assert base.doc.locate(gpu.json_path) == (17, 7)
    assert base.constraints[0].name == "K8s.server.version"
    assert base.validation == {"readiness": {"checks": ["gpu-nodes-ready"]}}
    leaf = catalog.overlays["gb300-eks-ubuntu-training-slurm"]
    assert leaf.mixins == ("platform-slurm",)
    assert leaf.criteria == Criteria("eks", "gb300", "ubuntu", "training", "slurm")
    reg = catalog.registry.components["gpu-operator"]
    assert (reg.version, reg.namespace, reg.value_override_keys) == (
        "v26.7.0",
        "gpu-operator",
        ("gpuoperator",),
    )


def test_empty_base_means_the_root_and_any_is_a_wildcard(tree: Path) -> None:
    write(
        tree,
        "overlays/eks.yaml",
        "kind: RecipeMetadata\napiVersion: aicr.run/v1beta1\nmetadata:\n  name: eks\n"
        "spec:\n  base: ''\n  criteria:\n    service: eks\n    accelerator: any\n",
    )
    catalog, diags = load_catalog(tree)
    assert diags == ()
    assert catalog.overlays["eks"].base == "base"
    assert catalog.overlays["eks"].criteria == Criteria(service="eks")


def test_files_that_are_not_yaml_are_ignored(tree: Path) -> None:
    write(tree, "overlays/README.md", "# notes\n")
    write(tree, "components/nfd/README.md", "not: [yaml\n")
    write(tree, "components/nfd/templates/job.tpl", "{{ .Values }}\n")
    catalog, diags = load_catalog(tree)
    assert diags == ()
    assert not [p for p in catalog.files if not p.endswith(".yaml")]


def test_a_directory_named_like_an_overlay_is_reported(tree: Path) -> None:
    # it used to be skipped, so the recipe of that name silently disappeared (issue 17, item 10)
    (tree / "overlays" / "archive.yaml").mkdir()
    catalog, diags = load_catalog(tree)
    assert [(d.path, d.rule) for d in diags] == [("overlays/archive.yaml", "file.not-regular")]
    assert "archive" in catalog.unloadable and "archive" not in catalog.overlays


def test_criteria_yaml_extends_the_known_values(tree: Path) -> None:
    write(
        tree,
        "criteria.yaml",
        "apiVersion: catalog.aicr.run/v1alpha1\nkind: CriteriaValues\n"
        "spec:\n  os: [ubuntu2404]\n  service: [nebius, coreweave]\n",
    )
    catalog, diags = load_catalog(tree)
    assert diags == ()
    assert catalog.extra_criteria == {"os": ("ubuntu2404",), "service": ("nebius", "coreweave")}


def test_missing_catalog_directory_is_a_load_error(tmp_path: Path) -> None:
    with pytest.raises(LoadError) as e:
        load_catalog(tmp_path / "nope")
    assert [d.rule for d in e.value.diagnostics] == ["catalog.missing"]


# ---------------------------------------------------------------- collecting, not stopping


def test_every_broken_file_is_reported_and_the_rest_still_loads(tree: Path) -> None:
    write(tree, "overlays/eks.yaml", "kind: RecipeMetadata\n  bad: [\n")
    write(tree, "mixins/platform-slurm.yaml", "")
    write(tree, "components/nfd/values.yaml", "a: 1\na: 2\n")
    catalog, diags = load_catalog(tree)
    assert [(d.path, d.rule) for d in diags] == [
        ("overlays/eks.yaml", "yaml.parse"),
        ("mixins/platform-slurm.yaml", "yaml.empty"),
        ("components/nfd/values.yaml", "yaml.duplicate-key"),
    ]
    assert catalog.unloadable == frozenset({"eks", "platform-slurm"})
    assert "eks-training" in catalog.overlays and "eks" not in catalog.overlays
    assert "components/nfd/values.yaml" not in catalog.files


def test_schema_errors_keep_the_document_out(tree: Path) -> None:
    write(
        tree,
        "overlays/eks.yaml",
        "kind: RecipeMetadata\napiVersion: aicr.run/v1beta1\nmetadata:\n  name: eks\n"
        "spec:\n  criteria:\n    service: eks\n  componentRefs:\n    - name: Bad_Name\n",
    )
    catalog, diags = load_catalog(tree)
    assert [(d.line, d.json_path, d.rule) for d in diags] == [
        (9, "$.spec.componentRefs[0].name", "schema.pattern")
    ]
    assert "eks" in catalog.unloadable and "eks" not in catalog.overlays


# ---------------------------------------------------------------- file safety


def test_read_file_accepts_a_symlink_inside_the_catalog(tree: Path) -> None:
    link = tree / "components" / "nfd" / "values-copy.yaml"
    link.symlink_to("values.yaml")
    raw, diags = read_file(tree, link)
    assert diags == () and raw == (tree / "components/nfd/values.yaml").read_bytes()


def test_read_file_refuses_a_symlink_leaving_the_catalog(tree: Path) -> None:
    secret = tree.parent / "secret.yaml"
    secret.write_text("token: x\n", encoding="utf-8")
    link = tree / "overlays" / "evil.yaml"
    link.symlink_to(secret)
    raw, diags = read_file(tree, link)
    assert raw is None
    assert [(d.path, d.line, d.rule) for d in diags] == [
        ("overlays/evil.yaml", 0, "file.symlink-escape")
    ]


def test_read_file_refuses_a_fifo_without_opening_it(tree: Path) -> None:
    fifo = tree / "overlays" / "pipe.yaml"
    os.mkfifo(fifo)  # opening it for reading would block forever: the test would hang
    raw, diags = read_file(tree, fifo)
    assert raw is None and [d.rule for d in diags] == ["file.not-regular"]


def test_read_file_reports_a_dangling_symlink(tree: Path) -> None:
    link = tree / "overlays" / "gone.yaml"
    link.symlink_to("nothing-here.yaml")
    raw, diags = read_file(tree, link)
    assert raw is None and [d.rule for d in diags] == ["file.unreadable"]


def test_a_symlinked_directory_is_not_walked_into(tree: Path) -> None:
    outside = tree.parent / "outside"
    write(outside, "values.yaml", "stolen: true\n")
    (tree / "components" / "linked").symlink_to(outside, target_is_directory=True)
    catalog, diags = load_catalog(tree)
    assert diags == ()
    assert not [p for p in catalog.files if p.startswith("components/linked/")]


# ---------------------------------------------------------------- headers


@pytest.mark.parametrize(
    ("text", "rule", "where", "fragment"),
    [
        ("- a\n", "header.missing", (1, 1), "found list"),
        ("kind: RecipeMixin\n", "header.missing", (1, 1), "missing apiVersion"),
        ("apiVersion: aicr.run/v1beta1\n", "header.missing", (1, 1), "missing kind"),
        (
            "apiVersion: aicr.run/v1beta1\nkind: RecipeMetadata\n",
            "header.kind",
            (2, 1),
            "kind is 'RecipeMetadata', expected 'RecipeMixin'",
        ),
        (
            "kind: RecipeMixin\napiVersion: v1\n",
            "header.api-version",
            (2, 1),
            "unknown apiVersion 'v1' for RecipeMixin; accepted: a, aicr.run/v1beta1",
        ),
    ],
)
def test_header_problems_name_what_was_seen_and_accepted(
    text: str, rule: str, where: tuple[int, int], fragment: str
) -> None:
    doc = parse_yaml(text, "mixins/m.yaml")
    (d,) = check_header(doc, "RecipeMixin", ("a", "aicr.run/v1beta1"))
    assert (d.rule, (d.line, d.col)) == (rule, where)
    assert fragment in d.message


def test_wrong_kind_and_wrong_api_version_are_both_reported() -> None:
    doc = parse_yaml("kind: Pod\napiVersion: v1\n", "overlays/x.yaml")
    assert [d.rule for d in check_header(doc, "RecipeMetadata", ("aicr.run/v1beta1",))] == [
        "header.kind",
        "header.api-version",
    ]


# ---------------------------------------------------------------- upstream AICR's own layout

LEGACY = "aicr.nvidia.com/v1alpha1"

# A recipe tree as upstream AICR lays it out (recipes/ with registry.yaml, overlays/, mixins/,
# components/ and the directories the bundler does not read), every document in the legacy
# header, overlays relying on the implicit base and on registry defaults for chart pins.
UPSTREAM_TREE = {
    "registry.yaml": f"""\
apiVersion: {LEGACY}
kind: ComponentRegistry
components:
  - name: cert-manager
    displayName: cert-manager
    helm:
      defaultRepository: https://charts.jetstack.io
      defaultChart: cert-manager
      defaultVersion: v1.20.2
      defaultNamespace: cert-manager
  - name: gpu-operator
    displayName: NVIDIA GPU Operator
    valueOverrideKeys: [gpuoperator]
    helm:
      defaultRepository: https://helm.ngc.nvidia.com/nvidia
      defaultChart: nvidia/gpu-operator
      defaultVersion: v26.7.0
      defaultNamespace: gpu-operator
  - name: slinky-slurm-operator
    displayName: Slinky
    helm:
      defaultRepository: oci://ghcr.io/slinkyproject/charts
      defaultChart: slurm-operator
      defaultVersion: "0.4.1"
""",
    "overlays/base.yaml": f"""\
kind: RecipeMetadata
apiVersion: {LEGACY}
metadata:
  name: base
spec:
  componentRefs:
    - name: cert-manager
      type: Helm
      valuesFile: components/cert-manager/values.yaml
    - name: gpu-operator
      type: Helm
      valuesFile: components/gpu-operator/values.yaml
      dependencyRefs: [cert-manager]
""",
    "overlays/eks.yaml": f"""\
kind: RecipeMetadata
apiVersion: {LEGACY}
metadata:
  name: eks
spec:
  # no base: upstream's implicit root
  criteria:
    service: eks
  constraints:
    - name: K8s.server.version
      value: ">= 1.32"
""",
    "overlays/gb300-eks-ubuntu-training-slurm.yaml": f"""\
kind: RecipeMetadata
apiVersion: {LEGACY}
metadata:
  name: gb300-eks-ubuntu-training-slurm
spec:
  base: eks
  criteria:
    service: eks
    accelerator: gb300
    os: ubuntu
    intent: training
    platform: slurm
  mixins: [platform-slurm]
  componentRefs:
    - name: gpu-operator
      valuesFile: components/gpu-operator/values-gb300.yaml
      manifestFiles: [components/gpu-operator/manifests/driver.yaml]
""",
    "mixins/platform-slurm.yaml": f"""\
kind: RecipeMixin
apiVersion: {LEGACY}
metadata:
  name: platform-slurm
spec:
  componentRefs:
    - name: slinky-slurm-operator
      type: Helm
      dependencyRefs: [cert-manager]
""",
    "components/cert-manager/values.yaml": "crds:\n  enabled: true\n",
    "components/gpu-operator/values.yaml": "driver:\n  enabled: true\n",
    "components/gpu-operator/values-gb300.yaml": "driver:\n  enabled: false\n",
    "components/gpu-operator/manifests/driver.yaml": (
        "apiVersion: nvidia.com/v1alpha1\nkind: NVIDIADriver\nmetadata:\n  name: a\n---\n"
        "apiVersion: nvidia.com/v1alpha1\nkind: NVIDIADriver\nmetadata:\n  name: b\n"
    ),
    # upstream files the recipe loader does not interpret
    "components/gpu-operator/upgrades.yaml": (
        f"apiVersion: {LEGACY}\nkind: ComponentUpgrades\ncomponent: gpu-operator\ntransitions: []\n"
    ),
    "checks/gpu-operator/health-check.yaml": "apiVersion: v1\nkind: ConfigMap\n",
    "validators/catalog.yaml": "validators: []\n",
    "version-pin-exemptions.yaml": "exemptions: []\n",
    "evidence/README.md": "pointers\n",
}


@pytest.fixture
def upstream(tmp_path: Path) -> Path:
    root = tmp_path / "recipes"
    for rel, text in UPSTREAM_TREE.items():
        write(root, rel, text)
    return root


def test_upstream_layout_with_legacy_header_loads_and_resolves(upstream: Path) -> None:
    catalog, diags = load_catalog(upstream)
    assert diags == ()
    assert {o.api_version for o in (*catalog.overlays.values(), *catalog.mixins.values())} == {
        LEGACY
    }
    assert catalog.overlays["eks"].base == "base"  # implicit
    assert validate_catalog(catalog, load_diagnostics=diags) == ()

    query = Criteria("eks", "gb300", "ubuntu", "training", "slurm")
    result = resolve(catalog, query)
    assert result.name == "gb300-eks-ubuntu-training-slurm"
    assert result.applied_overlays == ("base", "eks", "gb300-eks-ubuntu-training-slurm")
    assert result.mixins == ("platform-slurm",)
    assert [c.name for c in result.components] == [
        "cert-manager",
        "gpu-operator",
        "slinky-slurm-operator",
    ]
    gpu = result.component("gpu-operator")
    assert gpu is not None
    # pins and chart from the registry; values from the leaf's own values file
    assert (gpu.version, gpu.chart, gpu.namespace) == ("v26.7.0", "gpu-operator", "gpu-operator")
    assert gpu.values == {"driver": {"enabled": False}}
    assert gpu.manifest_files == ("components/gpu-operator/manifests/driver.yaml",)
    slurm = result.component("slinky-slurm-operator")
    # neither the recipe nor the registry names a namespace: none, as upstream leaves it
    assert slurm is not None and slurm.namespace == ""
    assert resolve(catalog, query).digest == result.digest


def test_upstream_layout_through_the_cli(upstream: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(upstream.parent)
    runner = CliRunner()
    validated = runner.invoke(main, ["validate", "recipes"])
    assert (validated.exit_code, validated.stdout) == (0, "validate recipes: ok\n")
    queried = runner.invoke(
        main,
        [
            "query",
            "--catalog",
            "recipes",
            "--service",
            "eks",
            "--accelerator",
            "gb300",
            "--os",
            "ubuntu",
            "--intent",
            "training",
            "--platform",
            "slurm",
            "--format",
            "json",
        ],
    )
    assert queried.exit_code == 0, queried.output
    assert '"name": "gb300-eks-ubuntu-training-slurm"' in queried.stdout


def test_a_catalog_reached_through_a_symlink_is_not_an_escape(tree: Path) -> None:
    """The root itself may be a link (a checkout mounted elsewhere): links inside it stay inside."""
    (tree / "components" / "nfd" / "values-copy.yaml").symlink_to("values.yaml")
    alias = tree.parent / "catalog-link"
    alias.symlink_to(tree, target_is_directory=True)
    catalog, diags = load_catalog(alias)
    assert diags == ()
    assert "components/nfd/values-copy.yaml" in catalog.files
    assert validate_catalog(catalog, load_diagnostics=diags) == ()


def test_loading_is_independent_of_where_the_tree_lives(tree: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "deeper" / "copy"
    shutil.copytree(tree, elsewhere)
    first, _ = load_catalog(tree)
    second, _ = load_catalog(elsewhere)
    assert first.overlays == second.overlays
    assert first.files == second.files
    assert first.registry == second.registry
