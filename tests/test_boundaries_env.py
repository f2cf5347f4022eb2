"""The process environment has one reader: `generator/core/envvars.py`.

A variable of the environment is an input like a file (CI puts its secrets there), and one read
in the middle of a stage changes what the tool does without an option saying so. The door
reads only the variables it lists (`envvars.READ`, each with its reason) and sets only those of
`envvars.SET`; `core/proc.py` alone hands variables on to a child (`envvars.for_child`). This test
reads every module of `generator/` with `ast` and fails on any other read or change of the
environment: `os.environ` (and `environb`), `os.getenv`/`putenv`/`unsetenv` (any spelling:
`import os as o`, `from os import environ`, `getattr(os, "environ")`, `posix`), `Path.home()`,
`expanduser`/`expandvars` (they read `$HOME` and any variable), click's `envvar=` and
`auto_envvar_prefix=`, and a call of `envvars.for_child` outside `core/proc.py`.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from generator.core import envvars

GENERATOR = Path(__file__).resolve().parent.parent / "generator"
DOOR = "core/envvars.py"
CHILD_DOOR = "core/proc.py"  # the one caller of `envvars.for_child`

_OS_NAMES = frozenset({"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"})
_OS_MODULES = frozenset({"os", "posix", "nt"})
_PATH_FUNCS = frozenset({"expanduser", "expandvars"})  # os.path.<name>, Path.<name>()
_CLICK_KEYWORDS = frozenset({"envvar", "auto_envvar_prefix"})


def violations(source: str, *, may_hand_on: bool = False) -> Iterator[tuple[int, str]]:
    """(line, what) for every read or change of the environment in `source` outside the door."""
    tree = ast.parse(source)
    modules: set[str] = set()  # local names of os / posix
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {a.asname or a.name for a in node.names if a.name in _OS_MODULES}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                if node.module in _OS_MODULES and alias.name in (*_OS_NAMES, "*"):
                    yield node.lineno, f"{node.module}.{alias.name}"
                elif node.module in ("os.path", "posixpath") and alias.name in _PATH_FUNCS:
                    yield node.lineno, f"os.path.{alias.name}"
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            base = node.value
            if isinstance(base, ast.Name) and base.id in modules and node.attr in _OS_NAMES:
                yield node.lineno, f"os.{node.attr}"
            elif node.attr in _PATH_FUNCS:
                yield node.lineno, f"{node.attr}()"
            elif node.attr == "home" and isinstance(base, ast.Name) and base.id == "Path":
                yield node.lineno, "Path.home()"
            elif (
                node.attr == "for_child"
                and isinstance(base, ast.Name)
                and base.id == "envvars"
                and not may_hand_on
            ):
                yield node.lineno, "envvars.for_child()"
        elif isinstance(node, ast.Call):
            for kw in node.keywords:
                if kw.arg in _CLICK_KEYWORDS:
                    yield node.lineno, f"click {kw.arg}="
            func = node.func
            if isinstance(func, ast.Name) and func.id == "getattr" and len(node.args) >= 2:
                base, what = node.args[0], node.args[1]
                if (
                    isinstance(base, ast.Name)
                    and base.id in modules
                    and isinstance(what, ast.Constant)
                    and what.value in _OS_NAMES
                ):
                    yield node.lineno, f"os.{what.value}"
        elif isinstance(node, ast.ImportFrom) and node.module == "generator.core.envvars":
            if any(a.name == "for_child" for a in node.names) and not may_hand_on:
                yield node.lineno, "envvars.for_child()"


def scan(root: Path) -> list[str]:
    found: list[str] = []
    for path in sorted(p for p in root.rglob("*.py") if "__pycache__" not in p.parts):
        rel = path.relative_to(root).as_posix()
        if rel == DOOR:
            continue
        hits = violations(path.read_text("utf-8"), may_hand_on=rel == CHILD_DOOR)
        found += [f"generator/{rel}:{line}: {what}" for line, what in hits]
    return found


def test_the_environment_is_read_only_through_the_door() -> None:
    assert scan(GENERATOR) == [], (
        "the environment read or changed outside generator/core/envvars.py; read a variable "
        "with envvars.get(NAME) after adding NAME to envvars.READ with its reason"
    )


def test_the_door_is_where_it_is_said_to_be() -> None:
    assert list(violations((GENERATOR / DOOR).read_text("utf-8")))  # it reads os.environ


def test_every_variable_read_or_set_gives_a_reason() -> None:
    for name, why in {**envvars.READ, **envvars.SET}.items():
        assert name == name.upper() and len(why.split()) >= 5, name


def test_every_variable_listed_is_used() -> None:
    """A variable no module names any more leaves the list (its key in READ or SET is one
    mention; a use is another)."""
    literals: list[str] = []
    for path in sorted(p for p in GENERATOR.rglob("*.py") if "__pycache__" not in p.parts):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                literals.append(node.value)
    for name in envvars.READ:
        assert literals.count(name) >= 2, f"{name} is listed in envvars.READ but never read"


def test_an_unlisted_variable_is_a_bug_not_a_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_secret")
    with pytest.raises(KeyError, match="GITHUB_TOKEN"):
        envvars.get("GITHUB_TOKEN")
    with pytest.raises(KeyError, match="PATH"):
        with envvars.setting("PATH", "/nowhere"):
            pass


def test_a_listed_variable_is_read_and_a_set_one_restored(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "5")
    assert envvars.get("SOURCE_DATE_EPOCH") == "5"
    with envvars.setting("SOURCE_DATE_EPOCH", "7"):
        assert envvars.get("SOURCE_DATE_EPOCH") == "7"
    assert envvars.get("SOURCE_DATE_EPOCH") == "5"
    monkeypatch.delenv("SOURCE_DATE_EPOCH")
    with envvars.setting("SOURCE_DATE_EPOCH", "7"):
        assert envvars.get("SOURCE_DATE_EPOCH") == "7"
    assert envvars.get("SOURCE_DATE_EPOCH") is None


def test_the_cache_home_follows_xdg_then_home(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert envvars.cache_home() == tmp_path / ".cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert envvars.cache_home() == tmp_path / "x"


def test_for_child_takes_names_and_prefixes_only() -> None:
    environ = {"PATH": "/bin", "AWS_REGION": "r", "AWSX": "n", "GITHUB_TOKEN": "t"}
    assert envvars.for_child(("PATH", "AWS_*"), environ) == {"PATH": "/bin", "AWS_REGION": "r"}


SYNTHETIC = [
    ("import os\nos.environ.get('X')", "os.environ"),
    ("import os\nos.environ['X'] = 'y'", "os.environ"),
    ("import os\n'X' in os.environ", "os.environ"),
    ("import os as o\no.environ.get('X')", "os.environ"),
    ("import os\nos.getenv('X')", "os.getenv"),
    ("import os\nos.putenv('X', 'y')", "os.putenv"),
    ("import os\nos.unsetenv('X')", "os.unsetenv"),
    ("import os\nos.environb[b'X']", "os.environb"),
    ("from os import environ", "os.environ"),
    ("from os import getenv as g", "os.getenv"),
    ("from os import *", "os.*"),
    ("import posix\nposix.environ", "os.environ"),
    ("import os\ngetattr(os, 'environ')", "os.environ"),
    ("from pathlib import Path\nPath.home()", "Path.home()"),
    ("import os\nos.path.expanduser('~')", "expanduser()"),
    ("import os\nos.path.expandvars('$X')", "expandvars()"),
    ("from os.path import expanduser", "os.path.expanduser"),
    ("p.expanduser()", "expanduser()"),
    ("import click\nclick.option('--token', envvar='TOKEN')", "click envvar="),
    ("cli(auto_envvar_prefix='AICR')", "click auto_envvar_prefix="),
    ("from generator.core import envvars\nenvvars.for_child(['GITHUB_TOKEN'])", "for_child"),
    ("from generator.core.envvars import for_child", "envvars.for_child()"),
]


@pytest.mark.parametrize(("source", "what"), SYNTHETIC, ids=[s for s, _ in SYNTHETIC])
def test_the_scanner_finds_each_spelling(source: str, what: str) -> None:
    """The test proves itself: a module reading the environment each way is caught."""
    module = "def f(p, cli):\n    " + source.replace("\n", "\n    ") + "\n"
    assert any(what in w for _, w in violations(module))


@pytest.mark.parametrize(
    "source",
    [
        "from generator.core import envvars\nenvvars.get('SOURCE_DATE_EPOCH')",
        "from generator.core import envvars\nenvvars.cache_home()",
        "environ.get('X')",  # a mapping passed in (timeutil's `environ=`), not the process's
        "import os\nos.path.join('a', 'b')",
        "import os\nos.getpid()",
        "from pathlib import Path\nPath.cwd()",
    ],
)
def test_the_scanner_lets_other_calls_pass(source: str) -> None:
    assert list(violations(source)) == []


def test_the_child_door_may_hand_variables_on() -> None:
    source = "from generator.core import envvars\nenvvars.for_child(('PATH',))\n"
    assert list(violations(source, may_hand_on=True)) == []


def test_a_planted_module_fails_the_suite(tmp_path: Path) -> None:
    """A new reader added outside the door is what the main test reports; the door passes."""
    (tmp_path / "core").mkdir()
    (tmp_path / "site").mkdir()
    (tmp_path / DOOR).write_text((GENERATOR / DOOR).read_text("utf-8"))
    (tmp_path / "site" / "planted.py").write_text(
        "import os\n\ndef token():\n    return os.environ.get('GITHUB_TOKEN')\n"
    )
    assert scan(tmp_path) == ["generator/site/planted.py:4: os.environ"]
