"""Shared test set-up: no network, golden-file refresh flag, paths to the repository and ../shared."""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import socket
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import Phase, settings

# `make mutation` (tests/mutation) runs the same tests once per mutant: with the same examples
# each time, so that a mutant's verdict does not depend on the draw, and without shrinking a
# failure (a mutant is killed by the first failing example; its smallest form is not needed)
settings.register_profile(
    "mutation",
    derandomize=True,
    database=None,
    phases=(Phase.explicit, Phase.reuse, Phase.generate),
)
if os.environ.get("AICR_MUTATION"):
    settings.load_profile("mutation")

REPO = Path(__file__).resolve().parent.parent
CATALOG = REPO / "catalog"
SHARED = REPO.parent / "shared"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-goldens",
        action="store_true",
        default=False,
        help="rewrite golden files under tests/golden instead of comparing against them",
    )


@pytest.fixture
def update_goldens(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--update-goldens"))


@pytest.fixture
def shared_dir() -> Path:
    """`../shared` beside the checkout; tests that need it skip cleanly when it is absent."""
    if not SHARED.is_dir():
        pytest.skip("../shared is absent (a fresh clone elsewhere): nothing to compare against")
    return SHARED


# Test files by measured cost, most expensive first: CPU seconds per file (user + sys of the test
# process and the children it reaped, pytest -n 2 on the 2-core machine, December 4 2026), the
# browser files by wall time (Chromium's own CPU is reaped only when the session ends); see
# CONTRIBUTING.md, *The test suite*. `make test` runs `-n 2 --dist loadfile
# --no-loadscope-reorder`: each file goes whole to one worker (its module fixtures are made once),
# in this order, so the longest files start first and the last minutes hold only short files on
# both workers. Files not listed follow in collection order; list a file here when it grows
# past the last one listed. tests/test_suite_order.py checks that every name is a test file.
HEAVY_FIRST = (
    "test_upstream_conformance.py",  # 47 CPU-s
    "test_site_incremental.py",  # 37
    "test_pipeline.py",  # 34
    "test_browser.py",
    "test_aggregate.py",  # 25
    "test_fuzz.py",  # 20
    "test_browser_a11y.py",
    "test_browser_newcomer.py",
    "test_cases.py",  # 16
    "test_chart_values.py",  # 16
    "test_evidence_attacks.py",  # 14
    "test_diff.py",  # 13
    "test_publish_delta.py",  # 12
    "test_upstream_rules.py",  # 12
    "test_release.py",  # 12
    "test_upstream_site_bundles.py",  # 11
    "test_kill.py",  # 10
    "test_site.py",  # 10
    "test_net_bounds.py",  # 10
    "test_resolve.py",  # 9
    "test_fast_schemacheck.py",  # 9
    "test_untrusted_text.py",  # 7
    "test_evidence_verify.py",
    "test_evidence_oci.py",  # 6.5
    "test_edges.py",  # 6.4
    "test_preflight_cli.py",  # 6
    "test_synth.py",  # 6
    "test_release_verify.py",  # 6
    "test_outputs_bounded.py",  # 5
    "test_browser_truth.py",
    "test_snapshot_collect.py",
    "test_site_share.py",
    "test_nochange.py",
    "test_fast_yamlwrite.py",
    "test_render_cli.py",
    "test_qualify.py",
    "test_render_schemas.py",
    "test_site_outcomes.py",
    "test_archive.py",
    "test_cache.py",
    "test_page_budget.py",
    "test_hostile_io.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The listed files first, in HEAVY_FIRST's order; a file's tests keep their order and stay
    together (a stable sort), the other files keep collection order after them."""
    rank = {name: i for i, name in enumerate(HEAVY_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


_real_connect = socket.socket.connect


def _loopback_only(self: socket.socket, address: object) -> object:
    host = address[0] if isinstance(address, tuple) else address
    if isinstance(host, str) and (
        host.startswith("127.") or host in ("localhost", "::1") or self.family == socket.AF_UNIX
    ):
        return _real_connect(self, address)  # type: ignore[arg-type]
    raise RuntimeError(f"test tried to reach the network: {address!r}")


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every test runs with sockets limited to 127.0.0.1 / ::1 / unix sockets."""
    monkeypatch.setattr(socket.socket, "connect", _loopback_only)
    yield


@pytest.fixture(autouse=True)
def isolated_logging() -> Iterator[None]:
    """The `aicr_catalog` logger as each test found it: `build` run in-process (CliRunner) adds
    its stderr progress handler for the life of the process, which a later in-process command of
    the same worker would print into its own output."""
    logger = logging.getLogger("aicr_catalog")
    saved = (list(logger.handlers), logger.level, logger.propagate)
    yield
    logger.handlers[:], logger.level, logger.propagate = saved


CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    """Debian's Chromium through Playwright, one per test session (one definition: Playwright's
    sync API allows a single instance per thread). Skips only when CI is unset."""
    if not CHROMIUM.exists():
        message = "/usr/bin/chromium is missing (apt-get install chromium)"
        if os.environ.get("CI"):
            pytest.fail(f"{message}; browser tests must run under CI")
        pytest.skip(f"{message}; CI is unset, so the browser tests are skipped")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture(scope="session")
def helm() -> Path:
    """A real `helm` binary (`$AICR_HELM`, `.tools/helm` from `.ci/get-helm`, or PATH) for the
    tests that render bundles' local charts. Skips only when CI is unset."""
    import shutil

    for candidate in (os.environ.get("AICR_HELM"), str(REPO / ".tools" / "helm"), "helm"):
        found = shutil.which(candidate) if candidate else None
        if found:
            return Path(found)
    message = "no helm binary (run .ci/get-helm, or set AICR_HELM)"
    if os.environ.get("CI"):
        pytest.fail(f"{message}; the Helm render tests must run under CI")
    pytest.skip(f"{message}; CI is unset, so the Helm render tests are skipped")


def shared_dir_once(
    tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], None]
) -> Path:
    """The directory `make(path)` fills, made once per test run and shared read-only by every
    xdist worker (the workers' temporary roots share one parent; one worker makes it under a
    lock, the others wait and reuse it). Without xdist: once per session, as before. A `make`
    that raises leaves no directory behind, so the next worker that asks tries again and fails
    with its own error."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    target, done = root / f"shared-{name}", root / f"shared-{name}.done"
    with (root / f"shared-{name}.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if not done.exists():
                shutil.rmtree(target, ignore_errors=True)
                target.mkdir()
                try:
                    make(target)
                except BaseException:
                    shutil.rmtree(target, ignore_errors=True)
                    raise
                done.touch()
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return target
