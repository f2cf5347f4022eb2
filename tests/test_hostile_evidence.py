"""Hostile evidence beyond one `evidence verify` transcript.

- The signed inputs of the `hostile/evidence-*` and `hostile/page-*` cases are exactly what
  `tests/hostile_evidence.py` writes (signing is deterministic), so they can be regenerated and
  reviewed as a diff rather than trusted as opaque blobs.
- A named pipe given explicitly must not block the verifier (the runner's 20 s hang bound would
  make that case slow, so it runs here with a 2 s bound).
- `status` must count one statement stored twice as one run.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from generator.cli import main
from generator.evidence.statement import build_statement
from tests import evidence_fixtures as fx
from tests import hostile_evidence as he
from tests.conftest import CATALOG
from tests.test_cases import MEMORY_LIMIT, build_case, run_isolated

GENERATED_NAMES = ("about.txt", "command.txt", "symlinks.txt", "fifos.txt", "generate.yaml")
TRUST = ("--trust-root", f"catalog/{he.ROOT_FILE}")


def _tree(folder: Path) -> dict[str, bytes]:
    """The files this generator owns in a case folder: its catalog/ and descriptor files."""
    out = {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted((folder / "catalog").rglob("*"))
        if p.is_file()
    }
    out.update({n: (folder / n).read_bytes() for n in GENERATED_NAMES if (folder / n).is_file()})
    return out


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("regenerated")
    he.write(root)
    return root


def _case_names() -> list[str]:
    return sorted(p.name for p in he.HOSTILE.iterdir() if p.name.startswith(("evidence-", "page-")))


def test_every_generated_case_is_committed_and_no_other(regenerated: Path) -> None:
    assert sorted(p.name for p in regenerated.iterdir()) == _case_names()


@pytest.mark.parametrize("name", _case_names())
def test_committed_inputs_are_byte_identical_to_the_generator(regenerated: Path, name: str) -> None:
    committed, fresh = _tree(he.HOSTILE / name), _tree(regenerated / name)
    assert sorted(committed) == sorted(fresh), "run: .venv/bin/python -m tests.hostile_evidence"
    changed = sorted(rel for rel in fresh if committed[rel] != fresh[rel])
    assert changed == [], "run: .venv/bin/python -m tests.hostile_evidence, then review the diff"


def test_signing_is_deterministic() -> None:
    payload = he.statement(he.RECIPE, he.OLDER_DIGEST)
    assert he.sign(payload) == he.sign(payload)
    assert he.sign(payload) != he.sign(payload, issuer=he.FOREIGN_ISSUER)


def test_cases_are_distinct_attacks() -> None:
    """No two evidence cases ship the same evidence bytes (each changes something)."""
    seen: dict[bytes, str] = {}
    for case in he.cases():
        for rel, data in case.files.items():
            if rel.startswith("evidence/"):
                first = seen.setdefault(data, case.name)
                dup_ok = first == case.name or "control" in first or "duplicate" in case.name
                assert dup_ok, f"{case.name} repeats {first}'s evidence"


# ---------------------------------------------------------------- a FIFO named explicitly


def test_explicit_fifo_does_not_block(tmp_path: Path) -> None:
    build_case(he.HOSTILE / "evidence-control-verified", tmp_path)
    fifo = tmp_path / "catalog" / "evidence" / "pipe.sigstore.json"
    os.mkfifo(fifo)
    args = ["evidence", "verify", "catalog/evidence/pipe.sigstore.json", "--catalog", "catalog"]
    args += TRUST

    def verify() -> dict[str, Any]:
        os.chdir(tmp_path)
        result = CliRunner().invoke(main, args)
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise result.exception  # e.g. the hang bound's CaseTimeout, which CliRunner caught
        return {"exit": result.exit_code, "stderr": result.stderr}

    # 2 CPU-s bound; a read blocked on the pipe (no CPU) is stopped after 24 s of wall time,
    # which a loaded 2-core machine does not stretch a 0.3 CPU-s run to
    out = run_isolated(verify, seconds=2, memory=MEMORY_LIMIT)
    assert out.died is None and out.error is None, out.died or out.error
    assert out.payload["exit"] == 1
    assert "pipe.sigstore.json: $: not a regular file [file.not-regular]" in out.payload["stderr"]


# ---------------------------------------------------------------- duplicates in status


@pytest.fixture(scope="module")
def duplicated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository whose one passing run is stored twice: at its path and in a nested copy."""
    repo = tmp_path_factory.mktemp("duplicated")
    build_case(he.HOSTILE / "evidence-control-verified", repo)
    shutil.rmtree(repo / "catalog" / "evidence")
    (repo / "catalog" / "scale").mkdir()
    for name in ("lanes.yaml", "checks.yaml"):
        shutil.copy(CATALOG / "scale" / name, repo / "catalog" / "scale" / name)
    from generator.catalog.load import load_catalog
    from generator.catalog.resolve import resolve
    from generator.scale.qualify import lanes_of

    catalog, _ = load_catalog(repo / "catalog")
    pred = fx.passing_predicate(
        resolve(catalog, he.RECIPE, profile="standard"), lanes_of(catalog.documents), "lane-144"
    )
    payload = build_statement(pred)
    at = he.stored_at(payload)
    for rel in (at, f"evidence/mirror/{at}"):
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_bytes(he.sign(payload))
    return repo


def _cli(repo: Path, *args: str) -> Any:
    old = Path.cwd()
    os.chdir(repo)
    try:
        return CliRunner().invoke(main, [*args, *TRUST])
    finally:
        os.chdir(old)


def _status(repo: Path) -> dict[str, Any]:
    result = _cli(repo, "status", "--scale-profile", "standard", "--format", "json")
    assert result.exit_code == 0, result.output
    (row,) = (r for r in json.loads(result.stdout)["recipes"] if r["recipe"] == he.RECIPE)
    return dict(row)


def test_verify_reports_both_copies(duplicated: Path) -> None:
    """The verifier lists files: both copies are reported (same statement); the nested copy is
    not where its content belongs below the evidence root given, so it is a path-mismatch."""
    result = _cli(
        duplicated, "evidence", "verify", "evidence", "--catalog", "catalog", "--format", "json"
    )
    doc = json.loads(result.stdout)
    assert (doc["summary"]["verified"], doc["summary"]["rejected"]) == (1, 1)
    assert len({r["statementDigest"] for r in doc["results"]}) == 1
    (copy,) = (r for r in doc["results"] if r["state"] == "rejected")
    assert (copy["repositoryPath"].startswith("evidence/mirror/"), copy["class"]) == (
        True,
        "path-mismatch",
    )


def test_status_counts_the_signer_once(duplicated: Path) -> None:
    row = _status(duplicated)
    assert (row["signers"], row["consensus"]) == (1, "SINGLE")


def test_status_counts_a_duplicated_statement_once(duplicated: Path) -> None:
    assert _status(duplicated)["runs"] == 1
