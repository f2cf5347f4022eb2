"""The GitHub workflows cannot run here: check what can be checked.

They parse, grant least privilege per job, pin every action by full commit SHA, call only make
targets that exist and only `aicr-catalog` commands that exist.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

from generator.cli import main
from tests.conftest import REPO

WORKFLOWS = sorted((REPO / ".github" / "workflows").glob("*.yml"))
MAKE_TARGETS = set(re.findall(r"^([A-Za-z.][\w.-]*):", (REPO / "Makefile").read_text(), re.M))


def load(path: Path) -> dict[Any, Any]:
    doc: dict[Any, Any] = yaml.safe_load(path.read_text())
    return doc


def test_the_expected_workflows_exist() -> None:
    names = {p.name for p in WORKFLOWS}
    assert {"pr.yml", "pages.yml", "release.yml", "qualify.yml"} <= names


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_workflow_is_least_privilege_and_pinned(path: Path) -> None:
    doc = load(path)
    assert doc.get("permissions") == {}, "the workflow must grant nothing at the top level"
    for name, job in doc["jobs"].items():
        assert "permissions" in job, f"job {name} must state its permissions"
        for step in job.get("steps", []):
            uses = step.get("uses")
            if uses:
                assert re.fullmatch(r"[\w.-]+/[\w./-]+@[0-9a-f]{40}", uses), (
                    f"{name}: {uses} is not pinned by SHA"
                )


def _run_lines(doc: dict[Any, Any]) -> list[str]:
    out = []
    for job in doc["jobs"].values():
        for step in job.get("steps", []):
            for line in str(step.get("run", "")).splitlines():
                out.append(line.strip())
    return out


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_workflow_calls_existing_make_targets_and_commands(path: Path) -> None:
    for line in _run_lines(load(path)):
        for target in re.findall(r"\bmake ([\w.-]+)", line):
            assert target in MAKE_TARGETS, f"{path.name}: make {target} does not exist"
        for m in re.finditer(r"aicr-catalog ([\w-]+)(?: ([\w-]+))?", line):
            cmd = main.commands.get(m.group(1))
            assert cmd is not None, f"{path.name}: aicr-catalog {m.group(1)} does not exist"
            sub = m.group(2)
            if hasattr(cmd, "commands") and sub and not sub.startswith("-"):
                assert sub in cmd.commands, (
                    f"{path.name}: aicr-catalog {m.group(1)} {sub} does not exist"
                )


def test_pull_requests_run_the_cheap_checks_and_qualify_is_manual() -> None:
    pr = load(REPO / ".github/workflows/pr.yml")
    text = " ".join(_run_lines(pr))
    for needle in (
        "validate catalog --format github",
        "diff",
        "bundle",
        "preflight-samples",
        "make site",
        ".ci/run",
    ):
        assert needle in text, needle
    qualify = load(REPO / ".github/workflows/qualify.yml")
    triggers = qualify[True] if True in qualify else qualify["on"]  # YAML 1.1 reads `on` as true
    assert set(triggers) == {"workflow_dispatch"}


def test_pre_commit_hooks_run_validate() -> None:
    cfg = yaml.safe_load((REPO / ".pre-commit-config.yaml").read_text())
    entries = [h["entry"] for r in cfg["repos"] for h in r["hooks"]]
    assert any("aicr-catalog validate" in e for e in entries)
    for e in entries:
        args = shlex.split(e)
        assert args[1] in main.commands
    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    assert hooks[0]["entry"].startswith("aicr-catalog validate")
