"""`make bench`: the build benchmark over synthetic catalogs (skipped by `make test`).

Runs `python -m generator.bench.run` (a snapshot of HEAD; see generator/bench/run.py) for each size — default
100 recipes / 2,000 evidence and 1,000 / 20,000; override with AICR_BENCH_SIZES="100:2000" —
which prints the per-stage tables and writes `bench/results/<recipes>x<evidence>.json`. This
test checks that every build of the run succeeded and that each result holds every stage. The
targets are reported (met or not), not asserted: they depend on the machine and its load, and a
miss is a finding to record, not a flake.
"""

from __future__ import annotations

import json
import os

import pytest

from generator.bench.run import RESULTS, SIZES, main, parse_sizes

pytestmark = pytest.mark.bench

STAGES = ["load", "validate", "resolve", "render", "verify", "aggregate", "pages", "mkdocs"]


def test_bench_build() -> None:
    text = os.environ.get("AICR_BENCH_SIZES", "")
    sizes = parse_sizes(text) or SIZES
    assert main(["--sizes", ",".join(f"{r}:{e}" for r, e in sizes)]) == 0
    for recipes, evidence in sizes:
        doc = json.loads((RESULTS / f"{recipes}x{evidence}.json").read_text())
        assert doc["recipes"] == recipes and doc["evidence"] == evidence
        assert [s["name"] for s in doc["stages"]] == STAGES
        assert all(s["peak_mb"] > 0 for s in doc["stages"])
        for name, run in doc["builds"].items():
            assert run["exit"] == 0, f"{name}: {run['command']}"
        assert doc["mkdocs_plain"]["exit"] == 0 and doc["ratio_to_mkdocs"] > 0
        assert set(doc["targets"]) == {
            "cold_build_s",
            "cold_build_cpu_s",
            "ratio_to_mkdocs",
            "peak_mb",
            "no_change_rebuild_s",
            "one_evidence_rebuild_s",
            "one_evidence_removed_s",
            "validate_s",
            "largest_page_mb",
            "largest_api_file_mb",
        }
