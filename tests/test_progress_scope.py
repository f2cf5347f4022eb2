"""The build's progress lines belong to its own invocation: a command run after it in the same
process (click's test runner, a library caller) prints none of them."""

from __future__ import annotations

import logging

import click
from click.testing import CliRunner

from generator.commands.build import show_progress

LOG = logging.getLogger("aicr_catalog.build")


@click.command()
@click.option("--progress/--no-progress", default=False)
def _cmd(progress: bool) -> None:
    if progress:
        with show_progress():
            LOG.info("stage one")
    LOG.info("stage two")
    click.echo("result")


def test_progress_is_shown_inside_and_gone_after() -> None:
    root = logging.getLogger("aicr_catalog")
    before = (list(root.handlers), root.level, root.propagate)
    runner = CliRunner()
    first = runner.invoke(_cmd, ["--progress"])
    assert first.exit_code == 0, first.output
    assert "build: stage one" in first.output
    assert "stage two" not in first.output  # logged after the block: not shown
    second = runner.invoke(_cmd, [])
    assert second.output == "result\n"
    assert (list(root.handlers), root.level, root.propagate) == before


def test_progress_is_removed_when_the_build_raises() -> None:
    root = logging.getLogger("aicr_catalog")
    before = list(root.handlers)
    try:
        with show_progress():
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    assert list(root.handlers) == before
