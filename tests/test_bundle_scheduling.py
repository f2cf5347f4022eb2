"""`bundle`'s remaining upstream scheduling flags (issue 28 item 3): `--nodes`, `--workload-gate`,
`--workload-selector`, through the real CLI on upstream v0.11.1's tree and one of the recipe files
its `aicr` wrote; the values land at the registry's paths in the bundle's values files."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from generator.catalog.overrides import NodeScheduling, scheduling_overrides, selector_warnings
from generator.cli import main
from generator.core.errors import UsageError

CASE = "eks-h100-ubuntu-training"


@pytest.fixture
def tree(shared_dir: Path) -> Path:
    root = shared_dir / "upstream-aicr" / "v0.11.1"
    if not (root / "oracle").is_dir():
        pytest.skip("upstream v0.11.1 oracle not present")
    return root


def _bundle(tree: Path, out: Path, *flags: str) -> tuple[int, str]:
    recipe = tree / "oracle" / "bundles" / CASE / "recipe.yaml"
    args = ["bundle", "--recipe", str(recipe), "--catalog", str(tree / "recipes"), "-o", str(out)]
    res = CliRunner().invoke(main, [*args, *flags], catch_exceptions=False)
    return res.exit_code, res.stderr


def _values(out: Path, component: str) -> dict[str, Any]:
    (path,) = [
        p for p in out.glob(f"*{component}/values.yaml") if p.parent.name.endswith(component)
    ]
    data = yaml.safe_load(path.read_text())
    assert isinstance(data, dict)
    if (
        path.parent / "Chart.yaml"
    ).is_file():  # a local chart: the component's values under its name
        data = data[component]
    assert isinstance(data, dict)
    return data


def _at(data: dict[str, Any], dotted: str) -> Any:
    for key in dotted.split("."):
        data = data[key]
    return data


def test_flags_land_at_the_registrys_paths(tree: Path, tmp_path: Path) -> None:
    out = tmp_path / "b"
    code, err = _bundle(
        tree, out,
        "--nodes", "8",
        "--workload-gate", "skyhook.nvidia.com/runtime-required=true:NoSchedule",
        "--workload-selector", "app=training", "--workload-selector", "tier=gpu",
    )  # fmt: skip
    assert code == 0, err
    registry = yaml.safe_load((tree / "recipes" / "registry.yaml").read_text())
    entries = {c["name"]: c for c in registry["components"]}
    op = _values(out, "skyhook-operator")
    for path in entries["skyhook-operator"]["nodeScheduling"]["nodeCountPaths"]:
        assert _at(op, path) == 8
    for path in entries["skyhook-operator"]["nodeScheduling"]["accelerated"]["taintStrPaths"]:
        assert _at(op, path) == "skyhook.nvidia.com/runtime-required=true:NoSchedule"
    cust = _values(out, "skyhook-customizations")
    for path in entries["skyhook-customizations"]["podScheduling"]["workload"][
        "workloadSelectorPaths"
    ]:
        assert _at(cust, path) == {"app": "training", "tier": "gpu"}
    # the selector was given: no warning about it (the accelerated selector's remains)
    assert "--workload-selector" not in err
    assert "--accelerated-node-selector" in err
    # and the rendered Skyhook resource carries the workload selector
    rendered = "\n".join(p.read_text() for p in out.rglob("*.yaml"))
    assert "app: training" in rendered


def test_without_the_flags_nothing_is_written_and_upstreams_warnings_are_printed(
    tree: Path, tmp_path: Path
) -> None:
    out = tmp_path / "b"
    code, err = _bundle(tree, out)
    assert code == 0, err
    op = _values(out, "skyhook-operator")
    assert "estimatedNodeCount" not in op  # --nodes 0 = unset
    env = ((op.get("controllerManager") or {}).get("manager") or {}).get("env") or {}
    assert "runtimeRequiredTaint" not in env
    warnings = [ln for ln in err.splitlines() if ln.startswith("warning: skyhook-customizations:")]
    assert len(warnings) == 2, err  # training intent: the workload and the accelerated selector
    assert any("--workload-selector" in w for w in warnings)


def test_workload_gate_without_value(tree: Path, tmp_path: Path) -> None:
    out = tmp_path / "b"
    code, err = _bundle(tree, out, "--workload-gate", "gate.example/runtime:NoExecute")
    assert code == 0, err
    op = _values(out, "skyhook-operator")
    assert op["controllerManager"]["manager"]["env"]["runtimeRequiredTaint"] == (
        "gate.example/runtime:NoExecute"
    )


@pytest.mark.parametrize(
    "flags",
    [
        ("--workload-gate", "no-effect"),
        ("--workload-gate", "k=v:Sometimes"),
        ("--workload-selector", "novalue"),
        ("--nodes", "-1"),
    ],
)
def test_malformed_flags_are_usage_errors(
    tree: Path, tmp_path: Path, flags: tuple[str, str]
) -> None:
    out = tmp_path / "b"
    code, _ = _bundle(tree, out, *flags)
    assert code == 2
    assert not out.exists()


def test_workload_overrides_unit() -> None:
    entries = {
        "op": {
            "nodeScheduling": {
                "nodeCountPaths": ["estimatedNodeCount"],
                "accelerated": {"taintStrPaths": ["env.taint"]},
            },
        },
        "cust": {
            "podScheduling": {"workload": {"workloadSelectorPaths": ["workloadSelector"]}},
            "validations": [
                {
                    "function": "CheckWorkloadSelectorMissing",
                    "severity": "warning",
                    "conditions": {"intent": ["training"]},
                    "message": "set it",
                }
            ],
        },
    }
    flags = NodeScheduling(workload_selectors=("a=b",), workload_gate="k=v:NoSchedule", nodes=3)
    got = {
        (o.component, o.path): o.value for o in scheduling_overrides(entries, ["op", "cust"], flags)
    }
    assert got == {
        ("op", "env.taint"): "k=v:NoSchedule",
        ("op", "estimatedNodeCount"): 3,
        ("cust", "workloadSelector"): {"a": "b"},
    }
    assert scheduling_overrides(entries, ["op", "cust"], NodeScheduling()) == ()
    assert selector_warnings(entries, ["cust"], "training", NodeScheduling()) == ("cust: set it",)
    assert selector_warnings(entries, ["cust"], "inference", NodeScheduling()) == ()
    assert selector_warnings(entries, ["cust"], "training", flags) == ()
    with pytest.raises(UsageError):
        scheduling_overrides(entries, ["op"], NodeScheduling(workload_gate="k=v"))


def test_help_lists_every_upstream_scheduling_flag_with_its_default(tree: Path) -> None:
    upstream = (tree / "oracle" / "help" / "bundle.txt").read_text()
    section = upstream.split("   Scheduling\n", 1)[1].split("\n\n\n", 1)[0]
    flags = re.findall(r"^\s+(--[a-z-]+)", section, re.M)
    assert {"--nodes", "--workload-gate", "--workload-selector"} <= set(flags)
    ours = CliRunner().invoke(main, ["bundle", "--help"], terminal_width=200).stdout
    for flag in flags:
        assert flag in ours, flag
    assert "(default: 0)" in section  # upstream's --nodes default
    nodes_help = ours.split("--nodes", 1)[1].split("\n  --", 1)[0]
    assert "[default: 0;" in " ".join(nodes_help.split()), nodes_help
