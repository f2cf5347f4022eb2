"""The compatibility gate: each kind of breaking change is caught; additive changes pass."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from generator.publish import compat
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
    from generator.catalog.schemas import SCHEMA_DIR

    if not (SCHEMA_DIR / compat.BASELINE_DIR / compat.MANIFEST).exists():
        pytest.fail(
            "catalog/schemas/baselines/ is missing: run `aicr-catalog compat --update-baselines`"
        )
    report = compat.check(SCHEMA_DIR, CATALOG, __version__)
    assert report.ok, compat.report_text(report)


# ---------------------------------------------------------------- outputs may not loosen


def out_kinds(new: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        (b.kind, b.path)
        for b in compat.compare_schemas("api/x.schema.json", BASE, new, role=compat.OUTPUT)
    ]


def test_output_dropping_a_required_field_breaks() -> None:
    assert out_kinds(changed(required=[])) == [("dropped-required", "$")]


def test_output_widening_a_type_breaks() -> None:
    assert out_kinds(changed(properties__name={"type": ["string", "null"]})) == [
        ("widened-type", "$.properties.name")
    ]
    assert out_kinds(changed(properties__name={})) == [("widened-type", "$.properties.name")]
    s = changed()
    s["properties"]["tags"]["items"] = {"type": ["string", "integer"]}
    assert out_kinds(s) == [("widened-type", "$.properties.tags.items")]


def test_output_adding_an_enum_value_breaks() -> None:
    assert out_kinds(changed(properties__mode={"enum": ["fast", "safe", "turbo"]})) == [
        ("added-enum", "$.properties.mode")
    ]


def test_output_opening_an_object_or_loosening_a_bound_breaks() -> None:
    base = copy.deepcopy(BASE)
    base["additionalProperties"] = False
    base["properties"]["name"]["maxLength"] = 10
    new = copy.deepcopy(base)
    del new["additionalProperties"]
    new["properties"]["name"]["maxLength"] = 20
    got = [(b.kind, b.path) for b in compat.compare_schemas("o", base, new, role=compat.OUTPUT)]
    assert got == [("opened-object", "$"), ("loosened-bound", "$.properties.name")]


def test_output_additions_and_tightening_pass() -> None:
    s = copy.deepcopy(BASE)
    s["properties"]["extra"] = {"type": "string"}  # a new optional field
    s["required"] = ["name", "mode"]  # a stronger promise
    s["properties"]["mode"]["enum"] = ["fast"]  # fewer values produced
    assert out_kinds(s) == []


def test_input_loosening_passes_and_both_checks_both_ways() -> None:
    assert kinds(changed(required=[])) == []
    both = [
        b.kind
        for b in compat.compare_schemas(
            "s", BASE, changed(properties__mode={"enum": ["safe", "new"]}), role=compat.BOTH
        )
    ]
    assert sorted(both) == ["added-enum", "removed-enum"]


def test_every_published_schema_has_a_role_and_outputs_are_outputs() -> None:
    from generator.catalog.schemas import SCHEMA_DIR

    for rel in compat.schema_files(SCHEMA_DIR):
        assert any(rel == k or (k.endswith("/") and rel.startswith(k)) for k in compat.ROLES), (
            f"{rel}: say in compat.ROLES who reads it"
        )
    assert compat.role_of("api/recipe.schema.json") == compat.OUTPUT
    assert compat.role_of("brand-new.schema.json") == compat.BOTH


def test_loosening_an_output_fails_the_gate_unless_acknowledged(tmp_path: Path) -> None:
    schemas = tmp_path / "schemas"
    (schemas / "api").mkdir(parents=True)
    (schemas / "api/thing.schema.json").write_text(json.dumps(BASE))
    cli = {"aicr-catalog": {"options": {}, "arguments": [], "exitCodes": [0], "subcommands": []}}
    compat.update_baselines(schemas, CATALOG, "1.0.0", cli=cli)
    (schemas / "api/thing.schema.json").write_text(json.dumps(changed(required=[])))
    r = compat.check(schemas, CATALOG, "1.1.0", cli=cli)
    assert not r.ok
    assert [b.format() for b in r.breaks] == [
        "api/thing.schema.json: $: dropped-required: field 'name' is no longer required"
    ]
    assert compat.check(schemas, CATALOG, "2.0.0", cli=cli).ok


# ---------------------------------------------------------------- schemas are valid schemas


def test_every_published_schema_is_valid_against_its_metaschema() -> None:
    from generator.catalog.schemas import SCHEMA_DIR

    docs = compat.schema_files(SCHEMA_DIR)
    assert "api/recipe.schema.json" in docs and len(docs) > 20
    problems = [b.format() for rel, doc in docs.items() for b in compat.meta_validate(rel, doc)]
    assert problems == []


def test_an_invalid_schema_fails_the_gate_and_cannot_become_a_baseline(tmp_path: Path) -> None:
    schemas, catalog = _repo_copy(tmp_path)
    cli: dict[str, Any] = {}
    compat.update_baselines(schemas, catalog, "1.0.0", cli=cli)
    bad = changed(required=["name", "name"])
    bad["properties"]["count"]["type"] = "integr"
    (schemas / "thing.schema.json").write_text(json.dumps(bad))
    r = compat.check(schemas, catalog, "2.0.0", cli=cli)  # not even a major version helps
    assert not r.ok
    assert {(b.path, b.kind) for b in r.invalid} == {
        ("$.required", "invalid-schema"),
        ("$.properties.count.type", "invalid-schema"),
    }
    with pytest.raises(ValueError, match="invalid schemas cannot become baselines"):
        compat.update_baselines(schemas, catalog, "2.0.0", cli=cli)


# ---------------------------------------------------------------- the CLI surface


def _renamed(surface: dict[str, Any], command: str, old: str, new: str) -> dict[str, Any]:
    s = copy.deepcopy(surface)
    opts = s[command]["options"]
    spec = opts.pop(old)
    spec["names"] = [new if n == old else n for n in spec["names"]]
    opts[new] = spec
    return s


def current_cli() -> dict[str, Any]:
    """This program's command-line surface (compat takes the click group from its caller)."""
    from generator.cli import main

    return compat.cli_surface(main)


def test_cli_baseline_is_committed_and_current() -> None:
    from generator.catalog.schemas import SCHEMA_DIR

    baseline = json.loads((SCHEMA_DIR / compat.BASELINE_DIR / compat.CLI).read_text())
    current = current_cli()
    assert list(compat.compare_cli(baseline, current)) == []
    for name in ("aicr-catalog bundle", "aicr-catalog evidence verify", "aicr-catalog validate"):
        assert name in baseline
    assert baseline["aicr-catalog bundle"]["options"]["--archive"]["isFlag"] is True
    assert baseline["aicr-catalog preflight"]["exitCodes"] == [0, 1, 2, 3, 4]


def test_renaming_an_option_fails_compat() -> None:
    current = current_cli()
    new = _renamed(current, "aicr-catalog bundle", "--archive", "--tarball")
    assert [b.format() for b in compat.compare_cli(current, new)] == [
        "cli: aicr-catalog bundle --archive: removed-option: option --archive removed or renamed"
    ]


def test_renaming_an_option_in_the_click_tree_fails_the_gate(tmp_path: Path) -> None:
    """The end-to-end case: the real bundle command with --archive renamed."""
    import click

    from generator.cli import main

    bundle = main.commands["bundle"]
    clone = copy.copy(bundle)
    clone.params = [copy.copy(p) for p in bundle.params]
    for p in clone.params:
        if "--archive" in p.opts:
            p.opts = ["--tarball"]
    group = click.Group("aicr-catalog", params=main.params, help=main.help)
    for name in main.commands:
        group.add_command(clone if name == "bundle" else main.commands[name], name)
    schemas, catalog = _repo_copy(tmp_path)
    compat.update_baselines(schemas, catalog, "1.0.0", cli=current_cli())
    r = compat.check(schemas, catalog, "1.0.1", cli=compat.cli_surface(group))
    assert not r.ok
    assert [(b.subject, b.path, b.kind) for b in r.breaks] == [
        ("cli", "aicr-catalog bundle --archive", "removed-option")
    ]
    out = compat.report_github(r, schemas, group)
    assert "::error file=generator/commands/bundle.py,title=compat removed-option::" in out


@pytest.mark.parametrize(
    ("edit", "kind"),
    [
        (lambda s: s.pop("aicr-catalog diff"), "removed-command"),
        (
            lambda s: s["aicr-catalog bundle"]["options"]["--output"]["names"].remove("-o"),
            "removed-option-name",
        ),
        (
            lambda s: s["aicr-catalog bundle"]["options"]["--deployer"].update(default="flux"),
            "changed-default",
        ),
        (
            lambda s: s["aicr-catalog bundle"]["options"]["--deployer"]["choices"].remove("flux"),
            "removed-choice",
        ),
        (
            lambda s: s["aicr-catalog bundle"]["options"]["--nodes"].update(type="text"),
            "changed-type",
        ),
        (lambda s: s["aicr-catalog validate"]["arguments"].clear(), "removed-argument"),
        (
            lambda s: s["aicr-catalog validate"]["options"]["--strict"].update(required=True),
            "new-required",
        ),
        (lambda s: s["aicr-catalog preflight"].update(exitCodes=[0, 1, 2]), "changed-exit-codes"),
    ],
)
def test_each_cli_break_is_caught(edit: Any, kind: str) -> None:
    current = current_cli()
    new = copy.deepcopy(current)
    edit(new)
    assert [b.kind for b in compat.compare_cli(current, new)] == [kind]


def test_new_commands_and_optional_options_pass() -> None:
    current = current_cli()
    new = copy.deepcopy(current)
    new["aicr-catalog brand-new"] = copy.deepcopy(current["aicr-catalog list"])
    new["aicr-catalog list"]["options"]["--extra"] = {
        **current["aicr-catalog list"]["options"]["--format"],
        "names": ["--extra"],
    }
    assert list(compat.compare_cli(current, new)) == []


def test_exit_codes_are_read_from_the_help() -> None:
    assert compat.exit_codes("Do it.\n\nExit codes: 0 ok, 1 bad data, 2 usage.") == [0, 1, 2]
    assert compat.exit_codes("Exit codes: 0 verdict pass; 1 verdict fail (x);\n3 infra.") == [
        0,
        1,
        3,
    ]
    assert compat.exit_codes("No codes here, 3 things.") == []


def test_compat_github_annotations_name_existing_repository_files(tmp_path: Path) -> None:
    from generator.catalog.schemas import SCHEMA_DIR
    from tests.conftest import REPO

    breaks = (
        compat.Break("api/recipe.schema.json", "$", "dropped-required", "x"),
        compat.Break("cli", "aicr-catalog release verify --version", "removed-option", "y"),
        compat.Break("bundle-layout:helm", "deploy.sh", "removed-path", "z"),
    )
    r = compat.CompatReport(breaks, (), (), "0.1.0", "0.1.1")
    from generator.cli import main

    out = compat.report_github(r, SCHEMA_DIR, main)
    files = re.findall(r"^::(?:error|warning) file=([^,]+),", out, re.M)
    assert len(files) == 3
    for f in files:
        assert (REPO / f).is_file(), f
    assert "catalog/schemas/api/recipe.schema.json" in files
    assert "generator/commands/release_verify.py" in files


def test_a_field_that_was_a_local_ref_is_compared_with_what_the_ref_names() -> None:
    """A field written as `{"$ref": "#/$defs/text"}` that becomes an object changed type: the
    reference is followed (in the old document for the old side, the new for the new)."""
    old = {
        "$defs": {"text": {"type": ["string", "null"]}},
        "type": "object",
        "properties": {"lane": {"$ref": "#/$defs/text"}, "same": {"$ref": "#/$defs/text"}},
    }
    new = copy.deepcopy(old)
    new["properties"]["lane"] = {"type": "object"}
    got = [(b.kind, b.path) for b in compat.compare_schemas("o", old, new, role=compat.OUTPUT)]
    assert got == [("widened-type", "$.properties.lane")]
    # the same written inline: no break; a dangling or looping reference is left as it is
    new["properties"]["lane"] = {"type": ["string", "null"]}
    assert list(compat.compare_schemas("o", old, new, role=compat.OUTPUT)) == []
    looping = {"$defs": {"a": {"$ref": "#/$defs/a"}}, "properties": {"x": {"$ref": "#/$defs/a"}}}
    dangling = copy.deepcopy(looping)
    dangling["properties"]["x"] = {"$ref": "#/$defs/missing"}
    assert list(compat.compare_schemas("o", looping, dangling, role=compat.OUTPUT)) == []


# ---------------------------------------------------------------- deployers named in schemas


def _deployer_enums(node: Any, path: str = "$") -> list[tuple[str, list[str]]]:
    """Every `deployer` property's enum in a schema, with its path."""
    out: list[tuple[str, list[str]]] = []
    if isinstance(node, dict):
        prop = (node.get("properties") or {}).get("deployer")
        if isinstance(prop, dict) and "enum" in prop:
            out.append((f"{path}.properties.deployer", list(prop["enum"])))
        for k, v in node.items():
            out += _deployer_enums(v, f"{path}.{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _deployer_enums(v, f"{path}[{i}]")
    return out


def test_every_schema_naming_deployers_names_every_deployer() -> None:
    """A published schema that enumerates deployers (the recipe API's downloads, bundle-info)
    lists exactly the ones `bundle` renders: a download or bundle of a deployer the schema lacks
    (argocd-helm, issue 31) would fail its own schema."""
    from generator.catalog.schemas import SCHEMA_DIR
    from generator.render import Deployer

    expected = [str(d) for d in Deployer]
    found = []
    for path in sorted(SCHEMA_DIR.glob("**/*.schema.json")):
        if compat.BASELINE_DIR in path.relative_to(SCHEMA_DIR).parts:
            continue
        for where, enum in _deployer_enums(json.loads(path.read_text())):
            found.append(where)
            assert sorted(enum) == sorted(expected), f"{path.name} {where}: {enum}"
    assert len(found) >= 2  # api/recipe.schema.json's downloads and bundle-info's deployer


def test_recipe_api_accepts_an_argocd_helm_download() -> None:
    import jsonschema

    from generator.catalog.schemas import SCHEMA_DIR

    schema = json.loads((SCHEMA_DIR / "api" / "recipe.schema.json").read_text())
    downloads = schema["properties"]["profiles"]["items"]["properties"]["downloads"]
    item: dict[str, Any] = {"deployer": "argocd-helm", "url": "downloads/x-argocd-helm.tar.gz",
                            "sha256": "0" * 64, "size": 1}  # fmt: skip
    jsonschema.validate([item], downloads)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate([{**item, "deployer": "kustomize"}], downloads)
