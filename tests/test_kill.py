"""Killing a build at any point leaves the previous site intact, and the next build is correct.

The build writes into a temporary directory beside the output and swaps it in only when complete;
these tests SIGKILL a real `aicr-catalog build` process at several points of its run.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO

# the kill points: SIGKILL as soon as the build reports it has reached each of these steps
# (its progress lines on stderr), not at fractions of a timed build: on a loaded machine a
# rebuild from the cache ran faster than a fifth of the timed cold build, every kill landed
# after the swap, and the test failed though the build did nothing wrong
KILL_AT = ("build: ", "build: verify", "build: pages:", "build: swap")  # "build: ": its first


def digests(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def build_cmd(catalog: Path, out: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "generator.cli",
        "build",
        "--catalog",
        str(catalog),
        "--evidence",
        str(REPO / "evidence"),
        "-o",
        str(out),
        "--no-bundles",
    ]


def run_build(catalog: Path, out: Path) -> float:
    start = time.monotonic()
    proc = subprocess.run(
        build_cmd(catalog, out),
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "SOURCE_DATE_EPOCH": "1780000000"},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return time.monotonic() - start


@pytest.fixture(scope="module")
def catalogs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("kill")
    old, new = base / "old" / "catalog", base / "new" / "catalog"
    shutil.copytree(REPO / "catalog", old)
    shutil.copytree(REPO / "catalog", new)
    values = new / "components" / "slinky-slurm" / "values.yaml"
    values.write_text(
        values.read_text() + "\n# changed so that the new site differs\nkillTest: 1\n"
    )
    return old, new


@dataclasses.dataclass(frozen=True)
class Sites:
    """The two sites every test starts from, each built once by a real `aicr-catalog build`."""

    base: Path  # holds `old/`, `reference/` and the build cache both left (`.cache/`)
    old_tree: dict[str, str]
    new_tree: dict[str, str]

    def start(self, tmp_path: Path) -> Path:
        """`tmp_path/site` holding the old site, beside the build cache the two builds left: the
        state a test used to reach by building the new catalog, then the old one, itself."""
        shutil.copytree(self.base / ".cache", tmp_path / ".cache")
        return self.restore(tmp_path / "site")

    def restore(self, out: Path) -> Path:
        """`out` as the old catalog's build left it (a copy: the same files)."""
        shutil.rmtree(out, ignore_errors=True)
        shutil.copytree(self.base / "old", out)
        assert digests(out) == self.old_tree
        return out


@pytest.fixture(scope="module")
def sites(catalogs: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Sites:
    """The new catalog built (the reference a complete build must equal), then the old one, in
    one directory: made once per module rather than once per test (they are the same builds)."""
    old_cat, new_cat = catalogs
    base = tmp_path_factory.mktemp("sites")
    run_build(new_cat, base / "reference")
    run_build(old_cat, base / "old")
    return Sites(base, digests(base / "old"), digests(base / "reference"))


def test_sigkill_at_any_point_leaves_old_or_complete_new_site(
    catalogs: tuple[Path, Path], sites: Sites, tmp_path: Path
) -> None:
    _, new_cat = catalogs
    old_tree, new_tree = sites.old_tree, sites.new_tree
    out = sites.start(tmp_path)
    assert old_tree != new_tree
    outcomes = []
    for marker in KILL_AT:
        proc = subprocess.Popen(
            build_cmd(new_cat, out),
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "SOURCE_DATE_EPOCH": "1780000000"},
        )
        assert proc.stderr is not None
        reached, seen = False, []
        for line in proc.stderr:
            seen.append(line)  # the build's progress, line by line as it is written
            if line.startswith(marker):
                reached = True
                os.kill(proc.pid, signal.SIGKILL)
                break
        proc.stderr.close()
        proc.wait()
        assert reached, f"the build never reported {marker!r}: {''.join(seen)}"
        now = digests(out)
        assert now in (old_tree, new_tree), f"killed at {marker!r}: the site is half-written"
        outcomes.append("old" if now == old_tree else "new")
        if now == new_tree:  # the swap had happened: restore the old site for the next kill point
            sites.restore(out)
    assert "old" in outcomes, f"no kill landed before the swap: {outcomes}"
    # the next build after kills is complete and correct
    run_build(new_cat, out)
    assert digests(out) == new_tree
    leftovers = [p.name for p in out.parent.iterdir() if p.name.startswith(".site-build-")]
    assert len(leftovers) <= len(KILL_AT), leftovers


def test_broken_catalog_leaves_previous_site(
    catalogs: tuple[Path, Path], sites: Sites, tmp_path: Path
) -> None:
    old_cat, _ = catalogs
    out = sites.start(tmp_path)
    before = digests(out)
    broken = tmp_path / "broken"
    shutil.copytree(old_cat, broken)
    leaf = broken / "overlays" / "gb300-eks-ubuntu-training-slurm.yaml"
    leaf.write_text(
        leaf.read_text().replace("base: gb300-eks-ubuntu-training\n", "base: nowhere\n")
    )
    proc = subprocess.run(
        build_cmd(broken, out), cwd=REPO, capture_output=True, text=True, check=False
    )
    assert proc.returncode == 1
    assert "overlays/gb300-eks-ubuntu-training-slurm.yaml:" in proc.stderr
    assert "[base.missing]" in proc.stderr
    assert digests(out) == before


def test_a_forked_worker_does_not_keep_the_lock_of_a_killed_build(tmp_path: Path) -> None:
    """Worker processes are forked while the build holds its lock; when the build is killed,
    a worker still running must not keep the lock (the next build would be refused)."""
    import sys

    from generator.site.outdir import build_lock

    out = tmp_path / "site"
    script = (
        "import os, time\n"
        "from pathlib import Path\n"
        "from generator.site.outdir import build_lock\n"
        f"with build_lock(Path({str(out)!r})):\n"
        "    pid = os.fork()\n"
        "    if pid == 0:\n"
        "        os.write(1, b'worker running\\n')\n"
        "        time.sleep(60)\n"
        "        os._exit(0)\n"
        "    os.write(1, f'{pid}\\n'.encode())\n"
        "    time.sleep(60)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    # the worker's line says it runs (its fork handlers are done); the other is its pid
    lines = sorted(proc.stdout.readline().decode().strip() for _ in range(2))
    proc.stdout.close()
    if "" in lines:  # the script failed: say why
        proc.wait()
        pytest.fail(f"exit {proc.returncode}, lines {lines}: {proc.stderr.read().decode()}")
    proc.stderr.close()
    worker = int(lines[0])
    assert lines[1] == "worker running"
    try:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        os.kill(worker, 0)  # the worker outlives the build
        with build_lock(out):  # and the lock is free
            pass
    finally:
        os.kill(worker, signal.SIGKILL)
