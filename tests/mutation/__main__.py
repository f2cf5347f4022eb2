"""`make mutation`: mutate the trust-critical modules one change at a time and run their tests.

    python -m tests.mutation [--modules safeio,policy] [--jobs N] [--list] [--threshold 98]

For each module of `modules.toml` (or those named by `--modules`, by path or stem), every
mutant of `tests/mutation/mutants.py` is spliced into a scratch copy of the working tree and the
module's mapped test files run against it (`pytest -x -q -p no:xdist`, the specific files
first). The copy is a sibling of a link to `../shared`, and `PYTHONPATH` points at it, so the
CLI's subprocesses (`aicr-catalog`, `python -m generator`) import the mutated package too.

A mutant is *killed* when the tests fail (or exceed the time limit: `timeout`), *survived* when
they pass. A survivor listed in `equivalent.toml` (with the reason it changes no behaviour) is
*equivalent* and left out of the score: killed / (mutants - equivalent). Listed entries that
name no mutant any more (`stale`) or whose mutant was killed are reported, so the list cannot
rot silently. Exit 0 when the score of the run is at least `--threshold` percent and the list
is clean, 1 otherwise, 2 on a usage error or when the unmutated tests fail.

A report is written to `.cache/mutation/report.json` (and the per-module table printed).
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tests.mutation.mutants import Mutant, mutants

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
CONFIG = HERE / "modules.toml"
EQUIVALENT = HERE / "equivalent.toml"
REPORT = REPO / ".cache" / "mutation" / "report.json"
PYTEST_ARGS = (
    "-x",
    "-q",
    "-p",
    "no:xdist",
    "-p",
    "no:cacheprovider",
    "--no-header",
    "-m",
    "not bench and not perf and not browser",
)


@dataclass(frozen=True, slots=True)
class ModuleConfig:
    path: str
    tests: tuple[str, ...]
    functions: tuple[str, ...] = ()
    args: tuple[str, ...] = ()


@dataclass(slots=True)
class Outcome:
    module: str
    killed: list[str] = field(default_factory=list)
    timeout: list[str] = field(default_factory=list)
    survived: list[Mutant] = field(default_factory=list)
    equivalent: list[str] = field(default_factory=list)
    equivalent_killed: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def total(self) -> int:
        return len(self.killed) + len(self.timeout) + len(self.survived) + len(self.equivalent)

    @property
    def score(self) -> float:
        counted = self.total - len(self.equivalent)
        return 100.0 * (len(self.killed) + len(self.timeout)) / counted if counted else 100.0


def load_config(path: Path = CONFIG) -> list[ModuleConfig]:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    out = []
    for entry in data["module"]:
        out.append(
            ModuleConfig(
                path=entry["path"],
                tests=tuple(entry["tests"]),
                functions=tuple(entry.get("functions", ())),
                args=tuple(entry.get("args", ())),
            )
        )
    return out


def load_equivalent(path: Path = EQUIVALENT) -> dict[str, str]:
    """Stable mutant name -> why it changes no behaviour."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    out: dict[str, str] = {}
    for entry in data.get("equivalent", []):
        key, reason = entry["mutant"], entry.get("reason", "").strip()
        if not reason:
            raise SystemExit(f"equivalent.toml: {key!r} has no reason")
        if key in out:
            raise SystemExit(f"equivalent.toml: {key!r} is listed twice")
        out[key] = reason
    return out


def select(config: list[ModuleConfig], names: str) -> list[ModuleConfig]:
    if not names.strip():
        return config
    wanted = [n.strip() for n in names.replace(" ", ",").split(",") if n.strip()]
    out = []
    for name in wanted:
        hits = [m for m in config if name in (m.path, Path(m.path).stem, Path(m.path).name)]
        if not hits:
            known = ", ".join(Path(m.path).stem for m in config)
            raise SystemExit(f"--modules: {name!r} is not in modules.toml (known: {known})")
        out += [m for m in hits if m not in out]
    return out


# --- the scratch copy --------------------------------------------------------------------------


def _tree_files() -> list[str]:
    """The working tree's files (tracked and untracked, not ignored), as git lists them."""
    run = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        check=True,
        capture_output=True,
    )
    return [f for f in run.stdout.decode().split("\0") if f]


def make_copy(base: Path, name: str) -> Path:
    """A copy of the working tree at base/name/repo, with base/name/shared -> ../shared."""
    root = base / name
    repo = root / "repo"
    for rel in _tree_files():
        src = REPO / rel
        if not (src.is_file() or src.is_symlink()):
            continue
        dst = repo / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            os.symlink(os.readlink(src), dst)
        else:
            shutil.copy2(src, dst)
    shared = REPO.parent / "shared"
    if shared.is_dir():
        os.symlink(shared, root / "shared")
    return repo


def _env(repo: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(repo) + (
        os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else ""
    )
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # a mutant never leaves a stale .pyc behind
    env["AICR_MUTATION"] = "1"  # property tests draw the same examples for every mutant
    env.pop("PYTEST_ADDOPTS", None)
    return env


class Runner:
    """A fork server (forkserver.py) working in one scratch copy: runs a module's tests."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self.proc = subprocess.Popen(
            [sys.executable, str(repo / "tests" / "mutation" / "forkserver.py")],
            cwd=repo,
            env=_env(repo),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def run(
        self,
        cfg: ModuleConfig,
        limit: float | None,
        first: Sequence[str] = (),
        first_limit: float | None = None,
    ) -> tuple[str, float]:
        """("passed" | "failed" | "timeout", seconds) of the module's tests in the copy: the
        tests `first` (those that run the mutated lines) alone, then, if they pass, every test
        file one after the other (lines run only in a CLI subprocess are seen by no coverage).
        `limit`: CPU seconds per process; the wall clock may take three times that (a loaded
        machine). `first_limit`: the same for the tests `first` (default `limit`)."""
        total = 0.0
        stages = [(list(first), first_limit or limit)] if first else []
        stages += [([test], limit) for test in cfg.tests]
        for stage, stage_limit in stages:
            status, seconds = self._run([*PYTEST_ARGS, *cfg.args, *stage], stage_limit)
            total += seconds
            if status != "passed":
                return status, total
        return "passed", total

    def coverage(
        self, cfg: ModuleConfig
    ) -> tuple[str, float, dict[int, set[str]], dict[str, float]]:
        """The unmutated tests, file by file, with the tests that run each line of the module
        and the seconds each test took (traced, so slower than a mutant's run)."""
        lines: dict[int, set[str]] = {}
        took: dict[str, float] = {}
        total = 0.0
        for i, test in enumerate(cfg.tests):
            out = self.repo.parent / f"coverage-{i}.json"
            env = {"MUTATION_TARGET": str(self.repo / cfg.path), "MUTATION_COVERAGE": str(out)}
            args = [*PYTEST_ARGS, "-p", "tests.mutation.coverage_plugin", *cfg.args, test]
            status, seconds = self._run(args, None, env)
            total += seconds
            if status != "passed":
                return status, total, lines, took
            traced = json.loads(out.read_text(encoding="utf-8"))
            for line, ids in traced["lines"].items():
                lines.setdefault(int(line), set()).update(ids)
            took.update(traced["seconds"])
        return "passed", total, lines, took

    def _run(
        self, args: list[str], limit: float | None, env: dict[str, str] | None = None
    ) -> tuple[str, float]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        request = {
            "args": args,
            "cpu": int(limit) if limit else None,
            "wall": 3 * limit if limit else None,
            "env": env or {},
        }
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"the fork server in {self.repo} stopped")
        answer = json.loads(line)
        return str(answer["status"]), float(answer["seconds"])

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait()


def _check_import(repo: Path) -> None:
    """The copy's package is the one imported, in this process's children and theirs."""
    out = subprocess.run(
        [sys.executable, "-c", "import generator; print(generator.__file__)"],
        cwd=repo,
        env=_env(repo),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    if not Path(out).resolve().is_relative_to(repo.resolve()):
        raise SystemExit(f"the scratch copy is not the imported package ({out}): cannot mutate")


# --- one module --------------------------------------------------------------------------------


def mutate_module(
    cfg: ModuleConfig,
    runners: list[Runner],
    equivalent: dict[str, str],
    only: set[str] | None = None,
) -> Outcome:
    """Every mutant of one module (those named in `only`, when given) against its tests,
    `len(runners)` at a time."""
    source = (REPO / cfg.path).read_bytes()
    found = [m for m in mutants(cfg.path, source, cfg.functions) if only is None or m.key in only]
    outcome = Outcome(cfg.path)
    t0 = time.monotonic()
    if not found:
        return outcome
    took: dict[str, float] = {}
    if only is None:
        status, base, covered, took = runners[0].coverage(cfg)
    else:  # a few named mutants: no coverage run, each gets the module's whole test files
        (status, base), covered = runners[0].run(cfg, None), {}
    if status != "passed":
        raise SystemExit(f"{cfg.path}: the unmutated tests do not pass ({status}): fix them first")
    limit = max(30.0, 4 * base + 10)
    print(f"{cfg.path}: {len(found)} mutants; its tests take {base:.1f} s, limit {limit:.0f} s CPU")
    work: queue.Queue[Mutant] = queue.Queue()
    for m in found:
        work.put(m)
    lock = threading.Lock()
    done = [0]

    def worker(runner: Runner) -> None:
        target = runner.repo / cfg.path
        while True:
            try:
                m = work.get_nowait()
            except queue.Empty:
                return
            target.write_bytes(m.apply(source))
            try:
                first = set().union(*(covered.get(n, set()) for n in range(m.line, m.end_line + 1)))
                # the module's own files first, in the configured order (most specific first)
                order = {t: i for i, t in enumerate(cfg.tests)}
                ranked = sorted(first, key=lambda n: (order.get(n.split("::")[0], 99), n))
                # those tests' own limit: a mutant looping for ever in a test of a second is
                # stopped in a minute, not after the whole module's limit (a file's import and
                # module fixtures are in its first test's time, the 30 s floor covers collection)
                own = max(30.0, 4 * sum(took.get(n, base) for n in ranked) + 10)
                status, _ = runner.run(cfg, limit, ranked, min(own, limit))
            finally:
                target.write_bytes(source)
            with lock:
                done[0] += 1
                if done[0] % 10 == 0 or done[0] == len(found):
                    print(f"  {done[0]}/{len(found)} run, {len(outcome.survived)} survived so far")
                if status == "passed":
                    if m.key in equivalent:
                        outcome.equivalent.append(m.key)
                    else:
                        outcome.survived.append(m)
                        print(f"  SURVIVED {cfg.path}:{m.line}: {m.key}\n    -> {m.replacement}")
                elif m.key in equivalent:
                    outcome.equivalent_killed.append(m.key)
                    outcome.killed.append(m.key)
                elif status == "timeout":
                    outcome.timeout.append(m.key)
                else:
                    outcome.killed.append(m.key)
                sys.stdout.flush()

    threads = [threading.Thread(target=worker, args=(r,)) for r in runners]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    outcome.survived.sort(key=lambda m: m.start)
    outcome.seconds = time.monotonic() - t0
    return outcome


# --- the run -----------------------------------------------------------------------------------


def table(outcomes: Sequence[Outcome]) -> str:
    rows = ["| module | mutants | killed | timeout | survived | equivalent | score |"]
    rows.append("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for o in outcomes:
        rows.append(
            f"| `{o.module}` | {o.total} | {len(o.killed)} | {len(o.timeout)} | "
            f"{len(o.survived)} | {len(o.equivalent)} | {o.score:.1f} % |"
        )
    total = sum(o.total for o in outcomes)
    killed = sum(len(o.killed) + len(o.timeout) for o in outcomes)
    eq = sum(len(o.equivalent) for o in outcomes)
    score = 100.0 * killed / (total - eq) if total - eq else 100.0
    rows.append(
        f"| **all** | {total} | {sum(len(o.killed) for o in outcomes)} | "
        f"{sum(len(o.timeout) for o in outcomes)} | {sum(len(o.survived) for o in outcomes)} | "
        f"{eq} | **{score:.1f} %** |"
    )
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.mutation", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--modules",
        default=os.environ.get("MODULES", ""),
        help="paths or stems, comma-separated (default: all of modules.toml)",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=int(os.environ.get("JOBS", "1") or 1),
        help="mutants run at once, each in its own copy (default 1)",
    )
    parser.add_argument("--threshold", type=float, default=98.0, help="minimum score in percent")
    parser.add_argument("--list", action="store_true", help="print the mutants' names and exit")
    parser.add_argument(
        "--report",
        type=Path,
        default=REPORT,
        help="where to write the JSON report (the survivors' names go beside it, .survivors.txt)",
    )
    parser.add_argument(
        "--keys",
        type=Path,
        help="a file of mutant names, one a line: run only those (e.g. the survivors of a run)",
    )
    args = parser.parse_args(argv)

    config = select(load_config(), args.modules)
    equivalent = load_equivalent()
    if args.list:
        for cfg in config:
            for m in mutants(cfg.path, (REPO / cfg.path).read_bytes(), cfg.functions):
                print(f"{cfg.path}:{m.line}: {m.key}\n    -> {m.replacement}")
        return 0
    for cfg in config:
        for t in cfg.tests:
            if not (REPO / t.split("::")[0]).is_file():
                print(f"modules.toml: {cfg.path}: test file {t} does not exist", file=sys.stderr)
                return 2
    all_keys = {
        m.key
        for cfg in load_config()
        if (REPO / cfg.path).is_file()
        for m in mutants(cfg.path, (REPO / cfg.path).read_bytes(), cfg.functions)
    }
    stale = sorted(k for k in equivalent if k not in all_keys)
    present = [c for c in config if (REPO / c.path).is_file()]
    for c in config:
        if c not in present:
            print(f"{c.path}: absent, skipped")

    only = None
    if args.keys:
        only = {k.strip() for k in args.keys.read_text(encoding="utf-8").splitlines() if k.strip()}
    jobs = max(1, args.jobs)
    outcomes: list[Outcome] = []
    base = Path(tempfile.mkdtemp(prefix="aicr-mutation-"))
    runners: list[Runner] = []
    try:
        repos = [make_copy(base, f"w{i}") for i in range(jobs)]
        _check_import(repos[0])
        runners.extend(Runner(r) for r in repos)
        for cfg in present:
            o = mutate_module(cfg, runners, equivalent, only)
            outcomes.append(o)
            print(
                f"{o.module}: {o.total} mutants: {len(o.killed)} killed, {len(o.timeout)} "
                f"timed out, {len(o.survived)} survived, {len(o.equivalent)} equivalent: "
                f"score {o.score:.1f} % ({o.seconds:.0f} s)",
                flush=True,
            )
    finally:
        for runner in runners:
            runner.close()
        shutil.rmtree(base, ignore_errors=True)

    print()
    print(table(outcomes))
    killed_eq = [k for o in outcomes for k in o.equivalent_killed]
    for k in killed_eq:
        print(f"equivalent.toml lists a mutant the tests kill (remove it): {k}")
    for k in stale:
        print(f"equivalent.toml names no current mutant (stale: update or remove it): {k}")
    args.report.parent.mkdir(parents=True, exist_ok=True)
    args.report.with_suffix(".survivors.txt").write_text(
        "".join(f"{m.key}\n" for o in outcomes for m in o.survived), encoding="utf-8"
    )
    args.report.write_text(
        json.dumps(
            {
                "modules": [
                    {
                        "module": o.module,
                        "mutants": o.total,
                        "killed": len(o.killed),
                        "timeout": len(o.timeout),
                        "equivalent": len(o.equivalent),
                        "survived": [f"{m.key} (line {m.line})" for m in o.survived],
                        "score": round(o.score, 2),
                    }
                    for o in outcomes
                ],
                "stale_equivalents": stale,
                "killed_equivalents": killed_eq,
            },
            indent=2,
        )
        + "\n",
        encoding="utf-8",
    )
    total = sum(o.total - len(o.equivalent) for o in outcomes)
    killed = sum(len(o.killed) + len(o.timeout) for o in outcomes)
    score = 100.0 * killed / total if total else 100.0
    ok = score >= args.threshold and not killed_eq and not stale
    print(f"\nscore {score:.1f} % (threshold {args.threshold:.0f} %): {'ok' if ok else 'FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
