"""The benchmark harness's own parts (`generator/bench/run.py`), on small inputs: what `make bench`
relies on, checked without running the benchmark (tests/test_bench_build.py, marker `bench`).

The harness reaches files, processes and the environment only through the doors of
`generator/core/` (tests/test_boundaries*.py hold that); these tests show it still measures
what it did: a child's CPU seconds and the peak memory of its process tree while it runs, in an
environment of the door's allow-list and the values it sets.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from generator.bench import run as bench
from generator.core import proc


def test_a_child_is_measured_while_it_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """A child holding 64 MB for a moment and burning 0.3 CPU-s is seen doing both."""
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_secret")
    script = (
        "import json, os, time\n"
        "held = bytearray(64 << 20)\n"
        "t = time.process_time()\n"
        "while time.process_time() - t < 0.3: pass\n"
        "time.sleep(0.3)\n"
        "print(json.dumps(dict(os.environ)))\n"
    )
    r = bench.run_process([sys.executable, "-c", script], Path.cwd(), {"SOURCE_DATE_EPOCH": "0"})
    assert r.exit == 0
    assert r.cpu_s >= 0.25
    assert 0 <= r.system_s <= r.cpu_s
    assert r.peak_mb >= 60
    assert r.command.startswith(Path(sys.executable).name + " -c")
    env = json.loads(r.stdout_tail)
    assert env["SOURCE_DATE_EPOCH"] == "0" and "GITHUB_TOKEN" not in env


def test_a_childs_system_time_is_told_apart() -> None:
    """A child spending its CPU in the kernel (copying zeros out of /dev/zero) is seen doing so:
    most of its CPU seconds are system seconds."""
    script = (
        "import time\n"
        "t = time.process_time()\n"
        "with open('/dev/zero', 'rb', buffering=0) as f:\n"
        "    while time.process_time() - t < 0.4: f.read(1 << 22)\n"
    )
    r = bench.run_process([sys.executable, "-c", script], Path.cwd())
    assert r.exit == 0
    assert r.cpu_s >= 0.35
    assert r.system_s >= 0.5 * r.cpu_s - 0.05  # the interpreter's start is user time


def test_a_failing_child_is_its_exit_status() -> None:
    r = bench.run_process([sys.executable, "-c", "import sys; sys.exit(4)"], Path.cwd())
    assert r.exit == 4


def test_the_memory_of_a_tree_counts_this_process() -> None:
    assert bench._rss_tree_kb(os.getpid()) > 1024
    assert bench._pss_kb(os.getpid()) is not None
    assert bench._pss_kb(2**22 + 1) is None  # no such process: nothing, not an error


def test_the_largest_files_of_a_site(tmp_path: Path) -> None:
    (tmp_path / "api" / "v1").mkdir(parents=True)
    (tmp_path / "a.html").write_bytes(b"x" * 1000)
    (tmp_path / "b.html").write_bytes(b"x" * 3000)
    (tmp_path / "b.txt").write_bytes(b"x" * 9000)
    (tmp_path / "api" / "v1" / "recipes.json").write_bytes(b"[" + b" " * 5000 + b"]")
    (tmp_path / "api" / "v1" / "link.json").symlink_to(tmp_path / "b.txt")
    found = bench.largest_files(tmp_path)
    assert (found["largest_page"].command, found["largest_page"].peak_mb) == ("b.html", 0.0)
    assert found["largest_api_file"].command == "api/v1/recipes.json"
    assert bench.recipes_json(tmp_path)["recipes_json"].stdout_tail.startswith("5002 bytes")
    assert bench.largest_files(tmp_path / "none") == {}


def test_a_snapshot_is_the_committed_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = tmp_path / "repo"
    (repo / "generator").mkdir(parents=True)
    (repo / "generator" / "x.py").write_text("X = 1\n")
    git = ("-c", "user.name=t", "-c", "user.email=t@example.org")
    for args in (("init", "-q"), ("add", "."), (*git, "commit", "-qm", "one")):
        assert proc.git(repo, *args, timeout=60).ok
    (repo / "generator" / "x.py").write_text("X = 2\n")  # not committed: not measured
    monkeypatch.setattr(bench, "HOME", repo)
    monkeypatch.setattr(bench, "WORK", tmp_path / "work")
    where = bench.snapshot("HEAD")
    assert (where / "generator" / "x.py").read_text() == "X = 1\n"
    commit = proc.git(repo, "rev-parse", "HEAD", timeout=60).text().strip()
    assert bench._commit_of(where) == commit and where.name == f"src-{commit[:12]}"
    with pytest.raises(SystemExit, match="rev-parse"):
        bench.snapshot("no-such-rev")


def _run(wall: float, cpu: float, peak: float, exit: int = 0, system: float = 0.0) -> bench.Run:
    return bench.Run("aicr-catalog build", wall, cpu, peak, exit, system_s=system)


def test_the_cold_builds_are_judged_by_their_median_and_largest_peak() -> None:
    runs = [
        _run(60.1, 76.3, 1617.8, system=15.0),
        _run(52.4, 68.2, 1691.2, system=9.0),
        _run(50.3, 65.0, 1671.9, system=12.1),
    ]
    one = bench.median_run(runs)
    assert (one.wall_s, one.cpu_s, one.peak_mb, one.exit) == (52.4, 68.2, 1691.2, 0)
    assert one.system_s == 9.0  # the system time of the run whose CPU is the median
    # an even count: the lower of the middle two, never a mean no run measured
    assert bench.median_run(runs[:2]).cpu_s == 68.2
    assert bench.median_run(runs[:1]) == runs[0]
    # one failed run fails the whole: its exit status is kept
    assert bench.median_run([*runs, _run(1.0, 1.0, 10.0, exit=1)]).exit == 1
    with pytest.raises(ValueError):
        bench.median_run([])


def test_how_many_cold_builds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AICR_BENCH_COLD_RUNS", raising=False)
    assert bench.cold_runs() == bench.COLD_RUNS == 3
    monkeypatch.setenv("AICR_BENCH_COLD_RUNS", "1")
    assert bench.cold_runs() == 1
    for bad in ("0", "-1", "two", "1.5"):
        monkeypatch.setenv("AICR_BENCH_COLD_RUNS", bad)
        with pytest.raises(SystemExit, match="AICR_BENCH_COLD_RUNS"):
            bench.cold_runs()


def test_each_cold_build_starts_without_the_last_ones_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AICR_BENCH_COLD_RUNS", "3")
    out, cache = tmp_path / "site", tmp_path / ".cache"
    seen: list[tuple[str, bool, bool]] = []

    def build(name: str) -> bench.Run:
        seen.append((name, out.exists(), cache.exists()))
        out.mkdir()
        cache.mkdir()
        (out / "index.html").write_text("x")
        return _run(50.0 + len(seen), 70.0 - len(seen), 1000.0 + len(seen))

    one = bench.cold_builds(build, (cache, out))
    assert seen == [(f"cold_build_{i}", False, False) for i in (1, 2, 3)]
    assert (one.wall_s, one.cpu_s, one.peak_mb) == (52.0, 68.0, 1003.0)
    assert (out / "index.html").exists()  # the last one's output stays for the rebuilds
