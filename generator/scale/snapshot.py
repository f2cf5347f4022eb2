"""Read an AICR `Snapshot` into flat measurements addressed `{Type}.{Subtype}.{Key}`.

A snapshot (upstream `pkg/snapshotter`) is a header and a list of measurements, each a `type` with
`subtypes`, each subtype a `data` mapping of scalar readings. Preflight reads readings by path:
the subtype ends at the first dot after the type, so keys may themselves contain dots and slashes
(`OS.sysctl./proc/sys/net/core/somaxconn`), except for `SystemD`, whose subtypes are unit names
(`containerd.service`) and whose key follows the last dot. The schema
(`catalog/schemas/snapshot.schema.json`) is checked at this boundary, so every reading in a
`ClusterSnapshot` record is a JSON scalar.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from generator.catalog import schemas
from generator.core.errors import Diagnostic, LoadError
from generator.core.records import Document
from generator.core.yamlio import parse_yaml

# upstream's snapshotter writes aicr.nvidia.com/v1alpha1 (pkg/snapshotter/version.go)
SNAPSHOT_API_VERSIONS: tuple[str, ...] = (
    "aicr.run/v1",
    "aicr.run/v1alpha2",
    "aicr.nvidia.com/v1alpha1",
)
SCHEMA = "snapshot"
# Types whose subtype names contain dots: the key follows the last dot.
DOTTED_SUBTYPE_TYPES: frozenset[str] = frozenset({"SystemD"})

Reading = str | int | float | bool


@dataclass(frozen=True, slots=True)
class ClusterSnapshot:
    rel: str  # the file name as the user gave it, for messages
    api_version: str
    metadata: Mapping[str, str]
    readings: Mapping[str, Reading]  # "{Type}.{Subtype}.{Key}" -> scalar
    digest: str | None = None  # sha256:<hex> of the file as read (parse_snapshot)

    def get(self, path: str) -> Reading | None:
        return self.readings.get(path)

    def has(self, path: str) -> bool:
        return path in self.readings


def split_path(path: str) -> tuple[str, str, str]:
    """`{Type}.{Subtype}.{Key}` -> (type, subtype, key); raises ValueError when malformed."""
    mtype, sep, rest = path.partition(".")
    if not sep or not mtype or not rest:
        raise ValueError(f"measurement path {path!r} is not {{Type}}.{{Subtype}}.{{Key}}")
    if mtype in DOTTED_SUBTYPE_TYPES:
        subtype, sep, key = rest.rpartition(".")
    else:
        subtype, sep, key = rest.partition(".")
    if not sep or not subtype or not key:
        raise ValueError(f"measurement path {path!r} is not {{Type}}.{{Subtype}}.{{Key}}")
    return mtype, subtype, key


def join_path(mtype: str, subtype: str, key: str) -> str:
    return f"{mtype}.{subtype}.{key}"


def _check_header(doc: Document) -> None:
    """Raise LoadError unless `doc` is a Snapshot mapping of an accepted apiVersion that holds
    to the schema."""
    data = doc.data
    if not isinstance(data, dict):
        line, col = doc.locate("$")
        raise LoadError(
            f"{doc.rel}: not a Snapshot",
            [Diagnostic(doc.rel, line, col, "$", "expected a Snapshot mapping", "snapshot.kind")],
        )
    kind, api = data.get("kind"), data.get("apiVersion")
    if kind != "Snapshot" or api not in SNAPSHOT_API_VERSIONS:
        line, col = doc.locate("$.kind" if kind != "Snapshot" else "$.apiVersion")
        accepted = ", ".join(SNAPSHOT_API_VERSIONS)
        message = (
            f"found kind {kind!r} apiVersion {api!r}; expected kind 'Snapshot' with "
            f"apiVersion one of {accepted}"
        )
        raise LoadError(
            f"{doc.rel}: not a Snapshot",
            [Diagnostic(doc.rel, line, col, "$", message, "snapshot.header")],
        )
    diags = schemas.check(doc, SCHEMA)
    if diags:
        raise LoadError(f"{doc.rel}: invalid Snapshot", diags)


def _readings(doc: Document) -> dict[str, Reading]:
    """Every reading by `{Type}.{Subtype}.{Key}`; a path given twice with different values
    raises LoadError (the same value twice is one reading)."""
    diags: list[Diagnostic] = []
    readings: dict[str, Reading] = {}
    seen_at: dict[str, str] = {}
    for i, m in enumerate(doc.data["measurements"]):
        for j, sub in enumerate(m["subtypes"]):
            for key, value in sorted(sub["data"].items()):
                path = join_path(m["type"], sub["subtype"], key)
                jpath = f"$.measurements[{i}].subtypes[{j}].data.{key}"
                if path in readings and readings[path] != value:
                    line, col = doc.locate(jpath)
                    message = (
                        f"reading {path} is given twice with different values "
                        f"({readings[path]!r} at {seen_at[path]}, {value!r} here)"
                    )
                    diags.append(
                        Diagnostic(doc.rel, line, col, jpath, message, "snapshot.duplicate-reading")
                    )
                    continue
                readings[path] = value
                seen_at[path] = jpath
    if diags:
        raise LoadError(f"{doc.rel}: invalid Snapshot", diags)
    return readings


def snapshot_from(doc: Document) -> ClusterSnapshot:
    """A `ClusterSnapshot` from a parsed document; raises LoadError listing every problem."""
    _check_header(doc)
    readings = _readings(doc)
    data = doc.data
    metadata = {str(k): str(v) for k, v in sorted((data.get("metadata") or {}).items())}
    return ClusterSnapshot(
        rel=doc.rel,
        api_version=str(data.get("apiVersion")),
        metadata=metadata,
        readings=dict(sorted(readings.items())),
    )


def parse_snapshot(raw: bytes | str, rel: str) -> ClusterSnapshot:
    """Parse snapshot bytes (YAML or JSON); raises LoadError with located diagnostics."""
    import hashlib
    from dataclasses import replace

    data = raw.encode() if isinstance(raw, str) else raw
    snap = snapshot_from(parse_yaml(raw, rel))
    return replace(snap, digest="sha256:" + hashlib.sha256(data).hexdigest())


def scale_measurement_keys() -> dict[str, dict[str, Any]]:
    """The readings the scale contract documents in the snapshot schema (path -> type/description)."""
    props: dict[str, dict[str, Any]] = schemas.schema(SCHEMA)["$defs"]["scaleMeasurements"][
        "properties"
    ]
    return dict(props)
