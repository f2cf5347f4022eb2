"""The case corpus: every folder under tests/cases/{invalid,hostile}/ is one `validate` run.

A case is the minimal valid catalog (tests/cases/minimal/) plus the changes its folder describes,
and the exact stdout and exit code `aicr-catalog validate catalog` must give for it. The folder
format is documented in tests/cases/README.md; adding a case is adding a folder.
"""

from __future__ import annotations

import ast
import faulthandler
import importlib
import json
import os
import re
import resource
import select
import shlex
import shutil
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from types import FrameType
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from generator.catalog.load import load_catalog
from generator.cli import main
from generator.validate import validate_catalog

CASES = Path(__file__).resolve().parent / "cases"
MINIMAL = CASES / "minimal"
SUITES = ("invalid", "hostile")
GENERATOR_DIR = Path(__file__).resolve().parent.parent / "generator"

# Per case: CPU seconds of the whole `validate` run. CPU time, not wall clock, so that a busy
# machine (parallel test workers, other jobs) does not fail a case. A run spinning is
# interrupted at HANG_FACTOR times the bound in CPU seconds; one blocked (a read that never
# returns, using no CPU) at WALL_FACTOR times it in wall seconds, far above what a loaded 2-core
# machine stretches a case to (`hostile/components-10000` failed a 20 s wall deadline).
# The bound catches super-linear blow-ups, not a slow second: the heaviest case,
# `hostile/components-10000` (10,001 components, one dependency chain), takes 4.6-5.0 CPU-s on a
# quiet 2-core machine (jsonschema over the registry dominates) and 5.95 under a loaded
# `make test`, where a 5 s bound failed; a quadratic regression there costs minutes, so 10 CPU-s
# keeps the case's purpose with a margin that holds under load.
TIME_LIMIT_S = 10.0
HANG_FACTOR = 4
WALL_FACTOR = 12
MEMORY_LIMIT = 512 * 1024 * 1024  # address space a case may add to the process, in bytes

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
        "command.txt",  # the command instead of `validate catalog` (shell words)
        "expected.txt",  # the exact stdout
        "stderr.txt",  # the exact stderr (optional; cases of other commands use it)
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
    """Write the files `generate.yaml` describes (format in tests/cases/README.md).

    `files:` is a list of `{path, count?, encoding?, size?, parts: [{text, times?, numbered?}]}`.
    Each part's text is written `times` times (default 1), with `{i}` and `{i-1}` replaced by the
    repetition index and the one before when `numbered` is true. With `count: N` the entry makes N files, `{n}` and `{n-1}` in
    its path and texts replaced by the file's index and the one before. `size` then extends
    the file to that many bytes (a sparse file: a huge size costs no disk). `encoding` (default
    utf-8) may be any Python codec.
    """
    spec = yaml.safe_load(spec_path.read_text(encoding="utf-8"))
    for entry in spec["files"]:
        counted = "count" in entry
        for n in range(int(entry.get("count", 1))):

            def sub(text: str, n: int = n, counted: bool = counted) -> str:
                if not counted:
                    return text
                return text.replace("{n-1}", str(n - 1)).replace("{n}", str(n))

            target = _inside(catalog, sub(entry["path"]))
            target.parent.mkdir(parents=True, exist_ok=True)
            encoding = entry.get("encoding", "utf-8")
            with target.open("wb") as fh:
                for part in entry.get("parts", ()):
                    text, times = sub(part["text"]), int(part.get("times", 1))
                    if part.get("numbered"):
                        for i in range(times):
                            line = text.replace("{i-1}", str(i - 1)).replace("{i}", str(i))
                            fh.write(line.encode(encoding))
                    else:
                        fh.write((text * times).encode(encoding))
                if "size" in entry:
                    fh.truncate(int(entry["size"]))


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
def _deadline(seconds: float, cpu: float | None = None) -> Iterator[None]:
    """Interrupt the block after `seconds` of wall-clock time (SIGALRM) or, with `cpu`, after
    that many CPU seconds of this process (SIGPROF); only possible on the main thread."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "SIGALRM"):
        yield
        return

    def _fire(signum: int, frame: FrameType | None) -> None:
        raise CaseTimeout(f"still running after {seconds:g} s")

    def _spent(signum: int, frame: FrameType | None) -> None:
        raise CaseTimeout(f"still running after {cpu:g} CPU s")

    previous = signal.signal(signal.SIGALRM, _fire)
    previous_prof = signal.signal(signal.SIGPROF, _spent)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    if cpu is not None:
        signal.setitimer(signal.ITIMER_PROF, cpu)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGALRM, previous)
        signal.signal(signal.SIGPROF, previous_prof)


def _vm_bytes(field: str) -> int:
    """VmSize / VmRSS of this process, from /proc (0 where /proc is absent)."""
    try:
        text = Path("/proc/self/status").read_text(encoding="ascii")
    except OSError:
        return 0
    m = re.search(rf"^{field}:\s+(\d+) kB", text, re.M)
    return int(m.group(1)) * 1024 if m else 0


@dataclass(frozen=True, slots=True)
class Outcome:
    """What an isolated run returned, or how its process ended."""

    payload: dict[str, Any]  # what the function returned (empty when the child died)
    elapsed: float  # CPU seconds the child spent in `fn`
    grown: int  # bytes: peak resident size of the child minus its size at the start
    error: str | None  # an exception that escaped the function, as "Type: message"
    died: str | None  # the child's process ended abnormally: signal, hard time limit


def run_isolated(fn: Callable[[], dict[str, Any]], *, seconds: float, memory: int) -> Outcome:
    """Run `fn` in a forked child limited to `memory` more bytes of address space.

    A crash (segmentation fault), an exhausted memory limit or a hang ends the child, not the
    test session: `fn` is interrupted after HANG_FACTOR * `seconds` of CPU time or WALL_FACTOR *
    `seconds` of wall-clock time, and the parent kills a child that has not reported two
    `seconds` after that.
    """
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        status = 0
        try:
            os.close(read_fd)
            faulthandler.disable()  # a crash is the parent's to report, without a dump
            base = _vm_bytes("VmSize")
            if base:
                resource.setrlimit(resource.RLIMIT_AS, (base + memory, base + memory))
            rss0 = _vm_bytes("VmRSS")
            started = time.process_time()
            report: dict[str, Any] = {"payload": {}, "error": None}
            try:
                with _deadline(WALL_FACTOR * seconds, cpu=HANG_FACTOR * seconds):
                    report["payload"] = fn()
            except BaseException as e:  # reported to the parent, which fails the test
                report["error"] = f"{type(e).__name__}: {e}"
            report["elapsed"] = time.process_time() - started
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
            report["grown"] = max(0, peak - rss0) if rss0 else 0
            with os.fdopen(write_fd, "wb") as fh:
                fh.write(json.dumps(report).encode("utf-8"))
        except BaseException:
            status = 70
        finally:
            os._exit(status)
    os.close(write_fd)
    chunks: list[bytes] = []
    limit = time.monotonic() + (WALL_FACTOR + 2) * seconds
    died = None
    with os.fdopen(read_fd, "rb", buffering=0) as fh:
        while True:
            remaining = limit - time.monotonic()
            if remaining <= 0:
                os.kill(pid, signal.SIGKILL)
                died = f"killed after {(WALL_FACTOR + 2) * seconds:.0f} s"
                break
            ready, _, _ = select.select([fh], [], [], remaining)
            if ready:
                chunk = fh.read(1 << 16)
                if not chunk:
                    break
                chunks.append(chunk)
    _, status = os.waitpid(pid, 0)
    if died is None and os.WIFSIGNALED(status):
        died = f"died of signal {signal.Signals(os.WTERMSIG(status)).name}"
    elif died is None and os.WEXITSTATUS(status) != 0:
        died = f"exited with status {os.WEXITSTATUS(status)} before reporting"
    if died is not None:
        return Outcome({}, 0.0, 0, None, died)
    report = json.loads(b"".join(chunks))
    return Outcome(report["payload"], report["elapsed"], report["grown"], report["error"], None)


def run_case(case: Path, workdir: Path) -> Outcome:
    """Build `case` under `workdir` and run `validate` on it in an isolated child."""
    build_case(case, workdir)
    command = shlex.split(" ".join(_lines(case / "command.txt"))) or ["validate", "catalog"]
    args = shlex.split(" ".join(_lines(case / "args.txt")))

    def validate() -> dict[str, Any]:
        os.chdir(workdir)
        result = CliRunner().invoke(main, [*command, *args], catch_exceptions=True)
        exc = result.exception
        return {
            "stdout": result.stdout,
            "stderr": result.stderr,
            "output": result.output,
            "exit_code": result.exit_code,
            # the only exception allowed out of the command is its own sys.exit
            "exception": None
            if exc is None or isinstance(exc, SystemExit)
            else f"{type(exc).__name__}: {exc}",
        }

    return run_isolated(validate, seconds=TIME_LIMIT_S, memory=MEMORY_LIMIT)


def _imported_by(package: str) -> set[str]:
    """Every module the modules of `package` import, at their top or inside a function (the
    commands load theirs on first use), as absolute names."""
    names: set[str] = set()
    for path in sorted((GENERATOR_DIR.parent / package.replace(".", "/")).glob("*.py")):
        stem = path.stem
        names.add(package if stem == "__init__" else f"{package}.{stem}")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module)
    return names


@pytest.fixture(scope="module")
def warm_caches() -> None:
    """Validate the minimal catalog once in this process, so that forked children inherit the
    compiled schemas and imported modules and each case's time is its own. The commands the
    cases run (`validate`, `evidence verify`, ...) and what they import on first use (sigstore,
    cryptography, pydantic: about 0.8 CPU-s) are imported here too, once, rather than in the
    forked child of every case: importing loads code, it computes nothing about a case."""
    catalog, diags = load_catalog(MINIMAL)
    assert validate_catalog(catalog, load_diagnostics=diags) == ()
    for name in sorted(_imported_by("generator.commands") | _imported_by("generator.evidence")):
        importlib.import_module(name)


@pytest.mark.parametrize("case", _params())
@pytest.mark.usefixtures("warm_caches")
def test_case(case: Path, tmp_path: Path, update_goldens: bool) -> None:
    unknown = sorted(p.name for p in case.iterdir() if p.name not in KNOWN_ENTRIES)
    assert not unknown, f"unknown entries in {case.name}: {unknown} (see tests/cases/README.md)"

    out = run_case(case, tmp_path)

    assert out.died is None, f"the validate process {out.died}"
    assert out.error is None, out.error
    result = out.payload
    assert result["exception"] is None, f"{result['exception']}\n{result['output']}"
    assert "Traceback" not in result["output"]
    assert out.elapsed < TIME_LIMIT_S, (
        f"took {out.elapsed:.2f} CPU seconds; the bound is {TIME_LIMIT_S} s"
    )

    expected_path, exit_path = case / "expected.txt", case / "exit.txt"
    stderr_path = case / "stderr.txt"
    if update_goldens and not (case / "bug.txt").exists():
        expected_path.write_text(result["stdout"], encoding="utf-8")
        exit_path.write_text(f"{result['exit_code']}\n", encoding="utf-8")
        if (case / "command.txt").is_file() or stderr_path.is_file():
            stderr_path.write_text(result["stderr"], encoding="utf-8")
    assert result["stdout"] == expected_path.read_text(encoding="utf-8")
    if stderr_path.is_file():
        assert result["stderr"] == stderr_path.read_text(encoding="utf-8")
    assert result["exit_code"] == int(exit_path.read_text(encoding="utf-8").strip())


# ---------------------------------------------------------------- the corpus as a whole

_RULE = re.compile(
    r"\"((?:yaml|header|schema|overlay|base|mixin|component|helm|ref|values|criteria"
    r"|constraint|dependency|file|catalog|recipe)\.[a-z][a-z-]*)\""
)
# Rules the validator can emit that `validate` on a case folder cannot reach, and why.
UNREACHABLE = {
    "catalog.missing": "the CLI refuses a missing directory with exit 2 before loading it",
}
# Strings matched by _RULE that are file names, not rule ids.
NOT_RULES = {"criteria.yaml"}


def _expected_rules() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for case in _case_dirs():
        # a command other than `validate` prints its diagnostics on stderr (exact, too)
        for path in (case / "expected.txt", case / "stderr.txt", case / "bug.txt"):
            if path.is_file():
                for rule in re.findall(r"\[([a-z]+\.[A-Za-z-]+)\]", path.read_text("utf-8")):
                    found.setdefault(rule, set()).add(case.name)
    return found


def test_every_rule_has_a_case() -> None:
    """Each rule id the load/validate/resolve code can emit appears in some case's expectation."""
    emitted: set[str] = set()
    for module in ("core/yamlio", "catalog/load", "catalog/schemas", "validate", "catalog/resolve"):
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


def test_isolation_survives_a_crash() -> None:
    def crash() -> dict[str, Any]:
        os.kill(os.getpid(), signal.SIGSEGV)
        return {}

    out = run_isolated(crash, seconds=1, memory=MEMORY_LIMIT)
    assert out.died == "died of signal SIGSEGV"


def test_isolation_kills_a_hang_that_ignores_the_alarm() -> None:
    def hang() -> dict[str, Any]:
        signal.signal(signal.SIGALRM, signal.SIG_IGN)
        while True:
            time.sleep(0.05)

    started = time.monotonic()
    out = run_isolated(hang, seconds=0.2, memory=MEMORY_LIMIT)
    assert out.died == "killed after 3 s" and time.monotonic() - started < 8


def test_isolation_interrupts_a_hang_with_a_clean_error() -> None:
    def hang() -> dict[str, Any]:
        while True:
            time.sleep(0.05)

    out = run_isolated(hang, seconds=0.1, memory=MEMORY_LIMIT)
    assert out.died is None and out.error == "CaseTimeout: still running after 1.2 s"


def test_deadline_interrupts_a_spinning_run_by_its_cpu_time() -> None:
    """However long a busy machine makes it take, a spin is stopped by the CPU it used."""
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals need the main thread")
    started = time.process_time()
    with pytest.raises(CaseTimeout, match=r"after 0\.2 CPU s"), _deadline(120, cpu=0.2):
        n = 0
        while True:
            n += 1
    assert time.process_time() - started >= 0.1  # the timer counts every thread of the process


def test_isolation_bounds_memory() -> None:
    def hog() -> dict[str, Any]:
        return {"n": len(bytearray(2 * MEMORY_LIMIT))}

    out = run_isolated(hog, seconds=2, memory=MEMORY_LIMIT)
    assert out.died is None and out.error is not None and out.error.startswith("MemoryError")


def test_isolation_reports_payload_time_and_memory() -> None:
    def work() -> dict[str, Any]:
        block = bytearray(64 * 1024 * 1024)
        block[::4096] = b"x" * len(block[::4096])  # touch every page so it is resident
        return {"size": len(block)}

    out = run_isolated(work, seconds=2, memory=MEMORY_LIMIT)
    assert out.payload == {"size": 64 * 1024 * 1024} and out.error is None and out.died is None
    assert 0 <= out.elapsed < 2
    assert out.grown >= 60 * 1024 * 1024


_LINE = re.compile(
    r"^(?P<path>[^\n]+?)(?::(?P<line>\d+):(?P<col>\d+))?: (?P<jp>\$[^ ]*): (?:warning: )?"
    r"(?P<msg>.+) \[(?P<rule>[a-z]+\.[A-Za-z-]+)\]$"
)
_SUMMARY = re.compile(
    r"^validate catalog: (ok( \(\d+ warning\(s\)\))?|\d+ error\(s\), \d+ warning\(s\) in \d+ file\(s\))$"
)


@pytest.mark.parametrize("case", _case_dirs(), ids=lambda c: f"{c.parent.name}/{c.name}")
def test_case_folder_is_documented_and_expectation_well_formed(case: Path) -> None:
    """Every case says what it tests; every text expectation is diagnostics + one summary line."""
    assert (case / "about.txt").is_file(), "each case needs an about.txt"
    if _lines(case / "args.txt") or _lines(case / "command.txt"):
        return  # other formats and commands have their own shapes
    *diags, summary = (case / "expected.txt").read_text(encoding="utf-8").splitlines()
    assert _SUMMARY.match(summary), summary
    for line in diags:
        m = _LINE.match(line)
        assert m, f"not one diagnostic per line: {line!r}"
        assert not m["path"].startswith("/"), "paths are catalog-relative"
        assert m["line"] is None or int(m["line"]) >= 1
    assert diags == sorted(diags, key=_sort_key), "diagnostics are sorted by file, line, column"
    errors = sum(1 for d in diags if ": warning: " not in d)
    if errors:
        assert summary.startswith(f"validate catalog: {errors} error(s)")


def _sort_key(line: str) -> tuple[str, int, int]:
    m = _LINE.match(line)
    assert m
    return m["path"], int(m["line"] or 0), int(m["col"] or 0)
