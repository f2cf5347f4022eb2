"""The CLI reference page is keyed by what it is made of, and formatted only when a build makes
the page (`generator.commands.build.CliReference`): a no-change rebuild formats no `--help`."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from generator.bench.synth import SynthOptions, synthesize
from generator.cli import main
from generator.commands import build as build_cmd
from generator.commands.build import CliReference, cli_reference, lazy_reference
from generator.core.cache import PACKAGE
from generator.core.memo import canonical
from tests.synth_site import cli_build

EPOCH = 1767225600


@pytest.fixture
def package(tmp_path: Path) -> Path:
    """A copy of the generator package's sources."""
    copy = tmp_path / "generator"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} is not in {path}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_a_copy_of_the_code_has_the_key_of_the_code(package: Path) -> None:
    assert build_cmd.reference_made_of(package) == build_cmd.reference_made_of()


@pytest.mark.parametrize(
    ("rel", "old", "new"),
    [
        # a command's own help string
        ("commands/build.py", "(a faster preview)", "(a quicker preview)"),
        # a constant another module shows in the help: --upstream-rules lists the rule sets
        ("catalog/rules.py", 'name="2026-08"', 'name="2026-09"'),
        # the group's help
        ("cli.py", "validate, resolve, bundle", "validate, resolve and bundle"),
    ],
)
def test_an_edited_help_string_changes_the_key(package: Path, rel: str, old: str, new: str) -> None:
    before = build_cmd.reference_made_of(package)
    _edit(package / rel, old, new)
    assert build_cmd.reference_made_of(package) != before


def test_the_key_sees_made_of_and_not_the_formatter() -> None:
    def contents(path: Path, where: str) -> str:
        raise AssertionError("no path in a CLI reference")

    def made() -> tuple[()]:
        return ()

    one = canonical(CliReference("a", made), contents)
    assert one == canonical(CliReference("a", lambda: ()), contents)
    assert one != canonical(CliReference("b", made), contents)


def test_the_lazy_reference_is_the_formatted_reference() -> None:
    lazy = lazy_reference(main)
    formatted = cli_reference(main)
    assert len(lazy) == len(formatted) > 20
    assert tuple(lazy) == formatted
    assert lazy[0] == formatted[0] and tuple(lazy[:2]) == formatted[:2]


@pytest.fixture
def synth(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AICR_CATALOG_CACHE_KEY", str(tmp_path / "cache.key"))
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(EPOCH))
    out = tmp_path / "synth"
    synthesize(SynthOptions(2, 4, seed=5, jobs=1), out)
    return out


def test_only_a_build_that_makes_the_cli_page_formats_the_help(
    synth: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    formatted: list[str] = []
    real = build_cmd.cli_reference

    def counting(cmd: object, *args: object) -> object:
        formatted.append(str(getattr(cmd, "name", "")))
        return real(cmd, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(build_cmd, "cli_reference", counting)
    build_cmd._formatted.cache_clear()
    out = tmp_path / "site"
    cli_build(synth, out)
    assert formatted  # the first build made the page
    assert "aicr-catalog build" in (out / "cli.html").read_text(encoding="utf-8")
    formatted.clear()
    build_cmd._formatted.cache_clear()
    cli_build(synth, out)  # nothing changed: the page is not made, the help not formatted
    assert formatted == []
