"""One error handler for every command: `handles_errors` prints a CatalogError (diagnostics,
`error:`, `hint:`) and exits with its `exit_code`; an OSError ends in one line, never a
traceback."""

from __future__ import annotations

import errno
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from generator.cli import main
from generator.commands.common import fail, handles_errors
from generator.core.errors import CatalogError, Diagnostic, ResolveError, UsageError


def _walk(cmd: click.Command, name: str) -> Iterator[tuple[str, click.Command]]:
    yield name, cmd
    if isinstance(cmd, click.Group):
        for sub in sorted(cmd.commands):
            yield from _walk(cmd.commands[sub], f"{name} {sub}")


def test_every_registered_command_goes_through_handles_errors() -> None:
    commands = [(n, c) for name in main.commands for n, c in _walk(main.commands[name], name)]
    assert len(commands) >= 25  # every command and subcommand, not just the top level
    missing = [n for n, c in commands if not getattr(c.callback, "handles_errors", False)]
    assert missing == []


def _run(raise_: BaseException | None = None, *, call: object = None) -> tuple[int, str, str]:
    @click.command()
    @handles_errors
    def probe() -> None:
        if call is not None:
            call()  # type: ignore[operator]
        if raise_ is not None:
            raise raise_
        click.echo("ok")

    result = CliRunner().invoke(probe, [])
    assert not isinstance(result.exception, Exception) or isinstance(
        result.exception, SystemExit
    ), result.exception
    return result.exit_code, result.stdout, result.stderr


def test_a_catalog_error_prints_diagnostics_error_and_hint_then_exits_its_code() -> None:
    diag = Diagnostic("overlays/x.yaml", 3, 5, "$.spec", "bad value", "schema")
    code, out, err = _run(CatalogError("x is invalid", [diag], hint="fix x", exit_code=1))
    assert (code, out) == (1, "")
    assert err == (
        "overlays/x.yaml:3:5: $.spec: bad value [schema]\nerror: x is invalid\nhint: fix x\n"
    )


def test_exit_code_comes_from_the_error() -> None:
    assert _run(UsageError("wrong call"))[:1] == (2,)
    assert _run(UsageError("wrong call"))[2] == "error: wrong call\n"  # no hint: no hint line
    assert _run(ResolveError("no recipe"))[0] == 1
    assert _run(ResolveError("no recipe").as_usage())[0] == 2
    assert _run(UsageError("u").with_exit_code(1))[0] == 1
    assert _run(call=lambda: fail("stop here", 2)) == (2, "", "error: stop here\n")


@pytest.mark.parametrize(
    ("number", "code", "text"),
    [
        (errno.ENOSPC, 1, "free disk space"),
        (errno.EROFS, 2, "choose a writable output directory"),
        (errno.EIO, 1, "[EIO]"),
    ],
)
def test_an_os_error_is_one_line_and_an_exit_code(number: int, code: int, text: str) -> None:
    exit_code, _, err = _run(OSError(number, "refused", "/out/file"))
    assert exit_code == code
    assert err.startswith("error: cannot complete: /out/file: refused") and text in err
    assert "Traceback" not in err and len(err.splitlines()) == 1


def test_a_bug_is_not_swallowed() -> None:
    """Only the errors the pipeline raises on purpose are handled; a programming error keeps
    its exception (and traceback) so that it gets fixed."""

    @click.command()
    @handles_errors
    def probe() -> None:
        raise KeyError("bug")

    result = CliRunner().invoke(probe, [])
    assert isinstance(result.exception, KeyError)


def test_the_real_cli_exits_with_the_errors_code() -> None:
    runner = CliRunner()
    missing = runner.invoke(main, ["validate", "--catalog", "/nonexistent/catalog"])
    assert missing.exit_code == 2
    assert missing.stderr == "error: catalog directory '/nonexistent/catalog' not found\n"
    unknown = runner.invoke(main, ["query", "--recipe", "no-such-recipe"])
    assert unknown.exit_code == 1 and "Traceback" not in unknown.stderr
    assert "error: no recipe named 'no-such-recipe'" in unknown.stderr


def test_a_non_ascii_digit_epoch_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    """`'²'.isdigit()` is True but int('²') fails: the archive path once raised a ValueError."""
    from tests.conftest import CATALOG

    result = CliRunner().invoke(
        main,
        [
            *("bundle", "--catalog", str(CATALOG), "--recipe", "gb300-eks-ubuntu-training-slurm"),
            *("--archive", "-o", str(tmp_path)),
        ],
        env={"SOURCE_DATE_EPOCH": "²"},
    )
    assert result.exit_code == 1, result.exception
    assert result.stderr == "error: SOURCE_DATE_EPOCH must be a non-negative integer, got '²'\n"
    assert list(tmp_path.iterdir()) == []
