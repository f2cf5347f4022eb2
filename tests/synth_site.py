"""`aicr-catalog build` of a synthetic catalog (`generator.bench.synth`), as a user runs it, for
the tests that build one through the CLI (tests/test_pipeline.py, tests/test_stale_site.py)."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from generator.cli import main


def cli_build(synth: Path, out: Path, *extra: str) -> str:
    """Build `synth`'s catalog and evidence into `out` (no bundles, one job); its output. The
    build must succeed."""
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
        *extra,
    ]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    return result.output
