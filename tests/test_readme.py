"""Drift tests: the README starts with the two set-up commands, and its CLI commands exist and run."""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from generator.cli import main
from tests.conftest import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")


def readme_commands() -> list[list[str]]:
    """Every `aicr-catalog …` command line of the README's code blocks (continuations joined)."""
    blocks = re.findall(r"```sh\n(.*?)```", README, re.S)
    out = []
    for block in blocks:
        joined = block.replace("\\\n", " ")
        for line in joined.splitlines():
            line = line.split("#", 1)[0].strip()
            for part in line.split("&&"):
                words = shlex.split(part.strip())
                if words and words[0].endswith("aicr-catalog"):
                    out.append(words[1:])
    return out


def test_readme_starts_with_the_two_setup_commands() -> None:
    first_block = re.search(r"```sh\n(.*?)```", README, re.S)
    assert first_block is not None
    lines = [ln.split("#")[0].strip() for ln in first_block.group(1).splitlines() if ln.strip()]
    assert lines == ["make site", "make test"]
    assert README.index("make site") < 400


@pytest.mark.parametrize("args", readme_commands(), ids=lambda a: " ".join(a[:2]))
def test_readme_command_exists(args: list[str]) -> None:
    cmd = main.commands.get(args[0])
    assert cmd is not None, f"README names aicr-catalog {args[0]}, which does not exist"
    if isinstance(cmd, click.Group) and len(args) > 1 and not args[1].startswith("-"):
        assert args[1] in cmd.commands, f"README names aicr-catalog {args[0]} {args[1]}"
    ctx = cmd.make_context(
        args[0], [a for a in args[1:] if a != "…"] + ["--help"], resilient_parsing=True
    )
    assert ctx is not None


RUNNABLE = ("validate", "list", "query", "preflight", "status")


@pytest.mark.parametrize(
    "args",
    [a for a in readme_commands() if a[0] in RUNNABLE and "…" not in a],
    ids=lambda a: " ".join(a[:3]),
)
def test_readme_command_runs(args: list[str]) -> None:
    old = Path.cwd()
    os.chdir(REPO)
    try:
        res = CliRunner().invoke(main, args, catch_exceptions=False)
    finally:
        os.chdir(old)
    assert res.exit_code == 0, res.stdout + res.stderr


def test_readme_bundle_commands_run(tmp_path: Path) -> None:
    bundle = next(a for a in readme_commands() if a[:1] == ["bundle"] and "-o" in a)
    verify = next(a for a in readme_commands() if a[:2] == ["bundle", "verify"])
    out = tmp_path / "out"
    args = [str(out) if a == "out/" else a for a in bundle]
    old = Path.cwd()
    os.chdir(REPO)
    try:
        res = CliRunner().invoke(main, args, catch_exceptions=False)
        assert res.exit_code == 0, res.stdout + res.stderr
        res = CliRunner().invoke(
            main, [str(out) if a == "out/" else a for a in verify], catch_exceptions=False
        )
        assert res.exit_code == 0, res.stdout + res.stderr
    finally:
        os.chdir(old)
