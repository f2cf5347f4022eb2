"""`aicr-catalog bundle` and `bundle verify` end to end through click's CliRunner, on the
repository's catalog."""

from __future__ import annotations

import hashlib
import re
import shlex
import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from generator.cli import main
from generator.commands.bundle import recipe_file
from tests.conftest import CATALOG

RECIPE = "gb300-eks-ubuntu-training-slurm"


def run(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(main, ["bundle", *args], catch_exceptions=False)
    return res.exit_code, res.stdout, res.stderr


def bundle(tmp: Path, *extra: str, deployer: str = "helm", recipe: str = RECIPE) -> Path:
    out = tmp / f"b-{deployer}"
    code, stdout, stderr = run(
        "--recipe", recipe, "-d", deployer, "--catalog", str(CATALOG), "-o", str(out), *extra
    )
    assert code == 0, stderr
    assert stdout.startswith(f"wrote {out}/ (")
    return out


def info(out: Path) -> dict:  # type: ignore[type-arg]
    data: dict = yaml.safe_load((out / "bundle-info.yaml").read_text())  # type: ignore[type-arg]
    return data


# --- bundle ------------------------------------------------------------------------------------


@pytest.mark.parametrize("deployer", ["helm", "helmfile", "argocd", "flux"])
def test_bundle_writes_a_verified_tree(tmp_path: Path, deployer: str) -> None:
    out = bundle(tmp_path, deployer=deployer)
    i = info(out)
    assert i["deployer"] == deployer and i["recipe"]["name"] == RECIPE
    code, stdout, stderr = run("verify", str(out))
    assert (code, stderr) == (0, "")
    n = len((out / "checksums.txt").read_text().splitlines())
    assert stdout == f"{out}: {n} files match checksums.txt\n"


def test_bundle_by_criteria_equals_bundle_by_name(tmp_path: Path) -> None:
    by_name = bundle(tmp_path / "n")
    out = tmp_path / "c"
    code, _, stderr = run(
        "--recipe",
        "service=eks,accelerator=gb300,os=ubuntu,intent=training,platform=slurm",
        "--catalog",
        str(CATALOG),
        "-o",
        str(out),
    )
    assert code == 0, stderr
    assert (out / "checksums.txt").read_bytes() == (by_name / "checksums.txt").read_bytes()


def test_scale_profile_is_recorded(tmp_path: Path) -> None:
    std = info(bundle(tmp_path / "s"))
    big = info(bundle(tmp_path / "l", "--scale-profile", "nvl72-2304"))
    assert std["scaleProfile"]["name"] == "standard"
    assert big["scaleProfile"]["name"] == "nvl72-2304" and big["scaleProfile"]["version"]
    assert std["recipe"]["digest"] != big["recipe"]["digest"]


def test_archive_via_cli_is_reproducible(tmp_path: Path) -> None:
    outs = []
    for sub in ("a", "b"):
        out = tmp_path / sub
        code, stdout, stderr = run(
            "--recipe", RECIPE, "-d", "flux", "--catalog", str(CATALOG), "-o", str(out), "--archive"
        )
        assert code == 0, stderr
        name = f"{RECIPE}-standard-flux.tar.gz"
        assert stdout.startswith(f"wrote {out / name} (")
        assert sorted(p.name for p in out.iterdir()) == [name]
        outs.append((out / name).read_bytes())
    assert outs[0] == outs[1]


# --- overrides ---------------------------------------------------------------------------------


def test_accepted_override_is_recorded_and_changes_the_digest(tmp_path: Path) -> None:
    plain = bundle(tmp_path / "p")
    over = bundle(
        tmp_path / "o",
        "--set",
        "gpu-operator:driver.version=590.1.2",
        "--set",
        "gpu-operator:dcgmExporter.enabled=false",
    )
    a, b = info(plain), info(over)
    assert a["overrides"] == []
    assert b["overrides"] == [
        {
            "component": "gpu-operator",
            "path": "driver.version",
            "value": "590.1.2",
            "origin": "--set gpu-operator:driver.version=590.1.2",
        },
        {
            "component": "gpu-operator",
            "path": "dcgmExporter.enabled",
            "value": False,
            "origin": "--set gpu-operator:dcgmExporter.enabled=false",
        },
    ]
    assert a["recipe"]["digest"] != b["recipe"]["digest"]
    (gpu,) = over.glob("*-gpu-operator")
    values = yaml.safe_load((gpu / "values.yaml").read_text())
    assert values["driver"]["version"] == "590.1.2"
    assert values["dcgmExporter"]["enabled"] is False


def test_set_file_deep_merges(tmp_path: Path) -> None:
    f = tmp_path / "extra.yaml"
    f.write_text("driver:\n  licensingConfig:\n    nlsEnabled: true\n")
    out = bundle(tmp_path / "o", "--set-file", f"gpu-operator={f}")
    (gpu,) = out.glob("*-gpu-operator")
    values = yaml.safe_load((gpu / "values.yaml").read_text())
    assert values["driver"]["licensingConfig"] == {"nlsEnabled": True}
    plain = bundle(tmp_path / "p")
    (gpu0,) = plain.glob("*-gpu-operator")
    before = yaml.safe_load((gpu0 / "values.yaml").read_text())
    # deep merge: every other driver key survives
    assert {k: v for k, v in values["driver"].items() if k != "licensingConfig"} == {
        k: v for k, v in before["driver"].items() if k != "licensingConfig"
    }
    assert info(out)["overrides"][0]["origin"] == "--set-file gpu-operator=extra.yaml"
    assert str(tmp_path) not in (out / "bundle-info.yaml").read_text()


NOWHERE = "/nonexistent/never-written"


def _reject(*args: str) -> tuple[int, str, str]:
    return run("--recipe", RECIPE, "--catalog", str(CATALOG), "-o", NOWHERE, *args)


def test_unknown_component_is_rejected() -> None:
    code, stdout, stderr = _reject("--set", "nosuch:a.b=1")
    assert (code, stdout) == (1, "")
    assert stderr == "error: override --set nosuch:a.b=1: unknown component 'nosuch'\n"
    assert not Path(NOWHERE).exists()


def test_component_outside_the_recipe_is_rejected() -> None:
    code, _, stderr = run(
        "--recipe",
        "gb300-gke-cos-training-slurm",
        "--catalog",
        str(CATALOG),
        "-o",
        NOWHERE,
        "--set",
        "aws-efa:a=1",
    )
    assert code == 1
    assert stderr == (
        "error: override --set aws-efa:a=1: component 'aws-efa' is not part of "
        "recipe 'gb300-gke-cos-training-slurm'\n"
    )


def test_disabled_component_is_rejected(tmp_path: Path) -> None:
    cat = tmp_path / "catalog"
    shutil.copytree(CATALOG, cat)
    leaf = cat / "overlays" / f"{RECIPE}.yaml"
    doc = yaml.safe_load(leaf.read_text())
    doc["spec"].setdefault("componentRefs", []).append({"name": "nvsentinel", "enabled": False})
    leaf.write_text(yaml.safe_dump(doc, sort_keys=False))
    code, _, stderr = run(
        "--recipe",
        RECIPE,
        "--catalog",
        str(cat),
        "-o",
        str(tmp_path / "o"),
        "--set",
        "nvsentinel:replicas=2",
    )
    assert code == 1
    assert stderr == (
        f"error: override --set nvsentinel:replicas=2: component 'nvsentinel' is "
        f"disabled in recipe '{RECIPE}'\n"
    )
    assert not (tmp_path / "o").exists()


def test_owned_value_contradiction_is_rejected(tmp_path: Path) -> None:
    from generator.catalog.load import load_catalog

    catalog, _ = load_catalog(CATALOG)
    profile = catalog.profiles["nvl72-2304"]
    owned = next(
        ov
        for ov in profile.owned_values
        if ov.component == "gpu-operator" and isinstance(ov.value, int)
    )
    other = owned.value + 1
    origin = f"--set gpu-operator:{owned.path}={other}"
    code, stdout, stderr = _reject("--scale-profile", "nvl72-2304", *origin.split(" ", 1))
    assert (code, stdout) == (1, "")
    assert stderr == (
        f"error: override {origin} contradicts gpu-operator:{owned.path}={owned.value!r}, owned "
        f"by scale profile 'nvl72-2304' {profile.version} ({owned.rationale.strip()}); drop the "
        "override or choose another profile\n"
    )
    # setting the very value the profile owns is no contradiction
    out = bundle(
        tmp_path,
        "--scale-profile",
        "nvl72-2304",
        "--set",
        f"gpu-operator:{owned.path}={owned.value}",
    )
    assert info(out)["overrides"][0]["value"] == owned.value


def test_malformed_override_is_a_usage_error() -> None:
    code, _, stderr = _reject("--set", "gpu-operator=1")
    assert code == 2
    assert stderr.endswith(
        "error: --set gpu-operator=1: expected COMPONENT:PATH=VALUE, got 'gpu-operator=1'\n"
    )


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    code, _, stderr = run("--recipe", RECIPE, "--catalog", str(CATALOG))
    assert (code, stderr) == (2, "error: give the output directory with -o DIR\n")
    code, _, stderr = run("-o", str(tmp_path / "x"), "--catalog", str(CATALOG))
    assert code == 2 and "give --recipe NAME" in stderr
    code, _, stderr = run("--recipe", "colour=blue", "-o", str(tmp_path / "x"))
    assert code == 2 and "criteria are DIM=VALUE" in stderr


def test_unknown_recipe_exits_1(tmp_path: Path) -> None:
    code, _, stderr = run(
        "--recipe",
        "gb300-eks-ubuntu-training-slurn",
        "--catalog",
        str(CATALOG),
        "-o",
        str(tmp_path / "x"),
    )
    assert code == 1
    assert "no recipe named 'gb300-eks-ubuntu-training-slurn'" in stderr
    assert not (tmp_path / "x").exists()


# --- bundle --recipe FILE ------------------------------------------------------------------------


def _recipe_file(tmp_path: Path) -> Path:
    """The catalog's own recipe written as upstream's RecipeResult by `query --format aicr`."""
    res = CliRunner().invoke(
        main,
        ["query", "--recipe", RECIPE, "--catalog", str(CATALOG), "--format", "aicr"],
        catch_exceptions=False,
    )
    assert res.exit_code == 0, res.stderr
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(res.stdout)
    return recipe


@pytest.mark.parametrize("deployer", ["helm", "flux"])
def test_bundle_from_a_recipe_result_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, deployer: str
) -> None:
    recipe = _recipe_file(tmp_path)
    by_name = bundle(tmp_path / "n", "--set", "gpu-operator:driver.version=1", deployer=deployer)
    out = tmp_path / "f"
    code, stdout, stderr = run(
        "--recipe",
        str(recipe),
        "-d",
        deployer,
        "--catalog",
        str(CATALOG),
        "-o",
        str(out),
        "--set",
        "gpu-operator:driver.version=1",
    )
    assert code == 0, stderr
    assert stdout.startswith(f"wrote {out}/ (")
    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert files == sorted(
        p.relative_to(by_name).as_posix() for p in by_name.rglob("*") if p.is_file()
    )
    # a RecipeResult file carries no scale profile (upstream has none): the header comments, the
    # recipe document and its digest say `standard 0.0.0`; every value, chart and template is the
    # same as the bundle by name
    profile_free = re.compile(r"scale profile standard [0-9.]+|standard [0-9.]+")
    for rel in files:
        if rel.endswith(("values.yaml", ".sh", "helmrelease.yaml")) or "/templates/" in rel:
            a, b = ((d / rel).read_text() for d in (out, by_name))
            assert profile_free.sub("", a) == profile_free.sub("", b), rel
    release = (
        out / "012-gpu-operator" / ("values.yaml" if deployer == "helm" else "helmrelease.yaml")
    )
    text = release.read_text()
    assert re.search(r"^ +version: 1$", text, re.M), text  # the --set reached the values
    readme = (out / "README.md").read_text()
    command = readme.split("```shell\n", 1)[1].split("\n```", 1)[0]
    assert f"--recipe {recipe} --deployer {deployer} --set" in command
    assert "--scale-profile" not in command
    assert run("verify", str(out))[0] == 0


def test_recipe_file_takes_no_scale_profile_nor_criteria(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recipe = _recipe_file(tmp_path)
    base = ["--recipe", str(recipe), "--catalog", str(CATALOG), "-o", str(tmp_path / "o")]
    code, _, stderr = run(*base, "--scale-profile", "large")
    assert code == 2 and "--scale-profile does not apply to a RecipeResult file" in stderr
    # --nodes, as upstream's, only writes the registry's nodeCountPaths (none in this catalog)
    nodes_out = tmp_path / "with-nodes"
    code, _, stderr = run(*base[:-1], str(nodes_out), "--nodes", "4")
    assert code == 0, stderr
    assert (nodes_out / "checksums.txt").is_file()
    code, _, stderr = run(*base, "--service", "eks")
    assert code == 2 and "not both" in stderr
    code, _, stderr = run("--recipe", str(tmp_path / "nope.yaml"), "-o", str(tmp_path / "o"))
    assert code == 2 and "no such file" in stderr
    assert not (tmp_path / "o").exists()


def test_recipe_file_is_told_apart_from_names_and_criteria() -> None:
    assert recipe_file("recipe.yaml") == Path("recipe.yaml")
    assert recipe_file("out/r.json") == Path("out/r.json")
    assert recipe_file("./gb300") == Path("gb300")
    assert recipe_file("gb300-eks-ubuntu-training-slurm") is None
    assert recipe_file("service=eks,accelerator=gb300") is None
    assert recipe_file(None) is None


UPSTREAM_RECIPE = """\
kind: RecipeResult
apiVersion: aicr.nvidia.com/v1alpha1
metadata:
  appliedOverlays: [base, gke-cos-training]
criteria:
  service: gke
  accelerator: h100
  intent: training
componentRefs:
  - name: gpu-operator
    namespace: gpu-operator
    chart: gpu-operator
    type: Helm
    source: https://helm.ngc.nvidia.com/nvidia
    version: v25.10.1
    valuesFile: components/gpu-operator/values-gke-cos-training.yaml
    manifestFiles:
      - components/gpu-operator/manifests/dcgm-exporter.yaml
      - components/gpu-operator/manifests/kernel-module-params.yaml
  - name: nvsentinel
    namespace: nvsentinel
    chart: nvsentinel
    type: Helm
    source: oci://ghcr.io/nvidia
    version: v1.1.0
    valuesFile: components/nvsentinel/values.yaml
    dependencyRefs: [gpu-operator]
  - name: gke-nccl-tcpxo
    namespace: kube-system
    type: Helm
    manifestFiles:
      - components/gke-nccl-tcpxo/manifests/nri-device-injector.yaml
    dependencyRefs: [gpu-operator]
deploymentOrder: [gpu-operator, nvsentinel, gke-nccl-tcpxo]
"""


@pytest.mark.parametrize("deployer", ["helm", "helmfile", "argocd", "flux"])
def test_bundle_of_an_upstream_recipe_result(
    tmp_path: Path, shared_dir: Path, deployer: str
) -> None:
    """With the real reader (generator.catalog.aicr_format) and upstream's own recipe tree: the templated
    manifests become local charts with the component's values under its name, the OCI chart
    keeps one `nvidia`, the manifest-only component is a release in its own namespace."""
    tree = shared_dir / "upstream-aicr" / "v0.11.1" / "recipes"
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(UPSTREAM_RECIPE)
    out = tmp_path / "b"
    code, _, stderr = run(
        "--recipe", str(recipe), "-d", deployer, "--catalog", str(tree), "-o", str(out)
    )
    assert code == 0, stderr
    assert run("verify", str(out))[0] == 0
    for name in ("dcgm-exporter.yaml", "kernel-module-params.yaml"):
        got = (out / "002-gpu-operator-post" / "templates" / name).read_bytes()
        assert got == (tree / "components" / "gpu-operator" / "manifests" / name).read_bytes()
    values = yaml.safe_load((out / "002-gpu-operator-post" / "values.yaml").read_text())
    assert list(values) == ["gpu-operator"] and values["gpu-operator"]
    assert (out / "004-gke-nccl-tcpxo" / "templates" / "nri-device-injector.yaml").is_file()
    text = "\n".join(
        p.read_text() for p in out.rglob("*") if p.is_file() and "templates" not in p.parts
    )
    assert "nvidia/nvidia" not in text
    assert "--namespace gke-nccl-tcpxo" not in text
    releases = yaml.safe_load((out / "bundle-info.yaml").read_text())["releases"]
    assert [(r["name"], r["namespace"]) for r in releases] == [
        ("gpu-operator", "gpu-operator"),
        ("gpu-operator-post", "gpu-operator"),
        ("nvsentinel", "nvsentinel"),
        ("gke-nccl-tcpxo", "kube-system"),
    ]


# --- verify ------------------------------------------------------------------------------------


def test_verify_names_a_modified_file(tmp_path: Path) -> None:
    out = bundle(tmp_path)
    (out / "003-cert-manager" / "values.yaml").write_text("tampered: true\n")
    code, stdout, stderr = run("verify", str(out))
    assert (code, stdout) == (1, "")
    assert stderr == (
        "003-cert-manager/values.yaml: $: modified file (sha256 differs from checksums.txt) "
        "[bundle.modified]\n"
        f"error: {out}: 1 problem(s) against checksums.txt\n"
    )


def test_verify_names_an_extra_file(tmp_path: Path) -> None:
    out = bundle(tmp_path)
    (out / "003-cert-manager" / "notes.txt").write_text("hello\n")
    code, _, stderr = run("verify", str(out))
    assert code == 1
    assert stderr.splitlines()[0] == (
        "003-cert-manager/notes.txt: $: extra file (not in checksums.txt) [bundle.extra]"
    )


def test_verify_names_a_missing_file(tmp_path: Path) -> None:
    out = bundle(tmp_path)
    (out / "deploy.sh").unlink()
    code, _, stderr = run("verify", str(out))
    assert code == 1
    assert stderr.splitlines()[0] == (
        "deploy.sh: $: missing file (listed in checksums.txt) [bundle.missing]"
    )


def test_verify_reports_every_problem_at_once(tmp_path: Path) -> None:
    out = bundle(tmp_path)
    (out / "README.md").write_text("x")
    (out / "extra.yaml").write_text("x: 1\n")
    (out / "undeploy.sh").unlink()
    code, _, stderr = run("verify", str(out))
    assert code == 1
    rules = [line.rsplit("[", 1)[1].rstrip("]") for line in stderr.splitlines()[:-1]]
    assert sorted(rules) == ["bundle.extra", "bundle.missing", "bundle.modified"]
    assert stderr.splitlines()[-1] == f"error: {out}: 3 problem(s) against checksums.txt"


def test_verify_without_checksums_fails_closed(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a")
    code, _, stderr = run("verify", str(tmp_path))
    assert code == 1
    assert "checksums.txt is missing" in stderr
    code, _, stderr = run("verify", str(tmp_path / "nope"))
    assert code == 2


def upstream_shaped_bundle(root: Path) -> Path:
    """A bundle laid out as upstream AICR writes one: checksums.txt (two spaces, one line per
    file, in generation order) covers the deployer's files; recipe.yaml and attestation/ are
    written after it and are not listed."""
    covered = {
        "001-gpu-operator/values.yaml": b"driver:\n  version: 580.82.07\n",
        "001-gpu-operator/cluster-values.yaml": b"{}\n",
        "001-gpu-operator/upstream.env": b"CHART=gpu-operator\nVERSION=v25.10.1\n",
        "001-gpu-operator/install.sh": b"#!/usr/bin/env bash\nhelm upgrade --install x\n",
        "002-gpu-operator-post/Chart.yaml": b"apiVersion: v2\nname: gpu-operator-post\n",
        "002-gpu-operator-post/templates/dcgm-exporter.yaml": b"kind: ConfigMap\n",
        "deploy.sh": b"#!/usr/bin/env bash\n",
        "README.md": b"# bundle\n",
    }
    after = {
        "recipe.yaml": b"apiVersion: aicr.nvidia.com/v1alpha1\nkind: RecipeResult\n",
        "attestation/bundle-attestation.sigstore.json": b"{}\n",
    }
    for rel, data in {**covered, **after}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    lines = [f"{hashlib.sha256(d).hexdigest()}  {rel}" for rel, d in covered.items()]
    (root / "checksums.txt").write_text("\n".join(lines) + "\n")
    return root


def test_verify_accepts_an_upstream_shaped_bundle(tmp_path: Path) -> None:
    out = upstream_shaped_bundle(tmp_path / "up")
    code, stdout, stderr = run("verify", str(out))
    assert code == 0, stderr
    assert stdout == f"{out}: 8 files match checksums.txt; 2 file(s) not covered (named above)\n"
    lines = stderr.splitlines()
    assert [line.split(":", 1)[0] for line in lines] == [
        "attestation/bundle-attestation.sigstore.json",
        "recipe.yaml",
    ]
    assert all("warning: not covered by checksums.txt" in x for x in lines)
    assert all(x.endswith("[bundle.not-covered]") for x in lines)


def test_verify_of_an_upstream_bundle_still_checks_every_listed_file(tmp_path: Path) -> None:
    out = upstream_shaped_bundle(tmp_path / "up")
    (out / "002-gpu-operator-post" / "templates" / "dcgm-exporter.yaml").write_text("x: 1\n")
    (out / "deploy.sh").unlink()
    code, _, stderr = run("verify", str(out))
    assert code == 1
    lines = stderr.splitlines()
    assert "002-gpu-operator-post/templates/dcgm-exporter.yaml: $: modified file" in stderr
    assert "deploy.sh: $: missing file (listed in checksums.txt) [bundle.missing]" in lines
    assert lines[-1] == f"error: {out}: 2 problem(s) against checksums.txt"


@pytest.mark.parametrize("line", ["../outside.txt", "/etc/passwd", "a/../../b", "a\\b"])
def test_verify_reports_a_path_leaving_the_bundle(tmp_path: Path, line: str) -> None:
    out = upstream_shaped_bundle(tmp_path / "up")
    with (out / "checksums.txt").open("a") as f:
        f.write(f"{'0' * 64}  {line}\n")
    code, _, stderr = run("verify", str(out))
    assert code == 1
    (bad,) = [x for x in stderr.splitlines() if "[bundle.unsafe-path]" in x]
    assert bad.startswith("checksums.txt:9:1: $: unsafe or self-referencing path")


def test_own_bundle_stays_closed_world_without_bundle_info(tmp_path: Path) -> None:
    """Deleting bundle-info.yaml does not turn one of this project's bundles into an
    open-world one: checksums.txt lists it, so it is missing and every unlisted file an error."""
    out = bundle(tmp_path)
    (out / "bundle-info.yaml").unlink()
    (out / "notes.txt").write_text("x\n")
    code, _, stderr = run("verify", str(out))
    assert code == 1
    assert "bundle-info.yaml: $: missing file (listed in checksums.txt) [bundle.missing]" in stderr
    assert "notes.txt: $: extra file (not in checksums.txt) [bundle.extra]" in stderr
    assert "warning" not in stderr


@pytest.mark.parametrize("deployer", ["helm", "argocd"])
def test_readme_regenerate_command_reproduces_the_bundle(tmp_path: Path, deployer: str) -> None:
    extra = ["--set", "gpu-operator:driver.version=590.1.2", "--scale-profile", "nvl72-2304"]
    if deployer == "argocd":
        extra += ["--repo", "https://git.example.org/x.git", "--revision", "v1"]
    first = bundle(tmp_path / "a", *extra, deployer=deployer)
    readme = (first / "README.md").read_text()
    command = readme.split("```shell\n", 1)[1].split("\n```", 1)[0]
    args = shlex.split(command)
    assert args[:2] == ["aicr-catalog", "bundle"] and args[-2:] == ["-o", "DIR"]
    again = tmp_path / "again"
    code, _, stderr = run(*args[2:-2], "--catalog", str(CATALOG), "-o", str(again))
    assert code == 0, stderr
    assert (again / "checksums.txt").read_bytes() == (first / "checksums.txt").read_bytes()


def test_a_dry_run_says_nothing_was_installed(tmp_path: Path) -> None:
    """`AICR_DRY_RUN=1 ./deploy.sh` prints every command and says nothing ran (it used to end
    with "installed …" and "recipe … deployed"); the same for undeploy.sh."""
    import subprocess

    out = bundle(tmp_path)
    env = {"PATH": "/usr/bin:/bin", "AICR_DRY_RUN": "1"}
    deploy = subprocess.run(
        ["bash", str(out / "deploy.sh")], capture_output=True, text=True, env=env, check=False
    )
    assert deploy.returncode == 0, deploy.stderr
    lines = deploy.stdout.splitlines()
    assert any(line.startswith("dry-run: helm upgrade --install") for line in lines)
    assert not [line for line in lines if line.startswith("installed ")]
    assert f"recipe {RECIPE} deployed" not in lines
    assert lines[-1] == (
        f"dry run: recipe {RECIPE} not deployed (the commands above were printed, not run)"
    )
    assert sum(line.endswith(" not installed") for line in lines) == len(
        [p for p in out.iterdir() if (p / "install.sh").is_file()]
    )
    undeploy = subprocess.run(
        ["bash", str(out / "undeploy.sh")], capture_output=True, text=True, env=env, check=False
    )
    assert undeploy.returncode == 0, undeploy.stderr
    assert undeploy.stdout.splitlines()[-1] == f"dry run: recipe {RECIPE} not removed"
