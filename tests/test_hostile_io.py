"""Inputs and outputs that cannot hurt (issue 17): no crash, hang, unbounded memory or disclosure.

Property tests generate YAML bombs of every shape and file trees holding links, FIFOs and
directories where files are expected; each run happens in a forked child under a memory limit
(RLIMIT_AS) and a time limit (`tests.test_cases.run_isolated`), so a segmentation fault, a hang
or a runaway allocation fails the test instead of taking the session down.
"""

from __future__ import annotations

import errno
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from generator.cli import main
from generator.commands.common import os_error_text
from generator.core import safeio
from generator.core.cache import Cache, tree_digest
from generator.core.errors import CatalogError, LoadError
from generator.core.yamlio import MAX_DEPTH, parse_yaml
from tests.test_cases import MEMORY_LIMIT, MINIMAL, run_isolated

REPO = Path(__file__).resolve().parent.parent
SECRET = "AWS_SECRET_ACCESS_KEY=do-not-print-me"


def isolated(fn: Callable[[], dict[str, Any]], seconds: float = 20) -> dict[str, Any]:
    """`fn` in a forked child under the memory and time limits; its payload, or a failure."""
    out = run_isolated(fn, seconds=seconds, memory=MEMORY_LIMIT)
    assert out.died is None, f"the child {out.died}"
    assert out.error is None, out.error
    return out.payload


# ---------------------------------------------------------------- safeio


def test_reader_takes_a_regular_file(tmp_path: Path) -> None:
    (tmp_path / "f.yaml").write_bytes(b"a: 1\n")
    assert safeio.read(tmp_path / "f.yaml", root=tmp_path) == b"a: 1\n"


@pytest.mark.parametrize(
    ("make", "rule"),
    [
        (lambda p, out: os.mkfifo(p), "file.not-regular"),
        (lambda p, out: p.mkdir(), "file.not-regular"),
        (lambda p, out: p.symlink_to("/dev/zero"), "file.symlink-escape"),
        (lambda p, out: p.symlink_to(out), "file.symlink-escape"),
        (lambda p, out: p.symlink_to(p.name), "file.unreadable"),  # a loop
        (lambda p, out: p.symlink_to("missing"), "file.unreadable"),
        (lambda p, out: _sparse(p, 2 * safeio.YAML_BYTES), "file.too-large"),
    ],
    ids=["fifo", "directory", "dev-zero", "link-out", "loop", "dangling", "sparse"],
)
def test_reader_refuses_without_blocking_or_disclosing(
    tmp_path: Path, make: Callable[[Path, Path], Any], rule: str
) -> None:
    tree, outside = tmp_path / "tree", tmp_path / "secret.txt"
    tree.mkdir()
    outside.write_text(SECRET)
    path = tree / "f.yaml"
    make(path, outside)

    def attempt() -> dict[str, Any]:
        try:
            safeio.read(path, root=tree, where="the catalog")
        except safeio.Refusal as r:
            return {"rule": r.rule, "text": r.diagnostics_text()}
        return {"rule": None, "text": ""}

    got = isolated(attempt, seconds=2)
    assert got["rule"] == rule and SECRET not in got["text"]
    # the tree scan (what validate reports) agrees; a directory is no file of the tree
    expected = [] if path.is_dir() and not path.is_symlink() else [rule]
    assert [r.rule for _, r in safeio.scan_tree(tree)] == expected


def _sparse(path: Path, size: int) -> None:
    with path.open("wb") as fh:
        fh.truncate(size)


def test_a_refusal_nobody_catches_is_a_located_catalog_error(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "p")
    with pytest.raises(CatalogError) as e:
        safeio.read(tmp_path / "p")
    assert e.value.diagnostics[0].rule == "file.not-regular"


# ---------------------------------------------------------------- YAML bombs of every shape


def _bomb(shape: str, depth: int, width: int) -> str:
    if shape == "block":  # nested mappings by indentation (the text grows with depth squared)
        depth = min(depth, 1400)
        return "".join(f"{' ' * i}k{i}:\n" for i in range(depth)) + " " * depth + "v\n"
    if shape == "compact":  # `- - - x`, one line
        return "- " * depth + "x\n"
    if shape == "flow":
        return "k: " + "[" * depth + "]" * depth + "\n"
    if shape == "flow-open":  # unclosed: a parse error must still be located, not a crash
        return "k: " + "{a: " * depth + "\n"
    if shape == "mixed":  # block mapping -> flow sequence -> flow mapping, repeated
        return "k:\n  - " + "[{a: " * depth + "\n"
    if shape == "quoted":  # quotes and an apostrophe that a text scan would misread
        return 'note: don\'t\nq: "]]]}"\nk: [' + "'[', " * width + "[" * depth + "\n"
    if shape == "aliased":  # billion laughs of `width` per level
        lines = ["a0: &a0 " + "x" * width]
        for i in range(1, min(depth, 12)):
            lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
        return "\n".join(lines) + "\n"
    if shape == "big-scalar":  # one large scalar aliased many times
        return "a: &a " + "x" * (width * 1000) + "\nb: [" + ", ".join(["*a"] * depth) + "]\n"
    raise AssertionError(shape)


SHAPES = ["block", "compact", "flow", "flow-open", "mixed", "quoted", "aliased", "big-scalar"]


def test_yaml_bombs_of_every_shape_end_in_located_diagnostics() -> None:
    """Each generated bomb parses to a document or a LoadError whose every diagnostic has a
    line and a rule; never a crash (the child would die), a hang or unbounded memory."""

    @settings(max_examples=60, deadline=None, database=None, derandomize=True)
    @given(
        st.sampled_from(SHAPES),
        st.one_of(
            st.sampled_from([1, MAX_DEPTH, MAX_DEPTH + 1, MAX_DEPTH + 2, 50_000]),
            st.integers(1, 3000),
        ),
        st.integers(1, 600),
    )
    def prop(shape: str, depth: int, width: int) -> None:
        text = _bomb(shape, depth, width)
        if len(text.encode()) > safeio.YAML_BYTES:
            return
        try:
            parse_yaml(text, "f.yaml")
        except LoadError as e:
            assert e.diagnostics
            for d in e.diagnostics:
                assert d.line >= 1 and d.col >= 1 and d.rule.startswith("yaml."), d

    def run() -> dict[str, Any]:
        prop()
        return {}

    isolated(run, seconds=30)


@pytest.mark.parametrize("shape", SHAPES)
def test_deepest_bomb_of_each_shape_is_refused_with_its_rule(shape: str) -> None:
    depth, width = (100_000, 10) if shape not in ("aliased", "big-scalar") else (12, 10)
    if shape == "big-scalar":
        depth, width = 10_000, 600
    text = _bomb(shape, depth, width)

    def run() -> dict[str, Any]:
        try:
            parse_yaml(text, "f.yaml")
        except LoadError as e:
            return {"rules": sorted({d.rule for d in e.diagnostics})}
        return {"rules": []}

    rules = isolated(run, seconds=10)["rules"]
    expected = {
        "aliased": ["yaml.alias-bomb"],
        "big-scalar": ["yaml.alias-bomb"],
    }.get(shape, ["yaml.too-deep"])
    assert rules == expected


# ---------------------------------------------------------------- file trees with special files

KINDS = ["fifo", "dev-zero", "link-out", "loop", "dangling", "directory", "link-in", "sparse"]
TARGETS = sorted(p.relative_to(MINIMAL).as_posix() for p in MINIMAL.rglob("*.yaml"))
EXTRA = ["notes/README.md", "overlays/new.yaml", "components/nfd/extra.txt"]


def _plant(catalog: Path, rel: str, kind: str, outside: Path) -> None:
    path = catalog / rel
    if path.is_symlink() or path.is_file():
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
    elif kind == "link-out":
        path.symlink_to(outside)
    elif kind == "loop":
        path.symlink_to(path.name)
    elif kind == "dangling":
        path.symlink_to("no-such-file")
    elif kind == "directory":
        path.mkdir()
    elif kind == "link-in":  # allowed: a link that stays inside, to a regular file
        path.symlink_to(os.path.relpath(catalog / "registry.yaml", path.parent))
    elif kind == "sparse":
        _sparse(path, safeio.OTHER_BYTES + 1)


def test_file_trees_with_special_files_validate_and_key_without_hanging(tmp_path: Path) -> None:
    """Random plantings of FIFOs, device links, escaping links, loops, dangling links,
    directories and huge files: `validate` names every refused path with a rule and prints no
    byte of the outside file; the build's tree digest refuses exactly paths validate reports
    (validate reports what build would refuse); nothing hangs or grows without bound."""
    outside = tmp_path / "outside.env"
    outside.write_text(SECRET + "\n")
    counter = iter(range(10**6))

    @settings(
        max_examples=25,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(
        st.lists(
            st.tuples(st.sampled_from(TARGETS + EXTRA), st.sampled_from(KINDS)),
            min_size=1,
            max_size=4,
            unique_by=lambda t: t[0],
        )
    )
    def prop(plan: list[tuple[str, str]]) -> None:
        work = tmp_path / f"w{next(counter)}"
        catalog = work / "catalog"
        shutil.copytree(MINIMAL, catalog)
        for rel, kind in plan:
            _plant(catalog, rel, kind, outside)
        result = CliRunner().invoke(main, ["validate", "--catalog", str(catalog)])
        assert result.exception is None or isinstance(result.exception, SystemExit)
        assert "Traceback" not in result.output and SECRET not in result.output
        reported = {line.split(":", 1)[0] for line in result.stdout.splitlines()}
        for rel, kind in plan:
            if kind == "directory" and not rel.startswith(("overlays/", "mixins/")):
                continue  # an unused directory is no file: nothing reads it
            if kind == "link-in":
                continue
            assert rel in reported, (rel, kind, result.stdout)
        try:
            tree_digest(catalog)
            refused: set[str] = set()
        except LoadError as e:
            refused = {d.path for d in e.diagnostics}
            assert SECRET not in e.diagnostics_text()
        assert refused <= reported, (refused, result.stdout)
        assert result.exit_code == (0 if not refused and reported == {"validate catalog"} else 1)
        shutil.rmtree(work)

    def run() -> dict[str, Any]:
        prop()
        return {}

    isolated(run, seconds=60)


# ---------------------------------------------------------------- disclosure and special files in commands


def test_signers_link_out_of_the_catalog_is_refused_unread(tmp_path: Path) -> None:
    catalog = tmp_path / "catalog"
    shutil.copytree(REPO / "catalog", catalog, ignore=shutil.ignore_patterns("schemas"))
    (tmp_path / "creds").write_text(SECRET + "\n")
    (catalog / "signers.yaml").unlink()
    (catalog / "signers.yaml").symlink_to(tmp_path / "creds")
    (tmp_path / "evidence").mkdir()

    def run() -> dict[str, Any]:
        args = ["evidence", "verify", "--catalog", str(catalog), "--trust-root", "demo"]
        r = CliRunner().invoke(main, [*args, str(tmp_path / "evidence")])
        return {"code": r.exit_code, "out": r.output}

    got = isolated(run)
    assert SECRET not in got["out"] and "file.symlink-escape" in got["out"]
    assert got["code"] == 1


def test_fifo_signers_does_not_hang_evidence_verify(tmp_path: Path) -> None:
    catalog = tmp_path / "catalog"
    shutil.copytree(REPO / "catalog", catalog, ignore=shutil.ignore_patterns("schemas"))
    (catalog / "signers.yaml").unlink()
    os.mkfifo(catalog / "signers.yaml")
    (tmp_path / "evidence").mkdir()

    def run() -> dict[str, Any]:
        args = ["evidence", "verify", "--catalog", str(catalog), "--trust-root", "demo"]
        r = CliRunner().invoke(main, [*args, str(tmp_path / "evidence")])
        return {"code": r.exit_code, "out": r.output}

    got = isolated(run, seconds=10)
    assert "not a regular file" in got["out"] and got["code"] == 1


@pytest.mark.parametrize("kind", ["link-out", "fifo"])
def test_bundle_verify_checksums_special_file(tmp_path: Path, kind: str) -> None:
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "x").write_text("x\n")
    (tmp_path / "creds").write_text(SECRET + "\n")
    if kind == "fifo":
        os.mkfifo(bundle / "checksums.txt")
    else:
        (bundle / "checksums.txt").symlink_to(tmp_path / "creds")

    def run() -> dict[str, Any]:
        r = CliRunner().invoke(main, ["bundle", "verify", str(bundle)])
        return {"code": r.exit_code, "out": r.output}

    got = isolated(run, seconds=10)
    assert SECRET not in got["out"] and got["code"] == 1
    assert "[bundle.no-checksums]" in got["out"]


# ---------------------------------------------------------------- tracebacks -> errors


@pytest.mark.parametrize(
    ("code", "exit_code", "text"),
    [
        (errno.ENOSPC, 1, "No space left on device [ENOSPC]; free disk space"),
        (errno.EROFS, 2, "Read-only file system [EROFS]; choose a writable output directory"),
        (errno.EDQUOT, 1, "[EDQUOT]"),
    ],
)
def test_an_os_error_in_any_command_is_one_line_and_an_exit_code(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, code: int, exit_code: int, text: str
) -> None:
    import generator.commands.bundle as bundle_cmd

    def fail(*args: Any, **kwargs: Any) -> None:
        raise OSError(code, os.strerror(code), str(tmp_path / "out" / "x.tar.gz"))

    monkeypatch.setattr(bundle_cmd, "write_bundle", fail)
    monkeypatch.chdir(REPO)
    r = CliRunner().invoke(
        main,
        [
            *("bundle", "--service", "eks", "--accelerator", "h100", "--intent", "training"),
            *("--os", "ubuntu", "-o", str(tmp_path / "out")),
        ],
    )
    assert r.exit_code == exit_code, r.output
    assert "Traceback" not in r.output and text in r.output
    assert r.output.count("\n") <= 2


def test_a_full_disk_in_render_workers_ends_in_a_clear_error(tmp_path: Path) -> None:
    """A real write failure (a file-size limit: EFBIG, as ENOSPC would be), in the build and in
    its forked render workers, through the installed command: exit 1, one line, no traceback."""
    evidence = tmp_path / "evidence"
    evidence.mkdir()
    script = (
        "import resource, signal, sys\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))\n"
        "import generator.site.stages as stages\n"
        "stages._PARALLEL_RENDER = 1  # render in the process pool even for a few archives\n"
        "from generator.cli import main\n"
        "sys.argv = ['aicr-catalog'] + sys.argv[1:]\n"
        "main()\n"
    )
    proc = subprocess.run(
        [
            *(sys.executable, "-c", script, "build", "--catalog", str(MINIMAL)),
            *("--evidence", str(evidence), "-o", str(tmp_path / "site"), "--trust-root", "demo"),
            *("--jobs", "2", "--no-cache"),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "File too large [EFBIG]" in proc.stderr.splitlines()[-1]
    assert not (tmp_path / "site").exists()


def test_serve_on_a_busy_port_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "index.html").write_text("<html></html>")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        r = CliRunner().invoke(main, ["serve", "--dir", str(tmp_path), "--port", str(port)])
    assert r.exit_code == 2 and "Traceback" not in r.output
    assert f"cannot listen on 127.0.0.1:{port}" in r.output


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


def test_diff_over_a_commit_holding_an_absolute_symlink(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(MINIMAL, repo / "catalog")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "one")
    (tmp_path / "creds").write_text(SECRET + "\n")
    values = repo / "catalog/components/nfd/values.yaml"
    values.unlink()
    values.symlink_to(tmp_path / "creds")  # absolute, and leaving the tree
    (repo / "catalog/etc").symlink_to("/etc")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "two")

    def run() -> dict[str, Any]:
        os.chdir(repo)
        r = CliRunner().invoke(main, ["diff", "HEAD~1", "HEAD"])
        exc = r.exception
        return {
            "code": r.exit_code,
            "out": r.output,
            "exc": None if exc is None or isinstance(exc, SystemExit) else repr(exc),
        }

    got = isolated(run)
    assert got["exc"] is None, got
    assert got["code"] in (0, 1) and SECRET not in got["out"] and "Traceback" not in got["out"]


# ---------------------------------------------------------------- cache confusion


def test_cached_catalog_stage_keeps_an_absolute_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Build from A with a relative --catalog, then from B (holding another `catalog/`) with
    A's catalog by its absolute path: the cached stage must still read A's manifests."""
    from generator.catalog.manifests import read_manifests
    from generator.core.memo import Memo
    from generator.pipeline import CATALOG_CODE, CATALOG_STAGE, CatalogInput, resolve_catalog

    a, b = tmp_path / "a", tmp_path / "b"
    shutil.copytree(MINIMAL, a / "catalog")
    shutil.copytree(MINIMAL, b / "catalog")
    manifest = "components/network-operator/manifests/nic-cluster-policy.yaml"
    (b / "catalog" / manifest).write_text("# another catalog's manifest\n")
    for d in (a, b):
        (d / "evidence").mkdir()
    cache = Cache(tmp_path / ".cache", secret=b"k" * 32)

    def stage(record: CatalogInput) -> Any:
        memo = Memo(cache)
        return memo.stage(CATALOG_STAGE, CATALOG_CODE, record, lambda: resolve_catalog(record))

    def key(record: CatalogInput) -> str:
        return Memo(cache).key(CATALOG_STAGE, CATALOG_CODE, record)

    monkeypatch.chdir(a)
    first = CatalogInput(Path("catalog"))
    catalog = stage(first).catalog
    assert Path(catalog.root).is_absolute()

    monkeypatch.chdir(b)
    second = CatalogInput(a / "catalog")
    assert key(second) == key(CatalogInput(a / "catalog"))  # the very same inputs
    monkeypatch.chdir(a)
    assert key(first) == key(second)
    monkeypatch.chdir(b)
    found = stage(second)
    cached, resolved2 = found.catalog, found.by_recipe
    assert cache.stats.hits.get("catalog") == 1
    result = next(r for rs in resolved2.values() for r in rs if manifest in str(r.components))
    assert read_manifests(cached, result)[manifest] == (a / "catalog" / manifest).read_bytes()

    # and from B, B's own relative catalog is another key: never A's entry
    assert key(CatalogInput(Path("catalog"))) != key(second)


def test_a_write_failure_storing_the_archives_reaches_the_command_as_an_os_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The render workers render; the build's process stores their archives in the build
    cache's store. A write the store cannot make (here a file size limit, as a full disk) comes
    back to the build as an OSError naming the store (`core.cache._write_failure`), which the
    command group reports in one line; the store is left as it was (the transaction undone)."""
    import generator.site.stages as stages
    from generator.catalog.load import load_catalog
    from generator.pipeline import resolve_recipe

    catalog, _ = load_catalog(MINIMAL)
    results = [r for leaf in catalog.leaves() for r in resolve_recipe(catalog, leaf)[0]]
    monkeypatch.setattr(stages, "_PARALLEL_RENDER", 1)
    root = tmp_path / "c"
    Cache(root, secret=b"k" * 32).put("x", "k", "", b"before")  # the store, made

    def run() -> dict[str, Any]:
        import resource
        import signal

        cache = Cache(root, secret=b"k" * 32)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))
        try:
            stages.render_bundles(catalog, results, ("helm", "flux"), 0, cache, jobs=2)
        except OSError as e:
            return {"errno": e.errno, "file": e.filename, "text": os_error_text(e)}
        return {"errno": None}

    failed = isolated(run)
    assert failed["errno"] in (errno.EIO, errno.ENOSPC), failed
    assert failed["file"] == str(root / "store.sqlite3")
    assert "the build cache's store was not written" in failed["text"]
    left = Cache(root, secret=b"k" * 32)
    assert left.get("x", "k", "") == b"before" and left.keys("bundle-archives") == []
