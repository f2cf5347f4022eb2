"""Compatibility gate: published JSON Schemas, bundle layouts and the CLI against baselines.

Every published schema must be valid against the metaschema it declares (2020-12 by default);
an invalid one always fails. A breaking change fails unless the major version changed or the
break is acknowledged in `catalog/schemas/compat-exceptions.yaml`; an acknowledgement that
matches no current break is stale and fails too. docs/compatibility.md is the policy.

What breaks depends on who reads a schema (`ROLES`):
- every schema: a removed (or renamed) field, definition or schema;
- what the tool *reads* (input, both): a tightened type, a new required field, a removed enum
  value, a closed object, a tighter bound or pattern: documents valid before stop validating;
- what the tool *writes* (output, both): a loosening: a field dropped from `required`, a widened
  type, an added enum value, a removed const, an opened object, a looser bound or pattern:
  consumers of the output meet values they were promised never to see.
- bundle layouts: a path no longer produced;
- the JSON API's files (`baselines/api-files.json`, from `generator.site.apifiles.API_FILES`,
  the declaration every published API path is made from): a file no longer published, or one
  whose `kind` or schema changed, or that became optional; a declared file without a baseline
  fails too (`--baseline-new` adds it), so none can vanish unseen;
- the CLI (`baselines/cli.json`, generated from the click tree): a removed or renamed command,
  option, option name or argument, a changed default or type, a removed choice, a new required
  option or argument, a changed set of documented exit codes.
Additive changes pass: a new optional field, command or option.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from generator.core import safeio
from generator.core.atomic import write_text
from generator.core.yamlio import load_json, load_yaml, parse_json

BASELINE_DIR = "baselines"
MANIFEST = "manifest.json"
LAYOUTS = "bundle-layouts.json"
CLI = "cli.json"
API_FILES = "api-files.json"
EXCEPTIONS = "compat-exceptions.yaml"

INPUT, OUTPUT, BOTH = "input", "output", "both"
# Who reads each published schema: the tool (input), consumers of what it writes (output), or
# both. A schema missing here is treated as both, the strictest.
ROLES: dict[str, str] = {
    "ComponentRegistry.schema.json": INPUT,
    "CriteriaValues.schema.json": INPUT,
    "RecipeMetadata.schema.json": INPUT,
    "RecipeMixin.schema.json": INPUT,
    "lanes.schema.json": INPUT,
    "scale-checks.schema.json": INPUT,
    "scale-profile.schema.json": INPUT,
    "signers.schema.json": INPUT,
    "RecipeResult.schema.json": OUTPUT,
    "api/": OUTPUT,
    "bundle-info.schema.json": OUTPUT,
    "deployers/": OUTPUT,
    "evidence-verification.schema.json": OUTPUT,
    "pins-report.schema.json": OUTPUT,
    "preflight-report.schema.json": OUTPUT,
    "status.schema.json": OUTPUT,
    "scale-qualification-v1.schema.json": BOTH,
    "snapshot.schema.json": BOTH,
}


def role_of(subject: str) -> str:
    for key, role in ROLES.items():
        if subject == key or (key.endswith("/") and subject.startswith(key)):
            return role
    return BOTH


@dataclass(frozen=True, slots=True, order=True)
class Break:
    subject: str  # schema file (relative to catalog/schemas) or "bundle-layout:<deployer>"
    path: str  # JSON-schema location, e.g. $.properties.spec.properties.base
    kind: str  # removed-field | tightened-type | new-required | removed-enum | closed-object | removed-path | ...
    detail: str

    def key(self) -> tuple[str, str, str]:
        return (self.subject, self.path, self.kind)

    def format(self) -> str:
        return f"{self.subject}: {self.path}: {self.kind}: {self.detail}"


def _types(s: Mapping[str, Any]) -> set[str] | None:
    t = s.get("type")
    if t is None:
        return None
    return {t} if isinstance(t, str) else set(t)


def _dereferenced(old: Any, new: Any, roots: tuple[Any, Any]) -> tuple[Any, Any]:
    """`old` and `new` with a local `$ref` (`#/...`) replaced by what it points at, when the two
    sides do not name the same definition (which `$defs` is compared under on its own): a field
    that was `{"$ref": "#/$defs/nullableString"}` and is now an object has changed type."""
    if not isinstance(old, dict) or not isinstance(new, dict) or old.get("$ref") == new.get("$ref"):
        return old, new
    return _follow(old, roots[0]), _follow(new, roots[1])


def _follow(schema: dict[str, Any], root: Any) -> Any:
    seen: set[str] = set()
    while isinstance(schema, dict) and isinstance(ref := schema.get("$ref"), str):
        if not ref.startswith("#/") or ref in seen:
            break
        seen.add(ref)
        target: Any = root
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            target = target.get(part) if isinstance(target, dict) else None
        if not isinstance(target, dict):
            break
        schema = {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
    return schema


def compare_schemas(
    subject: str,
    old: Any,
    new: Any,
    path: str = "$",
    role: str = INPUT,
    roots: tuple[Any, Any] | None = None,
) -> Iterator[Break]:
    """Every breaking difference from `old` to `new` (both JSON Schemas) for a schema of `role`;
    `roots` are the two whole documents local `$ref`s point into (default: `old` and `new`)."""
    roots = roots or (old, new)
    old, new = _dereferenced(old, new, roots)
    if not isinstance(old, dict) or not isinstance(new, dict):
        if old != new and isinstance(old, dict):
            yield Break(subject, path, "replaced", "schema replaced by a boolean")
        return
    ref = old.get("$ref")
    if isinstance(ref, str) and not ref.startswith("#") and new.get("$ref") != ref:
        # a reference into another file (a local one was followed above): what it names is
        # compared under that file; pointing elsewhere, or nowhere, is a different schema
        yield Break(subject, path, "changed-ref", f"$ref {ref!r} → {new.get('$ref')!r}")
    if role in (INPUT, BOTH):
        yield from _tightenings(subject, old, new, path)
    if role in (OUTPUT, BOTH):
        yield from _loosenings(subject, old, new, path)
    oprops, nprops = old.get("properties", {}), new.get("properties", {})
    for name in sorted(oprops):
        if name not in nprops:
            yield Break(
                subject,
                f"{path}.properties.{name}",
                "removed-field",
                f"field '{name}' removed or renamed",
            )
        else:
            yield from compare_schemas(
                subject, oprops[name], nprops[name], f"{path}.properties.{name}", role, roots
            )
    for key in _SUBSCHEMAS:
        if isinstance(old.get(key), dict) and isinstance(new.get(key), dict):
            yield from compare_schemas(subject, old[key], new[key], f"{path}.{key}", role, roots)
    yield from _compare_branches(subject, old, new, path, role, roots)
    for key in ("$defs", "definitions", "patternProperties"):
        odefs, ndefs = old.get(key, {}), new.get(key, {})
        for name in sorted(odefs):
            if name not in ndefs:
                yield Break(
                    subject, f"{path}.{key}.{name}", "removed-field", f"definition '{name}' removed"
                )
            else:
                yield from compare_schemas(
                    subject, odefs[name], ndefs[name], f"{path}.{key}.{name}", role, roots
                )


# keywords holding one subschema, compared as a field's schema is
_SUBSCHEMAS = (
    "items",
    "additionalProperties",
    "contains",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
    "then",
    "else",
)  # not `not` (a tighter `not` accepts more) nor `if` (a condition, not a constraint)
# keywords holding a list of subschemas: a value must match any / one / all of them, or
# (prefixItems) the array's items in order
_BRANCHES = ("anyOf", "oneOf", "allOf", "prefixItems")


def _compare_branches(
    subject: str,
    old: dict[str, Any],
    new: dict[str, Any],
    path: str,
    role: str,
    roots: tuple[Any, Any],
) -> Iterator[Break]:
    """The branches of `anyOf`/`oneOf`/`allOf` (`_matched`) and `prefixItems` (by position;
    another item schema accepts less input, one fewer promises less output). A list on one
    side only: `_one_side`."""
    for key in _BRANCHES:
        ob, nb = old.get(key), new.get(key)
        if not isinstance(ob, list) and not isinstance(nb, list):
            continue
        if not isinstance(ob, list) or not isinstance(nb, list):
            yield from _one_side(subject, old, new, path, role, roots, key)
            continue
        if key != "prefixItems":
            yield from _matched(subject, ob, nb, f"{path}.{key}", role, roots, key)
            continue
        for i, (o, n) in enumerate(zip(ob, nb, strict=False)):
            yield from compare_schemas(subject, o, n, f"{path}.{key}[{i}]", role, roots)
        counts = f"{key}: {len(ob)} → {len(nb)} schemas"
        if len(nb) > len(ob) and role != OUTPUT:
            yield Break(subject, path, "tightened-type", counts)
        if len(nb) < len(ob) and role != INPUT:
            yield Break(subject, path, "widened-type", counts)


def _closest(results: list[tuple[bool, int, list[Break]]]) -> list[Break]:
    """The breaks of the closest branch, none when one branch holds: the branch of the same
    type first (its breaks name fields, not the type), then the fewest breaks."""
    if not results or any(not found for _, _, found in results):
        return []
    return min(results, key=lambda r: (r[0], r[1]))[2]


def _versus(
    subject: str, o: Any, n: Any, path: str, r: str, roots: tuple[Any, Any]
) -> tuple[bool, int, list[Break]]:
    found = sorted(set(compare_schemas(subject, o, n, path, r, roots)))
    ot = _types(o) if isinstance(o, dict) else None
    nt = _types(n) if isinstance(n, dict) else None
    return (not (ot and nt and ot & nt), len(found), found)


def _matched(
    subject: str,
    ob: list[Any],
    nb: list[Any],
    path: str,
    role: str,
    roots: tuple[Any, Any],
    key: str,
) -> Iterator[Break]:
    """Branches matched by what they allow, not by position (a reordered or shortened list is
    compared branch with branch). An output must stay within what was promised: with
    alternatives (`anyOf`/`oneOf`) each new branch within some old one, with constraints
    (`allOf`) each old constraint kept by some new one; an input must accept what it did: each
    old alternative within some new one, each new constraint met by some old one. A branch with
    no match reports the breaks of its closest, at its own index."""
    alternatives = key in ("anyOf", "oneOf")
    for r in (INPUT, OUTPUT):
        if role not in (r, BOTH):
            continue
        per_new = alternatives == (r == OUTPUT)  # each new branch needs a match
        for i, fixed in enumerate(nb if per_new else ob):
            results = [
                _versus(
                    subject,
                    *((other, fixed) if per_new else (fixed, other)),
                    f"{path}[{i}]",
                    r,
                    roots,
                )
                for other in (ob if per_new else nb)
            ]
            yield from _closest(results)


def _merged(schema: dict[str, Any], key: str, branch: Any) -> Any:
    """`schema` with its `key` list replaced by one of its branches: `required` and
    `properties` of both, the branch's other keywords winning."""
    if not isinstance(branch, dict):
        return branch
    out = {**{k: v for k, v in schema.items() if k != key}, **branch}
    if isinstance(schema.get("required"), list) and isinstance(branch.get("required"), list):
        out["required"] = sorted({*schema["required"], *branch["required"]})
    if isinstance(schema.get("properties"), dict) and isinstance(branch.get("properties"), dict):
        out["properties"] = {**schema["properties"], **branch["properties"]}
    return out


def _one_side(
    subject: str,
    old: dict[str, Any],
    new: dict[str, Any],
    path: str,
    role: str,
    roots: tuple[Any, Any],
    key: str,
) -> Iterator[Break]:
    """`key` (a list of branches) on one side only: the other side is compared with each branch
    (merged with the keywords beside the list). An output must stay within what was promised
    (new ⊆ old), an input must keep accepting what it did (old ⊆ new); so, per direction, one
    branch must hold (the closest one's breaks are reported when none does) or every branch
    must."""
    on_old = isinstance(old.get(key), list)
    owner = old if on_old else new
    alternatives = key in ("anyOf", "oneOf")
    for r in (INPUT, OUTPUT):
        if role not in (r, BOTH):
            continue
        results = []
        for b in owner[key]:
            m = _merged(owner, key, b)
            o, n = (m, new) if on_old else (old, m)
            results.append(_versus(subject, o, n, path, r, roots))
        if alternatives == ((r == OUTPUT) == on_old):  # one branch must hold
            yield from _closest(results)
        else:  # every branch must hold
            yield from sorted({b for _, _, found in results for b in found})


_LOWER = ("minLength", "minItems", "minimum", "minProperties", "exclusiveMinimum")
_UPPER = ("maxLength", "maxItems", "maximum", "maxProperties", "exclusiveMaximum")


def _tightenings(
    subject: str, old: dict[str, Any], new: dict[str, Any], path: str
) -> Iterator[Break]:
    """What stops a document that validated before from validating (breaks what is read)."""
    ot, nt = _types(old), _types(new)
    if ot is not None and nt is not None and not ot <= nt:
        yield Break(subject, path, "tightened-type", f"type {sorted(ot)} → {sorted(nt)}")
    if ot is None and nt is not None:
        yield Break(subject, path, "tightened-type", f"any type → {sorted(nt)}")
    if "enum" in old:
        kept = new.get("enum", old["enum"]) or []
        removed = [v for v in old["enum"] if v not in kept]
        for v in removed:
            yield Break(
                subject,
                path,
                "removed-enum",
                f"enum value {json.dumps(v, allow_nan=False)} removed",
            )
    elif "enum" in new:
        yield Break(subject, path, "tightened-type", "an enum now restricts the values")
    if "const" in new and old.get("const") != new["const"]:
        yield Break(
            subject,
            path,
            "tightened-type",
            f"const {json.dumps(old.get('const'), allow_nan=False)} → {json.dumps(new['const'], allow_nan=False)}",
        )
    for req in sorted(set(new.get("required", ())) - set(old.get("required", ()))):
        yield Break(subject, path, "new-required", f"field '{req}' is now required")
    if (
        old.get("additionalProperties", True) is not False
        and new.get("additionalProperties", True) is False
    ):
        yield Break(subject, path, "closed-object", "additional properties are no longer allowed")
    for key in _LOWER:
        if key in new and (key not in old or new[key] > old[key]):
            yield Break(subject, path, "tightened-type", f"{key} {old.get(key)} → {new[key]}")
    for key in _UPPER:
        if key in new and (key not in old or new[key] < old[key]):
            yield Break(subject, path, "tightened-type", f"{key} {old.get(key)} → {new[key]}")
    if new.get("pattern") != old.get("pattern") and "pattern" in new:
        yield Break(
            subject, path, "tightened-type", f"pattern {old.get('pattern')!r} → {new['pattern']!r}"
        )


def _loosenings(
    subject: str, old: dict[str, Any], new: dict[str, Any], path: str
) -> Iterator[Break]:
    """What lets an output carry a value its consumers were promised never to see."""
    ot, nt = _types(old), _types(new)
    if ot is not None and nt is None:
        yield Break(subject, path, "widened-type", f"type {sorted(ot)} → any type")
    elif ot is not None and nt is not None and not nt <= ot:
        yield Break(subject, path, "widened-type", f"type {sorted(ot)} → {sorted(nt)}")
    if "enum" in old:
        if "enum" not in new:
            yield Break(subject, path, "added-enum", "the enum no longer restricts the values")
        else:
            for v in new["enum"]:
                if v not in old["enum"]:
                    yield Break(
                        subject,
                        path,
                        "added-enum",
                        f"enum value {json.dumps(v, allow_nan=False)} added",
                    )
    if "const" in old and "const" not in new and "enum" not in new:
        yield Break(
            subject,
            path,
            "widened-type",
            f"const {json.dumps(old['const'], allow_nan=False)} removed",
        )
    nprops = new.get("properties", {})
    for req in sorted(set(old.get("required", ())) - set(new.get("required", ()))):
        if req in nprops or req not in old.get("properties", {}):
            yield Break(subject, path, "dropped-required", f"field '{req}' is no longer required")
    if (
        old.get("additionalProperties", True) is False
        and new.get("additionalProperties", True) is not False
    ):
        yield Break(subject, path, "opened-object", "additional properties are now allowed")
    for key in _LOWER:
        if key in old and (key not in new or new[key] < old[key]):
            yield Break(subject, path, "loosened-bound", f"{key} {old[key]} → {new.get(key)}")
    for key in _UPPER:
        if key in old and (key not in new or new[key] > old[key]):
            yield Break(subject, path, "loosened-bound", f"{key} {old[key]} → {new.get(key)}")
    if "pattern" in old and new.get("pattern") != old["pattern"]:
        yield Break(
            subject, path, "loosened-bound", f"pattern {old['pattern']!r} → {new.get('pattern')!r}"
        )


def meta_validate(subject: str, doc: Any) -> Iterator[Break]:
    """Every error of `doc` against the metaschema it declares (2020-12 when it declares none)."""
    from jsonschema import Draft202012Validator
    from jsonschema.validators import validator_for

    if not isinstance(doc, dict):
        yield Break(subject, "$", "invalid-schema", "a published schema must be a JSON object")
        return
    cls = validator_for(doc, default=Draft202012Validator)
    if (
        "$schema" in doc
        and cls is not Draft202012Validator
        and doc["$schema"]
        not in (
            cls.META_SCHEMA.get("$id"),
            cls.META_SCHEMA.get("id"),
        )
    ):
        yield Break(
            subject, "$.$schema", "invalid-schema", f"unknown metaschema {doc['$schema']!r}"
        )
    for err in sorted(cls(cls.META_SCHEMA).iter_errors(doc), key=lambda e: list(e.absolute_path)):
        where = "$" + "".join(
            f"[{p}]" if isinstance(p, int) else f".{p}" for p in err.absolute_path
        )
        yield Break(subject, where, "invalid-schema", err.message)


def compare_api_files(
    old: Mapping[str, Mapping[str, Any]], new: Mapping[str, Mapping[str, Any]]
) -> Iterator[Break]:
    """Every break of the JSON API's set of files from `old` to `new` (pattern -> kind, schema,
    optional; `generator.site.apifiles.surface()`): a reader that fetched a file by its name
    must still find it, holding the same kind of document."""
    subject = "api-files"
    for pattern in sorted(old):
        if pattern not in new:
            yield Break(
                subject, pattern, "removed-file", f"API file '{pattern}' is no longer published"
            )
            continue
        o, n = old[pattern], new[pattern]
        for key in ("kind", "schema"):
            if o.get(key) != n.get(key):
                yield Break(
                    subject, pattern, f"changed-{key}", f"{key} {o.get(key)!r} → {n.get(key)!r}"
                )
        if n.get("optional") and not o.get("optional"):
            yield Break(subject, pattern, "now-optional", "published only with a build option now")
    for pattern in sorted(set(new) - set(old)):
        yield Break(
            subject,
            pattern,
            "unbaselined-file",
            "published API file has no baseline, so its removal would not be seen: "
            "`aicr-catalog compat --baseline-new` adds it (and changes no other baseline)",
        )


def _api_baseline(base_dir: Path) -> dict[str, Any]:
    """The baseline of the API's files; none yet is an empty set (every file unbaselined)."""
    if not safeio.exists(base_dir / API_FILES):
        return {}
    data = _baseline(base_dir, API_FILES)
    return dict(data) if isinstance(data, dict) else {}


def api_surface() -> dict[str, dict[str, Any]]:
    """The JSON API's declared files, as the baseline records them."""
    from generator.site.apifiles import surface

    return surface()


def compare_layouts(deployer: str, old: list[str], new: list[str]) -> Iterator[Break]:
    for p in sorted(set(old) - set(new)):
        yield Break(
            f"bundle-layout:{deployer}", p, "removed-path", f"bundle path '{p}' no longer produced"
        )


# ---------------------------------------------------------------- the repository's published surface


def schema_files(schema_dir: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for rel, raw in safeio.files(schema_dir, where="the schemas", suffixes=(".json",)):
        if rel.startswith(f"{BASELINE_DIR}/"):
            continue
        out[rel] = parse_json(raw, f"{schema_dir.name}/{rel}")
    return out


def _baseline(base_dir: Path, rel: str) -> Any:
    """A baseline file: inside the baselines directory (no link or `..` out), bounded JSON."""
    return load_json(base_dir / rel, root=base_dir, where="the baselines", rel=rel)


_NNN = re.compile(r"^\d{3}-[^/]+/")


def bundle_layouts(catalog_dir: Path) -> dict[str, list[str]]:
    """Per deployer, the path patterns of a reference bundle (component directories generalised)."""
    from generator.catalog.load import load_catalog
    from generator.catalog.resolve import resolve
    from generator.render import Deployer
    from generator.render.bundled import rebuild, render_bundled

    catalog, _ = load_catalog(catalog_dir)
    leaf = (
        "gb300-eks-ubuntu-training-slurm"
        if "gb300-eks-ubuntu-training-slurm" in catalog.overlays
        else catalog.leaves()[0]
    )
    result = resolve(catalog, leaf)
    manifests = {
        rel: safeio.read(catalog_dir / rel, root=catalog_dir, where="the catalog")
        for rel in result.file_digests
        if "/manifests/" in f"/{rel}"
    }
    out: dict[str, list[str]] = {}
    comps = sorted((c.name for c in result.components), key=len, reverse=True)
    for dep in Deployer:  # as `bundle` renders it (generator/render/bundled.py)
        _, tree = render_bundled(catalog, rebuild(catalog, result), dep, manifests=manifests)
        paths = set()
        for p in getattr(tree, "files", tree):
            g = _NNN.sub("NNN-<component>/", p)
            for c in comps:
                g = g.replace(c, "<component>")
            paths.add(g)
        out[str(dep)] = sorted(paths)
    return out


# ---------------------------------------------------------------- the command line


_EXIT_PARAGRAPH = re.compile(r"Exit codes?\b[^:]*:(.*?)(?:\n\s*\n|$)", re.S | re.I)
_EXIT_CODE = re.compile(r"(?<![\w.-])(\d)(?=\s+[A-Za-z(])")


def exit_codes(help_text: str) -> list[int]:
    """The exit codes a command's help documents ("Exit codes: 0 ok, 1 …, 2 usage")."""
    found: set[int] = set()
    for m in _EXIT_PARAGRAPH.finditer(help_text or ""):
        found.update(int(c) for c in _EXIT_CODE.findall(m.group(1)))
    return sorted(found)


def _json_default(value: Any) -> Any:
    if callable(value):
        return "<computed>"
    if isinstance(value, Path):
        return value.as_posix()
    if isinstance(value, list | tuple):
        return [_json_default(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def _param(p: Any) -> dict[str, Any]:
    info = p.to_info_dict()
    typ = info.get("type", {})
    out: dict[str, Any] = {
        "kind": info["param_type_name"],
        "type": typ.get("name"),
        "required": bool(info.get("required")),
        "nargs": info.get("nargs"),
        "multiple": bool(info.get("multiple")),
        "default": _json_default(info.get("default")),
    }
    if "choices" in typ:
        out["choices"] = [str(c) for c in typ["choices"]]
    if info["param_type_name"] == "option":
        out["names"] = sorted([*info.get("opts", []), *info.get("secondary_opts", [])])
        out["isFlag"] = bool(info.get("is_flag"))
    return out


def cli_surface(group: Any, prefix: str = "aicr-catalog") -> dict[str, Any]:
    """Every command of the click tree: options (by their longest name), positional arguments
    in order, defaults, types, choices and the documented exit codes."""
    import click

    out: dict[str, Any] = {}

    def walk(cmd: Any, name: str) -> None:
        options: dict[str, Any] = {}
        arguments: list[dict[str, Any]] = []
        for p in cmd.params:
            if isinstance(p, click.Argument):
                arguments.append({"name": p.name, **_param(p)})
            elif isinstance(p, click.Option):
                if p.name in ("help",):
                    continue
                names = [*p.opts, *p.secondary_opts]
                key = max(names, key=lambda n: (n.startswith("--"), len(n), n))
                options[key] = _param(p)
        out[name] = {
            "options": dict(sorted(options.items())),
            "arguments": arguments,
            "exitCodes": exit_codes(cmd.help or ""),
            "subcommands": sorted(getattr(cmd, "commands", {}) or {}),
        }
        for sub in sorted(getattr(cmd, "commands", {}) or {}):
            walk(cmd.commands[sub], f"{name} {sub}")

    walk(group, prefix)
    return dict(sorted(out.items()))


def compare_cli(old: Mapping[str, Any], new: Mapping[str, Any]) -> Iterator[Break]:
    """Every break of the command line from `old` to `new` (both from `cli_surface`)."""
    subject = "cli"
    for name in sorted(old):
        if name not in new:
            yield Break(subject, name, "removed-command", f"command '{name}' removed or renamed")
            continue
        o, n = old[name], new[name]
        for opt in sorted(o["options"]):
            if opt not in n["options"]:
                yield Break(
                    subject, f"{name} {opt}", "removed-option", f"option {opt} removed or renamed"
                )
                continue
            yield from _compare_param(f"{name} {opt}", o["options"][opt], n["options"][opt])
        for opt in sorted(set(n["options"]) - set(o["options"])):
            if n["options"][opt]["required"]:
                yield Break(
                    subject, f"{name} {opt}", "new-required", f"new option {opt} is required"
                )
        for i, arg in enumerate(o["arguments"]):
            if i >= len(n["arguments"]):
                yield Break(
                    subject,
                    f"{name} {arg['name'].upper()}",
                    "removed-argument",
                    f"argument {arg['name'].upper()} (position {i + 1}) removed",
                )
                continue
            yield from _compare_param(f"{name} {arg['name'].upper()}", arg, n["arguments"][i])
        for arg in n["arguments"][len(o["arguments"]) :]:
            if arg["required"]:
                yield Break(
                    subject,
                    f"{name} {arg['name'].upper()}",
                    "new-required",
                    f"new argument {arg['name'].upper()} is required",
                )
        if o["exitCodes"] != n["exitCodes"]:
            yield Break(
                subject,
                name,
                "changed-exit-codes",
                f"documented exit codes {o['exitCodes']} → {n['exitCodes']}",
            )


def _compare_param(where: str, o: Mapping[str, Any], n: Mapping[str, Any]) -> Iterator[Break]:
    subject = "cli"
    for alias in sorted(set(o.get("names", ())) - set(n.get("names", ()))):
        yield Break(subject, where, "removed-option-name", f"option name {alias} removed")
    if o["default"] != n["default"]:
        yield Break(
            subject,
            where,
            "changed-default",
            f"default {json.dumps(o['default'], allow_nan=False)} → {json.dumps(n['default'], allow_nan=False)}",
        )
    if (o["type"], o["nargs"], o["multiple"], o.get("isFlag")) != (
        n["type"],
        n["nargs"],
        n["multiple"],
        n.get("isFlag"),
    ):
        yield Break(
            subject,
            where,
            "changed-type",
            f"type {o['type']} (nargs {o['nargs']}, multiple {o['multiple']}) → "
            f"{n['type']} (nargs {n['nargs']}, multiple {n['multiple']})",
        )
    for choice in o.get("choices", ()):
        if "choices" in n and choice not in n["choices"]:
            yield Break(subject, where, "removed-choice", f"choice {choice!r} removed")
    if n["required"] and not o["required"]:
        yield Break(subject, where, "new-required", "now required")


@dataclass(frozen=True, slots=True)
class CompatReport:
    breaks: tuple[Break, ...]
    acknowledged: tuple[Break, ...]
    stale_acknowledgements: tuple[str, ...]
    baseline_version: str
    current_version: str
    invalid: tuple[Break, ...] = ()  # schemas invalid against their metaschema: always fail

    @property
    def major_changed(self) -> bool:
        return self.baseline_version.split(".")[0] != self.current_version.split(".")[0]

    @property
    def ok(self) -> bool:
        return (
            (not self.breaks or self.major_changed)
            and not self.stale_acknowledgements
            and not self.invalid
        )


def _exceptions(schema_dir: Path) -> list[dict[str, str]]:
    path = schema_dir / EXCEPTIONS
    if not safeio.exists(path):
        return []
    data = load_yaml(path, root=schema_dir, where="the schemas", allow_empty=True).data or {}
    return list(data.get("acknowledged", []))


def check(
    schema_dir: Path,
    catalog_dir: Path,
    current_version: str,
    cli: Mapping[str, Any] | None = None,
    api_files: Mapping[str, Mapping[str, Any]] | None = None,
) -> CompatReport:
    """The gate over `schema_dir` (and its baselines) and `catalog_dir`'s bundle layouts; `cli`
    is the current command-line surface (`cli_surface` of the caller's click group), checked
    against the CLI baseline when one exists. Without `cli` the command line is not checked
    (a library caller gating schemas and layouts only); the `compat` command always passes it.
    `api_files` is the JSON API's set of files (default: the declared one, `api_surface()`)."""
    base_dir = schema_dir / BASELINE_DIR
    manifest = _baseline(base_dir, MANIFEST)
    found: list[Break] = []
    current = schema_files(schema_dir)
    invalid = [b for rel, doc in current.items() for b in meta_validate(rel, doc)]
    for rel in sorted(set(current) - set(manifest["schemas"])):
        found.append(
            Break(
                rel,
                "$",
                "unbaselined-schema",
                "published schema has no baseline, so no change to it is checked: "
                "`aicr-catalog compat --baseline-new` adds it (and changes no other baseline)",
            )
        )
    for rel in manifest["schemas"]:
        old = _baseline(base_dir, rel)
        if rel not in current:
            found.append(Break(rel, "$", "removed-schema", "published schema removed"))
            continue
        found.extend(compare_schemas(rel, old, current[rel], role=role_of(rel)))
    if cli is not None and safeio.exists(base_dir / CLI):
        old_cli = _baseline(base_dir, CLI)
        found.extend(compare_cli(old_cli, cli))
    current_api = api_surface() if api_files is None else api_files
    found.extend(compare_api_files(_api_baseline(base_dir), current_api))
    old_layouts = _baseline(base_dir, LAYOUTS)
    new_layouts = bundle_layouts(catalog_dir)
    for dep, paths in sorted(old_layouts.items()):
        found.extend(compare_layouts(dep, paths, new_layouts.get(dep, [])))
    acks = _exceptions(schema_dir)
    ack_keys = {(a["subject"], a["path"], a["kind"]) for a in acks}
    breaks = tuple(sorted(b for b in set(found) if b.key() not in ack_keys))
    acknowledged = tuple(sorted(b for b in set(found) if b.key() in ack_keys))
    live = {b.key() for b in found}
    stale = tuple(
        sorted(
            f"{a['subject']}: {a['path']}: {a['kind']}"
            for a in acks
            if (a["subject"], a["path"], a["kind"]) not in live
        )
    )
    return CompatReport(
        breaks, acknowledged, stale, manifest["version"], current_version, tuple(sorted(invalid))
    )


def update_baselines(
    schema_dir: Path, catalog_dir: Path, version: str, cli: Mapping[str, Any] | None = None
) -> tuple[str, ...]:
    """Rewrite the baselines from the current schemas, layouts and CLI (`cli`, the surface of
    the caller's click group; without it the CLI baseline is left as it is) at a release.
    Refuses while a published schema is invalid against its metaschema."""
    base_dir = schema_dir / BASELINE_DIR
    current = schema_files(schema_dir)
    invalid = [b.format() for rel, doc in current.items() for b in meta_validate(rel, doc)]
    if invalid:
        raise ValueError("invalid schemas cannot become baselines: " + "; ".join(invalid))
    written = []
    for rel, doc in current.items():
        write_text(base_dir / rel, _baseline_text(doc), root=base_dir)
        written.append(rel)
    layouts = json.dumps(bundle_layouts(catalog_dir), indent=2, sort_keys=True, allow_nan=False)
    write_text(base_dir / LAYOUTS, layouts + "\n", root=base_dir)
    write_text(base_dir / API_FILES, _baseline_text(api_surface()), root=base_dir)
    if cli is not None:
        text = json.dumps(cli, indent=2, sort_keys=True, allow_nan=False) + "\n"
        write_text(base_dir / CLI, text, root=base_dir)
    manifest = {"version": version, "schemas": sorted(current)}
    text = json.dumps(manifest, indent=2, allow_nan=False) + "\n"
    write_text(base_dir / MANIFEST, text, root=base_dir)
    return tuple(written)


def _baseline_text(doc: Any) -> str:
    return json.dumps(doc, indent=2, sort_keys=True, allow_nan=False) + "\n"


def add_baselines(schema_dir: Path) -> tuple[str, ...]:
    """Baselines for the published schemas that have none (a new schema: additive, allowed in
    any version), added to the manifest; every existing baseline is left as it is. Refuses
    while one of the new schemas is invalid against its metaschema."""
    base_dir = schema_dir / BASELINE_DIR
    manifest = _baseline(base_dir, MANIFEST)
    current = schema_files(schema_dir)
    new = sorted(set(current) - set(manifest["schemas"]))
    invalid = [b.format() for rel in new for b in meta_validate(rel, current[rel])]
    if invalid:
        raise ValueError("invalid schemas cannot become baselines: " + "; ".join(invalid))
    for rel in new:
        write_text(base_dir / rel, _baseline_text(current[rel]), root=base_dir)
    if new:
        manifest = {**manifest, "schemas": sorted([*manifest["schemas"], *new])}
        text = json.dumps(manifest, indent=2, allow_nan=False) + "\n"
        write_text(base_dir / MANIFEST, text, root=base_dir)
    return tuple(new)


def add_api_file_baselines(
    schema_dir: Path, api_files: Mapping[str, Mapping[str, Any]] | None = None
) -> tuple[str, ...]:
    """Baselines for the declared API files that have none (a new file: additive), every
    existing entry left as it is; the patterns added."""
    base_dir = schema_dir / BASELINE_DIR
    old = _api_baseline(base_dir)
    current = api_surface() if api_files is None else api_files
    new = sorted(set(current) - set(old))
    if new:
        merged = {**old, **{p: dict(current[p]) for p in new}}
        write_text(base_dir / API_FILES, _baseline_text(merged), root=base_dir)
    return tuple(new)


def report_text(r: CompatReport) -> str:
    lines = [f"invalid: {b.format()}" for b in r.invalid]
    lines += [b.format() for b in r.breaks]
    lines += [f"acknowledged: {b.format()}" for b in r.acknowledged]
    lines += [
        f"stale acknowledgement (no such break any more): {s}" for s in r.stale_acknowledgements
    ]
    if r.breaks and r.major_changed:
        lines.append(
            f"{len(r.breaks)} breaking change(s) allowed by the major version change "
            f"{r.baseline_version} → {r.current_version}"
        )
    verdict = "ok" if r.ok else "FAILED"
    lines.append(
        f"compat: {verdict} ({len(r.invalid)} invalid schema error(s), {len(r.breaks)} "
        f"unacknowledged break(s), {len(r.acknowledged)} acknowledged, "
        f"{len(r.stale_acknowledgements)} stale acknowledgement(s); baseline {r.baseline_version})"
    )
    return "\n".join(lines) + "\n"


def _subject_file(b: Break, schema_dir: Path, group: Any) -> tuple[str | None, Path | None]:
    """(path, base) an annotation of `b` names: the schema file, the exceptions file for a
    stale acknowledgement, the command's module (found in `group`) for a CLI break."""
    if b.subject == "cli":
        return _command_source(b.path, group) if group is not None else (None, None)
    if b.subject.startswith("bundle-layout:"):
        return f"{BASELINE_DIR}/{LAYOUTS}", schema_dir
    if b.subject == "api-files":
        return f"{BASELINE_DIR}/{API_FILES}", schema_dir
    return b.subject, schema_dir


def _command_source(path: str, group: Any) -> tuple[str | None, Path | None]:
    import inspect

    cmd: Any = group
    for word in path.split()[1:]:
        sub = getattr(cmd, "commands", {}).get(word) if hasattr(cmd, "commands") else None
        if sub is None:
            break
        cmd = sub
    try:
        source = inspect.getsourcefile(inspect.unwrap(cmd.callback)) if cmd.callback else None
    except TypeError:
        source = None
    if source is None:
        return None, None
    return Path(source).name, Path(source).parent


def report_github(r: CompatReport, schema_dir: Path, group: Any = None) -> str:
    """GitHub annotations: each names the file to look at, from the repository root; a CLI
    break names the module of its command in `group` (the caller's click group; without it,
    no file)."""
    from generator.core.report import annotation

    lines = []
    for b in r.invalid:
        path, base = _subject_file(b, schema_dir, group)
        lines.append(
            annotation("error", f"{b.path}: {b.detail}", title=b.kind, path=path, base=base)
        )
    level = "warning" if r.major_changed else "error"
    for b in r.breaks:
        path, base = _subject_file(b, schema_dir, group)
        lines.append(
            annotation(
                level, f"{b.path}: {b.detail}", title=f"compat {b.kind}", path=path, base=base
            )
        )
    for stale in r.stale_acknowledgements:
        lines.append(
            annotation(
                "error",
                f"stale acknowledgement (no such break any more): {stale}",
                title="compat stale-acknowledgement",
                path=EXCEPTIONS,
                base=schema_dir,
            )
        )
    lines.append(report_text(r).splitlines()[-1])
    return "\n".join(lines) + "\n"


def report_json(r: CompatReport) -> str:
    def rows(items: tuple[Break, ...]) -> list[dict[str, str]]:
        return [
            {"subject": b.subject, "path": b.path, "kind": b.kind, "detail": b.detail}
            for b in items
        ]

    doc = {
        "ok": r.ok,
        "baselineVersion": r.baseline_version,
        "currentVersion": r.current_version,
        "majorChanged": r.major_changed,
        "invalid": rows(r.invalid),
        "breaks": rows(r.breaks),
        "acknowledged": rows(r.acknowledged),
        "staleAcknowledgements": list(r.stale_acknowledgements),
    }
    return json.dumps(doc, indent=2, sort_keys=True, allow_nan=False) + "\n"
