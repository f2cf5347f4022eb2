"""Compatibility gate: published JSON Schemas and bundle layouts against committed baselines.

A breaking change — a removed (or renamed) field or path, a tightened type, a new required field,
a removed enum value, a closed object — fails unless the major version changed or the break is
acknowledged in `catalog/schemas/compat-exceptions.yaml`. An acknowledgement that matches no
current break is stale and fails too. Additive optional fields pass.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

BASELINE_DIR = "baselines"
MANIFEST = "manifest.json"
LAYOUTS = "bundle-layouts.json"
EXCEPTIONS = "compat-exceptions.yaml"


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


def compare_schemas(subject: str, old: Any, new: Any, path: str = "$") -> Iterator[Break]:
    """Every breaking difference from `old` to `new` (both JSON Schemas)."""
    if not isinstance(old, dict) or not isinstance(new, dict):
        if old != new and isinstance(old, dict):
            yield Break(subject, path, "replaced", "schema replaced by a boolean")
        return
    ot, nt = _types(old), _types(new)
    if ot is not None and nt is not None and not ot <= nt:
        yield Break(subject, path, "tightened-type", f"type {sorted(ot)} → {sorted(nt)}")
    if ot is None and nt is not None:
        yield Break(subject, path, "tightened-type", f"any type → {sorted(nt)}")
    if "enum" in old:
        kept = new.get("enum", old["enum"]) or []
        removed = [v for v in old["enum"] if v not in kept]
        for v in removed:
            yield Break(subject, path, "removed-enum", f"enum value {json.dumps(v)} removed")
    elif "enum" in new:
        yield Break(subject, path, "tightened-type", "an enum now restricts the values")
    if "const" in new and old.get("const") != new["const"]:
        yield Break(
            subject,
            path,
            "tightened-type",
            f"const {json.dumps(old.get('const'))} → {json.dumps(new['const'])}",
        )
    for req in sorted(set(new.get("required", ())) - set(old.get("required", ()))):
        yield Break(subject, path, "new-required", f"field '{req}' is now required")
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
                subject, oprops[name], nprops[name], f"{path}.properties.{name}"
            )
    if (
        old.get("additionalProperties", True) is not False
        and new.get("additionalProperties", True) is False
    ):
        yield Break(subject, path, "closed-object", "additional properties are no longer allowed")
    for key in ("items", "additionalProperties", "contains"):
        if isinstance(old.get(key), dict) and isinstance(new.get(key), dict):
            yield from compare_schemas(subject, old[key], new[key], f"{path}.{key}")
    for key in ("$defs", "definitions", "patternProperties"):
        odefs, ndefs = old.get(key, {}), new.get(key, {})
        for name in sorted(odefs):
            if name not in ndefs:
                yield Break(
                    subject, f"{path}.{key}.{name}", "removed-field", f"definition '{name}' removed"
                )
            else:
                yield from compare_schemas(
                    subject, odefs[name], ndefs[name], f"{path}.{key}.{name}"
                )
    for key in ("minLength", "minItems", "minimum", "minProperties"):
        if key in new and (key not in old or new[key] > old[key]):
            yield Break(subject, path, "tightened-type", f"{key} {old.get(key)} → {new[key]}")
    for key in ("maxLength", "maxItems", "maximum", "maxProperties"):
        if key in new and (key not in old or new[key] < old[key]):
            yield Break(subject, path, "tightened-type", f"{key} {old.get(key)} → {new[key]}")
    if new.get("pattern") != old.get("pattern") and "pattern" in new:
        yield Break(
            subject, path, "tightened-type", f"pattern {old.get('pattern')!r} → {new['pattern']!r}"
        )


def compare_layouts(deployer: str, old: list[str], new: list[str]) -> Iterator[Break]:
    for p in sorted(set(old) - set(new)):
        yield Break(
            f"bundle-layout:{deployer}", p, "removed-path", f"bundle path '{p}' no longer produced"
        )


# ---------------------------------------------------------------- the repository's published surface


def schema_files(schema_dir: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for p in sorted(schema_dir.rglob("*.json")):
        rel = p.relative_to(schema_dir).as_posix()
        if rel.startswith(f"{BASELINE_DIR}/"):
            continue
        out[rel] = json.loads(p.read_text(encoding="utf-8"))
    return out


_NNN = re.compile(r"^\d{3}-[^/]+/")


def bundle_layouts(catalog_dir: Path) -> dict[str, list[str]]:
    """Per deployer, the path patterns of a reference bundle (component directories generalised)."""
    from generator.load import load_catalog
    from generator.render import Deployer, render_bundle
    from generator.resolve import resolve

    catalog, _ = load_catalog(catalog_dir)
    leaf = (
        "gb300-eks-ubuntu-training-slurm"
        if "gb300-eks-ubuntu-training-slurm" in catalog.overlays
        else catalog.leaves()[0]
    )
    result = resolve(catalog, leaf)
    manifests = {
        rel: (catalog_dir / rel).read_bytes()
        for rel in result.file_digests
        if "/manifests/" in f"/{rel}"
    }
    out: dict[str, list[str]] = {}
    comps = sorted((c.name for c in result.components), key=len, reverse=True)
    for dep in Deployer:
        tree = render_bundle(result, dep, manifests)
        paths = set()
        for p in getattr(tree, "files", tree):
            g = _NNN.sub("NNN-<component>/", p)
            for c in comps:
                g = g.replace(c, "<component>")
            paths.add(g)
        out[str(dep)] = sorted(paths)
    return out


@dataclass(frozen=True, slots=True)
class CompatReport:
    breaks: tuple[Break, ...]
    acknowledged: tuple[Break, ...]
    stale_acknowledgements: tuple[str, ...]
    baseline_version: str
    current_version: str

    @property
    def major_changed(self) -> bool:
        return self.baseline_version.split(".")[0] != self.current_version.split(".")[0]

    @property
    def ok(self) -> bool:
        return (not self.breaks or self.major_changed) and not self.stale_acknowledgements


def _exceptions(schema_dir: Path) -> list[dict[str, str]]:
    path = schema_dir / EXCEPTIONS
    if not path.exists():
        return []
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return list(data.get("acknowledged", []))


def check(schema_dir: Path, catalog_dir: Path, current_version: str) -> CompatReport:
    base_dir = schema_dir / BASELINE_DIR
    manifest = json.loads((base_dir / MANIFEST).read_text(encoding="utf-8"))
    found: list[Break] = []
    current = schema_files(schema_dir)
    for rel in manifest["schemas"]:
        old = json.loads((base_dir / rel).read_text(encoding="utf-8"))
        if rel not in current:
            found.append(Break(rel, "$", "removed-schema", "published schema removed"))
            continue
        found.extend(compare_schemas(rel, old, current[rel]))
    old_layouts = json.loads((base_dir / LAYOUTS).read_text(encoding="utf-8"))
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
    return CompatReport(breaks, acknowledged, stale, manifest["version"], current_version)


def update_baselines(schema_dir: Path, catalog_dir: Path, version: str) -> tuple[str, ...]:
    """Rewrite the baselines from the current schemas and layouts (at a release)."""
    base_dir = schema_dir / BASELINE_DIR
    current = schema_files(schema_dir)
    written = []
    for rel, doc in current.items():
        target = base_dir / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(
            json.dumps(doc, indent=2, sort_keys=True, allow_nan=False) + "\n", encoding="utf-8"
        )
        written.append(rel)
    (base_dir / LAYOUTS).write_text(
        json.dumps(bundle_layouts(catalog_dir), indent=2, sort_keys=True, allow_nan=False) + "\n"
    )
    (base_dir / MANIFEST).write_text(
        json.dumps({"version": version, "schemas": sorted(current)}, indent=2, allow_nan=False)
        + "\n"
    )
    return tuple(written)


def report_text(r: CompatReport) -> str:
    lines = [b.format() for b in r.breaks]
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
        f"compat: {verdict} ({len(r.breaks)} unacknowledged break(s), {len(r.acknowledged)} acknowledged, "
        f"{len(r.stale_acknowledgements)} stale acknowledgement(s); baseline {r.baseline_version})"
    )
    return "\n".join(lines) + "\n"
