"""File I/O has one door in and one door out, held by reading the code (issue 27).

Every file the tool reads goes through `core/safeio.py` (regular files only, links may not
leave their tree, a size cap per kind of file, bounded archive members) and every YAML or JSON
document through `core/yamlio.py` (bounded size, nesting and alias expansion); every file it
writes goes through `core/atomic.py` (no link followed at the target or inside the tree it
writes to, atomic replace through a temporary file in the same directory). The directory swaps
of a finished output go through `core/outputs.py`.

The doors also own listing, creating and removing paths: a directory is listed with
`safeio.scan` / `listdir` / `names` (one level, each entry's kind, no link followed) and a tree with
`safeio.walk` / `find` / `glob_tree` / `walk_dirs`; a directory is made with `atomic.make_dirs`,
a file removed with `atomic.remove`, a tree with `outputs.discard` (never through a link), a
mode set with `TreeWriter.chmod_dirs`. So `Path.iterdir/glob/rglob/mkdir/unlink/rmdir/chmod`,
`os.walk/scandir/listdir/makedirs/unlink/remove/rmdir/chmod/utime`, `shutil.rmtree` and
`glob.glob` anywhere else fail this test too.

So do the questions about a path that open nothing (`Path.exists/is_file/is_dir/is_symlink/
resolve/absolute/cwd/stat/readlink/samefile`, `os.path.exists/lexists/isfile/isdir/islink/
realpath/abspath/relpath/get*`, `os.readlink/getcwd/access`): `safeio.exists` / `is_file` /
`is_dir` / `is_link` / `lexists` / `real_path` / `resolve` / `absolute` / `abspath` / `relpath` /
`readlink` / `cwd` answer them, each with its rule for a link and an error written down (190
calls in 51 modules went around the doors until December 2026). Pure string operations
(`os.path.join/normpath/basename`, PurePath's `.parent/.relative_to/.is_absolute`) are not
accesses and pass.

These doors were conventions before: code added later read `SECURITY.md` with
`Path.read_bytes()` and published `/proc/self/environ` through a committed link, and
`evidence push` wrote through a planted link. This test reads every module of `generator/`
with `ast` and fails on a call that opens, reads, writes, copies, renames, unpacks, lists,
creates or removes a path anywhere else. Exceptions are listed below, each with its reason; keep the list short.

A second rule holds the doors by what a module imports (`test_io_capable_modules_are_imported_only_in_core`):
outside `generator/core/` no module imports `urllib`, `http`, `socket`, `ssl`, `requests`,
`urllib3`, `httpx`, `subprocess`, `tarfile`, `gzip`, `zlib`, `bz2`, `lzma`, `zipfile`, `sqlite3`,
`shelve`, `dbm`, `shutil`, `tempfile`, `glob`, `mmap`, `fcntl` or `io` (any spelling, in a
function, or by name with `importlib.import_module`), even for a use that touches no path:
`core/urls.py`, `core/archive.py`, `core/blobwrite.py` and `net.status_phrase` hold those uses
(15 such imports stood in 9 modules outside core/ until December 2026).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

GENERATOR = Path(__file__).resolve().parent.parent / "generator"

# the doors: the only modules that may touch a path directly
DOORS = frozenset({"core/safeio.py", "core/yamlio.py", "core/atomic.py", "core/outputs.py"})

# how the doors are imported (`from generator.core import safeio`): calls on them are the doors
DOOR_NAMES = frozenset({"safeio", "yamlio", "atomic", "outputs"})

# (module, what it calls) -> why it may. The benchmark harness (bench/run.py), listed here until
# December 2026, reads /proc and writes its results and scratch trees through the doors now.
EXCEPTIONS: dict[tuple[str, str], str] = {
    ("core/proc.py", "os.close()"): (
        "the process door closes the pidfd it opened to wait on its own child (os.pidfd_open): "
        "a descriptor of a process, not of a file"
    ),
    ("core/cache.py", "sqlite3.connect()"): (
        "the build cache's SQLite store, in the cache directory the tool made with make_dirs: "
        "SQLite opens (and creates) the file and its journal itself, so no door can; "
        "a link planted at the store's name would be followed (SQLITE_OPEN_NOFOLLOW is not "
        "reachable from Python's sqlite3 module), so cache.refuse_planted lstat()s those "
        "names first and refuses anything but a regular file (tests/test_cache.py)"
    ),
}

# calls that touch a path, by how they are spelled
_METHODS = {  # x.<name>(...): pathlib and file-like methods
    "read_text": "Path.read_text()",
    "read_bytes": "Path.read_bytes()",
    "write_text": "Path.write_text()",
    "write_bytes": "Path.write_bytes()",
    "open": ".open()",
    "touch": "Path.touch()",
    "symlink_to": "Path.symlink_to()",
    "hardlink_to": "Path.hardlink_to()",
    "extractfile": "TarFile.extractfile()",
    "extractall": "TarFile.extractall()",
    "extract": "TarFile.extract()",
    # listing a directory: `safeio.scan` / `listdir` / `walk` / `glob_tree`
    "iterdir": "Path.iterdir()",
    "glob": "Path.glob()",
    "rglob": "Path.rglob()",
    # creating, removing, changing a mode: `atomic.make_dirs` / `remove`, `outputs.discard`,
    # `TreeWriter.chmod_dirs`
    "mkdir": "Path.mkdir()",
    "unlink": "Path.unlink()",
    "rmdir": "Path.rmdir()",
    "chmod": "Path.chmod()",
    "lchmod": "Path.lchmod()",
    # a file's metadata by path: `safeio.lstat`
    "lstat": "Path.lstat()",
    # a path's metadata asked about, a link followed or not: `safeio.exists` / `is_file` /
    # `is_dir` / `is_link` / `resolve` / `absolute` / `cwd` / `readlink` (each with its rule for
    # a link, a dangling link, an error). Not `.group()` (`Path.group()` and `re.Match.group()`
    # are spelt alike, and the scanner reads no types), nor `home()` / `expanduser()`: the
    # environment's door holds those (tests/test_boundaries_env.py).
    "stat": "Path.stat()",
    "exists": "Path.exists()",
    "is_file": "Path.is_file()",
    "is_dir": "Path.is_dir()",
    "is_symlink": "Path.is_symlink()",
    "is_mount": "Path.is_mount()",
    "is_socket": "Path.is_socket()",
    "is_fifo": "Path.is_fifo()",
    "is_block_device": "Path.is_block_device()",
    "is_char_device": "Path.is_char_device()",
    "is_junction": "Path.is_junction()",
    "resolve": "Path.resolve()",  # not strict or strict: both ask the file system
    "absolute": "Path.absolute()",  # the working directory
    "cwd": "Path.cwd()",
    "samefile": "Path.samefile()",
    "readlink": "Path.readlink()",
    "owner": "Path.owner()",
}
# os.path's (and posixpath's) functions that ask the file system or the working directory; the
# pure string operations (`join`, `normpath`, `basename`, `dirname`, `split`, `splitext`,
# `isabs`, `commonpath`) are not accesses and pass, as do PurePath's (`.parent`, `.name`,
# `.relative_to`, `.is_relative_to`, `.is_absolute`, `.joinpath`, `.as_posix`)
_PATH_QUERIES = {
    "exists",
    "lexists",
    "isfile",
    "isdir",
    "islink",
    "ismount",
    "isjunction",
    "realpath",
    "abspath",  # the working directory
    "relpath",  # the working directory, for a relative path
    "getsize",
    "getmtime",
    "getatime",
    "getctime",
    "samefile",
    "sameopenfile",
}
_FUNCTIONS = {  # module.<name>(...)
    "os": {
        "open",
        # metadata by path (`safeio.lstat`) and descriptors handled by hand (`atomic.open_lock`,
        # `atomic.exclusive_lock`)
        "stat",
        "lstat",
        "close",
        "dup2",
        "fdopen",
        "replace",
        "rename",
        "renames",
        "symlink",
        "link",
        "mkfifo",
        "mknod",
        "truncate",
        # listing
        "walk",
        "fwalk",
        "scandir",
        "listdir",
        # creating, removing, changing a mode or a time
        "mkdir",
        "makedirs",
        "unlink",
        "remove",
        "rmdir",
        "removedirs",
        "chmod",
        "lchmod",
        "chown",
        "lchown",
        "utime",
        # metadata queries: `safeio.readlink`, `safeio.cwd`
        "readlink",
        "getcwd",
        "getcwdb",
        "access",
        "statvfs",
    },
    "os.path": _PATH_QUERIES,
    "posixpath": _PATH_QUERIES,
    "glob": {"glob", "iglob"},
    "io": {"open", "FileIO"},
    "codecs": {"open"},
    "shutil": {"copy", "copy2", "copyfile", "copyfileobj", "copytree", "move", "rmtree", "chown"},
    "tempfile": {
        "mkstemp",
        "mkdtemp",
        "NamedTemporaryFile",
        "TemporaryFile",
        "SpooledTemporaryFile",
        "TemporaryDirectory",
    },
    "json": {"load"},
    "yaml": {
        "load",
        "safe_load",
        "load_all",
        "safe_load_all",
        "full_load",
        "unsafe_load",
        "compose",
        "compose_all",
        "parse",
        "scan",
    },
    "gzip": {"open", "GzipFile", "decompress"},
    "zlib": {"decompress", "decompressobj"},
    "bz2": {"open", "BZ2File", "decompress"},
    "lzma": {"open", "LZMAFile", "decompress"},
    "zipfile": {"ZipFile"},
    "tarfile": {"open", "TarFile"},
    "jinja2": {"FileSystemLoader", "PackageLoader"},  # templates read around safeio
    "click": {"File", "open_file"},  # click opens the path itself, links and FIFOs included
    "sqlite3": {"connect"},  # a database file opened (and created) by SQLite itself
    "dbm": {"open"},
    "fcntl": {"flock", "lockf", "fcntl"},  # a lock taken by hand: `atomic.exclusive_lock`
    "shelve": {"open"},
}
_WRITE_MODES = ("w", "x")


def _mode(call: ast.Call) -> str | None:
    for kw in call.keywords:
        if kw.arg == "mode" and isinstance(kw.value, ast.Constant):
            return str(kw.value.value)
    return None


def _in_memory_archive(module: str, name: str, call: ast.Call) -> bool:
    """`tarfile.open(fileobj=…, mode="w…")`, `gzip.GzipFile(fileobj=…, mode="wb")`: an
    archive built in memory, no path involved. Anything that could carry a path is not: a
    positional argument (tarfile's `name`, GzipFile's `filename`), `name=`, a `filename=` other
    than `""`, `fileobj=None`, `**kwargs`."""
    if (module, name) not in (("tarfile", "open"), ("gzip", "GzipFile")):
        return False
    if call.args:
        return False
    given = {kw.arg: kw.value for kw in call.keywords}
    if None in given or "name" in given:
        return False
    fileobj = given.get("fileobj")
    if fileobj is None or (isinstance(fileobj, ast.Constant) and fileobj.value is None):
        return False
    filename = given.get("filename")
    if filename is not None and not (isinstance(filename, ast.Constant) and filename.value == ""):
        return False
    mode = _mode(call)
    return mode is not None and mode.startswith(_WRITE_MODES)


def _imported_names(tree: ast.Module) -> dict[str, tuple[str, str]]:
    """Local name -> (module, attribute) for `from os import replace as r` and the like."""
    out: dict[str, tuple[str, str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in _FUNCTIONS and node.level == 0:
            for alias in node.names:
                if alias.name in _FUNCTIONS[node.module]:
                    out[alias.asname or alias.name] = (node.module, alias.name)
    return out


def _module_aliases(tree: ast.Module) -> dict[str, str]:
    """Local name -> module for `import os as o`."""
    out: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in _FUNCTIONS and (alias.asname or "." not in alias.name):
                    out[alias.asname or alias.name] = alias.name
                elif alias.name in _FUNCTIONS:  # `import os.path` binds `os`
                    out[alias.name.partition(".")[0]] = alias.name.partition(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            for alias in node.names:  # `from os import path as osp`
                if f"{node.module}.{alias.name}" in _FUNCTIONS:
                    out[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return out


def violations(source: str) -> Iterator[tuple[int, str]]:
    """(line, what) for every call in `source` that touches a path outside the doors."""
    tree = ast.parse(source)
    names = _imported_names(tree)
    modules = _module_aliases(tree)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name):
            if func.id == "open":
                yield node.lineno, "open()"
            elif func.id in names:
                module, name = names[func.id]
                if not _in_memory_archive(module, name, node):
                    yield node.lineno, f"{module}.{name}()"
        elif isinstance(func, ast.Attribute):
            base = func.value
            module = modules.get(base.id) if isinstance(base, ast.Name) else None
            if isinstance(base, ast.Name) and base.id in DOOR_NAMES:
                continue  # safeio.read_text(…), atomic.write_text(…): the doors themselves
            if isinstance(base, ast.Call) and isinstance(base.func, ast.Name):
                if base.func.id == "super":
                    continue  # super().resolve(…): a parent class's method (yaml's Resolver)
            if (
                isinstance(base, ast.Attribute)
                and base.attr == "path"
                and isinstance(base.value, ast.Name)
                and modules.get(base.value.id) == "os"
            ):
                module = "os.path"  # os.path.realpath(…)
            if module is not None:
                if func.attr in _FUNCTIONS[module] and not _in_memory_archive(
                    module, func.attr, node
                ):
                    yield node.lineno, f"{module}.{func.attr}()"
            elif func.attr in _METHODS:
                yield node.lineno, _METHODS[func.attr]


def _modules() -> list[Path]:
    return sorted(p for p in GENERATOR.rglob("*.py") if "__pycache__" not in p.parts)


def test_file_io_goes_through_the_doors() -> None:
    found: list[str] = []
    used: set[tuple[str, str]] = set()
    for path in _modules():
        rel = path.relative_to(GENERATOR).as_posix()
        if rel in DOORS:
            continue
        for line, what in violations(path.read_text("utf-8")):
            allowed = next((k for k in ((rel, what), (rel, "*")) if k in EXCEPTIONS), None)
            if allowed is not None:
                used.add(allowed)
                continue
            found.append(f"generator/{rel}:{line}: {what}")
    assert found == [], (
        "file I/O outside core/safeio.py, core/yamlio.py, core/atomic.py, core/outputs.py; "
        "read with safeio.read / yamlio.load_*, write with atomic.write_atomic / TreeWriter, "
        "list with safeio.scan / listdir / walk / glob_tree, create and remove with "
        "atomic.make_dirs / remove and outputs.discard:\n" + "\n".join(found)
    )
    assert used == set(EXCEPTIONS), f"exceptions no longer needed: {set(EXCEPTIONS) - used}"


def test_every_exception_gives_a_reason() -> None:
    assert all(len(reason.split()) >= 8 for reason in EXCEPTIONS.values())
    assert len(EXCEPTIONS) <= 5  # keep it short: a new exception needs a reason and a review


SYNTHETIC = [
    ("Path('x').read_text()", "Path.read_text()"),
    ("p.read_bytes()", "Path.read_bytes()"),
    ("p.write_bytes(b'')", "Path.write_bytes()"),
    ("p.write_text('')", "Path.write_text()"),
    ("open('x')", "open()"),
    ("p.open('a')", ".open()"),
    ("import os\nos.open('x', 0)", "os.open()"),
    ("import os\nos.replace('a', 'b')", "os.replace()"),
    ("from os import replace as mv\nmv('a', 'b')", "os.replace()"),
    ("import yaml\nyaml.safe_load(open('x'))", "yaml.safe_load()"),
    ("import yaml as y\ny.load(s, Loader=L)", "yaml.load()"),
    ("import json\njson.load(fh)", "json.load()"),
    ("import tarfile\ntarfile.open('x.tgz')", "tarfile.open()"),
    ("import tarfile\ntarfile.open(fileobj=b, mode='r:gz')", "tarfile.open()"),
    ("t.extractfile(m)", "TarFile.extractfile()"),
    ("import gzip\ngzip.open('x')", "gzip.open()"),
    ("import gzip\ngzip.decompress(b)", "gzip.decompress()"),
    ("import gzip\ngzip.GzipFile(fileobj=b)", "gzip.GzipFile()"),
    ("import shutil\nshutil.copyfile('a', 'b')", "shutil.copyfile()"),
    ("import shutil\nshutil.copytree('a', 'b')", "shutil.copytree()"),
    ("import tempfile\ntempfile.mkstemp()", "tempfile.mkstemp()"),
    ("import tempfile\ntempfile.mkdtemp(dir=p)", "tempfile.mkdtemp()"),
    ("from tempfile import TemporaryDirectory as T\nT()", "tempfile.TemporaryDirectory()"),
    ("p.symlink_to('/etc')", "Path.symlink_to()"),
    ("import jinja2\njinja2.FileSystemLoader('t')", "jinja2.FileSystemLoader()"),
    ("import click\nclick.option('--in', type=click.File('rb'))", "click.File()"),
    ("import click\nclick.open_file(p)", "click.open_file()"),
    ("import sqlite3\nsqlite3.connect(p / 'store.sqlite')", "sqlite3.connect()"),
    ("import shelve\nshelve.open('x')", "shelve.open()"),
    # listing
    ("p.iterdir()", "Path.iterdir()"),
    ("p.glob('*.yaml')", "Path.glob()"),
    ("p.rglob('*')", "Path.rglob()"),
    ("import os\nos.walk(p)", "os.walk()"),
    ("import os\nos.scandir(p)", "os.scandir()"),
    ("import os\nos.listdir(p)", "os.listdir()"),
    ("from os import scandir as ls\nls(p)", "os.scandir()"),
    ("import glob\nglob.glob('*.yaml')", "glob.glob()"),
    ("import glob as g\ng.iglob('*')", "glob.iglob()"),
    # creating, removing, changing a mode or a time
    ("p.mkdir(parents=True)", "Path.mkdir()"),
    ("p.unlink()", "Path.unlink()"),
    ("p.rmdir()", "Path.rmdir()"),
    ("p.chmod(0o755)", "Path.chmod()"),
    ("import os\nos.makedirs(p)", "os.makedirs()"),
    ("import os\nos.mkdir(p)", "os.mkdir()"),
    ("import os\nos.unlink(p)", "os.unlink()"),
    ("import os\nos.remove(p)", "os.remove()"),
    ("import os\nos.rmdir(p)", "os.rmdir()"),
    ("import os\nos.chmod(p, 0o755)", "os.chmod()"),
    ("import os\nos.utime(p, (0, 0))", "os.utime()"),
    ("import shutil\nshutil.rmtree(p, ignore_errors=True)", "shutil.rmtree()"),
    ("import os\nos.stat(p, follow_symlinks=False)", "os.stat()"),
    ("import os\nos.lstat(p)", "os.lstat()"),
    ("from pathlib import Path\nPath(p).lstat()", "Path.lstat()"),
    ("import os\nos.dup2(a, b)", "os.dup2()"),
    ("import fcntl\nfcntl.flock(fd, fcntl.LOCK_EX)", "fcntl.flock()"),
    ("from shutil import rmtree\nrmtree(p)", "shutil.rmtree()"),
    # a path's metadata: every spelling
    ("p.exists()", "Path.exists()"),
    ("p.is_file()", "Path.is_file()"),
    ("(p / 'x').is_dir()", "Path.is_dir()"),
    ("p.is_symlink()", "Path.is_symlink()"),
    ("p.is_fifo()", "Path.is_fifo()"),
    ("p.is_mount()", "Path.is_mount()"),
    ("p.resolve()", "Path.resolve()"),
    ("p.resolve(strict=False)", "Path.resolve()"),
    ("Path(__file__).resolve().parent", "Path.resolve()"),
    ("p.absolute()", "Path.absolute()"),
    ("from pathlib import Path\nPath.cwd()", "Path.cwd()"),
    ("import pathlib\npathlib.Path.cwd()", "Path.cwd()"),
    ("p.samefile(s)", "Path.samefile()"),
    ("p.readlink()", "Path.readlink()"),
    ("p.stat()", "Path.stat()"),
    ("p.owner()", "Path.owner()"),
    ("import os\nos.path.exists(p)", "os.path.exists()"),
    ("import os\nos.path.lexists(p)", "os.path.lexists()"),
    ("import os\nos.path.isfile(p)", "os.path.isfile()"),
    ("import os\nos.path.isdir(p)", "os.path.isdir()"),
    ("import os\nos.path.islink(p)", "os.path.islink()"),
    ("import os\nos.path.realpath(p)", "os.path.realpath()"),
    ("import os\nos.path.abspath(p)", "os.path.abspath()"),
    ("import os\nos.path.relpath(p, s)", "os.path.relpath()"),
    ("import os\nos.path.getsize(p)", "os.path.getsize()"),
    ("import os\nos.path.getmtime(p)", "os.path.getmtime()"),
    ("import os as o\no.path.isdir(p)", "os.path.isdir()"),
    ("import os.path\nos.path.isdir(p)", "os.path.isdir()"),
    ("import os.path as osp\nosp.realpath(p)", "os.path.realpath()"),
    ("from os import path\npath.exists(p)", "os.path.exists()"),
    ("from os import path as q\nq.islink(p)", "os.path.islink()"),
    ("from os.path import realpath as rp\nrp(p)", "os.path.realpath()"),
    ("import posixpath\nposixpath.realpath(p)", "posixpath.realpath()"),
    ("import os\nos.readlink(p)", "os.readlink()"),
    ("import os\nos.getcwd()", "os.getcwd()"),
    ("import os\nos.access(p, os.R_OK)", "os.access()"),
    # an archive given a path is not in memory, whatever else it is given
    ("import tarfile\ntarfile.open('x.tgz', mode='w', fileobj=b)", "tarfile.open()"),
    ("import tarfile\ntarfile.open(name=p, mode='w:gz', fileobj=b)", "tarfile.open()"),
    ("import tarfile\ntarfile.open(mode='w', fileobj=None)", "tarfile.open()"),
    ("import tarfile\ntarfile.open(mode='w', **s)", "tarfile.open()"),
    ("import tarfile\ntarfile.open(p, 'w')", "tarfile.open()"),
    ("import gzip\ngzip.GzipFile('x.gz', 'wb', fileobj=b)", "gzip.GzipFile()"),
    ("import gzip\ngzip.GzipFile(filename=p, mode='wb', fileobj=b)", "gzip.GzipFile()"),
    ("import gzip\ngzip.open(p, 'wb')", "gzip.open()"),
]


@pytest.mark.parametrize(("source", "what"), SYNTHETIC, ids=[w for _, w in SYNTHETIC])
def test_the_scanner_finds_each_kind_of_call(source: str, what: str) -> None:
    """The test proves itself: a module doing each forbidden thing is caught."""
    module = "def f(p, s, fh, b, t, m, L):\n    " + source.replace("\n", "\n    ") + "\n"
    assert what in [w for _, w in violations(module)]


@pytest.mark.parametrize(
    "source",
    [
        "import json\njson.loads(s)",
        "import gzip\ngzip.compress(b)",
        "import tarfile\ntarfile.open(fileobj=b, mode='w', format=tarfile.PAX_FORMAT)",
        "import gzip\ngzip.GzipFile(filename='', mode='wb', fileobj=b, mtime=0)",
        "s.replace('a', 'b')",
        "from generator.core import safeio\nsafeio.read(p, root=r)",
        "from generator.core import safeio\nsafeio.listdir(p)",
        "from generator.core import safeio\nsafeio.glob_tree(p, '*.yaml')",
        "from generator.core import atomic\natomic.make_dirs(p)",
        "from generator.core import outputs\noutputs.discard(p, ignore_errors=True)",
        "items.remove(x)",  # list.remove: not a path
        "names.sort()",
        # string and PurePath operations: no file, no working directory asked
        "import os\nos.path.join(p, 'x')",
        "import os\nos.path.normpath(p)",
        "import os\nos.path.basename(p)",
        "import os\nos.path.isabs(p)",
        "p.relative_to(s).as_posix()",
        "p.is_relative_to(s)",
        "p.is_absolute()",
        "p.parent.joinpath('x').with_suffix('.y')",
        "m.group(1)",  # re.Match.group: not Path.group, which the scanner leaves alone
        "super().resolve(kind, value, implicit)",  # yaml's Resolver, a parent class's method
        "from generator.core import safeio\nsafeio.is_dir(p)",
        "from generator.core import safeio\nsafeio.resolve(p, strict=True)",
        "import gzip\ngzip.GzipFile(filename='', mode='wb', fileobj=b)",
        "import tarfile\ntarfile.open(fileobj=b, mode='w:gz')",
    ],
)
def test_the_scanner_lets_safe_calls_pass(source: str) -> None:
    assert list(violations(source)) == []


def test_a_planted_module_fails_the_suite(tmp_path: Path) -> None:
    """A new reader added outside the doors is what the main test reports."""
    planted = (
        "from pathlib import Path\n\ndef page():\n    return Path('SECURITY.md').read_bytes()\n"
    )
    assert [(4, "Path.read_bytes()")] == list(violations(planted))


def test_a_planted_lister_and_remover_fail_the_suite() -> None:
    """Listing a directory, or removing a tree, around the doors is what the main test reports:
    `rmtree` of a path an attacker can replace by a link, `rglob` that lists behind one."""
    planted = (
        "import shutil\nfrom pathlib import Path\n\n"
        "def clean(work: Path) -> list[Path]:\n"
        "    found = sorted(work.rglob('*.json'))\n"
        "    shutil.rmtree(work, ignore_errors=True)\n"
        "    return found\n"
    )
    assert [(5, "Path.rglob()"), (6, "shutil.rmtree()")] == sorted(violations(planted))


# --- modules that can reach a file, a process, the network, an archive or a database ----------
#
# The doors above are held by the calls a module makes; these are held by what it imports.
# Outside generator/core/ no module imports a standard (or third-party) module able to open a
# file, start a process, open a connection, build or unpack an archive or open a database, even
# for an in-memory use (`io.BytesIO`, `gzip.compress`, `urllib.parse.quote`): one rule, no
# judgement of which of a module's functions are safe. A stage asks the core module named here.
CAPABLE_MODULES: dict[str, str] = {
    "urllib": "core/urls.py (quote, urlencode, urljoin, urlsplit); a request: core/net.py",
    "http": "core/net.py (Client.request, serve_site, status_phrase)",
    "socket": "core/net.py (Client.request)",
    "ssl": "core/net.py (Client.request)",
    "requests": "core/net.py (Client.request)",
    "urllib3": "core/net.py (Client.request)",
    "httpx": "core/net.py (Client.request)",
    "subprocess": "core/proc.py (run, spawn, git, which)",
    "tarfile": "core/archive.py (tar_gz) to build; safeio.tar_files to read; "
    "atomic.extract_tar to unpack",
    "gzip": "core/archive.py (gzip_bytes, gzip_named, tar_gz); safeio.tar_files to read",
    "zlib": "core/archive.py (gzip_bytes, gzip_named)",
    "bz2": "core/archive.py",
    "lzma": "core/archive.py",
    "zipfile": "core/archive.py",
    "sqlite3": "core/cache.py (Cache; blobwrite.insert_parts)",
    "shelve": "core/cache.py (Cache)",
    "dbm": "core/cache.py (Cache)",
    "shutil": "atomic.copy_tree, outputs.discard, proc.which",
    "tempfile": "outputs.make_temp_dir / temp_dir",
    "glob": "safeio.glob_tree / find",
    "mmap": "safeio.read",
    "fcntl": "atomic.exclusive_lock / open_lock",
    "io": "core/archive.py for bytes built in memory; safeio / atomic for files",
}
_IMPORT_FUNCTIONS = frozenset({"import_module", "__import__"})  # importlib's, and the builtin


def capable_imports(source: str) -> Iterator[tuple[int, str]]:
    """(line, module) for every import of a `CAPABLE_MODULES` module in `source`, wherever it
    stands (module level, in a function, under `if TYPE_CHECKING:`) and however it is spelt:
    `import x`, `import x.y as z`, `from x import y`, `from x.y import z`, and by name with a
    literal, `importlib.import_module("x")`, `import_module("x.y")`, `__import__("x")`. (A name
    that is not a literal is refused everywhere but the CLI's command table:
    tests/test_boundaries_net.py.)"""
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif isinstance(node, ast.Call) and node.args:
            func, arg = node.func, node.args[0]
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if called in _IMPORT_FUNCTIONS and isinstance(arg, ast.Constant):
                names = [str(arg.value)]
        for name in names:
            top = name.partition(".")[0]
            if top in CAPABLE_MODULES:
                yield node.lineno, top


def capable_findings(files: dict[str, str]) -> list[str]:
    """`generator/<rel>:<line>: imports <module>: use <door>` for each capable import in
    `files` (path under generator/ -> source) outside core/."""
    found: list[str] = []
    for rel, source in sorted(files.items()):
        if rel.startswith("core/"):
            continue
        for line, module in capable_imports(source):
            found.append(f"generator/{rel}:{line}: imports {module}: use {CAPABLE_MODULES[module]}")
    return found


def test_io_capable_modules_are_imported_only_in_core() -> None:
    tree = {p.relative_to(GENERATOR).as_posix(): p.read_text("utf-8") for p in _modules()}
    found = capable_findings(tree)
    assert found == [], (
        "a module outside generator/core/ imports a module that can reach files, processes, "
        "the network, archives or databases; only core/ may (rule: I/O-capable imports live in "
        "core). Use the door named:\n" + "\n".join(found)
    )


CAPABLE_SYNTHETIC = [
    ("import gzip", (1, "gzip")),
    ("import io", (1, "io")),
    ("import sqlite3 as db", (1, "sqlite3")),
    ("import os, shutil", (1, "shutil")),
    ("import urllib.parse", (1, "urllib")),
    ("import http.client as hc", (1, "http")),
    ("from urllib.parse import quote", (1, "urllib")),
    ("from http import HTTPStatus", (1, "http")),
    ("from io import BytesIO", (1, "io")),
    ("from tarfile import TarInfo as T", (1, "tarfile")),
    ("from zlib import compressobj", (1, "zlib")),
    ("from tempfile import mkdtemp", (1, "tempfile")),
    ("from glob import glob", (1, "glob")),
    ("from fcntl import flock", (1, "fcntl")),
    ("from mmap import mmap", (1, "mmap")),
    ("from lzma import compress", (1, "lzma")),
    ("from bz2 import compress", (1, "bz2")),
    ("from zipfile import ZipFile", (1, "zipfile")),
    ("from shelve import open as o", (1, "shelve")),
    ("import dbm.dumb", (1, "dbm")),
    ("import socket", (1, "socket")),
    ("import ssl", (1, "ssl")),
    ("import requests", (1, "requests")),
    ("import urllib3", (1, "urllib3")),
    ("import httpx", (1, "httpx")),
    ("from subprocess import run", (1, "subprocess")),
    # inside a function, under TYPE_CHECKING, by name
    ("def f():\n    import zlib\n    return zlib", (2, "zlib")),
    ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import sqlite3", (3, "sqlite3")),
    ("import importlib\nz = importlib.import_module('gzip')", (2, "gzip")),
    ("from importlib import import_module\nm = import_module('urllib.parse')", (2, "urllib")),
    ("t = __import__('tarfile')", (1, "tarfile")),
]


@pytest.mark.parametrize(
    ("source", "finding"), CAPABLE_SYNTHETIC, ids=[s.splitlines()[-1] for s, _ in CAPABLE_SYNTHETIC]
)
def test_the_import_scanner_finds_each_spelling(source: str, finding: tuple[int, str]) -> None:
    """The rule proves itself: each way of importing a capable module is found, at its line."""
    assert finding in list(capable_imports(source))


@pytest.mark.parametrize(
    "source",
    [
        "import os\nimport json\nimport hashlib",
        "from typing import IO, BinaryIO",  # typing's names, not the io module
        "import iox\nimport globals_\nimport httpie_",  # a name that only starts alike
        "from generator.core import archive, urls\nfrom generator.core.net import Client",
        "from generator.core.archive import gzip_bytes",  # core's door, named like the module
        "from . import io",  # a relative import: a package's own module
        "import importlib\nm = importlib.import_module('json')",
        "s.import_module  # no call",
    ],
)
def test_the_import_scanner_lets_other_imports_pass(source: str) -> None:
    assert list(capable_imports(source)) == []


def test_a_planted_import_is_named_with_its_door() -> None:
    """What decides is where the module stands: the same import is core's and no stage's, and
    the finding names the file, the line, the module and the door to use instead."""
    source = "import json\n\ndef size(data: bytes) -> int:\n    import gzip\n\n    return 0\n"
    files = {"core/sizes.py": source, "site/sizes.py": source, "site/ok.py": "import json\n"}
    assert capable_findings(files) == [
        "generator/site/sizes.py:4: imports gzip: use core/archive.py (gzip_bytes, gzip_named, "
        "tar_gz); safeio.tar_files to read"
    ]
