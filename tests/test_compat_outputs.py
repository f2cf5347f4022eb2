"""`compat` and the API's schemas, which are outputs (issue 30 item 7): what consumers were
promised must hold. Each rule once, then the whole gate through the CLI (exit code and a message
naming the schema file, the field and the rule)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from generator import __version__
from generator.cli import main
from generator.publish import compat
from tests.conftest import CATALOG

RUN: dict[str, Any] = {
    "type": "object",
    "required": ["id", "state"],
    "properties": {"id": {"type": "string"}, "state": {"enum": ["verified", "stale"]}},
}
# an output field that is null or a run (the API's nullable objects are written so)
DOC: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["name", "run"],
    "properties": {
        "name": {"type": "string"},
        "note": {"type": "string"},
        "run": {"oneOf": [{"type": "null"}, copy.deepcopy(RUN)]},
        "other": {"$ref": "evidence.schema.json#/$defs/run"},
    },
}


def breaks(new: dict[str, Any], role: str = compat.OUTPUT, old: Any = None) -> list[str]:
    return [
        f"{b.path}: {b.kind}"
        for b in compat.compare_schemas("api/t.schema.json", old or DOC, new, role=role)
    ]


def edited(edit: Any) -> dict[str, Any]:
    doc = copy.deepcopy(DOC)
    edit(doc)
    return doc


def test_consumers_lose_nothing_when_an_output_only_grows() -> None:
    def grow(d: dict[str, Any]) -> None:
        d["properties"]["extra"] = {"type": "integer"}  # a new optional field
        d["required"].append("note")  # a field now always written: a stronger promise
        d["properties"]["run"]["oneOf"][1]["required"].append("state")

    assert breaks(edited(grow)) == []


def test_an_output_dropping_or_removing_a_required_field_breaks() -> None:
    assert breaks(edited(lambda d: d["required"].remove("name"))) == ["$: dropped-required"]
    assert breaks(edited(lambda d: d["properties"].pop("name"))) == [
        "$.properties.name: removed-field"
    ]
    assert breaks(edited(lambda d: d["properties"].pop("note"))) == [
        "$.properties.note: removed-field"  # optional, but readers may read it
    ]


def test_a_required_field_dropped_inside_a_oneof_branch_breaks() -> None:
    got = breaks(edited(lambda d: d["properties"]["run"]["oneOf"][1]["required"].remove("state")))
    assert got == ["$.properties.run.oneOf[1]: dropped-required"]
    got = breaks(edited(lambda d: d["properties"]["run"]["oneOf"][1]["properties"].pop("id")))
    assert got == ["$.properties.run.oneOf[1].properties.id: removed-field"]


def test_alternatives_added_break_outputs_and_removed_break_inputs() -> None:
    more = edited(lambda d: d["properties"]["run"]["oneOf"].append({"type": "string"}))
    assert breaks(more) == ["$.properties.run.oneOf[2]: widened-type"]
    assert breaks(more, compat.INPUT) == []
    fewer = edited(lambda d: d["properties"]["run"]["oneOf"].pop(0))
    assert breaks(fewer) == []  # branches are matched by what they allow, not by position
    # as input, null (old branch 0) is no longer accepted
    assert "$.properties.run.oneOf[0]: tightened-type" in breaks(fewer, compat.INPUT)
    swapped = edited(lambda d: d["properties"]["run"]["oneOf"].reverse())
    assert breaks(swapped) == breaks(swapped, compat.INPUT) == []


def test_a_oneof_replaced_by_one_of_its_branches_is_compared_with_that_branch() -> None:
    def always_a_run(d: dict[str, Any]) -> None:
        d["properties"]["run"] = copy.deepcopy(RUN)  # never null any more: a narrower output

    assert breaks(edited(always_a_run)) == []

    def a_run_without_state(d: dict[str, Any]) -> None:
        d["properties"]["run"] = {**copy.deepcopy(RUN), "required": ["id"]}
        del d["properties"]["run"]["properties"]["state"]

    # the run branch is the closest: its breaks name the fields
    assert breaks(edited(a_run_without_state)) == [
        "$.properties.run.properties.state: removed-field"
    ]

    def anything(d: dict[str, Any]) -> None:
        d["properties"]["run"] = {}

    assert breaks(edited(anything)) == ["$.properties.run: widened-type"]


def test_allof_constraints_removed_break_outputs_and_added_break_inputs() -> None:
    old = edited(lambda d: d.update(allOf=[{"required": ["note"]}]))
    assert breaks(DOC, old=old) == ["$: dropped-required"]  # the allOf gone: note not promised
    assert breaks(old, compat.INPUT) == ["$: new-required"]  # DOC → old: a new constraint
    assert breaks(old) == []


def test_a_reference_into_another_file_that_changes_breaks() -> None:
    def elsewhere(d: dict[str, Any]) -> None:
        d["properties"]["other"] = {"$ref": "evidence.schema.json#/$defs/other"}

    assert breaks(edited(elsewhere)) == ["$.properties.other: changed-ref"]
    assert breaks(edited(lambda d: d["properties"].update(other={}))) == [
        "$.properties.other: changed-ref"
    ]


# ---------------------------------------------------------------- the gate, through the CLI


@pytest.fixture
def schemas(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A schema directory with baselines made from it, the one `compat` checks."""
    from generator.commands import compat as command

    d = tmp_path / "schemas"
    (d / "api").mkdir(parents=True)
    (d / "api" / "t.schema.json").write_text(
        json.dumps(
            {**DOC, "properties": {k: v for k, v in DOC["properties"].items() if k != "other"}}
        )
    )
    compat.update_baselines(d, CATALOG, __version__, cli=compat.cli_surface(main))
    monkeypatch.setattr(command, "SCHEMA_DIR", d)
    return d


def _compat(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["compat", *args])
    return result.exit_code, result.stdout, result.stderr


def test_compat_refuses_an_api_schema_that_drops_a_required_field(schemas: Path) -> None:
    assert _compat()[0] == 0
    doc = json.loads((schemas / "api" / "t.schema.json").read_text())
    doc["properties"]["run"]["oneOf"][1]["required"] = ["id"]
    (schemas / "api" / "t.schema.json").write_text(json.dumps(doc))
    code, out, _ = _compat()
    assert code == 1
    assert (
        "api/t.schema.json: $.properties.run.oneOf[1]: dropped-required: "
        "field 'state' is no longer required"
    ) in out.splitlines()


def test_a_new_schema_without_baseline_fails_until_it_is_added(schemas: Path) -> None:
    (schemas / "api" / "new.schema.json").write_text(json.dumps(DOC))
    code, out, _ = _compat()
    assert code == 1
    assert "api/new.schema.json: $: unbaselined-schema: published schema has no baseline" in out
    before = (schemas / "baselines" / "api" / "t.schema.json").read_bytes()
    code, _, err = _compat("--baseline-new")
    assert code == 0 and "added 1 schema baseline(s): api/new.schema.json" in err
    assert (schemas / "baselines" / "api" / "t.schema.json").read_bytes() == before
    assert _compat()[0] == 0
    # now under the gate like any other
    doc = edited(lambda d: d["required"].remove("name"))
    (schemas / "api" / "new.schema.json").write_text(json.dumps(doc))
    code, out, _ = _compat()
    assert code == 1 and "api/new.schema.json: $: dropped-required: field 'name'" in out
