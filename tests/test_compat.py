"""The compatibility gate: each kind of breaking change is caught; additive changes pass."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from generator import compat
from tests.conftest import CATALOG

BASE: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["name"],
    "properties": {
        "name": {"type": "string"},
        "count": {"type": ["integer", "string"]},
        "mode": {"enum": ["fast", "safe"]},
        "spec": {"type": "object", "properties": {"base": {"type": "string"}}},
        "tags": {"type": "array", "items": {"type": "string"}},
    },
}


def kinds(new: dict[str, Any]) -> list[tuple[str, str]]:
    return [(b.kind, b.path) for b in compat.compare_schemas("x.schema.json", BASE, new)]


def changed(**edits: Any) -> dict[str, Any]:
    s = copy.deepcopy(BASE)
    for path, value in edits.items():
        cur = s
        parts = path.split("__")
        for p in parts[:-1]:
            cur = cur[p]
        if value is None:
            del cur[parts[-1]]
        else:
            cur[parts[-1]] = value
    return s


def test_identical_schema_has_no_break() -> None:
    assert kinds(copy.deepcopy(BASE)) == []


def test_removed_field() -> None:
    assert kinds(changed(properties__spec__properties__base=None)) == [
        ("removed-field", "$.properties.spec.properties.base")
    ]


def test_renamed_field_is_a_removal() -> None:
    s = changed(properties__count=None)
    s["properties"]["total"] = {"type": "integer"}
    assert kinds(s) == [("removed-field", "$.properties.count")]


def test_tightened_type() -> None:
    assert kinds(changed(properties__count={"type": "integer"})) == [
        ("tightened-type", "$.properties.count")
    ]


def test_new_required_field() -> None:
    s = changed(required=["name", "mode"])
    assert kinds(s) == [("new-required", "$")]


def test_removed_enum_value() -> None:
    assert kinds(changed(properties__mode={"enum": ["fast"]})) == [
        ("removed-enum", "$.properties.mode")
    ]


def test_additive_optional_field_and_loosening_pass() -> None:
    s = copy.deepcopy(BASE)
    s["properties"]["extra"] = {"type": "string"}
    s["properties"]["mode"]["enum"].append("balanced")
    s["properties"]["count"]["type"] = ["integer", "string", "null"]
    assert kinds(s) == []


def _repo_copy(tmp_path: Path) -> tuple[Path, Path]:
    schemas = tmp_path / "schemas"
    (schemas).mkdir()
    (schemas / "thing.schema.json").write_text(json.dumps(BASE))
    return schemas, CATALOG


def test_check_gate_exceptions_and_stale_acknowledgements(tmp_path: Path) -> None:
    schemas, catalog = _repo_copy(tmp_path)
    compat.update_baselines(schemas, catalog, "1.2.0")
    ok = compat.check(schemas, catalog, "1.2.0")
    assert ok.ok and ok.breaks == ()
    # a break fails...
    (schemas / "thing.schema.json").write_text(
        json.dumps(changed(properties__mode={"enum": ["fast"]}))
    )
    bad = compat.check(schemas, catalog, "1.3.0")
    assert not bad.ok
    assert [b.format() for b in bad.breaks] == [
        'thing.schema.json: $.properties.mode: removed-enum: enum value "safe" removed'
    ]
    # ...unless the major version changes...
    assert compat.check(schemas, catalog, "2.0.0").ok
    # ...or it is acknowledged
    ack = {
        "acknowledged": [
            {
                "subject": "thing.schema.json",
                "path": "$.properties.mode",
                "kind": "removed-enum",
                "reason": "'safe' was never produced",
            }
        ]
    }
    (schemas / compat.EXCEPTIONS).write_text(yaml.safe_dump(ack))
    acked = compat.check(schemas, catalog, "1.3.0")
    assert acked.ok and len(acked.acknowledged) == 1
    # an acknowledgement that matches nothing any more is stale and fails
    (schemas / "thing.schema.json").write_text(json.dumps(BASE))
    stale = compat.check(schemas, catalog, "1.3.0")
    assert not stale.ok
    assert stale.stale_acknowledgements == ("thing.schema.json: $.properties.mode: removed-enum",)
    assert "stale acknowledgement" in compat.report_text(stale)


def test_removed_schema_and_removed_bundle_path(tmp_path: Path) -> None:
    schemas, catalog = _repo_copy(tmp_path)
    compat.update_baselines(schemas, catalog, "1.0.0")
    layouts = json.loads((schemas / "baselines" / compat.LAYOUTS).read_text())
    assert "deploy.sh" in layouts["helm"] and any(
        p.startswith("NNN-<component>/") for p in layouts["helm"]
    )
    layouts["helm"].append("legacy-file.txt")
    (schemas / "baselines" / compat.LAYOUTS).write_text(json.dumps(layouts))
    (schemas / "thing.schema.json").unlink()
    r = compat.check(schemas, catalog, "1.0.1")
    assert [(b.subject, b.kind) for b in r.breaks] == [
        ("bundle-layout:helm", "removed-path"),
        ("thing.schema.json", "removed-schema"),
    ]


def test_repository_is_compatible_with_its_baselines() -> None:
    """`make test` runs the gate on the repository itself."""
    from generator import __version__
    from generator.schemas import SCHEMA_DIR

    if not (SCHEMA_DIR / compat.BASELINE_DIR / compat.MANIFEST).exists():
        pytest.fail(
            "catalog/schemas/baselines/ is missing: run `aicr-catalog compat --update-baselines`"
        )
    report = compat.check(SCHEMA_DIR, CATALOG, __version__)
    assert report.ok, compat.report_text(report)
