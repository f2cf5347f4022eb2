"""Child processes have one door, held by reading the code: `generator/core/proc.py`.

The door runs a program with an argv list (no shell), stdin from /dev/null, a timeout, bounded
output and an environment built from an allow-list (a token in the build's environment never
reaches a child). Code added later that calls `subprocess` itself would bypass all of that, so
this test reads every module of `generator/` with `ast` and fails on any way of starting
another program anywhere else: importing `subprocess` (any spelling, `importlib` and
`__import__` included), `asyncio.create_subprocess_*`, `os.system`/`popen`/`exec*`/`spawn*`/
`posix_spawn*`/`fork*`, and `pty`. The forked workers of `generator/fast/pool.py`
(`multiprocessing`) run this program's own code, not another program, and are not a child
process in this sense.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

GENERATOR = Path(__file__).resolve().parent.parent / "generator"

DOOR = "core/proc.py"

# module -> why it may start processes itself: none. The benchmark harness (bench/run.py), the
# last module listed here, starts the builds it measures with `proc.spawn`, which gives the pid
# it samples while the build runs.
EXCEPTIONS: dict[str, str] = {}

_MODULES = frozenset({"subprocess", "pty", "asyncio.subprocess"})  # importing these is the call
_OS = frozenset(
    {
        "system",
        "popen",
        "execl",
        "execle",
        "execlp",
        "execlpe",
        "execv",
        "execve",
        "execvp",
        "execvpe",
        "spawnl",
        "spawnle",
        "spawnlp",
        "spawnlpe",
        "spawnv",
        "spawnve",
        "spawnvp",
        "spawnvpe",
        "posix_spawn",
        "posix_spawnp",
        "fork",
        "forkpty",
    }
)
_ASYNCIO = frozenset({"create_subprocess_exec", "create_subprocess_shell", "subprocess"})
_FUNCTIONS = {"os": _OS, "posix": _OS, "asyncio": _ASYNCIO}
_IMPORTERS = frozenset({"__import__", "import_module"})


def _forbidden_module(name: str) -> bool:
    return name in _MODULES or name.split(".")[0] in {"subprocess", "pty"}


def violations(source: str) -> Iterator[tuple[int, str]]:
    """(line, what) for every way `source` starts another program outside the door."""
    tree = ast.parse(source)
    modules: dict[str, str] = {}  # local name -> module, for `import os as o`
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _forbidden_module(alias.name):
                    yield node.lineno, f"import {alias.name}"
                elif alias.name in _FUNCTIONS:
                    modules[alias.asname or alias.name] = alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if _forbidden_module(node.module):
                yield node.lineno, f"from {node.module} import"
            for alias in node.names:
                if _forbidden_module(f"{node.module}.{alias.name}"):
                    yield node.lineno, f"from {node.module} import {alias.name}"
                elif alias.name in _FUNCTIONS.get(node.module, ()) or alias.name == "*":
                    yield node.lineno, f"{node.module}.{alias.name}"
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else None
        attr = func.attr if isinstance(func, ast.Attribute) else None
        args = [a.value for a in node.args if isinstance(a, ast.Constant)]
        if (name in _IMPORTERS or attr in _IMPORTERS) and any(
            isinstance(a, str) and _forbidden_module(a) for a in args
        ):
            yield node.lineno, f"import of {args[0]} by name"
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            module = modules.get(func.value.id)
            if module is not None and func.attr in _FUNCTIONS[module]:
                yield node.lineno, f"{module}.{func.attr}()"
        elif name == "getattr" and len(node.args) >= 2:
            base, what = node.args[0], node.args[1]
            if (
                isinstance(base, ast.Name)
                and base.id in modules
                and isinstance(what, ast.Constant)
                and what.value in _FUNCTIONS[modules[base.id]]
            ):
                yield node.lineno, f"{modules[base.id]}.{what.value}()"


def scan(root: Path) -> tuple[list[str], set[str]]:
    """(every start of a program outside the door, the exceptions used) under `root`."""
    found: list[str] = []
    used: set[str] = set()
    for path in sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts):
        rel = path.relative_to(root).as_posix()
        if rel == DOOR:
            continue
        hits = list(violations(path.read_text("utf-8")))
        if hits and rel in EXCEPTIONS:
            used.add(rel)
            continue
        found += [f"generator/{rel}:{line}: {what}" for line, what in hits]
    return found, used


def test_child_processes_start_only_in_the_door() -> None:
    found, used = scan(GENERATOR)
    assert found == [], (
        "a child process started outside generator/core/proc.py; run it with "
        "proc.run(argv, timeout=...) or proc.git(repo, *args, timeout=...):\n" + "\n".join(found)
    )
    assert used == set(EXCEPTIONS), f"exceptions no longer needed: {set(EXCEPTIONS) - used}"


def test_the_door_is_where_it_is_said_to_be() -> None:
    assert list(violations((GENERATOR / DOOR).read_text("utf-8")))  # it imports subprocess


def test_every_exception_gives_a_reason() -> None:
    assert all(len(reason.split()) >= 8 for reason in EXCEPTIONS.values())
    assert len(EXCEPTIONS) <= 2


SYNTHETIC = [
    ("import subprocess", "import subprocess"),
    ("import subprocess as sp", "import subprocess"),
    ("from subprocess import run", "from subprocess import"),
    ("from subprocess import Popen as P", "from subprocess import"),
    ("import asyncio.subprocess", "import asyncio.subprocess"),
    ("from asyncio import subprocess", "from asyncio import subprocess"),
    ("import asyncio\nasyncio.create_subprocess_exec('git')", "asyncio.create_subprocess_exec()"),
    ("from asyncio import create_subprocess_shell", "asyncio.create_subprocess_shell"),
    ("import os\nos.system('git log')", "os.system()"),
    ("import os as o\no.system('git log')", "os.system()"),
    ("from os import system", "os.system"),
    ("from os import system as s", "os.system"),
    ("from os import *", "os.*"),
    ("import os\nos.popen('git log')", "os.popen()"),
    ("import os\nos.execvp('git', ['git'])", "os.execvp()"),
    ("import os\nos.execve('/bin/sh', [], {})", "os.execve()"),
    ("from os import execl", "os.execl"),
    ("import os\nos.spawnlp(os.P_WAIT, 'git', 'git')", "os.spawnlp()"),
    ("import os\nos.posix_spawnp('git', ['git'], {})", "os.posix_spawnp()"),
    ("import os\nos.fork()", "os.fork()"),
    ("import posix\nposix.system('x')", "posix.system()"),
    ("import os\ngetattr(os, 'system')('x')", "os.system()"),
    ("import pty", "import pty"),
    ("import pty as p\np.spawn(['sh'])", "import pty"),
    ("from pty import spawn", "from pty import"),
    ("__import__('subprocess')", "import of subprocess by name"),
    ("import importlib\nimportlib.import_module('subprocess')", "import of subprocess by name"),
    ("from importlib import import_module\nimport_module('pty')", "import of pty by name"),
]


@pytest.mark.parametrize(("source", "what"), SYNTHETIC, ids=[s for s, _ in SYNTHETIC])
def test_the_scanner_finds_each_spelling(source: str, what: str) -> None:
    """The test proves itself: a module starting a program each way is caught."""
    module = "def f():\n    " + source.replace("\n", "\n    ") + "\n"
    assert what in [w for _, w in violations(module)]


@pytest.mark.parametrize(
    "source",
    [
        "from generator.core import proc\nproc.run(['git', 'log'], timeout=10)",
        "from generator.core.proc import git\ngit(repo, 'log', timeout=10)",
        "import os\nos.environ.get('X')",
        "import os\nos.kill(pid, 9)",
        "import shutil\nshutil.which('git')",
        "import multiprocessing\nmultiprocessing.get_context('fork')",
        "x.system('a')",  # not the os module
        "s = 'subprocess'",
    ],
)
def test_the_scanner_lets_other_calls_pass(source: str) -> None:
    assert list(violations(source)) == []


def test_a_planted_module_fails_the_suite(tmp_path: Path) -> None:
    """A new caller of git added outside the door is what the main test reports; the door
    itself and the listed exception pass."""
    (tmp_path / "core").mkdir()
    (tmp_path / "bench").mkdir()
    (tmp_path / "site").mkdir()
    (tmp_path / DOOR).write_text((GENERATOR / DOOR).read_text("utf-8"))
    (tmp_path / "bench" / "run.py").write_text("from generator.core import proc\n")
    (tmp_path / "site" / "planted.py").write_text(
        "import subprocess as sp\n\n"
        "def head(repo):\n"
        "    return sp.run(['git', '-C', repo, 'rev-parse', 'HEAD'], check=False)\n"
    )
    found, used = scan(tmp_path)
    assert found == ["generator/site/planted.py:1: import subprocess"]
    assert used == set()
    (tmp_path / "bench" / "run.py").write_text("import subprocess\n")  # no exception any more
    assert scan(tmp_path)[0][0] == "generator/bench/run.py:1: import subprocess"
