"""The case corpus: every folder under tests/cases/{invalid,hostile}/ is one `validate` run.

A case is the minimal valid catalog (tests/cases/minimal/) plus the changes its folder describes,
and the exact stdout and exit code `aicr-catalog validate catalog` must give for it. The folder
format is documented in tests/cases/README.md; adding a case is adding a folder.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from types import FrameType
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from generator.cli import main

CASES = Path(__file__).resolve().parent / "cases"
MINIMAL = CASES / "minimal"
SUITES = ("invalid", "hostile")
GENERATOR_DIR = Path(__file__).resolve().parent.parent / "generator"

TIME_LIMIT_S = 5.0  # per case, wall clock, the whole `validate` run

# Every entry a case folder may hold; anything else is a typo that would silently do nothing.
KNOWN_ENTRIES = frozenset(
    {
        "about.txt",  # one paragraph: what the defect is and why the expectation is right
        "catalog",  # files added to, or replacing files of, the minimal catalog
        "outside",  # files placed beside the catalog (targets of escaping symlinks)
        "delete.txt",  # catalog-relative paths removed from the minimal catalog
        "generate.yaml",  # files too large or too repetitive to commit, described as data
        "symlinks.txt",  # `link -> target` lines: symbolic links created in the catalog
        "fifos.txt",  # catalog-relative paths where a named pipe is created
        "args.txt",  # extra `validate` arguments (shell words)
        "expected.txt",  # the exact stdout
        "exit.txt",  # the exact exit code
        "bug.txt",  # a known validator bug: the case is a strict xfail until it is fixed
    }
)


def _case_dirs() -> list[Path]:
    out: list[Path] = []
    for suite in SUITES:
        root = CASES / suite
        if root.is_dir():
            out.extend(sorted(p for p in root.iterdir() if p.is_dir()))
    return out


def _params() -> list[Any]:
    params = []
    for case in _case_dirs():
        marks = []
        bug = case / "bug.txt"
        if bug.is_file():
            reason = bug.read_text(encoding="utf-8").strip().splitlines()[0]
            marks.append(pytest.mark.xfail(reason=f"validator bug: {reason}", strict=True))
        params.append(pytest.param(case, id=f"{case.parent.name}/{case.name}", marks=marks))
    return params


# ---------------------------------------------------------------- building a case's catalog


def _lines(path: Path) -> list[str]:
    """Non-blank lines of a descriptor file, `#` comments dropped."""
    if not path.is_file():
        return []
    out = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if line and not line.startswith("#"):
            out.append(line)
    return out


def _inside(root: Path, rel: str) -> Path:
    """`root/rel`, refusing paths that would let a case descriptor write outside the tmp dir."""
    pure = PurePosixPath(rel)
    if pure.is_absolute() or ".." in pure.parts or not pure.parts:
        raise ValueError(f"case descriptor path {rel!r} must be relative and stay inside")
    return root.joinpath(*pure.parts)


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file() or (path.exists() and not path.is_dir()):
        path.unlink()
    elif path.is_dir():
        shutil.rmtree(path)
    else:
        raise FileNotFoundError(f"delete.txt names {path}, which the minimal catalog lacks")


def _generate(catalog: Path, spec_path: Path) -> None:
    """Write the files `generate.yaml` describes.

    `files:` is a list of `{path, encoding?, parts: [{text, times?, numbered?}]}`; each part's
    text is written `times` times (default 1), with `{i}` replaced by the repetition index when
    `numbered` is true. `encoding` (default utf-8) may be any Python codec, e.g. utf-16.
    """
    spec = yaml.safe_load(spec_path.read_text(encoding="utf-8"))
    for entry in spec["files"]:
        target = _inside(catalog, entry["path"])
        target.parent.mkdir(parents=True, exist_ok=True)
        encoding = entry.get("encoding", "utf-8")
        with target.open("wb") as fh:
            for part in entry["parts"]:
                text, times = part["text"], int(part.get("times", 1))
                if part.get("numbered"):
                    for i in range(times):
                        fh.write(text.replace("{i}", str(i)).encode(encoding))
                else:
                    fh.write((text * times).encode(encoding))


def build_case(case: Path, workdir: Path) -> Path:
    """Materialise `case` under `workdir` (as `workdir/catalog`); returns the catalog path."""
    catalog = workdir / "catalog"
    shutil.copytree(MINIMAL, catalog)
    for rel in _lines(case / "delete.txt"):
        _remove(_inside(catalog, rel))
    if (case / "catalog").is_dir():
        shutil.copytree(case / "catalog", catalog, symlinks=True, dirs_exist_ok=True)
    if (case / "outside").is_dir():
        shutil.copytree(case / "outside", workdir / "outside", symlinks=True)
    if (case / "generate.yaml").is_file():
        _generate(catalog, case / "generate.yaml")
    for line in _lines(case / "symlinks.txt"):
        link_rel, sep, target = (s.strip() for s in line.partition("->"))
        if not sep or not target:
            raise ValueError(f"{case}/symlinks.txt: expected 'link -> target', got {line!r}")
        link = _inside(catalog, link_rel)
        if link.is_symlink() or link.exists():
            _remove(link)
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(target)
    for rel in _lines(case / "fifos.txt"):
        fifo = _inside(catalog, rel)
        if fifo.is_symlink() or fifo.exists():
            _remove(fifo)
        fifo.parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(fifo)
    return catalog


# ---------------------------------------------------------------- running it


class CaseTimeout(Exception):
    """Raised inside the CLI run when a case exceeds its time bound (a hang, not a slow case)."""


@contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    """Interrupt the block after `seconds` (SIGALRM; only possible on the main thread)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "SIGALRM"):
        yield
        return

    def _fire(signum: int, frame: FrameType | None) -> None:
        raise CaseTimeout(f"still running after {seconds:.0f} s")

    previous = signal.signal(signal.SIGALRM, _fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run_case(case: Path, workdir: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Result, float]:
    build_case(case, workdir)
    args = shlex.split(" ".join(_lines(case / "args.txt")))
    monkeypatch.chdir(workdir)
    started = time.monotonic()
    # A hang is cut off at twice the bound so that the failure names the case instead of
    # stalling the whole run; a merely slow case fails the elapsed-time assertion below.
    with _deadline(2 * TIME_LIMIT_S):
        result = CliRunner().invoke(main, ["validate", "catalog", *args], catch_exceptions=True)
    return result, time.monotonic() - started


@pytest.mark.parametrize("case", _params())
def test_case(
    case: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, update_goldens: bool
) -> None:
    unknown = sorted(p.name for p in case.iterdir() if p.name not in KNOWN_ENTRIES)
    assert not unknown, f"unknown entries in {case.name}: {unknown} (see tests/cases/README.md)"

    result, elapsed = run_case(case, tmp_path, monkeypatch)

    # No traceback: the only exception allowed out of the command is its own sys.exit.
    exc = result.exception
    assert exc is None or isinstance(exc, SystemExit), (
        f"{type(exc).__name__}: {exc}\n{result.output}"
    )
    assert "Traceback" not in result.output
    assert elapsed < TIME_LIMIT_S, f"took {elapsed:.2f} s; the bound is {TIME_LIMIT_S} s"

    expected_path, exit_path = case / "expected.txt", case / "exit.txt"
    if update_goldens and not (case / "bug.txt").exists():
        expected_path.write_text(result.stdout, encoding="utf-8")
        exit_path.write_text(f"{result.exit_code}\n", encoding="utf-8")
    assert result.stdout == expected_path.read_text(encoding="utf-8")
    assert result.exit_code == int(exit_path.read_text(encoding="utf-8").strip())


# ---------------------------------------------------------------- the corpus as a whole

_RULE = re.compile(
    r"\"((?:yaml|header|schema|overlay|base|mixin|component|helm|ref|values|criteria"
    r"|constraint|dependency|file|catalog|recipe)\.[a-z][a-z-]*)\""
)
# Rules the validator can emit that `validate` on a case folder cannot reach, and why.
UNREACHABLE = {
    "catalog.missing": "the CLI refuses a missing directory with exit 2 before loading it",
    "file.unreadable": "tests run as root in CI, where no permission bit makes a file unreadable",
}
# Strings matched by _RULE that are file names, not rule ids.
NOT_RULES = {"criteria.yaml"}


def _expected_rules() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for case in _case_dirs():
        for path in (case / "expected.txt", case / "bug.txt"):
            if path.is_file():
                for rule in re.findall(r"\[([a-z]+\.[A-Za-z-]+)\]", path.read_text("utf-8")):
                    found.setdefault(rule, set()).add(case.name)
    return found


def test_every_rule_has_a_case() -> None:
    """Each rule id the load/validate/resolve code can emit appears in some case's expectation."""
    emitted: set[str] = set()
    for module in ("yamlio", "load", "schemas", "validate", "resolve"):
        emitted |= set(_RULE.findall((GENERATOR_DIR / f"{module}.py").read_text("utf-8")))
    emitted -= NOT_RULES
    covered = set(_expected_rules())
    missing = sorted(emitted - covered - set(UNREACHABLE))
    assert not missing, f"rules without an invalid case: {missing}"


def test_schema_keywords_have_cases() -> None:
    """`schema.<keyword>` rules are built from the failing keyword, so list the ones we promise."""
    covered = set(_expected_rules())
    wanted = {
        "schema.required",
        "schema.type",
        "schema.additionalProperties",
        "schema.enum",
        "schema.pattern",
    }
    assert wanted <= covered, sorted(wanted - covered)


def test_invalid_corpus_size() -> None:
    assert len([c for c in _case_dirs() if c.parent.name == "invalid"]) >= 32


def test_minimal_catalog_is_valid(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The base every case starts from validates cleanly, so each case's output is its own."""
    shutil.copytree(MINIMAL, tmp_path / "catalog")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["validate", "catalog", "--strict"])
    assert (result.exit_code, result.stdout) == (0, "validate catalog: ok\n")


def test_build_case_refuses_escaping_descriptor(tmp_path: Path) -> None:
    case = tmp_path / "case"
    case.mkdir()
    (case / "delete.txt").write_text("../../etc/passwd\n", encoding="utf-8")
    with pytest.raises(ValueError, match="must be relative"):
        build_case(case, tmp_path / "work")


def test_deadline_interrupts_a_hang() -> None:
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("SIGALRM needs the main thread")
    started = time.monotonic()
    with pytest.raises(CaseTimeout), _deadline(0.2):
        while True:
            time.sleep(0.01)
    assert time.monotonic() - started < 2
