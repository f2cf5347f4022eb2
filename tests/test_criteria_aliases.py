"""A tree's criteria.yaml (beside registry.yaml) adds criteria values and aliases, through the CLI:
a query given the alias resolves as the value; bad entries are located errors (issue 28 item 6)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.test_cli import run

MINIMAL = REPO / "tests" / "cases" / "minimal"

CRITERIA = """\
apiVersion: catalog.aicr.run/v1alpha1
kind: CriteriaValues
spec:
  os: [ubuntu2404]
  service:
    values: [togetherai]
    aliases:
      together: togetherai
"""

TOGETHER_OVERLAY = """\
kind: RecipeMetadata
apiVersion: aicr.run/v1beta1
metadata:
  name: togetherai-training
spec:
  base: base
  criteria:
    service: togetherai
    intent: training
"""


def _tree(tmp_path: Path, criteria: str | None = CRITERIA) -> Path:
    tree = tmp_path / "tree"
    shutil.copytree(MINIMAL, tree)
    (tree / "overlays" / "togetherai-training.yaml").write_text(TOGETHER_OVERLAY)
    if criteria is not None:
        (tree / "criteria.yaml").write_text(criteria)
    return tree


def _query(tree: Path, service: str) -> tuple[int, str, str]:
    return run(
        "query", "--catalog", str(tree), "--service", service, "--intent", "training",
        "--format", "json",
    )  # fmt: skip


def test_alias_resolves_as_its_value(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    code, out, err = _query(tree, "Together")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["spec"]["criteria"]["service"] == "togetherai"
    assert "togetherai-training" in doc["metadata"]["appliedOverlays"]
    code2, out2, _ = _query(tree, "togetherai")
    assert code2 == 0
    assert out2 == out  # the alias and the value give the same recipe, byte for byte


def test_without_criteria_yaml_the_alias_is_an_invalid_request(tmp_path: Path) -> None:
    tree = _tree(tmp_path, criteria=None)
    code, _, err = _query(tree, "together")
    assert code == 2
    assert "invalid service 'together'" in err


def test_alias_resolves_in_bundle(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    outs = []
    for service in ("together", "togetherai"):
        out_dir = tmp_path / f"b-{service}"
        code, _, err = run(
            "bundle", "--catalog", str(tree), "--service", service, "--intent", "training",
            "-o", str(out_dir),
        )  # fmt: skip
        assert code == 0, err
        outs.append(sorted(p.relative_to(out_dir).as_posix() for p in out_dir.rglob("*")))
    assert outs[0] == outs[1]


@pytest.mark.parametrize(
    ("spec", "rule", "where"),
    [
        ("service:\n    values: [togetherai]\n    aliases: {eks: togetherai}\n",
         "criteria.alias-shadows", "$.spec.service.aliases.eks"),
        ("service:\n    aliases: {vanilla: eks}\n",
         "criteria.alias-shadows", "$.spec.service.aliases.vanilla"),
        ("service:\n    aliases: {any: eks}\n",
         "criteria.alias-shadows", "$.spec.service.aliases.any"),
        ("service:\n    values: [togetherai]\n    aliases: {together: togetherai}\n  os:\n"
         "    aliases: {u24: ubuntu2404}\n",
         "criteria.alias-unknown-value", "$.spec.os.aliases.u24"),
        ("os: [ubuntu2404, talos2, ubuntu2404]\n",
         "criteria.duplicate-value", "$.spec.os[2]"),
    ],
)  # fmt: skip
def test_bad_entries_are_located_errors(tmp_path: Path, spec: str, rule: str, where: str) -> None:
    text = "apiVersion: catalog.aicr.run/v1alpha1\nkind: CriteriaValues\nspec:\n  " + spec
    tree = _tree(tmp_path, criteria=text)
    code, out, _ = run("validate", str(tree))
    assert code == 1
    lines = [ln for ln in out.splitlines() if f"[{rule}]" in ln]
    assert len(lines) == 1, out
    key = where.rsplit(".", 1)[-1].split("[")[0]
    line_no = next(i for i, s in enumerate(text.splitlines(), 1) if f"{key}" in s and i > 3)
    assert lines[0].startswith(f"criteria.yaml:{line_no}:"), lines[0]
    assert f": {where}: " in lines[0]
    # the query refuses the tree too, naming the same problem
    code, _, err = _query(tree, "eks")
    assert code != 0
    assert rule in err


def test_schema_refuses_an_alias_that_is_not_a_token(tmp_path: Path) -> None:
    text = (
        "apiVersion: catalog.aicr.run/v1alpha1\nkind: CriteriaValues\nspec:\n"
        "  service:\n    aliases: {Together AI: eks}\n"
    )
    tree = _tree(tmp_path, criteria=text)
    code, out, _ = run("validate", str(tree))
    assert code == 1
    assert "criteria.yaml:" in out and "[schema." in out


def test_upstream_tree_with_criteria_yaml(tmp_path: Path, shared_dir: Path) -> None:
    """upstream v0.11.1's own tree (copied) with a criteria.yaml added: the alias resolves."""
    src = shared_dir / "upstream-aicr" / "v0.11.1" / "recipes"
    if not src.is_dir():
        pytest.skip("upstream tree not present")
    tree = tmp_path / "recipes"
    shutil.copytree(src, tree)
    (tree / "criteria.yaml").write_text(CRITERIA)
    got = []
    for service in ("together", "togetherai"):
        code, out, err = run(
            "query", "--catalog", str(tree), "--service", service, "--accelerator", "h100",
            "--intent", "training", "--format", "aicr",
        )  # fmt: skip
        assert code == 0, err
        got.append(out)
    assert got[0] == got[1]
    assert "service: togetherai" in got[0]
