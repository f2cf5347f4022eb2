"""`aicr-catalog bundle` and `bundle verify` end to end through click's CliRunner, on the
repository's catalog."""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from generator.cli import main
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
    from generator.load import load_catalog

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
