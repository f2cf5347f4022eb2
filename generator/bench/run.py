"""The build benchmark: synthetic catalogs of increasing size, per-stage cost, overhead over mkdocs.

    .venv/bin/python -m generator.bench.run [--sizes 100:2000,1000:20000] [--jobs N]     (or `make bench`)

For each size (leaf recipes : evidence files) it

1. makes the synthetic catalog with `generator.bench.synth` (kept under `.cache/bench/` and reused while
   the generator and the seed are unchanged: synthesis is not what is measured);
2. runs the build's stages one after another in this process, with the build's own functions —
   load, validate, resolve, render, verify, aggregate, pages (Markdown, JSON and charts
   generated and written), mkdocs — recording per stage wall seconds, CPU seconds (this process
   and its worker processes) and peak memory (the proportional set size summed over this process
   and every descendant, so pages a forked worker shares with its parent count once; sampled
   every 50 ms);
3. runs the whole `aicr-catalog build` cold (empty output and cache) as a subprocess, three times
   (`AICR_BENCH_COLD_RUNS`; the median wall and CPU and the largest peak are judged, each run is
   in the results), then again unchanged (no-change rebuild), then after adding one evidence
   file, and `aicr-catalog validate`;
4. runs a plain `mkdocs build` (same theme, no plugins beyond search) of as many trivial pages as
   the build generated, and reports the whole build's ratio to it.

Results go to `bench/results/<recipes>x<evidence>.json` (no timestamps) and a table to stdout.
Timings depend on the machine and its load: the JSON records the CPU count and load average.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import stat
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from generator.core import archive, atomic, envvars, outputs, proc, safeio

if TYPE_CHECKING:
    from generator.site.build import BuildOptions

REPO = safeio.resolve(Path(__file__)).parents[2]  # the code measured (a snapshot, see main)
HOME = Path(envvars.get("AICR_BENCH_HOME") or REPO)  # the checkout results are written to
RESULTS = HOME / "bench" / "results"
WORK = HOME / ".cache" / "bench"
BIN = Path(sys.executable).parent
SEED = 1
SIZES = ((100, 2000), (1000, 20000))
# how long a child of the harness may run before the process door stops it: one build or mkdocs
# (a cold build at 1,000 x 20,000 takes ~90-160 s), a git or tar step, the whole measured snapshot
RUN_TIMEOUT = 4 * 3600.0
STEP_TIMEOUT = 600.0
BENCH_TIMEOUT = 24 * 3600.0
PROC_FILE_BYTES = 1 << 20  # /proc/<pid>/stat and smaps_rollup: a few hundred bytes
TARGETS = {  # issue 29's, at 1,000 recipes x 20,000 evidence on the 2-core machine
    "cold_build_s": 90.0,
    "cold_build_cpu_s": 63.0,  # 1.3 x the irreducible work (verify, archives, pages: ~48 CPU-s)
    "ratio_to_mkdocs": 2.0,
    "peak_mb": 2048.0,
    "no_change_rebuild_s": 2.0,
    "one_evidence_rebuild_s": 3.0,
    "one_evidence_removed_s": 3.0,
    "validate_s": 5.0,
    "largest_page_mb": 1.5,
    "largest_api_file_mb": 5.0,
}


# --- measuring ----------------------------------------------------------------------------------


def _pss_kb(pid: int) -> int | None:
    """Proportional set size (kB) of `pid`: its private pages plus its share of shared ones."""
    try:
        text = safeio.read_own(f"/proc/{pid}/smaps_rollup", limit=PROC_FILE_BYTES)
    except safeio.Refusal:  # gone, or not ours to read
        return None
    for line in text.splitlines():
        if line.startswith(b"Pss:"):
            return int(line.split()[1])
    return None


def _rss_tree_kb(root: int) -> int:
    """Memory (kB) of `root` and all its descendants, from /proc: the sum of their proportional
    set sizes, so pages a forked worker shares with its parent are counted once, not once per
    process (a sum of RSS would count them twice); RSS where smaps_rollup is unreadable."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for name in safeio.names("/proc"):
        if not name.isdigit():
            continue
        try:
            raw = safeio.read_own(f"/proc/{name}/stat", limit=PROC_FILE_BYTES)
        except safeio.Refusal:  # ended since the listing
            continue
        fields = raw.rsplit(b")", 1)[1].split()
        pid = int(name)
        children.setdefault(int(fields[1]), []).append(pid)
        rss[pid] = int(fields[21]) * (resource.getpagesize() // 1024)
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        pss = _pss_kb(pid)
        total += pss if pss is not None else rss.get(pid, 0)
        todo.extend(children.get(pid, ()))
    return total


class PeakSampler:
    """Samples the RSS of a process tree in a thread; `peak_mb` since the last `reset()`."""

    def __init__(self, pid: int, interval: float = 0.05) -> None:
        self.pid, self.interval = pid, interval
        self.peak_kb = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak_kb = max(self.peak_kb, _rss_tree_kb(self.pid))
            self._stop.wait(self.interval)

    def reset(self) -> None:
        self.peak_kb = _rss_tree_kb(self.pid)

    @property
    def peak_mb(self) -> float:
        return round(self.peak_kb / 1024, 1)

    def __enter__(self) -> PeakSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


@dataclass
class Stage:
    name: str
    wall_s: float = 0.0
    cpu_s: float = 0.0
    peak_mb: float = 0.0
    note: str = ""


def _cpu() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


@contextmanager
def measure(stage: Stage, sampler: PeakSampler) -> Iterator[None]:
    sampler.reset()
    wall, cpu = time.perf_counter(), _cpu()
    yield
    stage.wall_s = round(time.perf_counter() - wall, 2)
    stage.cpu_s = round(_cpu() - cpu, 2)
    stage.peak_mb = max(sampler.peak_mb, round(_rss_tree_kb(os.getpid()) / 1024, 1))
    print(
        f"  {stage.name}: {stage.wall_s} s wall, {stage.cpu_s} s CPU, {stage.peak_mb} MB",
        flush=True,
    )


@dataclass
class Run:
    """One subprocess: wall and CPU seconds (`system_s` of them in the kernel: the part that
    varies most from run to run on this machine), peak memory of its process tree."""

    command: str
    wall_s: float
    cpu_s: float
    peak_mb: float
    exit: int
    stdout_tail: str = ""
    system_s: float = 0.0


# what a measured child is handed of this environment beyond the process door's allow-list: the
# variables the tool reads, so the build measured is configured as the harness was run, and
# PYTHONPATH, which `main` sets to the snapshot measured: the builds must import the same code
CHILD_INHERITS = (*envvars.READ, "PYTHONPATH")


def run_process(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> Run:
    """Run a command: wall seconds, CPU seconds of it and its children (wait4's rusage) and the
    peak resident set of its process tree (sampled from /proc: wait4's ru_maxrss would count
    the memory the child shared with this process before exec). Started through the process
    door (`proc.spawn`): the environment is its allow-list, `CHILD_INHERITS` and `env`."""
    start = time.perf_counter()
    with proc.spawn(
        args, timeout=RUN_TIMEOUT, cwd=cwd, inherit=CHILD_INHERITS, extra_env=env
    ) as child:
        with PeakSampler(child.pid, interval=0.05) as sampler:
            done = child.wait()
    wall = time.perf_counter() - start
    out = done.completed.stdout + done.completed.stderr
    return Run(
        command=" ".join(Path(a).name if i == 0 else a for i, a in enumerate(args)),
        wall_s=round(wall, 2),
        cpu_s=round(done.cpu_s, 2),
        peak_mb=sampler.peak_mb,
        exit=done.completed.returncode,
        stdout_tail=out.decode("utf-8", "replace")[-600:],
        system_s=round(done.system_s, 2),
    )


# --- the synthetic catalog ------------------------------------------------------------------------


def synthetic(recipes: int, evidence: int, jobs: int | None) -> Path:
    """The synthetic catalog of this size, made once per generator fingerprint."""
    from generator.bench.synth import SynthOptions, synthesize
    from generator.core.cache import fingerprint

    out = WORK / f"synth-{recipes}x{evidence}"
    stamp = out / ".bench-stamp"
    want = f"{fingerprint('synth.py', 'samples.py', 'qualify.py', 'evidence')} {SEED}\n"
    if safeio.is_file(stamp) and safeio.read_text(stamp, root=out) == want:
        return out
    outputs.discard(out)
    t = time.perf_counter()
    synthesize(SynthOptions(recipes, evidence, SEED, jobs), out)
    print(
        f"  synthesized {recipes} recipes / {evidence} evidence in {time.perf_counter() - t:.0f} s"
    )
    atomic.write_text(stamp, want, root=out)
    return out


# --- the stages, in process ---------------------------------------------------------------------


def _measure_pages(
    options: BuildOptions,
    jobs: int | None,
    out: Path,
    result: dict[str, Stage],
    sampler: PeakSampler,
) -> int:
    """The `pages` and `mkdocs` stages, measured into `result`; returns the page count."""
    from generator.site import build as site_build

    # the site's own gather gives SiteData (verification is memoized in this process;
    # bundles are left out here, they were measured above)
    site = site_build.gather(replace(site_build_options(options, jobs), bundles=False), 0)
    work = out.parent / f".{out.name}-bench"
    outputs.discard(work, ignore_errors=True)
    with measure(result["pages"], sampler):
        made = site_build.make_pages(site, site_build_options(options, jobs))
        generated = made.skeletons
        site_build._write(work / "docs", site_build.static_docs(options))
        site_build._write(work / "docs", generated)
        config = site_build.mkdocs_config(options.config, work / "docs", work / "site")
        import yaml

        atomic.write_text(work / "mkdocs.yml", yaml.safe_dump(config, sort_keys=True), root=work)
    engine = len(safeio.glob_tree(work / "docs", "*.md"))  # the pages mkdocs builds
    # the pages mkdocs built one by one before recipe and evidence pages were stamped (the run
    # pages were stamped already): what the plain mkdocs run below is sized by, as before
    stamped = sum(
        1
        for rel, c in made.content.items()
        if c.stamp and c.stamp != rel and not rel.startswith("evidence/runs/")
    )
    pages = engine - len(made.own) + stamped
    result["pages"].note = (
        f"{len(generated)} generated files, {pages} pages ({engine} built by mkdocs, "
        f"{stamped} recipe and evidence pages stamped)"
    )
    with measure(result["mkdocs"], sampler):
        site_build.run_mkdocs(work / "mkdocs.yml", 0)
        site_build.finish_pages(work / "site", made)  # blocks back
    outputs.discard(work, ignore_errors=True)
    return pages


def stages_in_process(synth: Path, out: Path, jobs: int | None) -> tuple[list[Stage], int]:
    """Each stage of the site build, measured; returns the stages and the generated page count."""
    from generator import pipeline
    from generator.catalog.load import load_catalog
    from generator.core.memo import Memo
    from generator.scale.qualify import lanes_of
    from generator.site import build as site_build
    from generator.site import stages as st
    from generator.validate import validate_catalog

    options = site_build.BuildOptions(
        catalog=synth / "catalog",
        evidence=synth / "evidence",
        out=out,
        trust_root=str(synth / "trust" / "synth-root.json"),
        source_date_epoch=0,
    )
    names = ("load", "validate", "resolve", "render", "verify", "aggregate", "pages", "mkdocs")
    result = {n: Stage(n) for n in names}
    with PeakSampler(os.getpid()) as sampler:
        with measure(result["load"], sampler):
            catalog, load_diags = load_catalog(options.catalog)
        with measure(result["validate"], sampler):
            diags = validate_catalog(catalog, load_diagnostics=load_diags)
        errors = [d for d in diags if d.severity.name == "ERROR"]
        if errors:
            raise SystemExit(f"synthetic catalog does not validate: {errors[0].format()}")
        with measure(result["resolve"], sampler):
            resolved = {
                leaf: pipeline.resolve_recipe(catalog, leaf)[0] for leaf in catalog.leaves()
            }
            results = tuple(r for rs in resolved.values() for r in rs)
            lanes = lanes_of(catalog.documents)
            stage = pipeline.Resolved(catalog, resolved, {}, (), lanes)
        result["resolve"].note = f"{len(results)} recipe x profile"
        with measure(result["render"], sampler):
            kwargs = _jobs_kwarg(st.render_bundles, jobs)
            # the archives come first (the refusals second since issue 31, before: the note)
            downloads = st.render_bundles(
                catalog, results, site_build.DEFAULT_DEPLOYERS, 0, **kwargs
            )[0]
        result["render"].note = f"{sum(len(v) for v in downloads.values())} archives"
        with measure(result["verify"], sampler):
            inputs = pipeline.Inputs(
                options.catalog, options.evidence, (options.trust_root,), jobs=jobs
            )
            verified = pipeline.verify(inputs, stage, Memo())
        result["verify"].note = f"{len(verified.records)} files"
        with measure(result["aggregate"], sampler):
            pipeline.aggregate(stage, verified.records, verified)
        pages = _measure_pages(options, jobs, out, result, sampler)
    return [result[n] for n in names], pages


def _jobs_kwarg(fn: Callable[..., Any], jobs: int | None) -> dict[str, Any]:
    """Pass `jobs` to a stage adapter only if it takes one (it did not always)."""
    import inspect

    return {"jobs": jobs} if "jobs" in inspect.signature(fn).parameters else {}


def site_build_options(options: Any, jobs: int | None) -> Any:
    from dataclasses import fields, replace

    if jobs is not None and "jobs" in {f.name for f in fields(options)}:
        return replace(options, jobs=jobs)
    return options


# --- plain mkdocs -------------------------------------------------------------------------------


def plain_mkdocs(pages: int, where: Path) -> Run:
    """`mkdocs build` of `pages` trivial pages with the same theme: the page engine's own cost."""
    outputs.discard(where, ignore_errors=True)
    atomic.make_dirs(where / "docs")
    with atomic.TreeWriter(where) as tree:
        tree.put("docs/index.md", b"# Index\n\nTrivial pages for the benchmark.\n")
        for i in range(1, pages):
            page = f"# Page {i}\n\nA trivial page, number {i}.\n"
            tree.put(f"docs/p{i // 500:02d}/page{i:05d}.md", page.encode())
        # as in the site: the pages are built but kept out of the navigation (a navigation of
        # thousands of entries would make every page cost O(pages) and the engine look slower)
        tree.put(
            "mkdocs.yml",
            b"site_name: plain\ntheme:\n  name: material\n  font: false\n"
            b"use_directory_urls: false\nnav:\n  - index.md\n",
        )
    run = run_process([str(BIN / "mkdocs"), "build", "-q"], where)
    outputs.discard(where, ignore_errors=True)
    return run


# --- whole builds -------------------------------------------------------------------------------


def whole_builds(synth: Path, jobs: int | None) -> dict[str, Run]:
    """Cold build, no-change rebuild, one added evidence file, validate — as users run them."""
    out = WORK / f"site-{synth.name}"
    cache = out.parent / ".cache"
    outputs.discard(cache, ignore_errors=True)
    outputs.discard(out, ignore_errors=True)
    base = [
        str(BIN / "aicr-catalog"),
        "build",
        "--catalog",
        str(synth / "catalog"),
        "--evidence",
        str(synth / "evidence"),
        "--trust-root",
        str(synth / "trust" / "synth-root.json"),
        "-o",
        str(out),
    ]
    help_text = proc.run(
        [str(BIN / "aicr-catalog"), "build", "--help"], timeout=STEP_TIMEOUT
    ).text()
    if jobs is not None and "--jobs" in help_text:
        base += ["--jobs", str(jobs)]
    env = {"SOURCE_DATE_EPOCH": "0"}
    runs: dict[str, Run] = {}

    def run(name: str, args: list[str]) -> Run:
        runs[name] = r = run_process(args, REPO, env)
        print(
            f"  {name}: {r.wall_s} s wall, {r.cpu_s} s CPU ({r.system_s} system), {r.peak_mb} MB,"
            f" exit {r.exit}",
            flush=True,
        )
        return r

    runs["cold_build"] = cold_builds(lambda name: run(name, base), (cache, out))
    run("no_change_rebuild", base)
    added = add_one_evidence(synth)
    try:
        run("one_evidence_rebuild", base)
    finally:
        atomic.remove(added)
    run("one_evidence_removed", base)  # the file added above, gone again
    if "--no-cache" in help_text and len(safeio.names(synth / "catalog" / "overlays")) < 300:
        run("no_cache_build", [*base, "--no-cache"])  # (at large sizes it repeats cold_build)
    run("validate", [str(BIN / "aicr-catalog"), "validate", "--catalog", str(synth / "catalog")])
    runs.update(recipes_json(out))
    runs.update(largest_files(out))
    outputs.discard(out, ignore_errors=True)
    outputs.discard(cache, ignore_errors=True)
    return runs


# Cold builds measured (`AICR_BENCH_COLD_RUNS`). One cold build's CPU varies by more than the
# margin judged: the same code measured 69.2, 70.6 and 76.3 CPU-s on one machine in one hour (its
# system time 6-15 s), so the median of three is judged, and each run is in the results.
COLD_RUNS = 3


def cold_runs() -> int:
    """How many cold builds to measure: `AICR_BENCH_COLD_RUNS`, else `COLD_RUNS`."""
    text = envvars.get("AICR_BENCH_COLD_RUNS") or ""
    if not text:
        return COLD_RUNS
    if not text.isdigit() or int(text) < 1:
        raise SystemExit(f"AICR_BENCH_COLD_RUNS={text!r}: give a whole number of runs, 1 or more")
    return int(text)


def cold_builds(run: Callable[[str], Run], made: Sequence[Path]) -> Run:
    """`cold_runs()` cold builds (`run(name)`), each after the directories it makes (`made`:
    the output and the cache) are discarded, as one (`median_run`); the last one's stay."""
    colds = []
    for i in range(cold_runs()):
        for path in made:
            outputs.discard(path, ignore_errors=True)
        colds.append(run(f"cold_build_{i + 1}"))
    middle = median_run(colds)
    print(
        f"  cold_build (median of {len(colds)}): {middle.wall_s} s wall, {middle.cpu_s} s CPU, "
        f"largest peak {middle.peak_mb} MB",
        flush=True,
    )
    return middle


def median_run(runs: Sequence[Run]) -> Run:
    """The runs as one: the median wall and the median CPU seconds (the lower of the middle two
    of an even count) with the system seconds of the run that gave it, the largest peak, the
    worst exit status."""
    if not runs:
        raise ValueError("median_run: no runs")
    middle = sorted(runs, key=lambda r: r.cpu_s)[(len(runs) - 1) // 2]
    return Run(
        command=runs[0].command,
        wall_s=statistics.median_low(r.wall_s for r in runs),
        cpu_s=middle.cpu_s,
        peak_mb=max(r.peak_mb for r in runs),
        exit=max(runs, key=lambda r: abs(r.exit)).exit,
        stdout_tail=runs[-1].stdout_tail,
        system_s=middle.system_s,
    )


def recipes_json(out: Path) -> dict[str, Run]:
    """The size of `api/v1/recipes.json` (the dashboard's data), gzipped, in KiB."""
    path = out / "api" / "v1" / "recipes.json"
    if not safeio.is_file(path):
        return {}
    data = safeio.read(path, root=out, where="the built site", limit=safeio.OTHER_BYTES)
    kib = round(len(archive.gzip_bytes(data)) / 1024, 1)
    return {
        "recipes_json": Run(
            "api/v1/recipes.json", 0, 0, kib, 0, f"{len(data)} bytes, {kib} KiB gzip"
        )
    }


def largest_files(out: Path) -> dict[str, Run]:
    """The largest published page (.html) and API file (api/**), in MB (as `peak_mb`)."""
    found: dict[str, Run] = {}
    for name, top, suffixes in (
        ("largest_page", out, (".html",)),
        ("largest_api_file", out / "api", ()),
    ):
        # the walk's own lstat of each regular file (the site holds no links), in path order
        files = [
            (e.stat.st_size, Path(e.path))
            for e in safeio.walk(top, suffixes=suffixes).entries
            if e.stat is not None and stat.S_ISREG(e.stat.st_mode)
        ]
        if files:
            size, big = max(files, key=lambda f: f[0])
            found[name] = Run(big.relative_to(out).as_posix(), 0, 0, round(size / 1e6, 2), 0)
    return found


def add_one_evidence(synth: Path) -> Path:
    """Sign one more run (as a lab would add one) into the synthetic evidence; returns its path."""
    from generator.bench.synth import N_SIGNERS, PlannedRun, _init, _sign, leaves, signer_identity
    from generator.core.records import DEFAULT_PROFILE

    _init(str(synth / "catalog"), SEED)
    leaf = leaves(int(synth.name.split("-")[1].split("x")[0]))[0].name
    rel, bundle = _sign(
        PlannedRun(leaf, DEFAULT_PROFILE, "lane-36", signer_identity(N_SIGNERS), 999, "pass")
    )
    path = synth / rel
    atomic.write_atomic(path, bundle, root=synth)
    return path


# --- report -------------------------------------------------------------------------------------


@dataclass
class Result:
    recipes: int
    evidence: int
    machine: dict[str, Any]
    stages: list[Stage]
    pages: int
    builds: dict[str, Run]
    mkdocs_plain: Run
    ratio_to_mkdocs: float
    cpu_ratio_to_mkdocs: float
    targets: dict[str, Any] = field(default_factory=dict)
    # the site's own page stages (pages + mkdocs + data blocks put back) over plain mkdocs, CPU:
    # the overhead above the page engine without verification and rendering in it
    pages_cpu_ratio_to_mkdocs: float = 0.0


def judge(result: Result) -> dict[str, Any]:
    b = result.builds
    seen = {
        "cold_build_s": b["cold_build"].wall_s,
        "cold_build_cpu_s": b["cold_build"].cpu_s,
        "ratio_to_mkdocs": result.ratio_to_mkdocs,
        # the build as users run it; the in-process stage figures above hold more than a build
        # does (each stage's output is kept for the next measurement, and the site data is
        # gathered a second time for the page stages), so they are shown, not judged
        "peak_mb": b["cold_build"].peak_mb,
        "no_change_rebuild_s": b["no_change_rebuild"].wall_s,
        "one_evidence_rebuild_s": b["one_evidence_rebuild"].wall_s,
        "one_evidence_removed_s": b["one_evidence_removed"].wall_s,
        "validate_s": b["validate"].wall_s,
        "largest_page_mb": b["largest_page"].peak_mb if "largest_page" in b else 0.0,
        "largest_api_file_mb": b["largest_api_file"].peak_mb if "largest_api_file" in b else 0.0,
    }
    return {k: {"target": TARGETS[k], "seen": v, "met": v <= TARGETS[k]} for k, v in seen.items()}


def table(result: Result) -> str:
    lines = [
        f"## {result.recipes} recipes x 2 profiles, {result.evidence} evidence files "
        f"({result.pages} pages)",
        "",
        "| stage | wall s | CPU s | peak MB | note |",
        "| --- | ---: | ---: | ---: | --- |",
    ]
    for s in result.stages:
        lines.append(f"| {s.name} | {s.wall_s} | {s.cpu_s} | {s.peak_mb} | {s.note} |")
    lines += [
        "",
        "| run | wall s | CPU s (system) | peak MB | exit |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for name, r in result.builds.items():
        if name.startswith("largest_"):
            lines.append(f"| {name}: {r.command} | | | {r.peak_mb} MB (size) | |")
        elif name != "recipes_json":
            cpu = f"{r.cpu_s} ({r.system_s})"
            lines.append(f"| {name} | {r.wall_s} | {cpu} | {r.peak_mb} | {r.exit} |")
    p = result.mkdocs_plain
    lines.append(
        f"| plain mkdocs ({result.pages} trivial pages) | {p.wall_s} | {p.cpu_s} ({p.system_s}) "
        f"| {p.peak_mb} | {p.exit} |"
    )
    lines += [
        "",
        f"whole build / plain mkdocs: **{result.ratio_to_mkdocs}x** wall, "
        f"{result.cpu_ratio_to_mkdocs}x CPU; page stages (pages + mkdocs) / plain mkdocs: "
        f"{result.pages_cpu_ratio_to_mkdocs}x CPU",
    ]
    if "recipes_json" in result.builds:
        lines.append(f"recipes.json: {result.builds['recipes_json'].stdout_tail}")
    lines += ["", "| target | limit | seen | met |", "| --- | ---: | ---: | --- |"]
    for k, v in result.targets.items():
        lines.append(f"| {k} | {v['target']} | {v['seen']} | {'yes' if v['met'] else 'NO'} |")
    return "\n".join(lines)


def bench(recipes: int, evidence: int, jobs: int | None = None) -> Result:
    print(f"\n== {recipes} recipes / {evidence} evidence", flush=True)
    synth = synthetic(recipes, evidence, jobs)
    stages, pages = stages_in_process(synth, WORK / f"stages-{synth.name}", jobs)
    print("  stages measured", flush=True)
    builds = whole_builds(synth, jobs)
    print("  whole builds measured", flush=True)
    plain = plain_mkdocs(pages, WORK / "plain-mkdocs")
    cold = builds["cold_build"]
    ratio = round(cold.wall_s / plain.wall_s, 2) if plain.wall_s else 0.0
    cpu_ratio = round(cold.cpu_s / plain.cpu_s, 2) if plain.cpu_s else 0.0
    load1, load5, _ = os.getloadavg()
    result = Result(
        recipes=recipes,
        evidence=evidence,
        machine={
            "commit": _commit_of(REPO),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "load_average_1m_5m_at_end": [round(load1, 2), round(load5, 2)],
            "jobs": jobs,
        },
        stages=stages,
        pages=pages,
        builds=builds,
        mkdocs_plain=plain,
        ratio_to_mkdocs=ratio,
        cpu_ratio_to_mkdocs=cpu_ratio,
    )
    page_cpu = sum(s.cpu_s for s in stages if s.name in ("pages", "mkdocs"))
    result.pages_cpu_ratio_to_mkdocs = round(page_cpu / plain.cpu_s, 2) if plain.cpu_s else 0.0
    result.targets = judge(result)
    atomic.make_dirs(RESULTS)
    doc = asdict(result)
    for r in doc["builds"].values():
        r.pop("stdout_tail", None) if r["command"] != "api/v1/recipes.json" else None
    doc["mkdocs_plain"].pop("stdout_tail", None)
    atomic.write_text(
        RESULTS / f"{recipes}x{evidence}.json",
        json.dumps(doc, indent=2, sort_keys=True, allow_nan=False) + "\n",
        root=RESULTS,
    )
    return result


def _commit_of(tree: Path) -> str:
    """The commit a snapshot was extracted from (its COMMIT file), "" for a checkout."""
    marker = tree / "COMMIT"
    return safeio.read_text(marker, root=tree).strip() if safeio.is_file(marker) else ""


def parse_sizes(text: str) -> tuple[tuple[int, int], ...]:
    return tuple(tuple(int(x) for x in part.split(":")) for part in text.split(",") if part)  # type: ignore[misc]


def snapshot(rev: str) -> Path:
    """The committed tree of `rev`, extracted under .cache/bench/src-<commit>: what is measured
    does not change while other work goes on in the checkout."""
    commit = _checked(proc.git(HOME, "rev-parse", rev, timeout=STEP_TIMEOUT)).text().strip()
    where = WORK / f"src-{commit[:12]}"
    if not safeio.is_dir(where / "generator"):
        outputs.discard(where, ignore_errors=True)
        atomic.make_dirs(where)
        tarred = _checked(
            proc.git(HOME, "archive", commit, timeout=STEP_TIMEOUT, limit=proc.ARCHIVE_BYTES)
        ).stdout
        _checked(proc.run(["tar", "-x", "-C", str(where)], input=tarred, timeout=STEP_TIMEOUT))
    atomic.write_text(where / "COMMIT", commit + "\n", root=where)
    return where


def _checked(done: proc.Completed) -> proc.Completed:
    """`done`, if it exited 0; else the harness stops, saying what failed (as `check=True`)."""
    if not done.ok:
        raise SystemExit(f"{' '.join(done.argv)}: exit {done.returncode}: {done.error_text()}")
    return done


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=envvars.get("AICR_BENCH_SIZES") or "")
    parser.add_argument("--jobs", type=int, default=None)
    parser.add_argument(
        "--rev",
        default=envvars.get("AICR_BENCH_REV") or "HEAD",
        help="commit to measure (a snapshot of it); 'worktree' measures the checkout as it is",
    )
    args = parser.parse_args(argv)
    if args.rev != "worktree" and envvars.get("AICR_BENCH_HOME") is None:
        src = snapshot(args.rev)
        env = {"AICR_BENCH_HOME": str(HOME), "PYTHONPATH": str(src)}
        cmd = [
            sys.executable,
            "-m",
            "generator.bench.run",
            "--rev",
            "worktree",
            "--sizes",
            args.sizes,
        ]
        if args.jobs is not None:
            cmd += ["--jobs", str(args.jobs)]
        print(f"measuring commit {_commit_of(src)} (snapshot {src})", flush=True)
        # the snapshot's run prints its progress and tables to this terminal as it goes
        done = proc.run(
            cmd, timeout=BENCH_TIMEOUT, cwd=src, inherit=CHILD_INHERITS, extra_env=env, echo=True
        )
        return done.returncode
    sizes = parse_sizes(args.sizes) if args.sizes else SIZES
    for recipes, evidence in sizes:
        print(table(bench(recipes, evidence, args.jobs)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
