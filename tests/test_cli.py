"""End-to-end CLI transcripts for the foundation commands, and the help/exit-code contract."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from generator.cli import main
from tests.conftest import CATALOG, REPO

LEAF = "gb300-eks-ubuntu-training-slurm"


def run(*args: str, cwd: Path = REPO) -> tuple[int, str, str]:
    """Invoke the CLI in `cwd` (the default catalog path is relative to it)."""
    old = Path.cwd()
    os.chdir(cwd)
    try:
        res = CliRunner().invoke(main, list(args), catch_exceptions=False)
    finally:
        os.chdir(old)
    return res.exit_code, res.stdout, res.stderr


def test_validate_repository_catalog_exits_0() -> None:
    code, out, _ = run("validate", "catalog")
    assert code == 0
    assert out.splitlines()[-1].startswith("validate catalog: ok")


def test_validate_missing_path_is_usage_error() -> None:
    code, _, err = run("validate", "no-such-dir")
    assert code == 2
    assert "catalog directory 'no-such-dir' not found" in err


def test_validate_reports_errors_with_location_and_exit_1(tmp_path: Path) -> None:
    cat = tmp_path / "catalog"
    shutil.copytree(CATALOG, cat)
    leaf = cat / "overlays" / f"{LEAF}.yaml"
    text = leaf.read_text().replace(
        "base: gb300-eks-ubuntu-training", "base: gb300-eks-ubuntu-trainin"
    )
    leaf.write_text(text)
    line = next(
        i for i, s in enumerate(text.splitlines(), 1) if "base: gb300-eks-ubuntu-trainin" in s
    )
    code, out, _ = run("validate", "catalog", cwd=tmp_path)
    assert code == 1
    assert out.splitlines()[0] == (
        f"overlays/{LEAF}.yaml:{line}:3: $.spec.base: base overlay 'gb300-eks-ubuntu-trainin' does not exist "
        "[base.missing]"
    )
    assert out.splitlines()[-1] == "validate catalog: 1 error(s), 0 warning(s) in 1 file(s)"
    code, out, _ = run("validate", "catalog", "--format", "json", cwd=tmp_path)
    doc = json.loads(out)
    assert code == 1 and doc["ok"] is False and doc["diagnostics"][0]["rule"] == "base.missing"
    code, out, _ = run("validate", "catalog", "--format", "github", cwd=tmp_path)
    assert out.splitlines()[0] == (
        f"::error file=catalog/overlays/{LEAF}.yaml,line={line},col=3,title=base.missing::$.spec.base: base overlay "
        "'gb300-eks-ubuntu-trainin' does not exist"
    )


def test_query_prints_the_resolved_recipe() -> None:
    code, out, _ = run(
        "query",
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
    )
    assert code == 0
    doc = yaml.safe_load(out)
    assert doc["apiVersion"] == "aicr.run/v1" and doc["kind"] == "RecipeResult"
    assert doc["metadata"]["name"] == LEAF
    assert doc["metadata"]["appliedOverlays"] == [
        "base",
        "eks",
        "eks-training",
        "gb300-eks-training",
        "gb300-eks-ubuntu-training",
        LEAF,
    ]
    code2, out2, _ = run("query", "--recipe", LEAF, "--format", "json")
    assert code2 == 0 and json.loads(out2) == doc


def test_query_errors() -> None:
    code, _, err = run("query")
    assert code == 2 and "give --recipe NAME or at least one criterion" in err
    code, _, err = run("query", "--recipe", "gb300-eks-ubuntu-trainin-slurm")
    assert code == 1
    assert (
        "no recipe named 'gb300-eks-ubuntu-trainin-slurm'; did you mean gb300-eks-ubuntu-training-slurm"
        in err
    )
    code, _, err = run("query", "--recipe", LEAF, "--nodes", "2304")
    assert code == 1 and "profiles covering 2304 nodes for these criteria: nvl72-2304" in err


def test_list_shows_every_leaf_with_health_and_coverage() -> None:
    code, out, _ = run("list", "--format", "json")
    assert code == 0
    rows = json.loads(out)["recipes"]
    assert len(rows) >= 30
    slurm = next(r for r in rows if r["name"] == LEAF)
    assert slurm["health"] in ("pass", "warn")
    assert slurm["coverageText"].startswith("R:")
    code, out, _ = run("list")
    assert out.splitlines()[0].split()[:3] == ["RECIPE", "SERVICE", "ACCELERATOR"]
    assert out.splitlines()[-1] == f"{len(rows)} leaf recipe(s)"


@pytest.mark.parametrize("name", sorted(main.commands))
def test_every_command_has_help_with_exit_codes(name: str) -> None:
    code, out, _ = run(name, "--help")
    assert code == 0
    assert "Usage:" in out
    cmd = main.commands[name]
    assert (cmd.help or "").strip(), f"{name} has no help text"


def test_unknown_option_is_usage_error() -> None:
    code, _, _ = run("validate", "--nope")
    assert code == 2
