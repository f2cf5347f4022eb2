"""The GitHub workflows cannot run here: check what can be checked.

They parse, grant least privilege per job, pin every action by full commit SHA, call only make
targets that exist and only `aicr-catalog` commands that exist.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
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


# ---------------------------------------------------------------- hardening (zizmor and beyond)


def _zizmor() -> str:
    exe = Path(sys.executable).parent / "zizmor"
    if not exe.exists():
        found = shutil.which("zizmor")
        if found is None:
            pytest.fail("zizmor is not installed: `make .venv` installs it from pyproject.toml")
        return found
    return str(exe)


@pytest.mark.parametrize("persona", ["regular", "pedantic"])
def test_zizmor_reports_nothing(persona: str) -> None:
    proc = subprocess.run(
        [_zizmor(), "--offline", "--no-progress", "--persona", persona, ".github/workflows"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "No findings to report" in proc.stdout + proc.stderr


def _jobs_steps(doc: dict[Any, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(name, s) for name, job in doc["jobs"].items() for s in job.get("steps", [])]


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_no_expression_in_run_and_no_persisted_credentials(path: Path) -> None:
    doc = load(path)
    assert "concurrency" in doc, f"{path.name}: no concurrency group"
    for job, step in _jobs_steps(doc):
        assert "${{" not in str(step.get("run", "")), (
            f"{path.name}/{job}: pass expressions to run: through env:"
        )
        if str(step.get("uses", "")).startswith("actions/checkout@"):
            assert step.get("with", {}).get("persist-credentials") is False, (
                f"{path.name}/{job}: checkout keeps credentials"
            )
    for name, job in doc["jobs"].items():
        image = job.get("container")
        if image is not None:
            ref = image if isinstance(image, str) else image["image"]
            assert re.fullmatch(r"[\w./:-]+@sha256:[0-9a-f]{64}", ref), (
                f"{path.name}/{name}: container {ref} is not pinned by digest"
            )


def test_pr_gate_covers_every_deployer_profile_and_the_seed_preflight() -> None:
    from generator.render import Deployer

    pr = load(REPO / ".github/workflows/pr.yml")
    bundles = pr["jobs"]["bundles"]
    assert set(bundles["strategy"]["matrix"]["deployer"]) == {str(d) for d in Deployer}
    script = " ".join(str(s.get("run", "")) for s in bundles["steps"])
    assert "resolve_all" in script and '--scale-profile "$profile"' in script
    assert '--deployer "$DEPLOYER"' in script and "bundle verify" in script
    text = " ".join(_run_lines(pr))
    assert "make preflight-samples" in text
    assert "compat --format github" in text
    assert "preflight-samples:" in (REPO / "Makefile").read_text()
    makefile = (REPO / "Makefile").read_text()
    recipes = next(line for line in makefile.splitlines() if line.startswith("PREFLIGHT_RECIPES"))
    assert "gb300-eks-ubuntu-training-slurm" in recipes, "the seed recipe is not gated"
    for profile in ("standard", "nvl72-2304"):
        assert f"check $$r {profile} " in makefile, f"preflight-samples does not run {profile}"


def test_evidence_pull_requests_are_opened_with_an_app_token() -> None:
    q = load(REPO / ".github/workflows/qualify.yml")
    job = q["jobs"]["qualify"]
    assert job["permissions"].get("contents") == "read"
    assert "pull-requests" not in job["permissions"], "GITHUB_TOKEN must not open the PR"
    steps = job["steps"]
    mint = next(i for i, s in enumerate(steps) if "create-github-app-token" in s.get("uses", ""))
    pr = next(i for i, s in enumerate(steps) if "gh pr create" in s.get("run", ""))
    assert mint < pr and steps[pr]["env"]["GH_TOKEN"] == "${{ steps.app-token.outputs.token }}"
    # every step that runs repository code comes before the token exists
    assert all(
        ".venv/bin/" not in s.get("run", "") and "make " not in s.get("run", "")
        for s in steps[mint:]
    )
    assert job["if"] == "github.ref == 'refs/heads/main'"


def test_release_notes_template_says_how_to_verify() -> None:
    text = (REPO / ".github/release-notes-template.md").read_text()
    assert "aicr-catalog release verify" in text and "@VERSION@" in text
    assert "https://token.actions.githubusercontent.com" in text
    assert ".github/workflows/release.yml@refs/tags/@VERSION@" in text
