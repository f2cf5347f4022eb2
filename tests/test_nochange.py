"""A no-change rebuild finds out before it imports the pipeline (`generator.site.entry`): counted
by the modules the process loaded, never by time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from generator.bench.synth import SynthOptions, synthesize
from tests.synth_site import cli_build

EPOCH = 1767225600
HEAVY = (
    "pandas",
    "sigstore",
    "jinja2",
    "mkdocs",
    "plotly",
    "jsonschema",
    "generator.site.build",
    "generator.pipeline",
    "generator.site.pages",
    "generator.evidence.verify",
)

# one `aicr-catalog build` in a fresh interpreter; prints its output and the heavy modules loaded
SCRIPT = """
import json, sys
from generator.cli import main
try:
    main(sys.argv[1:], standalone_mode=False)
except SystemExit as e:
    assert not e.code, e.code
heavy = json.loads(%r)
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in heavy or m in heavy)))
"""


def _build_in_a_fresh_process(synth: Path, out: Path, env: dict[str, str]) -> tuple[str, list[str]]:
    args = [
        "build",
        "--catalog",
        str(synth / "catalog"),
        "--evidence",
        str(synth / "evidence"),
        "--trust-root",
        str(synth / "trust" / "synth-root.json"),
        "--no-bundles",
        "--jobs",
        "1",
        "-o",
        str(out),
    ]
    script = SCRIPT % json.dumps(HEAVY)
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    *output, loaded = done.stdout.strip().splitlines()
    return "\n".join(output), json.loads(loaded)


@pytest.fixture
def synth(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AICR_CATALOG_CACHE_KEY", str(tmp_path / "cache.key"))
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(EPOCH))
    out = tmp_path / "synth"
    synthesize(SynthOptions(2, 4, seed=7, jobs=1), out)
    return out


def test_a_no_change_rebuild_imports_no_stage(synth: Path, tmp_path: Path) -> None:
    out = tmp_path / "site"
    first = cli_build(synth, out)
    env = {**os.environ, "SOURCE_DATE_EPOCH": str(EPOCH)}
    again, loaded = _build_in_a_fresh_process(synth, out, env)
    assert again.splitlines()[-1] == first.splitlines()[-1]  # the same report
    assert loaded == []
    # the control: a build that has work to do (a new output) imports them, so the check
    # above does see imports
    (out.parent / "other").mkdir()
    _, loaded = _build_in_a_fresh_process(synth, out.parent / "other" / "site", env)
    assert {"generator.site.build", "generator.pipeline", "jinja2"} <= set(loaded)
