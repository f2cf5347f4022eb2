"""`pins --write COMPONENT=VERSION`: bump one pin in place and measure what it changes.

The edit is a splice of exactly one scalar: ruamel.yaml's round-trip parser locates the value
node, the token at that position is replaced in the original text (its quoting style kept), and
the result is re-parsed to prove that nothing but that value changed. Comments, ordering,
indentation and every other byte of the file stay as they were.

The impact is measured on a modified copy of the catalog with `aicr-catalog diff`'s engine: the
leaf recipes (x scale profile) whose resolved digest changes, and the evidence files that are
current now and would be stale after the bump.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError as RuamelError
from yaml.nodes import ScalarNode

from generator.core import outputs, safeio
from generator.core.atomic import copy_tree, make_link, write_atomic, write_text
from generator.core.errors import CatalogError, Diagnostic, LoadError, UsageError
from generator.core.records import Catalog
from generator.core.yamlio import compose, parse_yaml
from generator.pins.collect import canonical_component
from generator.pins.model import PinLocation
from generator.publish import diff

VERSION_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")
_PATH_TOKEN = re.compile(r"\.([^.\[\]]+)|\[(\d+)\]")


class PinWriteError(CatalogError):
    """A pin could not be bumped (the value is not a single-line scalar, the edit would change
    more than the pin)."""


@dataclass(frozen=True, slots=True)
class PinPlace:
    """A place that writes a component's version: registry default or a componentRef."""

    component: str
    location: PinLocation  # json_path is the version value's path
    current: str
    repository: str | None  # effective repository and chart of the pin written here
    chart: str | None


@dataclass(frozen=True, slots=True)
class WriteRequest:
    component: str
    version: str
    file: str | None = None  # catalog-relative file, to choose among several places


@dataclass(frozen=True, slots=True)
class RecipeDigestChange:
    """A recipe whose digest a pin bump changes (before/after), and why."""

    recipe: str
    profile: str
    before: str | None  # digest; None when the recipe does not resolve on that side
    after: str | None
    reasons: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class WritePlan:
    place: PinPlace
    version: str
    text: str  # the whole new text of `place.location.path`
    changes: tuple[RecipeDigestChange, ...]
    stale: tuple[str, ...]  # evidence files current before the bump and stale after it


def parse_request(spec: str) -> WriteRequest:
    """`COMPONENT=VERSION` or `FILE:COMPONENT=VERSION`."""
    target, sep, version = spec.rpartition("=")
    if not sep or not target or not version:
        raise UsageError(f"--write expects COMPONENT=VERSION, got {spec!r}")
    file, _, component = target.rpartition(":")
    if not component:
        raise UsageError(f"--write expects COMPONENT=VERSION, got {spec!r}")
    if not VERSION_RE.fullmatch(version):
        raise UsageError(f"--write: {version!r} is not a version (letters, digits, . _ + -)")
    return WriteRequest(component=component, version=version, file=file or None)


def pin_places(catalog: Catalog, component: str) -> tuple[PinPlace, ...]:
    """Every place that sets `component`'s version, sorted by file and line."""
    places: list[PinPlace] = []
    reg = catalog.registry.components.get(component)
    doc = catalog.registry.doc
    if reg is not None and reg.version is not None and doc is not None:
        path = f"{reg.json_path}.helm.defaultVersion"
        loc = _loc(doc.rel, doc.locate(path), path)
        places.append(PinPlace(component, loc, reg.version, reg.repository, reg.chart))
    for overlay in (*catalog.overlays.values(), *catalog.mixins.values()):
        for ref in overlay.component_refs:
            if canonical_component(catalog, ref.name) == component and ref.version is not None:
                path = f"{ref.json_path}.version"
                loc = _loc(overlay.doc.rel, overlay.doc.locate(path), path)
                repository = ref.source or (reg.repository if reg else None)
                chart = ref.chart or (reg.chart if reg else None)
                places.append(PinPlace(component, loc, ref.version, repository, chart))
    return tuple(sorted(places, key=lambda p: p.location))


def _loc(rel: str, at: tuple[int, int], json_path: str) -> PinLocation:
    return PinLocation(rel, at[0], at[1], json_path)


def choose_place(places: Iterable[PinPlace], request: WriteRequest) -> PinPlace:
    found = [p for p in places if request.file in (None, p.location.path)]
    if len(found) == 1:
        return found[0]
    if not found:
        where = f" in {request.file}" if request.file else ""
        raise UsageError(f"--write: no pin of component {request.component!r}{where}")
    listing = [
        Diagnostic(
            p.location.path,
            p.location.line,
            p.location.col,
            p.location.json_path,
            f"{p.component} is pinned to {p.current} here",
            "pins.ambiguous-write",
        )
        for p in found
    ]
    raise UsageError(
        f"--write: component {request.component!r} is pinned in {len(found)} places; "
        f"name one as FILE:{request.component}=VERSION",
        listing,
    )


def _tokens(json_path: str) -> list[str | int]:
    if not json_path.startswith("$"):
        raise PinWriteError(f"not a JSON path: {json_path}")
    rest = json_path[1:]
    out: list[str | int] = []
    pos = 0
    for m in _PATH_TOKEN.finditer(rest):
        if m.start() != pos:
            raise PinWriteError(f"cannot follow JSON path {json_path}")
        out.append(m.group(1) if m.group(1) is not None else int(m.group(2)))
        pos = m.end()
    if pos != len(rest) or not out:
        raise PinWriteError(f"cannot follow JSON path {json_path}")
    return out


def _follow(data: Any, tokens: list[str | int]) -> Any:
    for t in tokens:
        data = data[t]
    return data


def _scalar_end(line: str, col: int, flow: bool) -> int:
    """End (exclusive) of the scalar token starting at `col`."""
    quote = line[col : col + 1]
    if quote == '"':
        i = col + 1
        while i < len(line):
            if line[i] == "\\":
                i += 2
                continue
            if line[i] == '"':
                return i + 1
            i += 1
        raise PinWriteError("the value is a multi-line quoted scalar")
    if quote == "'":
        i = col + 1
        while i < len(line):
            if line[i] == "'":
                if line[i + 1 : i + 2] == "'":
                    i += 2
                    continue
                return i + 1
            i += 1
        raise PinWriteError("the value is a multi-line quoted scalar")
    if quote in ("|", ">", "&", "*", "!", "[", "{"):
        raise PinWriteError(f"the value is not a plain or quoted scalar (starts with {quote!r})")
    end = len(line)
    comment = line.find(" #", col)
    if comment != -1:
        end = comment
    if flow:
        for stop in (",", "}", "]"):
            at = line.find(stop, col)
            if at != -1:
                end = min(end, at)
    return len(line[:end].rstrip())


def _render(version: str, style: str) -> str:
    if style == "'":
        return "'" + version.replace("'", "''") + "'"
    if style == '"':
        return json.dumps(version, allow_nan=False)
    if _reads_back_as_itself(version):
        return version
    return json.dumps(version, allow_nan=False)  # a plain 1.10 would read back as a float: quote it


def _reads_back_as_itself(version: str) -> bool:
    """Does `version`, written plain, read back as the same string (not a number, a date)?"""
    try:
        nodes = compose(version, "version")
    except LoadError:
        return False
    return (
        len(nodes) == 1
        and isinstance(nodes[0], ScalarNode)
        and nodes[0].tag == "tag:yaml.org,2002:str"
        and nodes[0].value == version
    )


def bump_text(text: str, json_path: str, version: str) -> str:
    """`text` with the scalar at `json_path` replaced by `version`; nothing else changes."""
    tokens = _tokens(json_path)
    try:
        doc = YAML(typ="rt").load(text)
        parent = _follow(doc, tokens[:-1])
        key = tokens[-1]
        line, col = parent.lc.value(key) if isinstance(key, str) else parent.lc.item(key)
        flow = bool(parent.fa.flow_style())
    except (RuamelError, KeyError, IndexError, TypeError, AttributeError) as e:
        raise PinWriteError(f"cannot locate {json_path} in the file") from e
    lines = text.splitlines(keepends=True)
    body = lines[line].rstrip("\r\n")
    end = _scalar_end(body, col, flow)
    style = body[col] if body[col : col + 1] in ("'", '"') else ""
    lines[line] = body[:col] + _render(version, style) + lines[line][end:]
    new = "".join(lines)
    _prove_single_change(text, new, tokens, version)
    return new


def _prove_single_change(old: str, new: str, tokens: list[str | int], version: str) -> None:
    try:
        before = parse_yaml(old, "before").data
        after = parse_yaml(new, "after").data
    except LoadError as e:
        raise PinWriteError(f"the edit does not read back as YAML: {e.message}") from e
    if _follow(after, tokens) != version:
        raise PinWriteError("the edit did not set the version (unexpected YAML layout)")
    parent = _follow(before, tokens[:-1])
    parent[tokens[-1]] = version
    if before != after:
        raise PinWriteError("the edit would change more than the pin (unexpected YAML layout)")


def plan_write(
    root: Path, catalog: Catalog, request: WriteRequest, *, evidence_root: Path
) -> WritePlan:
    """Everything `--write` will do, computed on copies: nothing under `root` is touched.

    The impact is `aicr-catalog diff`'s own comparison (`generator.publish.diff`) of the catalog before
    and after the bump, over every leaf recipe x applicable scale profile, with the same evidence
    tree on both sides: so it is, by construction, what `diff` reports for the change.
    """
    place = choose_place(pin_places(catalog, request.component), request)
    old_text = safeio.read_text(root / place.location.path, root=root, where="the catalog")
    new_text = bump_text(old_text, place.location.json_path, request.version)
    snaps: list[diff.GitSnapshot] = []
    with outputs.temp_dir("aicr-pins-") as tmp:
        for side, text in (("base", None), ("head", new_text)):
            top = Path(tmp) / side
            copy_tree(root, top / "catalog")
            if text is not None:  # never through a link the catalog carries
                write_text(top / "catalog" / place.location.path, text, root=top / "catalog")
            if safeio.is_dir(evidence_root):
                make_link(top / "evidence", safeio.resolve(evidence_root))
            snaps.append(diff.snapshot(top, diff.WORKTREE, "catalog", "evidence"))
    impact = diff.compare(snaps[0], snaps[1], bundles=False)
    changes = tuple(
        RecipeDigestChange(r.recipe, r.profile, r.base_digest, r.head_digest, r.reasons)
        for r in impact.recipes
    )
    return WritePlan(place, request.version, new_text, changes, impact.evidence_stale)


def apply_write(root: Path, plan: WritePlan) -> None:
    """Replace the one file atomically, keeping its permissions."""
    target = root / plan.place.location.path
    mode = safeio.lstat(target).st_mode & 0o7777
    write_atomic(target, plan.text.encode("utf-8"), mode=mode, root=root)  # no link followed


def plan_to_json(plan: WritePlan, *, written: bool) -> dict[str, object]:
    return {
        "apiVersion": "aicr.run/v1",
        "kind": "PinWrite",
        "written": written,
        "component": plan.place.component,
        "from": plan.place.current,
        "to": plan.version,
        "at": plan.place.location.to_json(),
        "recipes": [
            {
                "recipe": c.recipe,
                "scaleProfile": c.profile,
                "baseDigest": c.before,
                "headDigest": c.after,
                "reasons": list(c.reasons),
            }
            for c in plan.changes
        ],
        "evidenceMadeStale": list(plan.stale),
    }


def format_plan(plan: WritePlan, fmt: str, *, written: bool) -> str:
    """The impact of a bump: json for tools, plain text otherwise."""
    if fmt == "json":
        return (
            json.dumps(
                plan_to_json(plan, written=written), indent=2, sort_keys=True, allow_nan=False
            )
            + "\n"
        )
    verb = "bumped" if written else "would bump"
    place = plan.place
    out = [
        f"{verb} {place.component} {place.current} -> {plan.version} at {place.location.format()}",
        f"recipes whose digest changes: {len(plan.changes)}",
        *(
            f"  {c.recipe}@{c.profile}: {c.before or 'unresolvable'} -> {c.after or 'unresolvable'}"
            for c in plan.changes
        ),
        f"evidence made stale: {len(plan.stale)}",
        *(f"  {path}" for path in plan.stale),
    ]
    return "\n".join(out) + "\n"
