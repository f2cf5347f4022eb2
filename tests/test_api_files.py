"""The JSON API's set of files is declared once (generator/site/apifiles.py) and versioned.

- every path the API publishes is made from a declared pattern; an undeclared one is refused;
- `aicr-catalog compat` refuses a published API file that vanishes (or changes kind or schema)
  unless the break is acknowledged with a reason, and a declared file without a baseline;
- `api/v1/evidence.json` is retired: acknowledged in catalog/schemas/compat-exceptions.yaml,
  its records read from the index and the per-recipe files (`published_runs`), each checked
  against the sha256 the index gives.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from generator.catalog.schemas import SCHEMA_DIR
from generator.cli import main
from generator.core.errors import SiteError
from generator.publish import compat
from generator.site import api, apifiles, badges
from tests.conftest import CATALOG, REPO
from tests.test_site_pages import site


@pytest.fixture(scope="module")
def files() -> dict[str, bytes]:
    s = site()
    return {**api.api_files(s), **badges.badge_files(s)}


def test_every_published_path_is_declared_and_every_required_declaration_published(
    files: dict[str, bytes],
) -> None:
    used = {apifiles.declared(rel).pattern for rel in files}
    required = {f.pattern for f in apifiles.API_FILES if not f.optional}
    assert required <= used, required - used
    assert "api/v1/evidence.json" not in files  # retired (issue 29)
    # each file holds the kind its declaration names
    for rel, data in files.items():
        f = apifiles.declared(rel)
        if f.kind:
            assert json.loads(data)["kind"] == f.kind, rel


def test_each_declared_schema_is_published() -> None:
    for f in apifiles.API_FILES:
        if f.schema:
            assert (SCHEMA_DIR / "api" / f.schema).is_file(), f


def test_an_exact_pattern_wins_and_fields_are_one_segment() -> None:
    assert apifiles.declared("api/v1/evidence/index.json") is apifiles.EVIDENCE_INDEX
    assert apifiles.declared("api/v1/evidence/a-b.json") is apifiles.RECIPE_EVIDENCE
    assert apifiles.RECIPE.path(name="x") == "api/v1/recipes/x.json"
    for bad in ("a/b", "", "..", "."):
        with pytest.raises(SiteError, match="one path segment"):
            apifiles.RECIPE.path(name=bad)
    with pytest.raises(SiteError, match="no field"):
        apifiles.RECIPES.path(name="x")
    for rel in ("api/v1/evidence.json", "api/v1/recipes/a/b.json", "api/v1/other.json"):
        with pytest.raises(SiteError, match="not a declared file of the JSON API"):
            apifiles.declared(rel)


def test_an_undeclared_api_file_is_refused_by_the_build(monkeypatch: pytest.MonkeyPatch) -> None:
    real = api._api_files

    def more(s: Any, reuse: Any) -> Any:
        yield from real(s, reuse)
        yield "api/v1/evidence.json", b"{}\n"

    monkeypatch.setattr(api, "_api_files", more)
    with pytest.raises(SiteError, match=r"api/v1/evidence\.json: not a declared file"):
        api.api_files(site())


def _written(tmp_path: Path, files: dict[str, bytes]) -> Path:
    root = tmp_path / "site"
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    return root


def test_published_runs_are_every_run_once_in_site_order(
    tmp_path: Path, files: dict[str, bytes]
) -> None:
    s = site()
    runs = list(apifiles.published_runs(_written(tmp_path, files)))
    assert [r["id"] for r in runs] == [e.id for e in s.evidence] and runs
    assert runs == [api.run_json(e) for e in s.evidence]


def test_published_runs_refuse_a_file_the_index_does_not_name(
    tmp_path: Path, files: dict[str, bytes]
) -> None:
    root = _written(tmp_path, files)
    index = json.loads(files["api/v1/evidence/index.json"])
    rel = index["recipes"][0]["path"]
    (root / rel).write_bytes(files[rel].replace(b'"verified"', b'"rejected"', 1))
    with pytest.raises(SiteError, match="its sha256 is not the one"):
        list(apifiles.published_runs(root))
    index["recipes"][0]["path"] = "api/v1/recipes.json"
    (root / "api/v1/evidence/index.json").write_text(json.dumps(index))
    with pytest.raises(SiteError, match="is not a recipe's evidence file"):
        list(apifiles.published_runs(root))


# ---------------------------------------------------------------- the compatibility gate


def _schemas(tmp_path: Path) -> Path:
    d = tmp_path / "schemas"
    d.mkdir()
    (d / "thing.schema.json").write_text(json.dumps({"type": "object"}))
    compat.update_baselines(d, CATALOG, "1.0.0")
    return d


def _without(pattern: str) -> dict[str, dict[str, Any]]:
    surface = apifiles.surface()
    del surface[pattern]
    return surface


def test_a_vanished_api_file_fails_the_gate_unless_acknowledged(tmp_path: Path) -> None:
    schemas = _schemas(tmp_path)
    baseline = json.loads((schemas / "baselines" / compat.API_FILES).read_text())
    assert baseline == apifiles.surface()
    assert compat.check(schemas, CATALOG, "1.0.1").ok
    gone = _without("api/v1/lanes.json")
    report = compat.check(schemas, CATALOG, "1.0.1", api_files=gone)
    assert not report.ok
    assert [b.format() for b in report.breaks] == [
        "api-files: api/v1/lanes.json: removed-file: "
        "API file 'api/v1/lanes.json' is no longer published"
    ]
    assert compat.check(schemas, CATALOG, "2.0.0", api_files=gone).ok  # a major version
    ack = {
        "acknowledged": [
            {
                "subject": "api-files",
                "path": "api/v1/lanes.json",
                "kind": "removed-file",
                "reason": "moved into profiles.json",
            }
        ]
    }
    (schemas / compat.EXCEPTIONS).write_text(yaml.safe_dump(ack))
    acked = compat.check(schemas, CATALOG, "1.0.1", api_files=gone)
    assert acked.ok and [b.path for b in acked.acknowledged] == ["api/v1/lanes.json"]
    # back again: the acknowledgement is stale
    assert not compat.check(schemas, CATALOG, "1.0.1").ok


def test_another_kind_or_schema_or_an_optional_file_breaks(tmp_path: Path) -> None:
    schemas = _schemas(tmp_path)
    surface = apifiles.surface()
    surface["api/v1/lanes.json"] = {"kind": "Lanes", "schema": "x.json", "optional": True}
    kinds = sorted(
        b.kind for b in compat.check(schemas, CATALOG, "1.0.1", api_files=surface).breaks
    )
    assert kinds == ["changed-kind", "changed-schema", "now-optional"]


def test_a_new_api_file_without_baseline_fails_until_added(tmp_path: Path) -> None:
    schemas = _schemas(tmp_path)
    surface = {**apifiles.surface(), "api/v1/new.json": {"kind": "New", "schema": "n.json"}}
    report = compat.check(schemas, CATALOG, "1.0.1", api_files=surface)
    assert [(b.path, b.kind) for b in report.breaks] == [("api/v1/new.json", "unbaselined-file")]
    before = (schemas / "baselines" / compat.API_FILES).read_text()
    assert compat.add_api_file_baselines(schemas, surface) == ("api/v1/new.json",)
    after = json.loads((schemas / "baselines" / compat.API_FILES).read_text())
    assert {k: v for k, v in after.items() if k != "api/v1/new.json"} == json.loads(before)
    assert compat.check(schemas, CATALOG, "1.0.1", api_files=surface).ok
    # no baseline file at all: every declared file is unbaselined, none can vanish unseen
    (schemas / "baselines" / compat.API_FILES).unlink()
    report = compat.check(schemas, CATALOG, "1.0.1")
    assert {b.kind for b in report.breaks} == {"unbaselined-file"}
    assert len(report.breaks) == len(apifiles.API_FILES)


def test_the_cli_refuses_a_vanished_api_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from generator.commands import compat as command

    d = tmp_path / "schemas"
    d.mkdir()
    (d / "thing.schema.json").write_text(json.dumps({"type": "object"}))
    compat.update_baselines(d, CATALOG, "0.1.0", cli=compat.cli_surface(main))
    monkeypatch.setattr(command, "SCHEMA_DIR", d)
    monkeypatch.setattr(compat, "api_surface", lambda: _without("api/v1/profiles.json"))
    result = CliRunner().invoke(main, ["compat"])
    assert result.exit_code == 1
    assert "api-files: api/v1/profiles.json: removed-file" in result.stdout
    github = CliRunner().invoke(main, ["compat", "--format", "github"]).stdout.splitlines()
    (line,) = [x for x in github if "title=compat removed-file" in x]
    assert "baselines/api-files.json" in line and line.startswith("::error ")


def test_the_retired_evidence_json_is_acknowledged_with_a_reason() -> None:
    """The repository's own gate sees api/v1/evidence.json gone and passes only because the
    removal is acknowledged, with the reason and where the records went."""
    baseline = json.loads((SCHEMA_DIR / "baselines" / compat.API_FILES).read_text())
    assert baseline["api/v1/evidence.json"]["kind"] == "EvidenceIndex"
    assert "api/v1/evidence.json" not in apifiles.surface()
    acks = yaml.safe_load((SCHEMA_DIR / compat.EXCEPTIONS).read_text())["acknowledged"]
    (ack,) = [a for a in acks if a["subject"] == "api-files"]
    assert (ack["path"], ack["kind"]) == ("api/v1/evidence.json", "removed-file")
    assert "api/v1/evidence/index.json" in ack["reason"] and "docs/api.md" in ack["reason"]
    report = compat.check(SCHEMA_DIR, CATALOG, "0.1.0")
    assert [b.path for b in report.acknowledged if b.subject == "api-files"] == [
        "api/v1/evidence.json"
    ]


def _doc_commands() -> list[str]:
    """The shell commands of docs/api.md "Migrating from api/v1/evidence.json"."""
    text = (REPO / "docs" / "api.md").read_text(encoding="utf-8")
    section = text.split("## Migrating from `api/v1/evidence.json`", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.*?)\n```", section, flags=re.S)


@pytest.mark.parametrize("tool", ["jq", "python3"])
def test_the_documented_migration_rebuilds_the_old_document(
    tmp_path: Path, files: dict[str, bytes], tool: str
) -> None:
    (command,) = [c for c in _doc_commands() if c.startswith(tool)]
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not installed")
    s = site()
    old = {  # what api/v1/evidence.json held (EvidenceIndex)
        **api._header(s, "EvidenceIndex"),
        "sample": any(e.sample for e in s.evidence),
        "evidence": [api.run_json(e) for e in s.evidence],
    }
    root = _written(tmp_path, files)
    out = subprocess.run(
        ["sh", "-c", command], cwd=root, capture_output=True, text=True, check=True, timeout=60
    )
    assert json.loads(out.stdout) == old
